"""Pre-training: masked LM + next sentence prediction, as the original `run_pretraining.py`.

Pipeline position: TFRecords (`data_prep.create_pretraining_data`) -> this task (through
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
Each replica and each accumulation micro-batch contributes its sums divided by the global
normalisers, so the summed gradient is the gradient of the loss of the whole global batch,
whatever the number of replicas or micro-batches.
"""

import dataclasses
import os
from typing import Optional

import tensorflow as tf
from absl import logging

from common import file_io
from modeling import BertPretrainer, save_google_checkpoint
from tasks.pretraining.input import (check_records, expand_input_patterns, find_damaged,
                                     pretraining_dataset)
from training import loop
from common.settings import setting
from training.config import NON_NEGATIVE, WHOLE_POSITIVE, TaskConfig, check
from training.task import Task, TrainInput, token_count

MLM_EPSILON = 1e-5


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainingConfig(TaskConfig):
    """The pre-training task's settings (`training.config.TaskConfig` adds the model)."""
    input_file: str = setting(
        recorded=True, help="Pre-training TFRecords: comma-separated files or globs.")
    eval_input_file: Optional[str] = setting(
        None, help="Evaluation TFRecords (default: --input_file, as the original).")
    max_predictions_per_seq: int = setting(
        20, recorded=True, help="Masked positions per sequence; must match the data.")
    num_train_steps: int = setting(100000, recorded=True,
                                   help="Number of training steps.")
    num_warmup_steps: int = setting(10000, recorded=True, help="Linear warm-up steps.")
    max_eval_steps: int = setting(100, help="Evaluation batches.")

    def __post_init__(self):
        super().__post_init__()
        check(self, {"max_predictions_per_seq": WHOLE_POSITIVE,
                     "num_train_steps": WHOLE_POSITIVE, "num_warmup_steps": NON_NEGATIVE,
                     "max_eval_steps": WHOLE_POSITIVE})


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


class PretrainingTask(Task):
    """Masked LM + next sentence prediction for `modeling.BertPretrainer`."""

    name = "pretraining"
    evaluate_on_every_worker = True  # a distributed evaluation: every worker takes part
    export_takes_text = False  # a Google-format checkpoint

    def __init__(self, config=None):
        super().__init__(config)
        self.bert_config = None

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

    def input_paths(self):
        return dict(super().input_paths(), input_file=self.train_files,
                    eval_input_file=self.eval_files)

    def build_model(self, bert_config):
        self.bert_config = bert_config
        return BertPretrainer(bert_config)

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

    def export(self, model, export_dir):
        """A Google-format checkpoint and its bert_config.json, for fine-tuning and the
        original's tools; the folder appears complete or not at all."""
        with file_io.atomic_path(export_dir) as tmp:
            save_google_checkpoint(model, os.path.join(tmp, "bert_model.ckpt"))
            self.bert_config.to_json_file(os.path.join(tmp, "bert_config.json"))
        logging.info("Wrote %s/bert_model.ckpt and bert_config.json for fine-tuning.",
                     export_dir)

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
                 "tokens": token_count(batch)}
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
