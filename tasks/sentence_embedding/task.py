"""Sentence embeddings trained on pairs, scored by the Spearman correlation of cosines.

Pipeline position: a pre-trained checkpoint (Google's, Hugging Face's, a
sentence-transformers folder, or this project's) -> this task (through `training.runner`,
from `run_sentence_embedding.py`) -> eval_results.txt (Pearson's and Spearman's
correlation of the dev pairs' cosines with their scores, as sentence-transformers'
EmbeddingSimilarityEvaluator reports them), best/ kept on Spearman's, and test_results.tsv
(each test pair's cosine). The task reads the files (`.data`), packs each text alone
(`.features`) and trains `.model.BertSentenceEncoder`, a Siamese encoder.

Losses (`SentenceEmbeddingConfig.objective`), each a mean over the global batch:
  cosine_similarity: (cos(u, v) - target)^2, the target the pair's score scaled to [0, 1];
  multiple_negatives_ranking: the softmax cross-entropy of `scale * cos(u_i, v_j)` over
      the replica's batch j, the right answer j = i (the other pairs' second texts are the
      negatives).
"""

import tensorflow as tf
from absl import logging

from common import tables
from common.scores import pearson, row_cosines, spearman
from tasks.sentence_embedding import data, features
from tasks.sentence_embedding.config import SentenceEmbeddingExportOptions
from tasks.sentence_embedding.model import BertSentenceEncoder
from tasks.sentence_embedding.pooling import sentence_pooling
from text.tokenization import FullTokenizer
from training import loop
from training.task import (
    Task,
    TrainInput,
    array_dataset_fn,
    requested_splits,
    static_shapes_needed,
    steps_for_epochs,
    token_count,
)


def cosine_similarity_loss(u, v, targets):
    """Per pair: the squared error of the cosine of `u` and `v` ([batch, H]) against
    `targets` ([batch], in [0, 1])."""
    cosines = tf.reduce_sum(tf.math.l2_normalize(u, -1) * tf.math.l2_normalize(v, -1), -1)
    return tf.square(cosines - targets)


def multiple_negatives_ranking_loss(u, v, scale):
    """Per pair i: -log softmax_j(scale * cos(u_i, v_j))[i] over the batch's v."""
    logits = scale * tf.matmul(tf.math.l2_normalize(u, -1), tf.math.l2_normalize(v, -1),
                               transpose_b=True)
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.range(tf.shape(u)[0]), logits=logits)


class SentenceEmbeddingTask(Task):
    """Trains `BertSentenceEncoder` on a `SentenceEmbeddingConfig` task."""

    name = "sentence_embedding"
    main_metric = "spearman_cosine"
    skip_padding = True  # a sentence vector reads its real tokens only
    export_takes_text = False  # exported to Hugging Face's layout: no in-graph tokenizer

    def __init__(self, config):
        super().__init__(config)
        self.tokenizer = FullTokenizer(config.vocab_file, do_lower_case=config.do_lower_case)
        self.pooling = None
        self.splits = {}  # split -> (path, pairs)
        self._arrays = {}  # split -> features, packed once per run

    # ------------------------------------------------------------------ inputs
    def prepare(self, output_dir, do_train=False, do_eval=False, do_predict=False):
        """Reads (and checks) every file the run uses, and settles the pooling."""
        c = self.config
        self.pooling = sentence_pooling(c.pooling, c.init_checkpoint)
        for split in requested_splits(do_train, do_eval, do_predict):
            path = data.find_split(c.data_dir, split)
            pairs = data.read_pairs(path, self._columns(split), c.score_range,
                                    fallback=None if split == "train" else
                                    data.SCORED_PAIR_TEXTS)
            self.splits[split] = (path, pairs)
            logging.info("%s: %d %s pairs.", path, len(pairs), split)
        if "train" in self.splits and c.scored:
            self._check_scale(*self.splits["train"])
        logging.info("Sentence vectors: the %s of the last layer's vectors; objective %s.",
                     "mean" if self.pooling == "mean" else "[CLS] vector", c.objective)

    def _columns(self, split):
        c = self.config
        scored = split == "dev" or (split == "train" and c.scored)
        label = split == "train" and c.label_column
        return data.Columns(c.text_a_column, c.text_b_column,
                            score=c.score_column if scored else None,
                            label=c.label_column if label else None,
                            positive_label=c.positive_label if label else None)

    def _check_scale(self, path, pairs):
        """Warns when the scores fill a fifth of the declared scale or less (0-1 scores
        read as 0-5 train every cosine towards 0)."""
        c = self.config
        scores = [p.score for p in pairs]
        if max(scores) - c.min_score <= (c.max_score - c.min_score) / 5:
            logging.warning("%s: the scores lie in [%g, %g], a fifth of the scale [%g, %g] "
                            "or less; set --min_score and --max_score to their scale.",
                            path, min(scores), max(scores), c.min_score, c.max_score)

    def export_options(self):
        return SentenceEmbeddingExportOptions(pooling=self.pooling)

    def input_paths(self):
        return dict(super().input_paths(),
                    data_dir=[path for path, _ in self.splits.values()])

    def _features(self, split):
        if split not in self._arrays:
            self._arrays[split] = features.convert_pairs(
                self.splits[split][1], self.tokenizer, self.config.max_seq_length,
                self.config.score_range)
        return self._arrays[split]

    def build_model(self, bert_config):
        return BertSentenceEncoder(bert_config, pooling=self.pooling)

    def train_input(self, global_batch_size, seed):
        c = self.config
        arrays = self._features("train")
        count = len(arrays["targets"])
        steps, warmup = steps_for_epochs(count, global_batch_size, c.num_train_epochs,
                                         c.warmup_proportion)
        return TrainInput(array_dataset_fn(
            arrays, global_batch_size, seed, pad_to_longest=not static_shapes_needed(),
            grouped=True), steps, warmup, count)

    # ------------------------------------------------------------------ the loss
    def loss(self, model, batch, normalizers, training):
        vectors = self.encode(model, batch, training)["embeddings"]  # float32
        u, v = vectors[:, 0], vectors[:, 1]
        if self.config.scored:
            per_pair = cosine_similarity_loss(u, v, batch["targets"])
        else:
            per_pair = multiple_negatives_ranking_loss(u, v, self.config.similarity_scale)
        loss = tf.reduce_sum(per_pair) / normalizers["examples"]
        return loss, {"tokens": token_count(batch)}

    # ------------------------------------------------------------------ results
    def cosines(self, model, split, batch_size):
        """The cosine of each pair of a split, float64 [pairs]."""
        vectors = loop.predict_arrays(model, self._features(split), ["embeddings"],
                                      batch_size, skip_padding=self.padding_skipped(),
                                      max_seq_length=self.config.max_seq_length)["embeddings"]
        return row_cosines(vectors[:, 0], vectors[:, 1])

    def evaluate(self, model, strategy=None):
        """Pearson's and Spearman's correlation of the dev pairs' cosines with their scores
        (sentence-transformers' pearson_cosine and spearman_cosine)."""
        cosines = self.cosines(model, "dev", self.config.eval_batch_size)
        scores = [pair.score for pair in self.splits["dev"][1]]
        return {"pearson_cosine": pearson(cosines, scores),
                "spearman_cosine": spearman(cosines, scores),
                "eval_examples": len(scores)}

    def predict(self, model):
        """test_results.tsv: each test pair's cosine, one per line in the file's order (no
        header); test_predictions.tsv: the same with a header, each pair's line and
        texts."""
        path, pairs = self.splits["test"]
        cosines = self.cosines(model, "test", self.config.predict_batch_size)
        logging.info("Predicted %d pairs of %s.", len(pairs), path)
        table = [[p.guid, p.text_a, p.text_b, float(cos)] for p, cos in zip(pairs, cosines)]
        return {"test_results.tsv": "".join(f"{cos:.6f}\n" for cos in cosines),
                "test_predictions.tsv": tables.tsv(["line", "sentence1", "sentence2",
                                                    "cosine"], table)}, None
