"""Sentence embeddings: a bi-encoder trained on sentence pairs, as sentence-transformers
trains one (scored pairs by cosine regression, similar pairs by in-batch negatives).

  data.py      the reader: GLUE's STS-B, or the user's TSV / CSV / JSON-lines pairs
  features.py  pairs -> one packed sequence per text -> arrays [pairs, 2, seq_length]
  pooling.py   the sentence vector's pooling: asked for, or a sentence-transformers folder's
  model.py     `BertSentenceEncoder`: one vector per text (mean or [CLS] pooling)
  config.py    `SentenceEmbeddingConfig`: the settings, read before TensorFlow is imported
  task.py      `SentenceEmbeddingTask`: the losses, Spearman's correlation, predictions
  export.py    the model rebuilt for export_huggingface.py (sentence-transformers' layout)
"""

from typing import TYPE_CHECKING

from tasks import registry

if TYPE_CHECKING:  # for editors; at run time each name is imported when first used
    from tasks.sentence_embedding.config import SentenceEmbeddingConfig
    from tasks.sentence_embedding.model import BertSentenceEncoder
    from tasks.sentence_embedding.task import SentenceEmbeddingTask


def _config():
    from tasks.sentence_embedding import config
    return config


def _export():
    from tasks.sentence_embedding import export
    return export


def _task():
    from tasks.sentence_embedding import task
    return task


ENTRY = registry.register(registry.TaskEntry(
    name="sentence_embedding", aliases=("sentence-embedding", "bi_encoder"),
    task_class=lambda: _task().SentenceEmbeddingTask,
    config_class=lambda: _config().SentenceEmbeddingConfig,
    export=registry.ExportEntry(options=lambda: _config().SentenceEmbeddingExportOptions,
                                build_model=lambda: _export().model_for_export)))

__all__ = ["BertSentenceEncoder", "SentenceEmbeddingConfig", "SentenceEmbeddingTask"]
__getattr__ = registry.lazy_names(__name__, {
    "tasks.sentence_embedding.model": ["BertSentenceEncoder"],
    "tasks.sentence_embedding.config": ["SentenceEmbeddingConfig"],
    "tasks.sentence_embedding.task": ["SentenceEmbeddingTask"]})
