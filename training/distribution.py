"""Distribution strategies, mixed precision and XLA, from a `training.config.RuntimeConfig`.

Pipeline position: the runner (`training.runner`) calls `set_up` before any other
TensorFlow op and before building its model; the loop asks `is_chief` who writes.
"""

import contextlib
import json
import os

import keras
import tensorflow as tf
from absl import logging

from training import config

STRATEGIES = config.STRATEGIES
# The Keras dtype policy of each --dtype (`training.config.DTYPES`).
DTYPES = {name: name if name == "float32" else f"mixed_{name}" for name in config.DTYPES}


def use_cpu_devices(count):
    """Splits the host CPU into `count` logical devices (to try `mirrored` without GPUs).
    Must run before TensorFlow initialises its devices."""
    if count and count > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)])


def get_strategy(name, tpu_name=None, tpu_zone=None, gcp_project=None):
    """A `tf.distribute.Strategy` for `--distribution_strategy`.

    one_device: the first GPU, else the CPU. mirrored: every local GPU (or every logical
    CPU device when there is no GPU). multi_worker_mirrored: the workers of `TF_CONFIG`.
    tpu: the TPU named by `tpu_name` (or found in the environment).
    """
    if name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    if name == "mirrored":
        gpus = tf.config.list_logical_devices("GPU")
        devices = [d.name for d in (gpus or tf.config.list_logical_devices("CPU"))]
        return tf.distribute.MirroredStrategy(devices)
    if name == "multi_worker_mirrored":
        if "TF_CONFIG" not in os.environ:
            logging.warning("multi_worker_mirrored without TF_CONFIG: one worker.")
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu=tpu_name or "", zone=tpu_zone, project=gcp_project)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    raise ValueError(f"--distribution_strategy={name!r} is not one of {list(STRATEGIES)}.")


def set_precision(dtype):
    """Sets Keras's global dtype policy for `--dtype`; returns True when the optimizer
    needs dynamic loss scaling (float16)."""
    if dtype not in DTYPES:
        raise ValueError(f"--dtype={dtype!r} is not one of {list(DTYPES)}.")
    keras.mixed_precision.set_dtype_policy(DTYPES[dtype])
    return dtype == "float16"


@contextlib.contextmanager
def kept_precision():
    """Restores Keras's global dtype policy on exit: a run in a Python session (`--dtype`
    sets the policy) leaves the models built after it as it found them."""
    before = keras.mixed_precision.dtype_policy()
    try:
        yield
    finally:
        keras.mixed_precision.set_dtype_policy(before)


def set_up(runtime):
    """Logical CPU devices, the strategy, the global seed and the precision policy of
    `runtime` (a `training.config.RuntimeConfig`). Call it before anything runs a
    TensorFlow op: devices and collective ops (multi_worker_mirrored) can only be
    configured at program start.

    Returns:
        (strategy, loss_scale): loss_scale is True when the optimizer needs dynamic loss
        scaling (float16).
    """
    use_cpu_devices(runtime.num_cpu_devices)
    name = "tpu" if runtime.use_tpu else runtime.distribution_strategy
    strategy = get_strategy(name, runtime.tpu_name, runtime.tpu_zone, runtime.gcp_project)
    keras.utils.set_random_seed(runtime.seed)
    loss_scale = set_precision(runtime.dtype)
    logging.info("Strategy %s with %d replicas; dtype %s.", type(strategy).__name__,
                 strategy.num_replicas_in_sync, runtime.dtype)
    return strategy, loss_scale


def use_xla(setting):
    """`--use_xla`: "true", "false", or "auto" (on when there is a GPU; TPUs compile
    anyway)."""
    if setting != "auto":
        return setting == "true"
    return bool(tf.config.list_logical_devices("GPU"))


def _task():
    config = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")
    return config.get("task", {}), config.get("cluster", {})


def is_chief(strategy):
    """True on the worker that writes checkpoints, summaries and results."""
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return True
    task, cluster = _task()
    kind, index = task.get("type"), task.get("index", 0)
    if kind == "chief":
        return True
    return (kind == "worker" and index == 0 and "chief" not in cluster) or not task


def worker_index(strategy):
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return 0
    task, cluster = _task()
    if not task:
        return 0
    offset = len(cluster.get("chief", [])) if task.get("type") == "worker" else 0
    return offset + int(task.get("index", 0))
