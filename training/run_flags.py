"""The flags a training run was started with, kept next to its checkpoints.

Pipeline position: every entry point's training (pre-training and the three fine-tuning
scripts) goes through `training.loop.Trainer.train`, which resumes from the newest
checkpoint whenever a command is rerun in the same `--output_dir`. A rerun with other data,
batch size or learning rate would then silently continue the old run: its optimizer state,
its schedule position, and an input skipped as if the batches were the same. This module
writes the flags that decide those to `output_dir/training_flags.json` and, on resuming,
warns with every flag that changed, so that the mix is never silent. The values come from
the run's configs (`training.config`, the task's): their fields declared `recorded`.
"""

import json
import os

from absl import logging

from common import file_io, settings

FILE_NAME = "training_flags.json"

# Flags a resumed run may change: it is the same run, trained for longer or shorter.
RESUMABLE_CHANGES = ("num_train_steps", "num_train_epochs")


def recorded(output_dir):
    """The flags recorded in `output_dir` ({} when none can be read)."""
    return file_io.read_json_state(os.path.join(output_dir, FILE_NAME),
                                   "cannot check the resumed run's flags")


def differences(before, values, ignore=()):
    """{name: (before, now)} of the flags recorded in both that differ."""
    return {name: (before[name], value) for name, value in values.items()
            if name in before and before[name] != value and name not in ignore}


def describe(changed):
    return "; ".join(f"--{name}: {old!r} before, {new!r} now"
                     for name, (old, new) in sorted(changed.items()))


def check_same_run(output_dir, values, step):
    """Raises ValueError when the checkpoints in `output_dir` (the newest at `step`) are of
    another run: one recorded with other flags than `values` (beyond a longer or shorter
    schedule). Starting a run with `--init_checkpoint` in such a folder would silently
    resume the other run instead."""
    changed = differences(recorded(output_dir), values, ignore=RESUMABLE_CHANGES)
    if changed:
        raise ValueError(
            f"--output_dir={output_dir} holds the checkpoints of another run (up to step "
            f"{step}; {describe(changed)}), which this command would resume, ignoring "
            f"--init_checkpoint. To resume that run, rerun its own command; to start this "
            f"one, use a new --output_dir, or --overwrite_output_dir (moves the old run "
            f"aside).")


def recorded_values(*configs):
    """{name: value} of the settings of `configs` (dataclass instances) declared
    `recorded` (`common.settings.setting`: those that decide the input, the model or the
    optimisation); a tuple is recorded as a list, as JSON reads it back."""
    values = {}
    for config in configs:
        for name in settings.recorded_names(type(config)):
            value = getattr(config, name)
            values[name] = list(value) if isinstance(value, tuple) else value
    return values


def check_and_record(output_dir, values, resumed_step):
    """Warns if a run resumed at `resumed_step` (> 0) was started with other `values`,
    then records `values` (atomically) for the next rerun.

    Returns:
        {name: (before, now)} of the flags that changed (empty when starting afresh).
    """
    path = os.path.join(output_dir, FILE_NAME)
    changed = {}
    if resumed_step:
        changed = differences(recorded(output_dir), values)
        if changed:
            listing = describe(changed)
            logging.warning(
                "Resuming %s at step %d with flags that differ from the run that wrote its "
                "checkpoints: %s. Training continues from the saved weights, optimizer "
                "state and step, and skips the input as if it were the same. To start "
                "afresh instead, use a new --output_dir.", output_dir, resumed_step, listing)
    file_io.atomic_write_text(path, json.dumps(values, indent=2, sort_keys=True))
    return changed
