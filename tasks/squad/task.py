"""Extractive question answering: SQuAD v1.1 and v2.0, as the original `run_squad.py`.

Pipeline position: a pre-trained checkpoint -> this task (through `training.runner`, from
`run_squad.py`) -> predictions.json, nbest_predictions.json (and null_odds.json for v2.0),
eval_results.txt when the predict file holds answers, and a SavedModel. The task reads and
windows the JSON (`tasks.squad.data`), trains `modeling.BertSpanLabeler`, turns logits
into answers (`.predictions`), scores them officially (`.metrics`) and exports (`.export`).

Loss, as the original: (cross-entropy of the start position + cross-entropy of the end
position) / 2, each a softmax over all positions, averaged over the global batch. The
metric that keeps the best checkpoint (`--do_eval` while training) is the F1 of the predict
file.
"""

import json
import random

import tensorflow as tf
from absl import logging

from modeling import BertSpanLabeler
from tasks.squad import data, metrics
from tasks.squad.config import SquadExportOptions
from tasks.squad.predictions import at_threshold as predictions_at_threshold
from tasks.squad.predictions import compute_predictions
from text.tokenization import FullTokenizer
from training import loop
from training.task import (
    Task,
    TrainInput,
    array_dataset_fn,
    model_inputs,
    steps_for_epochs,
    token_count,
)

# SQuAD 2.0 with gold answers: the predictions at the null threshold best on that file.
BEST_THRESHOLD_PREDICTIONS = "predictions_best_threshold.json"


def has_answers(squad_json):
    """True when a parsed SQuAD file holds gold answers to score against."""
    return any(metrics.gold_texts(qa) for qa in metrics.questions(squad_json["data"]))


def score(squad_json, predictions, null_odds=None, version_2_with_negative=False):
    """The official metrics of `predictions` against a parsed SQuAD file."""
    if version_2_with_negative:
        return metrics.evaluate_v2(squad_json["data"], predictions, null_odds)
    return metrics.evaluate_v1(squad_json["data"], predictions)


class SquadTask(Task):
    """Fine-tunes `modeling.BertSpanLabeler` on SQuAD (`SquadConfig`)."""

    name = "squad"
    main_metric = "f1"

    def __init__(self, config):
        super().__init__(config)
        self.tokenizer = FullTokenizer(config.vocab_file, do_lower_case=config.do_lower_case)
        self.train_examples, self.train_arrays = None, None
        self.predict_json, self.predict_examples, self.predict_features = None, None, None

    def _features(self, examples, is_training):
        c = self.config
        return data.convert_examples(examples, self.tokenizer, c.max_seq_length,
                                     c.doc_stride, c.max_query_length, is_training)

    def prepare(self, output_dir, do_train=False, do_eval=False, do_predict=False):
        """Reads and windows the training file and the predict file (read once: examples
        and scoring)."""
        c = self.config
        if do_train:
            if not c.train_file:
                raise ValueError("--do_train needs --train_file.")
            examples, counts = data.read_squad(c.train_file, True, c.version_2_with_negative,
                                               c.train_on_first_answer)
            logging.info("Read %s: %d training examples; %s", c.train_file, len(examples),
                         counts)
            if counts["skipped_not_one_answer"]:
                logging.warning(
                    "%s: %d questions with no answer or several left out of training (the "
                    "original's rule: exactly one); --train_on_first_answer trains on the "
                    "first of several.", c.train_file, counts["skipped_not_one_answer"])
            random.Random(12345).shuffle(examples)  # as the original
            features = self._features(examples, True)
            logging.info("%d features.", len(features))
            self.train_examples = examples
            self.train_arrays = data.feature_arrays(features, True)
        if do_predict or do_eval:
            if not c.predict_file:
                raise ValueError(f"--do_{'predict' if do_predict else 'eval'} needs "
                                 f"--predict_file.")
            self.predict_json = data.load_json(c.predict_file)
            self.predict_examples, self.predict_counts = data.squad_examples(
                self.predict_json, c.predict_file, False)
            self.predict_features = self._features(self.predict_examples, False)
            if do_eval and not has_answers(self.predict_json):
                raise ValueError(f"--do_eval: {c.predict_file} holds no answers to score "
                                 f"against.")

    def input_paths(self):
        c = self.config
        return dict(super().input_paths(), train_file=c.train_file, predict_file=c.predict_file)

    def build_model(self, bert_config):
        return BertSpanLabeler(bert_config, **self.config.head_kwargs())

    def train_input(self, global_batch_size, seed):
        c = self.config
        steps, warmup = steps_for_epochs(len(self.train_examples), global_batch_size,
                                         c.num_train_epochs, c.warmup_proportion)
        return TrainInput(array_dataset_fn(self.train_arrays, global_batch_size, seed),
                          steps, warmup, len(self.train_examples))

    def loss(self, model, batch, normalizers, training):
        out = model(model_inputs(batch), training=training)
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits
        start = xent(labels=batch["start_positions"],
                     logits=tf.cast(out["start_logits"], tf.float32))
        end = xent(labels=batch["end_positions"],
                   logits=tf.cast(out["end_logits"], tf.float32))
        loss = tf.reduce_sum((start + end) / 2.0) / normalizers["examples"]
        return loss, {"tokens": token_count(batch)}

    # ------------------------------------------------------------------ answers
    def answers(self, model, examples, features):
        """(predictions, nbest, null_odds) of `examples`, from their `features`' logits."""
        c = self.config
        out = loop.predict_arrays(model, data.feature_arrays(features, False),
                                  ["start_logits", "end_logits"], c.predict_batch_size,
                                  sequence_outputs=["start_logits", "end_logits"],
                                  max_seq_length=c.max_seq_length)
        return compute_predictions(examples, features, out["start_logits"],
                                   out["end_logits"], c.n_best_size, c.max_answer_length,
                                   c.do_lower_case, c.version_2_with_negative,
                                   c.null_score_diff_threshold)

    def _scored(self, predictions, null_odds):
        c = self.config
        return score(self.predict_json, predictions,
                     null_odds if c.version_2_with_negative else None,
                     c.version_2_with_negative)

    def evaluate(self, model, strategy=None):
        """The official metrics of the predict file's answers."""
        predictions, _, null_odds = self.answers(model, self.predict_examples,
                                                 self.predict_features)
        return self._scored(predictions, null_odds)

    def predict(self, model):
        """predictions.json, nbest_predictions.json, null_odds.json (v2.0) and, when the
        predict file holds answers, eval_results.txt with their scores (v2.0: also the
        predictions at the best null threshold on that file, `BEST_THRESHOLD_PREDICTIONS`,
        and their scores, `best_threshold_*`)."""
        predictions, nbest, null_odds = self.answers(model, self.predict_examples,
                                                     self.predict_features)
        named = [("predictions.json", predictions), ("nbest_predictions.json", nbest)]
        if self.config.version_2_with_negative:
            named.append(("null_odds.json", null_odds))
        files = {name: json.dumps(value, indent=4, ensure_ascii=False) + "\n"
                 for name, value in named}
        logging.info("Predicted %d questions (%d features); %s", len(self.predict_examples),
                     len(self.predict_features), self.predict_counts)
        results = None
        if has_answers(self.predict_json):
            results = self._scored(predictions, null_odds)
            if self.config.version_2_with_negative:
                files.update(self._at_best_threshold(nbest, null_odds, results))
            files["eval_results.txt"] = self.format_results(results)
        return files, results

    def _at_best_threshold(self, nbest, null_odds, results):
        """v2.0 with gold answers: the predictions at the null threshold that is best on
        this file, and their scores (added to `results`), from the n-best lists."""
        threshold, _ = metrics.best_null_threshold(
            self.predict_json["data"],
            predictions_at_threshold(nbest, null_odds, float("inf")), null_odds)
        answers = predictions_at_threshold(nbest, null_odds, threshold)
        scored = self._scored(answers, null_odds)
        results.update({"best_threshold": threshold,
                        "best_threshold_exact": scored["exact"],
                        "best_threshold_f1": scored["f1"]})
        logging.info("At the best null threshold on %s (--null_score_diff_threshold=%g): "
                     "exact %.2f, F1 %.2f -> %s.", self.config.predict_file, threshold,
                     scored["exact"], scored["f1"], BEST_THRESHOLD_PREDICTIONS)
        return {BEST_THRESHOLD_PREDICTIONS: json.dumps(answers, indent=4,
                                                       ensure_ascii=False) + "\n"}

    def answer(self, model, question, context):
        """The best answer to one question about `context`, with its probability and
        score (start + end logit)."""
        examples, _ = data.read_squad_from_text(question, context)
        predictions, nbest, _ = self.answers(model, examples, self._features(examples,
                                                                             False))
        best = nbest["question"][0]
        return {"answer": predictions["question"], "probability": best["probability"],
                "score": best["start_logit"] + best["end_logit"]}

    def serving_requests(self):
        """The predict file's questions with their passages (words joined by spaces), as
        (question, context)."""
        if not self.predict_examples:
            return None
        return [(e.question_text, " ".join(e.doc_tokens)) for e in self.predict_examples]

    def export_options(self):
        return SquadExportOptions(**self.config.reading(), **self.config.head_kwargs())

    def export(self, model, export_dir, tflite_quantize=False):
        c = self.config
        # here, not at the top: the export's modules import tensorflow-text (0.2 s)
        from tasks.squad.export import save_for_export
        save_for_export(model, export_dir, self.export_options(), c.vocab_file,
                        c.do_lower_case, c.max_seq_length, tflite_quantize=tflite_quantize)
        logging.info("Exported a SavedModel to %s.", export_dir)
