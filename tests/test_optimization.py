"""The learning-rate schedule, the weight-decay exclusions and the optimizers' updates,
checked value by value against hand-computed numbers and NumPy transcriptions of the
original's formulas (original_release.md §2.4) and of LAMB (You et al., 2019)."""

import keras
import numpy as np
import pytest

from modeling import BertConfig, BertPretrainer
from training.optimizers import (
    AdamWeightDecay,
    Lamb,
    canonical_names,
    create_optimizer,
    decay_excluded,
)
from training.schedules import WarmupLinearDecay


def test_schedule_value_by_value():
    schedule = WarmupLinearDecay(1.0, num_train_steps=10, num_warmup_steps=4)
    got = [float(schedule(step)) for step in range(13)]
    # Warm-up 0, 1/4, 2/4, 3/4; then the decay line from step 0: 1 - g/10, clamped at 0.
    want = [0.0, 0.25, 0.5, 0.75, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0, 0.0, 0.0]
    np.testing.assert_allclose(got, want, atol=1e-7)


def test_a_resized_schedule_decays_to_its_new_end_in_a_step_already_traced():
    import tensorflow as tf
    schedule = WarmupLinearDecay(1.0, num_train_steps=10, num_warmup_steps=4)
    rate = tf.function(lambda step: schedule(step))
    assert float(rate(tf.constant(6))) == pytest.approx(0.4)
    schedule.resize(20)  # warm-up as before; then 1 - g/20
    got = [float(rate(tf.constant(step))) for step in (2, 4, 6, 19, 20, 25)]
    np.testing.assert_allclose(got, [0.5, 0.8, 0.7, 0.05, 0.0, 0.0], atol=1e-7)
    assert schedule.get_config()["num_train_steps"] == 20
    with pytest.raises(ValueError, match="stable steps"):
        WarmupLinearDecay(1.0, num_train_steps=10, num_stable_steps=5).resize(5)


def test_schedule_without_warmup_starts_at_peak():
    schedule = WarmupLinearDecay(2e-5, num_train_steps=4, num_warmup_steps=0)
    np.testing.assert_allclose([float(schedule(s)) for s in range(5)],
                               [2e-5, 1.5e-5, 1e-5, 0.5e-5, 0.0], rtol=1e-6, atol=1e-12)


def test_schedule_with_a_stable_phase_holds_the_peak_then_decays_to_zero():
    """Warm-up, stable, decay: warm-up 0, 1/2; the peak to step 5; then linear to 0 at 10."""
    schedule = WarmupLinearDecay(1.0, num_train_steps=10, num_warmup_steps=2,
                                 num_stable_steps=5)
    want = [0.0, 0.5, 1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2, 0.0, 0.0, 0.0]
    np.testing.assert_allclose([float(schedule(s)) for s in range(13)], want, atol=1e-7)
    with pytest.raises(ValueError, match="num_stable_steps"):
        WarmupLinearDecay(1.0, num_train_steps=10, num_stable_steps=10)


def test_lr_stable_share_reaches_the_schedule(tiny_config_dict):
    """--lr_stable_share=0.5 of 100 steps: the peak until step 50, half of it at step 75;
    out of range, refused naming the flag."""
    from training.config import TrainerConfig
    from training.runner import make_optimizer
    model = BertPretrainer(BertConfig(**tiny_config_dict))
    trainer = TrainerConfig(output_dir="unused", learning_rate=1e-3, lr_stable_share=0.5)
    schedule = make_optimizer(model, trainer, num_train_steps=100,
                              num_warmup_steps=10)._learning_rate
    np.testing.assert_allclose([float(schedule(s)) for s in (5, 40, 50, 75, 100)],
                               [5e-4, 1e-3, 1e-3, 5e-4, 0.0], rtol=1e-6, atol=1e-12)
    with pytest.raises(ValueError, match=r"--lr_stable_share=1\.0: must be at least 0"):
        TrainerConfig(output_dir="unused", lr_stable_share=1.0)


def test_decay_exclusions_are_the_originals(tiny_config_dict):
    model = BertPretrainer(BertConfig(**tiny_config_dict))
    excluded = {name for _, name in decay_excluded(model)}
    want = {"bert/embeddings/LayerNorm/beta", "bert/embeddings/LayerNorm/gamma",
            "bert/pooler/dense/bias", "cls/predictions/output_bias",
            "cls/predictions/transform/dense/bias",
            "cls/predictions/transform/LayerNorm/beta",
            "cls/predictions/transform/LayerNorm/gamma", "cls/seq_relationship/output_bias"}
    for layer in range(tiny_config_dict["num_hidden_layers"]):
        p = f"bert/encoder/layer_{layer}/"
        want |= {p + f"attention/self/{n}/bias" for n in ("query", "key", "value")}
        want |= {p + "attention/output/dense/bias", p + "intermediate/dense/bias",
                 p + "output/dense/bias"}
        want |= {p + f"{s}/LayerNorm/{v}" for s in ("attention/output", "output")
                 for v in ("beta", "gamma")}
    assert excluded == want
    # Everything else is decayed: embeddings tables, kernels, NSP output_weights.
    decayed = {name for _, name in canonical_names(model) if name not in excluded}
    assert "bert/embeddings/word_embeddings" in decayed
    assert "cls/seq_relationship/output_weights" in decayed
    assert all(n.endswith(("kernel", "embeddings", "output_weights")) for n in decayed)


def _run(optimizer, values, grads_per_step, excluded=()):
    variables = [keras.Variable(v, name=f"w{i}") for i, v in enumerate(values)]
    optimizer.exclude_variables([variables[i] for i in excluded])
    for grads in grads_per_step:
        optimizer.apply([np.asarray(g, np.float32) for g in grads], variables)
    return [v.numpy() for v in variables]


def test_adam_weight_decay_is_the_originals_update():
    rng = np.random.default_rng(0)
    values = [rng.normal(size=(3, 2)).astype(np.float32), rng.normal(size=(2,)).astype(
        np.float32)]
    steps = [[rng.normal(size=v.shape) for v in values] for _ in range(3)]
    lr, decay = 0.1, 0.01
    got = _run(AdamWeightDecay(learning_rate=lr, weight_decay_rate=decay), values, steps,
               excluded=[1])
    # NumPy transcription of AdamWeightDecayOptimizer.apply_gradients.
    params = [v.astype(np.float64) for v in values]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for grads in steps:
        for i, g in enumerate(grads):
            m[i] = 0.9 * m[i] + 0.1 * g
            v[i] = 0.999 * v[i] + 0.001 * g * g
            update = m[i] / (np.sqrt(v[i]) + 1e-6)
            if i != 1:
                update += decay * params[i]
            params[i] = params[i] - lr * update
    for a, b in zip(got, params):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # No bias correction: after one step of gradient g the move is lr*0.1g/(sqrt(.001)|g|)
    # = 3.16*lr, not lr as bias-corrected Adam would give.
    moved = _run(AdamWeightDecay(learning_rate=0.01, weight_decay_rate=0.0),
                 [np.zeros(1, np.float32)], [[np.ones(1)]])[0]
    np.testing.assert_allclose(moved, [-0.01 * 0.1 / np.sqrt(0.001)], rtol=1e-4)


def test_lamb_update():
    rng = np.random.default_rng(1)
    values = [rng.normal(size=(4,)).astype(np.float32), rng.normal(size=(4,)).astype(
        np.float32)]
    steps = [[rng.normal(size=4) for _ in values] for _ in range(2)]
    lr, decay = 0.05, 0.01
    got = _run(Lamb(learning_rate=lr, weight_decay_rate=decay), values, steps, excluded=[1])
    params = [v.astype(np.float64) for v in values]
    m = [np.zeros(4), np.zeros(4)]
    v = [np.zeros(4), np.zeros(4)]
    for t, grads in enumerate(steps, start=1):
        for i, g in enumerate(grads):
            m[i] = 0.9 * m[i] + 0.1 * g
            v[i] = 0.999 * v[i] + 0.001 * g * g
            r = (m[i] / (1 - 0.9 ** t)) / (np.sqrt(v[i] / (1 - 0.999 ** t)) + 1e-6)
            if i == 0:  # decayed and layer-adapted; variable 1 is excluded from both
                r = r + decay * params[i]
                r = r * np.linalg.norm(params[i]) / np.linalg.norm(r)
            params[i] = params[i] - lr * r
    for a, b in zip(got, params):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_global_norm_clipping_over_all_variables():
    # Gradients (3, 4) and (12,): global norm 13 -> scaled by 1/13 before Adam; with
    # m and v both from the clipped gradient, the first update is sign-like, so check the
    # moments instead.
    opt = AdamWeightDecay(learning_rate=0.0, weight_decay_rate=0.0, global_clipnorm=1.0)
    a, b = keras.Variable(np.zeros(2, np.float32)), keras.Variable(np.zeros(1, np.float32))
    opt.apply([np.array([3.0, 4.0], np.float32), np.array([12.0], np.float32)], [a, b])
    np.testing.assert_allclose(opt._m[0].numpy(), 0.1 * np.array([3, 4]) / 13, rtol=1e-5)
    np.testing.assert_allclose(opt._m[1].numpy(), 0.1 * np.array([12]) / 13, rtol=1e-5)


@pytest.mark.parametrize("name", ["adamw_original", "adamw", "lamb"])
def test_create_optimizer_applies_to_a_model(name, tiny_config_dict):
    model = BertPretrainer(BertConfig(**tiny_config_dict))
    opt = create_optimizer(model, 1e-3, 10, 2, optimizer=name)
    before = [v.numpy().copy() for v in model.trainable_variables]
    grads = [np.ones(v.shape, np.float32) for v in model.trainable_variables]
    opt.apply(grads, model.trainable_variables)  # step 0: lr 0 with warm-up
    opt.apply(grads, model.trainable_variables)
    after = [v.numpy() for v in model.trainable_variables]
    assert all(not np.array_equal(x, y) for x, y in zip(before, after))


def test_unknown_optimizer_is_named(tiny_config_dict):
    model = BertPretrainer(BertConfig(**tiny_config_dict))
    with pytest.raises(ValueError, match="--optimizer='sgd'"):
        create_optimizer(model, 1e-3, 10, 2, optimizer="sgd")


def test_on_one_device_each_variable_is_updated_by_one_fused_kernel():
    """The update above, on plain (not mirrored) variables, runs as TensorFlow's fused
    Adam kernel, one op per variable, all given one learning-rate tensor, and gives the
    unfused computation's values: in two traced graphs and eagerly, with the learning
    rate changed between steps."""
    import tensorflow as tf

    values = [np.full((4, 3), 0.5, np.float32), np.full((3,), -0.25, np.float32)]
    grads = [np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3),
             np.asarray([0.1, -0.2, 0.3], np.float32)]
    results = {}
    for fused in (True, False):
        optimizer = AdamWeightDecay(learning_rate=0.05, weight_decay_rate=0.01)
        variables = [keras.Variable(v) for v in values]
        optimizer.build(variables)
        if not fused:
            optimizer._fused_update = lambda *args: False

        def apply():
            return optimizer.apply([tf.constant(g) for g in grads], variables)

        first, second = (tf.function(apply, autograph=False) for _ in range(2))
        graph = first.get_concrete_function().graph
        kernels = [op for op in graph.get_operations() if op.type == "ResourceApplyAdam"]
        assert len(kernels) == (2 if fused else 0)
        assert len({op.inputs[5].ref() for op in kernels}) <= 1  # one lr for all
        for step, learning_rate in [(first, 0.05), (second, 0.05), (apply, 0.02),
                                    (first, 0.03), (second, 0.01), (apply, 0.04)]:
            optimizer.learning_rate = learning_rate
            step()
        results[fused] = [v.numpy() for v in variables]
    for a, b in zip(results[True], results[False]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["adamw_original", "adamw"])
def test_adam_beta2_setting_reaches_the_update(name, tiny_config_dict):
    """--adam_beta2 sets the second-moment decay: after one step of gradient 1 at peak rate
    lr (no warm-up), the original's Adam (no bias correction) moves a weight by
    lr * 0.1 / sqrt(1 - beta2); bias-corrected Adam by lr whatever beta2."""
    from training.config import TrainerConfig
    from training.runner import make_optimizer
    model = BertPretrainer(BertConfig(**tiny_config_dict))
    trainer = TrainerConfig(output_dir="unused", learning_rate=0.01, optimizer=name,
                            weight_decay_rate=0.0, adam_beta2=0.98)
    optimizer = make_optimizer(model, trainer, num_train_steps=10**6, num_warmup_steps=0)
    variable = model.trainable_variables[0]
    before = variable.numpy().copy()
    grads = [np.ones(v.shape, np.float32) if v is variable else np.zeros(v.shape, np.float32)
             for v in model.trainable_variables]
    optimizer.apply(grads, model.trainable_variables)
    moved = before - variable.numpy()
    want = 0.01 * 0.1 / np.sqrt(0.02) if name == "adamw_original" else 0.01
    np.testing.assert_allclose(moved, np.full_like(moved, want), rtol=1e-4)


def test_adam_beta2_out_of_range_names_the_flag():
    from training.config import TrainerConfig
    with pytest.raises(ValueError, match=r"--adam_beta2=1\.0: must be at least 0 and below 1"):
        TrainerConfig(output_dir="unused", adam_beta2=1.0)
