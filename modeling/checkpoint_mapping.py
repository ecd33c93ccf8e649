"""Which checkpoint variable fills which Keras weight: the mapping as data.

Pipeline position: used by `modeling.checkpoint` to load Google TF1 checkpoints, Hugging
Face safetensors and this project's own TF2 checkpoints into any model of `modeling.models`,
and to save Google-format checkpoints that the original scripts can load.

Every model variable has one canonical name: the original release's TF1 variable name
(`bert/encoder/layer_3/attention/self/query/kernel`, `cls/predictions/output_bias`, ...).
The encoder's names are here; each model class names its heads' weights itself, in its
`checkpoint_heads` table of (canonical name, attribute path from the model, rule), so that
a task's model (in `modeling.models` or in the task's own folder) needs no entry here.
Keras weights are found by attribute path on the model object (not by their Keras names,
which depend on how a model was wrapped), and Hugging Face names are translated to the
canonical ones by the rules below.
"""

import re

import numpy as np

# Rule applied to a checkpoint tensor before it is assigned to the Keras weight.
IDENTITY = "identity"
TRANSPOSE = "transpose"  # the original's `output_weights` are [out, in]; Keras is [in, out]

ENCODER_SCOPE = "bert/"  # every encoder weight's canonical name starts with it
LAYER_PATTERN = re.compile(r"^bert/encoder/layer_(\d+)/")

# (canonical TF1 name, attribute path from the encoder, rule)
ENCODER_TABLE = (
    ("bert/embeddings/word_embeddings", "embeddings.word_embeddings", IDENTITY),
    ("bert/embeddings/token_type_embeddings", "embeddings.token_type_embeddings", IDENTITY),
    ("bert/embeddings/position_embeddings", "embeddings.position_embeddings", IDENTITY),
    ("bert/embeddings/LayerNorm/gamma", "embeddings.layer_norm.gamma", IDENTITY),
    ("bert/embeddings/LayerNorm/beta", "embeddings.layer_norm.beta", IDENTITY),
    ("bert/pooler/dense/kernel", "pooler.kernel", IDENTITY),
    ("bert/pooler/dense/bias", "pooler.bias", IDENTITY),
)

# A pre-LayerNorm encoder's LayerNorm after its last block (`BertConfig.pre_layer_norm`).
FINAL_LAYER_NORM_TABLE = (
    ("bert/encoder/LayerNorm/gamma", "final_layer_norm.gamma", IDENTITY),
    ("bert/encoder/LayerNorm/beta", "final_layer_norm.beta", IDENTITY),
)

# Per Transformer block: (suffix after `bert/encoder/layer_{i}/`, attribute path from the
# block `encoder.transformer_layers[i]`, rule). All 16 tensors of a block.
BLOCK_TABLE = (
    ("attention/self/query/kernel", "self_attention.query.kernel", IDENTITY),
    ("attention/self/query/bias", "self_attention.query.bias", IDENTITY),
    ("attention/self/key/kernel", "self_attention.key.kernel", IDENTITY),
    ("attention/self/key/bias", "self_attention.key.bias", IDENTITY),
    ("attention/self/value/kernel", "self_attention.value.kernel", IDENTITY),
    ("attention/self/value/bias", "self_attention.value.bias", IDENTITY),
    ("attention/output/dense/kernel", "attention_output.kernel", IDENTITY),
    ("attention/output/dense/bias", "attention_output.bias", IDENTITY),
    ("attention/output/LayerNorm/gamma", "attention_layer_norm.gamma", IDENTITY),
    ("attention/output/LayerNorm/beta", "attention_layer_norm.beta", IDENTITY),
    ("intermediate/dense/kernel", "intermediate.kernel", IDENTITY),
    ("intermediate/dense/bias", "intermediate.bias", IDENTITY),
    ("output/dense/kernel", "output_dense.kernel", IDENTITY),
    ("output/dense/bias", "output_dense.bias", IDENTITY),
    ("output/LayerNorm/gamma", "output_layer_norm.gamma", IDENTITY),
    ("output/LayerNorm/beta", "output_layer_norm.beta", IDENTITY),
)

# Checkpoint variables that are training state, not weights: never loaded, never reported.
# `adam_m`/`adam_v` are the original optimizer's slots, `Adam`/`Adam_1` tf.train's.
IGNORED_CHECKPOINT_VARIABLES = re.compile(
    r"(^|/)(global_step|beta1_power|beta2_power|good_steps|current_loss_scale|loss_scale)$"
    r"|/(adam_m|adam_v|Adam|Adam_1|lamb_m|lamb_v|Momentum|accumulator)$"
    r"|^_CHECKPOINTABLE_OBJECT_GRAPH$")

# Hugging Face `BertModel` names -> canonical names. Applied after stripping a leading
# "bert." (present in task-model files, absent in `BertModel` files). PyTorch
# `Linear.weight` is [out, in]: a kernel needs a transpose. The heads' names come from the
# model being loaded (its class's `hf_head_names`, see `hf_head_rules`).
_HF_RULES = (
    (r"embeddings\.(word|token_type|position)_embeddings\.weight",
     r"bert/embeddings/\1_embeddings", IDENTITY),
    (r"embeddings\.LayerNorm\.(weight|gamma)", r"bert/embeddings/LayerNorm/gamma", IDENTITY),
    (r"embeddings\.LayerNorm\.(bias|beta)", r"bert/embeddings/LayerNorm/beta", IDENTITY),
    (r"encoder\.layer\.(\d+)\.(attention\.self\.(?:query|key|value)|attention\.output\.dense"
     r"|intermediate\.dense|output\.dense)\.weight", r"bert/encoder/layer_\1/\2/kernel",
     TRANSPOSE),
    (r"encoder\.layer\.(\d+)\.(attention\.self\.(?:query|key|value)|attention\.output\.dense"
     r"|intermediate\.dense|output\.dense)\.bias", r"bert/encoder/layer_\1/\2/bias", IDENTITY),
    (r"encoder\.layer\.(\d+)\.(attention\.output|output)\.LayerNorm\.(weight|gamma)",
     r"bert/encoder/layer_\1/\2/LayerNorm/gamma", IDENTITY),
    (r"encoder\.layer\.(\d+)\.(attention\.output|output)\.LayerNorm\.(bias|beta)",
     r"bert/encoder/layer_\1/\2/LayerNorm/beta", IDENTITY),
    (r"pooler\.dense\.weight", r"bert/pooler/dense/kernel", TRANSPOSE),
    (r"pooler\.dense\.bias", r"bert/pooler/dense/bias", IDENTITY),
)
_HF_COMPILED = tuple((re.compile(p + r"$"), r, rule) for p, r, rule in _HF_RULES)
# Buffers and tied copies in Hugging Face files that are not separate weights.
_HF_IGNORED = re.compile(r"(^|\.)(position_ids|token_type_ids)$"
                         r"|^cls\.predictions\.decoder\.(weight|bias)$")


def hf_to_canonical(hf_name, head_rules=None):
    """Maps a Hugging Face tensor name to (canonical name, rule), or None if not a weight
    this project models, or "ignore" for buffers and tied copies. `head_rules` (see
    `hf_head_rules`) names the heads of the model being loaded.

    Example: `encoder.layer.0.attention.self.query.weight` ->
    (`bert/encoder/layer_0/attention/self/query/kernel`, "transpose").
    """
    if head_rules and hf_name in head_rules:
        return head_rules[hf_name]
    name = hf_name[len("bert."):] if hf_name.startswith("bert.") else hf_name
    if _HF_IGNORED.search(name):
        return "ignore"
    for pattern, replacement, rule in _HF_COMPILED:
        if pattern.match(name):
            canonical = pattern.sub(replacement, name).replace(".", "/")
            return canonical, rule
    return None


def hf_head_rules(model):
    """{Hugging Face name: (canonical name, rule)} of the head weights of `model` (its
    class's `hf_head_names`): a kernel is transposed from PyTorch's [out, in], an
    `output_weights` is [out, in] already."""
    names = getattr(model, "hf_head_names", None) or {}
    return {hf: (canonical, TRANSPOSE if canonical.endswith("/kernel") else IDENTITY)
            for canonical, hf in names.items()}


def _resolve(obj, dotted):
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def variable_map(model):
    """Canonical name -> (Keras variable, rule) for every weight of `model`.

    Args:
        model: a `BertEncoder` or one of the models in `modeling.models`.

    Returns:
        dict, in a stable order: encoder weights, then head weights.
    """
    from modeling.encoder import BertEncoder  # late import: avoids an import cycle

    encoder = model if isinstance(model, BertEncoder) else model.encoder
    result = {}
    for name, path, rule in ENCODER_TABLE + (
            FINAL_LAYER_NORM_TABLE if encoder.final_layer_norm is not None else ()):
        result[name] = (_resolve(encoder, path), rule)
    for i, block in enumerate(encoder.transformer_layers):
        for suffix, path, rule in BLOCK_TABLE:
            result[f"bert/encoder/layer_{i}/{suffix}"] = (_resolve(block, path), rule)
    if model is not encoder:
        table = getattr(model, "checkpoint_heads", None)
        if table is None:
            raise TypeError(f"No checkpoint mapping for {type(model).__name__}: give the "
                            f"class a `checkpoint_heads` table (see modeling/models.py).")
        for name, path, rule in table:
            result[name] = (_resolve(model, path), rule)
    covered = {id(v) for v, _ in result.values()}
    unmapped = [v.path for v in model.weights if id(v) not in covered]
    if unmapped:  # a new layer was added without a mapping: fail loudly, not silently skip
        raise AssertionError(f"Weights without a checkpoint name: {unmapped}")
    return result


def apply_rule(array, rule):
    """Checkpoint layout -> Keras layout."""
    return np.transpose(array) if rule == TRANSPOSE else array


def rule_shape(shape, rule):
    """The shape `apply_rule` gives an array of `shape`."""
    return tuple(shape)[::-1] if rule == TRANSPOSE else tuple(shape)


def invert_rule(array, rule):
    """Keras layout -> checkpoint layout (both rules are their own inverse)."""
    return np.transpose(array) if rule == TRANSPOSE else array
