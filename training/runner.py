"""The one runner of every task: resume or initialise, train, keep the best checkpoint,
evaluate, predict, write the results, export.

Pipeline position: between the training entry points and everything they train: an entry
point builds a task (`tasks.*`) and configs (`training.config`) and calls `run`; a Python
session does the same:

    from tasks.classification import ClassificationConfig, ClassificationTask
    from training import runner
    from training.config import TrainerConfig

    task = ClassificationTask(ClassificationConfig(
        task_name="MRPC", data_dir="glue/MRPC", vocab_file="vocab.txt",
        bert_config_file="bert_config.json", init_checkpoint="bert_model.ckpt"))
    result = runner.run(task, TrainerConfig(output_dir="mrpc_out", learning_rate=2e-5),
                        do_train=True, do_eval=True)
    result.eval_results["accuracy"]

What a run does, in order:
  1. the strategy and precision (`training.distribution.set_up`), the model config and
     its length check; the chief locks `output_dir` for the run (`training.run_lock`),
     and before training moves an old run aside (`overwrite_output_dir`) or refuses an
     `init_checkpoint` that another run's checkpoints there would silently override;
     the task's inputs read and checked (`Task.prepare`);
  2. the model: the newest checkpoint of `output_dir` when there is one (a rerun resumes),
     else `init_checkpoint`;
  3. training (`training.loop.Trainer`), with the optimizer of `training.optimizers`;
     with evaluation, the task is evaluated at every checkpoint and the best one (by the
     task's `main_metric`) is kept in `output_dir/best/` with `best_results.txt`; with
     `early_stopping_patience`, training ends once that many evaluations in a row have
     not improved on the best (`training.early_stopping`);
  4. evaluation of the final weights -> `output_dir/eval_results.txt`; prediction -> the
     task's files in `output_dir`, and the export -> `export_dir`, both from the best
     checkpoint when there is one (`predict_from`, which `predictions_from.txt` and
     metrics.jsonl's "end" line name). Only the chief worker writes.
"""

import dataclasses
import numbers
import os
import re
import time
from typing import Optional

import tensorflow as tf
from absl import logging

from common import file_io
from modeling import (
    BertConfig,
    CheckpointReadError,
    deferred_draws,
    load_checkpoint,
    save_tf2_checkpoint,
)
from text.tokenization import check_vocabulary_fits, validate_case_matches_checkpoint
from training import (
    best_checkpoint,
    checkpointing,
    distribution,
    early_stopping,
    export_record,
    loop,
    metrics_log,
    run_flags,
    run_lock,
)
from training.config import FineTuningConfig, RuntimeConfig
from training.optimizers import create_optimizer
from training.run_lock import RunLock

EVAL_RESULTS = "eval_results.txt"
PREDICTIONS_FROM = "predictions_from.txt"  # which weights the predictions came from
EVAL_SUMMARIES = "eval"  # TensorBoard scalars of every evaluation, beside "train"


@dataclasses.dataclass
class RunResult:
    """What a run produced (None where the stage did not run).

    Attributes:
        model: the task's model, with the weights it predicted and exported with (the
            best checkpoint's when the run kept one, unless `predict_from="last"`).
        train_logs: the last training loop's logs (loss, learning rate, ...).
        eval_results: the metrics written to eval_results.txt.
        predict_results: the task's metrics of its predictions, when it has them (SQuAD
            scores a predict file that holds answers; NER its test file).
        export_dir: where the export was written.
    """
    model: object = None
    train_logs: Optional[dict] = None
    eval_results: Optional[dict] = None
    predict_results: Optional[dict] = None
    export_dir: Optional[str] = None


def model_config(task):
    """The task's `BertConfig`, after the checks every run makes before it builds a model:
    `max_seq_length` against it, and a fine-tuning task's vocabulary against its
    `vocab_size` and casing against a released checkpoint's name."""
    c = task.config
    config = BertConfig.from_json_file(c.bert_config_file)
    config.check_max_seq_length(c.max_seq_length)
    if isinstance(c, FineTuningConfig):
        check_vocabulary_fits(c.vocab_file, config.vocab_size, c.bert_config_file,
                              c.vocab_smaller_than_model)
        validate_case_matches_checkpoint(c.do_lower_case, c.init_checkpoint)
    return config


def checkpoint_step(output_dir):
    """The step of the newest training checkpoint in `output_dir` (0 if none)."""
    return checkpointing.step_of(tf.train.latest_checkpoint(output_dir) if output_dir
                                 else None)


def restore_model(task, bert_config, strategy, output_dir=None, restore_latest=True):
    """Builds the task's model under `strategy` and gives it its starting weights: with
    `restore_latest`, the newest checkpoint of `output_dir` (strictly: every weight);
    when there is none, `init_checkpoint` (if any). Training restores its own checkpoint
    (optimizer state included), so it passes `restore_latest=False`; its task head may
    start from random weights. Without training (`restore_latest`), a model whose task
    head, or whole self, would keep random weights is refused (`ValueError`).

    Returns:
        (model, restored): the checkpoint of `output_dir` the weights came from (None if
        the weights are not from one).
    """
    saved = checkpointing.newest_first(output_dir) if output_dir else []
    init = task.config.init_checkpoint
    loading = bool(saved and restore_latest or not saved and init)
    # The weights a checkpoint read here fills are not drawn at random first.
    with strategy.scope(), deferred_draws(enabled=loading) as deferred:
        model = task.build_model(bert_config)
    if not saved:
        if init:  # every encoder weight; a task head may be new (for training only)
            report = load_checkpoint(model, init, strict="encoder", deferred=deferred)
            if restore_latest and report.not_filled:
                raise ValueError(
                    f"{init}: holds no weights for the {task.name} task's output layer "
                    f"({', '.join(report.not_filled)}): its answers would come from random "
                    f"weights. Give a checkpoint fine-tuned on this task (a training run's "
                    f"--output_dir or its best/model.ckpt), or train first (--do_train).")
        elif restore_latest:
            raise ValueError(
                f"No weights to {'predict' if output_dir is None else 'evaluate or predict'}"
                f" with: " + (f"--output_dir={output_dir} holds no checkpoint and " if
                              output_dir else "") +
                "no --init_checkpoint is given. Train first (--do_train) or give "
                "--init_checkpoint.")
    elif restore_latest:
        for path in saved:
            try:
                load_checkpoint(model, path, strict=True, deferred=deferred)
                return model, path
            except CheckpointReadError as err:
                if path == saved[-1]:
                    raise
                logging.warning("%s Using the checkpoint before it.", err)
    return model, None


def inference_model(task, output_dir=None, runtime=RuntimeConfig()):
    """The task's model with the weights a run would predict with (the newest checkpoint
    of `output_dir`, else `init_checkpoint`), outside of `run` (e.g. to answer one
    question)."""
    bert_config = model_config(task)
    with distribution.kept_precision():
        strategy, _ = distribution.set_up(runtime)
        model, _ = restore_model(task, bert_config, strategy, output_dir)
    return model


def check_batch_size(strategy, batch_size, gradient_accumulation_steps):
    """The global batch must split evenly over replicas and accumulation steps."""
    parts = strategy.num_replicas_in_sync * max(1, gradient_accumulation_steps)
    if batch_size % parts:
        raise ValueError(
            f"--train_batch_size={batch_size} does not split into "
            f"{strategy.num_replicas_in_sync} replicas x {gradient_accumulation_steps} "
            f"accumulation steps; use a multiple of {parts}.")


# Reads the dev pass's seconds back from the evaluation line the keeper logs.
EVALUATED = re.compile(r"evaluated in ([\d.]+) s")


class BestCheckpointKeeper:
    """A training hook: at every checkpoint (and the last step) evaluates the task and,
    when its `main_metric` is the best so far, saves the weights as
    `output_dir/best/model.ckpt` with the results in `best_results.txt`. A rerun reads
    the best value back, so resuming keeps comparing with it. With a `patience`, it
    returns `loop.STOP` once that many evaluations in a row have not beaten the best
    (`training.early_stopping`; an evaluation of the last step never stops)."""

    def __init__(self, task, model, strategy, output_dir, save_checkpoints_steps,
                 num_train_steps, patience=None):
        self.task, self.model, self.strategy = task, model, strategy
        self.output_dir = output_dir
        self.directory = best_checkpoint.folder(output_dir)
        self.every, self.last = save_checkpoints_steps, num_train_steps
        recorded = best_checkpoint.read_results(output_dir) or {}
        value = recorded.get(task.main_metric)
        self.best = None if value is None else float(value)
        self.latest = None  # (step, results) of the last evaluation
        self.metrics = metrics_log.MetricsLog(output_dir)
        self.stopping = None if patience is None else early_stopping.EarlyStopping(
            output_dir, patience, task.main_metric,
            int(recorded["global_step"]) if "global_step" in recorded else None)

    def __call__(self, step, logs):
        if step % self.every and step != self.last:
            return
        started = time.perf_counter()
        results = self.task.evaluate(self.model, self.strategy)
        seconds = time.perf_counter() - started
        self.latest = (step, results)
        record_evaluation(self.metrics, self.output_dir, step, results)
        value = results[self.task.main_metric]
        best = self.best is None or value > self.best
        logging.info("Step %d: dev %s = %.4f, evaluated in %.2f s%s", step,  # EVALUATED
                     self.task.main_metric, value, seconds,
                     " (best so far: kept in best/)" if best else "")
        if best:
            self.best = value
            text = self.task.format_results(dict(results, global_step=step))
            with file_io.atomic_path(self.directory) as tmp:  # weights and results together
                save_tf2_checkpoint(self.model, os.path.join(tmp, best_checkpoint.CHECKPOINT))
                best_checkpoint.write_results(tmp, text, step)
        if self.stopping and self.stopping.evaluated(step, best) and step < self.last:
            logging.info("Step %d of %d: training stops early: %s; best/ holds step %d's "
                         "checkpoint.", step, self.last, self.stopping.reason(self.best),
                         self.stopping.best_step)
            self.metrics.write("early_stop", step=step, best_step=self.stopping.best_step,
                               patience=self.stopping.patience)
            return loop.STOP
        return None


def record_evaluation(metrics, output_dir, step, results):
    """An evaluation's results as an "evaluation" line of metrics.jsonl and as TensorBoard
    scalars in `output_dir/eval` (beside training's `output_dir/train`, so both show in
    one TensorBoard)."""
    metrics.write("evaluation", step=step, **results)
    writer = _eval_writers.get(output_dir)
    if writer is None:
        writer = _eval_writers[output_dir] = tf.summary.create_file_writer(
            os.path.join(output_dir, EVAL_SUMMARIES))
    with writer.as_default(step=step):
        for name, value in results.items():
            if isinstance(value, numbers.Real) and not isinstance(value, bool) and \
                    name not in ("global_step", "eval_steps"):
                loop.write_scalar(name, value)
    writer.flush()


_eval_writers = {}  # output_dir -> its evaluation summary writer


def _write_results(task, path, results):
    text = task.format_results(results)
    logging.info("***** Eval results *****\n  %s", text.rstrip("\n").replace("\n", "\n  "))
    file_io.atomic_write_text(path, text)


def make_optimizer(model, trainer, num_train_steps, num_warmup_steps, loss_scale=False):
    """The optimizer of `trainer`'s settings (a `TrainerConfig`) for `model`, on the
    schedule of `num_train_steps` with `num_warmup_steps` of warm-up."""
    return create_optimizer(model, trainer.learning_rate, num_train_steps, num_warmup_steps,
                            optimizer=trainer.optimizer,
                            weight_decay_rate=trainer.weight_decay_rate,
                            beta_2=trainer.adam_beta2, loss_scale=loss_scale,
                            num_stable_steps=int(trainer.lr_stable_share * num_train_steps))


def train(task, model, trainer, runtime, strategy, loss_scale, keep_best=False, hooks=(),
          time_budget=None):
    """Trains `model` on `task` to its last step (or the step `time_budget` counts),
    resuming from `trainer.output_dir`.

    Returns:
        (the last training loop's logs, the `BestCheckpointKeeper` or None).
    """
    check_batch_size(strategy, trainer.train_batch_size, trainer.gradient_accumulation_steps)
    plan = task.train_input(trainer.train_batch_size, runtime.seed)
    if plan.num_examples is not None:
        logging.info("%d training examples: %d steps (%d warm-up), batch %d.",
                     plan.num_examples, plan.num_train_steps, plan.num_warmup_steps,
                     trainer.train_batch_size)
    with strategy.scope():
        if trainer.gradient_checkpointing:
            getattr(model, "encoder", model).enable_gradient_checkpointing(runtime.seed)
        optimizer = make_optimizer(model, trainer, plan.num_train_steps,
                                   plan.num_warmup_steps, loss_scale)
    trainer_loop = loop.Trainer(
        strategy, model, task, optimizer, trainer.output_dir,
        gradient_accumulation_steps=trainer.gradient_accumulation_steps,
        jit_compile=distribution.use_xla(runtime.use_xla),
        keep_checkpoint_max=trainer.keep_checkpoint_max, clip_norm=trainer.clip_norm or None)
    keeper = None
    if keep_best and task.main_metric and distribution.is_chief(strategy):
        keeper = BestCheckpointKeeper(task, model, strategy, trainer.output_dir,
                                      trainer.save_checkpoints_steps, plan.num_train_steps,
                                      trainer.early_stopping_patience)
    num_train_steps = _steps_left_by_early_stopping(keeper, trainer, plan.num_train_steps)
    logs = trainer_loop.train(
        plan.dataset_fn, num_train_steps, steps_per_loop=trainer.iterations_per_loop,
        save_checkpoints_steps=trainer.save_checkpoints_steps, log_steps=trainer.log_steps,
        global_batch_size=trainer.train_batch_size,
        hooks=task.training_hooks() + ([keeper] if keeper else []) + list(hooks),
        flag_record=run_flags.recorded_values(runtime, trainer, task.config),
        time_budget=time_budget)
    return logs, keeper


def _steps_left_by_early_stopping(keeper, trainer, num_train_steps):
    """The step training runs to: a run that stopped early stays stopped where it did.
    Warns when early stopping cannot act, the run evaluating too rarely."""
    stopping = keeper and keeper.stopping
    if not stopping:
        return num_train_steps
    step = checkpoint_step(trainer.output_dir)
    if step and stopping.stopped_at(step):
        logging.info("Step %d of %d: this run stopped early, %s: it is not trained on (a "
                     "larger --early_stopping_patience continues it).", step,
                     num_train_steps, stopping.reason(keeper.best))
        return step
    count = early_stopping.evaluations(num_train_steps, trainer.save_checkpoints_steps)
    if count <= stopping.patience + 1:
        logging.warning(
            "--early_stopping_patience=%d: this run evaluates on dev %d time%s (at every "
            "--save_checkpoints_steps=%d of its %d steps and at the last), too few to stop "
            "before the end: give a smaller --save_checkpoints_steps.", stopping.patience,
            count, "s" * (count != 1), trainer.save_checkpoints_steps, num_train_steps)
    return num_train_steps


def run(task, trainer, runtime=RuntimeConfig(), *, do_train=False, do_eval=False,
        do_predict=False, hooks=(), prepared=False, time_budget=None):
    """Runs `task`'s stages (see the module docstring).

    Args:
        task: a `training.task.Task` (`tasks.*`).
        trainer: `training.config.TrainerConfig`.
        runtime: `training.config.RuntimeConfig`.
        do_train, do_eval, do_predict: bool. The stages to run.
        hooks: callables `hook(step, logs)` run after each training loop (after the
            loop's checkpoint and its evaluation, with `do_eval`).
        prepared: bool. `task.prepare` was called already for these stages (a grid's
            runs share one task's inputs, `training.grid`).
        time_budget: a `training.time_budget.TimeBudget`: training sizes its steps to
            the budget's deadline during warm-up (a run started at step 0).

    Returns:
        `RunResult`.
    """
    if not (do_train or do_eval or do_predict or trainer.export_dir):
        raise ValueError("Nothing to do: set do_train, do_eval, do_predict or export_dir.")
    trainer.check_stages(do_train, do_eval)
    if trainer.early_stopping_patience is not None and not task.main_metric:
        raise ValueError(f"--early_stopping_patience: the {task.name} task has no dev "
                         f"metric to watch.")
    with distribution.kept_precision():  # --dtype holds for this run only
        return _run(task, trainer, runtime, do_train, do_eval, do_predict, hooks, prepared,
                    time_budget)


def _run(task, trainer, runtime, do_train, do_eval, do_predict, hooks, prepared,
         time_budget):
    bert_config = model_config(task)
    strategy, loss_scale = distribution.set_up(runtime)
    several_workers = getattr(strategy.extended, "_num_workers", 1) > 1
    if time_budget is not None and several_workers:
        # Each worker's clock would count its own total, and the workers would part.
        raise ValueError("A time budget sizes a run on one machine; give several workers "
                         "--num_train_steps instead.")
    if trainer.early_stopping_patience is not None and several_workers:
        # The chief alone evaluates: the other workers would wait for its steps.
        raise ValueError("--early_stopping_patience stops a run on one machine; several "
                         "workers train for their --num_train_epochs.")
    file_io.makedirs(trainer.output_dir)
    if not distribution.is_chief(strategy):
        return _run_stages(task, trainer, runtime, bert_config, strategy, loss_scale,
                           do_train, do_eval, do_predict, hooks, prepared)
    with RunLock(trainer.output_dir) as lock:
        if do_train:
            _start_or_resume(task, trainer, runtime, lock)
        return _run_stages(task, trainer, runtime, bert_config, strategy, loss_scale,
                           do_train, do_eval, do_predict, hooks, prepared, time_budget)


def _start_or_resume(task, trainer, runtime, lock):
    """Before training, on the chief: `--overwrite_output_dir` moves an old run aside; an
    `--init_checkpoint` with another run's checkpoints in `output_dir` is refused (the
    run would resume them in silence)."""
    output_dir, step = trainer.output_dir, checkpoint_step(trainer.output_dir)
    if trainer.overwrite_output_dir:
        if os.listdir(output_dir) != [run_lock.FILE_NAME]:
            file_io.refuse_inputs_as_outputs(
                {"overwrite_output_dir": output_dir}, task.input_paths())
            aside = lock.move_folder_aside(time.strftime("replaced-%Y%m%d-%H%M%S"))
            logging.warning("--overwrite_output_dir: the run that was in %s is now in %s.",
                            output_dir, aside)
    elif step and task.config.init_checkpoint:
        run_flags.check_same_run(output_dir, run_flags.recorded_values(
            runtime, trainer, task.config), step)


_warned_random_start = set()  # the configs warned about (a grid's runs share one)


def _warn_if_from_random_weights(task, output_dir):
    """A fine-tuning run that starts (not resumes) without `init_checkpoint` learns the
    language from the task's examples alone: said once a process, on the console."""
    c = task.config
    if not isinstance(c, FineTuningConfig) or c.init_checkpoint or \
            checkpoint_step(output_dir) or c.bert_config_file in _warned_random_start:
        return
    _warned_random_start.add(c.bert_config_file)
    logging.warning(
        "No --init_checkpoint: fine-tuning starts from random weights, not a pre-trained "
        "model, and usually scores far below one. Give the checkpoint that came with "
        "--bert_config_file (e.g. --init_checkpoint=uncased_L-12_H-768_A-12/"
        "bert_model.ckpt) unless a model from scratch is what you want.")


def record_export_settings(task, output_dir):
    """Writes what an export of this run's checkpoints needs beyond the weights
    (`training.export_record`), once the task has read its data."""
    c = task.config
    if not isinstance(c, FineTuningConfig):
        return  # a pre-training run exports checkpoints, not a served model
    export_record.write(output_dir, export_record.values_of(
        task.name, task.export_options(), c.vocab_file, c.do_lower_case, c.max_seq_length))


def _check_int8(task, export_dir):
    """int8 against float32 TF Lite on the task's dev requests (`int8_check.json`)."""
    requests = task.serving_requests()
    if not requests:
        logging.info("No dev requests to compare model_int8.tflite with model.tflite on.")
        return
    from serving.precision_check import REPORT_FILE, int8_report
    report = int8_report(export_dir, requests)
    logging.info("model_int8.tflite answers as model.tflite on %.2f%% of %d dev requests "
                 "(%s; largest probability difference %.3f): %s.", 100 * report["agreement"],
                 report["requests"], report["answer"], report["max_probability_difference"],
                 os.path.join(export_dir, REPORT_FILE))


def _run_stages(task, trainer, runtime, bert_config, strategy, loss_scale, do_train,
                do_eval, do_predict, hooks, prepared, time_budget=None):
    output_dir = trainer.output_dir
    if not prepared:
        task.prepare(output_dir, do_train=do_train, do_eval=do_eval, do_predict=do_predict)
    inputs = task.input_paths()
    export_dir = trainer.export_dir or (task.default_export_dir(output_dir) if do_train
                                        else None)
    file_io.refuse_inputs_as_outputs({"export_dir": export_dir},
                                     dict(inputs, output_dir=output_dir))
    if export_dir and task.export_takes_text:  # fail now, not after training
        from text.graph_tokenizer import require_text  # tensorflow-text: 0.2 s to import
        require_text(f"--export_dir={export_dir} (a SavedModel that takes raw text)")
    if do_train and distribution.is_chief(strategy):
        record_export_settings(task, output_dir)
    model, restored = restore_model(task, bert_config, strategy, output_dir,
                                    restore_latest=not do_train)
    if do_train:
        _warn_if_from_random_weights(task, output_dir)
    chief = distribution.is_chief(strategy)
    metrics = metrics_log.MetricsLog(output_dir)
    result = RunResult(model=model)
    keeper = None
    if do_train:
        result.train_logs, keeper = train(task, model, trainer, runtime, strategy,
                                          loss_scale, keep_best=do_eval, hooks=hooks,
                                          time_budget=time_budget)
    step = checkpoint_step(output_dir) if do_train else checkpointing.step_of(restored)
    if do_eval and (chief or task.evaluate_on_every_worker):
        result.eval_results = _evaluate(task, model, strategy, output_dir, step, keeper,
                                        metrics, inputs, chief)
    weights = None
    if (do_predict or export_dir) and chief and trainer.predict_from == "best":
        weights = _load_best(task, model, output_dir, step)
    if do_predict and chief:
        files, result.predict_results = task.predict(model)
        if weights:
            files[PREDICTIONS_FROM] = "".join(f"{k} = {v}\n" for k, v in weights.items())
        paths = {os.path.join(output_dir, name): text for name, text in files.items()}
        file_io.refuse_inputs_as_outputs({"output_dir": list(paths)}, inputs)
        for path, text in paths.items():
            file_io.atomic_write_text(path, text)
        logging.info("Wrote %s to %s.", ", ".join(files), output_dir)
    if export_dir and chief:
        task.export(model, export_dir, tflite_quantize=trainer.tflite_quantize)
        result.export_dir = export_dir
        if trainer.tflite_quantize and do_eval:
            _check_int8(task, export_dir)
    if chief:
        metrics.write("end", step=step, eval_results=result.eval_results,
                      predict_results=result.predict_results, export_dir=result.export_dir,
                      weights=weights or {"checkpoint": "last", "global_step": step})
    return result


def _evaluate(task, model, strategy, output_dir, step, keeper, metrics, inputs, chief):
    """The final weights' dev results, written to eval_results.txt (the chief)."""
    just_evaluated = bool(keeper and keeper.latest and keeper.latest[0] == step)
    if just_evaluated:
        results = dict(keeper.latest[1])  # the model was just evaluated at this step
    else:
        results = task.evaluate(model, strategy)
    results["global_step"] = step
    if chief:
        if not just_evaluated:
            record_evaluation(metrics, output_dir, step, results)
        path = os.path.join(output_dir, EVAL_RESULTS)
        file_io.refuse_inputs_as_outputs({"output_dir": path}, inputs)
        _write_results(task, path, results)
    return results


def _load_best(task, model, output_dir, last_step):
    """Gives `model` the weights of `output_dir/best/` when the run kept one; returns what
    was loaded ({"checkpoint", "global_step", the main metric}) or None."""
    path = best_checkpoint.checkpoint(output_dir)
    best = best_checkpoint.read_results(output_dir)
    if not file_io.exists(path + ".index") or best is None:
        return None
    if task.config.init_checkpoint != path:  # else it has these weights already
        load_checkpoint(model, path, strict=True)
    weights = {"checkpoint": path, "global_step": int(best.get("global_step", -1))}
    if task.main_metric in best:
        weights[task.main_metric] = float(best[task.main_metric])
    if "grid_combination" in best:  # `training.grid`'s choice
        weights["grid_combination"] = best["grid_combination"]
    logging.info("Predicting and exporting with the best checkpoint, %s: step %d%s%s "
                 "(--predict_from=last uses the last weights).", path,
                 weights["global_step"], f" of {last_step}" if last_step else "",
                 f", dev {task.main_metric} = {weights[task.main_metric]:.4f}"
                 if task.main_metric in weights else "")
    return weights
