"""Multi-label classification (`run_classifier.py --task_name=generic --multi_label`): the
figures against hand-computed values, the label lists read from JSON lines and TSV, a
toy task learned end to end with its predictions named by the data's ids, and the export
answered alike by its SavedModel and `serving.load`."""

import csv
import json
import os
import random

import numpy as np
import pytest

from tasks.classification import data as cd
from tasks.classification import metrics
from tests import warm_processes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
TOPICS = {"animal": ["cat", "dog", "horse"], "color": ["red", "blue", "green"],
          "food": ["bread", "apple", "soup"]}
FILLER = ["the", "a", "was", "and", "near", "very", "old", "small", "we", "saw"]


def test_figures_against_hand_computed_values():
    probabilities = np.array([[0.9, 0.2, 0.6], [0.1, 0.4, 0.3], [0.7, 0.8, 0.1]])
    labels = np.array([[1, 0, 1], [0, 0, 0], [1, 0, 0]])
    # Predicted at 0.5: [1,0,1], [0,0,0], [1,1,0]. TP 3 (label 0 twice, label 2 once),
    # FP 1 (label 1), FN 0: micro F1 6/7; per label F1 1, 0, 1: macro 2/3; rows 1 and 2
    # exactly right: 2/3; no label at all is right for row 2 only.
    assert metrics.multi_label_metrics(probabilities, labels) == pytest.approx(
        {"micro_f1": 6 / 7, "macro_f1": 2 / 3, "exact_match": 2 / 3,
         "empty_set_exact_match": 1 / 3})
    # At 0.75 only 0.9 and 0.8 are predicted: TP 1, FP 1, FN 2 -> micro 2/5.
    assert metrics.multi_label_metrics(probabilities, labels, 0.75)["micro_f1"] == \
        pytest.approx(2 / 5)
    assert metrics.main_metric("generic", multi_label=True) == "micro_f1"


def test_label_lists_from_json_lines_and_separated_cells(tmp_path):
    folder = tmp_path / "jl"
    folder.mkdir()
    (folder / "train.jsonl").write_text(
        json.dumps({"text": "a", "labels": ["x", "y"]}) + "\n" +
        json.dumps({"text": "b", "labels": []}) + "\n" +
        json.dumps({"text": "c", "labels": ["y", "y"]}) + "\n")
    p = cd.get_processor("generic", str(folder), text_a_column="text", label_column="labels",
                         multi_label=True)
    assert p.get_labels() == ["x", "y"]
    assert [e.label for e in p.get_examples("train")] == [("x", "y"), (), ("y",)]
    (folder / "dev.jsonl").write_text(json.dumps({"text": "a", "labels": "x"}) + "\n")
    with pytest.raises(cd.DataError, match=r"dev.jsonl:1: label 'x' is not a list"):
        p.get_examples("dev")
    (folder / "dev.jsonl").write_text(json.dumps({"text": "a", "labels": ["z"]}) + "\n")
    with pytest.raises(cd.DataError, match=r"dev.jsonl:1: label 'z' is not one of"):
        p.get_examples("dev")
    folder = tmp_path / "tsv"
    folder.mkdir()
    (folder / "train.tsv").write_text("text\tlabels\na\tx|y\nb\t\nc\t y |\n")
    p = cd.get_processor("generic", str(folder), text_a_column="text", label_column="labels",
                         multi_label=True, label_separator="|")
    assert [e.label for e in p.get_examples("train")] == [("x", "y"), (), ("y",)]


def test_multi_label_flags_are_checked_before_anything_runs():
    from tasks.classification.config import ClassificationConfig
    common = dict(data_dir="d", vocab_file="v", bert_config_file="c")
    with pytest.raises(ValueError, match="--multi_label is for your own files"):
        ClassificationConfig(task_name="SST-2", multi_label=True, **common)
    with pytest.raises(ValueError, match="not both"):
        ClassificationConfig(task_name="generic", multi_label=True, regression=True, **common)
    with pytest.raises(ValueError, match="--multi_label_threshold=1.5"):
        ClassificationConfig(task_name="generic", multi_label=True,
                             multi_label_threshold=1.5, **common)


def _sentence(rng):
    topics = sorted(t for t in TOPICS if rng.random() < 0.45)
    words = [rng.choice(FILLER) for _ in range(rng.randint(3, 7))]
    for topic in topics:
        words.insert(rng.randint(0, len(words)), rng.choice(TOPICS[topic]))
    return " ".join(words), topics


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("multi_label")
    rng = random.Random(0)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + FILLER + [
        w for words in TOPICS.values() for w in words]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    data = folder / "data"
    data.mkdir()
    for split, n in (("train", 480), ("dev", 96)):
        with open(data / f"{split}.jsonl", "w") as f:
            for i in range(n):
                text, topics = _sentence(rng)
                f.write(json.dumps({"id": f"{split}{i}", "text": text, "topics": topics}) +
                        "\n")
    test = [_sentence(rng) for _ in range(12)]
    with open(data / "test.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "text"])
        writer.writerows([f"t-{i}", text] for i, (text, _) in enumerate(test))
    config = {"vocab_size": len(vocab), "hidden_size": 32, "num_hidden_layers": 2,
              "num_attention_heads": 4, "intermediate_size": 64,
              "max_position_embeddings": 32, "type_vocab_size": 2}
    (folder / "bert_config.json").write_text(json.dumps(config))
    return {"folder": folder, "data": data, "test": test}


def test_a_toy_task_is_learned_predicted_and_served(toy, tmp_path):
    folder, out, export = toy["folder"], tmp_path / "out", tmp_path / "export"
    done = warm_processes.run(
        [os.path.join(ROOT, "run_classifier.py"), "--task_name=generic", "--multi_label",
         f"--data_dir={toy['data']}", "--text_a_column=text", "--label_column=topics",
         f"--vocab_file={folder / 'vocab.txt'}",
         f"--bert_config_file={folder / 'bert_config.json'}", "--max_seq_length=32",
         "--do_train", "--do_eval", "--do_predict", "--train_batch_size=16",
         "--learning_rate=1e-3", "--num_train_epochs=6", f"--output_dir={out}",
         f"--export_dir={export}", "--save_checkpoints_steps=60"], env=ENV, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    results = dict(line.split(" = ") for line in
                   (out / "eval_results.txt").read_text().splitlines())
    assert float(results["micro_f1"]) > 0.9 and float(results["exact_match"]) > 0.7
    assert {"macro_f1", "empty_set_exact_match"} <= set(results)
    assert "micro_f1" in (out / "best" / "best_results.txt").read_text()
    rows = list(csv.reader(open(out / "test_predictions.tsv"), delimiter="\t"))
    assert rows[0] == ["id", "text_a", "labels", "p(animal)", "p(color)", "p(food)"]
    assert [r[0] for r in rows[1:]] == [f"t-{i}" for i in range(12)]  # the file's own ids
    for row in rows[1:]:
        chosen = {label for label, p in zip(("animal", "color", "food"), row[3:])
                  if float(p) >= 0.5}
        assert set(filter(None, row[2].split(","))) == chosen
    right = sum(set(filter(None, r[2].split(","))) == set(topics)
                for r, (_, topics) in zip(rows[1:], toy["test"]))
    assert right >= 9
    # The export: the SavedModel's raw-text signature and serving.load answer alike.
    import serving
    texts = [text for text, _ in toy["test"]]
    fast = serving.load(str(export))(texts)
    assert set(fast) == {"probabilities", "logits", "predicted", "labels"}
    np.testing.assert_allclose(fast["probabilities"],
                               np.array([[float(p) for p in r[3:]] for r in rows[1:]]),
                               atol=1e-4)
    from tests.serving_checks import assert_same, text_signature
    assert_same(fast, text_signature(str(export))(texts))  # the raw-text signature's
    assert_same(fast, serving.load(str(export), backend="saved_model")(texts))
    for row, predicted in zip(fast["labels"], rows[1:]):
        assert [label.decode() for label in row if label] == \
            list(filter(None, predicted[2].split(",")))
