"""The fine-tuning objective for token tagging (named-entity recognition).

Pipeline position: `run_ner.py` trains `modeling.BertTokenClassifier` with this task
through `training.loop.Trainer`. Loss: softmax cross-entropy at each word's first
WordPiece (`label_weights`), summed and divided by the number of such positions in the
global batch.
"""

import tensorflow as tf

from training.loop import predict

INPUTS = ("input_ids", "input_mask", "segment_ids")


class TaggingTask:
    def normalizers(self, batch):
        return {"labelled": tf.reduce_sum(batch["label_weights"])}

    def loss(self, model, batch, normalizers, training):
        logits = tf.cast(model({k: batch[k] for k in INPUTS}, training=training)["logits"],
                         tf.float32)
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=batch["label_ids"],
                                                              logits=logits)
        loss = tf.reduce_sum(xent * batch["label_weights"]) / tf.maximum(
            normalizers["labelled"], 1.0)
        return loss, {"tokens": tf.cast(tf.reduce_sum(batch["input_mask"]), tf.float32)}


def predict_label_ids(model, arrays, batch_size):
    """Argmax label id at every position, NumPy int [n, seq_length]."""
    dataset = tf.data.Dataset.from_tensor_slices({k: arrays[k] for k in INPUTS}).batch(
        batch_size)
    return predict(model, dataset, ["logits"])["logits"].argmax(-1)
