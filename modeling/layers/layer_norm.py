"""Layer normalisation over the last axis whose backward pass is written out.

Pipeline position: every LayerNorm of the encoder and its heads (embeddings, each
Transformer block, the masked-LM transform, a pre-LayerNorm encoder's last norm).

The forward pass computes exactly Keras's `LayerNormalization` (the same ops, so the same
bits: `inv = rsqrt(var + eps) * gamma; x * inv + (beta - mean * inv)`, in float32 at least).
TensorFlow's automatic gradient of that formula builds about 70 ops per layer norm (the
moments' reductions and broadcasts over a shape only known at run time: `Shape`,
`BroadcastGradientArgs`, `Sum`, `Reshape` for every product), which the training step pays
at every trace and in Grappler's graph. The closed form of the same gradient,

    x_hat = (x - mean) * rstd,   g = dy * gamma,
    dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)),
    dgamma = sum(dy * x_hat),    dbeta = sum(dy)

(sums over every axis but the last, means over the last), is 13 ops and equal up to
float32 rounding. It is used when the layer is called with `training=True`: inference
and exports trace Keras's own call, unchanged.
"""

import keras
import tensorflow as tf
from keras import ops


def layer_norm(x, gamma, beta, epsilon):
    """Normalises `x` (float32 or float64) over its last axis, scaled by `gamma` and
    shifted by `beta` (both [H], `x`'s dtype); its gradient is the closed form above."""
    leading_axes = list(range(len(x.shape) - 1))

    @tf.custom_gradient
    def normalise(x, gamma, beta):
        mean = tf.reduce_mean(x, [-1], keepdims=True)
        variance = tf.reduce_mean(tf.math.squared_difference(x, mean), [-1], keepdims=True)
        rstd = tf.math.rsqrt(variance + epsilon)
        inv = rstd * gamma
        outputs = x * inv + (-mean * inv + beta)

        def gradient(dy):
            x_hat = (x - mean) * rstd
            g = dy * gamma
            dx = rstd * (g - tf.reduce_mean(g, [-1], keepdims=True)
                         - x_hat * tf.reduce_mean(g * x_hat, [-1], keepdims=True))
            return dx, tf.reduce_sum(dy * x_hat, leading_axes), tf.reduce_sum(dy, leading_axes)

        return outputs, gradient

    return normalise(x, gamma, beta)


@keras.saving.register_keras_serializable(package="bert")
class LayerNormalization(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` (the same weights, names and config) whose
    gradient in training is `layer_norm`'s closed form. Other axes, RMS scaling or a layer
    without both `gamma` and `beta` fall back to Keras's call."""

    def call(self, inputs, training=None):
        rank = len(inputs.shape)
        if (not training or self.rms_scaling or not (self.center and self.scale)
                or list(self.axis) not in ([-1], [rank - 1])):
            return super().call(inputs)
        dtype = "float64" if inputs.dtype == tf.float64 else "float32"
        outputs = layer_norm(ops.cast(inputs, dtype), ops.cast(self.gamma, dtype),
                             ops.cast(self.beta, dtype), self.epsilon)
        return ops.cast(outputs, self.compute_dtype)
