"""Token tagging: named-entity recognition on CoNLL-style data.

  conll.py     CoNLL column files -> sentences; IOB1 -> IOB2
  features.py  sentences -> WordPiece windows with first-piece labels, and back to words
  metrics.py   conlleval's entity-level precision, recall and F1
  task.py      `TaggingConfig`, `TaggingTask`: loss, evaluation, predictions
  export.py    the SavedModel (a sentence in, entities with character offsets out)
"""

from tasks import registry
from tasks.tagging import export
from tasks.tagging.task import TaggingConfig, TaggingTask

registry.register(registry.TaskEntry(
    name="tagging", aliases=("tagger", "ner"), task_class=TaggingTask,
    config_class=TaggingConfig,
    export=registry.ExportEntry(options=export.TaggingExportOptions,
                                build_model=export.model_for_export,
                                save=export.save_for_export)))

__all__ = ["TaggingConfig", "TaggingTask"]
