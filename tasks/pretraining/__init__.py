"""Pre-training: masked LM + next sentence prediction on `create_pretraining_data`'s
TFRecords.

  input.py  the TFRecords as a tf.data pipeline, and the check of their features
  config.py `PretrainingConfig`: the settings, read before TensorFlow is imported
  task.py   `PretrainingTask`: loss, evaluation, the export
"""

from tasks import registry

_TASK = "tasks.pretraining.task"
_CONFIG = "tasks.pretraining.config"
# No SavedModel of its own (training writes a Google checkpoint and a TF Hub-style
# encoder); its model goes to Hugging Face as BertForPreTraining (BertForMaskedLM,
# BertLMHeadModel for the other objectives).
registry.register(registry.TaskEntry(
    name="pretraining", task_class=f"{_TASK}:PretrainingTask",
    config_class=f"{_CONFIG}:PretrainingConfig",
    export=registry.ExportEntry(options=f"{_CONFIG}:PretrainingExportOptions",
                                build_model=f"{_TASK}:model_for_export")))

__all__ = ["PretrainingConfig", "PretrainingTask"]
__getattr__ = registry.lazy_names(__name__, {_CONFIG: ["PretrainingConfig"],
                                              _TASK: ["PretrainingTask"]})
