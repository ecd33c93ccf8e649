"""Dropout whose backward pass is written out: the incoming gradient times the mask.

Pipeline position: every dropout of the encoder and its heads (embeddings, attention
probabilities, each Transformer block's two sums, the classifier's input), in training.

The forward pass draws the same mask as Keras's `Dropout` (TensorFlow's stateless
dropout: a uniform sample from the seed, kept where it is at least `rate`, the kept values
scaled by 1 / (1 - rate)) and gives the same bits. TensorFlow's automatic gradient of
that graph treats both products as broadcasts over a shape known only at run time (about
15 ops a dropout); the gradient is `dy * mask`, one op.
"""

import keras
import tensorflow as tf


def drop(x, rate, seed):
    """`x` with each element zeroed with probability `rate` (a float in (0, 1)) and the
    rest scaled by 1 / (1 - rate), the mask drawn from `seed` (int32 [2]) as
    `tf.nn.experimental.stateless_dropout(x, rate, seed)` draws it."""

    @tf.custom_gradient
    def apply_mask(x):
        keep = tf.random.stateless_uniform(tf.shape(x), seed, dtype=x.dtype) >= rate
        mask = tf.cast(keep, x.dtype) * tf.constant(1.0 / (1.0 - rate), x.dtype)
        return x * mask, lambda dy: dy * mask

    return apply_mask(x)


def keras_seed(seed_generator):
    """The next int32 seed of a Keras `SeedGenerator`, as Keras's own dropout draws it
    (its state advanced; an int64 state folded into int32 as Keras folds it)."""
    seed = seed_generator.next()
    if seed.dtype != tf.int32:
        seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
    return seed


@keras.saving.register_keras_serializable(package="bert")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout` (the same config and seed stream, the same masks) whose
    gradient in training is `drop`'s. A `noise_shape` or a rate of 1 falls back to
    Keras's call."""

    def call(self, inputs, training=False):
        if not training or not 0 < self.rate < 1 or self.noise_shape is not None:
            return super().call(inputs, training=training)
        return drop(inputs, self.rate, keras_seed(self.seed_generator))
