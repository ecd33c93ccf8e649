"""Classification examples -> packed ids -> cached TFRecords -> tf.data batches.

Pipeline position: `tasks.classification.data` (examples) -> here -> the classification
task's training, evaluation and prediction.
Each split is converted once and cached in `output_dir` under a name that carries a hash
of everything the features depend on (the data file's and vocabulary's contents,
lower-casing, length, labels, tokenizer), so a changed input is never read from a stale
cache and an unchanged one, copied or touched, is not converted again. Both tokenizers (the
original's WordPiece, `FastTokenizer`, and the in-graph `GraphTokenizer` + `graph_packing`)
give identical features.
"""

import hashlib
import os

import numpy as np
import tensorflow as tf
from absl import logging

from common import file_io
from common.progress import Progress
from modeling.inputs import INPUT_NAMES
from modeling.padding import trim_padding
from tasks.classification.config import TOKENIZERS
from text import packing

FORMAT_VERSION = 2  # in the cache key: 2 added example_index (files of 1 are not reused)


def label_ids(examples, label_list, regression, multi_label=False):
    """The examples' labels as the model learns them: scores (float32 [n]), class ids
    (int64 [n]), or with `multi_label` each example's labels as a 0/1 row (float32
    [n, labels]; an example may have none)."""
    if regression:
        return np.array([e.label for e in examples], np.float32)
    index = {label: i for i, label in enumerate(label_list)}
    if multi_label:
        rows = np.zeros((len(examples), len(label_list)), np.float32)
        for row, example in enumerate(examples):
            rows[row, [index[label] for label in example.label]] = 1.0
        return rows
    return np.array([index[e.label] for e in examples], np.int64)


def convert_examples(examples, vocab_file, do_lower_case, max_seq_length,
                     tokenizer="python", batch_size=256, long_document="truncate",
                     doc_stride=None):
    """Packed inputs of `examples` (see `text.packing.pack_document` for
    `long_document`): dict of int32 arrays [n, max_seq_length], one row per example, or
    per window with "windows", which adds "example_index" [n] (each window's example)."""
    if tokenizer == "python":
        return _python_features(examples, vocab_file, do_lower_case, max_seq_length,
                                batch_size, long_document, doc_stride)
    if tokenizer != "graph":
        raise ValueError(f"--tokenizer={tokenizer!r} is not one of {list(TOKENIZERS)}.")
    from text.graph_packing import pack_document_ids
    from text.graph_tokenizer import GraphTokenizer
    from text.tokenization import load_vocab
    vocab = load_vocab(vocab_file)
    tok = GraphTokenizer(vocab_file, do_lower_case=do_lower_case)
    parts = []
    for start in range(0, len(examples), batch_size):
        chunk = examples[start:start + batch_size]
        ids_a = tok.tokenize(tf.constant([e.text_a for e in chunk]))
        ids_b = tok.tokenize(tf.constant([e.text_b or "" for e in chunk]))
        packed, rows = pack_document_ids(ids_a, ids_b, max_seq_length, vocab["[CLS]"],
                                         vocab["[SEP]"], long_document, doc_stride)
        part = {k: v.numpy() for k, v in packed.items()}
        if long_document == "windows":
            part["example_index"] = (rows.numpy() + start).astype(np.int32)
        parts.append(part)
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


def _python_features(examples, vocab_file, do_lower_case, max_seq_length, batch_size,
                     long_document, doc_stride):
    """`convert_examples` with the original's WordPiece: `FastTokenizer`'s ids (the
    compiled tokenizer's, in batches, on every text where they equal `FullTokenizer`'s;
    `FullTokenizer` on the others), packed by `text.packing`'s rules."""
    from text.fast_tokenizer import FastTokenizer
    tok = FastTokenizer(vocab_file, do_lower_case=do_lower_case)
    cls_id, sep_id = tok.vocab["[CLS]"], tok.vocab["[SEP]"]
    progress = Progress("classification features", ["examples"],
                        total=("examples", len(examples)))
    pairs, index = [], []
    for start in range(0, len(examples), batch_size):
        chunk = examples[start:start + batch_size]
        chunk_pairs, rows = packing.segment_pairs(
            tok.ids([e.text_a for e in chunk]), tok.ids([e.text_b or "" for e in chunk]),
            max_seq_length, long_document, doc_stride)
        pairs.extend(chunk_pairs)
        index.extend(start + row for row in rows)
        progress.update(examples=len(chunk))
    progress.close()
    arrays = packing.pack_id_pairs(pairs, cls_id, sep_id, max_seq_length)
    if long_document == "windows":
        arrays["example_index"] = np.array(index, np.int32)
    return arrays


def _ints(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))


def _fingerprint(data_file, vocab_file, *settings):
    """The cache key: the two files' contents (not their paths or times: a copied or
    touched data file reuses its features; an edited one never does) and the settings."""
    digest = hashlib.sha1()
    for path in (data_file, vocab_file):
        with open(path, "rb") as f:
            digest.update(hashlib.file_digest(f, "sha1").digest())
    digest.update(repr(settings).encode())
    return digest.hexdigest()[:12]


def feature_spec(max_seq_length, regression, num_labels=None):
    """The records' features; `num_labels` (multi-label): a 0/1 float row of labels."""
    fixed = tf.io.FixedLenFeature
    spec = {name: fixed([max_seq_length], tf.int64) for name in INPUT_NAMES}
    spec["label_ids"] = fixed([num_labels], tf.float32) if num_labels else \
        fixed([], tf.float32 if regression else tf.int64)
    spec["example_index"] = fixed([], tf.int64)  # the example a sequence (window) is of
    return spec


def cached_features(examples, data_file, output_dir, split, vocab_file, do_lower_case,
                    max_seq_length, label_list, regression, tokenizer="python",
                    long_document="truncate", doc_stride=None, multi_label=False):
    """Path of the TFRecord holding `examples`' features (one per example, or per window
    with "windows"; each with its `example_index`), converting them if needed.
    Unlabelled (test) examples get label 0 (no label, for `multi_label`)."""
    key = _fingerprint(data_file, vocab_file, do_lower_case, max_seq_length,
                       label_list, regression, tokenizer, len(examples), long_document,
                       doc_stride, FORMAT_VERSION, *(("multi_label",) if multi_label else ()))
    path = os.path.join(output_dir, f"{split}-{max_seq_length}-{key}.tf_record")
    if os.path.exists(path):
        logging.info("Using cached features %s", path)
        return path
    features = convert_examples(examples, vocab_file, do_lower_case, max_seq_length,
                                tokenizer, long_document=long_document,
                                doc_stride=doc_stride)
    index = features.pop("example_index", np.arange(len(examples)))
    if examples[0].label is None:
        labels = np.zeros((len(examples), len(label_list)), np.float32) if multi_label \
            else np.zeros(len(examples), np.float32 if regression else np.int64)
    else:
        labels = label_ids(examples, label_list, regression, multi_label)
    with file_io.atomic_path(path) as tmp:  # never a half-written cache
        with tf.io.TFRecordWriter(tmp) as writer:
            for i, example in enumerate(index):
                feats = {name: _ints(features[name][i]) for name in features}
                value = np.atleast_1d(labels[example])
                feats["label_ids"] = tf.train.Feature(float_list=tf.train.FloatList(
                    value=value)) if labels.dtype == np.float32 else _ints(value)
                feats["example_index"] = _ints([example])
                writer.write(tf.train.Example(features=tf.train.Features(
                    feature=feats)).SerializeToString())
    logging.info("Wrote %d %s features of %d examples to %s", len(index), split,
                 len(examples), path)
    return path


def count_records(path):
    """Records in a feature file (TensorFlow's reader, without parsing)."""
    return int(tf.data.TFRecordDataset(path).reduce(np.int64(0), lambda n, _: n + 1))


def classifier_dataset(path, batch_size, max_seq_length, regression, is_training,
                       seed=None, input_context=None, skip_batches=0, pad_to_longest=True,
                       bucket_by_length=False, num_labels=None):
    """Batches of dicts (int32 inputs, `label_ids`) from a cached feature file: shuffled,
    repeated and full for training; in order and once for evaluation/prediction.

    Args:
        pad_to_longest: bool. Each batch's inputs are cut to its longest sequence
            (rounded up to `modeling.padding.PAD_MULTIPLE`; see `trim_padding`) instead of
            `max_seq_length`: the same outputs for less compute.
        bucket_by_length: bool. Training: batches of sequences of similar length
            (Hugging Face's `group_by_length`), drawn from the shuffled stream in groups
            of `BUCKET_WINDOW` batches: still random batches, with less padding.
        num_labels: int or None. Multi-label records: `label_ids` a 0/1 row of this many.
    """
    spec = feature_spec(max_seq_length, regression, num_labels)
    dataset = tf.data.TFRecordDataset(path)
    if input_context and input_context.num_input_pipelines > 1:
        dataset = dataset.shard(input_context.num_input_pipelines,
                                input_context.input_pipeline_id)

    @tf.autograph.experimental.do_not_convert  # plain ops: nothing for AutoGraph to rewrite
    def parse(serialized):
        parsed = tf.io.parse_example(serialized, spec)
        return {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v
                for k, v in parsed.items()}

    if is_training:
        dataset = dataset.repeat().shuffle(10000, seed=seed)
    if is_training and bucket_by_length:
        dataset = _length_grouped_batches(dataset, batch_size, parse)
    else:
        dataset = dataset.batch(batch_size, drop_remainder=is_training).map(
            parse, num_parallel_calls=tf.data.AUTOTUNE)
    if skip_batches:
        dataset = dataset.skip(skip_batches)
    if pad_to_longest:
        dataset = dataset.map(trim_padding, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)


def read_arrays(path, max_seq_length, regression, num_labels=None):
    """Every record of a cached feature file, in order, as NumPy arrays as wide as the
    file's longest sequence (rounded up as `trim_padding` rounds): evaluation and
    prediction regroup them by length (`training.loop.predict_arrays`)."""
    dataset = classifier_dataset(path, 4096, max_seq_length, regression, is_training=False,
                                 pad_to_longest=True, num_labels=num_labels)
    parts = [{name: value.numpy() for name, value in batch.items()} for batch in dataset]
    if not parts:
        raise ValueError(f"{path}: no records.")
    width = max(part["input_mask"].shape[1] for part in parts)

    def widened(name, value):  # each part cut to its own longest: padded to the widest
        if name not in INPUT_NAMES or value.shape[1] == width:
            return value
        return np.pad(value, [(0, 0), (0, width - value.shape[1])])

    return {name: np.concatenate([widened(name, part[name]) for part in parts])
            for name in parts[0]}


# Length-grouped batches are formed within windows of this many batches of the shuffled
# stream (as Hugging Face's LengthGroupedSampler groups within "megabatches").
BUCKET_WINDOW = 50


def _length_grouped_batches(records, batch_size, parse):
    """Serialized examples (a shuffled, infinite stream) -> full batches of similar
    lengths, parsed by `parse`: each window of `BUCKET_WINDOW` batches' worth of examples
    is sorted by length and cut into batches, and the batches are shuffled
    (deterministically)."""
    window = BUCKET_WINDOW * batch_size

    @tf.autograph.experimental.do_not_convert
    def regroup(group):
        lengths = tf.reduce_sum(group["input_mask"], axis=1)
        order = tf.argsort(lengths, stable=True)
        batches = {k: tf.reshape(tf.gather(v, order), tf.concat(
                       [[BUCKET_WINDOW, batch_size], tf.shape(v)[1:]], 0))
                   for k, v in group.items()}
        # Batch order within the window: a fixed permutation by the window's content.
        shuffle = tf.argsort(tf.random.stateless_uniform(
            [BUCKET_WINDOW], seed=tf.stack([tf.reduce_sum(lengths), 0])))
        return tf.data.Dataset.from_tensor_slices(
            {k: tf.gather(v, shuffle) for k, v in batches.items()})

    return records.batch(window, drop_remainder=True).map(parse).flat_map(regroup)
