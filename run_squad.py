"""Fine-tune and run BERT on SQuAD v1.1 / v2.0, with the official evaluation built in.

Pipeline position: a pre-trained checkpoint -> here -> predictions.json,
nbest_predictions.json (and null_odds.json for v2.0), eval_results.txt. Same flags as the
original `run_squad.py`, plus the shared training flags (strategies, dtypes, optimizer).
The task is `tasks.squad`; the run is `training.runner.run`. With `--do_eval` while
training, the predict file is scored at every checkpoint and the best one kept.

    python run_squad.py --vocab_file=$BERT/vocab.txt --bert_config_file=$BERT/bert_config.json \
      --init_checkpoint=$BERT/bert_model.ckpt --do_train --train_file=train-v1.1.json \
      --do_predict --predict_file=dev-v1.1.json --train_batch_size=24 --learning_rate=3e-5 \
      --num_train_epochs=2.0 --max_seq_length=384 --doc_stride=128 --output_dir=squad_out
    python run_squad.py --do_eval_only --predict_file=dev-v1.1.json \
      --predictions_file=squad_out/predictions.json
    python run_squad.py ... --init_checkpoint=squad_out --question="Who?" --context="..."
"""

import dataclasses
import json
from typing import Optional

from absl import app, flags

import cli
from cli import flags as training_flags
from cli import training_run
from common.settings import setting
from common.shared_settings import ScoreOnly
from tasks.squad import ENTRY as TASK
from tasks.squad.config import SquadConfig

training_run.define_flags(TASK)
training_flags.define_settings(ScoreOnly)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SquadScriptSettings:
    """What this script adds to the task's settings: scoring with null odds, and one
    question answered from the command line."""
    null_odds_file: Optional[str] = setting(None, help="null_odds.json (v2.0) to score "
                                            "with.")
    question: Optional[str] = setting(None, help="Answer this question about --context "
                                      "and exit.")
    context: Optional[str] = setting(None, help="The passage for --question.")
    verbose_logging: bool = setting(False, help="Accepted for compatibility.")


training_flags.define_settings(SquadScriptSettings)
FLAGS = flags.FLAGS


def _eval_only():
    for name in ("predict_file", "predictions_file"):
        if not getattr(FLAGS, name):
            raise app.UsageError(f"--do_eval_only needs --{name}.")
    from tasks.squad.data import load_json
    from tasks.squad.task import score
    with open(FLAGS.predictions_file, encoding="utf-8") as f:
        predictions = json.load(f)
    odds = None
    if FLAGS.null_odds_file:
        with open(FLAGS.null_odds_file, encoding="utf-8") as f:
            odds = json.load(f)
    print(json.dumps(score(load_json(FLAGS.predict_file), predictions, odds,
                           FLAGS.version_2_with_negative)))


def main(_):
    if FLAGS.do_eval_only:
        return _eval_only()
    question = FLAGS.question
    if question is not None and FLAGS.context is None:
        raise app.UsageError("--question needs --context.")
    model = None
    if FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict or FLAGS.export_dir or \
            question is None:  # (no stage and no question: the stage check says so)
        result = training_run.run(TASK, FLAGS,
                                  other_stages=("export_dir", "question", "do_eval_only"))
        if result.predict_results is not None:
            print(json.dumps(result.predict_results))
        model = result.model
    if question is not None:
        from training.config import RuntimeConfig
        task_config, runtime = training_flags.configs_from_flags(FLAGS, SquadConfig,
                                                                 RuntimeConfig)
        from tasks.squad.data import read_squad_from_text
        from tasks.squad.task import SquadTask
        from training import runner
        read_squad_from_text(question, FLAGS.context)  # refused before a model is built
        task = SquadTask(task_config)
        model = model or runner.inference_model(task, FLAGS.output_dir, runtime)
        print(json.dumps(task.answer(model, question, FLAGS.context), ensure_ascii=False))


if __name__ == "__main__":
    cli.run(main)
