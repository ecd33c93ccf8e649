"""The one weight initialiser BERT uses, shared by every layer and head."""

import keras


def truncated_normal(stddev):
    """Truncated normal with `stddev` (values beyond 2 sigma re-drawn), as the original's
    `tf.truncated_normal_initializer(stddev=initializer_range)`; Keras's default kernel
    initialiser (glorot uniform) would not match it."""
    return keras.initializers.TruncatedNormal(stddev=stddev)
