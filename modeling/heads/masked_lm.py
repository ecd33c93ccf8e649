"""Masked-LM head: transform the masked positions and score them against the vocabulary.

Pipeline position: pre-training (`BertPretrainer`), and predicting masked words.
"""

import keras
from keras import ops

from modeling.activations import get_activation, get_training_activation
from modeling.layers.embeddings import LAYER_NORM_EPSILON
from modeling.layers.initializers import truncated_normal
from modeling.layers.layer_norm import LayerNormalization


def gather_positions(sequence_output, positions):
    """Picks the vectors at `positions`.

    Args:
        sequence_output: float Tensor of shape [batch_size, seq_length, hidden_size].
        positions: int Tensor of shape [batch_size, num_positions].

    Returns:
        float Tensor of shape [batch_size, num_positions, hidden_size].
    """
    # expand_dims, not [:, :, None]: a strided slice with a new axis has no TF Lite
    # builtin kernel (the fill-mask export converts this head).
    index = ops.expand_dims(ops.cast(positions, "int32"), -1)
    return ops.take_along_axis(sequence_output, index, axis=1)


@keras.saving.register_keras_serializable(package="bert")
class MaskedLMHead(keras.layers.Layer):
    """The original's `cls/predictions`: dense + activation + LayerNorm, then logits.

    The output projection is tied to the encoder's word embeddings (passed at call time,
    so this layer holds no reference to another layer and serialises on its own); only the
    output bias belongs to the head.

    Args:
        vocab_size: int. Number of logits per position.
        hidden_size: int. Width of the transform.
        hidden_act: str. Transform activation. Defaults to "gelu".
        initializer_range: float. Defaults to 0.02.

    Call arguments:
        sequence_output: float Tensor of shape [batch_size, seq_length, hidden_size].
        masked_lm_positions: int Tensor of shape [batch_size, max_predictions_per_seq].
        embedding_table: float Tensor of shape [vocab_size, hidden_size].

    Returns:
        float Tensor of logits, shape [batch_size, max_predictions_per_seq, vocab_size].
    """

    def __init__(self, *, vocab_size, hidden_size, hidden_act="gelu", initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        # The activation is applied after the layer (the same ops): in training, its
        # backward pass written out (`modeling.activations.get_training_activation`).
        self.transform = keras.layers.Dense(
            hidden_size, kernel_initializer=truncated_normal(initializer_range),
            dtype=self.dtype_policy, name="transform")
        self._activation = get_activation(hidden_act)
        self._training_activation = get_training_activation(hidden_act)
        self.transform_layer_norm = LayerNormalization(
            epsilon=LAYER_NORM_EPSILON, dtype=self.dtype_policy, name="transform_layer_norm")

    def build(self, input_shape=None):
        self.transform.build((None, None, self.hidden_size))
        self.transform_layer_norm.build((None, None, self.hidden_size))
        self.output_bias = self.add_weight(shape=(self.vocab_size,), initializer="zeros",
                                           name="output_bias")
        self.built = True

    def call(self, sequence_output, masked_lm_positions, embedding_table, training=None):
        x = self.transform(gather_positions(sequence_output, masked_lm_positions))
        activation = self._training_activation if training else self._activation
        x = self.transform_layer_norm(activation(x) if activation else x)
        table = ops.cast(embedding_table, x.dtype)
        # One [B*P, H] x [H, V] MatMul (the transpose folds into it). An einsum over
        # [B, P, H] becomes a broadcast BatchMatMul whose table gradient tiles the
        # table per sequence and sums it back: 1.4x the head's time in a training step.
        shape = ops.shape(x)
        logits = ops.matmul(ops.reshape(x, (-1, self.hidden_size)), ops.transpose(table))
        logits = logits + ops.cast(self.output_bias, logits.dtype)
        return ops.reshape(logits, (shape[0], shape[1], self.vocab_size))

    def get_config(self):
        config = super().get_config()
        config.update({
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "hidden_act": self.hidden_act,
            "initializer_range": self.initializer_range,
        })
        return config
