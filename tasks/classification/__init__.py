"""Sentence(-pair) classification and regression: GLUE, XNLI and the user's own files.

  data.py      the readers (`get_processor`): official layouts, generic TSV/CSV/JSON lines
  features.py  examples -> packed ids -> cached TFRecords -> tf.data batches
  metrics.py   each task's official metric (accuracy, F1, Matthews, Pearson/Spearman)
  task.py      `ClassificationConfig`, `ClassificationTask`: loss, evaluation, predictions
  export.py    the SavedModel (raw strings in, labels out)
"""

from tasks.classification.task import ClassificationConfig, ClassificationTask

__all__ = ["ClassificationConfig", "ClassificationTask"]
