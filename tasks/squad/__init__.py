"""Extractive question answering: SQuAD v1.1 and v2.0.

  data.py         JSON -> examples (document words, answer spans) -> windowed features
  predictions.py  start/end logits -> n-best answers, projected back onto the text
  metrics.py      the official v1.1 / v2.0 exact match and F1
  config.py       `SquadConfig`, `SquadReading`: the settings, read before TensorFlow
  task.py         `SquadTask`: loss, evaluation, predictions, one question
  export.py       the SavedModel (question + context in, logits and spans out)
"""

from typing import TYPE_CHECKING

from tasks import registry

if TYPE_CHECKING:  # for editors; at run time each name is imported when first used
    from tasks.squad.config import SquadConfig
    from tasks.squad.task import SquadTask


def _config():
    from tasks.squad import config
    return config


def _task():
    from tasks.squad import task
    return task


def _export():
    from tasks.squad import export
    return export


ENTRY = registry.register(registry.TaskEntry(
    name="squad", aliases=("span",), task_class=lambda: _task().SquadTask,
    config_class=lambda: _config().SquadConfig,
    export=registry.ExportEntry(options=lambda: _config().SquadExportOptions,
                                build_model=lambda: _export().model_for_export,
                                save=lambda: _export().save_for_export)))

__all__ = ["SquadConfig", "SquadTask"]
__getattr__ = registry.lazy_names(__name__, {"tasks.squad.config": ["SquadConfig"],
                                              "tasks.squad.task": ["SquadTask"]})
