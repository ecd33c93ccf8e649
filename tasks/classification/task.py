"""Sentence(-pair) classification and regression: GLUE, XNLI, or the user's own files.

Pipeline position: a pre-trained checkpoint -> this task (through `training.runner`, from
`run_classifier.py`) -> eval_results.txt, test_results.tsv, GLUE submission files and a
SavedModel that takes raw strings. The task reads its data (`tasks.classification.data`),
converts and caches features (`.features`), trains `modeling.BertClassifier`, scores the
dev set(s) with the task's official metric (`.metrics`) and exports (`.export`).

Loss: softmax cross-entropy averaged over the global batch (the original's
`create_model`); for regression (STS-B, `num_classes=1`) the mean squared error of the
score; for multi-label data (`--multi_label`) a sigmoid per label, the binary
cross-entropy averaged over the labels (as Hugging Face's
`problem_type="multi_label_classification"`). With `--class_weights`, each example's
cross-entropy is weighed by its label (multi-label: each label's positive term by the
label), still averaged over the examples (`tasks.classification.class_weights`).
"""

import os

import numpy as np
import tensorflow as tf
from absl import logging

from common import tables
from common.scores import mean_over_windows, sigmoid, softmax
from modeling import BertClassifier
from tasks.classification import class_weights, data, features, metrics, submission
from tasks.classification.config import ClassificationExportOptions
from training import loop
from training.task import (
    Task,
    TrainInput,
    static_shapes_needed,
    steps_for_epochs,
    token_count,
)


class ClassificationTask(Task):
    """Fine-tunes `modeling.BertClassifier` on a `ClassificationConfig` task."""

    name = "classification"
    skip_padding = True  # a label read from [CLS] (or a window's mean of them)
    class_weights = None  # one weight per label (--class_weights), once `prepare` read them

    def __init__(self, config):
        super().__init__(config)
        c = config
        self.processor = data.get_processor(
            c.task_name, c.data_dir, language=c.xnli_language, text_a_column=c.text_a_column,
            text_b_column=c.text_b_column, label_column=c.label_column, labels=c.labels,
            regression=c.regression, id_column=c.id_column, multi_label=c.multi_label,
            label_separator=c.label_separator)
        self.regression = self.processor.regression
        self.class_weight_spec = class_weights.parse(c.class_weights)
        if self.class_weight_spec and self.regression:
            raise ValueError(f"--class_weights: {c.task_name} is a regression task (a "
                             f"score has no classes to weigh).")
        self.multi_label = c.multi_label
        self.main_metric = metrics.main_metric(c.task_name, c.multi_label)
        self.label_list = None
        self.cache_dir = None
        self._arrays = {}  # dev feature file -> its arrays, read once a run
        self.pair = True  # the export's raw-text signature takes text_b (see prepare)
        self.train_examples, self.train_path = None, None
        self.eval_sets, self.test_sets = {}, {}

    # ------------------------------------------------------------------ inputs
    def _features(self, split, examples):
        c = self.config
        return features.cached_features(
            examples, self.processor.path(split), self.cache_dir, split, c.vocab_file,
            c.do_lower_case, c.max_seq_length, self.label_list, self.regression,
            c.tokenizer, c.long_document, c.doc_stride, self.multi_label)

    def _num_labels(self):
        """The width of a multi-label record's label row (None otherwise)."""
        return len(self.label_list) if self.multi_label else None

    def prepare(self, output_dir, do_train=False, do_eval=False, do_predict=False):
        """Reads every split the run uses and converts (or finds cached) its features."""
        c = self.config
        self.cache_dir = output_dir
        self._arrays = {}
        self.label_list = self.processor.get_labels()
        if do_train:
            self.train_examples = self.processor.get_examples("train")
            self.pair = any(e.text_b for e in self.train_examples)
            if self.class_weight_spec:  # checked before the features are converted
                self.class_weights, record = class_weights.resolve(
                    self.class_weight_spec, self.label_list,
                    [e.label for e in self.train_examples], self.multi_label,
                    self.processor.path("train"))
                class_weights.write(output_dir, record)
                logging.info("%s", class_weights.describe(record))
            self.train_path = self._features("train", self.train_examples)
        if do_eval:
            self.eval_sets = {split: self._features(
                split, self.processor.get_examples(split)) for split in
                self.processor.splits()}
        if do_predict:
            splits = ["test"]
            if c.task_name.lower() == "mnli":
                splits.append("test_mismatched")
                if self.processor.path("test_ax"):
                    splits.append("test_ax")  # GLUE's diagnostic set, from this model
                else:
                    logging.info("No GLUE diagnostic file (%s): AX.tsv is not written.",
                                 os.path.join(c.data_dir, os.pardir, "diagnostic",
                                              "diagnostic.tsv"))
            for split in splits:
                examples = self.processor.get_examples(split)
                self.pair = any(e.text_b for e in examples) or self.pair
                self.test_sets[split] = (examples, self._features(split, examples))

    def input_paths(self):
        splits = (["train"] if self.train_path else []) + list(self.eval_sets) + list(
            self.test_sets)
        return dict(super().input_paths(),
                    data_dir=[self.processor.path(split) for split in splits])

    def build_model(self, bert_config):
        num_classes = 1 if self.regression else len(self.label_list)
        return BertClassifier(bert_config, num_classes,
                              dropout_rate=self.config.dropout_rate,
                              **self.config.head_kwargs())

    def train_input(self, global_batch_size, seed):
        c = self.config
        # An epoch is every training sequence: one per example, or every window.
        sequences = len(self.train_examples) if c.long_document != "windows" else \
            features.count_records(self.train_path)
        steps, warmup = steps_for_epochs(sequences, global_batch_size, c.num_train_epochs,
                                         c.warmup_proportion)

        def dataset_fn(context, skip_batches):
            return features.classifier_dataset(
                self.train_path, context.get_per_replica_batch_size(global_batch_size),
                c.max_seq_length, self.regression, is_training=True, seed=seed,
                input_context=context, skip_batches=skip_batches,
                pad_to_longest=not static_shapes_needed(),
                bucket_by_length=c.bucket_by_length, num_labels=self._num_labels())

        return TrainInput(dataset_fn, steps, warmup, sequences)

    # ------------------------------------------------------------------ the loss
    def loss(self, model, batch, normalizers, training):
        logits = tf.cast(self.encode(model, batch, training)["logits"], tf.float32)
        loss = tf.reduce_sum(self.example_losses(logits, batch["label_ids"])) / \
            normalizers["examples"]
        return loss, {"tokens": token_count(batch)}

    def example_losses(self, logits, label_ids):
        """Each example's loss (float32 [batch]) from the model's float32 `logits`: the
        squared error of the score; the binary cross-entropy averaged over the labels
        (multi-label); the softmax cross-entropy. With --class_weights, each example's
        cross-entropy times its label's weight, or each label's positive term times the
        label's weight (multi-label; `tasks.classification.class_weights`)."""
        if self.regression:
            return tf.square(logits[:, 0] - tf.cast(label_ids, tf.float32))
        weights = None if self.class_weights is None else tf.constant(self.class_weights)
        if self.multi_label:
            labels = tf.cast(label_ids, tf.float32)
            if weights is None:
                per_label = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels,
                                                                    logits=logits)
            else:
                per_label = tf.nn.weighted_cross_entropy_with_logits(
                    labels=labels, logits=logits, pos_weight=weights)
            return tf.reduce_mean(per_label, axis=-1)
        label_ids = tf.cast(label_ids, tf.int32)
        per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label_ids,
                                                                     logits=logits)
        return per_example if weights is None else per_example * tf.gather(weights,
                                                                           label_ids)

    # ------------------------------------------------------------------ results
    def outputs(self, logits):
        """Model logits -> what is reported: class probabilities, the score, or each
        label's probability (multi-label)."""
        if self.regression:
            return np.asarray(logits, np.float64)[:, 0]
        if self.multi_label:
            return sigmoid(logits)
        return softmax(logits)

    def _outputs_and_labels(self, model, path, batch_size, keep=False):
        """Per example (a document's windows averaged: mean of their logits), in order:
        (probabilities or scores, labels). `keep`: the file's arrays are kept for the
        next call (a dev set, evaluated at every checkpoint of a run)."""
        arrays = self._arrays.get(path)
        if arrays is None:
            arrays = features.read_arrays(path, self.config.max_seq_length, self.regression,
                                          num_labels=self._num_labels())
            if keep:
                self._arrays[path] = arrays
        logits = loop.predict_arrays(model, arrays, ["logits"], batch_size,
                                     skip_padding=self.padding_skipped(),
                                     max_seq_length=self.config.max_seq_length)["logits"]
        index = arrays["example_index"]
        examples = int(index.max()) + 1
        labels = np.zeros((examples,) + arrays["label_ids"].shape[1:],
                          arrays["label_ids"].dtype)
        labels[index] = arrays["label_ids"]
        return self.outputs(mean_over_windows(logits, index, examples)), labels

    def evaluate(self, model, strategy=None):
        """The task's official metrics on each dev set (MNLI: `mismatched_` prefixed for
        the second), with the number of examples."""
        results = {}
        for split, path in self.eval_sets.items():
            outputs, labels = self._outputs_and_labels(model, path,
                                                       self.config.eval_batch_size, keep=True)
            split_results = metrics.multi_label_metrics(
                outputs, labels, self.config.multi_label_threshold) if self.multi_label \
                else metrics.task_metrics(self.config.task_name, outputs, labels,
                                          self.label_list)
            prefix = "" if split == "dev" else split.replace("dev_", "") + "_"
            results.update({prefix + k: v for k, v in split_results.items()})
            results[prefix + "eval_examples"] = len(labels)
        return results

    def predict(self, model):
        """test_results.tsv (class probabilities or scores, as the original, no header),
        test_predictions.tsv (a header; per example its id, text, predicted label and
        each label's probability, or its score; for multi-label data its predicted
        labels, joined by --label_separator) and, for GLUE tasks, the submission file,
        per test split."""
        files = {}
        for split, (examples, path) in self.test_sets.items():
            outputs, _ = self._outputs_and_labels(model, path,
                                                  self.config.predict_batch_size)
            suffix = split[len("test"):]  # "", "_mismatched", "_ax"
            rows = [("\t".join(f"{p:.6f}" for p in row) if outputs.ndim > 1
                     else f"{row:.6f}") for row in outputs]
            files[f"test_results{suffix}.tsv"] = "\n".join(rows) + "\n"
            files[f"test_predictions{suffix}.tsv"] = self._predictions_table(examples,
                                                                              outputs)
            name = submission.leaderboard_file(self.config.task_name, suffix)
            if name:
                predictions = outputs if self.regression else [
                    self.label_list[i] for i in outputs.argmax(-1)]
                ids = [e.guid.split("-", 1)[1] for e in examples]
                body = "".join(f"{i}\t{p:.3f}\n" if self.regression else f"{i}\t{p}\n"
                               for i, p in zip(ids, predictions))
                files[f"{name}.tsv"] = "index\tprediction\n" + body
            logging.info("Predicted %d %s examples.", len(examples), split)
        return files, None

    def _predictions_table(self, examples, outputs):
        texts = ["text_a"] + (["text_b"] if self.pair else [])
        ids = [e.guid.split("-", 1)[-1] for e in examples]
        if self.multi_label:
            chosen = outputs >= self.config.multi_label_threshold
            return tables.tsv(
                ["id", *texts, "labels", *(f"p({label})" for label in self.label_list)],
                ([i, e.text_a, *([e.text_b] if self.pair else []),
                  self.config.label_separator.join(
                      label for label, on in zip(self.label_list, row) if on),
                  *map(float, probabilities)]
                 for i, e, row, probabilities in zip(ids, examples, chosen, outputs)))
        if self.regression:
            return tables.tsv(["id", *texts, "score"], (
                [i, e.text_a, *([e.text_b] if self.pair else []), float(score)]
                for i, e, score in zip(ids, examples, outputs)))
        return tables.tsv(
            ["id", *texts, "label", *(f"p({label})" for label in self.label_list)],
            ([i, e.text_a, *([e.text_b] if self.pair else []),
              self.label_list[int(row.argmax())], *map(float, row)]
             for i, e, row in zip(ids, examples, outputs)))

    def serving_requests(self):
        """The dev examples as rows of (text_a, text_b)."""
        if "dev" not in self.processor.splits():
            return None
        return [(e.text_a, e.text_b or "") if self.pair else e.text_a
                for e in self.processor.get_examples("dev")]

    def export_options(self):
        c = self.config
        return ClassificationExportOptions(
            labels=None if self.regression else tuple(self.label_list),
            regression=self.regression, multi_label=self.multi_label,
            multi_label_threshold=c.multi_label_threshold, pair=self.pair,
            long_document=c.long_document, doc_stride=c.doc_stride, **c.head_kwargs())

    def export(self, model, export_dir, tflite_quantize=False):
        c = self.config
        # here, not at the top: the export's modules import tensorflow-text (0.2 s)
        from tasks.classification.export import save_for_export
        save_for_export(model, export_dir, self.export_options(), c.vocab_file,
                        c.do_lower_case, c.max_seq_length, tflite_quantize=tflite_quantize)
        logging.info("Exported a SavedModel to %s (signatures serving_default: raw text, "
                     "serving_ids: token ids).", export_dir)
