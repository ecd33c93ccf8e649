"""The classification SavedModel: raw strings in, labels and probabilities out.

Pipeline position: after fine-tuning (`run_classifier.py --export_dir`,
`export_saved_model.py --task_type=classification`). Two signatures (see
`serving.saved_model` for what they share):
  * `serving_default`: `text_a` (and `text_b` for sentence-pair tasks; an empty string
    there gives a single sequence), tf.string [batch] -> in-graph WordPiece and packing
    (long texts read as the model was trained: truncated, head and tail, or every window
    with the windows' logits averaged) -> `probabilities` and `logits` [batch,
    num_labels], `label_id` and `label` (the task's label strings); for regression
    `score`; for multi-label models `probabilities` (a sigmoid per label), `logits`,
    `predicted` (int32 [batch, num_labels]: 1 where the probability reaches the
    threshold) and `labels` (the predicted labels, [batch, most predicted], padded with
    "").
  * `serving_ids`: the three id inputs; the same outputs (multi-label: without `labels`,
    so that it converts to TF Lite's builtin ops).
`model.tflite` also holds `serving_packed` (`from_packed`): the same outputs for the
sequences packed in rows, one per `cls_positions`.
"""


import tensorflow as tf

from modeling import BertClassifier
from serving import saved_model as export
from tasks import registry
from text.graph_packing import pack_document_ids


class ClassificationModule(export.ServingModule):
    task = "classification"
    fast_path = "tasks.classification.fast_path:ClassificationFastPath"

    def __init__(self, model, vocab_file, do_lower_case, max_seq_length, label_list,
                 regression, long_document="truncate", doc_stride=None, multi_label=False,
                 threshold=0.5):
        super().__init__("bert_classifier", model, vocab_file, do_lower_case,
                         max_seq_length, trim_padding=True)
        self.regression = regression
        self.multi_label, self.threshold = multi_label, threshold
        self.labels = tf.constant(label_list or [""], tf.string)
        self.long_document, self.doc_stride = long_document, doc_stride

    def serving_config(self):
        return dict(super().serving_config(),
                    labels=[label.decode("utf-8") for label in self.labels.numpy()],
                    regression=self.regression, long_document=self.long_document,
                    doc_stride=self.doc_stride, multi_label=self.multi_label,
                    threshold=self.threshold)

    def _outputs(self, packed, rows=None, batch=None, names=True):
        return self._answers(self.run_model(**packed)["logits"], rows, batch, names)

    def _answers(self, logits, rows=None, batch=None, names=True):
        logits = tf.cast(logits, tf.float32)
        if rows is not None:  # windows: the mean of each row's windows' logits
            logits = tf.math.unsorted_segment_mean(logits, rows, batch)
        if self.regression:
            return {"score": logits[:, 0]}
        if self.multi_label:
            probabilities = tf.math.sigmoid(logits)
            predicted = probabilities >= self.threshold
            chosen = tf.ragged.boolean_mask(
                tf.broadcast_to(self.labels, tf.shape(predicted)), predicted)
            outputs = {"probabilities": probabilities, "logits": logits,
                       "predicted": tf.cast(predicted, tf.int32)}
            if names:  # (not in serving_ids, which converts to TF Lite's builtin ops)
                outputs["labels"] = chosen.to_tensor("")
            return outputs
        label_id = tf.argmax(logits, -1, output_type=tf.int32)
        return {"probabilities": tf.nn.softmax(logits, -1), "label_id": label_id,
                "label": tf.gather(self.labels, label_id), "logits": logits}

    def from_ids(self, input_ids, input_mask, segment_ids):
        return self._outputs({"input_ids": input_ids, "input_mask": input_mask,
                              "segment_ids": segment_ids}, names=False)

    def from_packed(self, input_ids, segment_ids, position_ids, sequence_ids, cls_positions):
        """`serving_ids`' answers for the sequences packed in the rows (TF Lite only: see
        `serving.saved_model`), in `cls_positions`' order."""
        return self._answers(self.packed_logits(input_ids, segment_ids, position_ids,
                                                sequence_ids, cls_positions), names=False)

    def from_text(self, text_a, text_b=None):
        ids_a = self.tokenizer.tokenize(export.as_batch(text_a))
        ids_b = None if text_b is None else self.tokenizer.tokenize(export.as_batch(text_b))
        packed, rows = pack_document_ids(ids_a, ids_b, self.max_seq_length, self.cls_id,
                                         self.sep_id, self.long_document, self.doc_stride)
        if self.long_document != "windows":
            return self._outputs(packed)
        batch = tf.shape(ids_a.row_lengths(), out_type=tf.int64)[0]
        return self._outputs(packed, rows, batch)


def export_classification(model, export_dir, vocab_file, do_lower_case, max_seq_length,
                          label_list, regression=False, pair=False, long_document="truncate",
                          doc_stride=None, tflite=None, tflite_quantize=False,
                          multi_label=False, threshold=0.5):
    """Writes the SavedModel; returns `export_dir`.

    Args:
        model: a `modeling.BertClassifier`.
        label_list: the label strings in the model's order (None for regression).
        pair: bool. The raw-text signature takes `text_b` too.
        long_document, doc_stride: how the raw-text signature reads a long text_a (see
            `text.packing.pack_document`); as the model was fine-tuned.
        multi_label, threshold: a sigmoid per label, each predicted from `threshold`.
        tflite, tflite_quantize: also write `serving_ids` as TF Lite (see
            `serving.saved_model.save`): by default `model.tflite` when the model
            converts (a BiLSTM head does not), the fast path of `serving.load`.
    """
    module = ClassificationModule(model, vocab_file, do_lower_case, max_seq_length,
                                  label_list, regression, long_document, doc_stride,
                                  multi_label, threshold)
    text = export.TEXT_SPEC
    if pair:
        serving_text = export.serving_function(
            lambda text_a, text_b: module.from_text(text_a, text_b), [text, text])
    else:
        serving_text = export.serving_function(lambda text_a: module.from_text(text_a), [text])
    return export.save(module, export_dir, serving_text, tflite, tflite_quantize)


def model_for_export(bert_config, options):
    """The classifier of `options` (its labels, or one score), weights not loaded."""
    labels = registry.labels_of(options)
    if not options.regression and not labels:
        raise ValueError("A classifier needs --labels or --labels_file (or --regression).")
    return BertClassifier(bert_config, 1 if options.regression else len(labels),
                          **options.head_kwargs())


def save_for_export(model, export_dir, options, vocab_file, do_lower_case, max_seq_length,
                    tflite=None, tflite_quantize=False):
    return export_classification(
        model, export_dir, vocab_file, do_lower_case, max_seq_length,
        registry.labels_of(options), options.regression, options.pair,
        options.long_document, options.doc_stride, tflite=tflite,
        tflite_quantize=tflite_quantize, multi_label=options.multi_label,
        threshold=options.multi_label_threshold)
