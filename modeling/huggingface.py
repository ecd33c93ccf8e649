"""A BERT model of this project -> a Hugging Face `transformers` model folder:
`model.safetensors`, `config.json` and the tokenizer files.

Pipeline position: after pre-training or fine-tuning, for users who continue in PyTorch or
publish on the Hugging Face Hub. Any checkpoint this project reads goes in (Google TF1,
this project's TF2 checkpoints and training runs, Hugging Face safetensors). The folder
loads with `transformers.AutoModel` (`--task_type=encoder`), `BertForPreTraining`,
`BertForSequenceClassification`, `BertForQuestionAnswering` or
`BertForTokenClassification` with no missing or unexpected weights, and computes the same
outputs (tested to 1e-5).

The activation is named for Hugging Face's meaning: the original release's "gelu" (the tanh
approximation) is Hugging Face's "gelu_new", and "gelu_exact" (erf) is its "gelu"; a
Google-trained model exported as "gelu" would be off by ~1e-3 without anyone noticing.

    save_huggingface(classifier, "mrpc_hf", vocab_file="vocab.txt", labels=["0", "1"])

The command line is `export_huggingface.py` at the repository's root.
"""

import json
import os
import re
import shutil

import numpy as np

from common import file_io
from modeling import checkpoint_mapping as mapping

# Our activation names -> Hugging Face's (ACT2FN) for the same function.
HF_ACTIVATION = {"gelu": "gelu_new", "gelu_exact": "gelu", "relu": "relu", "tanh": "tanh",
                 "swish": "silu", "linear": "linear"}

# Canonical (original TF1) name -> Hugging Face name, as (pattern, replacement), for the
# encoder (prefixed as the architecture wants). Each model class carries the rest:
# `hf_architecture`, `hf_encoder_prefix`, `hf_has_pooler` (Hugging Face builds its
# token-level heads without one), `hf_head_names` {canonical: Hugging Face name} and, for
# heads with labels, `hf_num_labels`. A kernel ([in, out]) is transposed into PyTorch's
# [out, in]; an `output_weights` is [out, in] already.
_ENCODER_NAMES = (
    (r"bert/embeddings/(word|token_type|position)_embeddings",
     r"embeddings.\1_embeddings.weight"),
    (r"bert/embeddings/LayerNorm/gamma", "embeddings.LayerNorm.weight"),
    (r"bert/embeddings/LayerNorm/beta", "embeddings.LayerNorm.bias"),
    (r"bert/encoder/layer_(\d+)/(.*)/LayerNorm/gamma", r"encoder.layer.\1.\2.LayerNorm.weight"),
    (r"bert/encoder/layer_(\d+)/(.*)/LayerNorm/beta", r"encoder.layer.\1.\2.LayerNorm.bias"),
    (r"bert/encoder/layer_(\d+)/(.*)/kernel", r"encoder.layer.\1.\2.weight"),
    (r"bert/encoder/layer_(\d+)/(.*)/bias", r"encoder.layer.\1.\2.bias"),
    (r"bert/pooler/dense/kernel", "pooler.dense.weight"),
    (r"bert/pooler/dense/bias", "pooler.dense.bias"),
)
_ENCODER_COMPILED = tuple((re.compile(p + "$"), r) for p, r in _ENCODER_NAMES)


def hf_name(canonical, prefix, head_names=None):
    """The Hugging Face name of a canonical weight name: an encoder weight's, with the
    architecture's `prefix`, or a head weight's from `head_names`.

    Example: `bert/encoder/layer_0/attention/self/query/kernel` with prefix "bert." ->
    `bert.encoder.layer.0.attention.self.query.weight`.
    """
    for pattern, replacement in _ENCODER_COMPILED:
        if pattern.match(canonical):
            return prefix + pattern.sub(replacement, canonical).replace("/", ".")
    if head_names and canonical in head_names:
        return head_names[canonical]
    raise KeyError(f"No Hugging Face name for '{canonical}'.")


def architecture(model):
    """The Hugging Face architecture of `model` (its class's `hf_architecture`)."""
    name = getattr(model, "hf_architecture", None)
    if name is None:
        raise ValueError(f"{type(model).__name__}: no Hugging Face architecture (transformers "
                         f"has no class for it" + (": a BiLSTM head" if getattr(
                             model, "bilstm", None) else "") + "). Export it as a SavedModel "
                         "or a checkpoint instead.")
    if getattr(model, "encoder", model).bert_config().pre_layer_norm:
        raise ValueError("pre_layer_norm is true in this model's config: Hugging Face's BERT "
                         "has post-LayerNorm blocks only, so it cannot hold this model; export "
                         "a SavedModel (export_saved_model.py) or keep the checkpoint.")
    pooling = getattr(model, "encoder", model).bert_config().pooling
    if pooling != "cls" and getattr(model, "hf_has_pooler", True):
        raise ValueError(f"pooling is '{pooling}' in this model's config: Hugging Face's BERT "
                         "pools the [CLS] vector only, so its answers would differ; export a "
                         "SavedModel (export_saved_model.py) or keep the checkpoint.")
    return name


def hf_tensors(model):
    """{Hugging Face name: float32 array} of every weight of `model`."""
    architecture(model)
    prefix, pooler = model.hf_encoder_prefix, model.hf_has_pooler
    head_names = getattr(model, "hf_head_names", {})
    tensors = {}
    for name, (variable, rule) in mapping.variable_map(model).items():
        if name.startswith("bert/pooler/") and not pooler:
            continue  # unused by the token-level heads, absent from Hugging Face's
        value = np.asarray(variable.numpy(), np.float32)
        if name.endswith("/kernel"):  # Keras [in, out] -> PyTorch [out, in]
            value = value.T
        elif rule == mapping.TRANSPOSE:  # output_weights: Keras [in, out] -> [out, in]
            value = value.T
        tensors[hf_name(name, prefix, head_names)] = np.ascontiguousarray(value)
    return tensors


def hf_config(model, labels=None):
    """config.json for `model`: the architecture, its sizes, the activation named for
    Hugging Face, and for task heads the labels (`id2label`/`label2id`)."""
    encoder = getattr(model, "encoder", model)
    config = encoder.bert_config()
    if config.hidden_act not in HF_ACTIVATION:
        raise ValueError(f"hidden_act={config.hidden_act!r} has no Hugging Face name.")
    out = {
        "architectures": [architecture(model)], "model_type": "bert",
        "vocab_size": config.vocab_size, "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_attention_heads": config.num_attention_heads,
        "intermediate_size": config.intermediate_size,
        "hidden_act": HF_ACTIVATION[config.hidden_act],
        "hidden_dropout_prob": config.hidden_dropout_prob,
        "attention_probs_dropout_prob": config.attention_probs_dropout_prob,
        "max_position_embeddings": config.max_position_embeddings,
        "type_vocab_size": config.type_vocab_size,
        "initializer_range": config.initializer_range, "layer_norm_eps": 1e-12,
        "pad_token_id": 0, "position_embedding_type": "absolute",
        "classifier_dropout": None, "torch_dtype": "float32",
    }
    if config.causal_attention:  # a left-to-right model: Hugging Face's decoder
        out["is_decoder"] = True
    num_labels = getattr(model, "hf_num_labels", None)
    if num_labels:
        labels = list(labels) if labels else [f"LABEL_{i}" for i in range(num_labels)]
        if num_labels == 1:  # a score (STS-B): Hugging Face's regression
            out["problem_type"] = "regression"
            labels = labels[:1] or ["score"]
        if len(labels) != num_labels:
            raise ValueError(f"{len(labels)} labels ({labels}) for a head with "
                             f"{num_labels} outputs.")
        out["id2label"] = {str(i): str(label) for i, label in enumerate(labels)}
        out["label2id"] = {str(label): i for i, label in enumerate(labels)}
        out["num_labels"] = num_labels
    return out


def save_huggingface(model, output_dir, vocab_file=None, do_lower_case=True, labels=None,
                     multi_label=False):
    """Writes `model` as a Hugging Face model folder (complete or not at all); returns
    `output_dir`.

    Args:
        model: a `modeling.BertEncoder`, or a model whose class names its Hugging Face
            architecture (`BertPretrainer`, `BertClassifier`, `BertSpanLabeler`,
            `BertTokenClassifier`, a task's own), weights loaded.
        output_dir: str. Replaced whole if it exists.
        vocab_file: str or None. Copied with `tokenizer_config.json` (the casing) so that
            `AutoTokenizer` loads the same WordPiece tokenizer.
        do_lower_case: bool.
        labels: list of str or None. The label of each output of a classification or
            tagging head (default LABEL_0, LABEL_1, ...).
        multi_label: bool. A classifier with a sigmoid per label (config.json's
            `problem_type` "multi_label_classification", which Hugging Face's
            pipelines read).

    A model class may add files of its own beside them (`hf_extra_files()`: {relative
    path: JSON object}; a sentence encoder's sentence-transformers modules).
    """
    from safetensors.numpy import save_file

    tensors = hf_tensors(model)
    config = hf_config(model, labels)
    if multi_label:
        config["problem_type"] = "multi_label_classification"
    with file_io.atomic_path(output_dir) as tmp:
        os.makedirs(tmp)
        save_file(tensors, os.path.join(tmp, "model.safetensors"), metadata={"format": "pt"})
        _write_json(os.path.join(tmp, "config.json"), config)
        for relative, content in getattr(model, "hf_extra_files", dict)().items():
            os.makedirs(os.path.dirname(os.path.join(tmp, relative)), exist_ok=True)
            _write_json(os.path.join(tmp, relative), content)
        if vocab_file:
            shutil.copyfile(vocab_file, os.path.join(tmp, "vocab.txt"))
            _write_json(os.path.join(tmp, "tokenizer_config.json"), {
                "tokenizer_class": "BertTokenizer", "do_lower_case": bool(do_lower_case),
                "strip_accents": None, "tokenize_chinese_chars": True,
                "model_max_length": config["max_position_embeddings"],
                "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                "cls_token": "[CLS]", "mask_token": "[MASK]"})
            _write_json(os.path.join(tmp, "special_tokens_map.json"), {
                "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                "cls_token": "[CLS]", "mask_token": "[MASK]"})
    return output_dir


def _write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")
