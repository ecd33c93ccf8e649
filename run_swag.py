"""Fine-tune BERT for multiple choice: SWAG (the paper's Table 4), or your own data.

Pipeline position: a pre-trained checkpoint -> here -> eval results (accuracy), test
predictions (test_results.tsv: each choice's probability, the chosen index and text) and a
SavedModel that takes a context, a question and the choices as text. Same flags as
`run_classifier.py`; the data is SWAG's release CSVs (train.csv, val.csv, test.csv) or
JSON lines (`--data_format`, see `tasks/multiple_choice/data.py`). The task is
`tasks.multiple_choice`; the run is `training.runner.run` (a grid: `training.grid`). The
paper fine-tuned 3 epochs at learning rate 2e-5, batch size 16:

    python run_swag.py --data_dir=swag_data \
      --vocab_file=uncased_L-12_H-768_A-12/vocab.txt \
      --bert_config_file=uncased_L-12_H-768_A-12/bert_config.json \
      --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \
      --do_train --do_eval --do_predict --max_seq_length=128 --train_batch_size=16 \
      --learning_rate=2e-5 --num_train_epochs=3 --output_dir=swag_out --export_dir=swag_model
"""

from absl import flags

import cli
from cli import training_run
from tasks.multiple_choice import ENTRY as TASK

training_run.define_flags(TASK)
FLAGS = flags.FLAGS


def main(_):
    training_run.run(TASK, FLAGS)


if __name__ == "__main__":
    cli.run(main)
