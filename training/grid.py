"""A fine-tuning grid in one command: every combination of the values given to
`--learning_rate`, `--train_batch_size`, `--num_train_epochs` and `--seed`, the best one
chosen on dev, predictions and the export from it.

Pipeline position: the fine-tuning entry points (`run_classifier.py`, `run_squad.py`,
`run_ner.py`, through `cli.training_run`) call `run` when a grid flag has several values
(one run alone goes to `training.runner.run` directly).
The paper's protocol (appendix A.3: batch 16 or 32, learning rate 5e-5, 3e-5 or 2e-5, 2, 3
or 4 epochs, the best on dev) is one command:

    python run_classifier.py ... --do_train --do_eval --do_predict \
      --train_batch_size=16,32 --learning_rate=5e-5,3e-5,2e-5 --num_train_epochs=2,3,4 \
      --output_dir=mrpc_grid --export_dir=mrpc_model

What it writes in `output_dir`:
  * one sub-folder per combination, named by its values (`lr=5e-05,bs=16,epochs=2`), a run
    of its own (checkpoints, `best/`, `eval_results.txt`, metrics.jsonl); a combination
    that finished is not run again, one that was interrupted resumes;
  * `grid_results.tsv`: one row per combination (its values, steps, the step and dev
    metrics of its best checkpoint), the header first;
  * `best/`: the best checkpoint of the best combination (by the task's main metric), with
    `best_results.txt` naming the combination;
  * with prediction, the task's prediction files from `best/` (and
    `predictions_from.txt`); with an export folder, the export of `best/`.
The task's inputs are read and converted once for all combinations (the features of a
classification task are cached in `output_dir`).
"""

import copy
import dataclasses
import itertools
import os
import shutil

from absl import logging

from common import file_io
from training import best_checkpoint, metrics_log, runner
from training.run_lock import RunLock

SHORT_NAMES = {"learning_rate": "lr", "train_batch_size": "bs", "num_train_epochs": "epochs",
               "seed": "seed"}
RESULTS_FILE = "grid_results.tsv"


def combination_name(values):
    """{"learning_rate": 5e-05, "train_batch_size": 16} -> "lr=5e-05,bs=16"."""
    return ",".join(f"{SHORT_NAMES[name]}={value:g}" if isinstance(value, float) else
                    f"{SHORT_NAMES[name]}={value}" for name, value in values.items())


def _with(configs, values):
    """The (task config, trainer, runtime) of one combination."""
    out = []
    for config in configs:
        fields = {f.name for f in dataclasses.fields(config)}
        out.append(dataclasses.replace(config, **{k: v for k, v in values.items()
                                                  if k in fields}))
    return out


def run(task_class, task_config, trainer, runtime, axes, *, do_train=False, do_eval=False,
        do_predict=False):
    """The grid of the module docstring over `axes` ({flag: several values}). Returns the
    `RunResult` of its final prediction and export from `best/`."""
    if not axes:
        raise ValueError("A grid needs at least one flag with several values.")
    if not (do_train and do_eval):
        raise ValueError(f"A grid ({', '.join(f'--{n}' for n in axes)} with several values) "
                         f"trains every combination and keeps the best on dev: it needs "
                         f"--do_train and --do_eval.")
    output_dir = trainer.output_dir
    file_io.makedirs(output_dir)
    with RunLock(output_dir):
        task = task_class(task_config)
        task.prepare(output_dir, do_train=True, do_eval=True)  # once for every combination
        runner.record_export_settings(task, output_dir)  # for best/'s export
        rows = []
        combinations = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
        for number, values in enumerate(combinations, start=1):
            name = combination_name(values)
            folder = os.path.join(output_dir, name)
            logging.info("Grid: combination %d of %d, %s.", number, len(combinations), name)
            if not _finished(folder):
                one_task = copy.copy(task)  # the inputs prepared above, this one's config
                one_config, one_trainer, one_runtime = _with(
                    (task_config, trainer, runtime), values)
                one_task.config = one_config
                runner.run(one_task, dataclasses.replace(one_trainer, output_dir=folder,
                                                         export_dir=None),
                           one_runtime, do_train=True, do_eval=True, prepared=True)
            rows.append((name, values, _results(folder)))
        best = _write_results(task, output_dir, rows)
        if not (do_predict or trainer.export_dir):
            return runner.RunResult()
        final_task = task_class(dataclasses.replace(
            task_config, init_checkpoint=best_checkpoint.checkpoint(output_dir)))
        logging.info("Grid: predicting and exporting with the best combination, %s.", best)
        return runner.run(final_task, dataclasses.replace(trainer, predict_from="best"),
                          runtime, do_predict=do_predict)


def _finished(folder):
    path = os.path.join(folder, metrics_log.FILE_NAME)
    return os.path.exists(path) and any(e["event"] == "end" for e in metrics_log.read(path))


def _results(folder):
    """A finished combination's figures: its last step and its best checkpoint's."""
    return {"steps": runner.checkpoint_step(folder),
            "best": best_checkpoint.read_results(folder)}


def _write_results(task, output_dir, rows):
    """grid_results.tsv, and the best combination's best checkpoint as `best/`; returns
    the best combination's name."""
    metric = task.main_metric
    axes = list(rows[0][1])
    metric_names = sorted({k for _, _, r in rows for k, v in r["best"].items()
                           if _is_number(v) and k != "global_step"})
    header = ["combination"] + axes + ["steps", "best_step"] + metric_names
    lines = ["\t".join(header)]
    for name, values, result in rows:
        lines.append("\t".join([name] + [str(values[a]) for a in axes] + [
            str(result["steps"]), result["best"].get("global_step", "")] +
            [result["best"].get(m, "") for m in metric_names]))
    file_io.atomic_write_text(os.path.join(output_dir, RESULTS_FILE), "\n".join(lines) + "\n")
    name, _, result = max(rows, key=lambda row: float(row[2]["best"][metric]))
    source = best_checkpoint.folder(os.path.join(output_dir, name))
    with file_io.atomic_path(best_checkpoint.folder(output_dir)) as tmp:
        shutil.copytree(source, tmp)
        best_checkpoint.add_results(tmp, grid_combination=name)
    logging.info("Grid: %d combinations in %s; the best on dev is %s (%s = %s at step %s), "
                 "kept in %s.", len(rows), os.path.join(output_dir, RESULTS_FILE), name,
                 metric, result["best"][metric], result["best"].get("global_step"),
                 best_checkpoint.folder(output_dir))
    return name


def _is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False
