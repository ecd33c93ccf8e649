"""Command-line flags every training entry point shares (absl), with the original's names,
and the one place where flags become settings.

Pipeline position: `run_pretraining.py`, `run_classifier.py`, `run_squad.py` and
`run_ner.py` call `define_common_flags()` (and the fine-tuning scripts
`define_fine_tuning_flags()`), then `configs_from_flags` turns the parsed flags into the
frozen configs of `training.config` and the tasks. No library function reads `FLAGS`: a
Python user builds the same configs directly.
"""

import dataclasses
import typing

from absl import app, flags

from common import settings
from training import distribution
from training.optimizers import OPTIMIZER_NAMES


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


def _define_grid_flag(item_parser, name, default, help_text):
    flags.DEFINE(_OneOrMore(item_parser), name, default,
                 help_text + " Several values, comma-separated, run a grid (fine-tuning).",
                 serializer=_OneOrMoreSerializer())


_PARSERS = {int: flags.IntegerParser, float: flags.FloatParser}


def _value_type(hint):
    """int, float, bool, str or tuple, from a field's type hint (Optional[X] -> X)."""
    if typing.get_origin(hint) is typing.Union:
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    hint = typing.get_origin(hint) or hint
    return tuple if hint in (list, tuple) else hint


def define_settings(config_class, defaults=None, flag_values=flags.FLAGS):
    """Defines the absl flag of every field of the dataclass `config_class` declared with
    `common.settings.setting`: same name, type (bool, int, float, str; an enum with
    `choices`; a comma-separated list for a tuple; several values for a grid setting),
    default (or `defaults[name]`, a script's own) and help. A flag defined already (a
    setting shared by several configs) is left as it is."""
    defaults = defaults or {}
    hints = typing.get_type_hints(config_class)
    for field in dataclasses.fields(config_class):
        help_text = settings.help_of(field)
        if help_text is None or not field.metadata.get("flag", True) \
                or field.name in flag_values:
            continue
        name, kind = field.name, _value_type(hints[field.name])
        default = defaults.get(name, None if field.default is dataclasses.MISSING
                               else field.default)
        choices = field.metadata.get("choices")
        if field.metadata.get("grid"):
            _define_grid_flag(_PARSERS[kind](), name, default, help_text)
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


def grid_axes(flag_values):
    """{flag: values} of the grid flags given several values, in `GRID_FLAGS` order."""
    return {name: flag_values[name].value for name in GRID_FLAGS
            if name in flag_values and isinstance(flag_values[name].value, tuple)}


def define_common_flags():
    f = flags
    f.DEFINE_string("bert_config_file", None, "The bert_config.json of the model.")
    f.DEFINE_string("output_dir", None, "Checkpoints, summaries and results go here.")
    f.DEFINE_string("init_checkpoint", None,
                    "Initial weights: a Google TF1 checkpoint prefix, a Hugging Face "
                    "model.safetensors, or a checkpoint of this project. Omit to start from "
                    "random weights.")
    f.DEFINE_integer("max_seq_length", 128, "Maximum sequence length (WordPiece tokens).")
    f.DEFINE_bool("do_train", False, "Train.")
    f.DEFINE_bool("do_eval", False, "Evaluate.")
    _define_grid_flag(flags.IntegerParser(), "train_batch_size", 32,
                      "Global training batch size (all replicas).")
    f.DEFINE_integer("eval_batch_size", 8, "Global evaluation batch size.")
    _define_grid_flag(flags.FloatParser(), "learning_rate", 5e-5, "Peak learning rate.")
    f.DEFINE_integer("save_checkpoints_steps", 1000, "Save a checkpoint every N steps.")
    f.DEFINE_integer("iterations_per_loop", 1000,
                     "Steps run on the device per call from the host (also "
                     "--steps_per_loop).")
    f.DEFINE_alias("steps_per_loop", "iterations_per_loop")
    f.DEFINE_integer("log_steps", 100, "Log and write summaries every N steps (more often "
                     "for a run of fewer than 4 x N steps, or when N steps take over a "
                     "minute).")
    f.DEFINE_integer("keep_checkpoint_max", 5, "Training checkpoints kept.")
    f.DEFINE_bool("overwrite_output_dir", False, "Start afresh in an --output_dir that "
                  "holds another run: the old run is moved aside "
                  "(<output_dir>.replaced-<time>), never deleted.")
    f.DEFINE_enum("distribution_strategy", "one_device", list(distribution.STRATEGIES),
                  "How to spread training over devices and machines (multi_worker_mirrored "
                  "reads TF_CONFIG).")
    f.DEFINE_integer("num_cpu_devices", 0,
                     "Split the CPU into N logical devices (try 'mirrored' without GPUs).")
    f.DEFINE_enum("dtype", "float32", list(distribution.DTYPES),
                  "Compute dtype: float32, or mixed precision with bfloat16 or float16 "
                  "(float16 uses dynamic loss scaling). Weights stay float32.")
    f.DEFINE_enum("use_xla", "auto", ["auto", "true", "false"],
                  "XLA-compile the forward and backward pass (auto: on GPU and TPU).")
    f.DEFINE_integer("gradient_accumulation_steps", 1,
                     "Split each replica's batch into N micro-batches and sum their "
                     "gradients: the same update as the whole batch, with N times less "
                     "activation memory.")
    f.DEFINE_enum("optimizer", "adamw_original", list(OPTIMIZER_NAMES),
                  "adamw_original: the original's Adam with weight decay and no bias "
                  "correction; adamw: Keras AdamW (bias-corrected); lamb: LAMB for large "
                  "batches.")
    f.DEFINE_float("weight_decay_rate", 0.01, "Decoupled weight decay (not on LayerNorm "
                   "and bias variables).")
    f.DEFINE_float("clip_norm", 1.0, "Global-norm gradient clipping; 0 for none.")
    _define_grid_flag(flags.IntegerParser(), "seed", 12345,
                      "Seed for weight initialisation, dropout and shuffling.")
    # The original's TPU flags.
    f.DEFINE_bool("use_tpu", False, "Use a TPU (same as --distribution_strategy=tpu).")
    f.DEFINE_string("tpu_name", None, "The Cloud TPU to use.")
    f.DEFINE_string("tpu_zone", None, "GCE zone of the Cloud TPU.")
    f.DEFINE_string("gcp_project", None, "Project of the Cloud TPU.")
    f.DEFINE_string("master", None, "Accepted for compatibility (use --tpu_name).")
    f.DEFINE_integer("num_tpu_cores", 8, "Accepted for compatibility (the TPU system "
                     "decides).")


def define_fine_tuning_flags(do_lower_case=True, predict_batch_size=8):
    """The flags of `training.config.FineTuningConfig` (and `--export_dir`), with the
    defaults of the script that defines them."""
    f = flags
    f.DEFINE_string("vocab_file", None, "The vocabulary the model was trained with.")
    f.DEFINE_bool("do_lower_case", do_lower_case,
                  "True for uncased models, False for cased ones.")
    f.DEFINE_bool("do_predict", False, "Predict the test / predict file.")
    f.DEFINE_integer("predict_batch_size", predict_batch_size, "Prediction batch size.")
    _define_grid_flag(flags.FloatParser(), "num_train_epochs", 3.0, "Training epochs.")
    f.DEFINE_float("warmup_proportion", 0.1, "Share of training steps for linear "
                   "warm-up.")
    f.DEFINE_string("export_dir", None, "Write a SavedModel here after training.")
    f.DEFINE_enum("predict_from", "best", ["best", "last"], "With --do_eval, predict and "
                  "export with the best checkpoint (by the task's dev metric), or with "
                  "the last weights.")


def _required(field):
    return (field.default is dataclasses.MISSING and
            field.default_factory is dataclasses.MISSING)


def require_flags(flag_values, names):
    """Raises `app.UsageError` naming every flag of `names` that has no value, all at once
    (not one per run)."""
    missing = [name for name in dict.fromkeys(names) if flag_values[name].value in (None, "")]
    if len(missing) == 1:
        raise app.UsageError(f"--{missing[0]} is required.")
    if missing:
        listed = ", ".join(f"--{name}" for name in missing[:-1]) + f" and --{missing[-1]}"
        raise app.UsageError(f"{listed} are required.")


def configs_from_flags(flag_values, *config_classes):
    """`config_from_flags` of each class, after checking that no required field of any of
    them lacks its flag (every missing flag named at once). A grid flag with several
    values (`grid_axes`) gets its first one here. Returns a tuple."""
    require_flags(flag_values, [field.name for config_class in config_classes
                                for field in dataclasses.fields(config_class)
                                if _required(field) and field.name in flag_values])
    firsts = {name: values[0] for name, values in grid_axes(flag_values).items()}
    return tuple(config_from_flags(c, flag_values, **{
        name: value for name, value in firsts.items()
        if name in {f.name for f in dataclasses.fields(c)}}) for c in config_classes)


def config_from_flags(config_class, flag_values, **overrides):
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
