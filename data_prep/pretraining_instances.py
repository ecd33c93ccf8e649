"""Documents -> masked-LM / next-sentence training instances: the original release's
`create_pretraining_data.py` algorithm, random call for random call.

Pipeline position: text -> (tokenize) -> **instances** -> TFRecords -> run_pretraining.py.
`--mode=original` of `create_pretraining_data.py` uses this module; with the same
input, seed and flags its instances are identical to the original's, because every random
draw is made from one `random.Random` in the original's order:

  1. `rng.shuffle(documents)`;
  2. for each of `dupe_factor` passes, for each document: one draw for the target length
     (shorter with probability `short_seq_prob`), then per chunk: the split point, the
     random-next coin (skipped for one-segment chunks), the random document and start,
     one coin per token removed by truncation, the candidate shuffle and the 80/10/10
     coins of the masking;
  3. `rng.shuffle(instances)` over all passes.

Work is done on token ids rather than strings (the draws do not depend on which it is), so
documents are lists of segments, each a list of WordPiece ids.

Instance layout (segment B is the true continuation, or a random one with label 1; with
`InstanceParams.sentence_order`, label 1 is A and B swapped):
```
[CLS] a1 a2 ... [SEP] b1 b2 ... [SEP]
  0   0  0  ...   0   1  1  ...   1
```
"""

import dataclasses
import itertools
import random

from text import chinese_words


@dataclasses.dataclass
class TrainingInstance:
    """One pre-training example, before padding.

    Attributes:
        input_ids: list of int, `[CLS] A [SEP] B [SEP]` after masking.
        segment_ids: list of int, 0 for [CLS] A [SEP], 1 for B [SEP].
        masked_lm_positions: list of int, sorted.
        masked_lm_ids: list of int, the original ids at those positions.
        is_random_next: bool, True when B is a random segment (label 1); with
            `InstanceParams.sentence_order`, also when A and B are swapped.
    """
    input_ids: list
    segment_ids: list
    masked_lm_positions: list
    masked_lm_ids: list
    is_random_next: bool


@dataclasses.dataclass(frozen=True)
class VocabInfo:
    """What the algorithm needs to know of the vocabulary, in id form.

    Attributes:
        cls_id, sep_id, mask_id: ids of [CLS], [SEP], [MASK].
        word_ids: tuple of int, the id of each vocabulary entry in file order (the
            original's `list(tokenizer.vocab.keys())`, mapped to ids): random replacement
            tokens are drawn uniformly from it, specials and "##" pieces included.
        is_continuation: frozenset of ids whose token starts with "##".
    """
    cls_id: int
    sep_id: int
    mask_id: int
    word_ids: tuple
    is_continuation: frozenset

    @classmethod
    def from_vocab(cls, vocab):
        """`vocab`: ordered dict token -> id (`tokenization.load_vocab`)."""
        missing = [t for t in ("[CLS]", "[SEP]", "[MASK]") if t not in vocab]
        if missing:
            raise ValueError(f"The vocabulary lacks {missing}, which pre-training needs.")
        return cls(cls_id=vocab["[CLS]"], sep_id=vocab["[SEP]"], mask_id=vocab["[MASK]"],
                   word_ids=tuple(vocab.values()),
                   is_continuation=frozenset(i for t, i in vocab.items()
                                             if t.startswith("##")))


@dataclasses.dataclass(frozen=True)
class InstanceParams:
    max_seq_length: int = 128
    short_seq_prob: float = 0.1
    masked_lm_prob: float = 0.15
    max_predictions_per_seq: int = 20
    do_whole_word_mask: bool = False
    # What a chosen position becomes (the paper's Table 8): [MASK] with this probability,
    # a random vocabulary entry with `random_token_prob`, itself with the rest.
    mask_token_prob: float = 0.8
    random_token_prob: float = 0.1
    # Not the original's: label 1 is segments A and B of one chunk in swapped order instead
    # of B from another document (sentence-order prediction, ALBERT: Lan et al. 2019,
    # https://arxiv.org/abs/1909.11942, as its create_pretraining_data.py does); a
    # one-segment chunk still takes B from another document.
    sentence_order: bool = False

    def keep_given_not_masked(self):
        """The original's second draw: a position not turned into [MASK] stays itself when
        a uniform draw is below this (0.5 at the defaults, exactly: rounded to 12 places
        so that 0.1 / 0.2 in floating point does not move the threshold)."""
        if self.mask_token_prob >= 1:
            return 1.0
        keep = 1.0 - self.mask_token_prob - self.random_token_prob
        return round(keep / (1.0 - self.mask_token_prob), 12)


class ExactDraws:
    """`random`, `randint` and `shuffle` of a `random.Random`, drawing exactly what its own
    methods draw (same values, same state afterwards), with less interpreter overhead:
    CPython's `randint(a, b)` is `a + _randbelow(b - a + 1)` and `shuffle` swaps x[i] with
    x[_randbelow(i + 1)] for i from the end, where `_randbelow(n)` draws
    `getrandbits(n.bit_length())` until the value is below n. A test checks the equality on
    this Python; for a subclass of `random.Random` the object's own methods are used."""

    def __init__(self, rng):
        self.random = rng.random
        if type(rng) is not random.Random:
            self.randint, self.shuffle = rng.randint, rng.shuffle
            return
        getrandbits = rng.getrandbits

        def randint(a, b):
            n = b - a + 1
            if n <= 0:
                raise ValueError(f"empty range for randint({a}, {b})")
            k = n.bit_length()
            r = getrandbits(k)
            while r >= n:
                r = getrandbits(k)
            return a + r

        def shuffle(x):
            for i in range(len(x) - 1, 0, -1):
                k = (i + 1).bit_length()
                r = getrandbits(k)
                while r > i:
                    r = getrandbits(k)
                x[i], x[r] = x[r], x[i]

        self.randint, self.shuffle = randint, shuffle


def create_training_instances(documents, vocab_info, params, dupe_factor, rng):
    """All instances of a corpus, shuffled (the original's `create_training_instances`
    after reading). `documents` is shuffled in place, as the original does."""
    rng = rng if isinstance(rng, ExactDraws) else ExactDraws(rng)
    rng.shuffle(documents)
    instances = []
    for _ in range(dupe_factor):
        for document_index in range(len(documents)):
            instances.extend(create_instances_from_document(
                documents, document_index, vocab_info, params, rng))
    rng.shuffle(instances)
    return instances


def create_instances_from_document(documents, document_index, vocab_info, params, rng,
                                   mask=True):
    """Instances from one document; segment B may come from another document.

    With `mask=False` the instances are returned unmasked (empty positions), for callers
    that mask many instances at once (`data_prep.fast_pretraining`)."""
    document = documents[document_index]
    max_num_tokens = params.max_seq_length - 3  # [CLS], [SEP], [SEP]
    # Usually fill the sequence, but sometimes (short_seq_prob) aim shorter, so that
    # pre-training sees the short inputs fine-tuning will give. Drawn once per document.
    target_seq_length = max_num_tokens
    if rng.random() < params.short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)

    instances = []
    current_chunk, current_length = [], 0
    i = 0
    while i < len(document):
        segment = document[i]
        current_chunk.append(segment)
        current_length += len(segment)
        if i == len(document) - 1 or current_length >= target_seq_length:
            if current_chunk:
                a_end = 1
                if len(current_chunk) >= 2:
                    a_end = rng.randint(1, len(current_chunk) - 1)
                tokens_a = list(itertools.chain.from_iterable(current_chunk[:a_end]))
                tokens_b = []
                if len(current_chunk) == 1 or (not params.sentence_order
                                               and rng.random() < 0.5):
                    is_random_next = True
                    target_b_length = target_seq_length - len(tokens_a)
                    # Up to 10 tries to find another document (the same one is used if
                    # all collide, e.g. in a one-document corpus).
                    for _ in range(10):
                        random_document_index = rng.randint(0, len(documents) - 1)
                        if random_document_index != document_index:
                            break
                    random_document = documents[random_document_index]
                    random_start = rng.randint(0, len(random_document) - 1)
                    for j in range(random_start, len(random_document)):
                        tokens_b.extend(random_document[j])
                        if len(tokens_b) >= target_b_length:
                            break
                    # Put the unused segments back, so they start the next chunk.
                    i -= len(current_chunk) - a_end
                elif params.sentence_order and rng.random() < 0.5:
                    is_random_next = True  # label 1: the chunk's two parts swapped
                    tokens_b = tokens_a
                    tokens_a = list(itertools.chain.from_iterable(current_chunk[a_end:]))
                else:
                    is_random_next = False
                    tokens_b = list(itertools.chain.from_iterable(current_chunk[a_end:]))
                truncate_seq_pair_randomly(tokens_a, tokens_b, max_num_tokens, rng)
                assert tokens_a and tokens_b
                input_ids = [vocab_info.cls_id] + tokens_a + [vocab_info.sep_id] + \
                    tokens_b + [vocab_info.sep_id]
                segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
                positions, labels = [], []
                if mask:
                    input_ids, positions, labels = create_masked_lm_predictions(
                        input_ids, vocab_info, params, rng)
                instances.append(TrainingInstance(input_ids, segment_ids, positions, labels,
                                                  is_random_next))
            current_chunk, current_length = [], 0
        i += 1
    return instances


def truncate_seq_pair_randomly(tokens_a, tokens_b, max_num_tokens, rng):
    """Removes tokens one at a time from the longer list (B on a tie), from its front or
    back at random (one draw per token), until the pair fits. Randomising the side avoids
    always cutting the same end of sentences."""
    la, lb = len(tokens_a), len(tokens_b)
    if la + lb <= max_num_tokens:
        return
    # The same draws, one per removed token, counting removals instead of deleting from
    # the front of a list one by one.
    front_a = back_a = front_b = back_b = 0
    random_ = rng.random
    while la + lb > max_num_tokens:
        front = random_() < 0.5
        if la > lb:
            front_a += front
            back_a += not front
            la -= 1
        else:
            assert lb
            front_b += front
            back_b += not front
            lb -= 1
    tokens_a[:] = tokens_a[front_a:len(tokens_a) - back_a]
    tokens_b[:] = tokens_b[front_b:len(tokens_b) - back_b]


def round_half_even(x):
    """Python 3's round(): ties to even (len 30 x 0.15 = 4.5 -> 4)."""
    return int(round(x))


def num_to_predict(length, params):
    """How many positions to mask in a sequence of `length` tokens, specials included."""
    return min(params.max_predictions_per_seq,
               max(1, round_half_even(length * params.masked_lm_prob)))


def create_masked_lm_predictions(input_ids, vocab_info, params, rng):
    """Chooses and masks positions as the original: candidates are all but [CLS]/[SEP]
    (with whole-word masking a "##" piece joins the previous candidate, and so does a
    token marked as continuing a segmenter's word: `text.chinese_words`), shuffled; each
    chosen position becomes [MASK] (80%), stays (10%) or becomes a random vocabulary
    token (10%), decided per piece (the shares: `params.mask_token_prob`,
    `random_token_prob`; the draws are the original's at any shares: one draw against the
    [MASK] share, then one against `keep_given_not_masked`).

    Returns:
        (masked input_ids, sorted positions, original ids at those positions).
    """
    if not params.do_whole_word_mask:
        return _mask_pieces(input_ids, vocab_info, params, rng)
    cand_indexes = []
    marked = chinese_words.CONTINUES_WORD
    for i, token in enumerate(input_ids):
        if token == vocab_info.cls_id or token == vocab_info.sep_id:
            continue
        if cand_indexes and (token in vocab_info.is_continuation or token >= marked):
            cand_indexes[-1].append(i)
        else:
            cand_indexes.append([i])
    input_ids = chinese_words.without_marks(input_ids)
    rng.shuffle(cand_indexes)

    output = list(input_ids)
    budget = num_to_predict(len(input_ids), params)
    mask_share, keep_share = params.mask_token_prob, params.keep_given_not_masked()
    masked = []  # (position, original id)
    covered = set()
    for index_set in cand_indexes:
        if len(masked) >= budget:
            break
        # A whole word that would overshoot the budget is skipped, not truncated.
        if len(masked) + len(index_set) > budget:
            continue
        if any(index in covered for index in index_set):
            continue
        for index in index_set:
            covered.add(index)
            if rng.random() < mask_share:
                replacement = vocab_info.mask_id
            elif rng.random() < keep_share:
                replacement = input_ids[index]
            else:
                replacement = vocab_info.word_ids[rng.randint(0, len(vocab_info.word_ids) - 1)]
            output[index] = replacement
            masked.append((index, input_ids[index]))
    masked.sort()
    return output, [p for p, _ in masked], [label for _, label in masked]


def _mask_pieces(input_ids, vocab_info, params, rng):
    """`create_masked_lm_predictions` without whole-word masking, the same draws in the
    same order: every candidate is a single position, so no candidate can overshoot the
    budget or be covered twice, and the shuffle of single positions permutes exactly as
    the shuffle of one-element lists would."""
    cls_id, sep_id = vocab_info.cls_id, vocab_info.sep_id
    if input_ids.count(cls_id) == 1 and input_ids.count(sep_id) == 2 and \
            input_ids[0] == cls_id and input_ids[-1] == sep_id:
        # [CLS] A [SEP] B [SEP] with no special id inside A or B (counted in C).
        middle = input_ids.index(sep_id)
        cand = list(range(1, middle))
        cand.extend(range(middle + 1, len(input_ids) - 1))
    else:
        cand = [i for i, token in enumerate(input_ids) if token != cls_id and token != sep_id]
    rng.shuffle(cand)
    budget = num_to_predict(len(input_ids), params)
    output = list(input_ids)
    chosen = sorted(cand[:budget])
    # Draws happen in shuffled order; collect them in that order, then sort by position.
    random_ = rng.random
    words = vocab_info.word_ids
    last = len(words) - 1
    mask_share, keep_share = params.mask_token_prob, params.keep_given_not_masked()
    for index in cand[:budget]:
        if random_() < mask_share:
            output[index] = vocab_info.mask_id
        elif random_() >= keep_share:
            output[index] = words[rng.randint(0, last)]
    return output, chosen, [input_ids[p] for p in chosen]
