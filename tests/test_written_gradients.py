"""The layers whose backward pass is written out (layer norm, dropout, the GELUs) against
Keras's own layers and TensorFlow's automatic gradient of them: the same forward bits, the
same gradients, and a smaller training graph."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from modeling.activations import get_activation, get_training_activation
from modeling.layers import TransformerBlock
from modeling.layers.dropout import Dropout, drop
from modeling.layers.layer_norm import LayerNormalization, layer_norm

TOLERANCE = {"float64": 1e-12, "float32": 2e-5, "mixed_bfloat16": 2e-5}


def _pair(cls, keras_cls, policy, **kwargs):
    ours, theirs = cls(dtype=policy, **kwargs), keras_cls(dtype=policy, **kwargs)
    return ours, theirs


@pytest.mark.parametrize("policy", ["float64", "float32", "mixed_bfloat16"])
@pytest.mark.parametrize("shape", [(7, 12), (3, 5, 12)])
def test_layer_norm_matches_keras_forward_and_gradient(policy, shape):
    rng = np.random.default_rng(0)
    ours, theirs = _pair(LayerNormalization, keras.layers.LayerNormalization, policy,
                         epsilon=1e-12)
    for layer in (ours, theirs):
        layer.build(shape)
    weights = [rng.normal(1.0, 0.3, 12), rng.normal(0.0, 0.3, 12)]
    for layer in (ours, theirs):
        layer.set_weights(weights)
    x = tf.constant(rng.normal(0.5, 2.0, shape), dtype=ours.compute_dtype)
    upstream = tf.constant(rng.normal(0.0, 1.0, shape), dtype=ours.compute_dtype)

    def forward_and_gradients(layer, training):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, training=training)
            loss = tf.reduce_sum(tf.cast(y, "float64") * tf.cast(upstream, "float64"))
        return y, tape.gradient(loss, [x] + layer.trainable_variables)

    y_ours, grads_ours = forward_and_gradients(ours, True)
    y_keras, grads_keras = forward_and_gradients(theirs, True)
    np.testing.assert_array_equal(y_ours.numpy(), y_keras.numpy())  # the same ops, bits
    for mine, keras_grad in zip(grads_ours, grads_keras):
        mine, keras_grad = (tf.cast(g, "float64").numpy() for g in (mine, keras_grad))
        scale = np.abs(keras_grad).max()
        np.testing.assert_allclose(mine, keras_grad, rtol=0,
                                   atol=TOLERANCE[policy] * scale)
    # Outside training it is Keras's call itself.
    np.testing.assert_array_equal(ours(x).numpy(), theirs(x).numpy())


def test_layer_norm_gradient_matches_finite_differences():
    """The closed form against the definition of a derivative, in float64."""
    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 1.5, (2, 6))
    gamma, beta = rng.normal(1.0, 0.3, 6), rng.normal(0.0, 0.3, 6)
    w = rng.normal(0.0, 1.0, (2, 6))

    def loss(x, gamma, beta):
        return float(tf.reduce_sum(layer_norm(tf.constant(x), tf.constant(gamma),
                                              tf.constant(beta), 1e-12) * w))

    args = [tf.constant(a) for a in (x, gamma, beta)]
    with tf.GradientTape() as tape:
        tape.watch(args)
        y = tf.reduce_sum(layer_norm(*args, 1e-12) * w)
    analytic = [g.numpy() for g in tape.gradient(y, args)]
    h = 1e-6
    values = [x, gamma, beta]
    for which, grad in enumerate(analytic):
        numeric = np.zeros_like(values[which])
        for index in np.ndindex(values[which].shape):
            plus = [v.copy() for v in values]
            minus = [v.copy() for v in values]
            plus[which][index] += h
            minus[which][index] -= h
            numeric[index] = (loss(*plus) - loss(*minus)) / (2 * h)
        np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_dropout_draws_keras_masks_and_passes_their_gradient(policy):
    rng = np.random.default_rng(2)
    ours, theirs = _pair(Dropout, keras.layers.Dropout, policy, rate=0.3, seed=11)
    x = tf.constant(rng.normal(0.0, 1.0, (4, 9, 16)), dtype=ours.compute_dtype)
    for _ in range(2):  # the second call: the seed streams advanced alike
        results = []
        for layer in (ours, theirs):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = layer(x, training=True)
                loss = tf.reduce_sum(tf.cast(y, "float32") * tf.range(16, dtype="float32"))
            results.append((y.numpy(), tape.gradient(loss, x).numpy()))
        (y_ours, g_ours), (y_keras, g_keras) = results
        np.testing.assert_array_equal(y_ours, y_keras)
        np.testing.assert_array_equal(g_ours, g_keras)
        assert 0.2 < np.mean(y_ours == 0) < 0.4
    np.testing.assert_array_equal(ours(x, training=False).numpy(), x.numpy())


def test_seeded_drop_is_tensorflows_stateless_dropout():
    x = tf.constant(np.random.default_rng(3).normal(size=(5, 7)), dtype="float32")
    seed = tf.constant([4, 2], dtype="int32")
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        ours = drop(x, 0.25, seed)
        theirs = tf.nn.experimental.stateless_dropout(x, rate=0.25, seed=seed)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(tape.gradient(ours, x).numpy(),
                                  tape.gradient(theirs, x).numpy())


_DROPOUTS = (("attention_dropout",), ("output_dropout",), ("self_attention", "dropout"))


def _sublayer(block, path):
    for name in path[:-1]:
        block = getattr(block, name)
    return block, path[-1]


@pytest.mark.parametrize("policy", ["float64", "float32", "bfloat16"])
@pytest.mark.parametrize("name", ["gelu", "gelu_exact"])
def test_training_gelus_are_the_gelus_with_their_gradient(name, policy):
    x = tf.constant(np.linspace(-6.0, 6.0, 241), dtype=policy)
    results = []
    for activation in (get_training_activation(name), get_activation(name)):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = activation(x)
        results.append((y.numpy(), tape.gradient(y, x).numpy()))
    (y_written, g_written), (y_auto, g_auto) = results
    np.testing.assert_array_equal(y_written, y_auto)
    tolerance = {"float64": 1e-14, "float32": 1e-6, "bfloat16": 2e-2}[policy]
    np.testing.assert_allclose(g_written.astype("float64"), g_auto.astype("float64"),
                               rtol=0, atol=tolerance * 1.2)  # the derivative peaks at 1.13


def _keras_layers_instead(block):
    """The (unbuilt) block's layer norms and dropouts replaced by Keras's own, its
    activation differentiated by TensorFlow: the block as it was before its backward
    passes were written out."""
    block._training_activation = block._activation
    for name in ("attention_layer_norm", "output_layer_norm"):
        setattr(block, name, keras.layers.LayerNormalization(
            epsilon=getattr(block, name).epsilon, name=name))
    for path in _DROPOUTS:
        owner, name = _sublayer(block, path)
        setattr(owner, name, keras.layers.Dropout(getattr(owner, name).rate, name=name))


def test_a_blocks_training_gradient_is_keras_s_with_fewer_ops():
    rng = np.random.default_rng(4)
    x = tf.constant(rng.normal(size=(2, 6, 16)), dtype="float32")
    mask = tf.zeros((2, 1, 1, 6))
    upstream = tf.constant(rng.normal(size=(2, 6, 16)), dtype="float32")
    blocks = []
    for written in (True, False):
        block = TransformerBlock(hidden_size=16, num_attention_heads=2, intermediate_size=24,
                                 hidden_act="gelu", hidden_dropout_prob=0.2,
                                 attention_probs_dropout_prob=0.2, name="b")
        if not written:
            _keras_layers_instead(block)
        block.build(x.shape)
        blocks.append(block)
    values = {v.path: v.numpy() for v in blocks[0].trainable_variables}
    assert len(values) == len(blocks[1].trainable_variables) == 16
    for variable in blocks[1].trainable_variables:
        variable.assign(values[variable.path])
    for path in _DROPOUTS:  # the same seed streams
        (mine, name), (theirs, _) = _sublayer(blocks[0], path), _sublayer(blocks[1], path)
        getattr(theirs, name).seed_generator.state.assign(
            getattr(mine, name).seed_generator.state)

    def step(block, x, mask, upstream):
        with tf.GradientTape() as tape:
            y = block(x, mask, training=True)
            loss = tf.reduce_sum(y * upstream)
        variables = block.trainable_variables
        return dict(zip([v.path for v in variables], tape.gradient(loss, variables)))

    # Batch and length unknown when traced, as in the training step.
    specs = [tf.TensorSpec([None, None, 16]), tf.TensorSpec([None, 1, 1, None]),
             tf.TensorSpec([None, None, 16])]
    results = []
    for block in blocks:
        function = tf.function(step)
        graph = function.get_concrete_function(block, *specs).graph
        results.append((len(graph.get_operations()), function(block, x, mask, upstream)))
    (ops_written, grads_written), (ops_keras, grads_keras) = results
    assert sorted(grads_written) == sorted(grads_keras)
    scale = max(float(tf.reduce_max(tf.abs(g))) for g in grads_keras.values())
    for path, theirs in grads_keras.items():  # (the key bias's are 0 + rounding)
        np.testing.assert_allclose(grads_written[path].numpy(), theirs.numpy(), rtol=1e-4,
                                   atol=1e-6 * scale, err_msg=path)
    # 434 ops against 602 when written (TensorFlow 2.21, 0.72x); without the layer norms'
    # backward 562, without the dropouts' 464, without the GELU's 444 (0.74x).
    assert ops_written < 0.73 * ops_keras, (ops_written, ops_keras)


def test_the_masked_lm_heads_training_gradient_is_tensorflows():
    """In training the head's GELU and layer norm take their written backward passes;
    called outside training, Keras's own: the same logits, the same gradients."""
    from modeling.heads import MaskedLMHead
    rng = np.random.default_rng(6)
    head = MaskedLMHead(vocab_size=30, hidden_size=16, hidden_act="gelu")
    head.build()
    sequence = tf.constant(rng.normal(size=(2, 7, 16)), dtype="float32")
    positions = tf.constant([[1, 3, 6], [0, 2, 2]])
    table = tf.constant(rng.normal(size=(30, 16)), dtype="float32")
    upstream = tf.constant(rng.normal(size=(2, 3, 30)), dtype="float32")
    results = []
    for training in (True, False):
        with tf.GradientTape() as tape:
            tape.watch([sequence, table])
            logits = head(sequence, positions, table, training=training)
            loss = tf.reduce_sum(logits * upstream)
        results.append((logits.numpy(), tape.gradient(
            loss, [sequence, table] + head.trainable_variables)))
    (logits_written, grads_written), (logits_keras, grads_keras) = results
    np.testing.assert_array_equal(logits_written, logits_keras)
    for mine, theirs in zip(grads_written, grads_keras):  # float32 rounding of the sums
        scale = float(tf.reduce_max(tf.abs(theirs)))
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-4, atol=2e-6 * scale)
    # ... and the training graph is the shorter one (the written backward passes used).

    def gradient_ops(training):
        @tf.function(input_signature=[tf.TensorSpec([None, None, 16]),
                                      tf.TensorSpec([None, None], tf.int32)])
        def gradients(sequence, positions):
            with tf.GradientTape() as tape:
                tape.watch(sequence)
                loss = tf.reduce_sum(head(sequence, positions, table, training=training))
            return tape.gradient(loss, [sequence] + head.trainable_variables)
        return len(gradients.get_concrete_function().graph.get_operations())

    # 344 ops against 418 when written (TensorFlow 2.21, 0.82x).
    assert gradient_ops(True) < 0.85 * gradient_ops(False), (gradient_ops(True),
                                                             gradient_ops(False))
