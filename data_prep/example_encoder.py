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
    """Non-negative int matrix [N, L] (< 2^35) -> (bytes [N, W] uint8, valid [N, W] bool or
    None when every byte is used): row i's encoding is bytes[i][valid[i]]."""
    v = np.asarray(values)
    n, width = v.shape
    top = int(v.max()) if v.size else 0
    if v.size and v.min() < 0:
        raise ValueError("negative values are not supported")
    if top < 0x80:  # one byte per value: masks, segments, positions, labels, small ids
        return v.astype(np.uint8), None
    v = v.astype(np.int64)
    groups = max(1, (top.bit_length() + 6) // 7)
    nbytes = np.ones(v.shape, np.int8)
    for k in range(1, groups):
        nbytes += v >= (1 << (7 * k))
    out = np.empty(v.shape + (groups,), np.uint8)
    for k in range(groups):
        byte = (v >> (7 * k)) & 0x7F
        out[..., k] = byte | ((nbytes > k + 1) << 7)
    valid = np.arange(groups, dtype=np.int8)[None, None, :] < nbytes[..., None]
    return out.reshape(n, width * groups), valid.reshape(n, width * groups)


def _length_varints(lengths):
    """Varints of a vector of lengths -> (bytes [N, W], valid [N, W] or None)."""
    return _varint_rows(np.asarray(lengths, np.int64)[:, None])


def _byte_count(part):
    data, valid = part
    return np.full(len(data), data.shape[1], np.int64) if valid is None else \
        valid.sum(axis=1, dtype=np.int64)


def _const(data, n):
    return np.broadcast_to(np.frombuffer(data, np.uint8), (n, len(data))), None


def encode_batch(features):
    """Serialises a batch of examples.

    Every part of a record (constant tags and keys, length varints, packed values) is laid
    out at a fixed column of one [N, W] byte matrix with a mask of the bytes in use, so
    that the records are produced by a single masked copy.

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
            payload = (weights.view(np.uint8).reshape(n, -1), None)
            kind = b"\x12"  # Feature.float_list
        else:
            payload = _varint_rows(np.asarray(features[name]))
            kind = b"\x1a"  # Feature.int64_list
        p_len = _byte_count(payload)
        p_var = _length_varints(p_len)
        packed_len = 1 + _byte_count(p_var) + p_len               # List{1: packed values}
        k_var = _length_varints(packed_len)
        feature_len = 1 + _byte_count(k_var) + packed_len         # Feature{kind: List}
        f_var = _length_varints(feature_len)
        key = _varint(len(name)) + name.encode()
        entry_len = 1 + len(key) + 1 + _byte_count(f_var) + feature_len  # entry{1: key, 2: Feature}
        e_var = _length_varints(entry_len)
        body_parts += [_const(b"\x0a", n), e_var, _const(b"\x0a" + key + b"\x12", n), f_var,
                       _const(kind, n), k_var, _const(b"\x0a", n), p_var, payload]
        body_len += 1 + _byte_count(e_var) + entry_len
    parts = [_const(b"\x0a", n), _length_varints(body_len)] + body_parts
    data = np.concatenate([d for d, _ in parts], axis=1)
    if all(valid is None for _, valid in parts):
        flat, counts = data.reshape(-1), np.full(n, data.shape[1], np.int64)
    else:
        valid = np.concatenate([np.ones(d.shape, bool) if v is None else v
                                for d, v in parts], axis=1)
        flat, counts = data[valid], valid.sum(axis=1)
    buffer = flat.tobytes()
    ends = np.cumsum(counts).tolist()
    return [buffer[a:b] for a, b in zip([0] + ends[:-1], ends)]
