"""Pre-training: masked LM + next sentence prediction, as the original `run_pretraining.py`;
or the paper's Table 5 ablations: masked LM alone, or a left-to-right LM.

Pipeline position: TFRecords (`create_pretraining_data.py`) -> this task (through
`training.runner`, from `run_pretraining.py`) -> a checkpoint for fine-tuning
(`output_dir/export/bert_model.ckpt` + `bert_config.json`). The task reads the records
(`tasks.pretraining.input`), trains `modeling.BertPretrainer`, evaluates on every worker
(per-batch sums, reduced across replicas, then the original's metrics) and exports a
Google-format checkpoint.

Loss (original_release.md §2.3):
    masked_lm_loss = sum(w * xent) / (sum(w) + 1e-5)   over the global batch, w =
                     masked_lm_weights (padding slots 0)
    next_sentence_loss = mean cross-entropy over the global batch
    loss = masked_lm_loss + next_sentence_loss
`--objective=mlm` drops the next-sentence head and loss. `--objective=ltr` (as OpenAI GPT)
puts the original tokens back at the masked positions of the same records (their
`masked_lm_ids`), attends causally (`BertConfig.causal_attention`, kept in the exported
config, so fine-tuning and export use it too) and predicts every next real token:
    lm_loss = sum(w * xent(next token)) / (sum(w) + 1e-5),  w = input_mask[:, 1:]
Evaluation adds the perplexity, exp of the mean loss (`masked_lm_perplexity`, or
`lm_perplexity`).
Each replica and each accumulation micro-batch contributes its sums divided by the global
normalisers, so the summed gradient is the gradient of the loss of the whole global batch,
whatever the number of replicas or micro-batches.
"""

import math
import os

import tensorflow as tf
from absl import logging

from common import file_io
from modeling import BertConfig, BertPretrainer, save_google_checkpoint
from tasks.pretraining import plateau
from tasks.pretraining.input import (
    check_records,
    expand_input_patterns,
    find_damaged,
    pretraining_dataset,
)
from training import loop
from training.task import Task, TrainInput, token_count

MLM_EPSILON = 1e-5


def pretraining_model(bert_config, objective):
    """The `BertPretrainer` of `objective`: with the next-sentence head for mlm_nsp only,
    causal attention for ltr (set in the config it is built from)."""
    if objective == "ltr" and not bert_config.causal_attention:
        bert_config = BertConfig.from_dict(dict(bert_config.to_dict(), causal_attention=True),
                                           source=bert_config.source)
    elif objective != "ltr" and bert_config.causal_attention:
        raise ValueError(
            f"{bert_config.source or 'the model config'}: causal_attention is true (a "
            f"left-to-right model); its objective is ltr (--objective=ltr), or remove the "
            f"field.")
    return BertPretrainer(bert_config, next_sentence=objective == "mlm_nsp")


def model_for_export(bert_config, options):
    """The pre-training model of the export options' objective, weights not loaded."""
    return pretraining_model(bert_config, options.objective)


def _left_to_right(batch):
    """A batch of the masked-LM records as a left-to-right LM sees it: the original token
    back at every masked position (where `masked_lm_weights` > 0), positions 0..T-2
    predicting the token after them, weighted by whether that token is real.

    Returns:
        (model inputs, next-token ids [B, T-1], weights [B, T-1] float32).
    """
    ids, positions = batch["input_ids"], batch["masked_lm_positions"]
    originals = tf.where(batch["masked_lm_weights"] > 0, batch["masked_lm_ids"],
                         tf.gather(ids, positions, batch_dims=1))
    rows = tf.broadcast_to(tf.range(tf.shape(ids)[0])[:, None], tf.shape(positions))
    ids = tf.tensor_scatter_nd_update(ids, tf.stack([rows, positions], -1), originals)
    length = tf.shape(ids)[1]
    predicting = tf.broadcast_to(tf.range(length - 1)[None], [tf.shape(ids)[0], length - 1])
    inputs = {"input_ids": ids, "input_mask": batch["input_mask"],
              "segment_ids": batch["segment_ids"], "masked_lm_positions": predicting}
    return inputs, ids[:, 1:], tf.cast(batch["input_mask"][:, 1:], tf.float32)


def _next_sentence_xent(outputs, batch):
    logits = tf.cast(outputs["next_sentence_logits"], tf.float32)
    labels = tf.reshape(batch["next_sentence_labels"], [-1])
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits), \
        logits, labels


class PretrainingTask(Task):
    """Masked LM + next sentence prediction for `modeling.BertPretrainer`."""

    name = "pretraining"
    evaluate_on_every_worker = True  # a distributed evaluation: every worker takes part
    export_takes_text = False  # a Google-format checkpoint
    # Every loss reads real positions only (the masked positions, [CLS], a left-to-right
    # LM's next real tokens): the encoder computes the real tokens alone.
    skip_padding = True

    def __init__(self, config=None):
        super().__init__(config)
        self.bert_config = None
        # Without a config (the loss alone, in tests and tools): the original's objective.
        self.objective = config.objective if config is not None else "mlm_nsp"

    def prepare(self, output_dir, do_train=False, do_eval=False, do_predict=False):
        """Finds the input files and checks the first records of each against the flags
        (a damaged record further on is found and named if training meets it)."""
        c = self.config
        self.train_files = expand_input_patterns(c.input_file)
        self.eval_files = expand_input_patterns(c.eval_input_file or c.input_file)
        for path in sorted(set(self.train_files) | set(self.eval_files)):  # cheap
            check_records(path, c.max_seq_length, c.max_predictions_per_seq)
        logging.info("%d training files, %d evaluation files.", len(self.train_files),
                     len(self.eval_files))
        self.unigram_entropy = None
        if do_train and self.objective != "ltr":  # the masked LM's plateau level
            self.unigram_entropy, tokens = plateau.unigram_entropy(
                self.train_files, c.max_seq_length, c.max_predictions_per_seq)
            if self.unigram_entropy is not None:
                logging.info("Masked tokens' unigram entropy %.2f nats (from %d tokens): "
                             "the loss of predicting frequent tokens whatever the context.",
                             self.unigram_entropy, tokens)

    def training_hooks(self):
        """A warning if the masked-LM loss is still at the frequent-token plateau after
        a share of the run (`tasks.pretraining.plateau`)."""
        if getattr(self, "unigram_entropy", None) is None:
            return []
        return [plateau.PlateauWatch(self.unigram_entropy, self.config.num_train_steps)]

    def input_paths(self):
        return dict(super().input_paths(), input_file=self.train_files,
                    eval_input_file=self.eval_files)

    def build_model(self, bert_config):
        dropout = self.config.pretraining_dropout if self.config is not None else None
        kept = {"hidden_dropout_prob": bert_config.hidden_dropout_prob,
                "attention_probs_dropout_prob": bert_config.attention_probs_dropout_prob}
        if dropout is not None:  # the model trains with it; the export keeps the config's
            bert_config = BertConfig.from_dict(
                dict(bert_config.to_dict(), **{name: dropout for name in kept}),
                source=bert_config.source)
        model = pretraining_model(bert_config, self.objective)
        if self.config is not None and self.config.heads_only:
            model.encoder.trainable = False  # its weights are not the optimizer's
        self.bert_config = BertConfig.from_dict(
            dict(model.encoder.bert_config().to_dict(), **kept), source=bert_config.source)
        return model

    def train_input(self, global_batch_size, seed):
        c = self.config

        def dataset_fn(context, skip_batches):
            return pretraining_dataset(
                self.train_files, context.get_per_replica_batch_size(global_batch_size),
                c.max_seq_length, c.max_predictions_per_seq, is_training=True, seed=seed,
                input_context=context, skip_batches=skip_batches)

        return TrainInput(dataset_fn, c.num_train_steps, c.num_warmup_steps)

    def evaluate(self, model, strategy):
        c = self.config
        dataset = pretraining_dataset(self.eval_files, c.eval_batch_size, c.max_seq_length,
                                      c.max_predictions_per_seq, is_training=False)
        return loop.evaluate(strategy, model, self, dataset, c.max_eval_steps)

    def explain_input_error(self, err):
        """The file behind an error met while reading the records (an `InputError`), or
        None if every file reads cleanly."""
        c = self.config
        files = list(dict.fromkeys(self.train_files + self.eval_files))
        logging.info("Reading every input file to find the one behind this error.")
        return find_damaged(files, c.max_seq_length, c.max_predictions_per_seq,
                            self.bert_config.vocab_size if self.bert_config else None)

    def default_export_dir(self, output_dir):
        return os.path.join(output_dir, "export")

    def export(self, model, export_dir, tflite_quantize=False):
        """A Google-format checkpoint and its bert_config.json, for fine-tuning and the
        original's tools; the folder appears complete or not at all (no TF Lite: a
        pre-training checkpoint is not served)."""
        with file_io.atomic_path(export_dir) as tmp:
            save_google_checkpoint(model, os.path.join(tmp, "bert_model.ckpt"))
            self.bert_config.to_json_file(os.path.join(tmp, "bert_config.json"))
        logging.info("Wrote %s/bert_model.ckpt and bert_config.json for fine-tuning.",
                     export_dir)

    def model_inputs(self, batch):
        return {name: batch[name] for name in
                ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")}

    def _lm_view(self, batch):
        """(model inputs, predicted ids, their weights) of the objective's language model:
        the masked positions, or every next token for `ltr`."""
        if self.objective == "ltr":
            return _left_to_right(batch)
        return self.model_inputs(batch), batch["masked_lm_ids"], batch["masked_lm_weights"]

    def normalizers(self, batch):
        """Per-replica sums; the loop adds them over replicas."""
        _, _, weights = self._lm_view(batch)
        return {"masked_lm_weight": tf.reduce_sum(weights),
                "sequences": tf.cast(tf.shape(batch["input_ids"])[0], tf.float32)}

    def _lm_xent(self, model, batch, training):
        """(outputs, cross-entropy, logits, labels, weights) of the language model's
        predictions. Where shapes may vary, only the predictions that count (weight > 0)
        are computed: a record's unused prediction slots (a short sequence has fewer
        masked tokens than `max_predictions_per_seq`; a left-to-right LM's padding) are
        not scored against the vocabulary, as the padding is not encoded. Their weight
        is 0, so the loss and metrics are the same."""
        inputs, labels, weights = self._lm_view(batch)
        if not self.padding_skipped():
            outputs = model(inputs, training=training, skip_padding=False)
            logits = tf.cast(outputs["masked_lm_logits"], tf.float32)
            xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                  logits=logits)
            return outputs, xent, logits, labels, weights
        positions = inputs.pop("masked_lm_positions")
        outputs = model(inputs, training=training, skip_padding=True)
        sequence = outputs["sequence_output"]
        real = tf.where(weights > 0)                                  # [M, 2]: (row, slot)
        length = tf.cast(tf.shape(sequence)[1], tf.int64)
        flat = real[:, 0] * length + tf.cast(tf.gather_nd(positions, real), tf.int64)
        rows = tf.reshape(sequence, [1, -1, tf.shape(sequence)[2]])  # every token, one row
        logits = tf.cast(model.masked_lm(rows, flat[None], model.encoder.word_embeddings,
                                         training=training)[0], tf.float32)  # [M, vocab]
        labels, weights = tf.gather_nd(labels, real), tf.gather_nd(weights, real)
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        return outputs, xent, logits, labels, weights

    def _lm_name(self):
        return "lm" if self.objective == "ltr" else "masked_lm"

    def statistic_names(self):
        names = (f"{self._lm_name()}_loss", "tokens")
        return names + ("next_sentence_loss",) if self.objective == "mlm_nsp" else names

    def loss(self, model, batch, normalizers, training):
        """This (micro-)batch's share of the global loss, and its share of each logged
        statistic."""
        outputs, xent, _, _, weights = self._lm_xent(model, batch, training)
        lm_loss = tf.reduce_sum(weights * xent) / (normalizers["masked_lm_weight"] +
                                                   MLM_EPSILON)
        stats = {f"{self._lm_name()}_loss": lm_loss, "tokens": token_count(batch)}
        if self.objective != "mlm_nsp":
            return lm_loss, stats
        nsp_xent, _, _ = _next_sentence_xent(outputs, batch)
        nsp_loss = tf.reduce_sum(nsp_xent) / normalizers["sequences"]
        stats["next_sentence_loss"] = nsp_loss
        return lm_loss + nsp_loss, stats

    def eval_sums(self, model, batch):
        """Sums over this batch from which `eval_results` computes the metrics."""
        outputs, xent, logits, labels, weights = self._lm_xent(model, batch, False)
        correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels),
                          tf.float32)
        sums = {"mlm_weight": tf.reduce_sum(weights),
                "mlm_loss": tf.reduce_sum(weights * xent),
                "mlm_correct": tf.reduce_sum(weights * correct)}
        if self.objective == "mlm_nsp":
            nsp_xent, nsp_logits, nsp_labels = _next_sentence_xent(outputs, batch)
            nsp_correct = tf.cast(tf.equal(tf.argmax(nsp_logits, -1, output_type=tf.int32),
                                           nsp_labels), tf.float32)
            sums.update({"sequences": tf.cast(tf.size(nsp_labels), tf.float32),
                         "nsp_loss": tf.reduce_sum(nsp_xent),
                         "nsp_correct": tf.reduce_sum(nsp_correct),
                         "nsp_random": tf.reduce_sum(tf.cast(nsp_labels, tf.float32))})
        return sums

    def eval_results(self, sums):
        """The original's metrics: weighted masked-LM accuracy and mean loss, next-sentence
        accuracy and mean loss, and their total `loss`; plus the perplexity of the
        language model (exp of its mean loss), the number of predictions they are over
        (`masked_lm_predictions`), and `next_sentence_majority_accuracy`: the
        accuracy of always answering the evaluation set's more frequent label (the
        records are not 50/50: as in the original, a chunk of one sentence, such as a
        one-sentence document, always gets a random next), the floor the next-sentence
        accuracy is read against. For `ltr` the LM's are named `lm_*`."""
        name = self._lm_name()
        mlm_weight = max(sums["mlm_weight"], 1e-12)
        results = {f"{name}_accuracy": sums["mlm_correct"] / mlm_weight,
                   f"{name}_loss": sums["mlm_loss"] / mlm_weight,
                   f"{name}_predictions": sums["mlm_weight"]}
        results[f"{name}_perplexity"] = math.exp(min(results[f"{name}_loss"], 700.0))
        results["loss"] = results[f"{name}_loss"]
        if "nsp_loss" in sums:
            sequences = max(sums["sequences"], 1e-12)
            results["next_sentence_accuracy"] = sums["nsp_correct"] / sequences
            results["next_sentence_loss"] = sums["nsp_loss"] / sequences
            random_share = sums["nsp_random"] / sequences
            results["next_sentence_majority_accuracy"] = max(random_share, 1 - random_share)
            results["loss"] += results["next_sentence_loss"]
        return results
