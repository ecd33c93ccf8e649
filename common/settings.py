"""Settings declared once: a dataclass field that carries its help text, and whether it is
recorded beside a run's checkpoints, so that flags, docs and the resume check all come
from the same line.

Pipeline position: every frozen config (`training.config`, each task's config, each
task's export options) declares its fields with `setting`; `cli.flags` defines the absl
flag of each from it (same name, type, default and help), and `training.run_flags` records
the fields marked `recorded`.

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class MyConfig:
        data_dir: str = setting(help="Folder with the task's files.", recorded=True)
        doc_stride: int = setting(128, help="Pieces between window starts.")
"""

import dataclasses


def setting(default=dataclasses.MISSING, *, help, recorded=False, choices=None,
            grid=False, flag=True):
    """A dataclass field with its command-line meaning.

    Args:
        default: the default value (none: the setting is required).
        help: str. The flag's help text, and the field's documentation.
        recorded: bool. The setting decides the input, the model or the optimisation:
            it is kept beside the checkpoints, and a resume with another value is told.
        choices: sequence of str or None. The values allowed (an enum flag).
        grid: bool. The flag takes several comma-separated values (a grid of runs).
        flag: bool. False for a field that is set from other flags, not by one of its own.
    """
    metadata = {"help": help, "recorded": recorded, "choices": tuple(choices or ()),
                "grid": grid, "flag": flag}
    return dataclasses.field(default=default, metadata=metadata)


def metadata(config_class, name):
    """The `setting` metadata of field `name` of the dataclass `config_class`, from the
    nearest class of its MRO that declares it with `setting` (a subclass may change only
    the default: `max_seq_length: int = 384`). {} when none does."""
    for cls in config_class.__mro__:
        for field in dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ():
            if field.name == name and "help" in field.metadata and \
                    name in cls.__dict__.get("__annotations__", {}):
                return field.metadata
    return {}


def recorded_names(*config_classes):
    """The names of the recorded settings of `config_classes` (dataclasses)."""
    return tuple(dict.fromkeys(
        f.name for c in config_classes for f in dataclasses.fields(c)
        if metadata(c, f.name).get("recorded")))
