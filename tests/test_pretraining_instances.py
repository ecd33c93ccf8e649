"""The original pre-training algorithm, worked by hand: a scripted random source returns
chosen values and checks that the calls come in the original's order."""

import pytest

from data_prep.pretraining_instances import (
    InstanceParams,
    VocabInfo,
    create_instances_from_document,
    create_masked_lm_predictions,
)

CLS, SEP, MASK = 1, 2, 3
VOCAB = VocabInfo(cls_id=CLS, sep_id=SEP, mask_id=MASK, word_ids=tuple(range(30)),
                  is_continuation=frozenset({11, 14}))


class ScriptedRng:
    """Plays back (method, args, result) triples; shuffle's result is a permutation."""

    def __init__(self, script):
        self.script = list(script)

    def _next(self, method, args):
        assert self.script, f"unexpected extra call {method}{args}"
        want_method, want_args, result = self.script.pop(0)
        assert (method, args) == (want_method, want_args), \
            f"called {method}{args}, expected {want_method}{want_args}"
        return result

    def random(self):
        return self._next("random", ())

    def randint(self, a, b):
        value = self._next("randint", (a, b))
        assert a <= value <= b
        return value

    def shuffle(self, items):
        order = self._next("shuffle", (len(items),))
        items[:] = [items[i] for i in order]

    def done(self):
        assert not self.script, f"calls never made: {self.script}"


def test_actual_next_single_instance():
    documents = [[[10, 11], [12], [13, 14, 15]], [[20, 21]]]
    rng = ScriptedRng([
        ("random", (), 0.5),          # not a short target: target = 10 - 3 = 7
        ("randint", (1, 2), 2),       # A = first two segments
        ("random", (), 0.7),          # >= 0.5: B is the actual continuation
        ("shuffle", (6,), [4, 1, 0, 2, 3, 5]),  # candidates 1,2,3,5,6,7 -> 6 first
        ("random", (), 0.9),          # not [MASK] ...
        ("random", (), 0.3),          # ... and kept as it is
    ])
    params = InstanceParams(max_seq_length=10, short_seq_prob=0.1, masked_lm_prob=0.15,
                            max_predictions_per_seq=2)
    [inst] = create_instances_from_document(documents, 0, VOCAB, params, rng)
    rng.done()
    # round(9 * 0.15) = round(1.35) = 1 prediction.
    assert inst.input_ids == [CLS, 10, 11, 12, SEP, 13, 14, 15, SEP]
    assert inst.segment_ids == [0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert (inst.masked_lm_positions, inst.masked_lm_ids) == ([6], [14])
    assert inst.is_random_next is False


def test_random_next_put_back_truncation_and_masking():
    documents = [[[10, 11, 12, 13], [14, 15, 16], [17]], [[20, 21, 22, 23, 24]]]
    rng = ScriptedRng([
        ("random", (), 0.05), ("randint", (2, 7), 5),   # short target: 5
        # chunk 1 = segments 0, 1 (4 + 3 >= 5)
        ("randint", (1, 1), 1),                          # A = segment 0
        ("random", (), 0.2),                             # random next
        ("randint", (0, 1), 0),                          # same document: try again
        ("randint", (0, 1), 1),                          # document 1
        ("randint", (0, 0), 0),                          # from its first segment
        # A=4 tokens, B=5 > 7 in all: cut B front, then (tie -> B) B back
        ("random", (), 0.3), ("random", (), 0.9),
        ("shuffle", (7,), [6, 2, 0, 1, 3, 4, 5]),        # positions 8 then 3 first
        ("random", (), 0.1),                             # 8 -> [MASK]
        ("random", (), 0.95), ("random", (), 0.6),       # 3 -> random word...
        ("randint", (0, 29), 7),                         # ... word 7
        # segment 1 was put back: chunk 2 = segments 1, 2
        ("randint", (1, 1), 1), ("random", (), 0.8),     # actual next
        ("shuffle", (4,), [3, 0, 1, 2]),                 # position 5 first
        ("random", (), 0.5),                             # -> [MASK]
    ])
    params = InstanceParams(max_seq_length=10, short_seq_prob=0.1, masked_lm_prob=0.15,
                            max_predictions_per_seq=2)
    first, second = create_instances_from_document(documents, 0, VOCAB, params, rng)
    rng.done()
    # round(10 * 0.15) = round(1.5) = 2 (ties to even).
    assert first.input_ids == [CLS, 10, 11, 7, 13, SEP, 21, 22, MASK, SEP]
    assert first.segment_ids == [0] * 6 + [1] * 4
    assert (first.masked_lm_positions, first.masked_lm_ids) == ([3, 8], [12, 23])
    assert first.is_random_next is True
    assert second.input_ids == [CLS, 14, 15, 16, SEP, MASK, SEP]
    assert (second.masked_lm_positions, second.masked_lm_ids) == ([5], [17])
    assert second.is_random_next is False


def test_sentence_order_swaps_a_and_b_for_label_1():
    """ALBERT's sentence-order prediction: the coin that would draw a random B swaps the
    chunk's two parts instead (label 1), or leaves them in order (label 0); a one-segment
    chunk still takes B from another document."""
    documents = [[[10, 11], [12], [13, 14, 15]], [[20, 21]], [[30, 31, 32, 33]]]
    swapped = ScriptedRng([
        ("random", (), 0.5),          # target 7
        ("randint", (1, 2), 2),       # A = the first two segments
        ("random", (), 0.2),          # < 0.5: swapped
        ("shuffle", (6,), [0, 1, 2, 3, 4, 5]), ("random", (), 0.9), ("random", (), 0.3),
    ])
    params = InstanceParams(max_seq_length=10, short_seq_prob=0.1, masked_lm_prob=0.15,
                            max_predictions_per_seq=2, sentence_order=True)
    [inst] = create_instances_from_document(documents, 0, VOCAB, params, swapped)
    swapped.done()
    assert inst.input_ids == [CLS, 13, 14, 15, SEP, 10, 11, 12, SEP]
    assert inst.segment_ids == [0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert inst.is_random_next is True
    in_order = ScriptedRng([
        ("random", (), 0.5), ("randint", (1, 2), 2),
        ("random", (), 0.7),          # >= 0.5: in order
        ("shuffle", (6,), [0, 1, 2, 3, 4, 5]), ("random", (), 0.9), ("random", (), 0.3),
    ])
    [inst] = create_instances_from_document(documents, 0, VOCAB, params, in_order)
    in_order.done()
    assert inst.input_ids == [CLS, 10, 11, 12, SEP, 13, 14, 15, SEP]
    assert inst.is_random_next is False
    one_segment = ScriptedRng([
        ("random", (), 0.5),          # target 7; the document is one segment
        ("randint", (0, 2), 1),       # B: document 1 (no coin for a one-segment chunk)
        ("randint", (0, 0), 0),
        ("shuffle", (6,), [0, 1, 2, 3, 4, 5]), ("random", (), 0.9), ("random", (), 0.3),
    ])
    [inst] = create_instances_from_document(documents, 2, VOCAB, params, one_segment)
    one_segment.done()
    assert inst.input_ids == [CLS, 30, 31, 32, 33, SEP, 20, 21, SEP]
    assert inst.is_random_next is True


@pytest.mark.parametrize("budget_prob, script, positions", [
    # budget 1: the two-piece words do not fit and are skipped, not cut.
    (0.15, [("shuffle", (3,), [2, 0, 1]), ("random", (), 0.1)], [3]),
    # budget 2: the first whole word fits; then nothing else does.
    (0.25, [("shuffle", (3,), [2, 0, 1]), ("random", (), 0.1), ("random", (), 0.1)], [5, 6]),
])
def test_whole_word_masking(budget_prob, script, positions):
    ids = [CLS, 10, 11, 12, SEP, 13, 14, SEP]  # 11 and 14 are "##" pieces
    params = InstanceParams(masked_lm_prob=budget_prob, max_predictions_per_seq=5,
                            do_whole_word_mask=True)
    rng = ScriptedRng(script)
    out, got_positions, labels = create_masked_lm_predictions(ids, VOCAB, params, rng)
    rng.done()
    assert got_positions == positions
    assert labels == [ids[p] for p in positions]
    assert all(out[p] == MASK for p in positions)


def test_exact_draws_equal_random_random():
    """ExactDraws makes the very draws random.Random's own methods make, and leaves the
    generator in the same state, for every list length and range the algorithm uses."""
    import random

    from data_prep.pretraining_instances import ExactDraws
    for seed in range(30):
        ours, theirs = random.Random(seed), random.Random(seed)
        draws = ExactDraws(ours)
        for n in (0, 1, 2, 3, 7, 64, 125, 126, 127, 128, 129, 300, 30522):
            a, b = list(range(n)), list(range(n))
            draws.shuffle(a)
            theirs.shuffle(b)
            assert a == b, (seed, n)
            if n:
                assert draws.randint(0, n - 1) == theirs.randint(0, n - 1)
                assert draws.randint(2, n + 2) == theirs.randint(2, n + 2)
            assert draws.random() == theirs.random()
        assert ours.getstate() == theirs.getstate()


def test_default_shares_are_the_original_draws_exactly():
    # 0.1 / 0.2 is not 0.5 in floating point; the threshold must be the original's 0.5.
    assert InstanceParams().keep_given_not_masked() == 0.5
    assert InstanceParams(mask_token_prob=1.0).keep_given_not_masked() == 1.0


@pytest.mark.parametrize("whole_word", [False, True])
def test_masking_shares_are_the_flags(whole_word):
    """The original procedure with other shares ([MASK] 0.4, random 0.4, kept 0.2),
    measured over 60,000 masked positions; random entries come from 30 ids."""
    import random
    params = InstanceParams(masked_lm_prob=0.2, max_predictions_per_seq=20,
                            do_whole_word_mask=whole_word, mask_token_prob=0.4,
                            random_token_prob=0.4)
    rng = random.Random(5)
    ids = [CLS] + list(range(4, 11)) + [SEP] + list(range(12, 30)) * 2 + [SEP]  # 48 tokens
    counts = {"mask": 0, "kept": 0, "other": 0}
    for _ in range(6000):
        out, positions, labels = create_masked_lm_predictions(ids, VOCAB, params, rng)
        for p, label in zip(positions, labels):
            counts["mask" if out[p] == MASK else "kept" if out[p] == label else "other"] += 1
    total = sum(counts.values())
    assert total >= 50000
    assert abs(counts["mask"] / total - (0.4 + 0.4 / 30)) < 0.01
    assert abs(counts["kept"] / total - (0.2 + 0.4 / 30)) < 0.01
    assert abs(counts["other"] / total - 0.4 * 28 / 30) < 0.01
