"""The settings of a run, as frozen dataclasses: where it runs and how it trains.

Pipeline position: an entry point turns its flags into these once
(`cli.flags.config_from_flags`); a Python user builds them directly. The runner
(`training.runner.run`) takes them with a task (`tasks.*`, whose own settings are a
`TaskConfig` subclass). Field names are the original release's flag names, so a field
and its flag are the same thing, and the record kept beside the checkpoints
(`training.run_flags`) reads them by name.

    runtime = RuntimeConfig(distribution_strategy="mirrored", dtype="bfloat16")
    trainer = TrainerConfig(output_dir="mrpc_out", train_batch_size=32,
                            learning_rate=2e-5)
"""

import dataclasses
from typing import Optional


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


POSITIVE = (positive, "a positive number")
WHOLE_POSITIVE = (at_least(1), "at least 1")
NON_NEGATIVE = (at_least(0), "0 or more")
FRACTION = (fraction, "between 0 and 1")


@dataclasses.dataclass(frozen=True, kw_only=True)
class RuntimeConfig:
    """Where and in what precision a run computes.

    Attributes:
        distribution_strategy: str. one_device, mirrored, multi_worker_mirrored (reads
            TF_CONFIG) or tpu. Defaults to "one_device".
        num_cpu_devices: int. Split the CPU into this many logical devices (to try
            `mirrored` without GPUs). Defaults to 0 (not split).
        dtype: str. float32, or mixed precision with bfloat16 or float16 (dynamic loss
            scaling). Weights stay float32. Defaults to "float32".
        use_xla: str. "auto" (on GPU and TPU), "true" or "false". Defaults to "auto".
        seed: int. Weight initialisation, dropout and input shuffling. Defaults to 12345.
        use_tpu: bool. Same as distribution_strategy="tpu" (the original's flag).
        tpu_name, tpu_zone, gcp_project: str. The Cloud TPU to use.
    """
    distribution_strategy: str = "one_device"
    num_cpu_devices: int = 0
    dtype: str = "float32"
    use_xla: str = "auto"
    seed: int = 12345
    use_tpu: bool = False
    tpu_name: Optional[str] = None
    tpu_zone: Optional[str] = None
    gcp_project: Optional[str] = None

    def __post_init__(self):
        check(self, {"num_cpu_devices": NON_NEGATIVE})


PREDICT_FROM = ("best", "last")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainerConfig:
    """How a task is trained, and where its outputs go.

    Attributes:
        output_dir: str. Checkpoints, summaries, results and caches. Required.
        export_dir: str or None. Write the task's serving export here at the end.
        train_batch_size: int. Global batch (all replicas). Defaults to 32.
        learning_rate: float. Peak learning rate. Defaults to 5e-5.
        optimizer: str. adamw_original (the original's Adam, no bias correction), adamw
            or lamb. Defaults to "adamw_original".
        weight_decay_rate: float. Decoupled weight decay (not on LayerNorm and bias
            variables). Defaults to 0.01.
        clip_norm: float. Global-norm clipping of the whole batch's gradient; 0 for none.
            Defaults to 1.0.
        gradient_accumulation_steps: int. Micro-batches per replica batch. Defaults to 1.
        save_checkpoints_steps: int. Defaults to 1000.
        iterations_per_loop: int. Steps run on the device per call from the host.
            Defaults to 1000.
        log_steps: int. Log and summary interval (shortened for short runs and slow
            steps: `training.loop.log_interval`). Defaults to 100.
        keep_checkpoint_max: int. Training checkpoints kept. Defaults to 5.
        predict_from: str. "best": when the run keeps a best checkpoint (it evaluates),
            prediction and the export use it; "last": the final weights. Defaults to
            "best".
        overwrite_output_dir: bool. Start afresh in an `output_dir` that holds another
            run: the old run is moved aside (`<output_dir>.replaced-<time>`), never
            deleted. Defaults to False.
    """
    output_dir: str
    export_dir: Optional[str] = None
    train_batch_size: int = 32
    learning_rate: float = 5e-5
    optimizer: str = "adamw_original"
    weight_decay_rate: float = 0.01
    clip_norm: float = 1.0
    gradient_accumulation_steps: int = 1
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    log_steps: int = 100
    keep_checkpoint_max: int = 5
    predict_from: str = "best"
    overwrite_output_dir: bool = False

    def __post_init__(self):
        if self.predict_from not in PREDICT_FROM:
            raise ValueError(f"--predict_from={self.predict_from!r}: must be one of "
                             f"{', '.join(PREDICT_FROM)}.")
        check(self, {"train_batch_size": WHOLE_POSITIVE, "learning_rate": POSITIVE,
                     "weight_decay_rate": NON_NEGATIVE, "clip_norm": NON_NEGATIVE,
                     "gradient_accumulation_steps": WHOLE_POSITIVE,
                     "save_checkpoints_steps": WHOLE_POSITIVE,
                     "iterations_per_loop": WHOLE_POSITIVE, "log_steps": NON_NEGATIVE,
                     "keep_checkpoint_max": WHOLE_POSITIVE})


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskConfig:
    """What every task's settings hold: the model and its input length. Each task
    subclasses it with its data and its own fields (`tasks.*.task`).

    Attributes:
        bert_config_file: str. The model's bert_config.json (or a Hugging Face
            config.json). Required.
        init_checkpoint: str or None. Initial weights (Google TF1 checkpoint, Hugging Face
            model.safetensors, or this project's checkpoint); None for random weights.
            When `output_dir` already holds a checkpoint of this run, the run resumes
            from it; of another run (other recorded flags), it is an error.
        max_seq_length: int. Longest input in WordPiece tokens, specials included.
            Defaults to 128.
        eval_batch_size: int. Defaults to 8.
    """
    bert_config_file: str
    init_checkpoint: Optional[str] = None
    max_seq_length: int = 128
    eval_batch_size: int = 8

    def __post_init__(self):
        check(self, {"max_seq_length": (at_least(3), "at least 3 ([CLS] x [SEP])"),
                     "eval_batch_size": WHOLE_POSITIVE})


@dataclasses.dataclass(frozen=True, kw_only=True)
class FineTuningConfig(TaskConfig):
    """What the fine-tuning tasks add: the vocabulary and casing of the model, a length in
    epochs and a warm-up share (the original's), and the prediction batch.

    Attributes:
        vocab_file: str. The vocabulary the model was trained with. Required.
        do_lower_case: bool. True for uncased models. Defaults to True.
        num_train_epochs: float. Defaults to 3.0.
        warmup_proportion: float. Share of the training steps for linear warm-up.
            Defaults to 0.1.
        predict_batch_size: int. Defaults to 8.
    """
    vocab_file: str
    do_lower_case: bool = True
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    predict_batch_size: int = 8

    def __post_init__(self):
        super().__post_init__()
        check(self, {"num_train_epochs": POSITIVE, "warmup_proportion": FRACTION,
                     "predict_batch_size": WHOLE_POSITIVE})

