"""Extractive question answering: SQuAD v1.1 and v2.0.

  data.py         JSON -> examples (document words, answer spans) -> windowed features
  predictions.py  start/end logits -> n-best answers, projected back onto the text
  metrics.py      the official v1.1 / v2.0 exact match and F1
  task.py         `SquadConfig`, `SquadTask`: loss, evaluation, predictions, one question
  export.py       the SavedModel (question + context in, logits and spans out)
"""

from tasks.squad.task import SquadConfig, SquadTask

__all__ = ["SquadConfig", "SquadTask"]
