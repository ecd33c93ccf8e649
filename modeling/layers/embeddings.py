"""Token + segment + position embeddings, LayerNorm and dropout: the encoder's input layer.

Pipeline position: first layer of `BertEncoder`; its `word_embeddings` table is also the
output projection of the masked-LM head (tied weights).
"""

import keras
import tensorflow as tf
from keras import ops

from modeling.layers.dropout import Dropout
from modeling.layers.initializers import sinusoidal, truncated_normal
from modeling.layers.layer_norm import LayerNormalization

LAYER_NORM_EPSILON = 1e-12  # The original's hard-coded epsilon (Keras defaults to 1e-3).


@keras.saving.register_keras_serializable(package="bert")
class BertEmbeddings(keras.layers.Layer):
    """Sum of word, segment and position embeddings, then LayerNorm and dropout.

    Token types are looked up with a gather, which is mathematically the one-hot matmul
    the original uses (the original chose the matmul only for TPU speed).

    Args:
        vocab_size: int. Rows of the word-embedding table.
        hidden_size: int. Embedding width H.
        max_position_embeddings: int. Rows of the position table; longest sequence.
        type_vocab_size: int. Number of segment ids.
        hidden_dropout_prob: float. Dropout after the LayerNorm. Defaults to 0.1.
        initializer_range: float. Stddev of the truncated-normal tables. Defaults to 0.02.
        position_embedding_init: str. "truncated_normal" (the original's) or
            "sinusoidal": sines and cosines of RMS `initializer_range` in the position
            table (`initializers.sinusoidal`). Defaults to "truncated_normal".

    Call arguments:
        input_ids: int Tensor of shape [batch_size, seq_length].
        segment_ids: int Tensor of shape [batch_size, seq_length].
        training: bool. Applies dropout when True.

    Returns:
        float Tensor of shape [batch_size, seq_length, hidden_size].
    """

    def __init__(self, *, vocab_size, hidden_size, max_position_embeddings, type_vocab_size,
                 hidden_dropout_prob=0.1, initializer_range=0.02,
                 position_embedding_init="truncated_normal", **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.hidden_dropout_prob = hidden_dropout_prob
        self.initializer_range = initializer_range
        self.position_embedding_init = position_embedding_init
        self.layer_norm = LayerNormalization(
            epsilon=LAYER_NORM_EPSILON, dtype=self.dtype_policy, name="layer_norm")
        self.dropout = Dropout(hidden_dropout_prob, dtype=self.dtype_policy, name="dropout")

    def build(self, input_shape=None):
        init = truncated_normal(self.initializer_range)
        self.word_embeddings = self.add_weight(
            shape=(self.vocab_size, self.hidden_size), initializer=init,
            name="word_embeddings")
        self.token_type_embeddings = self.add_weight(
            shape=(self.type_vocab_size, self.hidden_size), initializer=init,
            name="token_type_embeddings")
        self.position_embeddings = self.add_weight(
            shape=(self.max_position_embeddings, self.hidden_size),
            initializer=sinusoidal(self.initializer_range)
            if self.position_embedding_init == "sinusoidal" else init,
            name="position_embeddings")
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, input_ids, segment_ids, training=None, position_ids=None):
        """`position_ids` [B, T]: each token's position (rows that pack several sequences
        count each from its own start); default 0, 1, ... along every row."""
        seq_length = ops.shape(input_ids)[1]
        # Out-of-range ids make a gather fail on CPU and silently read zeros or garbage on
        # other devices (the original README's "NaNs ... unchecked out-of-bounds access").
        checks = [
            tf.debugging.assert_less(
                seq_length, self.max_position_embeddings + 1,
                message=f"sequence longer than max_position_embeddings="
                        f"{self.max_position_embeddings}"),
            tf.debugging.assert_less(
                input_ids, tf.cast(self.vocab_size, input_ids.dtype),
                message=f"input_ids contain an id >= vocab_size={self.vocab_size}: the "
                        f"vocabulary is larger than the config's vocab_size"),
            tf.debugging.assert_less(
                segment_ids, tf.cast(self.type_vocab_size, segment_ids.dtype),
                message=f"segment_ids contain an id >= type_vocab_size="
                        f"{self.type_vocab_size}"),
        ]
        with tf.control_dependencies(checks):
            words = ops.take(self.word_embeddings, input_ids, axis=0)
        types = ops.take(self.token_type_embeddings, segment_ids, axis=0)
        positions = self.position_embeddings[:seq_length]
        if position_ids is None:
            positions = positions[None, :, :]
        else:  # packed rows: each position within its row (a gather from the row's slice
            # keeps the table out of TF Lite's int8 quantization, as the slice alone is)
            with tf.control_dependencies([tf.debugging.assert_less(
                    position_ids, tf.cast(seq_length, position_ids.dtype),
                    message="position_ids contain a position past the row's length")]):
                positions = ops.take(positions, position_ids, axis=0)
        x = words + types + ops.cast(positions, words.dtype)
        x = self.layer_norm(x)
        return self.dropout(x, training=training)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.hidden_size,)

    def get_config(self):
        config = super().get_config()
        config.update({
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "max_position_embeddings": self.max_position_embeddings,
            "type_vocab_size": self.type_vocab_size,
            "hidden_dropout_prob": self.hidden_dropout_prob,
            "initializer_range": self.initializer_range,
            "position_embedding_init": self.position_embedding_init,
        })
        return config
