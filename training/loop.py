"""The training loop shared by every entry point, and evaluation.

Pipeline position: the runner (`training.runner`) builds a model, a task (`tasks.*`) and an
optimizer (`training.optimizers`), then calls `Trainer.train` here; the tasks evaluate and
predict with `evaluate` and `predict`.

One training step, per replica, inside a `tf.function` that runs up to `steps_per_loop`
steps without returning to Python:
  1. the task's loss normalisers (e.g. the number of masked-LM weights) are summed over
     replicas, so each replica's loss is its share of the loss of the *global* batch;
  2. gradients, over `gradient_accumulation_steps` micro-batches of the replica's batch
     (summed: 4 x 8 gives the gradient of the batch of 32);
  3. summed over replicas (one all-reduce), clipped by global norm (`clip_norm`, 1.0 as
     the original; on one device or many, the norm of the whole batch's gradient), and
     applied by the optimizer (for float16, unscaled and skipped on overflow by the
     dynamic loss scale).
A non-finite loss ends the loop at once; `train` then raises `TrainingDivergedError` naming
the step, without saving, so the last checkpoint is the last good one.

Between loops, on the host (every `log_steps`, or more often for a short run or slow
steps: `log_interval`): a log line (loss, learning rate, gradient norm, sequences/s,
tokens/s, time left), the same as a JSON line in `model_dir/metrics.jsonl`
(`training.metrics_log`), TensorBoard summaries in `model_dir/train`, and a checkpoint
every `save_checkpoints_steps` (see `training.checkpointing`). Rerunning the same command
restores the newest checkpoint, data position included, and stops at the same step.
A run given a `training.time_budget.TimeBudget` re-counts its steps to the budget's
deadline at the ends of its loops during warm-up, and resizes the schedule to them.
A hook that returns `STOP` (early stopping) ends training after its loop.
"""

import contextlib
import math
import os
import shutil
import signal
import tempfile
import time
import weakref

import keras
import numpy as np
import tensorflow as tf
from absl import logging
from tensorflow.core.framework import summary_pb2
from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
from tensorflow.python.eager import context as eager_context

from common.progress import format_duration
from modeling.inputs import INPUT_NAMES
from modeling.padding import PAD_MULTIPLE
from serving.length_groups import row_lengths
from text.packing import padded_length
from training import checkpointing, metrics_log, preemption, run_flags
from training.distribution import is_chief, worker_index
from training.optimizers import schedule_of
from training.task import static_shapes_needed


def write_scalar(name, value):
    """`tf.summary.scalar` without the `tensorboard` package (TensorFlow 2.21 does not
    install it; it is only needed to *view* the logs): a scalar summary tagged for
    TensorBoard's scalars plugin, written to the default writer."""
    metadata = summary_pb2.SummaryMetadata()
    metadata.plugin_data.plugin_name = "scalars"
    tf.summary.write(name, tf.constant(float(value), tf.float32), metadata=metadata)


# Progress reaches the log at least this often, and at least this many times a run.
MAX_SECONDS_BETWEEN_LOGS = 60
MIN_LOGS_PER_RUN = 4


def without_autotune_thread(dataset):
    """`dataset` without tf.data's autotuning thread. That thread (one per iterator) is
    joined when the iterator is deleted, and it wakes on its own schedule, up to a minute
    apart in a long run: deleting the training iterator once training ended kept
    `run_ner.py` waiting 8-50 s in some runs (its stack: `RootDataset::Iterator`'s
    destructor waiting on the thread). These pipelines read batches from memory or a
    local file, far faster than a step consumes them: a parallel map without
    autotuning runs on every core, and prefetching still sizes its own buffer."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


# On CPU-only hosts the training step's graph is optimised by one iteration of Grappler's
# passes instead of TensorFlow's default two: the second cost about half a second at the
# first step and made no step faster. Two passes that change nothing on a CPU are off:
# the layout optimiser (it transposes convolutions' tensors for GPUs) and the memory
# optimiser (swapping to host memory, recomputation it is asked for); they left the
# MiniLM step's graph as they found it, node for node, and took 0.28 s of its 1.3 s of
# optimisation. The other passes stay: fewer made the steps slower (without Grappler
# 0.83-0.88x, with its remapper alone 0.83x, without constant folding 0.91x;
# research/RESULTS-archive.md, "Grappler's passes for the training step").
TRAIN_WITH_ONE_GRAPPLER_ITERATION_ON_CPU = True
# Evaluation and prediction (`predict`) the same: the MiniLM classifier's first pass over
# SST-2's dev set 0.35-0.4 s shorter, the later passes as fast (alternated in one process).
PREDICT_WITH_ONE_GRAPPLER_ITERATION_ON_CPU = True


def accelerators_present():
    """Whether this process sees a GPU or a TPU."""
    return bool(tf.config.list_logical_devices("GPU") or
                tf.config.list_logical_devices("TPU"))


def call_options_with_one_grappler_iteration():
    """This thread's function call options (what `tf.function` calls, and the calls traced
    in them, run with), Grappler's passes run once instead of twice, without the layout
    and memory optimisers (see TRAIN_WITH_ONE_GRAPPLER_ITERATION_ON_CPU)."""
    current = eager_context.context().function_call_options
    config = config_pb2.ConfigProto.FromString(current.config_proto_serialized)
    rewrites = config.graph_options.rewrite_options
    rewrites.meta_optimizer_iterations = rewriter_config_pb2.RewriterConfig.ONE
    rewrites.layout_optimizer = rewriter_config_pb2.RewriterConfig.OFF
    rewrites.memory_optimization = rewriter_config_pb2.RewriterConfig.NO_MEM_OPT
    return eager_context.FunctionCallOptions(executor_type=current.executor_type,
                                             config_proto=config)


def cpu_call_options(enabled):
    """`call_options_with_one_grappler_iteration()` when `enabled` on a host without a GPU
    or TPU; else None (the thread's own options)."""
    if enabled and not accelerators_present():
        return call_options_with_one_grappler_iteration()
    return None


@contextlib.contextmanager
def function_call_options(options):
    """`tf.function` calls made in this thread meanwhile run with `options` (None: this
    thread's own); other threads are not affected."""
    if options is None:
        yield
        return
    ctx = eager_context.context()
    previous = ctx.function_call_options
    ctx.function_call_options = options
    try:
        yield
    finally:
        ctx.function_call_options = previous


def single_replica(strategy):
    """True when `strategy` trains one replica in one process (one CPU or one GPU)."""
    return (strategy.num_replicas_in_sync == 1
            and getattr(strategy.extended, "_num_workers", 1) <= 1)


def input_iterator(strategy, dataset_fn):
    """An iterator over `dataset_fn(input_context)`'s batches for `strategy.run`.

    For one replica it is the dataset's own iterator. `distribute_datasets_from_function`
    would feed it through a multi-device iterator whose per-device datasets carry
    tf.data's default options: each starts an autotuning thread, which ignores the
    cancellation its iterator sends when deleted and is joined when it next wakes (its
    period doubles to a minute): deleting the training or evaluation iterator then kept
    the process idle for up to that long (8.6 s after a 10-step `run_pretraining.py`,
    on about every other run). Several replicas or workers still use the strategy's
    distribution."""
    if single_replica(strategy):
        context = tf.distribute.InputContext(num_input_pipelines=1, input_pipeline_id=0,
                                             num_replicas_in_sync=1)
        return iter(without_autotune_thread(dataset_fn(context)))
    return iter(strategy.distribute_datasets_from_function(
        lambda context: without_autotune_thread(dataset_fn(context))))


def log_interval(log_steps, steps_in_run, seconds_per_step=None):
    """Steps between log lines: `log_steps`, shortened for a run too short to reach it
    `MIN_LOGS_PER_RUN` times (a 75-step run logs every 19 steps, not once at the end) and
    for steps so slow that `log_steps` of them take over `MAX_SECONDS_BETWEEN_LOGS`. 0
    (no log steps: a line per loop) stays 0."""
    if not log_steps:
        return 0
    every = min(log_steps, max(1, math.ceil(steps_in_run / MIN_LOGS_PER_RUN)))
    if seconds_per_step:
        every = min(every, max(1, int(MAX_SECONDS_BETWEEN_LOGS / seconds_per_step)))
    return every


class TrainingDivergedError(RuntimeError):
    """The loss became NaN or infinite."""


@contextlib.contextmanager
def explained_input_errors(task):
    """Turns a read or parse error of the input pipeline (which names no file) into the
    task's explanation naming the file, when the task has one (`explain_input_error`)."""
    try:
        yield
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as err:
        better = task.explain_input_error(err) if task is not None else None
        if better is None:
            raise
        raise better from err


def _learning_rate(optimizer):
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        optimizer = optimizer.inner_optimizer
    lr = optimizer.learning_rate
    return float(lr.numpy() if hasattr(lr, "numpy") else lr)


# What the loop itself logs after the loss, and how.
_LOOP_LOG_FORMATS = {"learning_rate": ".3e", "gradient_norm": ".3f",
                     "sequences_per_second": ".1f", "tokens_per_second": ".0f",
                     "loss_scale": ".0f"}


# What a training hook returns to end training after its loop (`training.early_stopping`).
STOP = "stop training"


class Trainer:
    """Trains `model` on `task` with `optimizer` under `strategy`.

    Build the model and the optimizer inside `strategy.scope()` before creating the
    trainer (the trainer builds the optimizer's slots there too).

    Args:
        strategy: a `tf.distribute.Strategy`.
        model: the Keras model the task calls.
        task: object with `normalizers(batch)` and `loss(model, batch, normalizers,
            training)` (a `training.task.Task`).
        optimizer: from `training.optimizers.create_optimizer`.
        model_dir: str. Checkpoints, TensorBoard summaries.
        gradient_accumulation_steps: int. Micro-batches per replica batch.
        jit_compile: bool. XLA-compile the forward and backward pass.
        keep_checkpoint_max: int. Checkpoints kept.
        clip_norm: float or None. Global-norm clipping of the summed gradient.
    """

    def __init__(self, strategy, model, task, optimizer, model_dir,
                 gradient_accumulation_steps=1, jit_compile=False, keep_checkpoint_max=5,
                 clip_norm=1.0):
        self.strategy = strategy
        self.model = model
        self.task = task
        self.optimizer = optimizer
        self.model_dir = model_dir
        self.accumulation = int(gradient_accumulation_steps)
        if self.accumulation < 1:
            raise ValueError(f"--gradient_accumulation_steps must be >= 1, got "
                             f"{gradient_accumulation_steps}.")
        self.keep_checkpoint_max = keep_checkpoint_max
        self.clip_norm = clip_norm
        self.loss_scaling = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        with strategy.scope():
            self.global_step = tf.Variable(0, dtype=tf.int64, trainable=False,
                                           name="global_step")
            optimizer.build(model.trainable_variables)
        self._variables = model.trainable_variables
        # Set from another thread when SIGTERM/SIGINT arrives (`training.preemption`).
        self._stop_requested = tf.Variable(False, trainable=False, name="stop_requested")
        # AutoGraph only for the accumulation's loop over micro-batches (`_loop` writes its
        # `tf.while_loop` out): the model's code has no such loop, and rewriting it cost
        # seconds per run. The step's ops go straight into the loop's graph where nothing
        # asks for a function of their own: a nested `tf.function` captures every
        # variable (and the optimizer's slots) again and builds a call op, which cost
        # 0.4-0.5 s of a MiniLM step's 2.2-2.6 s trace (research/RESULTS-archive.md);
        # Grappler inlines the calls anyway, so the step runs the same ops either way.
        # Functions remain for XLA (it compiles a function) and for the accumulation (its
        # first micro-batch and its loop share one trace of the gradient).
        self._grad_fn = (tf.function(self._gradients, jit_compile=jit_compile, autograph=False)
                         if jit_compile or self.accumulation > 1 else self._gradients)
        if jit_compile:  # XLA compiles one static shape: the real tokens' count is not
            task.skip_padding = False
        self._replica_step_fn = (tf.function(self._replica_step, autograph=True)
                                 if self.accumulation > 1 else self._replica_step)
        self._train_loop = tf.function(self._loop, autograph=False)
        # One options object for every call: the same options find the same compiled
        # function again.
        self._call_options = cpu_call_options(TRAIN_WITH_ONE_GRAPPLER_ITERATION_ON_CPU)
        self._writer = None
        self._metrics = None
        self._started = (time.perf_counter(), 0)

    # ------------------------------------------------------------------ replica step
    def _gradients(self, batch, normalizers):
        with tf.GradientTape() as tape:
            loss, stats = self.task.loss(self.model, batch, normalizers, training=True)
            scaled = self.optimizer.scale_loss(loss) if self.loss_scaling else loss
        grads = tape.gradient(scaled, self._variables)
        grads = [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
                 for g, v in zip(grads, self._variables)]
        return loss, stats, grads

    def _replica_step(self, batch):
        context = tf.distribute.get_replica_context()
        normalizers = context.all_reduce(tf.distribute.ReduceOp.SUM,
                                         self.task.normalizers(batch))
        # A stop request on any worker stops every replica after this same step.
        stop = context.all_reduce(tf.distribute.ReduceOp.SUM,
                                  tf.cast(self._stop_requested, tf.int32))
        k = self.accumulation
        if k == 1:
            loss, stats, grads = self._grad_fn(batch, normalizers)
        else:
            size = tf.shape(next(iter(batch.values())))[0] // k
            loss, stats, grads = self._grad_fn(
                tf.nest.map_structure(lambda t: t[:size], batch), normalizers)
            for i in tf.range(1, k):
                micro = tf.nest.map_structure(lambda t: t[i * size:(i + 1) * size], batch)
                m_loss, m_stats, m_grads = self._grad_fn(micro, normalizers)
                loss += m_loss
                stats = tf.nest.map_structure(tf.add, stats, m_stats)
                grads = [a + b for a, b in zip(grads, m_grads)]
        grads = context.all_reduce(tf.distribute.ReduceOp.SUM, grads)
        loss, stats = context.all_reduce(tf.distribute.ReduceOp.SUM, (loss, stats))
        # Clipping here (not in the optimizer) measures the norm once, for the log too.
        # Under loss scaling the gradients are scaled: clip at clip_norm * scale.
        scale = tf.cast(self.optimizer.dynamic_scale, tf.float32) if self.loss_scaling \
            else tf.constant(1.0)
        if self.clip_norm:
            grads, grad_norm = tf.clip_by_global_norm(grads, self.clip_norm * scale)
        else:
            grad_norm = tf.linalg.global_norm(grads)
        self.optimizer.apply(grads, self._variables)
        grad_norm = grad_norm / scale
        return loss, grad_norm, stats, stop

    def _loop(self, iterator, num_steps):
        """Up to `num_steps` steps in one graph: a `tf.while_loop` written out (AutoGraph's
        rewrite of the same Python loop cost 0.2 s a run), ended early by a non-finite
        loss or a stop request. The sums start at zero, the statistics' under the names
        the task declares (`statistic_names`)."""
        strategy = self.strategy
        names = self.task.statistic_names()
        if names is None or isinstance(names, str):
            raise ValueError(f"{type(self.task).__name__}.statistic_names() must return the "
                             f"names of the statistics its loss returns (a tuple of str), "
                             f"got {names!r}.")
        mean, total = tf.distribute.ReduceOp.MEAN, tf.distribute.ReduceOp.SUM

        def step(steps, stopped, loss_sum, norm_sum, last_loss, stats_sum):
            del last_loss
            batch = next(iterator)
            loss, grad_norm, stats, stop = strategy.run(self._replica_step_fn,
                                                        args=(batch,))
            if sorted(stats) != sorted(names):
                raise ValueError(f"{type(self.task).__name__}.loss returns the statistics "
                                 f"{sorted(stats)}; its statistic_names() says "
                                 f"{sorted(names)}.")
            stopped = strategy.reduce(total, stop, axis=None)
            # Values are all-reduced already: every replica holds the same number.
            loss = strategy.reduce(mean, loss, axis=None)
            grad_norm = strategy.reduce(mean, grad_norm, axis=None)
            stats = {name: strategy.reduce(mean, stats[name], axis=None) for name in names}
            self.global_step.assign_add(1)
            return (steps + 1, stopped, loss_sum + loss, norm_sum + grad_norm, loss,
                    {name: stats_sum[name] + stats[name] for name in names})

        def going_on(steps, stopped, loss_sum, norm_sum, last_loss, stats_sum):
            del loss_sum, norm_sum, stats_sum
            return (steps < num_steps) & (stopped == 0) & tf.math.is_finite(last_loss)

        zero = tf.constant(0.0)
        steps, stopped, loss_sum, norm_sum, last_loss, stats_sum = tf.while_loop(
            going_on, step, (tf.constant(0), tf.constant(0), zero, zero, zero,
                             {name: zero for name in names}))
        return {"steps": steps, "loss_sum": loss_sum, "grad_norm_sum": norm_sum,
                "last_loss": last_loss, "stats_sum": stats_sum, "stopped": stopped}

    # ------------------------------------------------------------------ host loop
    def _summary_writer(self):
        if self._writer is None and is_chief(self.strategy):
            self._writer = tf.summary.create_file_writer(os.path.join(self.model_dir, "train"))
        return self._writer

    def train(self, dataset_fn, num_train_steps, steps_per_loop=1000,
              save_checkpoints_steps=1000, log_steps=100, global_batch_size=None,
              hooks=(), flag_record=None, time_budget=None):
        """Trains until `global_step == num_train_steps`, resuming from the newest
        checkpoint in `model_dir` if there is one.

        Args:
            dataset_fn: `(input_context, skip_batches) -> tf.data.Dataset`: the input
                pipeline's infinite, deterministic stream of per-replica batches (see
                `strategy.distribute_datasets_from_function`), without its first
                `skip_batches` batches.
            hooks: callables `hook(step, logs)` run after each loop on the host; one
                that returns `STOP` ends training there (after its checkpoint).
            flag_record: {flag: value} the run was started with
                (`training.run_flags.flag_values`): kept in `model_dir`, and a resumed
                run whose flags differ says which.
            time_budget: a `training.time_budget.TimeBudget` that sizes a run started at
                step 0 (a resumed run keeps `num_train_steps`).

        Returns:
            dict of the last loop's logs (empty if there was nothing to do).

        Raises:
            TrainingDivergedError: the loss became NaN or Inf.
        """
        manager, step = self._restore(flag_record)

        def pipeline(context):
            # The input is deterministic for a given seed: a resumed run skips the batches
            # already trained on (each input pipeline feeds its local replicas one batch
            # each per step), so it sees exactly what an uninterrupted run would.
            local_replicas = context.num_replicas_in_sync // context.num_input_pipelines
            return dataset_fn(context, step * local_replicas)

        iterator = input_iterator(self.strategy, pipeline)
        if step >= num_train_steps:
            logging.info("Step %d of %d: training already finished.", step, num_train_steps)
            return {}
        logging.info("Training from step %d to %d.", step, num_train_steps)
        if time_budget is not None and step:
            logging.info("A resumed run keeps its %d steps (the time budget sized the run "
                         "when it started).", num_train_steps)
            time_budget = None
        self._metrics = (metrics_log.MetricsLog(self.model_dir) if is_chief(self.strategy)
                         else None)
        self._started = (time.perf_counter(), step)
        self._saved = None  # (step, path) of this run's last save
        self._stop_requested.assign(False)
        with preemption.SignalWatch(lambda: self._stop_requested.assign(True)) as watch:
            return self._train_loops(iterator, manager, watch, step, num_train_steps,
                                     steps_per_loop, save_checkpoints_steps, log_steps,
                                     global_batch_size, hooks, time_budget)

    def _restore(self, flag_record):
        """Restores the newest checkpoint (every worker from the chief's), checks and
        records the run's flags; returns (the checkpoint manager, the step)."""
        strategy = self.strategy
        if is_chief(strategy):
            checkpointing.remove_partial_saves(self.model_dir)
        checkpoint = checkpointing.training_checkpoint(self.model, self.optimizer,
                                                       self.global_step)
        manager = tf.train.CheckpointManager(
            checkpoint, self._checkpoint_dir(), max_to_keep=self.keep_checkpoint_max,
            step_counter=self.global_step, checkpoint_name="ckpt")
        # Every worker resumes from the chief's checkpoints (others save to scratch only).
        checkpointing.restore_latest(checkpoint, manager if is_chief(strategy) else
                                     tf.train.CheckpointManager(
                                         checkpoint, self.model_dir, max_to_keep=None,
                                         checkpoint_name="ckpt"))
        step = int(self.global_step.numpy())
        self._check_same_step(step)
        if flag_record is not None and is_chief(strategy):
            run_flags.check_and_record(self.model_dir, flag_record, step)
        if step:
            logging.info("Skipping the input already trained on (%d steps).", step)
        return manager, step

    def _train_loops(self, iterator, manager, watch, step, num_train_steps, steps_per_loop,
                     save_checkpoints_steps, log_steps, global_batch_size, hooks,
                     time_budget=None):
        """Device loops from `step` to `num_train_steps`, each ending at the next
        boundary (a log, a save, the loop length, the end of a budget's count); returns
        the last logs."""
        steps_in_run = num_train_steps - step
        log_every = log_interval(log_steps, steps_in_run)
        logs = {}
        while step < num_train_steps:
            boundaries = [num_train_steps, step + steps_per_loop,
                          (step // save_checkpoints_steps + 1) * save_checkpoints_steps]
            if log_every:
                boundaries.append((step // log_every + 1) * log_every)
            counted_at = time_budget.boundary(step) if time_budget is not None else None
            if counted_at is not None:
                boundaries.append(counted_at)
            start = time.perf_counter()
            with explained_input_errors(self.task), \
                    function_call_options(self._call_options):
                out = self._train_loop(iterator, tf.constant(min(boundaries) - step,
                                                             tf.int32))
                out = tf.nest.map_structure(lambda t: t.numpy(), out)
            elapsed = time.perf_counter() - start
            step = int(self.global_step.numpy())
            if not np.isfinite(out["last_loss"]):
                raise TrainingDivergedError(
                    f"The loss became {out['last_loss']} at step {step}; training "
                    f"stopped without saving. The last good checkpoint is "
                    f"{manager.latest_checkpoint or '(none)'}. "
                    f"{self._divergence_advice()}")
            log_every = log_interval(log_steps, steps_in_run, elapsed / int(out["steps"]))
            logs = self._loop_logs(out, elapsed, global_batch_size)
            self._log(step, num_train_steps, logs)
            if out["stopped"]:  # SIGTERM/SIGINT here or on another worker
                path = self._save(manager, step)
                raise preemption.TrainingStopped(watch.signum or signal.SIGTERM, step, path)
            if step % save_checkpoints_steps == 0 or step == num_train_steps:
                self._save(manager, step)
            if STOP in [hook(step, logs) for hook in hooks]:  # every hook runs
                self._save(manager, step)  # saved already when the hook evaluated it
                return logs
            if time_budget is not None:
                num_train_steps = self._resize(time_budget, step, num_train_steps)
        return logs

    def _resize(self, time_budget, step, num_train_steps):
        """The run's total after a loop ending at `step`, as `time_budget` counts it; the
        schedule follows it."""
        resized = time_budget.resize(step, num_train_steps)
        if resized != num_train_steps:
            logging.info("Step %d: %.2f s a step measured in training: %d steps end the run "
                         "in its time budget (it was %d).", step,
                         time_budget.seconds_per_step, resized, num_train_steps)
            schedule_of(self.optimizer).resize(resized)
        return resized

    def _divergence_advice(self):
        """What may have made the loss non-finite, for this run: its learning rate at
        the step, its gradient clipping and its precision."""
        lr = _learning_rate(self.optimizer)
        advice = [f"Lower --learning_rate (the rate at this step was {lr:.3g}"
                  + ("; BERT trains at 1e-5 to 1e-3)" if lr > 1e-3 else ")")]
        if not self.clip_norm:
            advice.append("clip gradients (--clip_norm=1.0)")
        compute = keras.mixed_precision.global_policy().compute_dtype
        if compute != "float32":
            advice.append(f"train in --dtype=float32 (this run computes in {compute})")
        advice.append("check the input data")
        return ", ".join(advice[:-1]) + " or " + advice[-1] + "."

    def _check_same_step(self, step):
        """Every worker must resume at the same step (each reads the chief's checkpoints:
        `output_dir` must be storage they share)."""
        strategy = self.strategy
        if getattr(strategy.extended, "_num_workers", 1) <= 1:
            return
        value = tf.constant([step, step * step], tf.float64)
        summed = strategy.experimental_local_results(strategy.run(
            lambda: tf.distribute.get_replica_context().all_reduce(
                tf.distribute.ReduceOp.SUM, value)))[0].numpy()
        n = strategy.num_replicas_in_sync
        if summed[0] != n * step or summed[1] != n * step * step:
            raise ValueError(
                f"Worker {worker_index(strategy)} resumes at step {step} but others do not: "
                f"every worker reads the chief's checkpoints in --output_dir="
                f"{self.model_dir}, so it must be a folder they share (a network file "
                f"system, gs://...).")

    def _loop_logs(self, out, elapsed, global_batch_size):
        """The log values of one call of the device loop (`out`: its sums)."""
        done = int(out["steps"])
        logs = {"loss": out["loss_sum"] / done,
                "learning_rate": _learning_rate(self.optimizer),
                "gradient_norm": out["grad_norm_sum"] / done}
        logs.update({name: value / done for name, value in out["stats_sum"].items()
                     if name != "tokens"})
        if global_batch_size:
            logs["sequences_per_second"] = done * global_batch_size / elapsed
        if "tokens" in out["stats_sum"]:
            logs["tokens_per_second"] = out["stats_sum"]["tokens"] / elapsed
        if self.loss_scaling:
            logs["loss_scale"] = float(self.optimizer.dynamic_scale.numpy())
        return logs

    def _checkpoint_dir(self):
        if is_chief(self.strategy):
            return self.model_dir
        # Non-chief workers must take part in saving; they write to a local scratch folder.
        return os.path.join(tempfile.gettempdir(),
                            f"bert_worker_{worker_index(self.strategy)}_{os.getpid()}")

    def _save(self, manager, step):
        if self._saved and self._saved[0] == step:
            return self._saved[1]  # saved at this step already (stopped right after)
        path = manager.save(checkpoint_number=step)
        self._saved = (step, path)
        if is_chief(self.strategy):
            logging.info("Saved checkpoint %s", path)
        else:
            shutil.rmtree(self._checkpoint_dir(), ignore_errors=True)
        return path

    def _log(self, step, total, logs):
        start_time, start_step = self._started
        elapsed = time.perf_counter() - start_time
        eta = (total - step) * elapsed / (step - start_step) if step > start_step else None
        if self._metrics is not None:
            self._metrics.write("train", step=step, total_steps=total, **logs,
                                elapsed_seconds=round(elapsed, 2),
                                eta_seconds=None if eta is None else round(eta, 1))
        parts = [f"step {step}/{total}", f"loss {logs['loss']:.4f}"]
        # The task's own statistics (what its `loss` returns: e.g. the losses of its
        # parts) follow the loss, then the loop's own figures.
        parts += [f"{name} {value:.4f}" for name, value in logs.items()
                  if name != "loss" and name not in _LOOP_LOG_FORMATS]
        parts += [f"{name} {logs[name]:{fmt}}" for name, fmt in _LOOP_LOG_FORMATS.items()
                  if name in logs]
        if eta is not None:
            parts.append(f"eta {format_duration(eta)}")
        logging.info("  ".join(parts))
        writer = self._summary_writer()
        if writer is not None:
            with writer.as_default(step=step):
                for name, value in logs.items():
                    write_scalar(name, value)
            writer.flush()


def evaluate(strategy, model, task, dataset, max_steps=None):
    """Runs `task.eval_sums` over `dataset` (finite; at most `max_steps` batches) and
    returns `task.eval_results` of the totals, plus "eval_steps"."""
    dataset = without_autotune_thread(dataset)
    dist = (dataset if single_replica(strategy) else  # as `input_iterator`
            strategy.experimental_distribute_dataset(dataset))

    @tf.function(autograph=False)
    def step(batch):
        sums = strategy.run(lambda b: task.eval_sums(model, b), args=(batch,))
        return {name: strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None)
                for name, value in sums.items()}

    totals, steps = None, 0
    with explained_input_errors(task):
        for batch in dist:
            if max_steps is not None and steps >= max_steps:
                break
            sums = {name: float(value.numpy()) for name, value in step(batch).items()}
            totals = sums if totals is None else {n: totals[n] + sums[n] for n in sums}
            steps += 1
    if totals is None:
        raise ValueError("The evaluation data is empty.")
    results = task.eval_results(totals)
    results["eval_steps"] = steps
    return results


# On a host without a GPU or TPU an evaluation batch of few positions costs more per row
# (TensorFlow's cost per call, oneDNN's on short matrices) and memory is no constraint:
# batches hold at least this many positions there (bench/RESULTS.md, "Fine-tuning speed").
MIN_BATCH_POSITIONS_ON_CPU = 4096


def batch_positions(batch_size, max_seq_length):
    """The positions an evaluation or prediction batch holds: `batch_size` sequences at
    the full `max_seq_length` (the memory of the configured batch), on a CPU at least
    `MIN_BATCH_POSITIONS_ON_CPU`."""
    positions = max(1, batch_size) * max_seq_length
    if not accelerators_present():
        positions = max(positions, MIN_BATCH_POSITIONS_ON_CPU)
    return positions


def length_batches(lengths, positions, width, multiple=PAD_MULTIPLE):
    """Rows (indices into `lengths`, the positions each row uses) in batches of similar
    length, shortest first: each holds at most `positions` positions (`batch_positions`),
    its rows counted at its longest rounded up to `multiple` (at most `width`), and at
    least one row."""
    order = np.argsort(lengths, kind="stable")
    batches, start = [], 0
    for end in range(1, len(order)):  # does row order[end] still fit in the batch?
        padded = padded_length(max(int(lengths[order[end]]), 1), multiple, width)
        if (end + 1 - start) * padded > positions:
            batches.append(order[start:end])
            start = end
    if len(order):
        batches.append(order[start:])
    return batches


def predict_arrays(model, arrays, outputs, batch_size, skip_padding=False,
                   sequence_outputs=(), max_seq_length=None):
    """`predict` over in-memory feature arrays ({name: [rows, ..., width]}, the model's
    inputs among them), in order, computed as `serving.load` computes a request: the rows
    sorted by length into batches of similar length (`length_batches`), each padded to
    its own longest row only, one trace for all. The outputs are the same as batches in
    the arrays' order give (up to float rounding of other matmul shapes): a row's outputs
    do not depend on its batch. On hardware that needs static shapes (TPU), batches of
    `batch_size` in order, at full width.

    Args:
        batch_size: a batch holds the positions of this many sequences at
            `max_seq_length` (the arrays' width if None; `batch_positions`).
        sequence_outputs: the names of `outputs` with a position axis after the row axis
            (a tagger's logits, a span labeler's): padded back with zeros to `width`.

    Returns:
        dict of NumPy arrays, one row per input row.
    """
    inputs = {name: np.asarray(arrays[name]) for name in INPUT_NAMES}
    if static_shapes_needed():
        return predict(model, tf.data.Dataset.from_tensor_slices(inputs).batch(batch_size),
                       outputs, skip_padding=skip_padding)
    width = inputs["input_mask"].shape[-1]
    lengths = row_lengths(inputs["input_mask"])  # multiple choice: its longest choice
    batches = length_batches(lengths, batch_positions(batch_size, max_seq_length or width),
                             width)
    specs = {name: tf.TensorSpec([None] * value.ndim, tf.as_dtype(value.dtype))
             for name, value in inputs.items()}

    def grouped():  # straight to the step: a tf.data generator dataset would add its own
        for rows in batches:  # set-up to every pass and nothing else
            length = padded_length(max(int(lengths[rows].max()), 1), PAD_MULTIPLE, width)
            yield {name: tf.convert_to_tensor(value[rows][..., :length])
                   for name, value in inputs.items()}

    got = predict_batches(model, grouped(), specs, outputs, skip_padding=skip_padding,
                          sequence_outputs=sequence_outputs, width=width)
    order = np.concatenate(batches) if batches else np.zeros([0], np.int64)
    result = {}
    for name, value in got.items():
        result[name] = np.empty_like(value)
        result[name][order] = value
    return result


# Compiled inference steps, per model and output set: repeated evaluations during training
# (best-checkpoint selection) reuse one trace instead of tracing a new function each time.
_PREDICT_STEPS = weakref.WeakKeyDictionary()


def predict(model, dataset, outputs, keep=(), skip_padding=False, sequence_outputs=(),
            width=None):
    """Runs `model` (inference) over a finite dataset of feature dicts, in order.

    Args:
        outputs: names of the model outputs to collect (cast to float32).
        keep: names of batch features to collect alongside (e.g. labels).
        skip_padding: bool. The model computes the real tokens only (`BertEncoder`);
            for outputs that read no padded position.
        sequence_outputs, width: the outputs with a position axis after the row axis,
            padded with zeros to `width` positions (batches cut to their own length).

    Returns:
        dict of NumPy arrays, concatenated over batches.
    """
    specs = dataset.element_spec
    return predict_batches(model, without_autotune_thread(dataset), {
        name: tf.TensorSpec([None] * specs[name].shape.rank, specs[name].dtype)
        for name in INPUT_NAMES}, outputs, keep, skip_padding, sequence_outputs, width)


def predict_batches(model, batches, specs, outputs, keep=(), skip_padding=False,
                    sequence_outputs=(), width=None):
    """`predict` over an iterable of feature dicts (tensors) whose model inputs match
    `specs` ({name: tf.TensorSpec}, every dimension free: one trace for all)."""
    steps = _PREDICT_STEPS.setdefault(model, {})
    key = (tuple(outputs), bool(skip_padding))
    if key not in steps:
        # reduce_retracing: batches padded to their own length (`task.trim_padding`) come
        # in a few shapes; one trace with a free sequence length serves them all.
        @tf.function(reduce_retracing=True, autograph=False)
        def step(inputs):
            out = model(inputs, training=False, skip_padding=skip_padding) if skip_padding \
                else model(inputs, training=False)
            return {name: tf.cast(out[name], tf.float32) for name in outputs}
        steps[key] = step
    # One trace for every batch: traced first over the inputs with every dimension free
    # (a call of another shape would trace once more before relaxing).
    collected = {name: [] for name in tuple(outputs) + tuple(keep)}
    with function_call_options(cpu_call_options(PREDICT_WITH_ONE_GRAPPLER_ITERATION_ON_CPU)):
        steps[key].get_concrete_function({name: specs[name] for name in INPUT_NAMES})
        for batch in batches:
            got = steps[key]({name: batch[name] for name in INPUT_NAMES})
            for name in outputs:
                value = got[name].numpy()
                if name in sequence_outputs and value.shape[1] < width:
                    value = np.pad(value, [(0, 0), (0, width - value.shape[1])] +
                                   [(0, 0)] * (value.ndim - 2))
                collected[name].append(value)
            for name in keep:
                collected[name].append(np.asarray(batch[name]))
    return {name: np.concatenate(values) for name, values in collected.items()}
