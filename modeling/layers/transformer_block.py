"""One Transformer block: self-attention and feed-forward, each residual, with BERT's
post-LayerNorm (or, as an option, pre-LayerNorm).

Pipeline position: `BertEncoder` stacks `num_hidden_layers` of these.
"""

import keras
from keras import ops

from modeling.activations import get_activation, get_training_activation
from modeling.layers import seeded_dropout
from modeling.layers.attention import SelfAttention
from modeling.layers.dropout import Dropout
from modeling.layers.embeddings import LAYER_NORM_EPSILON
from modeling.layers.initializers import truncated_normal
from modeling.layers.layer_norm import LayerNormalization


@keras.saving.register_keras_serializable(package="bert")
class TransformerBlock(keras.layers.Layer):
    """BERT's Transformer block (Vaswani et al., 2017, with post-LayerNorm residuals).

    ```
    attn = LayerNorm(dropout(attention_output(self_attention(x))) + x)
    out  = LayerNorm(dropout(output(hidden_act(intermediate(attn)))) + attn)
    ```
    Dropout sits exactly where the original puts it: after each of the two output
    projections (and on the attention probabilities), none inside the feed-forward.
    With `pre_layer_norm` (not the original's), the same weights normalise each branch's
    input instead of the sums:
    ```
    attn = x + dropout(attention_output(self_attention(LayerNorm(x))))
    out  = attn + dropout(output(hidden_act(intermediate(LayerNorm(attn)))))
    ```

    Args:
        hidden_size: int. Width H.
        num_attention_heads: int. Number of heads; must divide `hidden_size`.
        intermediate_size: int. Feed-forward width.
        hidden_act: str. Feed-forward activation name (see `modeling.activations`).
            Defaults to "gelu".
        hidden_dropout_prob: float. Residual-branch dropout. Defaults to 0.1.
        attention_probs_dropout_prob: float. Attention dropout. Defaults to 0.1.
        initializer_range: float. Kernel initialiser stddev. Defaults to 0.02.
        pre_layer_norm: bool. Pre-LayerNorm residuals (see above). Defaults to False.

    Call arguments:
        x: float Tensor of shape [batch_size, seq_length, hidden_size].
        mask_adder: float32 Tensor of shape [batch_size, 1, 1, seq_length].
        training: bool.
        token_index: optional int Tensor [num_tokens]: `x` is then the real tokens'
            matrix [num_tokens, hidden_size] (see `SelfAttention`), and so is the output.
        dropout_seed: optional int32 Tensor [2]: every dropout mask of the block drawn
            from it (`modeling.layers.seeded_dropout`), so that a recomputation of the
            block (gradient checkpointing) drops the same units.
        token_rows: optional, with `token_index`: its inverse (see `SelfAttention`).
        return_attention: bool. Also return the attention probabilities.

    Returns:
        float Tensor of shape [batch_size, seq_length, hidden_size] ([num_tokens,
        hidden_size] with `token_index`); with `return_attention`, (that, the attention
        probabilities [batch_size, num_heads, seq_length, seq_length]).
    """

    def __init__(self, *, hidden_size, num_attention_heads, intermediate_size,
                 hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                 initializer_range=0.02, pre_layer_norm=False, **kwargs):
        super().__init__(**kwargs)
        if hidden_size % num_attention_heads:
            raise ValueError(f"hidden_size={hidden_size} is not a multiple of "
                             f"num_attention_heads={num_attention_heads}.")
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range
        self.pre_layer_norm = pre_layer_norm

        policy = self.dtype_policy
        init = lambda: truncated_normal(initializer_range)  # noqa: E731
        self.self_attention = SelfAttention(
            num_attention_heads=num_attention_heads,
            head_size=hidden_size // num_attention_heads,
            attention_probs_dropout_prob=attention_probs_dropout_prob,
            initializer_range=initializer_range, dtype=policy, name="self_attention")
        self.attention_output = keras.layers.Dense(
            hidden_size, kernel_initializer=init(), dtype=policy, name="attention_output")
        self.attention_dropout = Dropout(hidden_dropout_prob, dtype=policy,
                                         name="attention_dropout")
        self.attention_layer_norm = LayerNormalization(
            epsilon=LAYER_NORM_EPSILON, dtype=policy, name="attention_layer_norm")
        # The activation is applied after the layer (the same ops): in training, its
        # backward pass written out (`modeling.activations.get_training_activation`).
        self.intermediate = keras.layers.Dense(
            intermediate_size, kernel_initializer=init(), dtype=policy, name="intermediate")
        self._activation = get_activation(hidden_act)
        self._training_activation = get_training_activation(hidden_act)
        self.output_dense = keras.layers.Dense(
            hidden_size, kernel_initializer=init(), dtype=policy, name="output")
        self.output_dropout = Dropout(hidden_dropout_prob, dtype=policy, name="output_dropout")
        self.output_layer_norm = LayerNormalization(
            epsilon=LAYER_NORM_EPSILON, dtype=policy, name="output_layer_norm")

    def build(self, input_shape):
        h = (None, None, self.hidden_size)
        self.self_attention.build(h)
        self.attention_output.build(h)
        self.attention_layer_norm.build(h)
        self.intermediate.build(h)
        self.output_dense.build((None, None, self.intermediate_size))
        self.output_layer_norm.build(h)
        self.built = True

    def call(self, x, mask_adder, training=None, token_index=None, dropout_seed=None,
             token_rows=None, return_attention=False):
        # Every dense layer and LayerNorm works on the [B*S, H] token matrix (or on its
        # real tokens' rows, with `token_index`): a plain MatMul + BiasAdd (+ activation)
        # that TensorFlow fuses, no per-layer reshapes.
        shape = ops.shape(x)
        tokens = x if token_index is not None else ops.reshape(x, (-1, self.hidden_size))
        probabilities = []

        def attend(t):
            out = self.self_attention(t, mask_adder, training=training,
                                      token_index=token_index, dropout_seed=dropout_seed,
                                      token_rows=token_rows,
                                      return_probabilities=return_attention)
            if not return_attention:
                return out
            probabilities.append(out[1])
            return out[0]

        def drop(layer, t, stream):
            return seeded_dropout.dropout(layer, t, training, dropout_seed, stream)

        activation = self._training_activation if training else self._activation

        def feed_forward(t):
            hidden = self.intermediate(t)
            return self.output_dense(activation(hidden) if activation else hidden)

        if self.pre_layer_norm:
            attn = self.attention_output(attend(self.attention_layer_norm(tokens)))
            attn = tokens + drop(self.attention_dropout, attn, 1)
            out = feed_forward(self.output_layer_norm(attn))
            out = attn + drop(self.output_dropout, out, 2)
        else:
            attn = self.attention_output(attend(tokens))
            attn = self.attention_layer_norm(drop(self.attention_dropout, attn, 1) + tokens)
            out = feed_forward(attn)
            out = self.output_layer_norm(drop(self.output_dropout, out, 2) + attn)
        out = out if token_index is not None else ops.reshape(out, shape)
        return (out, probabilities[0]) if return_attention else out

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({
            "hidden_size": self.hidden_size,
            "num_attention_heads": self.num_attention_heads,
            "intermediate_size": self.intermediate_size,
            "hidden_act": self.hidden_act,
            "hidden_dropout_prob": self.hidden_dropout_prob,
            "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
            "initializer_range": self.initializer_range,
            "pre_layer_norm": self.pre_layer_norm,
        })
        return config
