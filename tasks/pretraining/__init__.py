"""Pre-training: masked LM + next sentence prediction on `create_pretraining_data`'s
TFRecords.

  input.py  the TFRecords as a tf.data pipeline, and the check of their features
  task.py   `PretrainingConfig`, `PretrainingTask`: loss, evaluation, the export
"""

from tasks.pretraining.task import PretrainingConfig, PretrainingTask

__all__ = ["PretrainingConfig", "PretrainingTask"]
