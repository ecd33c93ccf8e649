"""Activation functions of the Transformer feed-forward layer, by their config names.

Pipeline position: used by `modeling.layers` (feed-forward, masked-LM transform) and
validated by `BertConfig`. Names follow the original `get_activation`, plus "gelu_exact" for
models (such as Hugging Face's "gelu") trained with the erf form.

`get_training_activation` gives the same functions with the GELUs' backward passes written
out (the same forward ops and bits): TensorFlow's automatic gradient of either formula
builds about 20 ops per feed-forward layer (its constants' broadcasts over a shape known
only at run time), which the training step pays at every trace; the derivative is 6-8.
"""

import math

import tensorflow as tf
from keras import ops

_SQRT_2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_SCALE = 0.7978845608028654  # sqrt(2 / pi), as TensorFlow's gelu writes it
_CUBIC = 0.044715


def gelu(x):
    """GELU, tanh approximation, as the original release computes it (modeling.py at HEAD).

    `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`. Keras's own `gelu` defaults to
    the erf form, hence a function of ours that cannot be mistaken for it. Computed as
    `keras.ops.gelu(approximate=True)`, the same formula, which TensorFlow fuses into the
    dense layer's MatMul + BiasAdd on CPU (the `ops.power(x, 3)` form was not fused).
    """
    return ops.gelu(x, approximate=True)


def gelu_exact(x):
    """GELU, erf form `0.5 * x * (1 + erf(x / sqrt(2)))`: the original's Oct-2018 code."""
    return 0.5 * x * (1.0 + ops.erf(x / math.sqrt(2.0)))


@tf.custom_gradient
def _gelu_written(x):
    """`gelu` (the same ops as `tf.nn.gelu(approximate=True)`), its derivative
    0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2), t = tanh(u)."""
    cubic = tf.cast(_CUBIC, x.dtype)
    t = tf.math.tanh(_TANH_SCALE * (x + cubic * tf.math.pow(x, 3)))

    def gradient(dy):
        du = _TANH_SCALE * (1.0 + 3.0 * cubic * tf.math.square(x))
        return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - tf.math.square(t)) * du)

    return 0.5 * x * (1.0 + t), gradient


@tf.custom_gradient
def _gelu_exact_written(x):
    """`gelu_exact` (the same ops), its derivative Phi(x) + x phi(x)."""
    t = 1.0 + tf.math.erf(x / _SQRT_2)

    def gradient(dy):
        return dy * (0.5 * t + x * tf.math.exp(-0.5 * tf.math.square(x)) * _INV_SQRT_2PI)

    return 0.5 * x * t, gradient


def swish(x):
    return x * ops.sigmoid(x)


_ACTIVATIONS = {
    "gelu": gelu,
    "gelu_exact": gelu_exact,
    "relu": ops.relu,
    "tanh": ops.tanh,
    "swish": swish,
    "linear": None,
}
SUPPORTED_ACTIVATIONS = frozenset(_ACTIVATIONS)
_WRITTEN_GRADIENTS = {"gelu": _gelu_written, "gelu_exact": _gelu_exact_written}


def get_activation(name):
    """Maps an activation name to a function (None for "linear").

    Raises:
        ValueError: for an unknown name, listing the known ones.
    """
    if name in (None, ""):
        return None
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"Unsupported activation '{name}'. Use one of: "
                         f"{', '.join(sorted(_ACTIVATIONS))}.") from None


def get_training_activation(name):
    """`get_activation(name)` for a training step: the same outputs, with the backward pass
    written out where TensorFlow's automatic one is long (the GELUs)."""
    return _WRITTEN_GRADIENTS.get(name) or get_activation(name)
