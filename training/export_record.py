"""What exporting a fine-tuned model needs beyond its weights, recorded by the run that
trained it: `output_dir/export_settings.json`.

Pipeline position: a fine-tuning run writes the record once its task has read the data
(the labels in the model's order, whether the texts come in pairs, how a long text is
read, the vocabulary, casing and length); the export scripts read it back for a
checkpoint of that run (`output_dir/ckpt-N` or `output_dir/best/model.ckpt`), so that
nothing the run knew is given twice on a command line, or given wrong. (Hugging Face
keeps the same facts in a model's config.json: `id2label`.)
"""

import dataclasses
import json
import os

from absl import logging

from common import file_io

FILE_NAME = "export_settings.json"


def values_of(task_type, options, vocab_file, do_lower_case, max_seq_length):
    """The record's {flag: value}: the task's export `options` (a dataclass, or None)
    and what every export takes. A tuple becomes a list, as JSON reads it back."""
    values = {"task_type": task_type, "vocab_file": vocab_file,
              "do_lower_case": do_lower_case, "max_seq_length": max_seq_length}
    if options is not None:
        for field in dataclasses.fields(options):
            value = getattr(options, field.name)
            values[field.name] = list(value) if isinstance(value, tuple) else value
    return values


def write(output_dir, values):
    """Writes the record (atomically) into `output_dir`."""
    file_io.atomic_write_text(os.path.join(output_dir, FILE_NAME),
                              json.dumps(values, indent=2, sort_keys=True) + "\n")


def path_for_checkpoint(checkpoint):
    """Where the record of the run that wrote `checkpoint` is, or None: beside the
    checkpoint, or one folder up for a run's best/ checkpoint."""
    from training.best_checkpoint import BEST_DIR  # (it imports TensorFlow: not for --help)
    if not checkpoint:
        return None
    folder = os.path.dirname(checkpoint) or "."
    candidates = [folder]
    if os.path.basename(os.path.normpath(folder)) == BEST_DIR:
        candidates.append(os.path.dirname(os.path.normpath(folder)) or ".")
    for candidate in candidates:
        path = os.path.join(candidate, FILE_NAME)
        if file_io.exists(path):
            return path
    return None


def read_for_checkpoint(checkpoint):
    """(path, {flag: value}) of the record of the run that wrote `checkpoint`, or
    (None, {}) when it has none (a Google checkpoint, an older run).

    Raises:
        ValueError: the record exists but cannot be read (named, with the fix).
    """
    path = path_for_checkpoint(checkpoint)
    if path is None:
        return None, {}
    try:
        with file_io.open_binary(path) as f:
            values = json.loads(f.read().decode("utf-8"))
    except (ValueError, OSError) as e:
        raise ValueError(f"{path}: unreadable ({e}); delete it and give the export's "
                         f"flags (--labels, --pair...) on the command line.") from None
    if not isinstance(values, dict):
        raise ValueError(f"{path}: not a JSON object; delete it and give the export's "
                         f"flags on the command line.")
    logging.info("Export settings of the run that wrote %s: %s.", checkpoint, path)
    return path, values
