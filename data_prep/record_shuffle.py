"""A set of TFRecord files rewritten in one uniformly random order of all their records,
in bounded memory.

Pipeline position: the last step of `create_pretraining_data --mode=fast`, before the
shards are published. The original shuffles all of its instances in memory before
writing them, and its `run_pretraining.py` (as ours) only shuffles records within a
buffer of 100: training on records in corpus order would see one part of the corpus at
a time (one topic, one era of a collection) for thousands of steps. Fast mode streams the
corpus piece by piece, so its records come out in corpus order; this pass mixes them.

Records are copied as they are framed on disk (length, CRC, data, CRC: the frames carry
their own checksums), without parsing. When the set is larger than `bucket_bytes`, each
record first goes to a random one of several bucket files, and each bucket is then
shuffled in memory and dealt out to the outputs: every bucket is a uniform sample of the
whole set, so the outputs' order is uniformly random too.
"""

import math
import os
import struct
import tempfile

import numpy as np

SHUFFLE_BUCKET_BYTES = 256 << 20  # at most about this much is held in memory
_HEADER = 12  # uint64 length + uint32 masked CRC of the length


def read_frames(path):
    """The framed records of an uncompressed TFRecord file, as raw bytes each."""
    with open(path, "rb") as f:
        while True:
            header = f.read(_HEADER)
            if not header:
                return
            if len(header) < _HEADER:
                raise ValueError(f"{path}: truncated TFRecord file (a partial header).")
            (length,) = struct.unpack("<Q", header[:8])
            body = f.read(length + 4)
            if len(body) < length + 4:
                raise ValueError(f"{path}: truncated TFRecord file (a partial record).")
            yield header + body


def shuffle_files(paths, seed, bucket_bytes=SHUFFLE_BUCKET_BYTES):
    """Rewrites `paths` in place: all their records in one random order (seeded), dealt
    round-robin over the files (each keeps about its share). Returns the record count."""
    rng = np.random.default_rng([seed, 0x5EED])
    total = sum(os.path.getsize(path) for path in paths)
    buckets = max(1, math.ceil(total / bucket_bytes))
    if buckets == 1:
        groups = [[frame for path in paths for frame in read_frames(path)]]
        return _deal(groups, paths, rng)
    folder = os.path.dirname(os.path.abspath(paths[0]))
    bucket_paths = []
    try:
        for _ in range(buckets):
            handle, path = tempfile.mkstemp(dir=folder, prefix=".shuffle-", suffix=".tmp")
            os.close(handle)
            bucket_paths.append(path)
        files = [open(path, "wb") for path in bucket_paths]
        try:
            for path in paths:
                for frame in read_frames(path):
                    files[rng.integers(buckets)].write(frame)
        finally:
            for f in files:
                f.close()
        return _deal((list(read_frames(path)) for path in bucket_paths), paths, rng)
    finally:
        for path in bucket_paths:
            if os.path.exists(path):
                os.remove(path)


def _deal(groups, paths, rng):
    """Each group of frames shuffled and written round-robin over `paths` (truncated
    first), group after group."""
    outputs = [open(path, "wb") for path in paths]
    count = 0
    try:
        for frames in groups:
            for index in rng.permutation(len(frames)):
                outputs[count % len(outputs)].write(frames[index])
                count += 1
    finally:
        for f in outputs:
            f.close()
    return count
