"""Batches padded to their own longest sequence, and length-grouped training batches:
less padding, the same outputs."""

import collections

import numpy as np
import tensorflow as tf
from conftest import TINY_CONFIG

from modeling import BertClassifier, BertConfig
from modeling.inputs import INPUT_NAMES
from modeling.padding import PAD_MULTIPLE, trim_padding
from tasks.classification import features

MAX_LEN = 32


def _batch(lengths, width=MAX_LEN, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.zeros((len(lengths), width), np.int32)
    for row, n in enumerate(lengths):
        ids[row, :n] = rng.integers(4, TINY_CONFIG["vocab_size"], n)
        ids[row, 0] = 2
    mask = (ids > 0).astype(np.int32)
    segments = np.zeros_like(ids)
    segments[:, 3:] = mask[:, 3:]  # a second segment after three pieces
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments,
            "label_ids": np.arange(len(lengths), dtype=np.int32)}


def test_trim_padding_cuts_to_the_longest_sequence_rounded_up_to_16():
    for lengths, width in (([3, 17], 32), ([5, 2], 16), ([32, 1], 32), ([16], 16)):
        batch = {k: tf.constant(v) for k, v in _batch(lengths).items()}
        cut = trim_padding(batch)
        for name in ("input_ids", "input_mask", "segment_ids"):
            assert cut[name].shape == (len(lengths), width), (lengths, name)
            np.testing.assert_array_equal(cut[name], batch[name][:, :width])
        np.testing.assert_array_equal(cut["label_ids"], batch["label_ids"])  # per example


def test_a_trimmed_batch_gives_the_logits_of_the_full_width_one():
    model = BertClassifier(BertConfig(**TINY_CONFIG), 3)
    batch = _batch([4, 9, 13, 2])
    full = model({k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")},
                 training=False)["logits"].numpy()
    cut = trim_padding({k: tf.constant(v) for k, v in batch.items()})
    assert cut["input_ids"].shape[1] == 16
    trimmed = model({k: cut[k] for k in ("input_ids", "input_mask", "segment_ids")},
                    training=False)["logits"].numpy()
    np.testing.assert_allclose(trimmed, full, atol=1e-5)


def _feature_file(path, lengths):
    with tf.io.TFRecordWriter(path) as writer:
        batch = _batch(lengths)
        for i in range(len(lengths)):
            feats = {name: tf.train.Feature(int64_list=tf.train.Int64List(
                value=batch[name][i])) for name in ("input_ids", "input_mask", "segment_ids")}
            feats["label_ids"] = tf.train.Feature(int64_list=tf.train.Int64List(
                value=[i % 2]))
            feats["example_index"] = tf.train.Feature(int64_list=tf.train.Int64List(
                value=[i]))
            writer.write(tf.train.Example(features=tf.train.Features(
                feature=feats)).SerializeToString())
    return path


def test_evaluation_batches_are_padded_to_their_own_length_and_keep_their_order(tmp_path):
    lengths = [3, 5, 20, 2, 7, 9, 30, 4, 6]
    path = _feature_file(str(tmp_path / "dev.tf_record"), lengths)
    batches = list(features.classifier_dataset(path, 3, MAX_LEN, False, is_training=False))
    assert [b["input_ids"].shape[1] for b in batches] == [32, 16, 32]
    assert np.concatenate([b["example_index"] for b in batches]).tolist() == list(range(9))
    full = list(features.classifier_dataset(path, 3, MAX_LEN, False, is_training=False,
                                            pad_to_longest=False))
    assert [b["input_ids"].shape[1] for b in full] == [MAX_LEN] * 3
    for got, want in zip(batches, full):
        width = got["input_ids"].shape[1]
        np.testing.assert_array_equal(got["input_ids"], want["input_ids"][:, :width])
        assert int(tf.reduce_sum(want["input_mask"][:, width:])) == 0  # only padding cut


def test_the_input_pipelines_leave_autograph_out(tmp_path, monkeypatch):
    # Their map functions are plain ops: AutoGraph's source rewrite (0.1-0.2 s at the
    # first pipeline of a process) must not run for them.
    from tensorflow.python.autograph.impl import api

    from modeling.padding import trim_grouped_padding
    from tasks.pretraining import input as pretraining_input

    converted = []  # (a spy: AutoGraph falls back quietly when its conversion raises)
    convert = api._convert_actual
    monkeypatch.setattr(api, "_convert_actual",
                        lambda entity, context: converted.append(entity) or
                        convert(entity, context))
    path = _feature_file(str(tmp_path / "train.tf_record"),
                         [3, 5] * features.BUCKET_WINDOW)
    for bucket in (False, True):
        next(iter(features.classifier_dataset(path, 2, MAX_LEN, False, is_training=True,
                                              seed=1, bucket_by_length=bucket)))
    ids = np.ones([2, 3, 8], np.int32)
    tf.data.Dataset.from_tensors({n: ids for n in INPUT_NAMES}).map(trim_grouped_padding)
    # (built, not read: a dataset traces its map functions when it is made)
    pretraining_input.pretraining_dataset([str(tmp_path / "unread.tfrecord")], 2, 16, 3,
                                          is_training=True, seed=1)
    assert converted == []


def test_length_grouped_batches_hold_the_same_examples_with_less_padding(tmp_path):
    rng = np.random.default_rng(1)
    batch_size = 4
    n = features.BUCKET_WINDOW * batch_size
    lengths = rng.integers(2, MAX_LEN + 1, n).tolist()
    path = _feature_file(str(tmp_path / "train.tf_record"), lengths)

    def first_window(bucket):
        dataset = features.classifier_dataset(path, batch_size, MAX_LEN, False,
                                              is_training=True, seed=7,
                                              bucket_by_length=bucket)
        return list(dataset.take(features.BUCKET_WINDOW))

    plain, grouped = first_window(False), first_window(True)
    # A window regroups the same stretch of the shuffled stream: the same examples.
    seen = [collections.Counter(np.concatenate([b["example_index"] for b in batches])
                                .tolist()) for batches in (plain, grouped)]
    assert seen[0] == seen[1] and sum(seen[1].values()) == n
    for b in grouped:  # each example keeps its own features and label
        for row, index in enumerate(b["example_index"].numpy()):
            assert int(tf.reduce_sum(b["input_mask"][row])) == lengths[index]
            assert int(b["label_ids"][row]) == index % 2
    # Grouped: the window's examples sorted by length and cut into batches (each batch a
    # run of the sorted lengths), each batch as wide as its longest example rounded up to
    # PAD_MULTIPLE. (How much padding that saves depends on the shuffle, so on the global
    # seed other tests may have set: 0.77-0.81 of the plain batches' for seeds 0-7.)
    runs = sorted(sorted(lengths[i] for i in b["example_index"].numpy()) for b in grouped)
    assert [length for run in runs for length in run] == sorted(
        lengths[i] for b in grouped for i in b["example_index"].numpy())
    assert [b["input_mask"].shape[1] for b in grouped] == [
        min(MAX_LEN, -(-max(lengths[i] for i in b["example_index"].numpy()) // PAD_MULTIPLE)
            * PAD_MULTIPLE) for b in grouped]
    padded = lambda batches: sum(int(tf.size(b["input_mask"])) for b in batches)  # noqa
    assert padded(grouped) < padded(plain)
    # Deterministic (a resumed run skips exactly the batches already trained on).
    again = first_window(True)
    for a, b in zip(grouped, again):
        np.testing.assert_array_equal(a["example_index"], b["example_index"])
    # Not simply sorted: the batch order is shuffled within the window.
    widths = [int(b["input_ids"].shape[1]) for b in grouped]
    assert widths != sorted(widths)


def test_the_served_classifier_answers_as_the_model_on_full_width_inputs(write_vocab,
                                                                        tmp_path):
    from tasks.classification.data import InputExample
    from tasks.classification.export import export_classification

    words = ["the", "movie", "was", "good", "bad", "plot", "a", "film", "very", "long"]
    vocab = write_vocab(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words)
    config = BertConfig(**dict(TINY_CONFIG, max_position_embeddings=64))
    model = BertClassifier(config, 2)
    width = 48
    export_classification(model, str(tmp_path / "export"), vocab, True, width, ["n", "p"],
                          pair=False)
    texts = ["the movie was good", "bad plot", "a very " * 7 + "long film"]
    full = features.convert_examples([InputExample(str(i), t, None)
                                      for i, t in enumerate(texts)], vocab, True, width)
    assert full["input_ids"].shape == (3, width)
    want = tf.nn.softmax(model({k: full[k] for k in ("input_ids", "input_mask",
                                                     "segment_ids")})["logits"]).numpy()
    served = tf.saved_model.load(str(tmp_path / "export"))
    for batch in ([0, 1, 2], [0], [1], [2, 0]):  # 16, 8, 8 and 24 positions run
        got = served.signatures["serving_default"](
            text_a=tf.constant([texts[i] for i in batch]))["probabilities"].numpy()
        np.testing.assert_allclose(got, want[batch], atol=1e-6)
    ids = {k: tf.constant(full[k]) for k in ("input_ids", "input_mask", "segment_ids")}
    got = served.signatures["serving_ids"](**ids)["probabilities"].numpy()
    np.testing.assert_allclose(got, want, atol=1e-6)
    # Inputs of different shapes are still refused, not cut to one shape.
    bad = dict(ids, input_mask=ids["input_mask"][:, :20])
    try:
        served.signatures["serving_ids"](**bad)
    except tf.errors.InvalidArgumentError as e:
        assert "input_mask must have the shape of input_ids" in str(e)
    else:
        raise AssertionError("mismatched shapes were accepted")


def test_a_mask_with_gaps_keeps_every_used_position():
    batch = _batch([3, 2])
    batch["input_mask"][1, 20] = 1  # a position past the first 16 in use
    cut = trim_padding({k: tf.constant(v) for k, v in batch.items()})
    assert cut["input_mask"].shape == (2, 32)


def test_tagging_batches_are_cut_and_the_weighted_token_loss_is_unchanged():
    from modeling import BertTokenClassifier
    from training.task import array_dataset_fn

    rng = np.random.default_rng(3)
    lengths = [4, 9, 3, 7, 5, 6, 2, 8]
    arrays = _batch(lengths)
    arrays.pop("label_ids")
    arrays["label_ids"] = rng.integers(0, 5, arrays["input_ids"].shape).astype(np.int32)
    arrays["label_weights"] = arrays["input_mask"].astype(np.float32)
    arrays["label_weights"][:, 0] = 0.0  # [CLS] is not labelled
    model = BertTokenClassifier(BertConfig(**TINY_CONFIG), 5)

    def weighted_loss(batch):
        logits = model({k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")},
                       training=False)["logits"]
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(batch["label_ids"], logits)
        return float(tf.reduce_sum(xent * batch["label_weights"]))

    context = tf.distribute.InputContext()
    full = next(iter(array_dataset_fn(arrays, 4, seed=1)(context, 0)))
    cut = next(iter(array_dataset_fn(arrays, 4, seed=1, pad_to_longest=True)(context, 0)))
    assert full["input_ids"].shape == (4, MAX_LEN) and cut["input_ids"].shape == (4, 16)
    assert cut["label_ids"].shape == cut["label_weights"].shape == (4, 16)
    np.testing.assert_array_equal(cut["label_ids"], full["label_ids"][:, :16])
    np.testing.assert_allclose(weighted_loss(cut), weighted_loss(full), rtol=1e-5)


def test_prediction_over_batches_of_several_lengths_traces_once(tmp_path):
    """Evaluation batches cut to their own longest come in several widths (32, 16, 32
    here); one trace serves them all, and its logits are the model's on each batch."""
    from training import loop
    path = _feature_file(str(tmp_path / "dev.tf_record"), [3, 5, 20, 2, 7, 9, 30, 4, 6])
    model = BertClassifier(BertConfig(**TINY_CONFIG), 2)
    dataset = features.classifier_dataset(path, 3, MAX_LEN, False, is_training=False)
    got = loop.predict(model, dataset, ["logits"], skip_padding=True)["logits"]
    assert [f.experimental_get_tracing_count()
            for f in loop._PREDICT_STEPS[model].values()] == [1]
    want = np.concatenate([model({k: b[k] for k in ("input_ids", "input_mask", "segment_ids")},
                                 training=False)["logits"].numpy() for b in dataset])
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_length_batches_sort_rows_and_keep_the_configured_batch_positions():
    from training import loop
    lengths = np.array([3, 30, 5, 20, 2, 7, 9, 4, 6, 31, 1, 0])
    batches = loop.length_batches(lengths, positions=2 * MAX_LEN, width=MAX_LEN)
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(lengths)))
    flat = lengths[np.concatenate(batches)]
    assert flat.tolist() == sorted(lengths.tolist())  # shortest first
    for rows in batches:  # at most 2 rows x 32 positions, each row counted at 16 or 32
        longest = -(-max(int(lengths[rows].max()), 1) // PAD_MULTIPLE) * PAD_MULTIPLE
        assert len(rows) * longest <= 2 * MAX_LEN
    # Sorted: 0 1 2 3 | 4 5 6 7 (16 positions each: 4 a batch of 64) | 9 20 | 30 31
    # (32 each, 2 a batch).
    assert [lengths[rows].tolist() for rows in batches] == [
        [0, 1, 2, 3], [4, 5, 6, 7], [9, 20], [30, 31]]


def test_evaluation_batches_hold_the_configured_full_length_positions(monkeypatch):
    """A batch holds --eval_batch_size sequences at --max_seq_length (the original's memory
    for the flag), not at the arrays' own width (a classifier's file is cut to its longest
    row); on a CPU at least 4,096 positions, with a GPU exactly the configured ones."""
    from training import loop
    seen = []
    real = loop.length_batches
    monkeypatch.setattr(loop, "length_batches",
                        lambda lengths, positions, width: seen.append((positions, width))
                        or real(lengths, positions, width))
    model = BertClassifier(BertConfig(**TINY_CONFIG), 2)
    batch = _batch([3, 5, 20, 2])  # arrays MAX_LEN = 32 wide
    loop.predict_arrays(model, batch, ["logits"], 8, skip_padding=True, max_seq_length=512)
    loop.predict_arrays(model, batch, ["logits"], 100, skip_padding=True, max_seq_length=64)
    loop.predict_arrays(model, batch, ["logits"], 8, skip_padding=True)
    assert seen == [(8 * 512, MAX_LEN), (100 * 64, MAX_LEN), (4096, MAX_LEN)]
    monkeypatch.setattr(loop, "accelerators_present", lambda: True)
    assert loop.batch_positions(8, 128) == 1024
    assert loop.batch_positions(0, 128) == 128


def test_a_classifiers_evaluation_counts_its_batch_at_max_seq_length(tmp_path, monkeypatch,
                                                                    write_vocab):
    """A classifier's dev file is read cut to its longest row (16 here), once a run; its
    batches still hold --eval_batch_size sequences at --max_seq_length (32)."""
    from tasks.classification import ClassificationConfig, ClassificationTask
    from training import loop
    seen = []
    real = loop.length_batches
    monkeypatch.setattr(loop, "length_batches",
                        lambda lengths, positions, width: seen.append((positions, width))
                        or real(lengths, positions, width))
    monkeypatch.setattr(loop, "accelerators_present", lambda: True)  # no CPU floor
    path = _feature_file(str(tmp_path / "dev.tf_record"), [3, 5, 9, 2, 7])
    task = ClassificationTask(ClassificationConfig(
        task_name="SST-2", data_dir=str(tmp_path), vocab_file=write_vocab(["[PAD]", "[UNK]"]),
        bert_config_file="unused.json", max_seq_length=MAX_LEN, eval_batch_size=2))
    reads = []
    real_read = features.read_arrays
    monkeypatch.setattr(features, "read_arrays",
                        lambda *a, **k: reads.append(a[0]) or real_read(*a, **k))
    model = BertClassifier(BertConfig(**TINY_CONFIG), 2)
    probabilities, labels = task._outputs_and_labels(model, path, 2, keep=True)
    assert seen == [(2 * MAX_LEN, 16)]
    assert probabilities.shape == (5, 2) and labels.tolist() == [0, 1, 0, 1, 0]
    # A run evaluates at every checkpoint: the file is read once, the answers the same.
    again, labels_again = task._outputs_and_labels(model, path, 2, keep=True)
    assert reads == [path]
    np.testing.assert_array_equal(again, probabilities)
    assert labels_again.tolist() == labels.tolist()
    # A test set, predicted once, is not kept.
    test = _feature_file(str(tmp_path / "test.tf_record"), [4, 6])
    task._outputs_and_labels(model, test, 2)
    task._outputs_and_labels(model, test, 2)
    assert reads == [path, test, test]


def test_prediction_in_length_groups_answers_each_row_as_alone_at_full_width(tmp_path,
                                                                           monkeypatch):
    """The evaluation path (rows sorted by length, batches of similar lengths cut to their
    own longest, one trace, no tf.data pipeline to set up for each pass) against the model
    on each row alone at full width, for a classifier (one row of logits), a tagger
    (logits per position, padded back) and multiple-choice rows ([rows, choices, width])."""
    from modeling import BertTokenClassifier

    def no_pipeline(*args, **kwargs):
        raise AssertionError("predict_arrays built a tf.data generator dataset")
    monkeypatch.setattr(tf.data.Dataset, "from_generator", no_pipeline)
    from tasks.multiple_choice.model import BertMultipleChoice
    from training import loop
    monkeypatch.setattr(loop, "MIN_BATCH_POSITIONS_ON_CPU", 0)  # several batches
    inputs = ("input_ids", "input_mask", "segment_ids")
    batch = _batch([3, 30, 5, 20, 2, 7, 9, 4, 6, 31])

    def alone(model, arrays, name):
        return np.concatenate([model({k: arrays[k][i:i + 1] for k in inputs},
                                     training=False)[name].numpy()
                               for i in range(len(arrays["input_ids"]))])

    classifier = BertClassifier(BertConfig(**TINY_CONFIG), 3)
    got = loop.predict_arrays(classifier, batch, ["logits"], 2, skip_padding=True)
    assert [f.experimental_get_tracing_count()
            for f in loop._PREDICT_STEPS[classifier].values()] == [1]
    np.testing.assert_allclose(got["logits"], alone(classifier, batch, "logits"),
                               atol=1e-5)
    tagger = BertTokenClassifier(BertConfig(**TINY_CONFIG), 4)
    got = loop.predict_arrays(tagger, batch, ["logits"], 2, sequence_outputs=["logits"])
    want = alone(tagger, batch, "logits")
    assert got["logits"].shape == want.shape == (10, MAX_LEN, 4)
    real = batch["input_mask"].astype(bool)
    np.testing.assert_allclose(got["logits"][real], want[real], atol=1e-5)
    chooser = BertMultipleChoice(BertConfig(**TINY_CONFIG))
    rows = {k: np.stack([batch[k][0::2], batch[k][1::2]], axis=1) for k in inputs}
    got = loop.predict_arrays(chooser, rows, ["logits"], 2, skip_padding=True)
    np.testing.assert_allclose(got["logits"], alone(chooser, rows, "logits"), atol=1e-5)
