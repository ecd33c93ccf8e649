"""Packing one or two token sequences into BERT's fixed-length inputs.

Pipeline position: between tokenization and the model, for fine-tuning readers and feature
extraction (pre-training data has its own, randomised truncation).

The layout (padding uses id 0, mask 0, segment 0):
```
tokens:      [CLS] is this jack ##son ##ville ? [SEP] no it is not . [SEP]
segment_ids:   0    0   0    0    0     0     0   0    1  1  1  1  1   1
input_mask:    1    1   1    1    1     1     1   1    1  1  1  1  1   1   (0 on padding)
```
"""

import dataclasses

import numpy as np


@dataclasses.dataclass
class PackedInput:
    """One packed example: `tokens` holds only real tokens, the id lists are padded."""
    tokens: list
    input_ids: list
    input_mask: list
    segment_ids: list


def truncate_seq_pair(tokens_a, tokens_b, max_length):
    """Truncates in place, one token at a time from the back of the longer list (from
    `tokens_b` on a tie), until the total fits: the original's deterministic rule, which
    keeps as much of a short sequence as possible.

    Example: a=[1,2,3,4], b=[5,6,7], max_length=5 -> a=[1,2,3], b=[5,6].
    """
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


def pack(tokenizer, text_a, text_b, max_seq_length):
    """Tokenizes and packs `text_a` (and `text_b`, if it has tokens) into `PackedInput`.

    Args:
        tokenizer: a `text.tokenization.FullTokenizer`.
        text_a: str.
        text_b: str or None. An empty or all-whitespace `text_b` gives a single sequence.
        max_seq_length: int. Length of the padded id lists, specials included.
    """
    tokens_a = tokenizer.tokenize(text_a)
    tokens_b = tokenizer.tokenize(text_b) if text_b else []
    if tokens_b:
        truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    else:
        tokens_a = tokens_a[:max_seq_length - 2]
    return _packed(tokenizer, tokens_a, tokens_b, max_seq_length)


# How a text longer than one sequence is read (run_classifier.py --long_document).
LONG_DOCUMENT = ("truncate", "head_tail", "windows")


def budget_for_a(len_b, max_seq_length):
    """(pieces text_a may use, pieces of text_b kept) when text_a is the long document:
    text_b is kept whole, up to half of the room ([CLS] a [SEP] b [SEP])."""
    if not len_b:
        return max_seq_length - 2, 0
    room = max_seq_length - 3
    kept_b = min(len_b, room // 2)
    return room - kept_b, kept_b


def head_tail_lengths(budget):
    """(head, tail) pieces kept of a longer text: the first 128 and the last 382 of 510
    (Sun et al., 2019, "How to Fine-Tune BERT for Text Classification?"), in proportion
    for other lengths."""
    head = max(1, budget * 128 // 510) if budget > 1 else budget
    return head, budget - head


def window_starts(length, size, stride):
    """Starts of the windows of `size` pieces over `length` pieces: `stride` apart from
    0, and a last one that ends at the end. E.g. (40, 14, 7) -> [0, 7, 14, 21, 26]."""
    if length <= size:
        return [0]
    return list(range(0, length - size, stride)) + [length - size]


def pack_document(tokenizer, text_a, text_b, max_seq_length, long_document="truncate",
                  doc_stride=None):
    """`text_a` (a document that may be longer than one sequence) and `text_b` packed as
    `long_document` says: "truncate" (the original's rule, as `pack`), "head_tail" (its
    first and last pieces, see `head_tail_lengths`) or "windows" (every window of the
    room left beside text_b, `doc_stride` pieces apart, default half a window). text_b
    is kept whole (up to half of the sequence) in the last two.

    Returns:
        list of `PackedInput`: one, or one per window.
    """
    if long_document == "truncate":
        return [pack(tokenizer, text_a, text_b, max_seq_length)]
    tokens_a = tokenizer.tokenize(text_a)
    tokens_b = tokenizer.tokenize(text_b) if text_b else []
    return [_packed(tokenizer, a, b, max_seq_length) for a, b in
            document_segments(tokens_a, tokens_b, max_seq_length, long_document,
                              doc_stride)]


def document_segments(tokens_a, tokens_b, max_seq_length, long_document="truncate",
                      doc_stride=None):
    """The (a, b) parts of two token (or id) lists that `pack_document` packs: one pair,
    or one per window; the lists are not changed."""
    if long_document not in LONG_DOCUMENT:
        raise ValueError(f"--long_document={long_document!r} is not one of "
                         f"{list(LONG_DOCUMENT)}.")
    if long_document == "truncate":
        tokens_a, tokens_b = list(tokens_a), list(tokens_b)
        if tokens_b:
            truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
        else:
            tokens_a = tokens_a[:max_seq_length - 2]
        return [(tokens_a, tokens_b)]
    budget, kept_b = budget_for_a(len(tokens_b), max_seq_length)
    tokens_b = list(tokens_b[:kept_b])
    if long_document == "head_tail":
        if len(tokens_a) > budget:
            head, tail = head_tail_lengths(budget)
            tokens_a = list(tokens_a[:head]) + list(tokens_a[len(tokens_a) - tail:])
        return [(list(tokens_a), tokens_b)]
    stride = doc_stride or max(1, budget // 2)
    return [(list(tokens_a[start:start + budget]), tokens_b)
            for start in window_starts(len(tokens_a), budget, stride)]


def segment_pairs(ids_a, ids_b, max_seq_length, long_document="truncate", doc_stride=None):
    """`document_segments` of each row's (a, b) id lists: (the (a, b) pairs, in order;
    the row each pair is of)."""
    pairs, rows = [], []
    for row, (a, b) in enumerate(zip(ids_a, ids_b)):
        for pair in document_segments(a, b, max_seq_length, long_document, doc_stride):
            pairs.append(pair)
            rows.append(row)
    return pairs, rows


def _layout(a, b, cls, sep):
    """`[CLS] a [SEP] b [SEP]` (b and its [SEP] only when b has items) and its segments."""
    items = [cls] + list(a) + [sep]
    segments = [0] * len(items)
    if b:
        items += list(b) + [sep]
        segments += [1] * (len(b) + 1)
    return items, segments


def _packed(tokenizer, tokens_a, tokens_b, max_seq_length):
    """`[CLS] a [SEP] b [SEP]` of token lists that fit, padded to `max_seq_length`."""
    tokens, segment_ids = _layout(tokens_a, tokens_b, "[CLS]", "[SEP]")
    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    padding = [0] * (max_seq_length - len(input_ids))
    return PackedInput(tokens=tokens, input_ids=input_ids + padding,
                       input_mask=[1] * len(input_ids) + padding,
                       segment_ids=segment_ids + padding)


def padded_length(longest, multiple, max_seq_length):
    """`longest` positions rounded up to a multiple of `multiple`, at most
    `max_seq_length`: a batch padded to its own longest sequence, in a few shapes."""
    return min(max_seq_length, -(-longest // multiple) * multiple)


def pack_id_pairs(pairs, cls_id, sep_id, length):
    """(a, b) id lists that fit -> the model's inputs, `[CLS] a [SEP] b [SEP]` padded to
    `length` (at least the longest).

    Example: pairs [([7, 8], [9]), ([5], [])], cls 2, sep 3, length 6 ->
        input_ids [[2, 7, 8, 3, 9, 3], [2, 5, 3, 0, 0, 0]],
        input_mask [[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]],
        segment_ids [[0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 0]].

    Returns:
        dict of int32 arrays [len(pairs), length]: input_ids, input_mask, segment_ids.
    """
    input_ids = np.zeros((len(pairs), length), np.int32)
    input_mask = np.zeros_like(input_ids)
    segment_ids = np.zeros_like(input_ids)
    for row, (a, b) in enumerate(pairs):
        ids, segments = _layout(a, b, cls_id, sep_id)
        input_ids[row, :len(ids)] = ids
        input_mask[row, :len(ids)] = 1
        segment_ids[row, :len(ids)] = segments
    return {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
