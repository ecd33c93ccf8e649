"""Activation functions of the Transformer feed-forward layer, by their config names.

Pipeline position: used by `modeling.layers` (feed-forward, masked-LM transform) and
validated by `BertConfig`. Names follow the original `get_activation`, plus "gelu_exact" for
models (such as Hugging Face's "gelu") trained with the erf form.
"""

import math

from keras import ops


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
