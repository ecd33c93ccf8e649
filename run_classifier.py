"""Fine-tune BERT for sentence(-pair) classification: GLUE, XNLI, or your own data.

Pipeline position: a pre-trained checkpoint (Google's, Hugging Face's, or
run_pretraining.py's export) -> here -> eval results, test predictions, and a SavedModel
that takes raw strings. Same flags as the original `run_classifier.py`, plus the
distribution / precision / optimizer flags of run_pretraining.py. The task is
`tasks.classification`; the run is `training.runner.run` (a grid of several learning
rates, batch sizes, epochs or seeds: `training.grid`).

    python run_classifier.py --task_name=MRPC --data_dir=glue_data/MRPC \
      --vocab_file=uncased_L-12_H-768_A-12/vocab.txt \
      --bert_config_file=uncased_L-12_H-768_A-12/bert_config.json \
      --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \
      --do_train --do_eval --do_predict --max_seq_length=128 --train_batch_size=32 \
      --learning_rate=2e-5 --num_train_epochs=3 --output_dir=mrpc_out --export_dir=mrpc_model
"""

from absl import app, flags

import cli
from cli import flags as training_flags

from tasks.classification.config import ClassificationConfig  # noqa: E402

training_flags.define_settings(ClassificationConfig)  # the task's settings, its defaults
training_flags.define_common_flags()
training_flags.define_fine_tuning_flags()
FLAGS = flags.FLAGS


def main(_):
    if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
        raise app.UsageError("At least one of --do_train, --do_eval, --do_predict.")
    from training.config import RuntimeConfig, TrainerConfig

    task_config, trainer, runtime = training_flags.configs_from_flags(
        FLAGS, ClassificationConfig, TrainerConfig, RuntimeConfig)
    # TensorFlow from here on: a wrong flag was answered without waiting for it.
    from tasks.classification.task import ClassificationTask
    from training import grid
    grid.run(ClassificationTask, task_config, trainer, runtime,
             training_flags.grid_axes(FLAGS), do_train=FLAGS.do_train, do_eval=FLAGS.do_eval,
             do_predict=FLAGS.do_predict)


if __name__ == "__main__":
    cli.run(main)
