"""`--mode=fast`'s vectorised steps against the rules of the original algorithm, checked
instance by instance (chunking) and by their distributions (masking)."""

import numpy as np
import pytest

from data_prep import fast_pretraining as fp
from data_prep.pretraining_instances import InstanceParams, VocabInfo

CLS, SEP, MASK = 1, 2, 3
VOCAB = VocabInfo(cls_id=CLS, sep_id=SEP, mask_id=MASK, word_ids=tuple(range(100)),
                  is_continuation=frozenset())


def piece_of(documents):
    """PieceTokens from documents given as lists of segment lengths (token ids are the
    running offsets, so spans can be read back)."""
    lengths = [n for doc in documents for n in doc]
    ends = np.cumsum(lengths)
    counts = np.array([len(doc) for doc in documents])
    return fp.PieceTokens(flat=np.arange(ends[-1], dtype=np.int32) + 10,
                          seg_start=ends - np.array(lengths), seg_end=ends,
                          doc_first=np.cumsum(counts) - counts, doc_count=counts)


def check_chain(instances, doc, docs_bounds, seg_start, seg_end, target):
    """The original's rules for one document walked once: `instances` are
    (a_lo, a_hi, b_lo, b_hi, is_random) in order; the document's segments are
    seg_*[first:last + 1]."""
    first, last = docs_bounds[doc]
    starts, ends = set(seg_start.tolist()), set(seg_end.tolist())
    position = seg_start[first]
    for a_lo, a_hi, b_lo, b_hi, is_random in instances:
        assert a_lo == position, "each chunk starts where the last one's used text ended"
        assert a_hi in ends and a_hi > a_lo and a_hi <= seg_end[last]
        assert b_lo in starts and b_hi in ends and b_hi > b_lo
        if is_random:
            r = next(d for d, (f, last) in enumerate(docs_bounds)
                     if seg_start[f] <= b_lo < seg_end[last])
            assert r != doc or len(docs_bounds) == 1
            r_last_end = seg_end[docs_bounds[r][1]]
            want = target - (a_hi - a_lo)
            # B: from a segment start up to the first segment end reaching `want`.
            assert b_hi - b_lo >= want or b_hi == r_last_end
            shorter = [e for e in seg_end if b_lo < e < b_hi]
            assert all(e - b_lo < want for e in shorter)
            # The chunk's segments after A are put back: the next chunk starts after A.
            position = a_hi
        else:
            assert b_lo == a_hi, "B continues A"
            chunk_ends = [e for e in seg_end[first:last + 1] if a_lo < e <= b_hi]
            # The chunk ends at the first segment end that reaches the target.
            assert b_hi - a_lo >= target or b_hi == seg_end[last]
            assert all(e - a_lo < target for e in chunk_ends[:-1])
            position = b_hi
    assert position == seg_end[last], "the walk covers the whole document"


@pytest.mark.parametrize("seed", range(3))
def test_chunks_follow_the_original_rules(seed):
    rng = np.random.default_rng(seed)
    documents = [rng.integers(1, 40, rng.integers(1, 30)).tolist() for _ in range(12)]
    documents.append([200])  # one segment longer than any target
    tokens = piece_of(documents)
    params = InstanceParams(max_seq_length=64, short_seq_prob=0.0)
    a_lo, a_hi, b_lo, b_hi, rand = fp.chunk_spans(tokens, params, 3, rng)
    bounds = [(int(f), int(f + c - 1)) for f, c in zip(tokens.doc_first, tokens.doc_count)]
    # Returned document by document, pass by pass; split each walk at its document's end.
    rows = list(zip(a_lo.tolist(), a_hi.tolist(), b_lo.tolist(), b_hi.tolist(),
                    rand.tolist()))
    k = 0
    for _ in range(3):
        for doc, (first, last) in enumerate(bounds):
            walk = []
            while True:
                walk.append(rows[k])
                k += 1
                used_end = walk[-1][1] if walk[-1][4] else walk[-1][3]
                if used_end == tokens.seg_end[last]:
                    break
            check_chain(walk, doc, bounds, tokens.seg_start, tokens.seg_end, 61)
    assert k == len(rows)
    assert 0.4 < rand.mean() < 0.8  # half of multi-segment chunks, all single ones


def test_sentence_order_swaps_the_parts_of_a_chunk():
    """With `sentence_order`, B never comes from another document unless the chunk is
    one segment; label 1 is the chunk's two parts swapped (B's text right before A's),
    label 0 the parts in order; about half of the longer chunks are swapped."""
    rng = np.random.default_rng(0)
    documents = [rng.integers(1, 20, rng.integers(2, 30)).tolist() for _ in range(12)]
    tokens = piece_of(documents)
    params = InstanceParams(max_seq_length=64, short_seq_prob=0.0, sentence_order=True)
    a_lo, a_hi, b_lo, b_hi, label = fp.chunk_spans(tokens, params, 3, rng)
    swapped = label & (a_lo == b_hi)
    in_order = ~label & (b_lo == a_hi)
    assert (swapped | in_order | label).all() and not (swapped & in_order).any()
    one_segment = label & ~swapped  # B from another document: a one-segment chunk
    ends = set(tokens.seg_end.tolist())
    starts = set(tokens.seg_start.tolist())
    assert all(lo in starts and hi in ends and
               not any(lo < e < hi for e in ends) for lo, hi in
               zip(a_lo[one_segment], a_hi[one_segment]))
    longer = swapped | in_order
    assert 0.4 < swapped[longer].mean() < 0.6
    # Without it, the original's rule: the coin draws B from another document.
    original = InstanceParams(max_seq_length=64, short_seq_prob=0.0)
    a_lo, a_hi, b_lo, b_hi, label = fp.chunk_spans(tokens, original, 3,
                                                   np.random.default_rng(0))
    assert label.mean() > 0.4 and (b_lo[~label] == a_hi[~label]).all()


def test_short_targets_are_drawn_per_walk():
    tokens = piece_of([[3] * 200])
    params = InstanceParams(max_seq_length=128, short_seq_prob=1.0)
    a_lo, a_hi, b_lo, b_hi, rand = fp.chunk_spans(tokens, params, 50,
                                                  np.random.default_rng(0))
    actual = ~rand
    lengths = (b_hi - a_lo)[actual]
    # Every target is uniform in [2, 125], so chunks of 3-token segments are short.
    assert lengths.min() >= 3 and np.median(lengths) < 100


def test_rows_are_cls_a_sep_b_sep_then_padding():
    flat = fp.with_special_ids(np.arange(10, 30, dtype=np.int32), VOCAB)
    ids, segments, lengths = fp.build_matrix(
        flat, a_lo=np.array([0, 5, 12]), la=np.array([2, 1, 3]), b_lo=np.array([7, 0, 2]),
        lb=np.array([3, 4, 1]), vocab_info=VOCAB, width=10)
    assert ids.tolist() == [[CLS, 10, 11, SEP, 17, 18, 19, SEP, 0, 0],
                            [CLS, 15, SEP, 10, 11, 12, 13, SEP, 0, 0],
                            [CLS, 22, 23, 24, SEP, 12, SEP, 0, 0, 0]]
    assert segments.tolist() == [[0, 0, 0, 0, 1, 1, 1, 1, 0, 0],
                                 [0, 0, 0, 1, 1, 1, 1, 1, 0, 0],
                                 [0, 0, 0, 0, 0, 1, 1, 0, 0, 0]]
    assert lengths.tolist() == [8, 8, 7]


def masked_rows(la, lb, params, seed, n=20000):
    width = params.max_seq_length
    la = np.full(n, la, np.int64)
    lb = np.full(n, lb, np.int64)
    flat = fp.with_special_ids(np.arange(10, 10 + la[0] + lb[0], dtype=np.int32), VOCAB)
    ids, _, _ = fp.build_matrix(flat, np.zeros(n, np.int64), la, la.copy(), lb, VOCAB, width)
    before = ids.copy()
    positions, originals, budget = fp.mask_matrix(ids, la, lb, VOCAB, params,
                                                  np.random.default_rng(seed))
    return before, ids, positions, originals, budget


def test_masking_picks_a_uniform_subset_and_replaces_80_10_10():
    params = InstanceParams(max_seq_length=32, max_predictions_per_seq=5,
                            masked_lm_prob=0.15)
    before, after, positions, originals, budget = masked_rows(9, 14, params, 0)
    # round(26 * 0.15) = round(3.9) = 4 predictions per row.
    assert (budget == 4).all()
    assert (positions[:, 4] == 0).all() and (originals[:, 4] == 0).all()
    chosen = positions[:, :4]
    assert (np.diff(chosen, axis=1) > 0).all(), "distinct and sorted"
    candidates = [p for p in range(1, 25) if p != 10]  # [CLS] at 0, [SEP] at 10 and 25
    assert set(np.unique(chosen)) == set(candidates)
    counts = np.bincount(chosen.ravel(), minlength=32)[candidates]
    expected = 20000 * 4 / len(candidates)
    assert np.abs(counts - expected).max() < 5 * np.sqrt(expected)
    rows = np.arange(len(chosen))[:, None]
    assert (originals[:, :4] == before[rows, chosen]).all()
    new = after[rows, chosen]
    share_mask = np.mean(new == MASK)
    share_kept = np.mean(new == originals[:, :4])
    assert abs(share_mask - 0.8) < 0.01 and abs(share_kept - 0.101) < 0.01
    untouched = np.ones_like(after, bool)
    untouched[rows, chosen] = False
    assert (after[untouched] == before[untouched]).all()


def test_masking_budget_is_capped_by_the_candidates_and_max_predictions():
    params = InstanceParams(max_seq_length=16, max_predictions_per_seq=3,
                            masked_lm_prob=0.5)
    _, _, positions, _, budget = masked_rows(1, 1, params, 1, n=50)
    assert (budget == 2).all()  # round(5 * 0.5) = 2 (ties to even), both candidates
    assert (positions == [1, 3, 0]).all()
    _, _, positions, _, budget = masked_rows(6, 6, params, 2, n=50)
    assert (budget == 3).all()  # round(15 * 0.5) = 8, at most 3


@pytest.mark.parametrize("mask, random_", [(0.5, 0.3), (1.0, 0.0), (0.0, 0.0)])
def test_masking_shares_are_the_flags(mask, random_):
    """The paper's Table 8: [MASK] / random / kept shares measured over 80,000 choices.
    A random entry is drawn from all 100 vocabulary ids, so it is [MASK] or the original
    itself 1/100 of the time each."""
    params = InstanceParams(max_seq_length=32, max_predictions_per_seq=5,
                            mask_token_prob=mask, random_token_prob=random_)
    _, after, positions, originals, _ = masked_rows(9, 14, params, 1)
    rows = np.arange(len(positions))[:, None]
    new, old = after[rows, positions[:, :4]], originals[:, :4]
    keep = 1 - mask - random_
    assert abs(np.mean(new == MASK) - (mask + random_ / 100)) < 0.006
    assert abs(np.mean(new == old) - (keep + random_ / 100)) < 0.006
    assert abs(np.mean((new != MASK) & (new != old)) - random_ * 98 / 100) < 0.006


def test_texts_are_packed_into_documents_of_the_pack_size():
    """Texts of 3, 4, 2, 5, 1 and 9 tokens packed by 6: they end at 3, 7, 9, 14, 15 and
    24 tokens into the piece, so the stretches of 6 tokens (1-6, 7-12, 13-18, 19-24)
    hold the texts [0], [1, 2], [3, 4] and [5]; a text's segments stay together."""
    tokens = piece_of([[3], [2, 2], [2], [5], [1], [4, 5]])
    packed = fp.pack_documents(tokens, 6)
    assert packed.doc_first.tolist() == [0, 1, 4, 6]
    assert packed.doc_count.tolist() == [1, 3, 2, 2]
    assert packed.flat is tokens.flat and packed.seg_start is tokens.seg_start
    assert fp.pack_documents(tokens, 0) is tokens
