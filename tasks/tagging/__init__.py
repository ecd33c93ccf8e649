"""Token tagging: named-entity recognition on CoNLL-style data.

  conll.py     CoNLL column files -> sentences; IOB1 -> IOB2
  features.py  sentences -> WordPiece windows with first-piece labels, and back to words
  metrics.py   conlleval's entity-level precision, recall and F1
  task.py      `TaggingConfig`, `TaggingTask`: loss, evaluation, predictions
  export.py    the SavedModel (a sentence in, entities with character offsets out)
"""

from tasks.tagging.task import TaggingConfig, TaggingTask

__all__ = ["TaggingConfig", "TaggingTask"]
