"""Pre-train BERT: masked LM + next sentence prediction on create_pretraining_data's TFRecords.

Pipeline position: TFRecords (data_prep.create_pretraining_data) -> here -> a checkpoint
for the fine-tuning scripts (`output_dir/export/bert_model.ckpt` + `bert_config.json`).
Same flags as the original `run_pretraining.py`, plus distribution, precision, gradient
accumulation and optimizer choices (see --helpfull). Rerunning a command resumes it.

    python run_pretraining.py --input_file='shards/*.tfrecord' --output_dir=out \
      --bert_config_file=bert_config.json --do_train --do_eval \
      --train_batch_size=256 --max_seq_length=128 --max_predictions_per_seq=20 \
      --num_train_steps=1000000 --num_warmup_steps=10000 --learning_rate=1e-4
"""

import os

from absl import app, flags, logging

from training import flags as training_flags

training_flags.define_common_flags()
flags.DEFINE_string("input_file", None,
                    "Pre-training TFRecords: comma-separated files or globs.")
flags.DEFINE_string("eval_input_file", None,
                    "Evaluation TFRecords (default: --input_file, as the original).")
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Masked positions per sequence; must match the data.")
flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Linear warm-up steps.")
flags.DEFINE_integer("max_eval_steps", 100, "Evaluation batches.")
FLAGS = flags.FLAGS


def _check_flags(config):
    if not (FLAGS.do_train or FLAGS.do_eval):
        raise app.UsageError("At least one of --do_train or --do_eval must be set.")
    for name in ("bert_config_file", "input_file", "output_dir"):
        if not getattr(FLAGS, name):
            raise app.UsageError(f"--{name} is required.")
    if FLAGS.max_seq_length > config.max_position_embeddings:
        raise app.UsageError(
            f"--max_seq_length={FLAGS.max_seq_length} exceeds max_position_embeddings="
            f"{config.max_position_embeddings} in {FLAGS.bert_config_file}.")


def main(_):
    import tensorflow as tf

    from data_prep.pretraining_input import (check_first_record, expand_input_patterns,
                                             pretraining_dataset)
    from modeling import BertConfig, BertPretrainer, load_checkpoint, save_google_checkpoint
    from modeling.file_io import atomic_write_text
    from training import loop
    from training import run_flags
    from training.distribution import is_chief
    from training.pretraining_task import PretrainingTask

    config = BertConfig.from_json_file(FLAGS.bert_config_file) \
        if FLAGS.bert_config_file else None
    _check_flags(config)
    strategy, loss_scale = training_flags.strategy_from_flags(FLAGS)
    logging.info("Strategy %s with %d replicas; dtype %s.", type(strategy).__name__,
                 strategy.num_replicas_in_sync, FLAGS.dtype)
    train_files = expand_input_patterns(FLAGS.input_file)
    eval_files = expand_input_patterns(FLAGS.eval_input_file or FLAGS.input_file)
    for path in sorted(set(train_files) | set(eval_files)):  # one record per file: cheap
        check_first_record(path, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq)
    logging.info("%d training files, %d evaluation files.", len(train_files),
                 len(eval_files))

    tf.io.gfile.makedirs(FLAGS.output_dir)
    task = PretrainingTask()
    with strategy.scope():
        model = BertPretrainer(config)
    resuming = tf.train.latest_checkpoint(FLAGS.output_dir) is not None
    if FLAGS.init_checkpoint and not resuming:
        load_checkpoint(model, FLAGS.init_checkpoint)

    if FLAGS.do_train:
        training_flags.check_batch_size(FLAGS, strategy, FLAGS.train_batch_size,
                                        "train_batch_size")
        with strategy.scope():
            optimizer = training_flags.optimizer_from_flags(
                FLAGS, model, FLAGS.num_train_steps, FLAGS.num_warmup_steps, loss_scale)
        trainer = loop.Trainer(strategy, model, task, optimizer, FLAGS.output_dir,
                               gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
                               jit_compile=training_flags.use_xla(FLAGS),
                               keep_checkpoint_max=FLAGS.keep_checkpoint_max,
                               clip_norm=FLAGS.clip_norm or None)

        def train_dataset(context, skip_batches):
            return pretraining_dataset(
                train_files, context.get_per_replica_batch_size(FLAGS.train_batch_size),
                FLAGS.max_seq_length, FLAGS.max_predictions_per_seq, is_training=True,
                seed=FLAGS.seed, input_context=context, skip_batches=skip_batches)

        trainer.train(train_dataset, FLAGS.num_train_steps,
                      steps_per_loop=FLAGS.iterations_per_loop,
                      save_checkpoints_steps=FLAGS.save_checkpoints_steps,
                      log_steps=FLAGS.log_steps, global_batch_size=FLAGS.train_batch_size,
                      flag_record=run_flags.flag_values(FLAGS))
        if is_chief(strategy):
            export = os.path.join(FLAGS.output_dir, "export")
            save_google_checkpoint(model, os.path.join(export, "bert_model.ckpt"))
            config.to_json_file(os.path.join(export, "bert_config.json"))
            logging.info("Wrote %s/bert_model.ckpt and bert_config.json for fine-tuning.",
                         export)
    elif resuming:
        latest = tf.train.latest_checkpoint(FLAGS.output_dir)
        load_checkpoint(model, latest, strict=True)

    if FLAGS.do_eval:
        dataset = pretraining_dataset(eval_files, FLAGS.eval_batch_size, FLAGS.max_seq_length,
                                      FLAGS.max_predictions_per_seq, is_training=False)
        results = loop.evaluate(strategy, model, task, dataset, FLAGS.max_eval_steps)
        latest = tf.train.latest_checkpoint(FLAGS.output_dir)
        results["global_step"] = int(latest.rsplit("-", 1)[1]) if latest else 0
        lines = [f"{key} = {results[key]}" for key in sorted(results)]
        logging.info("***** Eval results *****\n  %s", "\n  ".join(lines))
        if is_chief(strategy):
            atomic_write_text(os.path.join(FLAGS.output_dir, "eval_results.txt"),
                              "\n".join(lines) + "\n")


if __name__ == "__main__":
    app.run(main)
