"""The tasks by name. Each task's home declares itself once here, in its `__init__.py`:
its name and older aliases, its config and `Task` classes, and how its model is built and
exported outside of training. Shared code looks tasks up instead of naming them.

Pipeline position: between the tasks (`tasks/*/`) and what serves them all:
`export_saved_model.py` and `export_huggingface.py` (which list the task types and
define each task's export flags from its `ExportEntry.options`), and the entry points.
`load_all` imports every subpackage of `tasks/`, so a new folder is found with no edit
here.
"""

import dataclasses
import importlib
import pkgutil
from typing import Callable, Optional


@dataclasses.dataclass(frozen=True)
class ExportEntry:
    """How a task's model is rebuilt from a checkpoint and exported outside of training.

    Attributes:
        options: a frozen dataclass of the settings the export needs beyond the model's
            (the labels, the input layout...), fields declared with
            `common.settings.setting` (they become the export scripts' flags); None when
            there are none.
        build_model: `(bert_config, options) -> keras.Model`, the task's model, weights
            not loaded. Raises ValueError naming the missing setting.
        save: `(model, export_dir, options, vocab_file, do_lower_case, max_seq_length,
            tflite, tflite_quantize) -> export_dir`, the SavedModel; None when the task
            has none (its model still goes to Hugging Face).
    """
    options: Optional[type]
    build_model: Callable
    save: Optional[Callable] = None


@dataclasses.dataclass(frozen=True)
class TaskEntry:
    """One task.

    Attributes:
        name: str. Its one name: its folder's, `Task.name`, `--task_type`'s.
        task_class: its `training.task.Task` subclass.
        config_class: its config (a `training.config.TaskConfig` subclass).
        aliases: names older command lines used.
        export: an `ExportEntry`, or None.
    """
    name: str
    task_class: type
    config_class: type
    aliases: tuple = ()
    export: Optional[ExportEntry] = None


_ENTRIES = {}


def register(entry):
    """Adds `entry`; a second task of the same name or alias is a programming error."""
    for key in (entry.name,) + tuple(entry.aliases):
        known = _lookup().get(key)
        if known is not None and known is not entry:
            raise ValueError(f"Task name {key!r} is taken by task {known.name!r}.")
    _ENTRIES[entry.name] = entry
    return entry


def _lookup():
    table = {}
    for entry in _ENTRIES.values():
        table[entry.name] = entry
        for alias in entry.aliases:
            table[alias] = entry
    return table


def load_all():
    """Imports every task package under `tasks/` (each registers itself); returns the
    entries, by name."""
    import tasks
    for module in pkgutil.iter_modules(tasks.__path__):
        if module.ispkg:
            importlib.import_module(f"tasks.{module.name}")
    return dict(_ENTRIES)


def entries():
    """The registered tasks, in the order they registered."""
    return list(_ENTRIES.values())


def names(with_aliases=True, where=None):
    """The task names (and aliases), of the entries for which `where(entry)` holds."""
    out = []
    for entry in _ENTRIES.values():
        if where is None or where(entry):
            out += [entry.name] + (list(entry.aliases) if with_aliases else [])
    return out


def get(name):
    """The entry of a task's name or alias, in any case.

    Raises:
        ValueError: no such task (the message lists them).
    """
    entry = _lookup().get((name or "").lower())
    if entry is None:
        raise ValueError(f"Unknown task {name!r}: use one of {names(with_aliases=False)} "
                         f"(or {sorted(set(names()) - set(names(with_aliases=False)))}).")
    return entry


def canonical_name(name):
    """A task's one name, from it or an alias (e.g. "classifier" -> "classification")."""
    return get(name).name


def labels_of(options):
    """The label list of export options with `labels` and `labels_file` fields: the
    file's non-empty lines when a file is given, else the labels (None when neither)."""
    path = getattr(options, "labels_file", None)
    if path:
        with open(path, encoding="utf-8") as f:
            return [line.strip() for line in f if line.strip()]
    labels = getattr(options, "labels", None)
    return list(labels) if labels else None
