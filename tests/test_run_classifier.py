"""run_classifier.py end to end on a toy task in the official SST-2 layout, its metrics
against hand-computed values, the SavedModel reloaded in a fresh process with only
tensorflow + tensorflow_text, and the bad-input errors."""

import csv
import json
import os
import random
import signal
import sys
import time

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter  # LiteRT, as serving.load runs

from tasks.classification import metrics as m
from tests import warm_processes
from tests.toy_sentiment import sentence, write_model_files

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)


def test_metrics_against_hand_computed_values():
    predictions, labels = [1, 1, 0, 0, 1], [1, 0, 0, 1, 1]  # TP 2, FP 1, FN 1, TN 1
    assert m.accuracy(predictions, labels) == pytest.approx(0.6)
    assert m.f1(predictions, labels) == pytest.approx(2 / 3)
    assert m.matthews_corrcoef(predictions, labels) == pytest.approx(1 / 6)
    assert m.matthews_corrcoef([1, 1], [1, 1]) == 0.0  # undefined -> 0
    assert m.pearson([1, 2, 3], [1, 2, 4]) == pytest.approx(3 / np.sqrt(2 * 42 / 9))
    # Ties share the average rank: x ranks 1, 2.5, 2.5, 4.
    assert m.spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / np.sqrt(4.5 * 5))
    probabilities = np.array([[0.2, 0.8], [0.9, 0.1], [0.4, 0.6]])
    assert m.task_metrics("MRPC", probabilities, np.array([1, 1, 1])) == pytest.approx(
        {"accuracy": 2 / 3, "f1": 0.8, "acc_and_f1": (2 / 3 + 0.8) / 2,
         "majority_class_accuracy": 1.0, "majority_class_f1": 1.0,
         # no label 0 present or right: its recall and F1 0; label 1's F1 0.8
         "recall(0)": 0.0, "recall(1)": 2 / 3, "macro_f1": 0.4})
    # Always "1" on labels 1, 0, 1, 1: accuracy 3/4; precision 3/4, recall 1 -> F1 6/7.
    probabilities = np.array([[0.2, 0.8], [0.9, 0.1], [0.4, 0.6], [0.7, 0.3]])
    results = m.task_metrics("QQP", probabilities, np.array([1, 0, 1, 1]))
    assert results["majority_class_accuracy"] == pytest.approx(0.75)
    assert results["majority_class_f1"] == pytest.approx(6 / 7)
    assert set(m.task_metrics("CoLA", probabilities, np.array([1, 0, 0, 0]))) == {
        "accuracy", "matthews_corrcoef", "majority_class_accuracy", "recall(0)",
        "recall(1)", "macro_f1"}
    assert set(m.task_metrics("STS-B", np.array([1.0, 2.0, 3.0]),
                              np.array([1.0, 2.5, 2.9]))) == {"pearson", "spearman", "corr"}


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """A separable sentiment task in the SST-2 layout, a vocabulary and a tiny config."""
    folder = tmp_path_factory.mktemp("toy")
    rng = random.Random(0)
    write_model_files(folder)
    data = folder / "data"
    data.mkdir()
    for split, n in (("train", 320), ("dev", 80)):
        rows = ["sentence\tlabel"]
        for _ in range(n):
            label = int(rng.random() < 0.5)
            rows.append(f"{sentence(rng, label)}\t{label}")
        (data / f"{split}.tsv").write_text("\n".join(rows) + "\n")
    test = [sentence(rng, i % 2) for i in range(20)]
    (data / "test.tsv").write_text("index\tsentence\n" + "".join(
        f"{i}\t{s}\n" for i, s in enumerate(test)))
    return {"folder": folder, "data": data, "test": test}


def _command(toy, out, **overrides):
    flags = {"task_name": "SST-2", "data_dir": toy["data"],
             "vocab_file": toy["folder"] / "vocab.txt",
             "bert_config_file": toy["folder"] / "bert_config.json", "max_seq_length": 16,
             "train_batch_size": 16, "learning_rate": 1e-3, "num_train_epochs": 3,
             "output_dir": out, "save_checkpoints_steps": 30, "log_steps": 10}
    flags.update(overrides)
    argv = [sys.executable, os.path.join(ROOT, "run_classifier.py")]
    for name, value in flags.items():
        argv.append(f"--{name}" if value is True else f"--{name}={value}")
    return argv


def _run(argv, check=True):
    """`argv`: [python, ...] or a Python console script (saved_model_cli) and its words."""
    result = warm_processes.run(argv[1:] if argv[0] == sys.executable else argv, env=ENV,
                                timeout=600)
    if check and result.returncode != 0:
        raise AssertionError(result.stderr[-4000:])
    return result


RELOAD = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
model = tf.saved_model.load(sys.argv[1])
texts = json.loads(sys.argv[2])
text_out = model.signatures["serving_default"](text_a=tf.constant(texts))
ids = json.loads(sys.argv[3])
ids_out = model.signatures["serving_ids"](**{k: tf.constant(v, tf.int32) for k, v in ids.items()})
print(json.dumps({"text": text_out["probabilities"].numpy().tolist(),
                  "labels": [s.decode() for s in text_out["label"].numpy()],
                  "ids": ids_out["probabilities"].numpy().tolist()}))
"""


def test_fine_tune_evaluate_predict_export(toy, tmp_path):
    out, export = tmp_path / "out", tmp_path / "export"
    trained = _run(_command(toy, out, do_train=True, do_eval=True, do_predict=True,
                            export_dir=export, tflite_quantize=True))
    # No --init_checkpoint: said once, on the console, before training.
    assert trained.stderr.count("No --init_checkpoint: fine-tuning starts from random "
                                "weights") == 1, trained.stderr[-3000:]
    results = dict(line.split(" = ") for line in
                   (out / "eval_results.txt").read_text().splitlines())
    assert float(results["accuracy"]) >= 0.95, results
    assert results["eval_examples"] == "80" and results["global_step"] == "60"
    # int8 beside float32, compared on the dev set (80 sentences) after the export.
    check = json.loads((export / "int8_check.json").read_text())
    assert check["requests"] == 80 and check["answer"] == "label_id"
    assert check["agreement"] >= 0.9 and check["max_probability_difference"] < 0.5
    assert json.loads((export / "serving.json").read_text())["tflite_int8"] == \
        "model_int8.tflite"
    assert (out / "best" / "model.ckpt.index").exists()
    probabilities = np.loadtxt(out / "test_results.tsv")
    assert probabilities.shape == (20, 2)
    np.testing.assert_allclose(probabilities.sum(1), 1.0, atol=1e-5)
    submission = (out / "SST-2.tsv").read_text().splitlines()
    assert submission[0] == "index\tprediction" and len(submission) == 21
    # Most test predictions right (test sentence i is positive iff i is odd).
    assert np.mean(probabilities.argmax(1) == np.arange(20) % 2) >= 0.9
    # The same predictions for people: each example's id and text, the label, the
    # probabilities (test.tsv's index column is the id).
    with open(out / "test_predictions.tsv", encoding="utf-8") as f:
        table = list(csv.DictReader(f, delimiter="\t"))
    assert list(table[0]) == ["id", "text_a", "label", "p(0)", "p(1)"]
    assert [row["id"] for row in table] == [str(i) for i in range(20)]
    assert [row["text_a"] for row in table] == toy["test"]
    assert [row["label"] for row in table] == [["0", "1"][i] for i in probabilities.argmax(1)]
    np.testing.assert_allclose([[float(row["p(0)"]), float(row["p(1)"])] for row in table],
                               probabilities, atol=1e-6)

    # The export, in a fresh process with only tensorflow and tensorflow_text.
    from tasks.classification.data import InputExample
    from tasks.classification.features import convert_examples
    features = convert_examples([InputExample(str(i), s) for i, s in enumerate(toy["test"])],
                                str(toy["folder"] / "vocab.txt"), True, 16)
    reloaded = json.loads(_run([sys.executable, "-c", RELOAD, export,
                                json.dumps(toy["test"]),
                                json.dumps({k: v.tolist() for k, v in features.items()})]
                               ).stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(reloaded["text"], probabilities, atol=2e-5)
    np.testing.assert_allclose(reloaded["ids"], probabilities, atol=2e-5)
    assert reloaded["labels"] == [["0", "1"][i] for i in probabilities.argmax(1)]
    # The standalone exporter, from the final training checkpoint: the same model, with
    # the labels, layout, vocabulary and length the run recorded (no flags for them).
    recorded = json.loads((out / "export_settings.json").read_text())
    assert recorded["labels"] == ["0", "1"] and recorded["pair"] is False
    assert recorded["task_type"] == "classification" and recorded["max_seq_length"] == 16
    again = tmp_path / "export_again"
    _run([sys.executable, os.path.join(ROOT, "export_saved_model.py"),
          f"--bert_config_file={toy['folder'] / 'bert_config.json'}",
          f"--init_checkpoint={out / 'ckpt-60'}", f"--export_dir={again}", "--tflite"])
    served = json.loads((again / "serving.json").read_text())
    assert served["labels"] == ["0", "1"] and served["max_seq_length"] == 16
    reloaded = json.loads(_run([sys.executable, "-c", RELOAD, again, json.dumps(toy["test"]),
                                json.dumps({k: v.tolist() for k, v in features.items()})]
                               ).stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(reloaded["text"], probabilities, atol=2e-5)
    # ... and its TF Lite file, and a Hugging Face model from the same checkpoint.
    lite = Interpreter(model_path=str(again / "model.tflite")).get_signature_runner(
        "serving_ids")(**{k: v.astype(np.int32) for k, v in features.items()
                          if k in ("input_ids", "input_mask", "segment_ids")})
    np.testing.assert_allclose(lite["probabilities"], probabilities, atol=1e-4)
    hf_dir = tmp_path / "hf"
    _run([sys.executable, os.path.join(ROOT, "export_huggingface.py"),
          f"--bert_config_file={toy['folder'] / 'bert_config.json'}",
          f"--init_checkpoint={out / 'best' / 'model.ckpt'}", f"--output_dir={hf_dir}"])
    assert json.loads((hf_dir / "config.json").read_text())["id2label"] == \
        {"0": "0", "1": "1"}
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    hf = transformers.BertForSequenceClassification.from_pretrained(str(hf_dir)).eval()
    with torch.no_grad():
        logits = hf(input_ids=torch.tensor(features["input_ids"], dtype=torch.long),
                    attention_mask=torch.tensor(features["input_mask"], dtype=torch.long),
                    token_type_ids=torch.tensor(features["segment_ids"], dtype=torch.long)
                    ).logits
    np.testing.assert_allclose(torch.softmax(logits, -1).numpy(), probabilities, atol=1e-5)
    shown = _run([os.path.join(os.path.dirname(sys.executable), "saved_model_cli"), "show",
                  "--dir", export, "--all"]).stdout
    assert "signature_def['serving_default']" in shown
    assert "signature_def['serving_ids']" in shown and "input_ids" in shown


def test_bad_input_is_named(toy, tmp_path):
    too_long = _run(_command(toy, tmp_path, do_train=True, max_seq_length=100), check=False)
    assert too_long.returncode != 0 and "max_position_embeddings=64" in too_long.stderr
    unknown = _run(_command(toy, tmp_path, do_train=True, task_name="NOPE"), check=False)
    assert unknown.returncode != 0 and "--task_name='NOPE' is not one of" in unknown.stderr
    missing = _run(_command(toy, tmp_path, do_eval=True, data_dir=tmp_path), check=False)
    assert missing.returncode != 0 and "dev.tsv: file not found" in missing.stderr
    # A checkpoint of another config: one line on the console, every mismatching variable
    # named in the log.
    other = tmp_path / "other"
    other.mkdir()
    config = json.loads((toy["folder"] / "bert_config.json").read_text())
    config["hidden_size"] = 48
    (other / "bert_config.json").write_text(json.dumps(config))
    _run([sys.executable, "-c",
          "import sys; from modeling import *; c = BertConfig.from_json_file(sys.argv[1]);"
          "save_google_checkpoint(BertClassifier(c, 2), sys.argv[2])",
          other / "bert_config.json", other / "bert_model.ckpt"])
    wrong = _run(_command(toy, tmp_path / "w", do_train=True,
                          init_checkpoint=other / "bert_model.ckpt"), check=False)
    assert wrong.returncode != 0 and "does not fit this model" in wrong.stderr
    errors = [line for line in wrong.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "word_embeddings" not in wrong.stderr, wrong.stderr[-2000:]
    assert "the details and the full traceback are in" in wrong.stderr
    assert "bert/embeddings/word_embeddings" in (tmp_path / "w" / "log.txt").read_text()


def test_pair_export_matches_the_model_on_python_features(toy, tmp_path):
    import tensorflow as tf

    from modeling import BertClassifier, BertConfig
    from tasks.classification.data import InputExample
    from tasks.classification.export import export_classification
    from tasks.classification.features import convert_examples

    vocab = str(toy["folder"] / "vocab.txt")
    config = BertConfig.from_json_file(str(toy["folder"] / "bert_config.json"))
    model = BertClassifier(config, 3)
    export_classification(model, str(tmp_path / "pair"), vocab, True, 12,
                      ["contradiction", "entailment", "neutral"], pair=True)
    pairs = [("The movie was good", "A FILM was great and very nice really"),
             ("bad plot " * 10, "the acting"), ("a film", "")]
    features = convert_examples([InputExample(str(i), a, b) for i, (a, b) in
                                 enumerate(pairs)], vocab, True, 12)
    want = tf.nn.softmax(model(features)["logits"]).numpy()
    served = tf.saved_model.load(str(tmp_path / "pair")).signatures["serving_default"]
    got = served(text_a=tf.constant([a for a, _ in pairs]),
                 text_b=tf.constant([b for _, b in pairs]))
    np.testing.assert_allclose(got["probabilities"].numpy(), want, atol=1e-6)
    assert [s.decode() for s in got["label"].numpy()] == [
        ["contradiction", "entailment", "neutral"][i] for i in want.argmax(1)]


def test_length_bucketed_training_learns_the_task(toy, tmp_path):
    out = tmp_path / "bucketed"
    # Batches of one length break through later on this toy task (its one deciding word
    # sits anywhere): six epochs instead of three.
    _run(_command(toy, out, do_train=True, do_eval=True, bucket_by_length=True,
                  num_train_epochs=6, save_checkpoints_steps=60))
    results = dict(line.split(" = ") for line in
                   (out / "eval_results.txt").read_text().splitlines())
    assert float(results["accuracy"]) >= 0.95, results
    assert results["global_step"] == "120"
    flags = json.loads((out / "training_flags.json").read_text())
    assert flags["bucket_by_length"] is True  # a resumed run checks it did not change


def test_a_grid_in_one_command_resumes_and_predicts_from_the_best(toy, tmp_path):
    """Two learning rates: each combination in its own folder, one feature cache,
    grid_results.tsv, the best combination's best checkpoint as best/, and the predictions
    equal to those of best/ alone. A SIGTERM in the middle of the grid: the rerun does
    not train the finished combination again."""
    out = tmp_path / "grid"
    grid = dict(learning_rate="1e-3,3e-5", num_train_epochs=1, do_train=True,
                do_eval=True, do_predict=True, save_checkpoints_steps=10, log_steps=1)
    argv = [str(a) for a in _command(toy, out, **grid)]
    process = warm_processes.start(argv[1:], env=ENV)
    second = out / "lr=3e-05"
    deadline = time.time() + 300
    while not (second / "ckpt-10.index").exists():
        assert process.poll() is None and time.time() < deadline, process.communicate()[1]
        time.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 143, stderr[-3000:]
    # Both combinations started from random weights: said once, not once per run.
    assert stderr.count("No --init_checkpoint") == 1, stderr[-3000:]
    first_end = (out / "lr=0.001" / "metrics.jsonl").read_text().count('"end"')
    assert first_end == 1
    _run(argv)  # resumes: the first combination is not run again
    assert (out / "lr=0.001" / "metrics.jsonl").read_text().count('"end"') == 1
    rows = [line.split("\t") for line in (out / "grid_results.tsv").read_text().splitlines()]
    header, rows = rows[0], rows[1:]
    assert header[:4] == ["combination", "learning_rate", "steps", "best_step"]
    assert [r[0] for r in rows] == ["lr=0.001", "lr=3e-05"]
    assert all(r[2] == "20" for r in rows)  # 320 examples, batch 16, one epoch
    accuracy = [float(r[header.index("accuracy")]) for r in rows]
    best = rows[int(np.argmax(accuracy))]
    kept = dict(line.split(" = ") for line in
                (out / "best" / "best_results.txt").read_text().splitlines())
    assert kept["grid_combination"] == best[0] and kept["global_step"] == best[3]
    assert float(kept["accuracy"]) == max(accuracy)
    # One cache of features for all combinations, in the grid's folder.
    assert len([p for p in os.listdir(out) if p.startswith("train-")]) == 1
    assert not any(p.endswith(".tf_record") for sub in rows for p in os.listdir(out / sub[0]))
    # The grid's predictions are those of best/ alone.
    alone = tmp_path / "alone"
    _run(_command(toy, alone, do_predict=True,
                  init_checkpoint=out / "best" / "model.ckpt"))
    np.testing.assert_array_equal(np.loadtxt(out / "test_results.tsv"),
                                  np.loadtxt(alone / "test_results.tsv"))
    assert f"grid_combination = {best[0]}" in (out / "predictions_from.txt").read_text()
