"""Span head: start and end logits for every token (SQuAD).

Pipeline position: fine-tuning and serving question answering (`run_squad.py`).
"""

import keras

from modeling.layers.initializers import truncated_normal


@keras.saving.register_keras_serializable(package="bert")
class SpanLabelingHead(keras.layers.Layer):
    """One dense layer to 2 logits per token, split into start and end.

    As the original `cls/squad` head: no dropout, no masking of padding or question
    positions (the prediction code filters those).

    Args:
        initializer_range: float. Defaults to 0.02.

    Call arguments:
        sequence_output: float Tensor of shape [batch_size, seq_length, hidden_size].

    Returns:
        tuple (start_logits, end_logits), each float [batch_size, seq_length].
    """

    def __init__(self, *, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(2, kernel_initializer=truncated_normal(
            initializer_range), dtype=self.dtype_policy, name="output")

    def build(self, input_shape):
        self.dense.build(input_shape)
        self.built = True

    def call(self, sequence_output):
        logits = self.dense(sequence_output)  # [B, S, 2]
        return logits[:, :, 0], logits[:, :, 1]

    def get_config(self):
        config = super().get_config()
        config.update({"initializer_range": self.initializer_range})
        return config
