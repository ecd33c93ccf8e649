"""Sentence(-pair) classification and regression: GLUE, XNLI and the user's own files.

  data.py      the readers (`get_processor`): official layouts, generic TSV/CSV/JSON lines
  features.py  examples -> packed ids -> cached TFRecords -> tf.data batches
  metrics.py   each task's official metric (accuracy, F1, Matthews, Pearson/Spearman)
  config.py    `ClassificationConfig`: the settings, read before TensorFlow is imported
  task.py      `ClassificationTask`: loss, evaluation, predictions
  export.py    the SavedModel (raw strings in, labels out)
"""

from tasks import registry

_TASK, _EXPORT = "tasks.classification.task", "tasks.classification.export"
_CONFIG = "tasks.classification.config"
registry.register(registry.TaskEntry(
    name="classification", aliases=("classifier",),
    task_class=f"{_TASK}:ClassificationTask",
    config_class=f"{_CONFIG}:ClassificationConfig",
    export=registry.ExportEntry(options=f"{_CONFIG}:ClassificationExportOptions",
                                build_model=f"{_EXPORT}:model_for_export",
                                save=f"{_EXPORT}:save_for_export")))

__all__ = ["ClassificationConfig", "ClassificationTask"]
__getattr__ = registry.lazy_names(__name__, {_CONFIG: ["ClassificationConfig"],
                                              _TASK: ["ClassificationTask"]})
