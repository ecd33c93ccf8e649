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
from cli import training_run
from common.shared_settings import ScoreOnly
from tasks.tagging import ENTRY as TASK

training_run.define_flags(TASK)
training_flags.define_settings(ScoreOnly)
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
    training_run.run(TASK, FLAGS, other_stages=("do_eval_only",))


if __name__ == "__main__":
    cli.run(main)
