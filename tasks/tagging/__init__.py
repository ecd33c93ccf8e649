"""Token tagging: named-entity recognition on CoNLL-style data.

  conll.py     CoNLL column files -> sentences; IOB1 -> IOB2
  features.py  sentences -> WordPiece windows with first-piece labels, and back to words
  metrics.py   conlleval's entity-level precision, recall and F1
  config.py    `TaggingConfig`: the settings, read before TensorFlow is imported
  task.py      `TaggingTask`: loss, evaluation, predictions
  export.py    the SavedModel (a sentence in, entities with character offsets out)
"""

from typing import TYPE_CHECKING

from tasks import registry

if TYPE_CHECKING:  # for editors; at run time each name is imported when first used
    from tasks.tagging.config import TaggingConfig
    from tasks.tagging.task import TaggingTask


def _config():
    from tasks.tagging import config
    return config


def _task():
    from tasks.tagging import task
    return task


def _export():
    from tasks.tagging import export
    return export


ENTRY = registry.register(registry.TaskEntry(
    name="tagging", aliases=("tagger", "ner"), task_class=lambda: _task().TaggingTask,
    config_class=lambda: _config().TaggingConfig,
    export=registry.ExportEntry(options=lambda: _config().TaggingExportOptions,
                                build_model=lambda: _export().model_for_export,
                                save=lambda: _export().save_for_export)))

__all__ = ["TaggingConfig", "TaggingTask"]
__getattr__ = registry.lazy_names(__name__, {"tasks.tagging.config": ["TaggingConfig"],
                                              "tasks.tagging.task": ["TaggingTask"]})
