"""What a task is to the loop and the runner, and what the fine-tuning tasks share.

Pipeline position: every task of `tasks/` (pretraining, classification, squad, tagging)
subclasses `Task`; `training.loop.Trainer` calls its loss, `training.runner.run` its
whole life cycle. In the manner of Model Garden's `official/core/base_task.py`: one object
per task owns building its model, reading and checking its inputs, its loss, its
evaluation and its metrics, its predictions and post-processing, the files it writes, and
its export; the runner around it is the same for all.

The runner calls, in this order:
  1. `prepare(output_dir, do_train, do_eval, do_predict)`: read and check every input
     the run will use (before any training step);
  2. `build_model(bert_config)` (inside the strategy's scope);
  3. `train_input(global_batch_size, seed)` -> `TrainInput`; the loop then calls
     `normalizers(batch)` and `loss(model, batch, normalizers, training)` per step,
     and `explain_input_error` when the input fails;
  4. `evaluate(model, strategy)` -> {metric: value} (at checkpoints too, to keep the best
     by `main_metric`), written with `format_results`;
  5. `predict(model)` -> ({file name: text}, results or None);
  6. `export(model, export_dir)`.
"""

import dataclasses
from typing import Callable, Optional

import tensorflow as tf

from modeling.inputs import INPUT_NAMES
from modeling.padding import trim_grouped_padding, trim_padding


@dataclasses.dataclass
class TrainInput:
    """What a task trains on.

    Attributes:
        dataset_fn: `(input_context, skip_batches) -> tf.data.Dataset`, the infinite,
            deterministic stream of per-replica batches (see `Trainer.train`).
        num_train_steps: int.
        num_warmup_steps: int.
        num_examples: int or None. For the log.
    """
    dataset_fn: Callable
    num_train_steps: int
    num_warmup_steps: int
    num_examples: Optional[int] = None


class Task:
    """Base class of every task; `config` is its `training.config.TaskConfig` subclass.

    Class attributes:
        name: str. The task's one name (pretraining, classification, squad, tagging).
        main_metric: str or None. The metric (higher is better) that picks the best
            checkpoint during training with evaluation; None to keep no best checkpoint.
        evaluate_on_every_worker: bool. `evaluate` runs on every worker (a distributed
            evaluation); otherwise only the chief evaluates.
        export_takes_text: bool. The export tokenizes raw text in-graph, so it needs
            tensorflow-text (checked before training).
        skip_padding: bool. The task's answers and loss read no padded position (a
            [CLS] label, each real token's tag, a choice's [CLS]), so its model computes
            the real tokens only, in training and prediction (`encode`): the same values
            at the real positions, the dense layers' time spent on them alone, dropout
            drawn for them only. Off where every step has one static shape (XLA, TPUs;
            the Trainer turns it off when XLA compiles its step).
    """
    name = None
    main_metric = None
    evaluate_on_every_worker = False
    export_takes_text = True  # the export's signatures tokenize in-graph (tensorflow-text)
    skip_padding = False

    def __init__(self, config):
        self.config = config

    # ------------------------------------------------------------------ life cycle
    def prepare(self, output_dir, do_train=False, do_eval=False, do_predict=False):
        """Reads and checks the inputs the run needs; errors name the file and field."""

    def build_model(self, bert_config):
        raise NotImplementedError

    def train_input(self, global_batch_size, seed):
        raise NotImplementedError

    def evaluate(self, model, strategy):
        """{metric: value} of `model` on the dev data (the chief, or every worker with
        `evaluate_on_every_worker`). A task may compute it with `training.loop.evaluate`
        over `eval_sums` and `eval_results`."""
        raise NotImplementedError(f"{type(self).__name__} has no evaluation.")

    def eval_sums(self, model, batch):
        """For `training.loop.evaluate`: {name: scalar tensor} sums over one replica's
        batch, added over replicas and batches (run inside the strategy)."""
        raise NotImplementedError(f"{type(self).__name__} has no eval_sums.")

    def eval_results(self, sums):
        """For `training.loop.evaluate`: {metric: value} of the totals of `eval_sums`."""
        raise NotImplementedError(f"{type(self).__name__} has no eval_results.")

    def explain_input_error(self, error):
        """An error to raise instead of `error` (a `tf.errors.DataLossError` or
        `InvalidArgumentError` of the input pipeline, while training or evaluating): one
        that names the file and what is wrong with it (a `ValueError`). None when the
        task has nothing better: `error` is then raised as it is."""
        return None

    def format_results(self, results):
        """The text of eval_results.txt: `key = value` lines, sorted."""
        return "".join(f"{key} = {results[key]}\n" for key in sorted(results))

    def predict(self, model):
        raise NotImplementedError(f"{type(self).__name__} has no prediction.")

    def export(self, model, export_dir, tflite_quantize=False):
        """Writes the task's export; with `tflite_quantize` also `model_int8.tflite`."""
        raise NotImplementedError(f"{type(self).__name__} has no export.")

    def export_options(self):
        """What the export needs beyond the weights (the task's export options, known
        once `prepare` has read the data), recorded beside the checkpoints for the export
        scripts (`training.export_record`); None when the task needs none."""
        return None

    def serving_requests(self):
        """The dev set as requests to the export (rows as `serving.load` takes them), to
        compare its int8 and float32 TF Lite answers; None when the task has none."""
        return None

    def input_paths(self):
        """{flag: path or paths} of everything the run reads (after `prepare`): no output
        may overwrite one of them. Tasks add their data files."""
        c = self.config
        paths = {"bert_config_file": c.bert_config_file, "init_checkpoint": c.init_checkpoint}
        if hasattr(c, "vocab_file"):
            paths["vocab_file"] = c.vocab_file
        return paths

    def default_export_dir(self, output_dir):
        """Where training exports to when no export folder is given (None: nowhere)."""
        return None

    # ------------------------------------------------------------------ the loss
    def padding_skipped(self):
        """Whether this run's model calls compute the real tokens only (`skip_padding`,
        and shapes may vary)."""
        return self.skip_padding and not static_shapes_needed()

    def encode(self, model, batch, training):
        """The model's outputs on a batch of features, the padding skipped where the task
        allows it (`skip_padding`)."""
        return model(model_inputs(batch), training=training,
                     skip_padding=self.padding_skipped())

    def training_hooks(self):
        """Callables `hook(step, logs)` the training loop runs after each of its loops,
        beside the runner's own (e.g. a check of the task's loss)."""
        return []

    def normalizers(self, batch):
        """Per-replica sums the loop adds over replicas before `loss` (e.g. the number
        of examples), so each replica's loss is its share of the global batch's."""
        return {"examples": tf.cast(tf.shape(batch["input_ids"])[0], tf.float32)}

    def loss(self, model, batch, normalizers, training):
        """(this micro-batch's share of the global loss, {statistic: share})."""
        raise NotImplementedError

    def statistic_names(self):
        """The names of the statistics `loss` returns (float32 scalars), so that the
        training loop starts their sums at zero: by default the real tokens alone
        (`token_count`), as the fine-tuning tasks log. A task whose `loss` returns others
        says which here; the loop refuses a mismatch with a one-line error."""
        return ("tokens",)


def requested_splits(do_train, do_eval, do_predict):
    """The data splits a run's stages read: "train", "dev", "test", in that order."""
    return [split for split, on in (("train", do_train), ("dev", do_eval),
                                    ("test", do_predict)) if on]


def model_inputs(batch):
    """The encoder's inputs of a batch of features."""
    return {name: batch[name] for name in INPUT_NAMES}


def static_shapes_needed():
    """True where every step must have one shape (TPUs: XLA compiles each shape);
    elsewhere batches are padded to their own longest sequence (`trim_padding`)."""
    return bool(tf.config.list_logical_devices("TPU"))


def token_count(batch):
    """Real tokens of a batch, for the loop's tokens/s."""
    return tf.cast(tf.reduce_sum(batch["input_mask"]), tf.float32)


def steps_for_epochs(num_examples, global_batch_size, num_train_epochs,
                     warmup_proportion):
    """The original's fine-tuning length: `num_examples / batch * epochs` steps (at least
    one), the first `warmup_proportion` of them warm-up. Returns (steps, warm-up)."""
    num_train_steps = max(1, int(num_examples / global_batch_size * num_train_epochs))
    return num_train_steps, int(num_train_steps * warmup_proportion)


def array_dataset_fn(arrays, global_batch_size, seed, pad_to_longest=False, grouped=False):
    """`TrainInput.dataset_fn` over in-memory feature arrays: sharded per input
    pipeline, repeated, shuffled with `seed`, full batches; with `pad_to_longest`, each
    cut to its longest sequence (`trim_padding`: only for losses that padding does not
    enter). `grouped`: each row is a group of sequences ([rows, group, seq_length]: a
    question's choices, a pair's sentences), cut by `trim_grouped_padding`."""
    trim = trim_grouped_padding if grouped else trim_padding

    def dataset_fn(context, skip_batches):
        dataset = tf.data.Dataset.from_tensor_slices(arrays)
        if context.num_input_pipelines > 1:
            dataset = dataset.shard(context.num_input_pipelines, context.input_pipeline_id)
        batch = context.get_per_replica_batch_size(global_batch_size)
        dataset = dataset.repeat().shuffle(10000, seed=seed).batch(
            batch, drop_remainder=True).skip(skip_batches)
        if pad_to_longest:
            dataset = dataset.map(trim, num_parallel_calls=tf.data.AUTOTUNE)
        return dataset.prefetch(tf.data.AUTOTUNE)

    return dataset_fn

