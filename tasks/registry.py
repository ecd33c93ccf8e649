"""The tasks by name. Each task's home declares itself once here, in its `__init__.py`:
its name and older aliases, its config and `Task` classes, and how its model is built and
exported outside of training. Shared code looks tasks up instead of naming them.

Pipeline position: between the tasks (`tasks/*/`) and what serves them all:
`export_saved_model.py` and `export_huggingface.py` (which list the task types and
define each task's export flags from its `ExportEntry.options`), and the entry points.
`load_all` imports every subpackage of `tasks/`, so a new folder is found with no edit
here.
"""

import importlib
import inspect
import pkgutil


def resolve(reference):
    """An object, or what a loader returns: a task names its classes through functions
    that import them when first read (`lambda: _task().ClassificationTask`, with `_task`
    importing `tasks.<name>.task`), so that looking a task up imports none of its
    TensorFlow code, and an editor follows each name to its definition."""
    return reference() if inspect.isfunction(reference) else reference


def lazy_names(package, homes):
    """A package's module `__getattr__` (PEP 562) that imports each of its public names
    from its home module when first used: `homes` is {module: (name, ...)}. (The
    package also imports them under `typing.TYPE_CHECKING`, for editors.)"""
    home_of = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name):
        if name not in home_of:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(home_of[name]), name)

    return __getattr__


class ExportEntry:
    """How a task's model is rebuilt from a checkpoint and exported outside of training.
    Each field is given as an object or a loader (see `resolve`), read when used.

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

    def __init__(self, options, build_model, save=None):
        self._options, self._build_model, self._save = options, build_model, save

    options = property(lambda self: resolve(self._options))
    build_model = property(lambda self: resolve(self._build_model))
    save = property(lambda self: resolve(self._save))

    def declares(self, name):
        """Whether the field `name` is given (not None), without importing it."""
        return getattr(self, f"_{name}") is not None


class TaskEntry:
    """One task.

    Attributes:
        name: str. Its one name: its folder's, `Task.name`, `--task_type`'s.
        task_class: its `training.task.Task` subclass (an object or a loader, see
            `resolve`); None for a model that another task trains and this one only
            answers with (the masked LM: fill-mask).
        config_class: its config (a `training.config.TaskConfig` subclass); None with
            no `task_class`.
        aliases: names older command lines used.
        export: an `ExportEntry`, or None. (The class that serves its exports from raw
            text without TensorFlow is named by the export itself, in `serving.json`:
            `serving.saved_model.ServingModule.fast_path`.)
    """

    def __init__(self, name, task_class, config_class, aliases=(), export=None):
        self.name, self.aliases, self.export = name, tuple(aliases), export
        self._task_class, self._config_class = task_class, config_class

    task_class = property(lambda self: resolve(self._task_class))
    config_class = property(lambda self: resolve(self._config_class))


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
