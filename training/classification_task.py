"""The fine-tuning objective for sentence(-pair) classification and regression.

Pipeline position: `run_classifier.py` trains `modeling.BertClassifier` with this task
through `training.loop.Trainer` (the same loop as pre-training).

Loss: softmax cross-entropy averaged over the global batch (the original's
`create_model`); for regression (STS-B, `num_classes=1`) the mean squared error of the
score.
"""

import numpy as np
import tensorflow as tf

from training.loop import predict

INPUTS = ("input_ids", "input_mask", "segment_ids")


class ClassificationTask:
    def __init__(self, regression=False):
        self.regression = regression

    def normalizers(self, batch):
        return {"examples": tf.cast(tf.shape(batch["input_ids"])[0], tf.float32)}

    def loss(self, model, batch, normalizers, training):
        logits = tf.cast(model({k: batch[k] for k in INPUTS}, training=training)["logits"],
                         tf.float32)
        if self.regression:
            per_example = tf.square(logits[:, 0] - tf.cast(batch["label_ids"], tf.float32))
        else:
            per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=tf.cast(batch["label_ids"], tf.int32), logits=logits)
        loss = tf.reduce_sum(per_example) / normalizers["examples"]
        return loss, {"tokens": tf.cast(tf.reduce_sum(batch["input_mask"]), tf.float32)}

    def outputs(self, logits):
        """Model logits -> what is reported: class probabilities, or the score."""
        logits = np.asarray(logits, np.float64)
        if self.regression:
            return logits[:, 0]
        logits = logits - logits.max(-1, keepdims=True)
        probabilities = np.exp(logits)
        return probabilities / probabilities.sum(-1, keepdims=True)


def predict_logits(model, dataset):
    """Logits of `model` over a finite dataset, in order (NumPy [n, num_classes]); also
    the labels, for evaluation."""
    out = predict(model, dataset, ["logits"], keep=["label_ids"])
    return out["logits"], out["label_ids"]
