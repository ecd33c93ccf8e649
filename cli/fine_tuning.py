"""The command line of a script that fine-tunes one task: its flags, the stages it is
asked for, and the run (one, or a grid of them) that `training.grid` makes of them.

Pipeline position: a pre-trained checkpoint -> a root fine-tuning script (flags and its
own extras) -> here -> `training.grid` / `training.runner` -> eval results, predictions,
a SavedModel. The script passes its task's registry entry (`tasks.registry.load`): the
command-line layer knows no task. The task's TensorFlow code is imported only once the
flags have been checked.
"""

from cli import flags as training_flags


def define_flags(entry):
    """The task's settings first (its defaults win), then the flags every training
    script shares and the fine-tuning ones. `entry`: the task's `tasks.registry`
    entry."""
    training_flags.define_settings(entry.config_class)
    training_flags.define_common_flags()
    training_flags.define_fine_tuning_flags()


def run(entry, flag_values):
    """Fine-tunes the task of the registry entry `entry` as the flags say (a grid when a
    grid flag has several values); returns `training.grid.run`'s result."""
    from training.config import RuntimeConfig, TrainerConfig

    task_config, trainer, runtime = training_flags.configs_from_flags(
        flag_values, entry.config_class, TrainerConfig, RuntimeConfig)
    # TensorFlow from here on: a wrong flag was answered without waiting for it.
    from training import grid
    return grid.run(entry.task_class, task_config, trainer, runtime,
                    training_flags.grid_axes(flag_values),
                    do_train=flag_values.do_train, do_eval=flag_values.do_eval,
                    do_predict=flag_values.do_predict)
