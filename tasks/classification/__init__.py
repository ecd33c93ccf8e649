"""Sentence(-pair) classification and regression: GLUE, XNLI and the user's own files.

  data.py      the readers (`get_processor`): official layouts, generic TSV/CSV/JSON lines
  features.py  examples -> packed ids -> cached TFRecords -> tf.data batches
  metrics.py   each task's official metric (accuracy, F1, Matthews, Pearson/Spearman)
  config.py    `ClassificationConfig`: the settings, read before TensorFlow is imported
  task.py      `ClassificationTask`: loss, evaluation, predictions
  export.py    the SavedModel (raw strings in, labels out)
"""

from typing import TYPE_CHECKING

from tasks import registry

if TYPE_CHECKING:  # for editors; at run time each name is imported when first used
    from tasks.classification.config import ClassificationConfig
    from tasks.classification.task import ClassificationTask


def _config():
    from tasks.classification import config
    return config


def _task():
    from tasks.classification import task
    return task


def _export():
    from tasks.classification import export
    return export


ENTRY = registry.register(registry.TaskEntry(
    name="classification", aliases=("classifier",),
    task_class=lambda: _task().ClassificationTask,
    config_class=lambda: _config().ClassificationConfig,
    export=registry.ExportEntry(options=lambda: _config().ClassificationExportOptions,
                                build_model=lambda: _export().model_for_export,
                                save=lambda: _export().save_for_export)))

__all__ = ["ClassificationConfig", "ClassificationTask"]
__getattr__ = registry.lazy_names(__name__, {
    "tasks.classification.config": ["ClassificationConfig"],
    "tasks.classification.task": ["ClassificationTask"]})
