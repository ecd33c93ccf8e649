"""Vectorised `tf.train.Example` encoding for pre-training instances.

Pipeline position: the last step of create_pretraining_data (instances -> TFRecord bytes),
in both modes. Building one protobuf object per instance costs more than everything else
the fast mode does; here a whole batch is encoded with NumPy.

Wire format written (protobuf): Example{1: Features{1: map entry{1: key, 2: Feature{
2: FloatList{1: packed float32} | 3: Int64List{1: packed varint}}}}}.

Every part of a record (tags and keys, length varints, packed values) is a block of
columns of a [N, W] byte matrix, with a mask of the bytes in use where the varints make
the width vary from row to row (values below 2^21 are looked up in tables of varints).
The map entries are written in a fixed order that puts the features of the same width in
every row first (`_ORDER`), so that a record is one slice of the fixed-width bytes and one
of the compacted variable bytes. Protobuf parsers
accept map entries in any order (the original script's own files have them in hash
order); a test checks that TensorFlow parses every record to the values given.
"""

import functools

import numpy as np

# Same width in every row first, then the two id features whose varints vary.
_ORDER = ("input_mask", "segment_ids", "masked_lm_positions", "masked_lm_weights",
          "next_sentence_labels", "masked_lm_ids", "input_ids")


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


_TABLE_LIMIT = 1 << 21  # values below this are looked up (3 varint bytes at most)


@functools.lru_cache(maxsize=4)
def _varint_table(size):
    """For 0..size-1 (size <= 2^21), as little-endian uint32 words: the varint bytes (up to
    3, then zeros), which bytes are used (1 or 0 per byte), and the byte count (int8)."""
    v = np.arange(size, dtype=np.int64)
    nbytes = 1 + (v >= 1 << 7) + (v >= 1 << 14)
    words = np.zeros(size, np.int64)
    used = np.zeros(size, np.int64)
    for k in range(3):
        byte = ((v >> (7 * k)) & 0x7F) | ((nbytes > k + 1) << 7)
        words |= np.where(nbytes > k, byte, 0) << (8 * k)
        used |= (nbytes > k).astype(np.int64) << (8 * k)
    return words.astype("<u4"), used.astype("<u4"), nbytes.astype(np.int8)


def _varint_rows(values):
    """Non-negative int matrix [N, L] (< 2^35) -> a part: (bytes [N, W] uint8, valid
    [N, W] bool, bytes used per row [N]), or (bytes, None, None) when every row uses all
    W bytes. Row i's encoding is bytes[i][valid[i]]."""
    v = np.asarray(values)
    n, width = v.shape
    top = int(v.max()) if v.size else 0
    if v.size and v.min() < 0:
        raise ValueError("negative values are not supported")
    if top < 0x80:  # one byte per value: masks, segments, positions, labels, small ids
        return v.astype(np.uint8), None, None
    if top < _TABLE_LIMIT:  # table sizes are powers of two, so a few tables serve all
        words, used, table_nbytes = _varint_table(max(1 << 15, 1 << top.bit_length()))
        nbytes = np.take(table_nbytes, v)
        out = np.take(words, v).view(np.uint8).reshape(n, width, 4)
        if nbytes.min() != nbytes.max():
            return (out.reshape(n, width * 4),
                    np.take(used, v).view(bool).reshape(n, width * 4),
                    nbytes.sum(axis=1, dtype=np.int64))
    else:
        v = v.astype(np.int64)
        groups = (top.bit_length() + 6) // 7
        nbytes = np.ones(v.shape, np.int8)
        for k in range(1, groups):
            nbytes += v >= (1 << (7 * k))
        out = np.empty(v.shape + (groups,), np.uint8)
        for k in range(groups):
            out[..., k] = ((v >> (7 * k)) & 0x7F) | ((nbytes > k + 1) << 7)
        if nbytes.min() != nbytes.max():
            valid = np.arange(groups, dtype=np.int8) < nbytes[..., None]
            return (out.reshape(n, width * groups), valid.reshape(n, width * groups),
                    nbytes.sum(axis=1, dtype=np.int64))
    # Every value takes the same number of bytes.
    size = int(nbytes.flat[0]) if nbytes.size else 0
    return np.ascontiguousarray(out[..., :size]).reshape(n, width * size), None, None


def _length_varints(lengths):
    """Varints of a vector of lengths -> a part (see `_varint_rows`)."""
    return _varint_rows(np.asarray(lengths, np.int64)[:, None])


def _byte_count(part):
    data, valid, counts = part
    return np.full(len(data), data.shape[1], np.int64) if valid is None else counts


def _const(data, n):
    return np.broadcast_to(np.frombuffer(data, np.uint8), (n, len(data))), None, None


def _feature_entry(name, values, n):
    """The parts of one map entry (key `name`, the row's values), and its byte counts."""
    if name == "masked_lm_weights":
        weights = np.ascontiguousarray(np.asarray(values, "<f4"))
        payload = (weights.view(np.uint8).reshape(n, -1), None, None)
        kind = b"\x12"  # Feature.float_list
    else:
        payload = _varint_rows(np.asarray(values))
        kind = b"\x1a"  # Feature.int64_list
    key = _varint(len(name)) + name.encode()
    if payload[1] is None:  # the same width in every row: one constant header
        p_len = payload[0].shape[1]
        packed_len = 1 + len(_varint(p_len)) + p_len
        feature_len = 1 + len(_varint(packed_len)) + packed_len
        entry_len = 1 + len(key) + 1 + len(_varint(feature_len)) + feature_len
        header = (b"\x0a" + _varint(entry_len) + b"\x0a" + key + b"\x12" +
                  _varint(feature_len) + kind + _varint(packed_len) + b"\x0a" + _varint(p_len))
        return [_const(header, n), payload], np.full(n, 1 + len(_varint(entry_len)) +
                                                     entry_len, np.int64)
    p_len = _byte_count(payload)
    p_var = _length_varints(p_len)
    packed_len = 1 + _byte_count(p_var) + p_len                # List{1: packed values}
    k_var = _length_varints(packed_len)
    feature_len = 1 + _byte_count(k_var) + packed_len          # Feature{kind: List}
    f_var = _length_varints(feature_len)
    entry_len = 1 + len(key) + 1 + _byte_count(f_var) + feature_len  # {1: key, 2: Feature}
    e_var = _length_varints(entry_len)
    parts = [_const(b"\x0a", n), e_var, _const(b"\x0a" + key + b"\x12", n), f_var,
             _const(kind, n), k_var, _const(b"\x0a", n), p_var, payload]
    return parts, 1 + _byte_count(e_var) + entry_len


def _runs(parts):
    """[(True, the parts before the first whose width varies between rows), (False, the
    rest)], without empty runs."""
    first = next((i for i, part in enumerate(parts) if part[1] is not None), len(parts))
    return [(fixed, run) for fixed, run in ((True, parts[:first]), (False, parts[first:]))
            if run]


def encode_batch(features):
    """Serialises a batch of examples.

    Args:
        features: dict name -> 2-D array [N, L]: int arrays for the int64 features,
            a float array for "masked_lm_weights" (the original pre-training features).

    Returns:
        list of N `bytes`, each a serialized `tf.train.Example`.
    """
    n = len(features["input_ids"])
    names = [k for k in _ORDER if k in features] + sorted(set(features) - set(_ORDER))
    body, body_len = [], np.zeros(n, np.int64)
    for name in names:
        parts, length = _feature_entry(name, features[name], n)
        body += parts
        body_len += length
    parts = [_const(b"\x0a", n), _length_varints(body_len)] + body
    # Each run of parts becomes a bytes buffer and the start of each row in it.
    slices = []
    for fixed, run in _runs(parts):
        data = np.concatenate([part[0] for part in run], axis=1)
        if fixed:
            starts = np.arange(n + 1) * data.shape[1]
            flat = data.reshape(-1)
        else:
            valid = np.concatenate([np.ones(d.shape, bool) if v is None else v
                                    for d, v, _ in run], axis=1)
            starts = np.concatenate([[0], np.cumsum(sum(_byte_count(p) for p in run))])
            flat = np.compress(valid.reshape(-1), data.reshape(-1))  # 3x data[valid]
        buffer, ends = flat.tobytes(), starts.tolist()
        slices.append([buffer[a:b] for a, b in zip(ends[:-1], ends[1:])])
    if len(slices) == 1:
        return slices[0]
    return [b"".join(row) for row in zip(*slices)]
