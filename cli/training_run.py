"""The command line of every training script (`run_pretraining.py` and the four
fine-tuning ones): its flags, its stage check, and the run: `training.runner.run`, or
`training.grid.run` when a grid flag has several values.

Pipeline position: a root training script (flags and its own extras) -> here ->
`training.runner` (or `training.grid`) -> checkpoints, eval results, predictions, a
SavedModel. The script passes its task's registry entry (`tasks.<name>.ENTRY`): the
command-line layer knows no task. The task's TensorFlow code is imported only once the
flags have been checked.

    from tasks.classification import ENTRY as TASK
    training_run.define_flags(TASK)
    def main(_):
        training_run.run(TASK, FLAGS)   # the stage check first, then the run
"""

import gc

from absl import app

from cli import flags as training_flags

PRETRAINING_STAGES = ("do_train", "do_eval")


def define_flags(entry, fine_tuning=True):
    """The task's settings first (its defaults win), then the flags every training
    script shares and, for a fine-tuning script, the fine-tuning ones. `entry`: the
    task's `tasks.registry` entry."""
    training_flags.define_settings(entry.config_class)
    training_flags.define_common_flags()
    if fine_tuning:
        training_flags.define_fine_tuning_flags()


def run(entry, flag_values, other_stages=()):
    """Trains, evaluates, predicts and exports the task of the registry entry `entry` as
    the flags say (a grid when a grid flag of a fine-tuning script has several values);
    returns the run's `training.runner.RunResult`. First the one stage check of the training
    scripts (`other_stages`: the flags a script adds that also give it work, checked by
    the script itself)."""
    from training.config import RuntimeConfig, TrainerConfig

    fine_tuning = "do_predict" in flag_values
    training_flags.require_a_stage(
        flag_values, *other_stages,
        stages=training_flags.STAGES if fine_tuning else PRETRAINING_STAGES)
    axes = training_flags.grid_axes(flag_values)
    if axes and not fine_tuning:
        raise app.UsageError(f"--{next(iter(axes))} takes one value here (grids of several "
                             f"are for the fine-tuning scripts).")
    task_config, trainer, runtime = training_flags.configs_from_flags(
        flag_values, entry.config_class, TrainerConfig, RuntimeConfig)
    stages = dict(do_train=flag_values.do_train, do_eval=flag_values.do_eval,
                  do_predict=fine_tuning and flag_values.do_predict)
    try:
        trainer.check_stages(stages["do_train"], stages["do_eval"])
    except ValueError as e:
        raise app.UsageError(str(e)) from None
    # TensorFlow from here on: a wrong flag was answered without waiting for it.
    if axes:
        from training import grid
        settle_imports()
        return grid.run(entry.task_class, task_config, trainer, runtime, axes, **stages)
    from training import runner
    task = entry.task_class(task_config)
    settle_imports()
    return runner.run(task, trainer, runtime, **stages)


def settle_imports():
    """Takes what the process holds so far (TensorFlow's, Keras's and the task's objects
    from their imports: they live to the end) out of the garbage collector's view
    (`gc.freeze`). Otherwise the run's one full collection, which comes while the model
    is built, walks all of them for nothing (research/RESULTS-archive.md, "Garbage
    collection out of the run's way"). A script's process only: a library does not
    freeze its user's objects."""
    gc.freeze()
