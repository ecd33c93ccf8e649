"""training.runner driven from Python (no absl flags): a tagging run with evaluation keeps
its best checkpoint, which re-scores to the recorded figure when loaded afresh; a rerun
resumes; the old `--task_type` name still exports; configs and task names."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.test_ner import write_toy_task

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def ner_data(tmp_path_factory):
    return write_toy_task(tmp_path_factory.mktemp("runner"),
                          (("train.txt", 160), ("valid.txt", 40), ("test.txt", 20)), seed=1)


def _results(path):
    return dict(line.split(" = ", 1) for line in path.read_text().splitlines())


def _tensorboard_scalars(folder):
    """{tag: [(step, value)]} of the summary events in `folder`, read with TensorFlow's
    own event reader."""
    import tensorflow as tf
    scalars = {}
    for name in sorted(os.listdir(folder)):
        for event in tf.compat.v1.train.summary_iterator(str(folder / name)):
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append(
                    (event.step, float(tf.make_ndarray(value.tensor))))
    return scalars


def test_tagging_from_python_keeps_the_best_checkpoint_and_resumes(ner_data, tmp_path,
                                                                  caplog, monkeypatch):
    import logging

    from absl import flags

    from modeling import BertConfig, load_checkpoint
    from tasks.tagging import TaggingConfig, TaggingTask
    from training import runner
    from training.config import TrainerConfig
    from training.runner import EVALUATED

    config = TaggingConfig(data_dir=str(ner_data / "data"),
                           vocab_file=str(ner_data / "vocab.txt"),
                           bert_config_file=str(ner_data / "bert_config.json"),
                           max_seq_length=16, num_train_epochs=3)
    out = tmp_path / "out"
    trainer = TrainerConfig(output_dir=str(out), train_batch_size=16, learning_rate=2e-3,
                            save_checkpoints_steps=10, log_steps=0)
    caplog.set_level(logging.INFO, logger="absl")  # whatever verbosity a test left
    converted = []  # the sentence lists made into features
    real_features = TaggingTask._features
    monkeypatch.setattr(TaggingTask, "_features", lambda self, sentences: converted.append(
        sentences) or real_features(self, sentences))
    task = TaggingTask(config)
    result = runner.run(task, trainer, do_train=True, do_eval=True, do_predict=True)
    assert not flags.FLAGS.is_parsed()  # nothing read the command line
    # Each evaluation says how long its dev pass took (EVALUATED reads it back).
    evaluations = [r.getMessage() for r in caplog.records if ": dev f1 = " in r.getMessage()]
    assert [m.split(":")[0] for m in evaluations] == ["Step 10", "Step 20", "Step 30"]
    # Three evaluations, the dev sentences made into features once.
    assert sum(s is task.dev[1] for s in converted) == 1
    assert sum(s is task.test[1] for s in converted) == 1
    assert all(float(EVALUATED.search(m).group(1)) >= 0 for m in evaluations)
    # 160 sentences, batch 16, 3 epochs: 30 steps; evaluated at 10, 20 and 30.
    final = _results(out / "eval_results.txt")
    assert float(final["f1"]) == pytest.approx(result.eval_results["f1"])
    assert result.predict_results is not None and (out / "test_predictions.txt").exists()
    # Training's tags, "O" first (the toy's cities are one word: no I-LOC).
    assert (out / "label_list.txt").read_text().split() == ["O", "B-LOC", "B-PER", "I-PER"]
    best = _results(out / "best" / "best_results.txt")
    assert float(best["f1"]) >= float(final["f1"])
    assert best["global_step"] in ("10", "20", "30")
    # The kept checkpoint, loaded into a fresh model, scores what best_results.txt says,
    # and the run's predictions are that model's (best weights by default).
    fresh_task = TaggingTask(config)
    fresh_task.prepare(str(tmp_path / "fresh"), do_eval=True, do_predict=True)
    model = fresh_task.build_model(BertConfig.from_json_file(config.bert_config_file))
    load_checkpoint(model, str(out / "best" / "model.ckpt"), strict=True)
    assert fresh_task.evaluate(model)["f1"] == pytest.approx(float(best["f1"]))
    files, _ = fresh_task.predict(model)
    assert (out / "test_predictions.txt").read_text() == files["test_predictions.txt"]
    source = _results(out / "predictions_from.txt")
    assert source["checkpoint"] == str(out / "best" / "model.ckpt")
    assert source["global_step"] == best["global_step"]
    assert float(source["f1"]) == pytest.approx(float(best["f1"]))
    # metrics.jsonl: one evaluation per checkpoint, then the end with the final figures.
    from training import metrics_log
    events = metrics_log.read(str(out / "metrics.jsonl"))
    assert [(e["event"], e["step"]) for e in events] == [
        ("train", 10), ("evaluation", 10), ("train", 20), ("evaluation", 20),
        ("train", 30), ("evaluation", 30), ("end", 30)]
    train = [e for e in events if e["event"] == "train"]
    assert all(e["total_steps"] == 30 and e["loss"] > 0 for e in train)
    assert train[0]["eta_seconds"] > 0 and train[-1]["eta_seconds"] == 0
    evaluations = [e for e in events if e["event"] == "evaluation"]
    assert max(e["f1"] for e in evaluations) == pytest.approx(float(best["f1"]))
    # TensorBoard: the dev metrics in out/eval, beside training's scalars in out/train.
    scalars = _tensorboard_scalars(out / "eval")
    assert sorted(scalars["f1"]) == [(e["step"], pytest.approx(e["f1"])) for e in evaluations]
    assert {"precision", "recall"} <= set(scalars) and "global_step" not in scalars
    assert events[-1]["eval_results"]["f1"] == pytest.approx(result.eval_results["f1"])
    assert events[-1]["weights"]["global_step"] == int(best["global_step"])
    # The record beside the checkpoints holds the configs' recorded fields.
    recorded = json.loads((out / "training_flags.json").read_text())
    assert recorded["num_train_epochs"] == 3 and recorded["data_dir"] == config.data_dir
    assert "output_dir" not in recorded
    # A rerun of the finished run trains nothing and evaluates the same weights.
    again = runner.run(TaggingTask(config), trainer, do_train=True, do_eval=True)
    assert again.train_logs == {}
    assert again.eval_results["f1"] == pytest.approx(result.eval_results["f1"])

    # The old --task_type name of the exporter still works (tagger -> tagging), and the
    # export answers as the checkpoint does.
    export = tmp_path / "export"
    subprocess.run([sys.executable, os.path.join(ROOT, "export_saved_model.py"),
                    "--task_type=tagger", f"--bert_config_file={config.bert_config_file}",
                    f"--init_checkpoint={out / 'best' / 'model.ckpt'}",
                    f"--vocab_file={config.vocab_file}", "--nodo_lower_case",
                    "--max_seq_length=16", f"--labels_file={out / 'label_list.txt'}",
                    f"--export_dir={export}"], check=True, capture_output=True,
                   env=dict(os.environ, PYTHONPATH=ROOT))
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the export's raw-text signature's ops)
    ids = np.array([[2, 5, 9, 3, 0, 0]], np.int32)
    inputs = {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32),
              "segment_ids": np.zeros_like(ids)}
    served = tf.saved_model.load(str(export)).signatures["serving_ids"](
        **{k: tf.constant(v) for k, v in inputs.items()})
    expected = tf.nn.softmax(model(inputs)["logits"], -1).numpy()
    real = inputs["input_mask"].astype(bool)  # the export skips the padding
    np.testing.assert_allclose(served["probabilities"].numpy()[real], expected[real],
                               atol=1e-5)

    # The same checkpoint to Hugging Face (the old task name works there too): a
    # BertForTokenClassification with the run's labels and the same logits.
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    subprocess.run([sys.executable, os.path.join(ROOT, "export_huggingface.py"), "--task_type=ner",
                    f"--bert_config_file={config.bert_config_file}",
                    f"--init_checkpoint={out / 'best' / 'model.ckpt'}",
                    f"--vocab_file={config.vocab_file}", "--nodo_lower_case",
                    f"--labels_file={out / 'label_list.txt'}", f"--output_dir={tmp_path / 'hf'}"],
                   check=True, capture_output=True, cwd=ROOT, env=dict(os.environ,
                                                                      PYTHONPATH=ROOT))
    hf = transformers.BertForTokenClassification.from_pretrained(str(tmp_path / "hf")).eval()
    assert hf.config.id2label == dict(enumerate(["O", "B-LOC", "B-PER", "I-PER"]))
    with torch.no_grad():
        logits = hf(input_ids=torch.tensor(ids, dtype=torch.long),
                    attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long)).logits
    mask = inputs["input_mask"][..., None]
    assert float(np.max(np.abs((logits.numpy() - model(inputs)["logits"].numpy()) * mask))) \
        <= 1e-5


def test_task_names_and_aliases():
    from tasks import registry
    found = registry.load_all()  # every folder of tasks/, found without a list
    assert set(found) == {"pretraining", "classification", "squad", "tagging",
                          "multiple_choice", "masked_lm", "sentence_embedding"}
    assert [registry.canonical_name(n) for n in ("classifier", "span", "tagger", "ner",
                                                 "SQuAD", "classification", "SWAG",
                                                 "bi_encoder")] == [
        "classification", "squad", "tagging", "tagging", "squad", "classification",
        "multiple_choice", "sentence_embedding"]
    assert all(registry.get(name).task_class.name == name for name in found
               if registry.get(name).task_class is not None)
    assert registry.canonical_name("fill_mask") == "masked_lm"  # answered, not trained
    assert registry.get("masked_lm").task_class is None
    with pytest.raises(ValueError, match="Unknown task 'nope'"):
        registry.canonical_name("nope")
    with pytest.raises(ValueError, match="taken by task 'tagging'"):
        registry.register(registry.TaskEntry(name="ner", task_class=object,
                                             config_class=object))


def test_configs_are_frozen_and_name_required_fields():
    import dataclasses

    from tasks.classification import ClassificationConfig
    from training.config import TrainerConfig
    trainer = TrainerConfig(output_dir="o")
    with pytest.raises(dataclasses.FrozenInstanceError):
        trainer.learning_rate = 1.0
    with pytest.raises(TypeError, match="task_name"):
        ClassificationConfig(data_dir="d", vocab_file="v", bert_config_file="c")


def test_steps_for_epochs_is_the_originals_count():
    from training.task import steps_for_epochs
    # The original: int(len(train_examples) / train_batch_size * num_train_epochs), and
    # int(num_train_steps * warmup_proportion).
    assert steps_for_epochs(3668, 32, 3.0, 0.1) == (343, 34)
    assert steps_for_epochs(5, 32, 1.0, 0.1) == (1, 0)  # at least one step
