"""run_classifier.py --class_weights: the flag read and refused as it should be, the
`balanced` weights counted by hand, the weighted losses against hand computations and
Keras's and PyTorch's own weighted losses, and a run that trains with them, records them
and reports each label's recall."""

import json
import math
import os
import random
import types

import numpy as np
import pytest

from tasks.classification import class_weights as cw
from tasks.classification import metrics
from tests import warm_processes
from tests.toy_sentiment import sentence, write_model_files

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)


def test_the_flag_is_read_and_refused_in_one_line():
    assert cw.parse(None) is None and cw.parse("") is None
    assert cw.parse("balanced") == cw.parse(" Balanced ") == "balanced"
    assert cw.parse("1,4.5") == (1.0, 4.5) and cw.parse([2, 0.5]) == (2.0, 0.5)
    for bad, said in (("0,1", "0 is not a positive number"), ("1,-2", "-2 is not"),
                      ("1,nan", "nan is not"), ("a,b", "must be 'balanced' or one number"),
                      ("1,inf", "inf is not")):
        with pytest.raises(ValueError, match=said):
            cw.parse(bad)
    from tasks.classification.config import ClassificationConfig
    common = dict(data_dir="d", vocab_file="v", bert_config_file="c")
    with pytest.raises(ValueError, match="--class_weights='1,0'"):
        ClassificationConfig(task_name="SST-2", class_weights="1,0", **common)
    with pytest.raises(ValueError, match="a score has no classes"):
        ClassificationConfig(task_name="generic", regression=True, class_weights="balanced",
                             **common)


def test_balanced_weights_counted_by_hand():
    # 6 negatives and 2 positives: 8 / (2 x 6) and 8 / (2 x 2).
    weights, record = cw.resolve("balanced", ["neg", "pos"], ["neg"] * 6 + ["pos"] * 2,
                                 False, "train.tsv")
    np.testing.assert_allclose(weights, [2 / 3, 2.0], rtol=1e-6)
    assert record["train_counts"] == [6, 2] and record["train_examples"] == 8
    # ... which average 1 over the training examples: (6 x 2/3 + 2 x 2) / 8.
    assert (6 * weights[0] + 2 * weights[1]) / 8 == pytest.approx(1.0)
    # Three labels, 5/3/2 of 10: 10/15, 10/9, 10/6.
    weights, _ = cw.resolve("balanced", ["a", "b", "c"], list("aaaaabbbcc"), False, "t")
    np.testing.assert_allclose(weights, [2 / 3, 10 / 9, 5 / 3], rtol=1e-6)
    # Multi-label: a on 3 of 5 examples (2 negatives), b on 2 (3 negatives).
    weights, record = cw.resolve("balanced", ["a", "b"],
                                 [("a",), ("a", "b"), (), ("b",), ("a",)], True, "t")
    np.testing.assert_allclose(weights, [2 / 3, 3 / 2], rtol=1e-6)
    assert record["kind"].startswith("positive weight")
    # Given by hand: taken as they are, in the label order.
    weights, record = cw.resolve((1.0, 4.5), ["neg", "pos"], ["neg", "pos"], False, "t")
    assert weights.tolist() == [1.0, 4.5] and record["class_weights"] == [1.0, 4.5]


def test_weights_that_cannot_be_used_are_refused_naming_the_fix():
    with pytest.raises(ValueError, match=r"3 weight\(s\) for 2 labels.*order: neg, pos"):
        cw.resolve((1.0, 2.0, 3.0), ["neg", "pos"], ["neg", "pos"], False, "train.tsv")
    with pytest.raises(ValueError, match="no example of train.tsv has the label 'pos'"):
        cw.resolve("balanced", ["neg", "pos"], ["neg", "neg"], False, "train.tsv")
    with pytest.raises(ValueError, match="every example of t has the label 'a'"):
        cw.resolve("balanced", ["a", "b"], [("a",), ("a", "b")], True, "t")


def _losses(logits, labels, weights, multi_label=False):
    """`ClassificationTask.example_losses` on a stand-in task holding only what it reads."""
    import tensorflow as tf

    from tasks.classification.task import ClassificationTask
    task = types.SimpleNamespace(regression=False, multi_label=multi_label,
                                 class_weights=None if weights is None
                                 else np.asarray(weights, np.float32))
    return ClassificationTask.example_losses(task, tf.constant(logits, tf.float32),
                                             tf.constant(labels)).numpy()


def test_the_weighted_cross_entropy_against_a_hand_computation_and_keras():
    import keras
    ln3 = math.log(3)
    logits = np.array([[0, ln3], [ln3, 0], [0, 0]], np.float32)  # p(0) = 1/4, 3/4, 1/2
    labels = np.array([0, 0, 1])
    # By hand: -log p(label) times the label's weight (2 for label 0, 0.5 for label 1).
    want = [2 * math.log(4), 2 * math.log(4 / 3), 0.5 * math.log(2)]
    np.testing.assert_allclose(_losses(logits, labels, [2.0, 0.5]), want, rtol=1e-6)
    np.testing.assert_allclose(_losses(logits, labels, None),
                               [math.log(4), math.log(4 / 3), math.log(2)], rtol=1e-6)
    # The run's loss (their sum over the examples) is Keras's with fit(class_weight=).
    keras_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
        labels, logits, sample_weight=np.array([2.0, 0.5])[labels])
    assert float(keras_loss) == pytest.approx(sum(want) / 3, rel=1e-6)


def test_the_multi_label_positive_weights_against_a_hand_computation_and_pytorch():
    ln3 = math.log(3)
    logits = np.array([[0, ln3], [ln3, 0]], np.float32)
    labels = np.array([[1, 0], [1, 1]], np.float32)
    # By hand, positive weights 3 and 2: a positive label costs w log(1 + e^-x), a
    # negative one log(1 + e^x). Example 1: 3 log 2 and log 4; example 2: 3 log(4/3)
    # and 2 log 2; each example the mean over its labels.
    want = [(3 * math.log(2) + math.log(4)) / 2,
            (3 * math.log(4 / 3) + 2 * math.log(2)) / 2]
    np.testing.assert_allclose(_losses(logits, labels, [3.0, 2.0], True), want, rtol=1e-6)
    torch = pytest.importorskip("torch")
    peer = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor([3.0, 2.0]))(
        torch.tensor(logits), torch.tensor(labels))
    assert float(peer) == pytest.approx(np.mean(want), rel=1e-6)


def test_recall_per_label_and_macro_f1_by_hand():
    # Predicted 0 0 0 1 1 2 for labels 0 0 1 1 2 2: recalls 1, 1/2, 1/2; F1s: label 0
    # 2x2/(3+2) = 4/5, label 1 2x1/(2+2) = 1/2, label 2 2x1/(1+2) = 2/3.
    probabilities = np.eye(3)[[0, 0, 0, 1, 1, 2]]
    results = metrics.task_metrics("generic", probabilities, np.array([0, 0, 1, 1, 2, 2]),
                                   ["a", "b", "c"])
    assert results["recall(a)"] == 1.0 and results["recall(b)"] == 0.5 == \
        results["recall(c)"]
    assert results["macro_f1"] == pytest.approx((4 / 5 + 1 / 2 + 2 / 3) / 3)


@pytest.fixture(scope="module")
def imbalanced(tmp_path_factory):
    """Your own reviews, one positive in ten, in a TSV with a header; a tiny config."""
    folder = tmp_path_factory.mktemp("imbalanced")
    rng = random.Random(0)
    data = folder / "data"
    data.mkdir()
    for split, n, share in (("train", 160, 0.1), ("dev", 40, 0.5)):
        rows = ["review\tsentiment"]
        for i in range(n):
            positive = (i % 10 == 3) if split == "train" else rng.random() < share
            rows.append(f"{sentence(rng, positive)}\t{'positive' if positive else 'negative'}")
        (data / f"{split}.tsv").write_text("\n".join(rows) + "\n")
    write_model_files(folder)
    return {"folder": folder, "data": data}


def _classifier(toy, out, **flags):
    argv = ["run_classifier.py", "--task_name=generic", f"--data_dir={toy['data']}",
            "--text_a_column=review", "--label_column=sentiment",
            f"--vocab_file={toy['folder'] / 'vocab.txt'}",
            f"--bert_config_file={toy['folder'] / 'bert_config.json'}",
            "--max_seq_length=16", "--train_batch_size=16", "--learning_rate=1e-3",
            "--num_train_epochs=1", "--log_steps=1", f"--output_dir={out}", "--do_train"]
    argv += [f"--{k}" if v is True else f"--{k}={v}" for k, v in flags.items()]
    return warm_processes.run(argv, env=ENV, timeout=600)


def _first_loss(out):
    with open(out / "metrics.jsonl") as f:
        return next(json.loads(line)["loss"] for line in f if '"train"' in line)


def test_a_run_trains_with_the_weights_records_them_and_reports_recall(imbalanced, tmp_path):
    run = _classifier(imbalanced, tmp_path / "balanced", class_weights="balanced",
                      do_eval=True)
    assert run.returncode == 0, run.stderr[-3000:]
    record = json.loads((tmp_path / "balanced" / "class_weights.json").read_text())
    # 144 negative and 16 positive reviews (every tenth): 160/288 and 160/32.
    assert record["labels"] == ["negative", "positive"]
    assert record["train_counts"] == [144, 16]
    np.testing.assert_allclose(record["weights"], [160 / 288, 5.0], rtol=1e-9)
    flags = json.loads((tmp_path / "balanced" / "training_flags.json").read_text())
    assert flags["class_weights"] == "balanced"  # a resumed run checks it did not change
    results = dict(line.split(" = ") for line in
                   (tmp_path / "balanced" / "eval_results.txt").read_text().splitlines())
    assert {"recall(negative)", "recall(positive)", "macro_f1"} <= set(results)
    # The weights reach the run's loss: every weight doubled doubles the first step's
    # loss (same seed, same batch, the weights before any update).
    plain = _classifier(imbalanced, tmp_path / "plain")
    doubled = _classifier(imbalanced, tmp_path / "doubled", class_weights="2,2")
    assert plain.returncode == 0 and doubled.returncode == 0, doubled.stderr[-3000:]
    assert not (tmp_path / "plain" / "class_weights.json").exists()
    assert _first_loss(tmp_path / "doubled") == pytest.approx(
        2 * _first_loss(tmp_path / "plain"), rel=1e-5)


def test_weights_that_do_not_fit_the_run_are_one_line_before_training(imbalanced,
                                                                      tmp_path):
    for flags, said in (({"class_weights": "1,2,3"},
                         "--class_weights: 3 weight(s) for 2 labels; give one per label, "
                         "in the run's label order: negative, positive."),
                        ({"class_weights": "1,0"}, "0 is not a positive number"),
                        ({"class_weights": "balanced", "regression": True},
                         "a score has no classes")):
        run = _classifier(imbalanced, tmp_path / "out", **flags)
        errors = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
        assert run.returncode != 0 and len(errors) == 1 and said in errors[0], \
            run.stderr[-2000:]
        # before any work: no features converted, no checkpoint
        assert not list(tmp_path.glob("out/*.tf_record")), list(tmp_path.glob("out/*"))
        assert not (tmp_path / "out" / "ckpt-1.index").exists()
