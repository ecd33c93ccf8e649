"""Command-line flags every training entry point shares (absl), with the original's names,
and the one place where flags become settings.

Pipeline position: `run_pretraining.py`, `run_classifier.py`, `run_squad.py` and
`run_ner.py` call `define_settings(<the task's config>)`, then `define_common_flags()`
(and the fine-tuning scripts `define_fine_tuning_flags()`); every flag of a setting is
generated from the config field that declares it (`common.settings.setting`: name, type,
default, help). `configs_from_flags` then turns the parsed flags into the frozen configs
of `training.config` and the tasks. No library function reads `FLAGS`: a Python user
builds the same configs directly.
"""

import dataclasses
import sys
import typing

from absl import app, flags

from common import settings

# The stages of a fine-tuning script; pre-training has the first two.
STAGES = ("do_train", "do_eval", "do_predict")

# Flags that take several comma-separated values for a fine-tuning grid
# (`training.grid`): every combination is one run.
GRID_FLAGS = ("learning_rate", "train_batch_size", "num_train_epochs", "seed")


class _OneOrMore(flags.ArgumentParser):
    """A value of `item_parser`'s type, or several, comma-separated (then a tuple)."""

    def __init__(self, item_parser):
        self.item_parser = item_parser

    def parse(self, argument):
        if isinstance(argument, (list, tuple)):
            values = tuple(self.item_parser.parse(a) for a in argument)
        elif isinstance(argument, str) and "," in argument:
            values = tuple(self.item_parser.parse(a.strip()) for a in argument.split(",")
                           if a.strip())
        else:
            return self.item_parser.parse(argument)
        return values if len(values) > 1 else values[0]

    def flag_type(self):
        return self.item_parser.flag_type()


class _OneOrMoreSerializer(flags.ArgumentSerializer):
    def serialize(self, value):
        return ",".join(str(v) for v in value) if isinstance(value, tuple) else str(value)


def _define_grid_flag(item_parser, name, default, help_text, flag_values=flags.FLAGS):
    flags.DEFINE(_OneOrMore(item_parser), name, default,
                 help_text + " Several values, comma-separated, run a grid (fine-tuning).",
                 serializer=_OneOrMoreSerializer(), flag_values=flag_values)


_PARSERS = {int: flags.IntegerParser, float: flags.FloatParser}


def _value_type(hint):
    """int, float, bool, str or tuple, from a field's type hint (Optional[X] -> X)."""
    if typing.get_origin(hint) is typing.Union:
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    hint = typing.get_origin(hint) or hint
    return tuple if hint in (list, tuple) else hint


def define_settings(config_class, defaults=None, skip=(), flag_values=flags.FLAGS,
                    only=None):
    """Defines the absl flag of every field of the dataclass `config_class` declared with
    `common.settings.setting`: same name, type (bool, int, float, str; an enum with
    `choices`; a comma-separated list for a tuple; several values for a grid setting),
    default (or `defaults[name]`, a script's own) and help; not those in `skip` (only
    those in `only`, when given). A flag
    defined already (a setting shared by several configs, defined first by the config
    whose default the script wants) is left as it is."""
    defaults = defaults or {}
    hints = typing.get_type_hints(config_class)
    for field in dataclasses.fields(config_class):
        meta = settings.metadata(config_class, field.name)
        help_text = meta.get("help")
        if help_text is None or not meta.get("flag", True) or field.name in flag_values \
                or field.name in skip or (only is not None and field.name not in only):
            continue
        name, kind = field.name, _value_type(hints[field.name])
        default = defaults.get(name, None if field.default is dataclasses.MISSING
                               else field.default)
        choices = meta.get("choices")
        if meta.get("grid"):
            _define_grid_flag(_PARSERS[kind](), name, default, help_text, flag_values)
        elif choices:
            flags.DEFINE_enum(name, default, list(choices), help_text,
                              flag_values=flag_values)
        elif kind is bool:
            flags.DEFINE_bool(name, default, help_text, flag_values=flag_values)
        elif kind is int:
            flags.DEFINE_integer(name, default, help_text, flag_values=flag_values)
        elif kind is float:
            flags.DEFINE_float(name, default, help_text, flag_values=flag_values)
        elif kind is tuple:
            flags.DEFINE_list(name, None if default is None else list(default), help_text,
                              flag_values=flag_values)
        else:
            flags.DEFINE_string(name, default, help_text, flag_values=flag_values)


def list_in_help(flag_values=flags.FLAGS):
    """Makes `--help` list every flag the project defined, not absl's own: absl lists the
    main module's flags only, and a script's flags are defined here, from its settings.
    Call before parsing."""
    for module, defined in flag_values.flags_by_module_dict().items():
        if not module.startswith("absl."):
            for flag in defined:
                flag_values.register_key_flag_for_module(sys.argv[0], flag)


def grid_axes(flag_values):
    """{flag: values} of the grid flags given several values, in `GRID_FLAGS` order."""
    return {name: flag_values[name].value for name in GRID_FLAGS
            if name in flag_values and isinstance(flag_values[name].value, tuple)}


def define_common_flags():
    """The flags of `RuntimeConfig`, `TrainerConfig` (but its fine-tuning-only settings)
    and `TaskConfig`, and the stages. A script defines its task's config first
    (`define_settings`), so that the task's defaults win."""
    from training.config import RuntimeConfig, TaskConfig, TrainerConfig

    flags.DEFINE_bool("do_train", False, "Train.")
    flags.DEFINE_bool("do_eval", False, "Evaluate.")
    define_settings(TaskConfig)
    define_settings(TrainerConfig, skip=_FINE_TUNING_ONLY)
    define_settings(RuntimeConfig)
    flags.DEFINE_alias("steps_per_loop", "iterations_per_loop")
    # The original's TPU flags that have no setting of their own.
    flags.DEFINE_string("master", None, "Accepted for compatibility (use --tpu_name).")
    flags.DEFINE_integer("num_tpu_cores", 8, "Accepted for compatibility (the TPU system "
                         "decides).")


# TrainerConfig settings only the fine-tuning scripts take as flags.
_FINE_TUNING_ONLY = ("export_dir", "predict_from", "early_stopping_patience")


def define_fine_tuning_flags():
    """The flags of `training.config.FineTuningConfig` (those the task's config did not
    define first), `--do_predict`, `--export_dir`, `--predict_from` and
    `--early_stopping_patience`."""
    from training.config import FineTuningConfig, TrainerConfig

    flags.DEFINE_bool("do_predict", False, "Predict the test / predict file.")
    define_settings(FineTuningConfig)
    define_settings(TrainerConfig)


def require_a_stage(flag_values, *others, stages=STAGES):
    """The one stage check of every training script: raises `app.UsageError` unless one
    of the `stages` flags, or of the flags `others` that a script adds (`--export_dir`,
    `--question`, `--do_eval_only`), is given (a string flag: given at all)."""
    names = tuple(stages) + others
    if any(flag_values[name].value not in (None, False) for name in names):
        return
    raise app.UsageError(f"Nothing to do: give at least one of "
                         f"{', '.join(f'--{name}' for name in names)}.")


def _required(field):
    return (field.default is dataclasses.MISSING and
            field.default_factory is dataclasses.MISSING)


def refuse_swallowed_flags(flag_values):
    """Raises `app.UsageError` for a string flag given without its value, whose value is
    then the next argument, another flag (`--split_sentences --output_dir=out` makes
    "--output_dir=out" the language and leaves --output_dir unset): named as such, not as
    the other flag missing."""
    for name in flag_values:
        flag = flag_values[name]
        value = flag.value
        if not (flag.present and isinstance(value, str) and value.startswith("-")):
            continue
        other = value.lstrip("-").split("=", 1)[0]
        if other in flag_values or (other.startswith("no") and other[2:] in flag_values):
            raise app.UsageError(
                f"--{name} was given no value: it took the next argument, {value}, as "
                f"its value. Give it one, as --{name}=<value>.")


def require_flags(flag_values, names):
    """Raises `app.UsageError` naming every flag of `names` that has no value, all at once
    (not one per run); first, for a flag whose value is the next flag
    (`refuse_swallowed_flags`)."""
    refuse_swallowed_flags(flag_values)
    missing = [name for name in dict.fromkeys(names) if flag_values[name].value in (None, "")]
    if len(missing) == 1:
        raise app.UsageError(f"--{missing[0]} is required.")
    if missing:
        listed = ", ".join(f"--{name}" for name in missing[:-1]) + f" and --{missing[-1]}"
        raise app.UsageError(f"{listed} are required.")


def configs_from_flags(flag_values, *config_classes):
    """`config_from_flags` of each class, after checking that no required field of any of
    them lacks its flag (every missing flag named at once). A grid flag with several
    values (`grid_axes`) gets its first one here (each of the others is checked by
    building its config too). Returns a tuple."""
    require_flags(flag_values, [field.name for config_class in config_classes
                                for field in dataclasses.fields(config_class)
                                if _required(field) and field.name in flag_values])
    axes = grid_axes(flag_values)

    def build(config_class, index):
        fields = {f.name for f in dataclasses.fields(config_class)}
        return config_from_flags(flag_values, config_class, **{
            name: values[min(index, len(values) - 1)] for name, values in axes.items()
            if name in fields})

    for index in range(1, max(map(len, axes.values()), default=0)):
        for config_class in config_classes:  # every grid value is checked now, too
            build(config_class, index)
    return tuple(build(c, 0) for c in config_classes)


def fill_from_record(flag_values, values, source):
    """Gives every flag not on the command line its value in `values` (a training run's
    record, `training.export_record`, read from the file `source`); a flag given that
    differs from the record wins, with a warning naming both. Returns the names filled."""
    from absl import logging

    filled = []
    for name, value in values.items():
        if name not in flag_values or value is None:
            continue
        flag = flag_values[name]
        given = list(flag.value) if isinstance(flag.value, tuple) else flag.value
        if not flag.present:
            flag.value = value
            filled.append(name)
        elif given != value:
            logging.warning("--%s=%s given; the run recorded %s in %s: using the given "
                            "value.", name, given, value, source)
    return filled


def config_from_flags(flag_values, config_class, **overrides):
    """An instance of the dataclass `config_class` whose fields take the values of the
    flags of the same names (lists become tuples; a field no flag defines keeps its
    default; `overrides` win).

    Raises:
        app.UsageError: a required field (one without a default) has no flag value.
    """
    values = {}
    for field in dataclasses.fields(config_class):
        name = field.name
        if name in overrides:
            values[name] = overrides[name]
            continue
        value = flag_values[name].value if name in flag_values else None
        if value is None:
            if _required(field):
                raise app.UsageError(f"--{name} is required.")
            if name not in flag_values:
                continue
        values[name] = tuple(value) if isinstance(value, list) else value
    return config_class(**values)
