"""Early stopping (`--early_stopping_patience`): the runner's best-checkpoint keeper stops
where Keras's `EarlyStopping` does on the same dev metrics, also across a resume; a tagging
run whose dev F1 is scripted stops at the hand-counted step with best/ holding the best
step's weights (re-scored afresh), its rerun does not train on, a larger patience continues
it, and a grid of two runs stops each; every fine-tuning script refuses a patience without
an evaluation to watch, in one line, before it writes anything."""

import dataclasses
import json
import logging
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from tests.test_ner import write_toy_task

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _ScriptedTask:
    """What the keeper needs of a task, with dev F1 values given in advance."""
    main_metric = "f1"

    def __init__(self, values):
        self.values = iter(values)

    def evaluate(self, model, strategy=None):
        return {"f1": next(self.values)}

    def format_results(self, results):
        return "".join(f"{k} = {v}\n" for k, v in results.items())


def _keras_stop(values, patience):
    """The evaluation (0-based) after which Keras's EarlyStopping stops, or None."""
    import keras
    callback = keras.callbacks.EarlyStopping(monitor="val_f1", mode="max", patience=patience)
    model = types.SimpleNamespace(stop_training=False)
    callback.set_model(model)
    callback.on_train_begin()
    for epoch, value in enumerate(values):
        callback.on_epoch_end(epoch, {"val_f1": value})
        if model.stop_training:
            return epoch
    return None


def _keeper_stop(output_dir, values, patience, every=10, resume_after=None):
    """The evaluation (0-based) after which the runner's keeper returns STOP, or None;
    with `resume_after`, a new keeper (a rerun) takes over after that many evaluations."""
    from training import loop, runner
    last = every * (len(values) + 1)  # the last step is never among these evaluations
    task = _ScriptedTask(values)
    keeper = runner.BestCheckpointKeeper(task, None, None, output_dir, every, last, patience)
    for index in range(len(values)):
        if index == resume_after:
            keeper = runner.BestCheckpointKeeper(task, None, None, output_dir, every, last,
                                                 patience)
        if keeper((index + 1) * every, {}) is loop.STOP:
            return index
    return None


def test_the_keeper_stops_where_keras_early_stopping_does(tmp_path, monkeypatch):
    from training import runner
    monkeypatch.setattr(runner, "save_tf2_checkpoint", lambda model, path: path)
    rng = np.random.default_rng(7)
    cases = 0
    for trial in range(40):
        # A rising dev metric with noise, in steps of 0.1: ties and dips.
        values = [round(float(v), 1) for v in (np.arange(8) + rng.integers(0, 5, 8)) / 10]
        patience = int(rng.integers(1, 4))
        expected = _keras_stop(values, patience)
        assert _keeper_stop(str(tmp_path / f"run{trial}"), values, patience) == expected, \
            (values, patience)
        # Cut off after three evaluations and rerun: the count goes on from the record.
        resumed = _keeper_stop(str(tmp_path / f"resumed{trial}"), values, patience,
                               resume_after=3)
        assert resumed == expected or (expected is not None and expected < 3), \
            (values, patience)
        cases += expected is not None
    assert 10 <= cases < 40  # both stopping and running to the end were exercised


@pytest.fixture(scope="module")
def ner_data(tmp_path_factory):
    return write_toy_task(tmp_path_factory.mktemp("early_stopping"),
                          (("train.txt", 160), ("valid.txt", 40), ("test.txt", 20)), seed=3)


# The dev F1 each checkpoint step is given (the real one is kept beside it): the best is
# step 10's, and steps 15 and 20 do not beat it (20 ties it).
SCRIPTED_F1 = {5: 0.50, 10: 0.60, 15: 0.55, 20: 0.60, 25: 0.90, 30: 0.95}


def _weights_digest(model):
    return [float(np.sum(np.abs(v.numpy()))) for v in model.trainable_variables]


def _scripted_evaluation(monkeypatch, digests):
    """Every tagging evaluation reports SCRIPTED_F1 of the step of the newest checkpoint
    in the folder of the run that evaluates (the keeper evaluates right after saving it;
    a grid runs each combination through `runner.run`),
    and keeps a digest of the weights evaluated in `digests[(folder, step)]`."""
    from tasks.tagging import TaggingTask
    from training import runner
    real_evaluate, real_run = TaggingTask.evaluate, runner.run
    running = {}

    def evaluate(self, model, strategy=None):
        results = real_evaluate(self, model, strategy)
        step = runner.checkpoint_step(running["folder"])
        digests[(running["folder"], step)] = _weights_digest(model)
        return dict(results, f1=SCRIPTED_F1[step])

    def run(task, trainer, *args, **kwargs):
        running["folder"] = trainer.output_dir
        return real_run(task, trainer, *args, **kwargs)

    monkeypatch.setattr(TaggingTask, "evaluate", evaluate)
    monkeypatch.setattr(runner, "run", run)


def _tagging_run(ner_data, out):
    """The toy tagging task's config and a trainer for `out`: 30 steps (160 sentences,
    batch 16, 3 epochs), evaluated every 5, patience 2."""
    from tasks.tagging import TaggingConfig
    from training.config import TrainerConfig
    config = TaggingConfig(data_dir=str(ner_data / "data"),
                           vocab_file=str(ner_data / "vocab.txt"),
                           bert_config_file=str(ner_data / "bert_config.json"),
                           max_seq_length=16, num_train_epochs=3)
    return config, TrainerConfig(output_dir=str(out), train_batch_size=16,
                                 learning_rate=2e-3, save_checkpoints_steps=5, log_steps=0,
                                 early_stopping_patience=2)


def _results(path):
    return dict(line.split(" = ", 1) for line in path.read_text().splitlines())


def test_a_run_stops_early_keeps_its_best_and_stays_stopped(ner_data, tmp_path, caplog,
                                                             monkeypatch):
    from modeling import BertConfig, load_checkpoint
    from tasks.tagging import TaggingTask
    from training import metrics_log, runner

    digests = {}
    _scripted_evaluation(monkeypatch, digests)
    caplog.set_level(logging.INFO, logger="absl")
    out = tmp_path / "out"
    config, trainer = _tagging_run(ner_data, out)
    # 160 sentences, batch 16, 3 epochs: 30 steps, evaluated every 5. Best at 10; 15 and
    # 20 do not beat it: two evaluations without improvement stop the run at 20.
    result = runner.run(TaggingTask(config), trainer, do_train=True, do_eval=True,
                        do_predict=True)
    assert runner.checkpoint_step(str(out)) == 20
    stops = [r.getMessage() for r in caplog.records if "training stops early" in r.getMessage()]
    assert stops == ["Step 20 of 30: training stops early: dev f1 has not improved on step "
                     "10's 0.6000 in 2 evaluations (--early_stopping_patience=2); best/ "
                     "holds step 10's checkpoint."]
    events = metrics_log.read(str(out / "metrics.jsonl"))
    assert [(e["event"], e["step"]) for e in events if e["event"] != "train"] == [
        ("evaluation", 5), ("evaluation", 10), ("evaluation", 15), ("evaluation", 20),
        ("early_stop", 20), ("end", 20)]
    assert max(e["step"] for e in events if e["event"] == "train") == 20
    assert events[-1]["weights"]["global_step"] == 10
    # best/ holds the weights evaluated at step 10 (not those of step 20).
    best = _results(out / "best" / "best_results.txt")
    assert best["global_step"] == "10" and float(best["f1"]) == 0.6
    fresh = TaggingTask(config)
    fresh.prepare(str(tmp_path / "fresh"), do_eval=True)
    model = fresh.build_model(BertConfig.from_json_file(config.bert_config_file))
    load_checkpoint(model, str(out / "best" / "model.ckpt"), strict=True)
    assert _weights_digest(model) == pytest.approx(digests[(str(out), 10)], rel=1e-6)
    assert _weights_digest(model) != pytest.approx(digests[(str(out), 20)], rel=1e-6)
    # The last weights are step 20's (eval_results); the predictions are best/'s.
    assert result.eval_results["global_step"] == 20
    assert _results(out / "predictions_from.txt")["global_step"] == "10"
    assert (out / "test_predictions.txt").exists()
    state = json.loads((out / "early_stopping.json").read_text())
    assert state["stopped"] and state["best_step"] == 10 and state["last_evaluated_step"] == 20

    # The same command again: the run stays stopped (no training, the same step).
    caplog.clear()
    again = runner.run(TaggingTask(config), trainer, do_train=True, do_eval=True)
    assert again.train_logs == {} and runner.checkpoint_step(str(out)) == 20
    assert any("this run stopped early, dev f1 has not improved on step 10's" in r.getMessage()
               for r in caplog.records)
    assert max(e["step"] for e in metrics_log.read(str(out / "metrics.jsonl"))
               if e["event"] == "train") == 20

    # A larger patience continues it: 25 and 30 improve, and it runs to its end.
    longer = runner.run(TaggingTask(config),
                        dataclasses.replace(trainer, early_stopping_patience=3),
                        do_train=True, do_eval=True)
    assert longer.train_logs and runner.checkpoint_step(str(out)) == 30
    assert _results(out / "best" / "best_results.txt")["global_step"] == "30"


def test_a_grid_stops_each_combination_and_reruns_none(ner_data, tmp_path, monkeypatch):
    from tasks.tagging import TaggingTask
    from training import grid, metrics_log, runner
    from training.config import RuntimeConfig

    _scripted_evaluation(monkeypatch, {})
    out = tmp_path / "grid"
    config, trainer = _tagging_run(ner_data, out)
    axes = {"learning_rate": (2e-3, 1e-3)}
    grid.run(TaggingTask, config, trainer, RuntimeConfig(), axes, do_train=True,
             do_eval=True)
    rows = [line.split("\t") for line in (out / grid.RESULTS_FILE).read_text().splitlines()]
    header = rows[0]
    table = [dict(zip(header, row)) for row in rows[1:]]
    assert [(r["combination"], r["steps"], r["best_step"]) for r in table] == [
        ("lr=0.002", "20", "10"), ("lr=0.001", "20", "10")]
    assert _results(out / "best" / "best_results.txt")["grid_combination"] == "lr=0.002"
    # The same grid again: each combination finished (stopped early) and is not rerun.
    trained = {name: metrics_log.read(str(out / name / "metrics.jsonl"))
               for name in ("lr=0.002", "lr=0.001")}
    grid.run(TaggingTask, config, trainer, RuntimeConfig(), axes, do_train=True,
             do_eval=True)
    for name, events in trained.items():
        assert metrics_log.read(str(out / name / "metrics.jsonl")) == events
        assert runner.checkpoint_step(str(out / name)) == 20


@pytest.mark.parametrize("script, data_flags", [
    ("run_classifier.py", ["--task_name=SST-2", "--data_dir=glue/SST-2"]),
    ("run_squad.py", ["--train_file=train-v1.1.json"]),
    ("run_ner.py", ["--data_dir=conll"]),
    ("run_swag.py", ["--data_dir=swag"]),
])
def test_every_fine_tuning_script_refuses_a_patience_with_nothing_to_watch(
        script, data_flags, tmp_path):
    out = tmp_path / "out"
    common = [sys.executable, os.path.join(ROOT, script), f"--output_dir={out}",
              "--bert_config_file=bert_config.json", "--vocab_file=vocab.txt", *data_flags]
    for flags, message in [
            (["--do_train", "--early_stopping_patience=2"],
             "error: --early_stopping_patience=2 counts dev evaluations made while "
             "training: give --do_train and --do_eval (see --helpfull)."),
            (["--do_eval", "--do_predict", "--early_stopping_patience=3"],
             "error: --early_stopping_patience=3 counts dev evaluations made while "
             "training: give --do_train and --do_eval (see --helpfull)."),
            (["--do_train", "--do_eval", "--early_stopping_patience=0"],
             "error: --early_stopping_patience=0: must be at least 1.")]:
        done = subprocess.run(common + flags, capture_output=True, text=True, cwd=tmp_path,
                              env=dict(os.environ, PYTHONPATH=ROOT))
        assert done.returncode == 1
        assert done.stderr.strip().splitlines()[0] == message, done.stderr
        assert "Traceback" not in done.stderr and not out.exists()


def test_a_run_that_evaluates_too_rarely_to_stop_is_told(tmp_path, caplog):
    from training import early_stopping, runner
    from training.config import TrainerConfig

    caplog.set_level(logging.INFO, logger="absl")
    keeper = types.SimpleNamespace(stopping=early_stopping.EarlyStopping(
        str(tmp_path), 2, "accuracy"))
    # 300 steps, a checkpoint every 1,000 (the default): one evaluation, at the last step.
    trainer = TrainerConfig(output_dir=str(tmp_path), early_stopping_patience=2)
    assert runner._steps_left_by_early_stopping(keeper, trainer, 300) == 300
    assert [r.getMessage() for r in caplog.records] == [
        "--early_stopping_patience=2: this run evaluates on dev 1 time (at every "
        "--save_checkpoints_steps=1000 of its 300 steps and at the last), too few to stop "
        "before the end: give a smaller --save_checkpoints_steps."]
    # Every 50 of 300 steps: six evaluations, enough to stop after two without gain.
    caplog.clear()
    trainer = dataclasses.replace(trainer, save_checkpoints_steps=50)
    assert runner._steps_left_by_early_stopping(keeper, trainer, 300) == 300
    assert not caplog.records
