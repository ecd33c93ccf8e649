"""Pre-training: masked LM + next sentence prediction on `create_pretraining_data`'s
TFRecords.

  input.py  the TFRecords as a tf.data pipeline, and the check of their features
  config.py `PretrainingConfig`: the settings, read before TensorFlow is imported
  task.py   `PretrainingTask`: loss, evaluation, the export
"""

from typing import TYPE_CHECKING

from tasks import registry

if TYPE_CHECKING:  # for editors; at run time each name is imported when first used
    from tasks.pretraining.config import PretrainingConfig
    from tasks.pretraining.task import PretrainingTask


def _config():
    from tasks.pretraining import config
    return config


def _task():
    from tasks.pretraining import task
    return task


# No SavedModel of its own (training writes a Google checkpoint and a TF Hub-style
# encoder); its model goes to Hugging Face as BertForPreTraining (BertForMaskedLM,
# BertLMHeadModel for the other objectives).
ENTRY = registry.register(registry.TaskEntry(
    name="pretraining", task_class=lambda: _task().PretrainingTask,
    config_class=lambda: _config().PretrainingConfig,
    export=registry.ExportEntry(options=lambda: _config().PretrainingExportOptions,
                                build_model=lambda: _task().model_for_export)))

__all__ = ["PretrainingConfig", "PretrainingTask"]
__getattr__ = registry.lazy_names(__name__, {
    "tasks.pretraining.config": ["PretrainingConfig"],
    "tasks.pretraining.task": ["PretrainingTask"]})
