"""The sentence-embedding task's settings (`SentenceEmbeddingConfig`): what
`run_sentence_embedding.py` defines as flags and checks before TensorFlow is imported, so
that a wrong flag is answered at once.

Pipeline position: flags -> this config -> `tasks.sentence_embedding.task` (training).

`SentenceEmbeddingExportOptions`: what the export scripts need beyond the checkpoint (the
pooling the run trained with, recorded by it), defined as their flags the same way.
"""

import dataclasses
from typing import Optional

from common.settings import setting
from training.config import POSITIVE, FineTuningConfig, check

# The objectives, named as sentence-transformers names its losses: the squared error of
# each pair's cosine against its score scaled to [0, 1] (CosineSimilarityLoss), and the
# cross-entropy of picking each pair's second text among the batch's (in-batch negatives,
# MultipleNegativesRankingLoss).
OBJECTIVES = ("cosine_similarity", "multiple_negatives_ranking")
SCORED_OBJECTIVES = ("cosine_similarity",)
# The sentence vector: the mean of the real tokens' last-layer vectors or the [CLS] vector
# (sentence-transformers' Pooling modes); "auto" reads a sentence-transformers folder's
# Pooling module, else takes the mean (sentence-transformers' choice for a BERT model).
POOLINGS = ("auto", "mean", "cls")
TRAINED_POOLINGS = POOLINGS[1:]


@dataclasses.dataclass(frozen=True, kw_only=True)
class SentenceEmbeddingConfig(FineTuningConfig):
    """The sentence-embedding task's settings (the fields of `FineTuningConfig`, and
    these)."""
    data_dir: str = setting(
        recorded=True, help="Folder with train/dev/test files (.tsv, .csv or .jsonl): "
        "GLUE's STS-B folder as it is, or your own pairs with a header naming the columns.")
    objective: str = setting(
        "cosine_similarity", choices=OBJECTIVES, recorded=True,
        help="cosine_similarity: each scored pair's cosine regressed on its score scaled "
        "to [0, 1] (sentence-transformers' CosineSimilarityLoss); "
        "multiple_negatives_ranking: for pairs of similar texts, each first text picks its "
        "own second among the batch's (in-batch negatives; MultipleNegativesRankingLoss).")
    pooling: str = setting(
        "auto", choices=POOLINGS, recorded=True,
        help="The sentence vector: mean (of the real tokens' vectors) or cls; auto: the "
        "pooling of a sentence-transformers folder (its modules.json) at "
        "--init_checkpoint, else mean.")
    text_a_column: str = setting("sentence1", recorded=True,
                                 help="Column (or JSON key) of each pair's first text (dev and test "
                                 "files without it are read by sentence1 and sentence2).")
    text_b_column: str = setting("sentence2", recorded=True,
                                 help="Column (or JSON key) of each pair's second text.")
    score_column: str = setting(
        "score", recorded=True, help="Column of each pair's similarity score: read in "
        "the training file by --objective=cosine_similarity, in the dev file always "
        "(Spearman's correlation of the cosines with it).")
    min_score: float = setting(0.0, recorded=True,
                               help="The lowest score of the scale (STS-B's: 0).")
    max_score: float = setting(5.0, recorded=True,
                               help="The highest score of the scale (STS-B's: 5).")
    label_column: Optional[str] = setting(
        None, recorded=True, help="With --positive_label: the column that says which "
        "training pairs to keep (NLI's gold_label).")
    positive_label: Optional[str] = setting(
        None, recorded=True, help="Train on the pairs whose --label_column holds this "
        "value only (NLI's entailment pairs).")
    similarity_scale: float = setting(
        20.0, recorded=True, help="multiple_negatives_ranking: the cosines are multiplied "
        "by this before the softmax (sentence-transformers' scale).")

    def __post_init__(self):
        super().__post_init__()
        check(self, {"similarity_scale": POSITIVE})
        if not self.min_score < self.max_score:
            raise ValueError(f"--min_score={self.min_score:g} and --max_score="
                             f"{self.max_score:g}: the lowest score must be below the "
                             f"highest.")
        if bool(self.label_column) != bool(self.positive_label):
            raise ValueError("--label_column and --positive_label go together: the column "
                             "and the value of the training pairs to keep.")

    @property
    def score_range(self):
        return self.min_score, self.max_score

    @property
    def scored(self):
        """Whether the objective trains on scores."""
        return self.objective in SCORED_OBJECTIVES


@dataclasses.dataclass(frozen=True, kw_only=True)
class SentenceEmbeddingExportOptions:
    """What an export of a sentence encoder needs beyond its checkpoint; a training run
    records it (`SentenceEmbeddingTask.export_options`)."""
    pooling: str = setting(
        "mean", choices=TRAINED_POOLINGS,
        help="Sentence embeddings: the pooling the model was trained with, mean or cls "
        "(default the training run's).")
