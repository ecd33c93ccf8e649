"""Multiple choice: SWAG (the paper's Table 4) and the user's own sets.

  data.py      the readers: SWAG's release CSVs, JSON lines (context, question, choices)
  features.py  examples -> one packed sequence per choice -> batches
  model.py     `BertMultipleChoice`: a score per choice from its [CLS] vector
  task.py      `MultipleChoiceConfig`, `MultipleChoiceTask`: loss, accuracy, predictions
  export.py    the SavedModel (context, question and choices as text in, scores out)
"""

from tasks import registry
from tasks.multiple_choice import export
from tasks.multiple_choice.model import BertMultipleChoice
from tasks.multiple_choice.task import MultipleChoiceConfig, MultipleChoiceTask

registry.register(registry.TaskEntry(
    name="multiple_choice", aliases=("swag", "multiple-choice"),
    task_class=MultipleChoiceTask, config_class=MultipleChoiceConfig,
    export=registry.ExportEntry(options=None, build_model=export.model_for_export,
                                save=export.save_for_export)))

__all__ = ["BertMultipleChoice", "MultipleChoiceConfig", "MultipleChoiceTask"]
