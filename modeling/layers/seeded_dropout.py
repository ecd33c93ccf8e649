"""Dropout whose mask is a function of a seed tensor: drawn again from the same seed, it
is the same mask.

Pipeline position: inside the Transformer blocks, when the encoder recomputes them in
the backward pass (gradient checkpointing, `BertEncoder.gradient_checkpointing`): the
recomputation must drop exactly what the forward pass dropped, or the gradients are
those of another network. Keras's `Dropout` draws from a stateful seed generator, which
a recomputation advances; here the seed is an input of the recomputed function, drawn
once per forward pass.
"""

import tensorflow as tf

from modeling.layers.dropout import drop


def dropout(layer, x, training, seed, stream):
    """`layer` (a `keras.layers.Dropout`) applied to `x`; with `seed` (int32 [2]) and
    `training`, its stateless counterpart, the mask drawn from `seed` folded with
    `stream` (an int naming which dropout of the block this is)."""
    if seed is None or not training or not layer.rate:
        return layer(x, training=training)
    return drop(x, layer.rate, tf.random.experimental.stateless_fold_in(seed, stream))
