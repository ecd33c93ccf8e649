"""The pre-training TFRecord format: the original's features, writing and reading.

Pipeline position: written by `create_pretraining_data.py`, read by
`run_pretraining.py` and `inspect_tfrecord.py`. Readable by the original Google code.

Features of each `tf.train.Example` (zero-padded):
  input_ids, input_mask, segment_ids     int64 x max_seq_length
  masked_lm_positions, masked_lm_ids     int64 x max_predictions_per_seq
  masked_lm_weights                      float x max_predictions_per_seq (1.0 real, 0.0 pad)
  next_sentence_labels                   int64 x 1 (1 = B is a random segment)
"""

import contextlib
import os

import tensorflow as tf
from google.protobuf.message import DecodeError

from common import file_io
from common.errors import op_error_text
from modeling.inputs import INPUT_NAMES

FEATURE_NAMES = INPUT_NAMES + ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights",
                               "next_sentence_labels")


def feature_spec(max_seq_length, max_predictions_per_seq):
    """The `tf.io.parse_example` spec, as the original's `run_pretraining.py`."""
    fixed = tf.io.FixedLenFeature
    return {
        "input_ids": fixed([max_seq_length], tf.int64),
        "input_mask": fixed([max_seq_length], tf.int64),
        "segment_ids": fixed([max_seq_length], tf.int64),
        "masked_lm_positions": fixed([max_predictions_per_seq], tf.int64),
        "masked_lm_ids": fixed([max_predictions_per_seq], tf.int64),
        "masked_lm_weights": fixed([max_predictions_per_seq], tf.float32),
        "next_sentence_labels": fixed([1], tf.int64),
    }


def _ints(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def serialize_instance(instance, max_seq_length, max_predictions_per_seq):
    """`TrainingInstance` -> serialized `tf.train.Example` bytes, padded with zeros."""
    n = len(instance.input_ids)
    if n > max_seq_length:
        raise ValueError(f"Instance of length {n} exceeds max_seq_length={max_seq_length}.")
    pad = max_seq_length - n
    k = len(instance.masked_lm_positions)
    mpad = max_predictions_per_seq - k
    features = {
        "input_ids": _ints(list(instance.input_ids) + [0] * pad),
        "input_mask": _ints([1] * n + [0] * pad),
        "segment_ids": _ints(list(instance.segment_ids) + [0] * pad),
        "masked_lm_positions": _ints(list(instance.masked_lm_positions) + [0] * mpad),
        "masked_lm_ids": _ints(list(instance.masked_lm_ids) + [0] * mpad),
        "masked_lm_weights": tf.train.Feature(
            float_list=tf.train.FloatList(value=[1.0] * k + [0.0] * mpad)),
        "next_sentence_labels": _ints([1 if instance.is_random_next else 0]),
    }
    example = tf.train.Example(features=tf.train.Features(feature=features))
    # Deterministic: the feature map is written in sorted key order, not in an order
    # that depends on the process, so equal inputs give byte-identical files.
    return example.SerializeToString(deterministic=True)


def serialize_instances(instances, max_seq_length, max_predictions_per_seq):
    """Many `TrainingInstance`s -> serialized examples, the same examples as
    `serialize_instance` but encoded in one vectorised pass (`example_encoder`)."""
    import numpy as np

    from data_prep.example_encoder import encode_batch

    n = len(instances)
    ids = np.zeros((n, max_seq_length), np.int64)
    segments = np.zeros((n, max_seq_length), np.int64)
    mask = np.zeros((n, max_seq_length), np.int64)
    positions = np.zeros((n, max_predictions_per_seq), np.int64)
    labels = np.zeros((n, max_predictions_per_seq), np.int64)
    weights = np.zeros((n, max_predictions_per_seq), np.float32)
    for row, inst in enumerate(instances):
        length, k = len(inst.input_ids), len(inst.masked_lm_positions)
        if length > max_seq_length:
            raise ValueError(f"Instance of length {length} exceeds "
                             f"max_seq_length={max_seq_length}.")
        ids[row, :length] = inst.input_ids
        segments[row, :length] = inst.segment_ids
        mask[row, :length] = 1
        positions[row, :k] = inst.masked_lm_positions
        labels[row, :k] = inst.masked_lm_ids
        weights[row, :k] = 1.0
    return encode_batch({
        "input_ids": ids, "input_mask": mask, "segment_ids": segments,
        "masked_lm_positions": positions, "masked_lm_ids": labels,
        "masked_lm_weights": weights,
        "next_sentence_labels": np.array([[int(i.is_random_next)] for i in instances],
                                         np.int64).reshape(n, 1),
    })


@contextlib.contextmanager
def open_writers(paths):
    """TFRecord writers for `paths`, closed when the block ends (the caller makes the set
    atomic: `shard_writers`, or `fast_pretraining.run` for its workers' files).

    Raises:
        OSError-like `ValueError` naming the file when it cannot be written.
    """
    writers = []
    try:
        for path in paths:
            try:
                file_io.makedirs(os.path.dirname(path))
                writers.append(tf.io.TFRecordWriter(path))
            except (tf.errors.OpError, OSError, ValueError) as e:
                raise ValueError(f"{path}: cannot write the output file ({e}).") from e
        yield writers
    finally:
        for writer in writers:
            with contextlib.suppress(Exception):
                writer.close()


@contextlib.contextmanager
def shard_writers(paths):
    """TFRecord writers for `paths`, each writing to a temporary name in the same folder
    (`common.file_io.atomic_paths`): once all are complete every file is renamed to its
    final name; on failure every temporary file is removed. An interrupted run therefore
    never leaves a shard, or part of the set, under its final name.

    Raises:
        OSError-like `ValueError` naming the folder when it cannot be written.
    """
    for path in paths:
        try:
            file_io.makedirs(os.path.dirname(path))
        except (tf.errors.OpError, OSError, ValueError) as e:
            raise ValueError(f"{path}: cannot write the output file ({e}).") from e
    with file_io.atomic_paths(paths) as temps:
        with open_writers(temps) as writers:
            yield writers


def read_examples(path, max_seq_length=None, max_predictions_per_seq=None):
    """Yields dicts of numpy arrays from a pre-training TFRecord file.

    Lengths default to those found in the first record. Raises `ValueError` naming the
    file (and the record or feature) if it is not a TFRecord file, is damaged or cut
    short, or a record lacks a feature or has another length.
    """
    for number, example in enumerate(_examples(path)):
        feats = example.features.feature
        missing = [name for name in FEATURE_NAMES if name not in feats]
        if missing:
            raise ValueError(f"{path}: record lacks features {missing}; this is not a "
                             f"pre-training TFRecord (expected {list(FEATURE_NAMES)}).")
        out = {}
        for name in FEATURE_NAMES:
            f = feats[name]
            out[name] = list(f.float_list.value) if name == "masked_lm_weights" \
                else list(f.int64_list.value)
        if max_seq_length is None:
            max_seq_length = len(out["input_ids"])
            max_predictions_per_seq = len(out["masked_lm_ids"])
        for name in FEATURE_NAMES:
            want = 1 if name == "next_sentence_labels" else (
                max_seq_length if name in INPUT_NAMES else max_predictions_per_seq)
            if len(out[name]) != want:
                raise ValueError(f"{path}: record {number}: feature '{name}' has "
                                 f"{len(out[name])} values, expected {want} (as in the "
                                 f"records before it).")
        yield out


def _examples(path):
    try:
        for number, raw in enumerate(tf.data.TFRecordDataset(path).as_numpy_iterator()):
            try:
                yield tf.train.Example.FromString(raw)
            except DecodeError:
                raise ValueError(f"{path}: record {number} is not a tf.train.Example; is "
                                 f"this a pre-training TFRecord file?") from None
    except tf.errors.OpError as e:
        raise ValueError(f"{path}: not a readable TFRecord file, or damaged "
                         f"({op_error_text(e)}). "
                         f"Recreate it with create_pretraining_data.py.") from None
