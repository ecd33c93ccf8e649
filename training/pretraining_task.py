"""The pre-training objective and its evaluation metrics, as the original `run_pretraining.py`.

Pipeline position: `run_pretraining.py` trains `BertPretrainer` with this task through
`training.loop`. A task tells the loop how to normalise the loss over the *global* batch
(`normalizers`), what one (micro-)batch contributes to the loss (`loss`), and which sums
make up the evaluation metrics (`eval_sums`, `eval_results`).

Loss (original_release.md §2.3):
    masked_lm_loss = sum(w * xent) / (sum(w) + 1e-5)   over the global batch, w =
                     masked_lm_weights (padding slots 0)
    next_sentence_loss = mean cross-entropy over the global batch
    loss = masked_lm_loss + next_sentence_loss
Each replica and each accumulation micro-batch contributes its sums divided by the global
normalisers, so the summed gradient is the gradient of the loss of the whole global batch,
whatever the number of replicas or micro-batches.
"""

import tensorflow as tf

MLM_EPSILON = 1e-5


def _masked_lm_xent(outputs, batch):
    logits = tf.cast(outputs["masked_lm_logits"], tf.float32)
    labels = batch["masked_lm_ids"]
    xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return xent, logits


def _next_sentence_xent(outputs, batch):
    logits = tf.cast(outputs["next_sentence_logits"], tf.float32)
    labels = tf.reshape(batch["next_sentence_labels"], [-1])
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits), \
        logits, labels


class PretrainingTask:
    """Masked LM + next sentence prediction for `modeling.BertPretrainer`."""

    def model_inputs(self, batch):
        return {name: batch[name] for name in
                ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")}

    def normalizers(self, batch):
        """Per-replica sums; the loop adds them over replicas."""
        return {"masked_lm_weight": tf.reduce_sum(batch["masked_lm_weights"]),
                "sequences": tf.cast(tf.shape(batch["input_ids"])[0], tf.float32)}

    def loss(self, model, batch, normalizers, training):
        """This (micro-)batch's share of the global loss, and its share of each logged
        statistic."""
        outputs = model(self.model_inputs(batch), training=training)
        weights = batch["masked_lm_weights"]
        mlm_xent, _ = _masked_lm_xent(outputs, batch)
        mlm_loss = tf.reduce_sum(weights * mlm_xent) / (
            normalizers["masked_lm_weight"] + MLM_EPSILON)
        nsp_xent, _, _ = _next_sentence_xent(outputs, batch)
        nsp_loss = tf.reduce_sum(nsp_xent) / normalizers["sequences"]
        stats = {"masked_lm_loss": mlm_loss, "next_sentence_loss": nsp_loss,
                 "tokens": tf.cast(tf.reduce_sum(batch["input_mask"]), tf.float32)}
        return mlm_loss + nsp_loss, stats

    def eval_sums(self, model, batch):
        """Sums over this batch from which `eval_results` computes the metrics."""
        outputs = model(self.model_inputs(batch), training=False)
        weights = batch["masked_lm_weights"]
        mlm_xent, mlm_logits = _masked_lm_xent(outputs, batch)
        mlm_correct = tf.cast(tf.equal(tf.argmax(mlm_logits, -1, output_type=tf.int32),
                                       batch["masked_lm_ids"]), tf.float32)
        nsp_xent, nsp_logits, nsp_labels = _next_sentence_xent(outputs, batch)
        nsp_correct = tf.cast(tf.equal(tf.argmax(nsp_logits, -1, output_type=tf.int32),
                                       nsp_labels), tf.float32)
        return {"mlm_weight": tf.reduce_sum(weights),
                "mlm_loss": tf.reduce_sum(weights * mlm_xent),
                "mlm_correct": tf.reduce_sum(weights * mlm_correct),
                "sequences": tf.cast(tf.size(nsp_labels), tf.float32),
                "nsp_loss": tf.reduce_sum(nsp_xent),
                "nsp_correct": tf.reduce_sum(nsp_correct)}

    def eval_results(self, sums):
        """The original's metrics: weighted masked-LM accuracy and mean loss, next-sentence
        accuracy and mean loss, and their total `loss`."""
        mlm_weight = max(sums["mlm_weight"], 1e-12)
        sequences = max(sums["sequences"], 1e-12)
        results = {
            "masked_lm_accuracy": sums["mlm_correct"] / mlm_weight,
            "masked_lm_loss": sums["mlm_loss"] / mlm_weight,
            "next_sentence_accuracy": sums["nsp_correct"] / sequences,
            "next_sentence_loss": sums["nsp_loss"] / sequences,
        }
        results["loss"] = results["masked_lm_loss"] + results["next_sentence_loss"]
        return results
