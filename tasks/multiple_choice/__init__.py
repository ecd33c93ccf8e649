"""Multiple choice: SWAG (the paper's Table 4) and the user's own sets.

  data.py      the readers: SWAG's release CSVs, JSON lines (context, question, choices)
  features.py  examples -> one packed sequence per choice -> batches
  model.py     `BertMultipleChoice`: a score per choice from its [CLS] vector
  config.py    `MultipleChoiceConfig`: the settings, read before TensorFlow is imported
  task.py      `MultipleChoiceTask`: loss, accuracy, predictions
  export.py    the SavedModel (context, question and choices as text in, scores out)
"""

from typing import TYPE_CHECKING

from tasks import registry

if TYPE_CHECKING:  # for editors; at run time each name is imported when first used
    from tasks.multiple_choice.config import MultipleChoiceConfig
    from tasks.multiple_choice.model import BertMultipleChoice
    from tasks.multiple_choice.task import MultipleChoiceTask


def _config():
    from tasks.multiple_choice import config
    return config


def _task():
    from tasks.multiple_choice import task
    return task


def _export():
    from tasks.multiple_choice import export
    return export


ENTRY = registry.register(registry.TaskEntry(
    name="multiple_choice", aliases=("swag", "multiple-choice"),
    task_class=lambda: _task().MultipleChoiceTask,
    config_class=lambda: _config().MultipleChoiceConfig,
    export=registry.ExportEntry(options=None, build_model=lambda: _export().model_for_export,
                                save=lambda: _export().save_for_export)))

__all__ = ["BertMultipleChoice", "MultipleChoiceConfig", "MultipleChoiceTask"]
__getattr__ = registry.lazy_names(__name__, {
    "tasks.multiple_choice.model": ["BertMultipleChoice"],
    "tasks.multiple_choice.config": ["MultipleChoiceConfig"],
    "tasks.multiple_choice.task": ["MultipleChoiceTask"]})
