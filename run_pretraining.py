"""Pre-train BERT: masked LM + next sentence prediction on create_pretraining_data's TFRecords.

Pipeline position: TFRecords (data_prep.create_pretraining_data) -> here -> a checkpoint
for the fine-tuning scripts (`output_dir/export/bert_model.ckpt` + `bert_config.json`).
Same flags as the original `run_pretraining.py`, plus distribution, precision, gradient
accumulation and optimizer choices (see --helpfull). Rerunning a command resumes it.
The task is `tasks.pretraining`; the run is `training.runner.run`.

    python run_pretraining.py --input_file='shards/*.tfrecord' --output_dir=out \
      --bert_config_file=bert_config.json --do_train --do_eval \
      --train_batch_size=256 --max_seq_length=128 --max_predictions_per_seq=20 \
      --num_train_steps=1000000 --num_warmup_steps=10000 --learning_rate=1e-4
"""

from absl import app, flags

import cli
from cli import flags as training_flags
from tasks.pretraining.config import PretrainingConfig  # noqa: E402

training_flags.define_settings(PretrainingConfig)  # the task's settings, its defaults
training_flags.define_common_flags()
FLAGS = flags.FLAGS


def main(_):
    training_flags.require_a_stage(FLAGS, stages=("do_train", "do_eval"))
    from training.config import RuntimeConfig, TrainerConfig

    axes = training_flags.grid_axes(FLAGS)
    if axes:
        raise app.UsageError(f"--{next(iter(axes))} takes one value here (grids of several "
                             f"are for the fine-tuning scripts).")
    task_config, trainer, runtime = training_flags.configs_from_flags(
        FLAGS, PretrainingConfig, TrainerConfig, RuntimeConfig)
    # TensorFlow from here on: a wrong flag was answered without waiting for it.
    from tasks.pretraining.task import PretrainingTask
    from training import runner
    runner.run(PretrainingTask(task_config), trainer, runtime,
               do_train=FLAGS.do_train, do_eval=FLAGS.do_eval)


if __name__ == "__main__":
    cli.run(main)
