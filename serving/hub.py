"""The encoder and its preprocessor as TF Hub-style SavedModels: the interface of the BERT
models on TF Hub / Kaggle that TensorFlow's tutorials ("Classify text with BERT") and many
notebooks are written against.

Pipeline position: after pre-training or fine-tuning (`export_saved_model.py
--task_type=encoder` and `--task_type=preprocessor`); the user then builds their own model
on top, e.g. with TF Hub:

    preprocessor = hub.KerasLayer("bert_preprocess")      # strings -> the three inputs
    encoder = hub.KerasLayer("bert_encoder", trainable=True)
    outputs = encoder(preprocessor(text_input))           # pooled_output, sequence_output
    net = tf_keras.layers.Dense(1)(outputs["pooled_output"])

The encoder, called with a dict of int32 `input_word_ids`, `input_mask` and
`input_type_ids` ([batch, seq], any seq up to `max_position_embeddings`) and `training`,
returns `pooled_output` [batch, hidden], `sequence_output` [batch, seq, hidden],
`encoder_outputs` (one [batch, seq, hidden] per layer) and `default` (= pooled); it
exposes `variables`, `trainable_variables` and `regularization_losses` for fine-tuning, and
a `serving_default` signature (with `encoder_outputs_{i}` flattened).

Its graphs compute the real tokens only (`BertEncoder(..., skip_padding=True)`: the dense
layers on the rows `input_mask` marks, dropout drawn for them alone when called with
`training=True`): `sequence_output` and `encoder_outputs` hold zeros at padded positions,
where the original's graph holds numbers computed from the padding ids that no task reads.
Its TF Lite file is converted from graphs that compute every position (TF Lite has no
kernel for a data-dependent token count); they agree on the real tokens.

The preprocessor, called with strings [batch], returns the three inputs at its default
length; `tokenize(strings)` gives ragged int32 [batch, (words), (pieces)] and
`bert_pack_inputs([segment_a, segment_b], seq_length=N)` packs one or two tokenized
segments (`[CLS] a [SEP] b [SEP]`, pairs truncated as the original). Same ids as the
Python tokenizer.
"""

import tensorflow as tf

from serving import saved_model as export
from text.graph_packing import pack_ids
from text.graph_tokenizer import GraphTokenizer
from text.tokenization import load_vocab

AutoTrackable = tf.__internal__.tracking.AutoTrackable  # plain attributes survive saving

HUB_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")


class EncoderModule(AutoTrackable):
    """A BertEncoder behind the TF Hub encoder interface (see the module docstring)."""

    def __init__(self, encoder):
        super().__init__()
        export.untracked(self, "encoder", encoder)
        # TF Hub's reusable-SavedModel attributes (plain lists, saved with the object).
        self.variables = [v.value if hasattr(v, "value") else v for v in encoder.variables]
        self.trainable_variables = [v.value if hasattr(v, "value") else v
                                    for v in encoder.trainable_variables]
        self.regularization_losses = []

    skip_padding = True

    padded_graphs = export.ServingModule.padded_graphs

    def _outputs(self, inputs, training):
        out = self.encoder({"input_ids": inputs["input_word_ids"],
                            "input_mask": inputs["input_mask"],
                            "segment_ids": inputs["input_type_ids"]}, training=training,
                           skip_padding=self.skip_padding)
        return {"pooled_output": out["pooled_output"],
                "sequence_output": out["sequence_output"],
                "encoder_outputs": list(out["encoder_outputs"]),
                "default": out["pooled_output"]}

    @tf.function(autograph=False)  # as `serving.saved_model.serving_function`
    def __call__(self, inputs, training=False):
        return self._outputs(inputs, training)

    def serve(self, input_word_ids, input_mask, input_type_ids):
        # Traced on its own (not through `__call__`'s traces), so that `padded_graphs`
        # can trace it again for TF Lite.
        out = self._outputs({"input_word_ids": input_word_ids, "input_mask": input_mask,
                             "input_type_ids": input_type_ids}, training=False)
        flat = {name: out[name] for name in ("pooled_output", "sequence_output", "default")}
        flat.update({f"encoder_outputs_{i}": t for i, t in enumerate(out["encoder_outputs"])})
        return flat


def export_encoder(encoder, export_dir, tflite=None, tflite_quantize=False):
    """Writes the TF Hub-style encoder SavedModel; returns `export_dir`.

    Args:
        encoder: a `modeling.BertEncoder` (or the encoder of a task model), weights loaded.
        tflite, tflite_quantize: also write `model.tflite` (and `model_int8.tflite`) of
            `serving_default` (see `serving.saved_model.save_signatures`: by default
            when the model converts).
    """
    module = EncoderModule(encoder)
    spec = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in HUB_INPUTS}
    for training in (False, True):  # TF Hub's KerasLayer calls with training=True/False
        module.__call__.get_concrete_function(spec, training=training)
    serving = export.serving_function(module.serve, [
        tf.TensorSpec([None, None], tf.int32, name=name) for name in HUB_INPUTS])
    module.serving = serving
    return export.save_signatures(module, export_dir, {"serving_default": serving},
                                  tflite="serving_default", tflite_when=tflite,
                                  tflite_quantize=tflite_quantize)


class PreprocessorModule(AutoTrackable):
    """The in-graph tokenizer and packer behind the TF Hub preprocessor interface."""

    def __init__(self, vocab_file, do_lower_case, seq_length):
        super().__init__()
        self.tokenizer = GraphTokenizer(vocab_file, do_lower_case=do_lower_case)
        vocab = load_vocab(vocab_file)
        self.cls_id, self.sep_id = vocab["[CLS]"], vocab["[SEP]"]
        self.seq_length = seq_length
        self.variables, self.trainable_variables, self.regularization_losses = [], [], []

    def _tokenize(self, strings):
        return tf.cast(self.tokenizer.tokenize_words(export.as_batch(strings)), tf.int32)

    def _pack(self, segments, seq_length):
        pieces = [tf.cast(s.merge_dims(1, 2) if s.ragged_rank == 2 else s, tf.int64)
                  for s in segments]
        if len(pieces) > 2:
            raise ValueError("bert_pack_inputs packs one or two segments.")
        packed = pack_ids(pieces[0], pieces[1] if len(pieces) == 2 else None, seq_length,
                          self.cls_id, self.sep_id)
        return {"input_word_ids": packed["input_ids"], "input_mask": packed["input_mask"],
                "input_type_ids": packed["segment_ids"]}

    @tf.function(input_signature=[export.TEXT_SPEC], autograph=False)
    def __call__(self, strings):
        return self._pack([self._tokenize(strings)], self.seq_length)


def export_preprocessor(export_dir, vocab_file, do_lower_case, seq_length=128):
    """Writes the TF Hub-style preprocessor SavedModel; returns `export_dir`."""
    module = PreprocessorModule(vocab_file, do_lower_case, seq_length)
    module.tokenize = export.serving_function(module._tokenize, [export.TEXT_SPEC])
    segment = tf.RaggedTensorSpec([None, None, None], tf.int32, ragged_rank=2)
    length = tf.TensorSpec([], tf.int32)
    module.bert_pack_inputs = tf.function(module._pack, autograph=False)
    for count in (1, 2):  # one segment, or a pair
        module.bert_pack_inputs.get_concrete_function([segment] * count, length)
    return export.save_signatures(module, export_dir, {"serving_default": module.__call__})
