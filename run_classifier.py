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

from absl import flags

import cli
from cli import training_run
from tasks.classification import ENTRY as TASK

training_run.define_flags(TASK)
FLAGS = flags.FLAGS


def main(_):
    training_run.run(TASK, FLAGS)


if __name__ == "__main__":
    cli.run(main)
