"""tf.data input of pre-training TFRecords (what `create_pretraining_data` writes).

Pipeline position: TFRecords -> here -> the pre-training task's training and evaluation
(`tasks.pretraining.task`). Parses the original's feature spec (int64 cast to int32), as
the original `run_pretraining.input_fn_builder`, with deterministic order for a given seed
so that a resumed run sees exactly the data an uninterrupted one would (a resumed run
skips, unparsed, the batches already used).
"""

import tensorflow as tf
from google.protobuf.message import DecodeError

from common import file_io
from common.errors import op_error_text
from data_prep.pretraining_records import FEATURE_NAMES, feature_spec, read_examples


class InputError(ValueError):
    """Input files missing or not what the flags say."""


def expand_input_patterns(input_file):
    """Comma-separated globs -> sorted unique file list; an error if nothing matches."""
    files, empty = [], []
    for pattern in [p.strip() for p in str(input_file).split(",") if p.strip()]:
        matched = file_io.glob(pattern)
        if not matched:
            empty.append(pattern)
        files.extend(matched)
    if empty:
        raise InputError(f"--input_file: no file matches {empty}.")
    if not files:
        raise InputError("--input_file is empty.")
    return sorted(set(files))


def check_records(path, max_seq_length, max_predictions_per_seq, sample=32):
    """Checks the first `sample` records of `path` before training: the pre-training
    features with the lengths the flags give (the first record names the flag to set),
    and every record of the sample alike. Raises `InputError` naming the file, record,
    feature and flag."""
    check_first_record(path, max_seq_length, max_predictions_per_seq)
    try:
        for number, _ in enumerate(read_examples(path, max_seq_length,
                                                 max_predictions_per_seq)):
            if number + 1 >= sample:
                break
    except ValueError as err:
        raise InputError(str(err)) from None


def check_first_record(path, max_seq_length, max_predictions_per_seq):
    """Reads one record of `path` and checks it has the pre-training features with the
    lengths the flags give; raises `InputError` naming the file, feature and flag."""
    try:
        raw = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
    except tf.errors.OpError as err:
        raise InputError(f"{path}: not a readable TFRecord file "
                         f"({op_error_text(err)}).") from err
    if raw is None:
        raise InputError(f"{path}: the file holds no record.")
    try:
        example = tf.train.Example.FromString(raw.numpy())
    except DecodeError:
        raise InputError(f"{path}: its records are not tf.train.Examples; is this a "
                         f"pre-training TFRecord file?") from None
    feats = example.features.feature
    missing = [name for name in FEATURE_NAMES if name not in feats]
    if missing:
        raise InputError(f"{path}: records lack features {missing}; expected the "
                         f"pre-training features {list(FEATURE_NAMES)} written by "
                         f"create_pretraining_data.py.")
    for name, flag, want in (("input_ids", "--max_seq_length", max_seq_length),
                             ("masked_lm_ids", "--max_predictions_per_seq",
                              max_predictions_per_seq)):
        have = len(feats[name].int64_list.value)
        if have != want:
            raise InputError(f"{path}: feature '{name}' has {have} values but {flag}={want}; "
                             f"set {flag}={have} (it must match the value used when the "
                             f"data was created).")


def _parse_batch(serialized, spec):
    parsed = tf.io.parse_example(serialized, spec)
    return {name: tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
            for name, value in parsed.items()}


def pretraining_dataset(files, batch_size, max_seq_length, max_predictions_per_seq,
                        is_training, seed=None, input_context=None, skip_batches=0):
    """Batches of pre-training features.

    Training: file order shuffled, up to 4 files interleaved, records shuffled in a
    buffer of 100 (as the original), repeated forever, full batches only. Evaluation: the
    files in order, once, the last batch possibly short.

    Args:
        files: list of TFRecord paths.
        batch_size: int. Per input pipeline (per replica for one pipeline per worker).
        input_context: `tf.distribute.InputContext` to shard files across workers.
        skip_batches: int. Batches to drop from the start (skipped before parsing), to
            resume a training run where it stopped.

    Returns:
        `tf.data.Dataset` of dicts: int32 features and float32 "masked_lm_weights".
    """
    spec = feature_spec(max_seq_length, max_predictions_per_seq)
    dataset = tf.data.Dataset.from_tensor_slices(list(files))
    sharded_by_file = False
    if input_context and input_context.num_input_pipelines > 1:
        if len(files) >= input_context.num_input_pipelines:
            dataset = dataset.shard(input_context.num_input_pipelines,
                                    input_context.input_pipeline_id)
            sharded_by_file = True
    if is_training:
        dataset = dataset.repeat().shuffle(len(files), seed=seed)
        dataset = dataset.interleave(tf.data.TFRecordDataset,
                                     cycle_length=min(4, len(files)),
                                     num_parallel_calls=tf.data.AUTOTUNE,
                                     deterministic=True)
    else:
        dataset = tf.data.TFRecordDataset(dataset)
    if input_context and input_context.num_input_pipelines > 1 and not sharded_by_file:
        dataset = dataset.shard(input_context.num_input_pipelines,
                                input_context.input_pipeline_id)
    if is_training:
        dataset = dataset.shuffle(100, seed=seed)
    dataset = dataset.batch(batch_size, drop_remainder=is_training)
    if skip_batches:
        dataset = dataset.skip(skip_batches)
    parse = tf.autograph.experimental.do_not_convert(lambda s: _parse_batch(s, spec))
    dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE)


def find_damaged(files, max_seq_length, max_predictions_per_seq, vocab_size=None):
    """Reads every record of `files` (at tf.data speed) to find the one a training or
    evaluation error came from: a file that is damaged or cut short, a record of other
    lengths, or ids the model's vocabulary does not have. Returns an `InputError` naming
    the file, or None when every file reads cleanly."""
    spec = feature_spec(max_seq_length, max_predictions_per_seq)
    for path in files:
        dataset = tf.data.TFRecordDataset(path).batch(1024).map(
            lambda s: tf.reduce_max(tf.io.parse_example(s, spec)["input_ids"]))
        try:
            largest = max((int(m) for m in dataset.as_numpy_iterator()), default=0)
        except tf.errors.OpError as err:
            return InputError(f"{path}: cannot be read to the end ({op_error_text(err)}); "
                              f"the file is damaged or holds records of other lengths. "
                              f"Recreate it or leave it out of --input_file.")
        if vocab_size is not None and largest >= vocab_size:
            return InputError(f"{path}: token id {largest} but vocab_size={vocab_size} in the "
                              f"model config; the records were made with another "
                              f"vocabulary.")
    return None
