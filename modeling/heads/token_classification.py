"""Per-token classification head (named-entity recognition, tagging).

Pipeline position: fine-tuning and serving token tagging (`run_ner.py`).
"""

import keras

from modeling.layers.initializers import truncated_normal


@keras.saving.register_keras_serializable(package="bert")
class TokenClassificationHead(keras.layers.Layer):
    """Dropout then one dense layer to `num_labels` logits for every token.

    Args:
        num_labels: int. Number of tags.
        dropout_rate: float. Defaults to 0.1.
        initializer_range: float. Defaults to 0.02.

    Call arguments:
        sequence_output: float Tensor of shape [batch_size, seq_length, hidden_size].
        training: bool.

    Returns:
        float Tensor of logits, shape [batch_size, seq_length, num_labels].
    """

    def __init__(self, *, num_labels, dropout_rate=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_labels = num_labels
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        self.dropout = keras.layers.Dropout(dropout_rate, dtype=self.dtype_policy,
                                            name="dropout")
        self.dense = keras.layers.Dense(
            num_labels, kernel_initializer=truncated_normal(initializer_range),
            dtype=self.dtype_policy, name="output")

    def build(self, input_shape):
        self.dense.build(input_shape)
        self.built = True

    def call(self, sequence_output, training=None):
        return self.dense(self.dropout(sequence_output, training=training))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.num_labels,)

    def get_config(self):
        config = super().get_config()
        config.update({"num_labels": self.num_labels, "dropout_rate": self.dropout_rate,
                       "initializer_range": self.initializer_range})
        return config
