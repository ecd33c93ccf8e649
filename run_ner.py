"""Fine-tune BERT for named-entity recognition (CoNLL-2003 or any CoNLL-style data), with
entity-level F1 as conlleval computes it.

Pipeline position: a pre-trained checkpoint -> here -> eval_results.txt,
test_predictions.txt (CoNLL columns: word, gold, predicted). Uses the shared training
loop, optimizer and flags of run_pretraining.py / run_classifier.py. The task is
`tasks.tagging`; the run is `training.runner.run`.

    python run_ner.py --data_dir=conll2003 --vocab_file=cased_L-12_H-768_A-12/vocab.txt \
      --bert_config_file=cased_L-12_H-768_A-12/bert_config.json \
      --init_checkpoint=cased_L-12_H-768_A-12/bert_model.ckpt --do_lower_case=False \
      --do_train --do_eval --do_predict --max_seq_length=128 --output_dir=ner_out
    python run_ner.py --do_eval_only --predictions_file=ner_out/test_predictions.txt
"""

import json

from absl import app, flags

import cli
from cli import flags as training_flags

training_flags.define_common_flags()
training_flags.define_fine_tuning_flags(do_lower_case=False, predict_batch_size=32)
flags.DEFINE_string("data_dir", None, "Folder with train/dev/test files: eng.train, "
                    "eng.testa, eng.testb or train.txt, valid.txt (dev.txt), test.txt.")
flags.DEFINE_enum("tag_scheme", "iob2", ["iob2", "keep"],
                  "iob2: convert the tags to IOB2 (BIO), e.g. CoNLL-2003's IOB1; keep: use "
                  "them as they are.")
flags.DEFINE_integer("doc_stride", None, "Pieces between the starts of overlapping "
                     "windows of a long sentence (default max_seq_length / 2).")
flags.DEFINE_bool("document_context", False, "Fill each window with the words of the "
                  "neighbouring sentences of the same document (the paper's setting); "
                  "they are not labelled or predicted.")
flags.DEFINE_bool("do_eval_only", False, "Only score --predictions_file with conlleval's "
                  "metric; no model.")
flags.DEFINE_string("predictions_file", None, "CoNLL predictions: word, gold tag, predicted "
                    "tag per line.")
FLAGS = flags.FLAGS


def _eval_only():
    from tasks.tagging import metrics
    if not FLAGS.predictions_file:
        raise app.UsageError("--do_eval_only needs --predictions_file.")
    results = metrics.evaluate(*metrics.read_predictions(FLAGS.predictions_file))
    print(metrics.format_results(results), end="")
    print(json.dumps(results))


def main(_):
    if FLAGS.do_eval_only:
        return _eval_only()
    if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
        raise app.UsageError("At least one of --do_train, --do_eval, --do_predict "
                             "(or --do_eval_only).")
    from tasks.tagging import TaggingConfig, TaggingTask
    from training import grid
    from training.config import RuntimeConfig, TrainerConfig

    task_config, trainer, runtime = training_flags.configs_from_flags(
        FLAGS, TaggingConfig, TrainerConfig, RuntimeConfig)
    grid.run(TaggingTask, task_config, trainer, runtime, training_flags.grid_axes(FLAGS),
             do_train=FLAGS.do_train, do_eval=FLAGS.do_eval, do_predict=FLAGS.do_predict)


if __name__ == "__main__":
    cli.run(main)
