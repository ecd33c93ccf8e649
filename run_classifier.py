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

training_flags.define_common_flags()
training_flags.define_fine_tuning_flags()
flags.DEFINE_string("task_name", None, "CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE, "
                    "WNLI, XNLI, or generic (your own files).")
flags.DEFINE_string("data_dir", None, "Folder with the task's train/dev/test files.")
flags.DEFINE_float("dropout_rate", 0.1, "Dropout before the classifier.")
flags.DEFINE_string("xnli_language", "zh", "XNLI: the language to train and test on.")
flags.DEFINE_enum("tokenizer", "python", ["python", "graph"],
                  "Feature conversion: the Python tokenizer or the in-graph one "
                  "(identical results).")
flags.DEFINE_string("text_a_column", "text_a", "generic task: column of the first text.")
flags.DEFINE_string("text_b_column", None, "generic task: column of the second text.")
flags.DEFINE_string("label_column", "label", "generic task: column of the label.")
flags.DEFINE_list("labels", None, "generic task: the label list (default: read from the "
                  "training data).")
flags.DEFINE_bool("regression", False, "generic task: the label is a number.")
flags.DEFINE_enum("long_document", "truncate", ["truncate", "head_tail", "windows"],
                  "A text longer than --max_seq_length: truncate (the original), head_tail "
                  "(its first and last pieces, Sun et al. 2019: 128 + 382 of 510) or "
                  "windows (every window, --doc_stride pieces apart; trained on each with "
                  "the document's label, scored by the mean of the windows' logits). For "
                  "pairs, text_b is kept whole and text_a is the long one.")
flags.DEFINE_integer("doc_stride", None, "--long_document=windows: pieces between window "
                     "starts (default half a window).")
flags.DEFINE_bool("bucket_by_length", False, "Training batches of sequences of similar "
                  "length (less padding, faster; as Hugging Face's group_by_length). "
                  "Every batch is padded only to its own longest sequence either way.")
FLAGS = flags.FLAGS


def main(_):
    if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
        raise app.UsageError("At least one of --do_train, --do_eval, --do_predict.")
    from tasks.classification import ClassificationConfig, ClassificationTask
    from training import grid
    from training.config import RuntimeConfig, TrainerConfig

    task_config, trainer, runtime = training_flags.configs_from_flags(
        FLAGS, ClassificationConfig, TrainerConfig, RuntimeConfig)
    grid.run(ClassificationTask, task_config, trainer, runtime,
             training_flags.grid_axes(FLAGS), do_train=FLAGS.do_train, do_eval=FLAGS.do_eval,
             do_predict=FLAGS.do_predict)


if __name__ == "__main__":
    cli.run(main)
