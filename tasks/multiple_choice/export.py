"""The multiple-choice SavedModel: a context and its choices as text in, a score and a
probability per choice and the chosen index out.

Pipeline position: after fine-tuning (`run_swag.py --export_dir`,
`export_saved_model.py --task_type=multiple_choice`). Two signatures (see
`serving.saved_model` for what they share):
  * `serving_default`: `context` tf.string [batch], `question` tf.string [batch] (empty
    strings for none) and `choices` tf.string [batch, num_choices] -> each choice packed
    as in training (`[CLS] context [SEP] question choice [SEP]`, in-graph WordPiece) ->
    `scores` (the logits) and `probabilities`, float32 [batch, num_choices], and
    `label_id`, int32 [batch] (the chosen choice). For SWAG: context = sent1,
    question = sent2, choices = the four endings.
  * `serving_ids`: the three id inputs, int32 [batch, num_choices, seq_length]; the same
    outputs.
`model.tflite` also holds `serving_packed` (`from_packed`): the same outputs for choices
packed in rows, `cls_positions` [batch, num_choices].
"""

import tensorflow as tf

from modeling.inputs import INPUT_NAMES
from modeling.padding import trim_padding
from serving import saved_model as export
from tasks.multiple_choice.model import BertMultipleChoice
from text.graph_packing import pack_ids

CHOICE_IDS_SPEC = tf.TensorSpec([None, None, None], tf.int32)
CHOICES_SPEC = tf.TensorSpec([None, None], tf.string)


class MultipleChoiceModule(export.ServingModule):
    task = "multiple_choice"
    fast_path = "tasks.multiple_choice.fast_path:MultipleChoiceFastPath"
    packed_cls_spec = export.IDS_SPEC  # cls_positions [batch, num_choices]

    def __init__(self, model, vocab_file, do_lower_case, max_seq_length):
        super().__init__("bert_multiple_choice", model, vocab_file, do_lower_case,
                         max_seq_length)

    def _outputs(self, flat, batch, num_choices):
        """The model on packed sequences [batch * num_choices, seq_length], cut to the
        request's longest sequence (the same answers, see `modeling.padding.trim_padding`)."""
        with tf.control_dependencies(self.check_inputs(*(flat[n] for n in INPUT_NAMES))):
            flat = {name: tf.identity(flat[name]) for name in INPUT_NAMES}
        flat = trim_padding(flat, export.SERVING_PAD_MULTIPLE)
        inputs = {name: tf.reshape(value, [batch, num_choices, -1])
                  for name, value in flat.items()}
        return self._answers(self.model(inputs, training=False,
                                        skip_padding=self.skip_padding)["logits"])

    @staticmethod
    def _answers(logits):
        scores = tf.cast(logits, tf.float32)
        return {"scores": scores, "probabilities": tf.nn.softmax(scores, -1),
                "label_id": tf.argmax(scores, -1, output_type=tf.int32)}

    def from_packed(self, input_ids, segment_ids, position_ids, sequence_ids, cls_positions):
        """`serving_ids`' answers for the choices packed in the rows (TF Lite only: see
        `serving.saved_model`); `cls_positions` [batch, num_choices]."""
        return self._answers(self.packed_logits(input_ids, segment_ids, position_ids,
                                                sequence_ids, cls_positions))

    def from_ids(self, input_ids, input_mask, segment_ids):
        shape = tf.shape(input_ids)
        flat = {name: tf.reshape(value, [-1, shape[2]]) for name, value in
                zip(INPUT_NAMES, (input_ids, input_mask, segment_ids))}
        return self._outputs(flat, shape[0], shape[1])

    def from_text(self, context, question, choices):
        context, question = export.as_batch(context), export.as_batch(question)
        shape = tf.shape(choices)
        checks = [tf.debugging.assert_equal(tf.shape(context)[0], shape[0], message=(
                      "choices must be [batch, num_choices], one row per context")),
                  tf.debugging.assert_equal(tf.shape(question), tf.shape(context), message=(
                      "question must be [batch], one per context (empty strings for "
                      "none)"))]
        with tf.control_dependencies(checks):
            num_choices = tf.identity(shape[1])
        first = tf.repeat(context, num_choices)
        question = tf.repeat(question, num_choices)
        choice = tf.reshape(choices, [-1])
        second = tf.where(tf.strings.length(question) > 0,
                          tf.strings.join([question, choice], " "), choice)
        packed = pack_ids(self.tokenizer.tokenize(first), self.tokenizer.tokenize(second),
                          self.max_seq_length, self.cls_id, self.sep_id)
        return self._outputs(packed, shape[0], num_choices)


def export_multiple_choice(model, export_dir, vocab_file, do_lower_case, max_seq_length,
                           tflite=None, tflite_quantize=False):
    """Writes the SavedModel of a `BertMultipleChoice` (atomically); returns
    `export_dir`. `tflite`, `tflite_quantize`: also `model.tflite` of `serving_ids` (see
    `serving.saved_model.save`: by default when the model converts)."""
    module = MultipleChoiceModule(model, vocab_file, do_lower_case, max_seq_length)
    module.serving_text = export.serving_function(
        module.from_text, [export.TEXT_SPEC, export.TEXT_SPEC, CHOICES_SPEC])
    module.serving_ids = export.serving_function(module.from_ids, [CHOICE_IDS_SPEC] * 3)
    return export.save_signatures(
        module, export_dir, {"serving_default": module.serving_text,
                             "serving_ids": module.serving_ids},
        tflite="serving_ids", tflite_when=tflite, tflite_quantize=tflite_quantize)


def model_for_export(bert_config, options=None):
    """The multiple-choice model (any number of choices), weights not loaded."""
    return BertMultipleChoice(bert_config)


def save_for_export(model, export_dir, options, vocab_file, do_lower_case, max_seq_length,
                    tflite=None, tflite_quantize=False):
    return export_multiple_choice(model, export_dir, vocab_file, do_lower_case,
                                  max_seq_length, tflite=tflite,
                                  tflite_quantize=tflite_quantize)
