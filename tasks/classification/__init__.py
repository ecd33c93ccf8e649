"""Sentence(-pair) classification and regression: GLUE, XNLI and the user's own files.

  data.py      the readers (`get_processor`): official layouts, generic TSV/CSV/JSON lines
  features.py  examples -> packed ids -> cached TFRecords -> tf.data batches
  metrics.py   each task's official metric (accuracy, F1, Matthews, Pearson/Spearman)
  task.py      `ClassificationConfig`, `ClassificationTask`: loss, evaluation, predictions
  export.py    the SavedModel (raw strings in, labels out)
"""

from tasks import registry
from tasks.classification import export
from tasks.classification.task import ClassificationConfig, ClassificationTask

registry.register(registry.TaskEntry(
    name="classification", aliases=("classifier",), task_class=ClassificationTask,
    config_class=ClassificationConfig,
    export=registry.ExportEntry(options=export.ClassificationExportOptions,
                                build_model=export.model_for_export,
                                save=export.save_for_export)))

__all__ = ["ClassificationConfig", "ClassificationTask"]
