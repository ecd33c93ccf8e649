"""SavedModel export of a fine-tuned classifier, for TF Serving, TF Lite or plain TensorFlow.

Pipeline position: the last stage (fine-tuning -> SavedModel). `run_classifier.py
--export_dir` and `export_saved_model.py` call `export_classifier`.

Two signatures:
  * `serving_default`: raw strings. `text_a` (and `text_b` for sentence-pair tasks; an
    empty string there gives a single sequence) -> in-graph WordPiece
    (`data_prep.graph_tokenizer`, tensorflow-text ops) -> packing -> the model. Returns
    `probabilities` [batch, num_labels], `label_id` and `label` (the task's label
    strings); for regression `score`. Loading needs `import tensorflow_text`.
  * `serving_ids`: `input_ids`, `input_mask`, `segment_ids` (int32 [batch, seq_length]),
    core TensorFlow ops only; same outputs.
The export is written to a temporary folder and renamed: never half-written.
"""

import os
import shutil

import tensorflow as tf

from data_prep.graph_packing import pack_ids
from data_prep.graph_tokenizer import GraphTokenizer
from data_prep.tokenization import load_vocab

INPUTS = ("input_ids", "input_mask", "segment_ids")


class _ClassifierModule(tf.Module):
    def __init__(self, model, vocab_file, do_lower_case, max_seq_length, label_list,
                 regression):
        super().__init__(name="bert_classifier")
        self.model = model
        # Keras 3 layers are not all tracked by tf.Module: hold the variables directly.
        self.model_variables = [v.value if hasattr(v, "value") else v
                                for v in model.variables]
        self.tokenizer = GraphTokenizer(vocab_file, do_lower_case=do_lower_case)
        vocab = load_vocab(vocab_file)
        self.cls_id, self.sep_id = vocab["[CLS]"], vocab["[SEP]"]
        self.max_seq_length = max_seq_length
        self.regression = regression
        self.labels = tf.constant(label_list or [""], tf.string)

    def _outputs(self, inputs):
        logits = tf.cast(self.model(inputs, training=False)["logits"], tf.float32)
        if self.regression:
            return {"score": logits[:, 0]}
        label_id = tf.argmax(logits, -1, output_type=tf.int32)
        return {"probabilities": tf.nn.softmax(logits, -1), "label_id": label_id,
                "label": tf.gather(self.labels, label_id)}

    def from_ids(self, input_ids, input_mask, segment_ids):
        return self._outputs({"input_ids": input_ids, "input_mask": input_mask,
                              "segment_ids": segment_ids})

    def from_text(self, text_a, text_b=None):
        ids_a = self.tokenizer.tokenize(text_a)
        ids_b = None if text_b is None else self.tokenizer.tokenize(text_b)
        return self._outputs(pack_ids(ids_a, ids_b, self.max_seq_length, self.cls_id,
                                      self.sep_id))


def export_classifier(model, export_dir, vocab_file, do_lower_case, max_seq_length,
                      label_list, regression=False, pair=True):
    """Writes the SavedModel; returns `export_dir`.

    Args:
        model: a `modeling.BertClassifier`.
        pair: bool. The raw-text signature takes `text_b` too.
    """
    module = _ClassifierModule(model, vocab_file, do_lower_case, max_seq_length,
                               label_list, regression)
    ids = tf.TensorSpec([None, None], tf.int32)
    text = tf.TensorSpec([None], tf.string)
    serving_ids = tf.function(module.from_ids, input_signature=[ids, ids, ids])
    if pair:
        serving_text = tf.function(lambda text_a, text_b: module.from_text(text_a, text_b),
                                   input_signature=[text, text])
    else:
        serving_text = tf.function(lambda text_a: module.from_text(text_a),
                                   input_signature=[text])
    module.serving_text, module.serving_ids = serving_text, serving_ids
    tmp = f"{export_dir.rstrip('/')}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tf.saved_model.save(module, tmp, signatures={"serving_default": serving_text,
                                                 "serving_ids": serving_ids})
    if os.path.exists(export_dir):
        shutil.rmtree(export_dir)
    os.replace(tmp, export_dir)
    return export_dir
