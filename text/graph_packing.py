"""`[CLS] a [SEP] b [SEP]` packing in TensorFlow ops, for batches of ragged WordPiece ids.

Pipeline position: the in-graph twin of `text.packing.pack`, used when fine-tuning
features are made with the in-graph tokenizer and inside exported SavedModels whose
signature takes raw strings. Same truncation as the original's `_truncate_seq_pair` (pop
from the longer sequence, from b on a tie), computed in closed form per row.
"""

import tensorflow as tf


def pair_lengths(len_a, len_b, budget):
    """Lengths `_truncate_seq_pair` leaves: unchanged if they fit; else the shorter
    sequence keeps its length if it is at most half the budget and the longer gets the
    rest; else a gets ceil(budget / 2) and b floor(budget / 2)."""
    len_a = tf.cast(len_a, tf.int64)
    len_b = tf.cast(len_b, tf.int64)
    budget = tf.cast(budget, tf.int64)
    half_up, half_down = (budget + 1) // 2, budget // 2
    fits = len_a + len_b <= budget
    a_short = (len_a <= len_b) & (2 * len_a <= budget)
    b_short = (len_b < len_a) & (2 * len_b <= budget)
    new_a = tf.where(fits, len_a, tf.where(a_short, len_a,
                                           tf.where(b_short, budget - len_b, half_up)))
    new_b = tf.where(fits, len_b, tf.where(a_short, budget - len_a,
                                           tf.where(b_short, len_b, half_down)))
    return new_a, new_b


def row_positions(row_lengths):
    """Each value's position within its row, flat: [0, 1, .., n0 - 1, 0, 1, ..]."""
    return tf.ragged.range(row_lengths).flat_values


def per_value(row_values, row_lengths):
    """`row_values[i]` repeated for each of row i's values, flat."""
    return tf.repeat(row_values, row_lengths)


def keep_first(ragged, lengths):
    """The first `lengths[i]` values of each row i of `ragged` (one ragged dimension).

    Computed on the flat values: comparing a ragged tensor with a column broadcasts
    through ragged ops whose tracing cost about a second per exported signature."""
    if ragged.ragged_rank != 1:
        raise ValueError(f"keep_first takes one ragged dimension, got {ragged.ragged_rank}.")
    row_lengths = ragged.row_lengths()
    lengths = tf.cast(lengths, row_lengths.dtype)
    keep = row_positions(row_lengths) < per_value(lengths, row_lengths)
    return tf.RaggedTensor.from_row_lengths(
        tf.boolean_mask(ragged.flat_values, keep),
        tf.clip_by_value(lengths, tf.zeros_like(lengths), row_lengths), validate=False)


def pack_ids(ids_a, ids_b, max_seq_length, cls_id, sep_id):
    """Packs ragged id batches into BERT's fixed-length inputs.

    Args:
        ids_a: ragged int [batch, (tokens)].
        ids_b: ragged int [batch, (tokens)] or None. A row with no tokens gives a single
            sequence for that row, as `pack` does for an empty text_b.
        max_seq_length: int, or a scalar int tensor (a length chosen at call time).
        cls_id, sep_id: ints.

    Returns:
        dict of int32 [batch, max_seq_length]: input_ids, input_mask, segment_ids.
    """
    ids_a = tf.cast(ids_a, tf.int64)
    len_a = ids_a.row_lengths()
    static = isinstance(max_seq_length, int)
    if not static:
        max_seq_length = tf.cast(max_seq_length, tf.int64)
    if ids_b is None:
        ids_b = tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int64),
                                                 tf.zeros_like(len_a), validate=False)
    ids_b = tf.cast(ids_b, tf.int64)
    len_b = ids_b.row_lengths()
    has_b = len_b > 0
    pair_a, pair_b = pair_lengths(len_a, len_b, max_seq_length - 3)
    keep_a = tf.where(has_b, pair_a, tf.minimum(len_a, max_seq_length - 2))
    keep_b = tf.where(has_b, pair_b, tf.zeros_like(len_b))
    ids_a = keep_first(ids_a, keep_a)
    ids_b = keep_first(ids_b, keep_b)
    batch = tf.shape(len_a, out_type=tf.int64)[0]
    cls = tf.RaggedTensor.from_row_lengths(tf.fill([batch], tf.constant(cls_id, tf.int64)),
                                           tf.ones([batch], tf.int64), validate=False)
    sep = tf.RaggedTensor.from_row_lengths(tf.fill([batch], tf.constant(sep_id, tf.int64)),
                                           tf.ones([batch], tf.int64), validate=False)
    b_rows = tf.cast(has_b, tf.int64)
    sep_b = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(b_rows)], tf.constant(sep_id, tf.int64)), b_rows,
        validate=False)
    ids = tf.concat([cls, ids_a, sep, ids_b, sep_b], axis=1)
    first = keep_a + 2
    row_lengths = ids.row_lengths()
    segments = ids.with_flat_values(tf.cast(
        row_positions(row_lengths) >= per_value(first, row_lengths), tf.int64))
    shape = [None, max_seq_length] if static else tf.stack(
        [tf.constant(-1, tf.int64), max_seq_length])
    input_ids = ids.to_tensor(0, shape=shape)
    return {"input_ids": tf.cast(input_ids, tf.int32),
            "input_mask": tf.cast(tf.ones_like(ids).to_tensor(0, shape=shape), tf.int32),
            "segment_ids": tf.cast(segments.to_tensor(0, shape=shape), tf.int32)}


def pack_document_ids(ids_a, ids_b, max_seq_length, cls_id, sep_id,
                      long_document="truncate", doc_stride=None):
    """`text.packing.pack_document` in TensorFlow ops, for a batch.

    Args:
        ids_a: ragged int [batch, (tokens)]: the documents.
        ids_b: ragged int [batch, (tokens)] or None: kept whole (up to half a sequence) in
            "head_tail" and "windows".
        long_document: "truncate", "head_tail" or "windows".
        doc_stride: int or None. Pieces between window starts (default half a window).

    Returns:
        (dict of int32 [n, max_seq_length]: input_ids, input_mask, segment_ids;
         int64 [n]: the row of the batch each sequence belongs to). n is the batch size,
        or the number of windows.
    """
    ids_a = tf.cast(ids_a, tf.int64)
    batch = tf.shape(ids_a.row_lengths(), out_type=tf.int64)[0]
    rows = tf.range(batch, dtype=tf.int64)
    if long_document == "truncate":
        return pack_ids(ids_a, ids_b, max_seq_length, cls_id, sep_id), rows
    if ids_b is None:
        ids_b = tf.RaggedTensor.from_row_lengths(
            tf.zeros([0], tf.int64), tf.zeros_like(ids_a.row_lengths()), validate=False)
    ids_b = tf.cast(ids_b, tf.int64)
    len_a, len_b = ids_a.row_lengths(), ids_b.row_lengths()
    room = max_seq_length - 3
    kept_b = tf.minimum(len_b, room // 2)
    budget = tf.where(len_b > 0, room - kept_b, max_seq_length - 2)  # as budget_for_a
    ids_b = keep_first(ids_b, kept_b)
    if long_document == "head_tail":
        head = tf.where(budget > 1, tf.maximum(1, budget * 128 // 510), budget)
        tail = budget - head
        position = row_positions(len_a)
        keep = ~per_value(len_a > budget, len_a) | (position < per_value(head, len_a)) | (
            position >= per_value(len_a - tail, len_a))
        kept = tf.RaggedTensor.from_row_lengths(
            tf.boolean_mask(ids_a.flat_values, keep),
            tf.math.unsorted_segment_sum(tf.cast(keep, tf.int64), per_value(rows, len_a),
                                         batch), validate=False)
        return pack_ids(kept, ids_b, max_seq_length, cls_id, sep_id), rows
    if long_document != "windows":
        raise ValueError(f"long_document={long_document!r} is not one of truncate, "
                         f"head_tail, windows.")
    stride = tf.cast(doc_stride, tf.int64) if doc_stride else tf.maximum(1, budget // 2)
    stride = tf.broadcast_to(stride, tf.shape(budget, out_type=tf.int64))
    excess = tf.maximum(len_a - budget, 0)
    count = 1 + (excess + stride - 1) // stride       # windows per row (window_starts)
    window_row = tf.repeat(rows, count)
    k = tf.ragged.range(count).flat_values             # window number within its row
    start = tf.minimum(k * tf.gather(stride, window_row), tf.gather(excess, window_row))
    length = tf.minimum(tf.gather(budget, window_row), tf.gather(len_a, window_row) - start)
    offset = tf.gather(ids_a.row_starts(), window_row) + start
    positions = tf.ragged.range(offset, offset + length)
    windows = positions.with_flat_values(tf.gather(ids_a.flat_values,
                                                   positions.flat_values))
    return pack_ids(windows, tf.gather(ids_b, window_row), max_seq_length, cls_id,
                    sep_id), window_row
