"""Token tagging: named-entity recognition on CoNLL-style data.

  conll.py     CoNLL column files -> sentences; IOB1 -> IOB2
  features.py  sentences -> WordPiece windows with first-piece labels, and back to words
  metrics.py   conlleval's entity-level precision, recall and F1
  config.py    `TaggingConfig`: the settings, read before TensorFlow is imported
  task.py      `TaggingTask`: loss, evaluation, predictions
  export.py    the SavedModel (a sentence in, entities with character offsets out)
"""

from tasks import registry

_TASK, _EXPORT = "tasks.tagging.task", "tasks.tagging.export"
_CONFIG = "tasks.tagging.config"
registry.register(registry.TaskEntry(
    name="tagging", aliases=("tagger", "ner"), task_class=f"{_TASK}:TaggingTask",
    config_class=f"{_CONFIG}:TaggingConfig",
    export=registry.ExportEntry(options=f"{_CONFIG}:TaggingExportOptions",
                                build_model=f"{_EXPORT}:model_for_export",
                                save=f"{_EXPORT}:save_for_export")))

__all__ = ["TaggingConfig", "TaggingTask"]
__getattr__ = registry.lazy_names(__name__, {_CONFIG: ["TaggingConfig"], _TASK: ["TaggingTask"]})
