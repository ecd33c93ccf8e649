"""The weight initialisers: the truncated normal BERT uses for every layer and head (whose
draws a model about to be filled from a checkpoint puts off: `deferred_draws`), and the
sinusoidal position table a model may start from instead."""

import contextlib
import threading

import keras
import numpy as np
import tensorflow as tf

# In `deferred_draws`: the truncated-normal calls made while one variable is created.
_creating = threading.local()


@keras.saving.register_keras_serializable(package="bert")
class TruncatedNormal(keras.initializers.TruncatedNormal):
    """Keras's truncated normal (the same values), whose draw can be put off: while a
    variable is created in `deferred_draws`, it gives zeros and leaves the draw to
    `DeferredDraws.draw`. Its values depend on its seed alone, fixed when it is made, so
    a later draw gives what the first would have."""

    def __call__(self, shape, dtype=None):
        calls = getattr(_creating, "calls", None)
        if calls is None:
            return super().__call__(shape, dtype)
        calls.append((self, tuple(shape), dtype))
        return keras.ops.zeros(shape, dtype)


def truncated_normal(stddev):
    """Truncated normal with `stddev` (values beyond 2 sigma re-drawn), as the original's
    `tf.truncated_normal_initializer(stddev=initializer_range)`; Keras's default kernel
    initialiser (glorot uniform) would not match it."""
    return TruncatedNormal(stddev=stddev)


class DeferredDraws:
    """The truncated-normal draws put off while a model was built (`deferred_draws`)."""

    def __init__(self):
        self._pending = []  # (tf.Variable, (initializer, shape, dtype))

    def record(self, variable, call):
        self._pending.append((variable, call))

    def draw(self, filled=()):
        """Draws every weight put off but those in `filled` (Keras variables given their
        values another way, e.g. by a checkpoint): the values building the model without
        `deferred_draws` would have given them."""
        skip = {id(v.value) for v in filled}
        for variable, (initializer, shape, dtype) in self._pending:
            if id(variable) not in skip:
                variable.assign(initializer(shape, dtype))
        self._pending = []


@contextlib.contextmanager
def deferred_draws(enabled=True):
    """A scope in which the weights BERT's truncated normal would draw are created as
    zeros and their draws put off (drawing costs about 25 ns a weight on CPU: 2-3 s for
    BERT-Base, every time a model is built only to be filled from a checkpoint). Yields
    a `DeferredDraws`: call its `draw` once the checkpoint is loaded (`load_checkpoint(...,
    deferred=...)` does), or the weights it did not fill stay zero. `enabled=False`: a
    scope that puts off nothing."""
    draws = DeferredDraws()
    if not enabled:
        yield draws
        return

    def creator(next_creator, **kwargs):
        outer, _creating.calls = getattr(_creating, "calls", None), []
        try:
            variable = next_creator(**kwargs)
            calls = _creating.calls
        finally:
            _creating.calls = outer
        if calls:
            draws.record(variable, calls[-1])
        return variable

    with tf.variable_creator_scope(creator):
        yield draws


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
