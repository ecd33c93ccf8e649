"""The fine-tuning objective for extractive question answering (SQuAD).

Pipeline position: `run_squad.py` trains `modeling.BertSpanLabeler` with this task through
`training.loop.Trainer`. Loss, as the original: (cross-entropy of the start position +
cross-entropy of the end position) / 2, each a softmax over all positions, averaged over
the global batch.
"""

import tensorflow as tf

from training.loop import predict

INPUTS = ("input_ids", "input_mask", "segment_ids")


class SpanTask:
    def normalizers(self, batch):
        return {"examples": tf.cast(tf.shape(batch["input_ids"])[0], tf.float32)}

    def loss(self, model, batch, normalizers, training):
        out = model({k: batch[k] for k in INPUTS}, training=training)
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits
        start = xent(labels=batch["start_positions"],
                     logits=tf.cast(out["start_logits"], tf.float32))
        end = xent(labels=batch["end_positions"],
                   logits=tf.cast(out["end_logits"], tf.float32))
        loss = tf.reduce_sum((start + end) / 2.0) / normalizers["examples"]
        return loss, {"tokens": tf.cast(tf.reduce_sum(batch["input_mask"]), tf.float32)}


def predict_spans(model, arrays, batch_size):
    """Start and end logits (NumPy float32 [n, seq_length] each) for feature arrays."""
    dataset = tf.data.Dataset.from_tensor_slices({k: arrays[k] for k in INPUTS}).batch(
        batch_size)
    out = predict(model, dataset, ["start_logits", "end_logits"])
    return out["start_logits"], out["end_logits"]
