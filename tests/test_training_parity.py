"""Whole training steps against the original release's own graphs: Google's
`run_pretraining.py` and `run_classifier.py` model functions with `optimization.py`'s
AdamWeightDecay, warm-up and decay, and global-norm clipping, run under `tf.compat.v1`
(`tests/original_training.py`), and this project's `Trainer`, task losses and
`create_optimizer`, from the same checkpoint on the same batches, dropout 0.

Every step's loss, and after the last step every weight and both Adam slots, must agree
to float32 rounding.

The original runs with `use_one_hot_embeddings=True`, its TPU path, on which the paper's
models were trained. On CPU and GPU (`False`) the word-embedding gradient is an
`IndexedSlices` with a row per token occurrence, and `clip_by_global_norm` counts a token
that occurs twice as two rows: a larger norm than the gradient's, so it clips a little
more. This project clips by the gradient's own norm, the TPU path's (measured here: the
CPU path's norm 1.0576 against 1.0609 at one step, and its losses drifting by 3e-5 after
that step; with the TPU path equal to 1e-6). A changed schedule, decay exclusion, bias correction, clipping or
loss normaliser moves them by orders of magnitude more (tried: each of those broken on
purpose fails the weights or the slots)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from modeling import (
    BertClassifier,
    BertConfig,
    BertPretrainer,
    checkpoint_mapping,
    load_checkpoint,
)
from tasks.classification.task import ClassificationTask
from tasks.pretraining.task import PretrainingTask
from tests import numpy_reference as ref
from tests.conftest import TINY_CONFIG, write_tf1_checkpoint
from training.loop import Trainer
from training.optimizers import create_optimizer

pytest.importorskip("bert")

STEPS, WARMUP, BATCH, SEQ, PREDICTIONS = 24, 6, 4, 16, 5
CONFIG = dict(TINY_CONFIG, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
HERE = os.path.dirname(os.path.abspath(__file__))


def _pretraining_batches(rng):
    ids = rng.integers(5, CONFIG["vocab_size"], (STEPS, BATCH, SEQ)).astype(np.int32)
    lengths = rng.integers(8, SEQ + 1, (STEPS, BATCH))
    mask = (np.arange(SEQ) < lengths[..., None]).astype(np.int32)
    ids *= mask
    segments = ((np.arange(SEQ) >= lengths[..., None] // 2) & (mask > 0)).astype(np.int32)
    positions = np.zeros((STEPS, BATCH, PREDICTIONS), np.int32)
    labels = np.zeros_like(positions)
    weights = np.zeros(positions.shape, np.float32)
    for s in range(STEPS):
        for b in range(BATCH):
            real = int(rng.integers(1, PREDICTIONS + 1))  # some slots are padding
            chosen = np.sort(rng.choice(np.arange(1, lengths[s, b] - 1), real, False))
            positions[s, b, :real] = chosen
            labels[s, b, :real] = ids[s, b, chosen]
            weights[s, b, :real] = 1.0
            ids[s, b, chosen] = 4  # [MASK]
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments,
            "masked_lm_positions": positions, "masked_lm_ids": labels,
            "masked_lm_weights": weights,
            "next_sentence_labels": rng.integers(0, 2, (STEPS, BATCH, 1)).astype(np.int32)}


def _classifier_batches(rng, num_labels):
    ids = rng.integers(5, CONFIG["vocab_size"], (STEPS, BATCH, SEQ)).astype(np.int32)
    lengths = rng.integers(4, SEQ + 1, (STEPS, BATCH))
    mask = (np.arange(SEQ) < lengths[..., None]).astype(np.int32)
    return {"input_ids": ids * mask, "input_mask": mask,
            "segment_ids": ((np.arange(SEQ) >= 3) & (mask > 0)).astype(np.int32),
            "label_ids": rng.integers(0, num_labels, (STEPS, BATCH)).astype(np.int32),
            "is_real_example": np.ones((STEPS, BATCH), np.float32)}


def _original(tmp_path, task, batches, config_file, checkpoint, learning_rate, **extra):
    np.savez(tmp_path / "batches.npz", **batches)
    spec = dict(task=task, bert_config_file=config_file, init_checkpoint=checkpoint,
                batches=str(tmp_path / "batches.npz"), learning_rate=learning_rate,
                num_train_steps=STEPS, num_warmup_steps=WARMUP,
                output=str(tmp_path / "original.npz"), **extra)
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    # A process of its own: the script sets TF_USE_LEGACY_KERAS before importing TensorFlow.
    result = subprocess.run([sys.executable, os.path.join(HERE, "original_training.py"),
                             str(tmp_path / "spec.json")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    out = dict(np.load(tmp_path / "original.npz"))
    return out.pop("loss"), {k[len("var:"):]: v for k, v in out.items()}


def _ours(model_dir, model, task, batches, learning_rate, num_warmup_steps=WARMUP,
          **optimizer_options):
    optimizer = create_optimizer(model, learning_rate, STEPS, num_warmup_steps,
                                 **optimizer_options)
    trainer = Trainer(tf.distribute.get_strategy(), model, task, optimizer, str(model_dir),
                      clip_norm=1.0)
    data = tf.data.Dataset.from_tensor_slices(batches)
    trainer.train(lambda context, skip: data.skip(skip), STEPS, steps_per_loop=1,
                  save_checkpoints_steps=STEPS, log_steps=1)
    with open(os.path.join(model_dir, "metrics.jsonl"), encoding="utf-8") as f:
        losses = [row["loss"] for row in map(json.loads, f) if row["event"] == "train"]
    # Weights and slots by TF1 name, in TF1 layout (the slots as the original names them).
    weights = {}
    for name, (variable, rule) in checkpoint_mapping.variable_map(model).items():
        index = optimizer._get_variable_index(variable)
        slots = ((optimizer._m[index], optimizer._v[index]) if hasattr(optimizer, "_m")
                 else (optimizer._momentums[index], optimizer._velocities[index]))
        for suffix, value in zip(("", "/adam_m", "/adam_v"), (variable,) + slots):
            weights[name + suffix] = checkpoint_mapping.invert_rule(
                np.asarray(value.numpy()), rule)
    return np.array(losses), weights


def _compare(our_losses, our_weights, their_losses, their_weights):
    assert len(our_losses) == STEPS
    np.testing.assert_allclose(our_losses, their_losses, rtol=2e-5, atol=2e-6)
    names = [n for n in their_weights if n != "global_step"]
    assert set(names) == set(our_weights)
    # Tolerances on the scale of each kind of value (weights, first moments, second
    # moments), not of each variable: the attention key's bias has a gradient of exactly
    # 0 (a softmax does not see a shift of all its scores), so its moments are rounding
    # noise (1e-12) on both sides.
    kinds = ("/adam_m", "/adam_v")
    kind = {n: next((k for k in kinds if n.endswith(k)), "") for n in names}
    scale = {k: max(np.abs(their_weights[n]).max() for n in names if kind[n] == k)
             for k in ("",) + kinds}
    for name in names:
        np.testing.assert_allclose(our_weights[name], their_weights[name], rtol=1e-4,
                                   atol=1e-5 * scale[kind[name]], err_msg=name)


def _setup(tmp_path, heads, **config):
    config = dict(CONFIG, **config)
    weights = ref.random_google_weights(config, np.random.default_rng(0), heads=heads,
                                        num_labels=3)
    weights = {k: (v * 0.1 if k.endswith(("kernel", "embeddings", "output_weights"))
                   else v) for k, v in weights.items()}  # a trainable scale
    checkpoint = write_tf1_checkpoint(weights, str(tmp_path / "init.ckpt"),
                                      with_optimizer_slots=False)
    config_file = tmp_path / "bert_config.json"
    config_file.write_text(json.dumps(config))
    return BertConfig.from_dict(config), str(config_file), checkpoint


@pytest.fixture(scope="module")
def pretraining_run(tmp_path_factory):
    """The original's 24 pre-training steps, and what our runs start from."""
    tmp_path = tmp_path_factory.mktemp("pretraining_parity")
    config, config_file, checkpoint = _setup(tmp_path, ("pretraining",))
    batches = _pretraining_batches(np.random.default_rng(1))
    their_losses, theirs = _original(tmp_path, "pretraining", batches, config_file,
                                     checkpoint, 1e-2)
    return config, checkpoint, batches, their_losses, theirs


def _our_pretraining(pretraining_run, model_dir, **options):
    config, checkpoint, batches, _, _ = pretraining_run
    model = BertPretrainer(config)
    report = load_checkpoint(model, checkpoint, strict=True)
    assert not report.not_filled
    return _ours(model_dir, model, PretrainingTask(), batches, 1e-2, **options)


def test_pretraining_steps_equal_the_originals(pretraining_run, tmp_path):
    our_losses, ours = _our_pretraining(pretraining_run, tmp_path / "ours")
    _compare(our_losses, ours, *pretraining_run[3:])


@pytest.mark.parametrize("change", [
    dict(num_warmup_steps=WARMUP - 1),                      # the schedule
    dict(decay_exclusions=("LayerNorm", "layer_norm")),     # biases decayed
    dict(optimizer="adamw"),                                # Adam's bias correction
], ids=["schedule", "exclusions", "bias_correction"])
def test_a_changed_step_is_seen(pretraining_run, tmp_path, change):
    """The comparison is sharp enough to see each of these changes."""
    our_losses, ours = _our_pretraining(pretraining_run, tmp_path / "ours", **change)
    with pytest.raises(AssertionError):
        _compare(our_losses, ours, *pretraining_run[3:])


def test_classifier_steps_equal_the_originals(tmp_path):
    config, config_file, checkpoint = _setup(tmp_path, ("classifier",))
    batches = _classifier_batches(np.random.default_rng(2), 3)
    their_losses, theirs = _original(tmp_path, "classifier", batches, config_file,
                                     checkpoint, 1e-2, num_labels=3)
    model = BertClassifier(config, 3, dropout_rate=0.0)  # as the original, patched
    report = load_checkpoint(model, checkpoint, strict=True)
    assert not report.not_filled
    task = ClassificationTask.__new__(ClassificationTask)
    task.regression, task.multi_label = False, False
    our_losses, ours = _ours(tmp_path / "ours", model, task, batches, 1e-2)
    _compare(our_losses, ours, their_losses, theirs)


def test_the_training_step_runs_one_grappler_iteration_on_cpu_and_leaves_the_threads(
        tmp_path):
    """The training loop is called (and traced) with one iteration of Grappler's passes on
    a CPU-only host (training.loop.TRAIN_WITH_ONE_GRAPPLER_ITERATION_ON_CPU), every pass
    still on but the layout and memory optimisers (GPU work); the thread's own options,
    which other calls (serving's) run with, are left as they were (TensorFlow's default:
    two iterations, every pass)."""
    from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
    from tensorflow.python.eager import context as eager_context

    def rewrites():
        options = eager_context.context().function_call_options
        return config_pb2.ConfigProto.FromString(
            options.config_proto_serialized).graph_options.rewrite_options

    one = rewriter_config_pb2.RewriterConfig.ONE
    config, _, checkpoint = _setup(tmp_path, ("classifier",))
    model = BertClassifier(config, 3, dropout_rate=0.0)
    load_checkpoint(model, checkpoint, strict=True)
    seen = []

    class Recording(ClassificationTask):
        def normalizers(self, batch):  # runs while the step is traced
            seen.append(rewrites())
            return super().normalizers(batch)

    task = Recording.__new__(Recording)
    task.regression, task.multi_label = False, False
    before = rewrites()
    losses, _ = _ours(tmp_path / "ours", model, task,
                      _classifier_batches(np.random.default_rng(2), 3), 1e-2)
    assert seen and all(r.meta_optimizer_iterations == one for r in seen)
    assert all(not r.disable_meta_optimizer and r.remapping != r.OFF and
               r.arithmetic_optimization != r.OFF and r.constant_folding != r.OFF
               for r in seen)
    assert all(r.layout_optimizer == r.OFF and r.memory_optimization == r.NO_MEM_OPT
               for r in seen)
    assert rewrites() == before and before.meta_optimizer_iterations != one
    assert before.layout_optimizer != before.OFF
    assert np.all(np.isfinite(losses))


def test_prediction_runs_one_grappler_iteration_on_cpu_too():
    """`predict` (evaluation, prediction) traces and calls its step with the training
    step's Grappler options on a CPU-only host, and leaves the thread's own as they were."""
    import keras
    from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
    from tensorflow.python.eager import context as eager_context

    from training.loop import predict

    def rewrites():
        options = eager_context.context().function_call_options
        return config_pb2.ConfigProto.FromString(
            options.config_proto_serialized).graph_options.rewrite_options

    seen = []

    class Recording(keras.Model):
        def call(self, inputs, training=None):
            seen.append(rewrites())
            return {"logits": tf.cast(inputs["input_ids"], tf.float32) * 2.0}

    before = rewrites()
    data = tf.data.Dataset.from_tensor_slices({
        "input_ids": np.arange(12, dtype=np.int32).reshape(4, 3),
        "input_mask": np.ones((4, 3), np.int32),
        "segment_ids": np.zeros((4, 3), np.int32)}).batch(2)
    got = predict(Recording(), data, ["logits"])
    np.testing.assert_array_equal(got["logits"], np.arange(12).reshape(4, 3) * 2.0)
    one = rewriter_config_pb2.RewriterConfig.ONE
    assert seen and all(r.meta_optimizer_iterations == one and r.layout_optimizer == r.OFF
                        and r.constant_folding != r.OFF for r in seen)
    assert rewrites() == before and before.meta_optimizer_iterations != one


def _enclosing_functions():
    """How many function graphs enclose the code running now (0: eager)."""
    graph, depth = tf.compat.v1.get_default_graph(), 0
    while graph is not None and hasattr(graph, "outer_graph"):  # a FuncGraph
        depth, graph = depth + 1, graph.outer_graph
    return depth


def test_the_training_step_is_traced_once_into_the_loop(tmp_path, monkeypatch):
    """The loop is a `tf.while_loop` written out, its sums started at zero under the
    names the task declares (`statistic_names`): AutoGraph neither rewrites it (0.2 s a
    run) nor stages a trial iteration of its body to learn the sums (0.3 s), and the
    step is traced once, straight into the loop's body: its loss sits two function
    graphs deep (the loop and its body), not inside functions of its own, each of which
    captured every variable again (0.4-0.5 s of a MiniLM trace). A task that declares
    no names, or the wrong ones, is refused in one line."""
    from tensorflow.python.autograph.impl import api as autograph_api
    from tensorflow.python.autograph.operators import control_flow

    trials, conversions = [], []
    staged = control_flow._try_handling_undefineds
    monkeypatch.setattr(control_flow, "_try_handling_undefineds",
                        lambda *args: trials.append(1) or staged(*args))
    converted = autograph_api.converted_call
    monkeypatch.setattr(autograph_api, "converted_call",
                        lambda f, *a, **k: conversions.append(f) or converted(f, *a, **k))
    config, _, checkpoint = _setup(tmp_path, ("classifier",))
    batches = _classifier_batches(np.random.default_rng(2), 3)
    outcomes = {}
    for declared in (("tokens",), None, ("tokens", "accuracy")):
        model = BertClassifier(config, 3, dropout_rate=0.0)
        load_checkpoint(model, checkpoint, strict=True)
        depths = []

        class Task(ClassificationTask):
            def statistic_names(self, declared=declared):
                return declared

            def loss(self, *args, depths=depths, **kwargs):
                depths.append(_enclosing_functions())
                return super().loss(*args, **kwargs)

        task = Task.__new__(Task)
        task.regression, task.multi_label = False, False
        try:
            losses, _ = _ours(tmp_path / str(len(outcomes)), model, task, batches, 1e-2)
            outcomes[declared] = depths
            assert np.all(np.isfinite(losses))
        except ValueError as e:
            outcomes[declared] = str(e)
    assert not trials and not conversions
    assert outcomes[("tokens",)] == [2]
    assert "statistic_names() must return" in outcomes[None]
    assert "returns the statistics ['tokens']; its statistic_names() says " \
        "['accuracy', 'tokens']" in outcomes[("tokens", "accuracy")]
