"""Loading weights into BERT models from every supported format, and saving them.

Pipeline position: every entry point calls `load_checkpoint` for `--init_checkpoint`;
pre-training ends with `save_google_checkpoint` so the fine-tuning scripts (and the
original release's tools) can start from it.

Formats read (detected from the path and the file's contents):
  * Google's TF1 checkpoints (`bert_model.ckpt` prefix, original variable names; optimizer
    slots and `global_step` ignored),
  * Hugging Face `model.safetensors` (with or without the `bert.` prefix), read with
    `safetensors` only,
  * this project's TF2 checkpoints (`tf.train.Checkpoint` whose `model` child holds the
    weights under their canonical names; written by `save_tf2_checkpoint` and training).
"""

import dataclasses
import os

import numpy as np
import tensorflow as tf
from absl import logging

from common import file_io
from common.errors import op_error_text
from modeling import checkpoint_mapping as mapping

GOOGLE = "google_tf1"
HUGGING_FACE = "hugging_face_safetensors"
TF2 = "tf2_object"

# Root child under which `save_tf2_checkpoint` (and the training loop) store the weights.
TF2_WEIGHTS_KEY = "model"
_TF2_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


class CheckpointError(ValueError):
    """A checkpoint that cannot be read, or whose variables do not fit the model."""


class CheckpointReadError(CheckpointError):
    """A checkpoint whose files cannot be read: damaged, cut short, not a checkpoint."""


@dataclasses.dataclass
class LoadReport:
    """What `load_checkpoint` did.

    Attributes:
        path: str. The checkpoint that was read.
        format: str. One of GOOGLE, HUGGING_FACE, TF2.
        loaded: list of canonical names assigned.
        not_filled: list of canonical names of model weights the checkpoint lacks (they
            keep their initial values, e.g. a new task head).
        unused: list of checkpoint names not used by the model (e.g. pre-training heads
            when fine-tuning).
    """
    path: str
    format: str
    loaded: list
    not_filled: list
    unused: list

    def summary(self):
        lines = [f"Loaded {len(self.loaded)} weights from {self.path} ({self.format})."]
        if self.not_filled:
            lines.append(f"{len(self.not_filled)} model weights not in the checkpoint (left "
                         f"at their initial values): {', '.join(self.not_filled)}")
        if self.unused:
            lines.append(f"{len(self.unused)} checkpoint variables not used by the model: "
                         f"{', '.join(self.unused)}")
        return "\n".join(lines)


# --------------------------------------------------------------------------- readers
class _Reader:
    """Name -> numpy array access to one checkpoint, names already canonical."""

    def __init__(self, path, fmt, shapes, getter, rules=None, keras_layout=False):
        self.path = path
        self.format = fmt
        # TF2 checkpoints hold the Keras variables themselves (e.g. the [H, 2] kernel of
        # `output_weights`), not the TF1 layout: the model's layout rules do not apply.
        self.keras_layout = keras_layout
        self.shapes = shapes  # canonical name -> shape (checkpoint layout)
        self._getter = getter
        self._rules = rules or {}  # canonical name -> extra rule (Hugging Face transposes)

    def get(self, name):
        array = self._getter(name)
        return mapping.apply_rule(array, self._rules.get(name, mapping.IDENTITY))

    def keras_shape(self, name):
        return mapping.rule_shape(self.shapes[name], self._rules.get(name, mapping.IDENTITY))


def resolve_checkpoint_path(path):
    """Turns what a user passes as `--init_checkpoint` into (format, concrete path).

    Accepts a checkpoint prefix (`.../bert_model.ckpt`, `.../ckpt-1000`), a prefix's
    `.index` file, a folder (holding a `checkpoint` state file, exactly one `*.ckpt.index`,
    or a `model.safetensors`), or a `.safetensors` file.
    """
    path = str(path)
    if path.endswith(".safetensors"):
        if not tf.io.gfile.exists(path):
            raise CheckpointError(f"{path}: no such file.")
        return HUGGING_FACE, path
    if path.endswith(".index"):
        path = path[:-len(".index")]
    if tf.io.gfile.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest:
            return _tf_format(latest), latest
        safetensors = os.path.join(path, "model.safetensors")
        if tf.io.gfile.exists(safetensors):
            return HUGGING_FACE, safetensors
        indexes = tf.io.gfile.glob(os.path.join(path, "*.index"))
        if len(indexes) == 1:
            prefix = indexes[0][:-len(".index")]
            return _tf_format(prefix), prefix
        raise CheckpointError(
            f"{path}: a folder with no checkpoint in it that can be chosen unambiguously "
            f"(found {len(indexes)} *.index files, no 'checkpoint' state file, no "
            f"model.safetensors). Pass the checkpoint prefix, e.g. {path}/bert_model.ckpt.")
    if not tf.io.gfile.exists(path + ".index"):
        raise CheckpointError(
            f"{path}: not a checkpoint (no {os.path.basename(path)}.index beside it). Pass "
            f"a prefix such as uncased_L-12_H-768_A-12/bert_model.ckpt, a folder, or a "
            f"model.safetensors file.")
    return _tf_format(path), path


def _tf_format(prefix):
    try:
        names = [n for n, _ in tf.train.list_variables(prefix)]
    except (tf.errors.OpError, ValueError) as e:
        raise CheckpointReadError(f"{prefix}: cannot read the checkpoint "
                                  f"({op_error_text(e)}).") from e
    return TF2 if "_CHECKPOINTABLE_OBJECT_GRAPH" in names else GOOGLE


def _unescape(component):
    """Reverses tf.train.Checkpoint's escaping of a child name ('/' -> '.S', '.' -> '..')."""
    out, i = [], 0
    while i < len(component):
        if component[i] == "." and i + 1 < len(component):
            out.append("/" if component[i + 1] == "S" else component[i + 1])
            i += 2
        else:
            out.append(component[i])
            i += 1
    return "".join(out)


def open_checkpoint(path, hf_head_rules=None):
    """Opens any supported checkpoint for reading. Returns a `_Reader`. `hf_head_rules`
    names the heads in a Hugging Face file (see `checkpoint_mapping.hf_head_rules`)."""
    fmt, path = resolve_checkpoint_path(path)
    if fmt == HUGGING_FACE:
        return _open_safetensors(path, hf_head_rules)
    reader = tf.train.load_checkpoint(path)
    shape_map = reader.get_variable_to_shape_map()
    if fmt == GOOGLE:
        shapes = {n: s for n, s in shape_map.items()
                  if not mapping.IGNORED_CHECKPOINT_VARIABLES.search(n)}
        return _Reader(path, fmt, shapes, reader.get_tensor)
    prefix = TF2_WEIGHTS_KEY + "/"
    keys = {}
    for key in shape_map:
        if key.startswith(prefix) and key.endswith(_TF2_SUFFIX) and \
                key.count("/") == 3:  # model/<name>/.ATTRIBUTES/VARIABLE_VALUE
            keys[_unescape(key[len(prefix):-len(_TF2_SUFFIX)])] = key
    if not keys:
        raise CheckpointError(
            f"{path}: a TF2 object-based checkpoint without this project's '{prefix}' "
            f"weights (written by other code, e.g. TF Model Garden). Convert it to a Google "
            f"TF1 checkpoint, or load it with the code that wrote it.")
    shapes = {n: shape_map[k] for n, k in keys.items()}
    return _Reader(path, fmt, shapes, lambda n: reader.get_tensor(keys[n]),
                   keras_layout=True)


def _open_safetensors(path, head_rules=None):
    from safetensors import safe_open  # read-only, no pickle: safe on downloaded files

    try:
        handle = safe_open(path, framework="numpy")
    except Exception as e:  # safetensors raises its own error types
        raise CheckpointError(f"{path}: not a readable safetensors file ({e}).") from e
    shapes, rules, sources, unknown = {}, {}, {}, []
    for key in handle.keys():
        target = mapping.hf_to_canonical(key, head_rules)
        if target == "ignore":
            continue
        if target is None:
            unknown.append(key)
            shapes[key] = handle.get_slice(key).get_shape()
            sources[key] = key
            continue
        name, rule = target
        shapes[name] = handle.get_slice(key).get_shape()
        rules[name] = rule
        sources[name] = key

    def get(name):
        try:
            return handle.get_tensor(sources[name])
        except TypeError as e:  # e.g. bfloat16, which numpy cannot hold
            raise CheckpointError(f"{path}: tensor '{sources[name]}' cannot be read as "
                                  f"numpy ({e}); convert the file to float32.") from e

    return _Reader(path, HUGGING_FACE, shapes, get, rules)


# --------------------------------------------------------------------------- loading
def load_checkpoint(model, path, strict=False, deferred=None):
    """Fills `model`'s weights from a checkpoint of any supported format.

    Every model weight whose canonical name is in the checkpoint is assigned; the others
    keep their values. Shapes must agree exactly, but for a pooler that reads another
    width (another `BertConfig.pooling`: "pair_mean" against the others), which starts
    afresh (warned) unless `strict` is True.

    Args:
        model: a `BertEncoder` or a model from `modeling.models`.
        path: str. See `resolve_checkpoint_path` for what is accepted.
        strict: bool or "encoder". True: raise unless every model weight was filled;
            "encoder": unless every encoder weight was (a task head may be new, as when
            fine-tuning starts from a pre-trained checkpoint). Defaults to False.
        deferred: the `modeling.layers.initializers.DeferredDraws` of a model built in
            `deferred_draws()`: once the checkpoint is assigned, the weights it did not
            fill are drawn (those it filled never are).

    Returns:
        `LoadReport` (also logged).

    Raises:
        CheckpointError: unreadable or damaged checkpoint (the model is then left as it
            was); a shape mismatch (naming both variables and both shapes); no variable
            in common at all; whole encoder layers of the checkpoint that the model does
            not have (a config with fewer layers); or, if `strict`, a weight not filled.
    """
    reader = open_checkpoint(path, mapping.hf_head_rules(model))
    targets = mapping.variable_map(model)
    if reader.format == HUGGING_FACE and not getattr(model, "hf_has_pooler", True):
        # Hugging Face's token-level and masked-LM models have no pooler, and these
        # models never use theirs: it is not expected from their files (but kept, to be
        # written back, when the file has it).
        targets = {n: t for n, t in targets.items()
                   if not n.startswith(POOLER_SCOPE) or n in reader.shapes}
    targets, repooled = _without_pooler_of_another_pooling(reader, targets, strict)
    not_filled = _check_fit(reader, targets, strict) + repooled
    values = _read_values(reader, targets)
    for name, value in values.items():  # nothing is assigned unless everything was read
        variable = targets[name][0]
        variable.assign(value.astype(variable.dtype))
    if deferred is not None:
        deferred.draw(filled=[targets[name][0] for name in values])
    unused = sorted(set(reader.shapes) - set(targets))
    report = LoadReport(reader.path, reader.format, list(values), not_filled, unused)
    # Encoder weights missing or left unused deserve a warning; a new task head, or the
    # pre-training heads a fine-tuning model has no use for, are expected.
    encoder_issue = any(n.startswith(mapping.ENCODER_SCOPE) for n in not_filled + unused)
    (logging.warning if encoder_issue else logging.info)(report.summary())
    return report


def _without_pooler_of_another_pooling(reader, targets, strict):
    """(`targets`, []), or, when the checkpoint's pooler reads vectors of another width
    than the model's (a "pair_mean" pooler, 4 * hidden_size, against a [CLS] or "mean"
    one: `BertConfig.pooling`) and `strict` is not True, `targets` without the pooler and
    its names: the pooler then starts afresh, as a new task head does (warned). With
    `strict` True it stays a shape mismatch."""
    pooler = [name for name in targets if name.startswith(POOLER_SCOPE)]
    kernel = POOLER_SCOPE + "kernel"
    if strict is True or kernel not in targets or kernel not in reader.shapes:
        return targets, []
    variable, rule = targets[kernel]
    ckpt_rows = mapping.rule_shape(reader.keras_shape(kernel), _layout_rule(reader, rule))[0]
    rows, width = variable.shape
    if ckpt_rows == rows or {ckpt_rows, rows} != {width, 4 * width}:
        return targets, []
    logging.warning(
        "%s: its pooler reads %d features and this model's %d (bert_config.json's "
        "'pooling' differs from the checkpoint's): the pooler starts afresh.",
        reader.path, ckpt_rows, rows)
    return {n: t for n, t in targets.items() if n not in pooler}, pooler


def _layout_rule(reader, rule):
    """The rule that brings a checkpoint tensor into the model's layout (none for a
    checkpoint in Keras layout already)."""
    return mapping.IDENTITY if reader.keras_layout else rule


# The embedding table, whose rows are the vocabulary's ids.
WORD_EMBEDDINGS = "bert/embeddings/word_embeddings"
POOLER_SCOPE = "bert/pooler/dense/"
# Where `modeling.heads.BiLSTM` weights are named (see `modeling.models`).
BILSTM_SCOPE = "cls/bilstm/"


def _check_fit(reader, targets, strict):
    """Raises `CheckpointError` unless the checkpoint fits the model (see
    `load_checkpoint`); returns the model weights it does not fill."""
    mismatches, not_filled, rows = [], [], None
    for name, (variable, rule) in targets.items():
        if name not in reader.shapes:
            not_filled.append(name)
            continue
        ckpt_shape = mapping.rule_shape(reader.keras_shape(name), _layout_rule(reader, rule))
        if tuple(ckpt_shape) != tuple(variable.shape):
            if name == WORD_EMBEDDINGS and tuple(ckpt_shape)[1:] == tuple(variable.shape)[1:]:
                rows = (ckpt_shape[0], variable.shape[0])
            mismatches.append(
                f"checkpoint variable '{name}' has shape {list(ckpt_shape)} (in the model's "
                f"layout) but model weight '{variable.path}' has shape {list(variable.shape)}")
    if rows:  # the one mismatch a user meets most: the config of another vocabulary
        raise CheckpointError(
            f"{reader.path}: its word embeddings have {rows[0]:,} rows but the config's "
            f"vocab_size is {rows[1]:,}: give the bert_config.json (and vocab.txt) that "
            f"came with this checkpoint.\n  " + "\n  ".join(mismatches))
    if mismatches:
        raise CheckpointError(
            f"{reader.path}: the checkpoint does not fit this model ({len(mismatches)} shape "
            f"mismatches). Check that bert_config.json describes this checkpoint "
            f"(vocab_size, hidden_size, ...):\n  " + "\n  ".join(mismatches))
    if len(not_filled) == len(targets):
        raise CheckpointError(
            f"{reader.path}: no variable of the model is in this checkpoint (it holds e.g. "
            f"{sorted(reader.shapes)[:5]}). Is it a BERT checkpoint?")
    _check_layers(reader.path, sorted(set(reader.shapes) - set(targets)), targets)
    extra_bilstm = [n for n in reader.shapes if n.startswith(BILSTM_SCOPE) and n not in targets]
    if extra_bilstm and strict is True:
        raise CheckpointError(
            f"{reader.path}: the checkpoint's task head has a BiLSTM ({extra_bilstm[0]}, ...) "
            f"that this model does not: build it with the same head (--head=bilstm, "
            f"--bilstm_layers, --bilstm_units), or its answers would skip the BiLSTM.")
    # A checkpoint without any pooler (Hugging Face's BertForMaskedLM and token-level
    # models have none) leaves it to start afresh, as a new task head does.
    no_pooler = not any(name.startswith(POOLER_SCOPE) for name in reader.shapes)
    missing = [n for n in not_filled if strict is True or
               (strict == "encoder" and n.startswith(mapping.ENCODER_SCOPE)
                and not (no_pooler and n.startswith(POOLER_SCOPE)))]
    if missing:
        raise CheckpointError(f"{reader.path}: {len(missing)} model weights are not in "
                              f"the checkpoint: {', '.join(missing)}")
    return not_filled


def _read_values(reader, targets):
    """{canonical name: array in the model's layout} of every model weight the checkpoint
    holds; a tensor that cannot be read is a `CheckpointReadError`."""
    values = {}
    for name, (variable, rule) in targets.items():
        if name not in reader.shapes:
            continue
        try:
            values[name] = mapping.apply_rule(reader.get(name), _layout_rule(reader, rule))
        except (IndexError, tf.errors.OpError) as e:  # e.g. a truncated data file
            raise CheckpointReadError(
                f"{reader.path}: cannot read '{name}' ({type(e).__name__}: "
                f"{op_error_text(e)}); the checkpoint is damaged or was cut short. "
                f"Copy or download it again.") from e
    return values


def _check_layers(path, unused, targets):
    """Whole encoder layers in the checkpoint and not in the model mean the config
    describes a smaller model than the checkpoint: an error, not a silent cut-down."""
    def layers(names):
        return {int(m.group(1)) for m in map(mapping.LAYER_PATTERN.match, names) if m}

    extra = sorted(layers(unused) - layers(targets))
    if extra:
        have = len(layers(targets))
        raise CheckpointError(
            f"{path}: the checkpoint has {extra[-1] + 1} encoder layers but the config "
            f"describes {have} (num_hidden_layers), so layers {extra[0]}-{extra[-1]} would "
            f"be left out. Use the checkpoint's own bert_config.json.")


# --------------------------------------------------------------------------- saving
def _canonical_arrays(model):
    return {name: mapping.invert_rule(np.asarray(variable.numpy()), rule)
            for name, (variable, rule) in mapping.variable_map(model).items()}


def save_google_checkpoint(model, prefix):
    """Writes `model` as a TF1 checkpoint with the original release's variable names.

    The result loads with the original `modeling.py` (`tf.train.init_from_checkpoint`,
    `get_assignment_map_from_checkpoint`) and with `load_checkpoint`. Written under a
    temporary prefix and renamed, so `prefix` is never half-written.

    Returns:
        str, the prefix written.
    """
    prefix = str(prefix)
    arrays = _canonical_arrays(model)
    names = sorted(arrays)
    with file_io.atomic_checkpoint(prefix) as tmp_prefix:
        tf.raw_ops.SaveV2(prefix=tmp_prefix, tensor_names=names,
                          shape_and_slices=[""] * len(names),
                          tensors=[tf.constant(arrays[n]) for n in names])
    return prefix


def save_tf2_checkpoint(model, prefix):
    """Writes `model`'s weights as this project's TF2 checkpoint (canonical names under the
    root child `model`), atomically. Returns the prefix written."""
    prefix = str(prefix)
    weights = {name: variable for name, (variable, _) in mapping.variable_map(model).items()}
    with file_io.atomic_checkpoint(prefix) as tmp_prefix:
        tf.train.Checkpoint(**{TF2_WEIGHTS_KEY: weights}).write(tmp_prefix)
    return prefix
