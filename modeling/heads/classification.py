"""Classification / regression head: dropout and one dense layer to logits, on the pooled
[CLS] vector or on every token.

Pipeline position: next-sentence prediction in pre-training (2 classes, no dropout),
sequence classification or regression in fine-tuning (GLUE, XNLI), and per-token tagging
(named-entity recognition) on the sequence output.
"""

import keras

from modeling.layers.dropout import Dropout
from modeling.layers.initializers import truncated_normal


@keras.saving.register_keras_serializable(package="bert")
class ClassificationHead(keras.layers.Layer):
    """Dropout then one dense layer to `num_classes` logits (1 for regression).

    The original stores this layer's weights as `output_weights [num_classes, hidden]`
    (`[out, in]`); here the kernel is a Keras `[in, out]` kernel, and the checkpoint
    mapping transposes.

    Args:
        num_classes: int. Number of logits.
        dropout_rate: float. Dropout on the pooled vector: 0.1 in the original classifier,
            0 for next sentence prediction. Defaults to 0.1.
        initializer_range: float. Defaults to 0.02.

    Call arguments:
        features: float Tensor [batch_size, hidden_size] (the pooled output), or
            [batch_size, seq_length, hidden_size] (every token).
        training: bool.

    Returns:
        float Tensor of logits, the shape of `features` with `num_classes` last.
    """

    def __init__(self, *, num_classes, dropout_rate=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        self.dropout = Dropout(dropout_rate, dtype=self.dtype_policy, name="dropout")
        self.dense = keras.layers.Dense(
            num_classes, kernel_initializer=truncated_normal(initializer_range),
            dtype=self.dtype_policy, name="output")

    def build(self, input_shape):
        self.dense.build(input_shape)
        self.built = True

    def call(self, features, training=None):
        return self.dense(self.dropout(features, training=training))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.num_classes,)

    def get_config(self):
        config = super().get_config()
        config.update({"num_classes": self.num_classes, "dropout_rate": self.dropout_rate,
                       "initializer_range": self.initializer_range})
        return config
