"""Multi-head scaled dot-product self-attention with BERT's additive key mask.

Pipeline position: inside every `TransformerBlock` of the encoder.
"""

import math

import keras
import tensorflow as tf
from keras import ops

from modeling.layers import seeded_dropout
from modeling.layers.dropout import Dropout
from modeling.layers.initializers import truncated_normal

# The original masks padded keys by adding -10000 to their scores before the softmax
# (not -inf): exp(-10000) underflows to 0 in float32, and the value still fits float16.
MASK_ADDER = -10000.0


def attention_mask_adder(input_mask):
    """Turns `input_mask` [B, T] (1 = real token) into the additive mask [B, 1, 1, T].

    Only keys are masked: padded query rows still attend (their outputs are ignored
    downstream), exactly as the original's `create_attention_mask_from_input_mask`.
    Always float32, because the scores are softmaxed in float32.
    """
    mask = ops.cast(input_mask, "float32")
    # expand_dims rather than mask[:, None, None, :]: that slice is a StridedSlice with new
    # axes, which TF Lite's builtin ops do not have.
    return (1.0 - ops.expand_dims(ops.expand_dims(mask, 1), 1)) * MASK_ADDER


def packed_mask_adder(sequence_ids):
    """The additive mask [B, 1, T, T] of packed rows: `sequence_ids` [B, T] numbers the
    sequences packed into each row (1, 2, ... at their positions, 0 at the padding), and
    a query attends only to the real keys of its own sequence: each sequence sees what it
    would see alone in a row of its own (`attention_mask_adder`'s key mask, per
    sequence)."""
    queries = ops.expand_dims(sequence_ids, 2)  # [B, F, 1]
    keys = ops.expand_dims(sequence_ids, 1)  # [B, 1, T]
    seen = ops.logical_and(ops.equal(queries, keys), ops.not_equal(keys, 0))
    return (1.0 - ops.expand_dims(ops.cast(seen, "float32"), 1)) * MASK_ADDER


def real_token_index(input_mask):
    """The positions of the real tokens in the [batch * seq_length] token matrix of a
    batch with `input_mask` [B, T], in order: int32 [num_tokens]. With it, the encoder
    runs its dense layers on the real tokens alone (`encoder(inputs, skip_padding=True)`).
    """
    flat = ops.reshape(input_mask, (-1,))
    return ops.cast(ops.where(ops.not_equal(flat, 0))[0], "int32")  # nonzero


def gather_rows(matrix, index):
    """Rows `index` (never negative) of `matrix`: `tf.gather`, without the negative-index
    wrapping `keras.ops.take` adds to every call (five more ops in the graph)."""
    return tf.gather(matrix, index)


def token_rows(input_mask):
    """The inverse of `real_token_index`: for each position of the [batch * seq_length]
    token matrix, the row of the real tokens' matrix that holds it, and for a padded
    position the row after the last (num_tokens): int32 [batch * seq_length]. With it the
    padded layout is one gather from the real tokens' rows (and one row more)."""
    real = ops.cast(ops.not_equal(ops.reshape(input_mask, (-1,)), 0), "int32")
    return ops.where(real > 0, ops.cumsum(real) - 1, ops.sum(real))


def padded_token_matrix(tokens, token_index, positions, training=None, rows=None):
    """The real tokens' rows `tokens` [num_tokens, W] (from `real_token_index`) put back
    in the [positions, W] token matrix of the batch, zeros at the padding. In training a
    scatter, whose gradient is a gather; in inference a gather from the rows and a zero
    row (`rows`: `token_rows`, found from `token_index` when not given): the same values
    without TensorFlow's scatter, which runs on one thread on CPU (the gather on all)."""
    width = tokens.shape[-1]
    if training:
        return ops.scatter(ops.expand_dims(token_index, 1), tokens, (positions, width))
    count = ops.shape(token_index)[0]
    if rows is None:
        rows = ops.scatter_update(ops.full((positions,), count, "int32"),
                                  ops.expand_dims(token_index, 1),
                                  ops.arange(count, dtype="int32"))
    with_zero = ops.concatenate([tokens, ops.zeros((1, width), tokens.dtype)], axis=0)
    return gather_rows(with_zero, rows)


def causal_mask_adder(input_mask):
    """The additive mask [B, 1, T, T] of a left-to-right model: query position i may
    attend to keys 0..i only (added to `attention_mask_adder`'s key mask). Built from
    `input_mask`'s positions, so that it works on symbolic inputs of any length."""
    positions = ops.cumsum(ops.ones_like(input_mask), axis=1)  # [B, T]: 1, 2, ...
    later = ops.expand_dims(positions, 1) > ops.expand_dims(positions, 2)  # [B, query, key]
    return ops.expand_dims(ops.cast(later, "float32"), 1) * MASK_ADDER


@keras.saving.register_keras_serializable(package="bert")
class SelfAttention(keras.layers.Layer):
    """Multi-head self-attention: query/key/value projections, masked softmax, dropout.

    The projections are plain `Dense(num_heads * head_size)` layers, so their kernels have
    the original's `[hidden_size, hidden_size]` layout (no reshape when loading weights).

    Args:
        num_attention_heads: int. Number of heads N.
        head_size: int. Width Hd of each head.
        attention_probs_dropout_prob: float. Dropout on attention probabilities.
            Defaults to 0.1.
        initializer_range: float. Kernel initialiser stddev. Defaults to 0.02.

    Call arguments:
        x: float Tensor of shape [batch_size, seq_length, hidden_size], or the same as a
            token matrix [batch_size * seq_length, hidden_size].
        mask_adder: float32 Tensor of shape [batch_size, 1, 1, seq_length], from
            `attention_mask_adder`.
        training: bool. Applies dropout when True.
        dropout_seed: optional int32 [2]: the dropout mask drawn from it (the same seed,
            the same mask: `modeling.layers.seeded_dropout`), not from the layer's own
            random state.
        token_index: optional int Tensor [num_tokens]: `x` is then the matrix of the real
            tokens only, [num_tokens, hidden_size], row i being position token_index[i]
            of the [batch_size * seq_length] token matrix (see `real_token_index`). The
            projections run on those rows alone; the attention, on the padded layout.
        token_rows: optional, with `token_index`: its inverse (`token_rows`), computed
            from `token_index` when not given.
        return_probabilities: bool. Also return the attention probabilities.

    Returns:
        float Tensor of shape [batch_size, seq_length, num_heads * head_size] (or
        [batch_size * seq_length, ...] for a token matrix, [num_tokens, ...] with
        `token_index`), the context vectors before the output projection; with
        `return_probabilities`, (that, the probabilities [batch_size, num_heads,
        seq_length (queries), seq_length (keys)], after dropout as Hugging Face's
        `output_attentions`: each query's row sums to 1 over the real keys).
    """

    def __init__(self, *, num_attention_heads, head_size, attention_probs_dropout_prob=0.1,
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_attention_heads = num_attention_heads
        self.head_size = head_size
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range
        width = num_attention_heads * head_size
        make = lambda name: keras.layers.Dense(  # noqa: E731
            width, kernel_initializer=truncated_normal(initializer_range),
            dtype=self.dtype_policy, name=name)
        self.query = make("query")
        self.key = make("key")
        self.value = make("value")
        self.dropout = Dropout(attention_probs_dropout_prob, dtype=self.dtype_policy,
                               name="dropout")

    def build(self, input_shape):
        for layer in (self.query, self.key, self.value):
            layer.build(input_shape)
        self.built = True

    def call(self, x, mask_adder, training=None, token_index=None, dropout_seed=None,
             token_rows=None, return_probabilities=False):
        # B = batch, S = sequence (F = from = T = to), N = heads, D = head size.
        # The projections run on the [B*S, H] token matrix (as the original's
        # reshape_to_matrix): one MatMul + BiasAdd each, which TensorFlow fuses, instead
        # of a tensordot's reshapes and shape arithmetic around every dense layer.
        batch, seq = ops.shape(mask_adder)[0], ops.shape(mask_adder)[-1]
        tokens = ops.reshape(x, (-1, ops.shape(x)[-1])) if len(x.shape) == 3 else x
        width = self.num_attention_heads * self.head_size

        def heads(t):  # [B*S, N*D] (or the real tokens' rows of it) -> [B, N, S, D]
            if token_index is not None:  # padded positions: zero queries, keys, values
                t = padded_token_matrix(t, token_index, batch * seq, training, token_rows)
            t = ops.reshape(t, (batch, seq, self.num_attention_heads, self.head_size))
            return ops.transpose(t, (0, 2, 1, 3))

        q, k, v = heads(self.query(tokens)), heads(self.key(tokens)), heads(self.value(tokens))
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))  # [B, N, F, T]
        scores = scores * (1.0 / math.sqrt(float(self.head_size)))
        # Softmax in float32 even under a float16/bfloat16 policy: the -10000 adder and
        # the exponentials need its range.
        scores = ops.cast(scores, "float32") + ops.cast(mask_adder, "float32")
        probs = ops.cast(ops.softmax(scores, axis=-1), x.dtype)
        probs = seeded_dropout.dropout(self.dropout, probs, training, dropout_seed, 0)
        context = ops.matmul(probs, v)  # [B, N, F, D]
        context = ops.transpose(context, (0, 2, 1, 3))  # [B, F, N, D]
        if token_index is not None:
            context = gather_rows(ops.reshape(context, (-1, width)), token_index)
        elif len(x.shape) == 3:
            context = ops.reshape(context, (batch, seq, width))
        else:
            context = ops.reshape(context, (-1, width))
        return (context, probs) if return_probabilities else context

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.num_attention_heads * self.head_size,)

    def get_config(self):
        config = super().get_config()
        config.update({
            "num_attention_heads": self.num_attention_heads,
            "head_size": self.head_size,
            "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
            "initializer_range": self.initializer_range,
        })
        return config
