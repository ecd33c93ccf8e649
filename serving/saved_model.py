"""SavedModel plumbing every task's export shares: the serving module, the signature
specs, the atomic write, and words with their offsets for signatures that answer in
character positions.

Pipeline position: the last stage (fine-tuning -> SavedModel). Each task's `export.py`
(`tasks.classification.export`, `tasks.squad.export`, `tasks.tagging.export`) subclasses
`ServingModule` with its two signatures:
  * `serving_default`: raw strings -> in-graph WordPiece (`text.graph_tokenizer`,
    tensorflow-text ops) -> packing -> the model -> the task's answer. Loading needs
    `import tensorflow_text`.
  * `serving_ids`: `input_ids`, `input_mask`, `segment_ids` (int32 [batch, seq_length]),
    core TensorFlow ops only (TF Serving, TF Lite).
`model.tflite` holds `serving_ids` and, for a task whose model answers from rows that pack
several sequences (`packed_signature`), `serving_packed` beside it (the same weights): the
inputs of `modeling.encoder.PACKED_INPUT_NAMES` (and the task's), which `serving.load`
fills with a request's short texts instead of padding (`serving.packed_rows`).
The export is written to a temporary folder and renamed: never half-written, and an
existing export is replaced only once the new one is complete.
"""

import contextlib
import inspect
import json
import os
import shutil
import tempfile

import tensorflow as tf
from absl import logging

from common import file_io
from modeling import padding
from modeling.inputs import INPUT_NAMES
from serving.export_files import (
    PACKED_SIGNATURE,
    SERVING_CONFIG_FILE,
    TFLITE_FILE,
    TFLITE_INT8_FILE,
    VOCAB_FILE,
)
from text.graph_tokenizer import GraphTokenizer
from text.tokenization import load_vocab

IDS_SPEC = tf.TensorSpec([None, None], tf.int32)
# Flat positions in the [rows * width] token matrix of packed rows (`cls_positions`).
POSITIONS_SPEC = tf.TensorSpec([None], tf.int32)
# Requests whose padding is trimmed are cut to a multiple of this (see `run_model`).
SERVING_PAD_MULTIPLE = 8
# Strings of any rank up to 1: a batch [batch], or one string (see `as_batch`).
TEXT_SPEC = tf.TensorSpec(None, tf.string)


def serving_function(function, input_signature):
    """A serving signature: `function` traced over `input_signature` as written, without
    AutoGraph. The serving graphs hold no Python control flow over tensors, and AutoGraph's
    rewriting of every function the model calls took a third of an export's time
    (`bench/RESULTS.md`)."""
    return tf.function(function, input_signature=input_signature, autograph=False)


def untracked(module, name, value):
    """Sets `module.name = value` without making `value` part of what is saved: a Keras 3
    model saved as a child would write every weight a second time (its Keras variables are
    objects of their own beside the `tf.Variable`s they wrap), doubling the export."""
    module.__dict__[name] = value


class ServingModule(tf.Module):
    """What every export holds: the model (its variables held directly, since Keras 3
    layers are not all tracked by tf.Module), the in-graph tokenizer and special ids.
    Subclasses define `from_ids(input_ids, input_mask, segment_ids)` and `from_text`.

    The SavedModel's graphs run the encoder with `skip_padding` (its dense layers on the
    real tokens alone; a batch of SST-2 sentences padded to its longest is half padding:
    `bench/RESULTS.md`); the TF Lite file is converted from graphs traced without it
    (`padded_graphs`), since TF Lite has no kernel for a data-dependent token count.
    """

    task = None  # the registry name of the task, for `serving.json`
    # The spec of `from_packed`'s `cls_positions`, where it has one: a position per sequence.
    packed_cls_spec = POSITIONS_SPEC
    # "module:Class" of the `serving.fast_path.FastPath` that answers this export from raw
    # text without TensorFlow (`serving.load` imports it by this name), or None.
    fast_path = None
    skip_padding = True

    def __init__(self, name, model, vocab_file, do_lower_case, max_seq_length,
                 trim_padding=False):
        super().__init__(name=name)
        self.trim_padding = trim_padding
        untracked(self, "model", model)
        self.model_variables = [v.value if hasattr(v, "value") else v
                                for v in model.variables]
        self.tokenizer = GraphTokenizer(vocab_file, do_lower_case=do_lower_case)
        untracked(self, "vocab_file", vocab_file)
        untracked(self, "do_lower_case", bool(do_lower_case))
        vocab = load_vocab(vocab_file)
        self.cls_id, self.sep_id, self.unk_id = vocab["[CLS]"], vocab["[SEP]"], vocab["[UNK]"]
        self.max_seq_length = max_seq_length

    def serving_config(self):
        """What `serving.load` needs beside the SavedModel (written as `serving.json`):
        the tokenizer's settings, the task (`fast`: its registry name) and its fast path
        (`fast_path`: the class that answers from raw text around `serving_ids`, see
        `serving.predictor`) with what it needs; subclasses add theirs."""
        return {"model": self.name, "fast": self.task, "fast_path": self.fast_path,
                "vocab_file": VOCAB_FILE,
                "do_lower_case": self.do_lower_case, "max_seq_length": self.max_seq_length}

    def run_model(self, input_ids, input_mask, segment_ids):
        """The model on validated inputs (see `check_inputs`). With `trim_padding` (for
        outputs per sequence, not per position), only over the columns some sequence of
        the request uses, rounded up to `SERVING_PAD_MULTIPLE`: the same answers (see
        `modeling.padding.trim_padding`), and a request of short sentences is not padded
        to `max_seq_length`."""
        with tf.control_dependencies(self.check_inputs(input_ids, input_mask, segment_ids)):
            inputs = {name: tf.identity(t) for name, t in
                      zip(INPUT_NAMES, (input_ids, input_mask, segment_ids))}
        if self.trim_padding:
            inputs = padding.trim_padding(inputs, SERVING_PAD_MULTIPLE)
        return self.model(inputs, training=False, skip_padding=self.skip_padding)

    @contextlib.contextmanager
    def padded_graphs(self):
        """Functions traced inside run the encoder on every position, padding included
        (the graphs TF Lite converts)."""
        before, self.skip_padding = self.skip_padding, False
        try:
            yield
        finally:
            self.skip_padding = before

    def packed_signature(self):
        """`serving_packed` for the TF Lite file (see the module docstring): a
        `serving_function` over the packed inputs, answering as `serving_ids` does for
        each packed sequence, when the task has one (`from_packed`) and the model runs on
        packed rows (`model.packable`); else None."""
        if not hasattr(self, "from_packed") or not getattr(self.model, "packable", False):
            return None
        specs = [IDS_SPEC] * 4 + [self.packed_cls_spec] * (len(
            inspect.signature(self.from_packed).parameters) - 4)
        return serving_function(self.from_packed, specs)

    def packed_logits(self, input_ids, segment_ids, position_ids, sequence_ids,
                      cls_positions=None):
        """The model's logits on packed rows (`call_packed`), for a task's `from_packed`:
        per sequence with `cls_positions`, else per position."""
        inputs = {"input_ids": input_ids, "segment_ids": segment_ids,
                  "position_ids": position_ids, "sequence_ids": sequence_ids}
        if cls_positions is not None:
            inputs["cls_positions"] = cls_positions
        return self.model.call_packed(inputs)["logits"]

    def check_inputs(self, input_ids, input_mask, segment_ids):
        """Assertions that fail the request with an `InvalidArgumentError` naming the
        input, instead of answering a wrong one: the three inputs of one shape, at least
        one position, ids in [0, vocab_size) (a negative id would read another row),
        segments in [0, type_vocab_size), a mask of 0s and 1s."""
        encoder = self.model.encoder
        shape = tf.shape(input_ids)
        return [
            tf.debugging.assert_equal(tf.shape(input_mask), shape, message=(
                "input_mask must have the shape of input_ids [batch, seq_length]")),
            tf.debugging.assert_equal(tf.shape(segment_ids), shape, message=(
                "segment_ids must have the shape of input_ids [batch, seq_length]")),
            tf.debugging.assert_positive(shape[1], message=(
                "input_ids: sequences need at least one position ([CLS])")),
            tf.debugging.assert_non_negative(input_ids, message="input_ids: negative id"),
            tf.debugging.assert_less(input_ids, encoder.vocab_size, message=(
                f"input_ids: ids must be below vocab_size={encoder.vocab_size}")),
            tf.debugging.assert_non_negative(segment_ids, message=(
                "segment_ids: negative segment")),
            tf.debugging.assert_less(segment_ids, encoder.type_vocab_size, message=(
                f"segment_ids: segments must be below type_vocab_size="
                f"{encoder.type_vocab_size}")),
            tf.debugging.Assert(tf.reduce_all((input_mask == 0) | (input_mask == 1)),
                                ["input_mask: values must be 0 or 1"]),
        ]


def save(module, export_dir, text_signature, tflite=False, tflite_quantize=False):
    """Writes `module` as a SavedModel with `serving_default` = `text_signature` (a
    `tf.function` with its input signature) and `serving_ids` = `module.from_ids` over
    the three id inputs; atomically. `tflite`: also `model.tflite` of `serving_ids` (see
    `write_tflite`): True = required, None = when the model converts (a BiLSTM head does
    not), False = no; `tflite_quantize` implies True. Returns `export_dir`."""
    serving_ids = serving_function(module.from_ids, [IDS_SPEC] * 3)
    module.serving_text, module.serving_ids = text_signature, serving_ids
    return save_signatures(module, export_dir, {"serving_default": text_signature,
                                                "serving_ids": serving_ids},
                           tflite="serving_ids", tflite_when=tflite,
                           tflite_quantize=tflite_quantize)


def save_signatures(module, export_dir, signatures, tflite=None, tflite_quantize=False,
                    tflite_when=True):
    """Writes `module` with `signatures` as a SavedModel, and with `tflite` (a signature
    name) its TF Lite conversion beside it (`tflite_when`: True = required, None = when
    it converts, else a warning, False = none; `tflite_quantize` implies True); for a
    `ServingModule`, the TF Lite file also holds its `packed_signature` (not in the
    SavedModel), and the folder `serving.json` and the vocabulary (see
    `write_serving_config`). The folder appears complete or not at all."""
    if tflite_quantize:
        tflite_when = True
    if tflite_when is False:
        tflite = None
    with file_io.atomic_path(export_dir) as tmp:
        tf.saved_model.save(module, tmp, signatures=signatures)
        if tflite:
            try:
                functions = {tflite: signatures[tflite]}
                packed = (module.packed_signature() if isinstance(module, ServingModule)
                          else None)
                if packed:
                    functions[PACKED_SIGNATURE] = packed
                write_tflite(tmp, functions, module, tflite_quantize)
            except _CONVERTER_ERRORS as exc:
                if tflite_when:
                    raise
                logging.warning("%s: no %s, the model does not convert to TF Lite builtin "
                                "ops (%s); serving.load serves it with the SavedModel.",
                                export_dir, TFLITE_FILE, str(exc).strip().splitlines()[0]
                                if str(exc).strip() else type(exc).__name__)
                tflite = None
        if isinstance(module, ServingModule) and "serving_default" in signatures:
            write_serving_config(module, tmp, signatures["serving_default"],
                                 TFLITE_FILE if tflite else None,
                                 TFLITE_INT8_FILE if tflite and tflite_quantize else None)
    return export_dir




def text_input_names(signature):
    """The raw-text signature's inputs, in the order of its function's arguments."""
    return list(inspect.signature(signature.python_function).parameters)


def write_serving_config(module, export_dir, text_signature, tflite_file,
                         tflite_int8_file=None):
    """`serving.json` (`module.serving_config()`, the raw-text inputs in order, the TF
    Lite files if any) and a copy of the vocabulary, for `serving.load`."""
    config = dict(module.serving_config(), text_inputs=text_input_names(text_signature),
                  tflite=tflite_file, tflite_int8=tflite_int8_file)
    shutil.copyfile(module.vocab_file, os.path.join(export_dir, VOCAB_FILE))
    with open(os.path.join(export_dir, SERVING_CONFIG_FILE), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=1)


try:  # what the converter raises for an op it cannot lower
    from tensorflow.lite.python.convert_phase import ConverterError
    _CONVERTER_ERRORS = (ConverterError,)
except ImportError:  # another TensorFlow layout
    _CONVERTER_ERRORS = (Exception,)



def write_tflite(saved_model_dir, functions, module, quantize=False):
    """Converts signatures ({name: function}, `tf.function`s on `module`, in one file
    that holds the weights once) to TF Lite with builtin ops only (no Select
    TF ops, no custom ops): `model.tflite`, float32; with `quantize`, also
    `model_int8.tflite`, dynamic-range quantized (int8 weights, float activations: about a
    quarter of the size; tensors under 1,024 values stay float). Inputs have a dynamic
    [batch, seq] shape: resize them to the request (`interpreter.resize_tensor_input`),
    or use the signature runner.

    The converter reads a SavedModel of `functions` and the variables they read, saved in
    a temporary folder, not the export:
    the converter loads its source twice per file, and the export's other functions (the
    raw-text signature, the tokenizer's tables) made up most of that time. A module with
    `padded_graphs` (a `ServingModule`, the TF Hub-style encoder) has the signatures traced
    again in `module.padded_graphs()`: the export's own graph skips the padding, which TF
    Lite's builtin ops cannot express.

    Only the ids signatures convert: the raw-text ones tokenize with regular expressions
    and tensorflow-text ops, which TF Lite's builtin ops do not have."""
    with tempfile.TemporaryDirectory(prefix="tflite_") as source:
        _save_signatures_alone(module, functions, source)

        def convert(optimize):
            converter = tf.lite.TFLiteConverter.from_saved_model(
                source, signature_keys=list(functions))
            converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
            if optimize:
                converter.optimizations = [tf.lite.Optimize.DEFAULT]
            return converter.convert()

        for name, optimize in ((TFLITE_FILE, False),) + (((TFLITE_INT8_FILE, True),)
                                                         if quantize else ()):
            model = convert(optimize)  # first: a failed conversion leaves no empty file
            with open(os.path.join(saved_model_dir, name), "wb") as f:
                f.write(model)


def _save_signatures_alone(module, functions, folder):
    """Writes the SavedModel `folder` holding `functions` ({signature: a `tf.function`
    with its input signature}) and the variables they read, nothing else of `module`;
    traced with the padding computed if `module` has `padded_graphs`."""
    concrete = {}
    for signature, function in functions.items():
        if hasattr(module, "padded_graphs"):
            with module.padded_graphs():
                concrete[signature] = serving_function(
                    function.python_function, function.input_signature
                ).get_concrete_function()
        else:
            concrete[signature] = function.get_concrete_function()
    holder = tf.Module()
    holder.variables_read = list({id(v): v for c in concrete.values()
                                  for v in c.variables}.values())
    tf.saved_model.save(holder, folder, signatures=concrete)


def as_batch(text):
    """A request's strings as a batch [batch]: a single string (a scalar) is a batch of
    one; more dimensions are refused."""
    check = tf.debugging.assert_less_equal(
        tf.rank(text), 1, message="text inputs are a string or a batch of strings [batch]")
    with tf.control_dependencies([check]):
        return tf.reshape(text, [-1])


def split_words(tokenizer, text, unk_id=None):
    """Raw strings -> words split at whitespace and punctuation as the BERT tokenizer
    splits them (ragged [batch, (words)]), their byte offsets into the input (int32), and
    each word's WordPiece ids (ragged [n_words, (pieces)]). A word that tokenizes to
    nothing (accents or control characters alone) has no pieces, as in the original's
    SQuAD features; with `unk_id`, it has one, [UNK] (a tagger labels every word)."""
    words, begin, end = tokenizer.split_words_with_offsets(text)
    pieces = tokenizer.tokenize(words.flat_values)
    if unk_id is None:
        return words, begin, end, pieces
    empty = tf.cast(pieces.row_lengths() == 0, tf.int64)
    unk = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(empty)], tf.constant(unk_id, tf.int64)), empty,
        validate=False)
    return words, begin, end, tf.concat([pieces, unk], axis=1)


def char_offsets(texts, byte_offsets):
    """Byte offsets into `texts` (same shape, 1-D) -> character offsets."""
    return tf.strings.length(tf.strings.substr(texts, tf.zeros_like(byte_offsets),
                                               byte_offsets), unit="UTF8_CHAR")
