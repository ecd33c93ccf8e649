"""`BertEncoder`: the BERT Transformer network (embeddings, L blocks, pooler).

Pipeline position: the shared core of every model in this project. `BertPretrainer` adds
the pre-training heads, the task models add theirs; checkpoints of every supported format
load into it (`modeling.checkpoint`).
"""

import keras
import tensorflow as tf
from keras import ops

from modeling.config import BertConfig
from modeling.inputs import INPUT_NAMES, select_inputs
from modeling.layers import BertEmbeddings, TransformerBlock, attention_mask_adder
from modeling.layers.attention import (
    causal_mask_adder,
    gather_rows,
    packed_mask_adder,
    padded_token_matrix,
    real_token_index,
    token_rows,
)
from modeling.layers.embeddings import LAYER_NORM_EPSILON
from modeling.layers.initializers import truncated_normal
from modeling.layers.layer_norm import LayerNormalization

# The inputs of rows that pack several sequences (`BertEncoder.packed`), int32 [rows,
# width] each; with "cls_positions" for the pooled output.
PACKED_INPUT_NAMES = ("input_ids", "segment_ids", "position_ids", "sequence_ids")

# Constructor argument -> BertConfig field (the original's name).
_CONFIG_FIELDS = {
    "hidden_size": "hidden_size", "num_layers": "num_hidden_layers",
    "num_attention_heads": "num_attention_heads", "intermediate_size": "intermediate_size",
    "hidden_act": "hidden_act", "hidden_dropout_prob": "hidden_dropout_prob",
    "attention_probs_dropout_prob": "attention_probs_dropout_prob",
    "max_position_embeddings": "max_position_embeddings",
    "type_vocab_size": "type_vocab_size", "initializer_range": "initializer_range",
    "causal_attention": "causal_attention", "pre_layer_norm": "pre_layer_norm",
    "pooling": "pooling", "position_embedding_init": "position_embedding_init",
}


@keras.saving.register_keras_serializable(package="bert")
class BertEncoder(keras.Model):
    """The BERT encoder of Devlin et al., 2018 (https://arxiv.org/abs/1810.04805).

    A functional Keras model. Construct it from a `BertConfig` (`BertEncoder(config)`) or
    from keyword arguments (`BertEncoder(**config.encoder_kwargs())`).

    Args:
        vocab_size: int, or a `BertConfig` (then every other argument comes from it, and
            passing any of them as well is an error). The others are keyword-only.
        hidden_size: int. Defaults to 768.
        num_layers: int. Number of Transformer blocks. Defaults to 12.
        num_attention_heads: int. Defaults to 12.
        intermediate_size: int. Defaults to 3072.
        hidden_act: str. Defaults to "gelu" (tanh approximation, as the original).
        hidden_dropout_prob: float. Defaults to 0.1.
        attention_probs_dropout_prob: float. Defaults to 0.1.
        max_position_embeddings: int. Defaults to 512.
        type_vocab_size: int. Defaults to 16.
        initializer_range: float. Defaults to 0.02.
        causal_attention, pre_layer_norm: bool. Options that are not the original's (see
            `BertConfig`). Default False.
        pooling: str. "cls" (the original's), "mean" or "pair_mean": what
            "pooled_output" summarises (see `BertConfig`). Default "cls".
        position_embedding_init: str. "truncated_normal" (the original's) or
            "sinusoidal": how the position table starts (see `BertConfig`).

    Call arguments:
        inputs: dict of int32 Tensors of shape [batch_size, seq_length]: "input_ids",
            "input_mask" (1 for real tokens, 0 for padding) and "segment_ids".
        training: bool. Dropout is active only when True.
        skip_padding: bool. Run the blocks' dense layers (about 85% of the time) on the
            real tokens only, not on the padding: the same outputs at the real positions
            (up to float rounding of other matmul shapes), zeros at the padded ones of
            "sequence_output" and "encoder_outputs". A batch of SST-2 sentences padded to
            its longest is half padding. Not for a TF Lite conversion: the number of real
            tokens is data-dependent, which XNNPACK does not accelerate. Default False.
        output_attentions: bool. Also return each block's attention probabilities, as
            Hugging Face's `output_attentions=True` (the same values on the same weights).
            When False (the default) the encoder runs exactly as without it. Not with
            gradient checkpointing in training.

    Returns:
        dict with "sequence_output" (float [batch_size, seq_length, hidden_size], the last
        block), "pooled_output" (float [batch_size, hidden_size], tanh dense on [CLS], on
        the real tokens' mean with `pooling="mean"`, or on the two segments' means
        compared with `pooling="pair_mean"`),
        "encoder_outputs" (list of num_layers float [batch_size, seq_length, hidden_size],
        one per block) and "embedding_output" (float [batch_size, seq_length, hidden_size]);
        with `output_attentions`, "attentions" (list of num_layers float [batch_size,
        num_heads, seq_length (queries), seq_length (keys)], each query's row a
        distribution over the real keys; rows of padded queries are not meaningful).

    Example:
    ```python
    config = modeling.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                                 num_attention_heads=4, intermediate_size=64)
    encoder = modeling.BertEncoder(config)
    ids = np.array([[101, 7, 8, 102, 0]], "int32")
    out = encoder({"input_ids": ids, "input_mask": (ids > 0).astype("int32"),
                   "segment_ids": np.zeros_like(ids)})
    out["pooled_output"].shape  # (1, 32)
    ```
    """
    # As a Hugging Face model (`modeling.huggingface`): its weights unprefixed.
    hf_architecture = "BertModel"
    hf_encoder_prefix = ""
    hf_has_pooler = True

    def __init__(self, vocab_size, *, hidden_size=None, num_layers=None,
                 num_attention_heads=None, intermediate_size=None, hidden_act=None,
                 hidden_dropout_prob=None, attention_probs_dropout_prob=None,
                 max_position_embeddings=None, type_vocab_size=None,
                 initializer_range=None, causal_attention=None, pre_layer_norm=None,
                 pooling=None, position_embedding_init=None, dtype=None, **kwargs):
        given = dict(hidden_size=hidden_size, num_layers=num_layers,
                     num_attention_heads=num_attention_heads,
                     intermediate_size=intermediate_size, hidden_act=hidden_act,
                     hidden_dropout_prob=hidden_dropout_prob,
                     attention_probs_dropout_prob=attention_probs_dropout_prob,
                     max_position_embeddings=max_position_embeddings,
                     type_vocab_size=type_vocab_size, initializer_range=initializer_range,
                     causal_attention=causal_attention, pre_layer_norm=pre_layer_norm,
                     pooling=pooling, position_embedding_init=position_embedding_init)
        config = _resolve_config(vocab_size, {k: v for k, v in given.items()
                                              if v is not None})
        embeddings, blocks, final_norm, pooler = _make_layers(config, dtype)
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        outputs = _forward(embeddings, blocks, final_norm, pooler, inputs,
                           config.causal_attention, pooling=config.pooling)
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)
        self.vocab_size = config.vocab_size
        for argument, field in _CONFIG_FIELDS.items():
            setattr(self, argument, getattr(config, field))
        self.embeddings = embeddings
        self.transformer_layers = blocks
        self.final_layer_norm = final_norm  # pre-LayerNorm models only, else None
        self.pooler = pooler
        self._bert_config = config
        self.gradient_checkpointing = False
        self._block_seeds = None

    def enable_gradient_checkpointing(self, seed=None):
        """Recompute each Transformer block's activations in the backward pass instead
        of keeping them (gradient checkpointing: the memory of one block's activations,
        not of every block's, for about one more forward pass of compute). The same
        loss and gradients: each block's dropout masks are drawn from a seed drawn once
        per forward pass (`seeded_dropout`), so that the recomputation replays them.
        Call inside the distribution strategy's scope (its seed generator is a variable,
        saved with the training checkpoints)."""
        if self._block_seeds is None:
            self._block_seeds = keras.random.SeedGenerator(seed, name="block_seeds")
        self.gradient_checkpointing = True

    def draw_block_seeds(self):
        """The dropout seeds of one forward pass, int32 [num_layers, 2] (a row per block),
        from the seed generator of `enable_gradient_checkpointing`."""
        return keras.random.randint((len(self.transformer_layers), 2), 0, 2**31 - 1,
                                    seed=self._block_seeds, dtype="int32")

    def __call__(self, inputs, *args, skip_padding=False, output_attentions=False, **kwargs):
        # Select the inputs by name before Keras sees them: given a dict with extra keys
        # (such as a whole pre-training batch), Keras's functional model would otherwise
        # pair tensors with inputs by position and compute garbage; and nested Python lists
        # would be flattened into one input per element.
        inputs = select_inputs(inputs)
        training = kwargs.get("training", args[0] if args else None)
        recompute = self.gradient_checkpointing and training is True
        if output_attentions and recompute:
            raise ValueError("output_attentions: a block recomputed in the backward pass "
                             "(gradient checkpointing) returns its output alone; call the "
                             "encoder with training=False, or without gradient "
                             "checkpointing, for the attention probabilities.")
        if skip_padding or recompute or output_attentions:  # the same layers, called
            kwargs.pop("training", None)                      # directly: a graph of its own
            return _forward(self.embeddings, self.transformer_layers, self.final_layer_norm,
                            self.pooler, {name: ops.convert_to_tensor(inputs[name], "int32")
                                          for name in INPUT_NAMES},
                            self._bert_config.causal_attention, training,
                            skip_padding=skip_padding, pooling=self._bert_config.pooling,
                            block_seeds=self.draw_block_seeds() if recompute else None,
                            recompute=recompute, output_attentions=output_attentions)
        return super().__call__(inputs, *args, **kwargs)

    @property
    def packable(self):
        """Whether `packed` can run this encoder: bidirectional attention and the [CLS]
        vector pooled (a sequence's mean or last token is not read from packed rows)."""
        return not self._bert_config.causal_attention and self._bert_config.pooling == "cls"

    def packed(self, inputs):
        """The encoder in inference on rows that pack several sequences each: a sequence
        attends only to its own tokens (`packed_mask_adder`) and its positions count from
        its own [CLS], so its outputs are those it has alone in a row of its own (up to
        float rounding of other matmul shapes), while short sequences fill a row instead
        of padding it. Only for a `packable` encoder.

        Args:
            inputs: dict of int32 Tensors: `PACKED_INPUT_NAMES` [rows, width]
                ("position_ids": each token's position in its own sequence;
                "sequence_ids": 1, 2, ... for the sequences of a row, 0 at the padding),
                and optionally "cls_positions" (any shape, e.g. [sequences]): where each
                sequence's [CLS] is in the [rows * width] token matrix (row * width +
                column).

        Returns:
            dict with "sequence_output" [rows, width, hidden_size], "encoder_outputs" and
            "embedding_output" as for `__call__`; with "cls_positions", "pooled_output"
            [sequences, hidden_size] in their order (flattened).
        """
        if not self.packable:
            raise ValueError("Packed rows need a bidirectional encoder that pools [CLS] "
                             f"(this one: causal_attention="
                             f"{self._bert_config.causal_attention}, pooling="
                             f"{self._bert_config.pooling!r}).")
        missing = [name for name in PACKED_INPUT_NAMES if name not in inputs]
        if missing:
            raise ValueError(f"Packed inputs lack {missing}; expected "
                             f"{list(PACKED_INPUT_NAMES)} (and cls_positions).")
        names = PACKED_INPUT_NAMES + (("cls_positions",) if "cls_positions" in inputs else ())
        return _forward(self.embeddings, self.transformer_layers, self.final_layer_norm,
                        self.pooler, {name: ops.convert_to_tensor(inputs[name], "int32")
                                      for name in names}, training=False)

    @property
    def word_embeddings(self):
        """The [vocab_size, hidden_size] table, shared with the masked-LM output layer."""
        return self.embeddings.word_embeddings

    def bert_config(self):
        """The `BertConfig` this encoder was built from (for writing bert_config.json)."""
        return BertConfig.from_dict(self._bert_config.to_dict())

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable,
                  "dtype": keras.saving.serialize_keras_object(self.dtype_policy),
                  "vocab_size": self.vocab_size}
        config.update({argument: getattr(self, argument) for argument in _CONFIG_FIELDS})
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.saving.deserialize_keras_object(config["dtype"])
        return cls(**config)


def _resolve_config(vocab_size, arguments):
    """The `BertConfig` of the constructor's arguments: a config passed as `vocab_size`,
    or the keyword arguments given, validated by `BertConfig` (the same checks and
    messages as a bert_config.json; unset arguments get its defaults). Only the
    architecture is kept (a config file's extra keys are not the encoder's)."""
    if isinstance(vocab_size, BertConfig):
        if arguments:
            raise TypeError(f"BertEncoder: pass a BertConfig or keyword arguments, not "
                            f"both (got {sorted(arguments)} beside the config).")
        given = vocab_size
        vocab_size = given.vocab_size
        arguments = {k: getattr(given, field) for k, field in _CONFIG_FIELDS.items()}
    return BertConfig(vocab_size=vocab_size, source="BertEncoder arguments",
                      **{_CONFIG_FIELDS[k]: v for k, v in arguments.items()})


def _make_layers(c, dtype):
    """(embeddings, Transformer blocks, the final LayerNorm of a pre-LayerNorm model or
    None, pooler) of the config `c`."""
    embeddings = BertEmbeddings(
        vocab_size=c.vocab_size, hidden_size=c.hidden_size,
        max_position_embeddings=c.max_position_embeddings,
        type_vocab_size=c.type_vocab_size, hidden_dropout_prob=c.hidden_dropout_prob,
        initializer_range=c.initializer_range,
        position_embedding_init=c.position_embedding_init, dtype=dtype, name="embeddings")
    blocks = [
        TransformerBlock(
            hidden_size=c.hidden_size, num_attention_heads=c.num_attention_heads,
            intermediate_size=c.intermediate_size, hidden_act=c.hidden_act,
            hidden_dropout_prob=c.hidden_dropout_prob,
            attention_probs_dropout_prob=c.attention_probs_dropout_prob,
            initializer_range=c.initializer_range, pre_layer_norm=c.pre_layer_norm,
            dtype=dtype, name=f"transformer_layer_{i}")
        for i in range(c.num_hidden_layers)
    ]
    final_norm = LayerNormalization(
        epsilon=LAYER_NORM_EPSILON, dtype=dtype, name="final_layer_norm") \
        if c.pre_layer_norm else None
    pooler = keras.layers.Dense(c.hidden_size, activation="tanh",
                                kernel_initializer=truncated_normal(c.initializer_range),
                                dtype=dtype, name="pooler")
    return embeddings, blocks, final_norm, pooler


def masked_mean(x, weights):
    """The mean of `x`'s vectors [B, S, H] over the positions whose float `weights` [B, S]
    are 1, summed in float32 (zeros where none is)."""
    weights = ops.expand_dims(weights, -1)
    count = ops.maximum(ops.sum(weights, axis=1), 1.0)
    return ops.sum(ops.cast(x, "float32") * weights, axis=1) / count


def _forward(embeddings, blocks, final_norm, pooler, inputs, causal=False, training=None,
             skip_padding=False, pooling="cls", block_seeds=None, recompute=False,
             output_attentions=False):
    """The encoder's outputs from its layers and `inputs` (symbolic, to build the
    functional model, or tensors). `causal`: each position attends to itself and those
    before it, and the pooled vector is the last real token's (the one that has seen the
    whole sequence) instead of [CLS]'s. `skip_padding`: see `BertEncoder`. `pooling`:
    "mean" pools the mean of the real tokens' vectors instead of [CLS]'s, "pair_mean"
    the two segments' means compared (`BertConfig`). `block_seeds` (int32 [blocks, 2]):
    each block's dropout drawn from its row (`modeling.layers.seeded_dropout`);
    `recompute`: each block recomputed in the backward pass (`tf.recompute_grad`), the
    same masks drawn again from its seed (see `BertEncoder.enable_gradient_checkpointing`).
    `output_attentions`: each block's attention probabilities as "attentions" too."""
    packed = "sequence_ids" in inputs  # rows packing several sequences (`packed`)
    positions = {"position_ids": inputs["position_ids"]} if packed else {}
    embedding_output = embeddings(inputs["input_ids"], inputs["segment_ids"],
                                  training=training, **positions)
    mask_adder = (packed_mask_adder(inputs["sequence_ids"]) if packed
                  else attention_mask_adder(inputs["input_mask"]))
    if causal:
        mask_adder = mask_adder + causal_mask_adder(inputs["input_mask"])
    shape = ops.shape(embedding_output)
    index = real_token_index(inputs["input_mask"]) if skip_padding else None
    rows = token_rows(inputs["input_mask"]) if skip_padding and not training else None

    def padded(tokens):  # the real tokens' rows -> [B, S, H], zeros at the padding
        if index is None:
            return tokens
        return ops.reshape(padded_token_matrix(tokens, index, shape[0] * shape[1], training,
                                               rows), shape)

    x = embedding_output
    if index is not None:
        x = gather_rows(ops.reshape(x, (-1, shape[2])), index)
    encoder_outputs, attentions = [], []
    for number, block in enumerate(blocks):
        def run(x, seed=None, block=block):
            return block(x, mask_adder, training=training, token_index=index,
                         dropout_seed=seed, token_rows=rows,
                         return_attention=output_attentions)
        if block_seeds is None:
            x = run(x)
        elif recompute:  # the seed captured, not an argument: it has no gradient
            x = tf.recompute_grad(lambda x, seed=block_seeds[number], run=run: run(
                x, seed))(x)
        else:
            x = run(x, block_seeds[number])
        if output_attentions:  # never with recompute (`BertEncoder.__call__` refuses it)
            x, probabilities = x
            attentions.append(probabilities)
        encoder_outputs.append(x)
    if final_norm is not None:  # pre-LayerNorm: the last block's sums, normalised
        x = final_norm(x)
        encoder_outputs[-1] = x
    x = padded(x)
    encoder_outputs = [padded(t) for t in encoder_outputs[:-1]] + [x] \
        if encoder_outputs else []
    extra = {"attentions": attentions} if output_attentions else {}
    if packed:  # the [CLS] vectors of the sequences, wherever they are
        if "cls_positions" not in inputs:
            return {"sequence_output": x, "encoder_outputs": encoder_outputs,
                    "embedding_output": embedding_output}
        summary = gather_rows(ops.reshape(x, (-1, shape[2])),
                              ops.reshape(inputs["cls_positions"], (-1,)))
    elif causal:
        last = ops.maximum(ops.sum(inputs["input_mask"], axis=1) - 1, 0)
        summary = ops.take_along_axis(x, ops.cast(last, "int32")[:, None, None], axis=1)
        summary = ops.squeeze(summary, 1)
    elif pooling == "mean":  # the real tokens' mean, summed in float32
        summary = ops.cast(masked_mean(x, ops.cast(inputs["input_mask"], "float32")), x.dtype)
    elif pooling == "pair_mean":  # [u; v; |u - v|; u * v] of the segments' means
        real = ops.cast(inputs["input_mask"], "float32")
        second = ops.cast(ops.minimum(inputs["segment_ids"], 1), "float32")
        u, v = masked_mean(x, real * (1.0 - second)), masked_mean(x, real * second)
        summary = ops.cast(ops.concatenate([u, v, ops.abs(u - v), u * v], axis=-1), x.dtype)
    else:
        summary = ops.take(x, 0, axis=1)  # the [CLS] vector
    return {"sequence_output": x,
            "pooled_output": pooler(summary),
            "encoder_outputs": encoder_outputs,
            "embedding_output": embedding_output, **extra}
