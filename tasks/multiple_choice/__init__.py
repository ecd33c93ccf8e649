"""Multiple choice: SWAG (the paper's Table 4) and the user's own sets.

  data.py      the readers: SWAG's release CSVs, JSON lines (context, question, choices)
  features.py  examples -> one packed sequence per choice -> batches
  model.py     `BertMultipleChoice`: a score per choice from its [CLS] vector
  config.py    `MultipleChoiceConfig`: the settings, read before TensorFlow is imported
  task.py      `MultipleChoiceTask`: loss, accuracy, predictions
  export.py    the SavedModel (context, question and choices as text in, scores out)
"""

from tasks import registry

_TASK, _EXPORT = "tasks.multiple_choice.task", "tasks.multiple_choice.export"
_CONFIG = "tasks.multiple_choice.config"
registry.register(registry.TaskEntry(
    name="multiple_choice", aliases=("swag", "multiple-choice"),
    task_class=f"{_TASK}:MultipleChoiceTask", config_class=f"{_CONFIG}:MultipleChoiceConfig",
    export=registry.ExportEntry(options=None, build_model=f"{_EXPORT}:model_for_export",
                                save=f"{_EXPORT}:save_for_export")))

__all__ = ["BertMultipleChoice", "MultipleChoiceConfig", "MultipleChoiceTask"]
__getattr__ = registry.lazy_names(__name__, {
    "tasks.multiple_choice.model": ["BertMultipleChoice"],
    _CONFIG: ["MultipleChoiceConfig"], _TASK: ["MultipleChoiceTask"]})
