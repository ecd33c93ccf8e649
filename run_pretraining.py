"""Pre-train BERT: masked LM + next sentence prediction on create_pretraining_data's TFRecords.

Pipeline position: TFRecords (create_pretraining_data.py) -> here -> a checkpoint
for the fine-tuning scripts (`output_dir/export/bert_model.ckpt` + `bert_config.json`).
Same flags as the original `run_pretraining.py`, plus distribution, precision, gradient
accumulation and optimizer choices (see --helpfull). Rerunning a command resumes it.
The task is `tasks.pretraining`; the run is `training.runner.run`.

    python run_pretraining.py --input_file='shards/*.tfrecord' --output_dir=out \
      --bert_config_file=bert_config.json --do_train --do_eval \
      --train_batch_size=256 --max_seq_length=128 --max_predictions_per_seq=20 \
      --num_train_steps=1000000 --num_warmup_steps=10000 --learning_rate=1e-4
"""

from absl import flags

import cli
from cli import training_run
from tasks.pretraining import ENTRY as TASK

training_run.define_flags(TASK, fine_tuning=False)
FLAGS = flags.FLAGS


def main(_):
    training_run.run(TASK, FLAGS)


if __name__ == "__main__":
    cli.run(main)
