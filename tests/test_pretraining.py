"""Pre-training: the loss against a hand computation, learning, gradient accumulation,
checkpoint/resume, the NaN guard, mixed precision and run_pretraining.py end to end."""

import os
import re

import keras
import numpy as np
import pytest
import tensorflow as tf
from pretraining_data import TINY_TRAINING_CONFIG, write_config, write_records

from modeling import BertConfig, BertPretrainer
from tasks.pretraining import PretrainingTask
from tasks.pretraining.config import PretrainingConfig
from tasks.pretraining.input import pretraining_dataset
from training import metrics_log
from training.loop import Trainer, TrainingDivergedError, log_interval
from training.optimizers import _PreReducedGradients, create_optimizer
from training.time_budget import TimeBudget

SEQ, PRED = 24, 4


class SGD(_PreReducedGradients, keras.optimizers.SGD):
    """Plain SGD: after one step, (old - new) / lr is exactly the applied gradient."""


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    folder = tmp_path_factory.mktemp("records")
    return [write_records(folder / f"part-{i}.tfrecord", 256, seed=i) for i in range(2)]


def _model(seed=0, **overrides):
    keras.utils.set_random_seed(seed)
    return BertPretrainer(BertConfig(**dict(TINY_TRAINING_CONFIG, **overrides)))


def _train_fn(records, batch_size=32, seed=7):
    def fn(context, skip):
        return pretraining_dataset(records, batch_size, SEQ, PRED, is_training=True,
                                   seed=seed, input_context=context, skip_batches=skip)
    return fn


def _first_batch(records, size):
    return next(iter(pretraining_dataset(records, size, SEQ, PRED, is_training=False)))


def _weights(model):
    return [v.numpy().copy() for v in model.trainable_variables]


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_loss_of_one_batch_equals_hand_computation(records):
    model = _model()
    batch = _first_batch(records, 8)
    task = PretrainingTask()
    norms = task.normalizers(batch)
    loss, stats = task.loss(model, batch, norms, training=False)
    outputs = model({k: batch[k] for k in ("input_ids", "input_mask", "segment_ids",
                                           "masked_lm_positions")})
    mlm = _log_softmax(np.asarray(outputs["masked_lm_logits"], np.float64))
    ids, weights = batch["masked_lm_ids"].numpy(), batch["masked_lm_weights"].numpy()
    xent = -np.take_along_axis(mlm, ids[..., None], -1)[..., 0]
    mlm_loss = (weights * xent).sum() / (weights.sum() + 1e-5)
    nsp = _log_softmax(np.asarray(outputs["next_sentence_logits"], np.float64))
    labels = batch["next_sentence_labels"].numpy()[:, 0]
    nsp_loss = -nsp[np.arange(len(labels)), labels].mean()
    assert 0 < weights.sum() < weights.size  # padding slots present and ignored
    np.testing.assert_allclose(float(stats["masked_lm_loss"]), mlm_loss, rtol=1e-5)
    np.testing.assert_allclose(float(stats["next_sentence_loss"]), nsp_loss, rtol=1e-5)
    np.testing.assert_allclose(float(loss), mlm_loss + nsp_loss, rtol=1e-5)


def test_next_sentence_accuracy_comes_with_the_majority_label_floor(records):
    """The evaluation reports the accuracy of always answering the set's more frequent
    next-sentence label, counted here from the records themselves: an accuracy under it
    (a tiny held-out set of a few documents) reads as no better than a constant."""
    from training.loop import evaluate
    dataset = pretraining_dataset(records, 16, SEQ, PRED, is_training=False)
    labels = np.concatenate([b["next_sentence_labels"].numpy()[:, 0] for b in dataset])
    share = labels.mean()
    assert 0 < share < 1 and share != 0.5
    results = evaluate(tf.distribute.get_strategy(), _model(), PretrainingTask(), dataset)
    assert results["next_sentence_majority_accuracy"] == pytest.approx(max(share, 1 - share))
    assert 0 <= results["next_sentence_accuracy"] <= 1


def test_training_brings_the_loss_well_below_its_start(records, tmp_path):
    strategy = tf.distribute.get_strategy()
    model = _model()
    optimizer = create_optimizer(model, 1e-3, 200, 20)
    trainer = Trainer(strategy, model, PretrainingTask(), optimizer, str(tmp_path))
    history = []
    trainer.train(_train_fn(records), 200, steps_per_loop=50, save_checkpoints_steps=200,
                  log_steps=20, global_batch_size=32,
                  hooks=[lambda step, logs: history.append(logs)])
    first, last = history[0], history[-1]
    assert first["masked_lm_loss"] > 3.0  # about ln(40) at random initialisation
    assert last["masked_lm_loss"] < 0.4 * first["masked_lm_loss"]
    assert last["next_sentence_loss"] < 0.3
    assert last["learning_rate"] == 0.0
    assert os.path.exists(tmp_path / "ckpt-200.index")
    assert any(name.startswith("events.out") for name in os.listdir(tmp_path / "train"))


def test_a_short_run_logs_its_progress_all_along(records, tmp_path):
    """Fewer steps than --log_steps: progress still comes four times, not only at the end
    (a 75-step run was silent for minutes)."""
    model = _model()
    optimizer = create_optimizer(model, 1e-3, 15, 2)
    trainer = Trainer(tf.distribute.get_strategy(), model, PretrainingTask(), optimizer,
                      str(tmp_path))
    logged = []
    trainer.train(_train_fn(records), 15, steps_per_loop=1000, save_checkpoints_steps=1000,
                  log_steps=100, hooks=[lambda step, logs: logged.append(step)])
    assert logged == [4, 8, 12, 15]
    events = [e for e in metrics_log.read(str(tmp_path / "metrics.jsonl"))
              if e["event"] == "train"]
    assert [e["step"] for e in events] == logged and events[0]["eta_seconds"] > 0


def test_a_time_budget_resizes_the_run_and_its_decay_before_warmup_ends(records, tmp_path):
    """Planned for 20 steps with 10 of warm-up; the clock says steps 5-10 took 1 s each and
    30 s are left at step 10: the run trains 40 steps, its rate after warm-up on the line
    that reaches 0 at step 40 (the original's formula, by hand); a resumed run keeps it."""
    times = iter([0.0, 5.0])
    told = []
    budget = TimeBudget(deadline=35.0, fixed_from=10, clock=lambda: next(times, 99.0),
                        on_resize=lambda total, seconds: told.append((total, seconds)))
    model = _model()
    optimizer = create_optimizer(model, 1e-3, 20, 10)
    trainer = Trainer(tf.distribute.get_strategy(), model, PretrainingTask(), optimizer,
                      str(tmp_path))
    rates = {}
    trainer.train(_train_fn(records), 20, steps_per_loop=5, save_checkpoints_steps=100,
                  log_steps=0, hooks=[lambda step, logs: rates.update({step: logs[
                      "learning_rate"]})], time_budget=budget)
    assert told == [(40, 1.0)] and int(trainer.global_step.numpy()) == 40
    assert sorted(rates) == [5, 10, 15, 20, 25, 30, 35, 40]
    # The rate logged after a loop is the next step's: warm-up 5/10, then 1 - g/40.
    want = {5: 0.5e-3, 15: 0.625e-3, 20: 0.5e-3, 30: 0.25e-3, 40: 0.0}
    np.testing.assert_allclose([rates[g] for g in want], list(want.values()), rtol=1e-6,
                               atol=1e-12)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-40")
    # The same weights as a run planned for 40 steps from the start.
    straight = _model()
    Trainer(tf.distribute.get_strategy(), straight, PretrainingTask(),
            create_optimizer(straight, 1e-3, 40, 10), str(tmp_path / "straight")).train(
        _train_fn(records), 40, steps_per_loop=5, save_checkpoints_steps=100, log_steps=0)
    for a, b in zip(_weights(straight), _weights(model)):
        np.testing.assert_array_equal(a, b)
    events = [e for e in metrics_log.read(str(tmp_path / "metrics.jsonl"))
              if e["event"] == "train"]
    assert events[1]["total_steps"] == 20 and events[2]["total_steps"] == 40


def test_log_interval():
    assert log_interval(100, 75) == 19  # a short run: four lines
    assert log_interval(100, 3) == 1
    assert log_interval(100, 1_000_000) == 100  # a long one: as asked
    assert log_interval(100, 1_000_000, seconds_per_step=4.0) == 15  # a line a minute
    assert log_interval(100, 1_000_000, seconds_per_step=120.0) == 1
    assert log_interval(0, 75) == 0  # no log steps: a line per loop, as before


def _one_sgd_step(model, batch_fn, accumulation):
    trainer = Trainer(tf.distribute.get_strategy(), model, PretrainingTask(),
                      SGD(learning_rate=1.0), "/nonexistent-not-used",
                      gradient_accumulation_steps=accumulation)
    before = _weights(model)
    iterator = iter(tf.distribute.get_strategy().distribute_datasets_from_function(
        lambda context: batch_fn()))
    out = trainer._train_loop(iterator, tf.constant(1))
    grads = [b - a for b, a in zip(before, _weights(model))]
    return float(out["last_loss"]), grads


def test_gradient_accumulation_4x8_equals_one_batch_of_32(records):
    batch = _first_batch(records, 32)
    dataset = lambda: tf.data.Dataset.from_tensors(batch).repeat()  # noqa: E731
    loss_1, grads_1 = _one_sgd_step(_model(3), dataset, 1)
    loss_4, grads_4 = _one_sgd_step(_model(3), dataset, 4)
    np.testing.assert_allclose(loss_4, loss_1, rtol=1e-5)
    for g1, g4 in zip(grads_1, grads_4):
        np.testing.assert_allclose(g4, g1, rtol=1e-4, atol=1e-7)
    assert sum(float(np.abs(g).sum()) for g in grads_1) > 0


def _resumable_run(records, folder, stop_after=None, num_steps=8):
    model = _model(5, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    optimizer = create_optimizer(model, 1e-3, num_steps, 2)
    trainer = Trainer(tf.distribute.get_strategy(), model, PretrainingTask(), optimizer,
                      str(folder))

    def crash(step, logs):
        if stop_after is not None and step >= stop_after:
            raise KeyboardInterrupt("simulated crash")

    trainer.train(_train_fn(records), num_steps, steps_per_loop=2,
                  save_checkpoints_steps=2, log_steps=0, hooks=[crash])
    return model, trainer


def test_interrupted_run_resumes_to_the_same_weights(records, tmp_path):
    straight, _ = _resumable_run(records, tmp_path / "straight")
    with pytest.raises(KeyboardInterrupt):
        _resumable_run(records, tmp_path / "resumed", stop_after=4)
    assert tf.train.latest_checkpoint(str(tmp_path / "resumed")).endswith("ckpt-4")
    resumed, trainer = _resumable_run(records, tmp_path / "resumed")
    assert int(trainer.global_step.numpy()) == 8
    assert int(trainer.optimizer.iterations.numpy()) == 8
    for a, b in zip(_weights(straight), _weights(resumed)):
        np.testing.assert_array_equal(a, b)
    # Rerunning a finished command does nothing and changes nothing.
    again, trainer = _resumable_run(records, tmp_path / "resumed")
    assert int(trainer.global_step.numpy()) == 8
    for a, b in zip(_weights(straight), _weights(again)):
        np.testing.assert_array_equal(a, b)


def test_nan_loss_stops_with_the_step_and_keeps_the_last_good_checkpoint(records, tmp_path):
    good = _first_batch(records, 8)
    bad = dict(good, masked_lm_weights=good["masked_lm_weights"] * np.nan)
    batches = [good, good, good, good, bad]

    def dataset_fn(context, skip):
        return tf.data.Dataset.from_tensor_slices(
            {k: tf.stack([b[k] for b in batches]) for k in good}).skip(skip).repeat()

    model = _model()
    trainer = Trainer(tf.distribute.get_strategy(), model, PretrainingTask(),
                      create_optimizer(model, 1e-3, 10, 0), str(tmp_path))
    with pytest.raises(TrainingDivergedError, match="at step 5.*ckpt-4") as diverged:
        trainer.train(dataset_fn, 10, steps_per_loop=10, save_checkpoints_steps=2,
                      log_steps=0)
    # Advice that fits this run: its rate at the step (1e-3 decaying linearly over 10
    # steps); it trains in float32 and clips, so neither is advised.
    advice = str(diverged.value).split("ckpt-4. ", 1)[1]
    assert re.fullmatch(r"Lower --learning_rate \(the rate at this step was 0\.000[56]\) "
                        r"or check the input data\.", advice), advice
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-4")
    reader = tf.train.load_checkpoint(str(tmp_path / "ckpt-4"))
    for name in reader.get_variable_to_shape_map():
        value = reader.get_tensor(name)
        if np.issubdtype(np.asarray(value).dtype, np.floating):
            assert np.isfinite(value).all(), name


@pytest.mark.parametrize("dtype,policy", [("bfloat16", "mixed_bfloat16"),
                                          ("float16", "mixed_float16")])
def test_mixed_precision_trains(records, tmp_path, dtype, policy):
    keras.mixed_precision.set_dtype_policy(policy)
    try:
        model = _model()
        assert model.encoder.dtype_policy.compute_dtype == dtype
        optimizer = create_optimizer(model, 1e-3, 20, 2, loss_scale=dtype == "float16")
        trainer = Trainer(tf.distribute.get_strategy(), model, PretrainingTask(), optimizer,
                          str(tmp_path))
        history = []
        trainer.train(_train_fn(records), 20, steps_per_loop=10, save_checkpoints_steps=20,
                      log_steps=10, hooks=[lambda s, logs: history.append(logs)])
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    assert all(np.isfinite(logs["loss"]) for logs in history)
    assert history[-1]["masked_lm_loss"] < history[0]["masked_lm_loss"]
    assert all(v.dtype == "float32" for v in model.trainable_variables)


def test_unigram_entropy_of_the_masked_tokens(records):
    from data_prep.pretraining_records import read_examples
    from tasks.pretraining import plateau
    entropy, tokens = plateau.unigram_entropy(records, SEQ, PRED, records=100)
    # By hand: the masked ids of the first 50 records of each file.
    ids = [t for path in records for n, e in enumerate(read_examples(path)) if n < 50
           for t in e["masked_lm_ids"][:int(sum(e["masked_lm_weights"]))]]
    counts = np.bincount(ids)
    p = counts[counts > 0] / len(ids)
    assert tokens == len(ids)
    assert entropy == pytest.approx(float(-(p * np.log(p)).sum()), rel=1e-9)


def test_a_run_on_the_plateau_is_warned_about_once(caplog):
    import logging

    from tasks.pretraining import plateau
    caplog.set_level(logging.WARNING)
    watch = plateau.PlateauWatch(entropy=6.6, num_train_steps=1000)
    watch(300, {"masked_lm_loss": 6.5})  # too early to tell
    assert not caplog.records
    watch(500, {"masked_lm_loss": 6.2})  # within a nat of the entropy half-way
    watch(700, {"masked_lm_loss": 6.1})
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "frequent-token plateau" in warnings[0]
    assert "learning rate" in warnings[0] and "warm-up" in warnings[0]
    assert "Step 500 of 1000" in warnings[0]
    caplog.clear()
    left = plateau.PlateauWatch(entropy=6.6, num_train_steps=1000)
    left(500, {"masked_lm_loss": 5.2})
    left(700, {"masked_lm_loss": 6.5})  # checked once only
    short = plateau.PlateauWatch(entropy=6.6, num_train_steps=80)  # a demo: not judged
    short(40, {"masked_lm_loss": 6.5})
    assert not caplog.records


def test_divergence_advice_fits_the_run():
    """A rate far above BERT's, no clipping, bfloat16: each is named, with its fix."""
    from types import SimpleNamespace
    run = SimpleNamespace(optimizer=SimpleNamespace(learning_rate=0.05), clip_norm=None)
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        advice = Trainer._divergence_advice(run)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert advice == ("Lower --learning_rate (the rate at this step was 0.05; BERT trains "
                      "at 1e-5 to 1e-3), clip gradients (--clip_norm=1.0), train in "
                      "--dtype=float32 (this run computes in bfloat16) or check the input "
                      "data.")


def test_input_pipelines_run_without_tf_datas_autotuning_thread(records, tmp_path,
                                                                monkeypatch):
    """Training and evaluation on one device iterate their own datasets, without tf.data's
    autotuning thread, which an iterator's deletion waits for (up to a minute after a long
    run): not through the strategy's multi-device iterator, whose per-device datasets
    carry tf.data's default options and start that thread whatever ours say."""
    from training import loop
    seen, distributed = [], []

    def spy(dataset):
        wrapped = without(dataset)
        seen.append(wrapped.options().autotune.enabled)
        return wrapped

    without = loop.without_autotune_thread
    monkeypatch.setattr(loop, "without_autotune_thread", spy)
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")  # what one CPU or GPU runs
    for method in ("distribute_datasets_from_function", "experimental_distribute_dataset"):
        monkeypatch.setattr(strategy, method,
                            lambda *args, name=method, **kwargs: distributed.append(name))
    with strategy.scope():
        model = _model()
        optimizer = create_optimizer(model, 1e-3, 2, 0)
    trainer = Trainer(strategy, model, PretrainingTask(), optimizer, str(tmp_path))
    trainer.train(_train_fn(records), 2, save_checkpoints_steps=1000)
    assert seen == [False]
    loop.evaluate(strategy, model, PretrainingTask(),
                  pretraining_dataset(records, 8, SEQ, PRED, is_training=False), max_steps=1)
    assert seen == [False, False]
    assert distributed == []


def test_one_replica_reads_the_batches_the_strategy_would_give_it():
    """The one-replica input iterator yields what the strategy's own distribution yields
    for that replica, and the dataset function sees one input pipeline."""
    from training.loop import input_iterator
    contexts = []

    def dataset_fn(context):
        contexts.append((context.num_input_pipelines, context.input_pipeline_id,
                         context.num_replicas_in_sync))
        return tf.data.Dataset.range(10).batch(3)

    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    ours = [batch.numpy().tolist() for batch in input_iterator(strategy, dataset_fn)]
    theirs = [strategy.experimental_local_results(batch)[0].numpy().tolist()
              for batch in strategy.distribute_datasets_from_function(dataset_fn)]
    assert ours == theirs == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert contexts == [(1, 0, 1), (1, 0, 1)]


@pytest.mark.parametrize("dropout", [None, 0.0])
def test_pretraining_dropout_is_trained_with_and_the_export_keeps_the_configs(
        records, tmp_path, dropout):
    """--pretraining_dropout=0 trains without dropout (a training-mode forward pass is the
    inference one); without it the config's 0.3 applies. Either way the exported
    bert_config.json keeps 0.3, the dropout fine-tuning will use."""
    config_file = write_config(tmp_path / "bert_config.json", hidden_dropout_prob=0.3,
                               attention_probs_dropout_prob=0.3)
    task = PretrainingTask(PretrainingConfig(
        input_file=records[0], bert_config_file=config_file, max_seq_length=SEQ,
        max_predictions_per_seq=PRED, objective="mlm", pretraining_dropout=dropout))
    keras.utils.set_random_seed(0)
    model = task.build_model(BertConfig.from_json_file(config_file))
    inputs = task.model_inputs(_first_batch(records, 8))
    inference = model(inputs, training=False)["masked_lm_logits"].numpy()
    trained = [model(inputs, training=True)["masked_lm_logits"].numpy() for _ in range(2)]
    if dropout == 0.0:
        np.testing.assert_allclose(trained[0], inference, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(trained[1], inference, rtol=1e-5, atol=1e-6)
    else:
        assert np.abs(trained[0] - inference).max() > 1e-2
        assert np.abs(trained[0] - trained[1]).max() > 1e-2
    task.export(model, str(tmp_path / "export"))
    exported = BertConfig.from_json_file(str(tmp_path / "export" / "bert_config.json"))
    assert exported.hidden_dropout_prob == exported.attention_probs_dropout_prob == 0.3
    with pytest.raises(ValueError, match="--pretraining_dropout=1.0: must be at least 0"):
        PretrainingConfig(input_file=records[0], bert_config_file=config_file,
                          pretraining_dropout=1.0)
