"""Bundle the GLUE test predictions of several run_classifier.py runs for the leaderboard.

Pipeline position: fine-tuning with --do_predict on each GLUE task (MNLI also predicts
the diagnostic set, AX.tsv, when GLUE's `diagnostic/diagnostic.tsv` is beside its folder)
-> here -> one zip of CoLA.tsv, SST-2.tsv, ..., AX.tsv, checked against the leaderboard's
format (`tasks.classification.submission`).

    python glue_submission.py --run_dirs=cola_out,sst2_out,mrpc_out,stsb_out,qqp_out,\
mnli_out,qnli_out,rte_out,wnli_out --output_file=glue_submission.zip
"""

import dataclasses

from absl import flags, logging

import cli
from cli.flags import configs_from_flags, define_settings
from common.settings import setting


@dataclasses.dataclass(frozen=True, kw_only=True)
class SubmissionSettings:
    """The tool's settings."""
    run_dirs: tuple = setting(help="The --output_dir of each task's run_classifier.py "
                              "--do_predict run.")
    output_file: str = setting("glue_submission.zip", help="The zip to write.")


define_settings(SubmissionSettings)
FLAGS = flags.FLAGS


def main(_):
    configs_from_flags(FLAGS, SubmissionSettings)  # required settings given, values checked
    from common import file_io
    from tasks.classification import submission

    files = submission.collect(FLAGS.run_dirs)
    file_io.refuse_inputs_as_outputs({"output_file": FLAGS.output_file},
                                     {"run_dirs": list(files.values())})
    for task, path in sorted(files.items()):
        rows, note = submission.check(task, path)
        if note:
            logging.warning("%s: %s (a leaderboard submission needs the whole test set).",
                            path, note)
        print(f"{task}.tsv: {rows:,} predictions from {path}")
    missing = [task for task in submission.TASKS if task not in files]
    if missing:
        logging.warning("No file for %s: the leaderboard scores a submission only when "
                        "every task is in it.", ", ".join(missing))
    submission.write(files, FLAGS.output_file)
    print(f"Wrote {FLAGS.output_file} ({len(files)} of {len(submission.TASKS)} tasks).")


if __name__ == "__main__":
    cli.run(main)
