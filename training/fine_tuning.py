"""What the fine-tuning entry points share: their common flags, the set-up (config,
length check, strategy, case check), the trainer with its step count, and the training
input made from in-memory feature arrays.

Pipeline position: `run_classifier.py`, `run_squad.py` and `run_ner.py` call these between
reading their task's data and training (`training.loop`).
"""

from absl import app, flags

from training import flags as training_flags


def define_fine_tuning_flags(do_lower_case=True, predict_batch_size=8):
    flags.DEFINE_string("vocab_file", None, "The vocabulary the model was trained with.")
    flags.DEFINE_bool("do_lower_case", do_lower_case,
                      "True for uncased models, False for cased ones.")
    flags.DEFINE_bool("do_predict", False, "Predict the test / predict file.")
    flags.DEFINE_integer("predict_batch_size", predict_batch_size, "Prediction batch size.")
    flags.DEFINE_float("num_train_epochs", 3.0, "Training epochs.")
    flags.DEFINE_float("warmup_proportion", 0.1, "Share of training steps for linear "
                       "warm-up.")
    flags.DEFINE_string("export_dir", None, "Write a SavedModel here after training.")


def set_up(FLAGS):
    """Reads the config, checks `--max_seq_length` against it, creates the strategy (before
    any other TensorFlow op) and checks the case flag against a released checkpoint's name.

    Returns:
        (config, strategy, loss_scale).
    """
    from data_prep.tokenization import validate_case_matches_checkpoint
    from modeling import BertConfig

    config = BertConfig.from_json_file(FLAGS.bert_config_file)
    if FLAGS.max_seq_length > config.max_position_embeddings:
        raise app.UsageError(
            f"--max_seq_length={FLAGS.max_seq_length} exceeds max_position_embeddings="
            f"{config.max_position_embeddings} in {FLAGS.bert_config_file}.")
    strategy, loss_scale = training_flags.strategy_from_flags(FLAGS)
    validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)
    return config, strategy, loss_scale


def build_trainer(FLAGS, strategy, model, task, num_examples, loss_scale):
    """The optimizer and `Trainer` for `--num_train_epochs` over `num_examples` (steps
    counted from examples, as the original), warm-up `--warmup_proportion`.

    Returns:
        (trainer, num_train_steps).
    """
    from absl import logging

    from training import loop

    training_flags.check_batch_size(FLAGS, strategy, FLAGS.train_batch_size,
                                    "train_batch_size")
    num_train_steps = max(1, int(num_examples / FLAGS.train_batch_size *
                                 FLAGS.num_train_epochs))
    num_warmup_steps = int(num_train_steps * FLAGS.warmup_proportion)
    logging.info("%d training examples: %d steps (%d warm-up), batch %d.", num_examples,
                 num_train_steps, num_warmup_steps, FLAGS.train_batch_size)
    with strategy.scope():
        optimizer = training_flags.optimizer_from_flags(FLAGS, model, num_train_steps,
                                                        num_warmup_steps, loss_scale)
    trainer = loop.Trainer(strategy, model, task, optimizer, FLAGS.output_dir,
                           gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
                           jit_compile=training_flags.use_xla(FLAGS),
                           keep_checkpoint_max=FLAGS.keep_checkpoint_max,
                           clip_norm=FLAGS.clip_norm or None)
    return trainer, num_train_steps


def train(FLAGS, trainer, dataset_fn, num_train_steps, hooks=()):
    """`trainer.train` with the shared flags: loop length, checkpoint and log intervals,
    and the flags recorded beside the checkpoints (`training.run_flags`)."""
    from training import run_flags

    return trainer.train(dataset_fn, num_train_steps,
                         steps_per_loop=FLAGS.iterations_per_loop,
                         save_checkpoints_steps=FLAGS.save_checkpoints_steps,
                         log_steps=FLAGS.log_steps, global_batch_size=FLAGS.train_batch_size,
                         hooks=hooks, flag_record=run_flags.flag_values(FLAGS))


def array_dataset_fn(arrays, FLAGS):
    """`Trainer.train`'s dataset function over in-memory feature arrays: sharded per
    input pipeline, repeated, shuffled with `--seed`, full batches."""
    import tensorflow as tf

    def dataset_fn(context, skip_batches):
        dataset = tf.data.Dataset.from_tensor_slices(arrays)
        if context.num_input_pipelines > 1:
            dataset = dataset.shard(context.num_input_pipelines, context.input_pipeline_id)
        batch = context.get_per_replica_batch_size(FLAGS.train_batch_size)
        return dataset.repeat().shuffle(10000, seed=FLAGS.seed).batch(
            batch, drop_remainder=True).skip(skip_batches).prefetch(tf.data.AUTOTUNE)

    return dataset_fn
