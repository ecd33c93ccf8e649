"""Command-line flags every training entry point shares (absl), with the original's names.

Pipeline position: `run_pretraining.py`, `run_classifier.py`, `run_squad.py` and
`run_ner.py` call `define_common_flags()` and then read `FLAGS`; `strategy_from_flags` and
`optimizer_from_flags` turn them into the objects of `training`.
"""

from absl import flags

from training import distribution
from training.optimizers import OPTIMIZER_NAMES, create_optimizer


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
    f.DEFINE_integer("train_batch_size", 32, "Global training batch size (all replicas).")
    f.DEFINE_integer("eval_batch_size", 8, "Global evaluation batch size.")
    f.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
    f.DEFINE_integer("save_checkpoints_steps", 1000, "Save a checkpoint every N steps.")
    f.DEFINE_integer("iterations_per_loop", 1000,
                     "Steps run on the device per call from the host (also "
                     "--steps_per_loop).")
    f.DEFINE_alias("steps_per_loop", "iterations_per_loop")
    f.DEFINE_integer("log_steps", 100, "Log and write summaries every N steps.")
    f.DEFINE_integer("keep_checkpoint_max", 5, "Training checkpoints kept.")
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
    f.DEFINE_integer("seed", 12345, "Seed for weight initialisation, dropout and shuffling.")
    # The original's TPU flags.
    f.DEFINE_bool("use_tpu", False, "Use a TPU (same as --distribution_strategy=tpu).")
    f.DEFINE_string("tpu_name", None, "The Cloud TPU to use.")
    f.DEFINE_string("tpu_zone", None, "GCE zone of the Cloud TPU.")
    f.DEFINE_string("gcp_project", None, "Project of the Cloud TPU.")
    f.DEFINE_string("master", None, "Accepted for compatibility (use --tpu_name).")
    f.DEFINE_integer("num_tpu_cores", 8, "Accepted for compatibility (the TPU system "
                     "decides).")


def strategy_from_flags(FLAGS):
    """Precision policy and strategy; returns (strategy, loss_scale).

    Call it before anything runs a TensorFlow op: devices and collective ops
    (multi_worker_mirrored) can only be configured at program start."""
    import keras

    distribution.use_cpu_devices(FLAGS.num_cpu_devices)
    name = "tpu" if FLAGS.use_tpu else FLAGS.distribution_strategy
    strategy = distribution.get_strategy(name, FLAGS.tpu_name, FLAGS.tpu_zone,
                                         FLAGS.gcp_project)
    keras.utils.set_random_seed(FLAGS.seed)
    loss_scale = distribution.set_precision(FLAGS.dtype)
    return strategy, loss_scale


def use_xla(FLAGS):
    if FLAGS.use_xla != "auto":
        return FLAGS.use_xla == "true"
    import tensorflow as tf

    return bool(tf.config.list_logical_devices("GPU"))


def optimizer_from_flags(FLAGS, model, num_train_steps, num_warmup_steps, loss_scale):
    return create_optimizer(model, FLAGS.learning_rate, num_train_steps, num_warmup_steps,
                            optimizer=FLAGS.optimizer,
                            weight_decay_rate=FLAGS.weight_decay_rate, loss_scale=loss_scale)


def check_batch_size(FLAGS, strategy, batch_size, flag_name):
    """The global batch must split evenly over replicas and accumulation steps."""
    parts = strategy.num_replicas_in_sync * max(1, FLAGS.gradient_accumulation_steps)
    if batch_size % parts:
        raise ValueError(
            f"--{flag_name}={batch_size} does not split into {strategy.num_replicas_in_sync} "
            f"replicas x {FLAGS.gradient_accumulation_steps} accumulation steps; use a "
            f"multiple of {parts}.")
