"""Vectorised `tf.train.Example` encoding for pre-training instances.

Pipeline position: the last step of `--mode=fast` in create_pretraining_data (instances ->
TFRecord bytes). Building one protobuf object per instance costs more than everything else
the fast mode does; here a whole batch is encoded with NumPy (varints for all values at
once) and the bytes are identical to `tf.train.Example.SerializeToString(deterministic=True)`
(features in sorted key order), which a test checks.

Wire format used (protobuf): Example{1: Features{1: map entry{1: key, 2: Feature{
2: FloatList{1: packed float32} | 3: Int64List{1: packed varint}}}}}.
"""

import numpy as np

# Deterministic serialisation writes map entries in sorted key order.
_INT_FEATURES = ("input_ids", "input_mask", "masked_lm_ids", "masked_lm_positions",
                 "next_sentence_labels", "segment_ids")
_ORDER = ("input_ids", "input_mask", "masked_lm_ids", "masked_lm_positions",
          "masked_lm_weights", "next_sentence_labels", "segment_ids")


def _varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _varint_rows(values):
    """Non-negative int matrix [N, L] (< 2^35) -> (flat uint8 bytes, per-row byte counts)."""
    v = np.asarray(values)
    n, width = v.shape
    top = int(v.max()) if v.size else 0
    if v.size and v.min() < 0:
        raise ValueError("negative values are not supported")
    if top < 0x80:  # one byte per value: masks, segments, positions, labels, lengths
        return v.astype(np.uint8).reshape(-1), np.full(n, width, np.int64)
    v = v.astype(np.int64)
    groups = max(1, (top.bit_length() + 6) // 7)
    nbytes = np.ones(v.shape, np.int64)
    for k in range(1, groups):
        nbytes += v >= (1 << (7 * k))
    out = np.empty(v.shape + (groups,), np.uint8)
    for k in range(groups):
        byte = (v >> (7 * k)) & 0x7F
        out[..., k] = byte | ((nbytes - 1 > k) << 7)
    keep = np.arange(groups)[None, None, :] < nbytes[..., None]
    return out[keep], nbytes.sum(axis=1)


def _column_varints(lengths):
    """Varint encodings of a vector of lengths, as (flat bytes, per-row counts)."""
    return _varint_rows(np.asarray(lengths, np.int64)[:, None])


def _const(data, n):
    data = np.frombuffer(data, np.uint8)
    return np.tile(data, n), np.full(n, len(data), np.int64)


def _interleave(components, n):
    """Concatenates, row by row, components given as (flat bytes, per-row counts) in row
    order; returns (one flat buffer, per-row byte counts)."""
    counts = np.stack([c for _, c in components], axis=1)  # [N, K]
    row_total = counts.sum(axis=1)
    row_start = np.cumsum(row_total) - row_total
    within = np.cumsum(counts, axis=1) - counts  # start of component k inside its row
    out = np.empty(int(row_total.sum()), np.uint8)
    for k, (flat, c) in enumerate(components):
        if not len(flat):
            continue
        dest_row = row_start + within[:, k]
        first = np.cumsum(c) - c  # start of each row's bytes inside `flat`
        offsets = np.arange(len(flat)) - np.repeat(first, c)
        out[np.repeat(dest_row, c) + offsets] = flat
    return out, row_total


def encode_batch(features):
    """Serialises a batch of examples.

    Args:
        features: dict name -> 2-D array [N, L]: int arrays for the int64 features,
            a float array for "masked_lm_weights" (the original pre-training features).

    Returns:
        list of N `bytes`, each a serialized `tf.train.Example`.
    """
    n = len(features["input_ids"])
    body_parts, body_len = [], np.zeros(n, np.int64)
    for name in _ORDER:
        if name == "masked_lm_weights":
            weights = np.ascontiguousarray(np.asarray(features[name], "<f4"))
            payload = (weights.view(np.uint8).reshape(-1),
                       np.full(n, weights.shape[1] * 4, np.int64))
            kind = b"\x12"  # Feature.float_list
        else:
            payload = _varint_rows(np.asarray(features[name]))
            kind = b"\x1a"  # Feature.int64_list
        p_len = payload[1]
        p_var = _column_varints(p_len)
        packed_len = 1 + p_var[1] + p_len                    # List{1: packed values}
        k_var = _column_varints(packed_len)
        feature_len = 1 + k_var[1] + packed_len              # Feature{kind: List}
        f_var = _column_varints(feature_len)
        key = _varint(len(name)) + name.encode()
        entry_len = 1 + len(key) + 1 + f_var[1] + feature_len  # entry{1: key, 2: Feature}
        e_var = _column_varints(entry_len)
        body_parts += [_const(b"\x0a", n), e_var, _const(b"\x0a" + key + b"\x12", n), f_var,
                       _const(kind, n), k_var, _const(b"\x0a", n), p_var, payload]
        body_len += 1 + e_var[1] + entry_len
    components = [_const(b"\x0a", n), _column_varints(body_len)] + body_parts
    flat, counts = _interleave(components, n)
    data = flat.tobytes()
    ends = np.cumsum(counts).tolist()
    starts = [0] + ends[:-1]
    return [data[a:b] for a, b in zip(starts, ends)]
