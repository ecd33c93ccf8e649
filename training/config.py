"""The settings of a run, as frozen dataclasses: where it runs and how it trains.

Pipeline position: an entry point turns its flags into these once
(`cli.flags.config_from_flags`); a Python user builds them directly. The runner
(`training.runner.run`) takes them with a task (`tasks.*`, whose own settings are a
`TaskConfig` subclass). Field names are the original release's flag names, so a field
and its flag are the same thing. Each field is declared once, with
`common.settings.setting`: its help is the flag's (`cli.flags.define_settings`), and the
fields marked `recorded` are kept beside the checkpoints (`training.run_flags`).

    runtime = RuntimeConfig(distribution_strategy="mirrored", dtype="bfloat16")
    trainer = TrainerConfig(output_dir="mrpc_out", train_batch_size=32,
                            learning_rate=2e-5)
"""

import dataclasses
import math
from typing import Optional

from common.settings import setting
from common.shared_settings import ModelFiles, ModelVocabulary, SequenceLength

# The choices of the enum settings (`training.distribution`, `training.optimizers` check
# them; named here so that this module stays light to import).
STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")
DTYPES = ("float32", "bfloat16", "float16")
OPTIMIZER_NAMES = ("adamw_original", "adamw", "lamb")
HEADS = ("linear", "bilstm")  # modeling.heads.HEADS
# modeling.feature_extraction.FEATURE_COMBINATIONS
FEATURE_COMBINATIONS = ("embeddings", "second_to_last", "last", "sum_last_four",
                        "concat_last_four", "sum_all")


def check(config, rules):
    """Raises `ValueError` naming the flag for the first field of `config` that breaks its
    rule: `rules` maps a field name to (test, what it must be)."""
    for name, (test, must_be) in rules.items():
        value = getattr(config, name)
        if value is not None and not test(value):
            raise ValueError(f"--{name}={value!r}: must be {must_be}.")


def positive(value):
    return value > 0 and value == value and value != float("inf")


def at_least(low):
    return lambda value: value >= low


def fraction(value):
    return 0 <= value <= 1


def check_learning_rate(value, flag="--learning_rate"):
    """Refuses a rate above `LARGEST_LEARNING_RATE`: no Adam-family run of BERT trains
    there, and the usual cause is a lost minus sign (2e5 for 2e-5), which diverges after
    minutes of set-up. The message suggests the rate with the exponent's sign flipped."""
    if value is None or value <= LARGEST_LEARNING_RATE:
        return
    exponent = math.floor(math.log10(value)) if math.isfinite(value) else 0
    mantissa = value / 10 ** exponent if exponent else value
    hint = f"; did you mean {mantissa:g}e-{exponent:02d}?" if exponent >= 1 and \
        abs(mantissa - round(mantissa, 2)) < 1e-9 else "."
    raise ValueError(f"{flag}={value!r}: must be at most {LARGEST_LEARNING_RATE} (BERT "
                     f"fine-tunes at 1e-5 to 1e-4 and pre-trains at 1e-4 to 1e-2){hint}")


# The sane ranges of the settings that decide a run's length and step (docs/errors.md):
# beyond them a value is a typo, refused before TensorFlow loads.
LARGEST_LEARNING_RATE = 0.1
LARGEST_BATCH = 65536  # LAMB's largest BERT batch (You et al., 2019)
LARGEST_EPOCHS = 1000
LARGEST_STEPS = 100_000_000

POSITIVE = (positive, "a positive number")
WHOLE_POSITIVE = (at_least(1), "at least 1")
BATCH = (lambda value: 1 <= value <= LARGEST_BATCH, f"between 1 and {LARGEST_BATCH:,}")
STEPS = (lambda value: 1 <= value <= LARGEST_STEPS, f"between 1 and {LARGEST_STEPS:,}")
NON_NEGATIVE = (at_least(0), "0 or more")
FRACTION = (fraction, "between 0 and 1")
BETA = (lambda value: 0 <= value < 1, "at least 0 and below 1")


@dataclasses.dataclass(frozen=True, kw_only=True)
class RuntimeConfig:
    """Where and in what precision a run computes."""
    distribution_strategy: str = setting(
        "one_device", choices=STRATEGIES, help="How to spread training over devices and "
        "machines (multi_worker_mirrored reads TF_CONFIG).")
    num_cpu_devices: int = setting(
        0, help="Split the CPU into N logical devices (try 'mirrored' without GPUs).")
    dtype: str = setting(
        "float32", choices=DTYPES, recorded=True, help="Compute dtype: float32, or mixed "
        "precision with bfloat16 or float16 (float16 uses dynamic loss scaling). Weights "
        "stay float32.")
    use_xla: str = setting(
        "auto", choices=("auto", "true", "false"), help="XLA-compile the forward and "
        "backward pass (auto: on GPU and TPU).")
    seed: int = setting(
        12345, recorded=True, grid=True,
        help="Seed for weight initialisation, dropout and shuffling.")
    use_tpu: bool = setting(False, help="Use a TPU (same as --distribution_strategy=tpu).")
    tpu_name: Optional[str] = setting(None, help="The Cloud TPU to use.")
    tpu_zone: Optional[str] = setting(None, help="GCE zone of the Cloud TPU.")
    gcp_project: Optional[str] = setting(None, help="Project of the Cloud TPU.")

    def __post_init__(self):
        check(self, {"num_cpu_devices": NON_NEGATIVE})


PREDICT_FROM = ("best", "last")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainerConfig:
    """How a task is trained, and where its outputs go."""
    output_dir: str = setting(help="Checkpoints, summaries and results go here.")
    export_dir: Optional[str] = setting(
        None, help="Write the task's SavedModel here after training.")
    tflite_quantize: bool = setting(
        False, help="With --export_dir: also write model_int8.tflite (int8 weights) and, "
        "with --do_eval, how often its answers equal model.tflite's on the dev set "
        "(int8_check.json).")
    train_batch_size: int = setting(
        32, recorded=True, grid=True, help="Global training batch size (all replicas).")
    learning_rate: float = setting(5e-5, recorded=True, grid=True,
                                   help="Peak learning rate.")
    optimizer: str = setting(
        "adamw_original", choices=OPTIMIZER_NAMES, recorded=True,
        help="adamw_original: the original's Adam with weight decay and no bias "
        "correction; adamw: Keras AdamW (bias-corrected); lamb: LAMB for large batches.")
    weight_decay_rate: float = setting(
        0.01, recorded=True, help="Decoupled weight decay (not on LayerNorm and bias "
        "variables).")
    clip_norm: float = setting(1.0, recorded=True,
                               help="Global-norm gradient clipping; 0 for none.")
    adam_beta2: float = setting(
        0.999, recorded=True, help="Decay of the optimizer's second-moment average (the "
        "original's 0.999; short pre-training runs use 0.98, as Cramming and RoBERTa).")
    lr_stable_share: float = setting(
        0.0, recorded=True, help="Share of the training steps (warm-up included) before "
        "the learning rate starts its linear decay to 0, held at its peak after warm-up: "
        "0, the original's, decays from step 0.")
    gradient_accumulation_steps: int = setting(
        1, recorded=True, help="Split each replica's batch into N micro-batches and sum "
        "their gradients: the same update as the whole batch, with N times less "
        "activation memory.")
    gradient_checkpointing: bool = setting(
        False, help="Recompute each Transformer layer's activations in the backward pass "
        "instead of keeping them: much less memory (a larger batch or longer sequences "
        "fit), about a third more compute a step; the same loss and gradients "
        "(docs/memory.md).")
    save_checkpoints_steps: int = setting(1000, help="Save a checkpoint every N steps.")
    iterations_per_loop: int = setting(
        1000, help="Steps run on the device per call from the host (also "
        "--steps_per_loop).")
    log_steps: int = setting(
        100, help="Log and write summaries every N steps (more often for a run of fewer "
        "than 4 x N steps, or when N steps take over a minute).")
    keep_checkpoint_max: int = setting(5, help="Training checkpoints kept.")
    predict_from: str = setting(
        "best", choices=PREDICT_FROM, help="With --do_eval, predict and export with the "
        "best checkpoint (by the task's dev metric), or with the last weights.")
    overwrite_output_dir: bool = setting(
        False, help="Start afresh in an --output_dir that holds another run: the old run "
        "is moved aside (<output_dir>.replaced-<time>), never deleted.")
    early_stopping_patience: Optional[int] = setting(
        None, help="With --do_train and --do_eval: stop training once the dev metric that "
        "selects best/ has not improved for N evaluations in a row (one at every "
        "--save_checkpoints_steps); best/ keeps the best checkpoint, and a rerun of a "
        "stopped run does not train on (a larger N continues it).")

    def __post_init__(self):
        if self.predict_from not in PREDICT_FROM:
            raise ValueError(f"--predict_from={self.predict_from!r}: must be one of "
                             f"{', '.join(PREDICT_FROM)}.")
        check(self, {"train_batch_size": BATCH, "learning_rate": POSITIVE,
                     "weight_decay_rate": NON_NEGATIVE, "clip_norm": NON_NEGATIVE,
                     "adam_beta2": BETA, "lr_stable_share": BETA,
                     "gradient_accumulation_steps": WHOLE_POSITIVE,
                     "save_checkpoints_steps": WHOLE_POSITIVE,
                     "iterations_per_loop": WHOLE_POSITIVE, "log_steps": NON_NEGATIVE,
                     "keep_checkpoint_max": WHOLE_POSITIVE,
                     "early_stopping_patience": WHOLE_POSITIVE})
        check_learning_rate(self.learning_rate)

    def check_stages(self, do_train, do_eval):
        """Raises ValueError for a setting the run's stages leave nothing to act on: early
        stopping counts dev evaluations made while training."""
        if self.early_stopping_patience is not None and not (do_train and do_eval):
            raise ValueError(f"--early_stopping_patience={self.early_stopping_patience} "
                             f"counts dev evaluations made while training: give --do_train "
                             f"and --do_eval.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskConfig(SequenceLength, ModelFiles):
    """What every task's settings hold: the model (`bert_config_file`, `init_checkpoint`)
    and its input length (`max_seq_length`), declared in `common.shared_settings`. Each
    task subclasses it with its data and its own fields (`tasks.*.task`). When
    `output_dir` already holds a checkpoint of this run, the run resumes from it, whatever
    `init_checkpoint` says; of another run (other recorded settings), it is an error."""
    eval_batch_size: int = setting(
        8, help="Global evaluation batch size. Fine-tuning evaluates sequences sorted by "
        "length, each batch holding as many as fit in this many full-length sequences' "
        "positions (the same results, less padding; on a CPU at least 4,096 positions).")

    def __post_init__(self):
        check(self, {"max_seq_length": (at_least(3), "at least 3 ([CLS] x [SEP])"),
                     "eval_batch_size": BATCH})


@dataclasses.dataclass(frozen=True, kw_only=True)
class FineTuningConfig(ModelVocabulary, TaskConfig):
    """What the fine-tuning tasks add: the vocabulary and casing of the model
    (`common.shared_settings.ModelVocabulary`), a length in epochs and a warm-up share (the
    original's), and the prediction batch."""
    num_train_epochs: float = setting(3.0, recorded=True, grid=True,
                                      help="Training epochs.")
    warmup_proportion: float = setting(
        0.1, recorded=True, help="Share of training steps for linear warm-up.")
    predict_batch_size: int = setting(
        8, help="Prediction batch size, counted as --eval_batch_size is (sequences at "
        "full length).")

    def __post_init__(self):
        super().__post_init__()
        check(self, {"num_train_epochs": (lambda v: positive(v) and v <= LARGEST_EPOCHS,
                                          f"a positive number, at most {LARGEST_EPOCHS}"),
                     "warmup_proportion": FRACTION, "predict_batch_size": BATCH})


@dataclasses.dataclass(frozen=True, kw_only=True)
class HeadConfig:
    """The output head of the fine-tuning tasks that offer the paper's "+ BiLSTM" (Table
    5): mixed into their configs and export options."""
    head: str = setting(
        "linear", choices=HEADS, recorded=True,
        help="linear: the output layer on the encoder (the original); bilstm: a randomly "
        "initialised BiLSTM between the encoder's sequence output and the output layer "
        "(the paper's + BiLSTM; classification reads its final states).")
    bilstm_layers: Optional[int] = setting(
        None, recorded=True, help="The BiLSTM's stacked bidirectional layers (default 1 "
        "for --head=bilstm, 2 for --feature_based).")
    bilstm_units: Optional[int] = setting(
        None, recorded=True, help="The BiLSTM's units per direction (default half the "
        "hidden size for --head=bilstm, 768 for --feature_based).")
    feature_based: Optional[str] = setting(
        None, choices=FEATURE_COMBINATIONS, recorded=True,
        help="The feature-based approach (the paper's Table 7): the encoder frozen, and "
        "this combination of its layers read by a BiLSTM (2 layers of 768 units by "
        "default) before the output layer: embeddings, second_to_last, last, "
        "sum_last_four, concat_last_four, sum_all (the blocks, not the embeddings).")

    def head_kwargs(self):
        """The model constructor's head arguments."""
        return {"head": self.head, "bilstm_layers": self.bilstm_layers,
                "bilstm_units": self.bilstm_units, "feature_based": self.feature_based}

