"""The weight initialisers: the truncated normal BERT uses for every layer and head, and
the sinusoidal position table a model may start from instead."""

import keras
import numpy as np


def truncated_normal(stddev):
    """Truncated normal with `stddev` (values beyond 2 sigma re-drawn), as the original's
    `tf.truncated_normal_initializer(stddev=initializer_range)`; Keras's default kernel
    initialiser (glorot uniform) would not match it."""
    return keras.initializers.TruncatedNormal(stddev=stddev)


@keras.saving.register_keras_serializable(package="bert")
class Sinusoidal(keras.initializers.Initializer):
    """A [positions, width] table of Vaswani et al. (2017)'s position encodings: column 2i
    is sin(p / 10000^(2i / width)) and column 2i + 1 its cosine, scaled to an RMS of
    `rms`. The dot product of two rows depends only on the distance between their
    positions, which a learned table must otherwise discover."""

    def __init__(self, rms):
        self.rms = rms

    def __call__(self, shape, dtype=None):
        positions, width = shape
        angles = np.arange(positions)[:, None] / 10000.0 ** (
            np.arange(0, width, 2) / width)[None, :]
        table = np.zeros((positions, width), np.float64)
        table[:, 0::2] = np.sin(angles)
        table[:, 1::2] = np.cos(angles)[:, : width // 2]
        # Each sine-cosine pair has a mean square of 1/2 over the columns.
        return keras.ops.convert_to_tensor(table * self.rms * np.sqrt(2.0),
                                           dtype=dtype or "float32")

    def get_config(self):
        return {"rms": self.rms}


def sinusoidal(rms):
    """`Sinusoidal(rms)`: the position table a model may start from."""
    return Sinusoidal(rms)
