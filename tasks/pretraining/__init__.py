"""Pre-training: masked LM + next sentence prediction on `create_pretraining_data`'s
TFRecords.

  input.py  the TFRecords as a tf.data pipeline, and the check of their features
  task.py   `PretrainingConfig`, `PretrainingTask`: loss, evaluation, the export
"""

from modeling import BertPretrainer
from tasks import registry
from tasks.pretraining.task import PretrainingConfig, PretrainingTask

# No SavedModel of its own (training writes a Google checkpoint and a TF Hub-style
# encoder); its model goes to Hugging Face as BertForPreTraining.
registry.register(registry.TaskEntry(
    name="pretraining", task_class=PretrainingTask, config_class=PretrainingConfig,
    export=registry.ExportEntry(options=None,
                                build_model=lambda bert_config, options:
                                BertPretrainer(bert_config))))

__all__ = ["PretrainingConfig", "PretrainingTask"]
