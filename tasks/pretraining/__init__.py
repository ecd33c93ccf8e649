"""Pre-training: masked LM + next sentence prediction on `create_pretraining_data`'s
TFRecords.

  input.py  the TFRecords as a tf.data pipeline, and the check of their features
  task.py   `PretrainingConfig`, `PretrainingTask`: loss, evaluation, the export
"""

from tasks import registry
from tasks.pretraining.task import (PretrainingConfig, PretrainingExportOptions,
                                    PretrainingTask, pretraining_model)

# No SavedModel of its own (training writes a Google checkpoint and a TF Hub-style
# encoder); its model goes to Hugging Face as BertForPreTraining (BertForMaskedLM,
# BertLMHeadModel for the other objectives).
registry.register(registry.TaskEntry(
    name="pretraining", task_class=PretrainingTask, config_class=PretrainingConfig,
    export=registry.ExportEntry(options=PretrainingExportOptions,
                                build_model=lambda bert_config, options:
                                pretraining_model(bert_config, options.objective))))

__all__ = ["PretrainingConfig", "PretrainingTask"]
