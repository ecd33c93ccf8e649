"""Extractive question answering: SQuAD v1.1 and v2.0.

  data.py         JSON -> examples (document words, answer spans) -> windowed features
  predictions.py  start/end logits -> n-best answers, projected back onto the text
  metrics.py      the official v1.1 / v2.0 exact match and F1
  config.py       `SquadConfig`, `SquadReading`: the settings, read before TensorFlow
  task.py         `SquadTask`: loss, evaluation, predictions, one question
  export.py       the SavedModel (question + context in, logits and spans out)
"""

from tasks import registry

_TASK, _EXPORT = "tasks.squad.task", "tasks.squad.export"
_CONFIG = "tasks.squad.config"
registry.register(registry.TaskEntry(
    name="squad", aliases=("span",), task_class=f"{_TASK}:SquadTask",
    config_class=f"{_CONFIG}:SquadConfig",
    export=registry.ExportEntry(options=f"{_CONFIG}:SquadExportOptions",
                                build_model=f"{_EXPORT}:model_for_export",
                                save=f"{_EXPORT}:save_for_export")))

__all__ = ["SquadConfig", "SquadTask"]
__getattr__ = registry.lazy_names(__name__, {_CONFIG: ["SquadConfig"], _TASK: ["SquadTask"]})
