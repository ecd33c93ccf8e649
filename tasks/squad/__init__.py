"""Extractive question answering: SQuAD v1.1 and v2.0.

  data.py         JSON -> examples (document words, answer spans) -> windowed features
  predictions.py  start/end logits -> n-best answers, projected back onto the text
  metrics.py      the official v1.1 / v2.0 exact match and F1
  task.py         `SquadConfig`, `SquadTask`: loss, evaluation, predictions, one question
  export.py       the SavedModel (question + context in, logits and spans out)
"""

from tasks import registry
from tasks.squad import export
from tasks.squad.task import SquadConfig, SquadTask

registry.register(registry.TaskEntry(
    name="squad", aliases=("span",), task_class=SquadTask, config_class=SquadConfig,
    export=registry.ExportEntry(options=export.SquadExportOptions,
                                build_model=export.model_for_export,
                                save=export.save_for_export)))

__all__ = ["SquadConfig", "SquadTask"]
