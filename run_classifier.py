"""Fine-tune BERT for sentence(-pair) classification: GLUE, XNLI, or your own data.

Pipeline position: a pre-trained checkpoint (Google's, Hugging Face's, or
run_pretraining.py's export) -> here -> eval results, test predictions, and a SavedModel
that takes raw strings. Same flags as the original `run_classifier.py`, plus the
distribution / precision / optimizer flags of run_pretraining.py.

    python run_classifier.py --task_name=MRPC --data_dir=glue_data/MRPC \
      --vocab_file=uncased_L-12_H-768_A-12/vocab.txt \
      --bert_config_file=uncased_L-12_H-768_A-12/bert_config.json \
      --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \
      --do_train --do_eval --do_predict --max_seq_length=128 --train_batch_size=32 \
      --learning_rate=2e-5 --num_train_epochs=3 --output_dir=mrpc_out --export_dir=mrpc_model
"""

import os

from absl import app, flags, logging

from training import fine_tuning
from training import flags as training_flags

training_flags.define_common_flags()
fine_tuning.define_fine_tuning_flags()
flags.DEFINE_string("task_name", None, "CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE, "
                    "WNLI, XNLI, or generic (your own files).")
flags.DEFINE_string("data_dir", None, "Folder with the task's train/dev/test files.")
flags.DEFINE_float("dropout_rate", 0.1, "Dropout before the classifier.")
flags.DEFINE_string("xnli_language", "zh", "XNLI: the language to train and test on.")
flags.DEFINE_enum("tokenizer", "python", ["python", "graph"],
                  "Feature conversion: the Python tokenizer or the in-graph one "
                  "(identical results).")
flags.DEFINE_string("text_a_column", "text_a", "generic task: column of the first text.")
flags.DEFINE_string("text_b_column", None, "generic task: column of the second text.")
flags.DEFINE_string("label_column", "label", "generic task: column of the label.")
flags.DEFINE_list("labels", None, "generic task: the label list (default: read from the "
                  "training data).")
flags.DEFINE_bool("regression", False, "generic task: the label is a number.")
FLAGS = flags.FLAGS

GLUE_SUBMISSION = {"cola": "CoLA", "sst-2": "SST-2", "sst2": "SST-2", "mrpc": "MRPC",
                   "sts-b": "STS-B", "stsb": "STS-B", "qqp": "QQP", "mnli": "MNLI-m",
                   "qnli": "QNLI", "rte": "RTE", "wnli": "WNLI"}


def _check_flags():
    if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
        raise app.UsageError("At least one of --do_train, --do_eval, --do_predict.")
    for name in ("task_name", "data_dir", "vocab_file", "bert_config_file", "output_dir"):
        if not getattr(FLAGS, name):
            raise app.UsageError(f"--{name} is required.")


def _write_results(path, results):
    from modeling.file_io import atomic_write_text
    lines = [f"{key} = {results[key]}" for key in sorted(results)]
    logging.info("***** Eval results *****\n  %s", "\n  ".join(lines))
    atomic_write_text(path, "\n".join(lines) + "\n")


def main(_):
    _check_flags()
    from data_prep import classifier_data, classifier_features
    from modeling import BertClassifier, load_checkpoint
    from modeling.file_io import atomic_write_text
    from training import classification_metrics as metrics
    from training.classification_task import ClassificationTask, predict_logits
    from training.distribution import is_chief

    config, strategy, loss_scale = fine_tuning.set_up(FLAGS)
    import tensorflow as tf

    processor = classifier_data.get_processor(
        FLAGS.task_name, FLAGS.data_dir, language=FLAGS.xnli_language,
        text_a_column=FLAGS.text_a_column, text_b_column=FLAGS.text_b_column,
        label_column=FLAGS.label_column, labels=FLAGS.labels, regression=FLAGS.regression)
    regression = processor.regression
    label_list = processor.get_labels()
    num_classes = 1 if regression else len(label_list)
    task = ClassificationTask(regression)
    os.makedirs(FLAGS.output_dir, exist_ok=True)

    def features(split, examples):
        return classifier_features.cached_features(
            examples, processor.path(split), FLAGS.output_dir, split, FLAGS.vocab_file,
            FLAGS.do_lower_case, FLAGS.max_seq_length, label_list, regression,
            FLAGS.tokenizer)

    def finite_dataset(path, batch_size):
        return classifier_features.classifier_dataset(
            path, batch_size, FLAGS.max_seq_length, regression, is_training=False)

    with strategy.scope():
        model = BertClassifier(config, num_classes, dropout_rate=FLAGS.dropout_rate)
    resuming = tf.train.latest_checkpoint(FLAGS.output_dir) is not None
    if FLAGS.init_checkpoint and not resuming:
        load_checkpoint(model, FLAGS.init_checkpoint)

    eval_sets = {}
    if FLAGS.do_eval or FLAGS.do_train:
        for split in processor.splits():
            if FLAGS.do_eval:
                examples = processor.get_examples(split)
                eval_sets[split] = features(split, examples)

    def evaluate():
        results = {}
        for split, path in eval_sets.items():
            logits, labels = predict_logits(model, finite_dataset(path, FLAGS.eval_batch_size))
            split_results = metrics.task_metrics(FLAGS.task_name, task.outputs(logits),
                                                 labels, label_list)
            prefix = "" if split == "dev" else split.replace("dev_", "") + "_"
            results.update({prefix + k: v for k, v in split_results.items()})
            results[prefix + "eval_examples"] = len(labels)
        return results

    pair = True
    if FLAGS.do_train:
        train_examples = processor.get_examples("train")
        pair = any(e.text_b for e in train_examples)
        train_path = features("train", train_examples)
        trainer, num_train_steps = fine_tuning.build_trainer(
            FLAGS, strategy, model, task, len(train_examples), loss_scale)
        best_dir = os.path.join(FLAGS.output_dir, "best")
        main_metric = metrics.main_metric(FLAGS.task_name)
        best = {"value": None}
        best_file = os.path.join(best_dir, "best_results.txt")
        if os.path.exists(best_file):
            for line in open(best_file):
                key, _, value = line.partition(" = ")
                if key == main_metric:
                    best["value"] = float(value)

        def keep_best(step, logs):
            if not eval_sets or not is_chief(strategy):
                return
            if step % FLAGS.save_checkpoints_steps and step != num_train_steps:
                return
            results = evaluate()
            value = results.get(main_metric)
            logging.info("Step %d: dev %s = %.4f", step, main_metric, value)
            if best["value"] is None or value > best["value"]:
                from modeling import save_tf2_checkpoint
                best["value"] = value
                save_tf2_checkpoint(model, os.path.join(best_dir, "model.ckpt"))
                _write_results(best_file, dict(results, global_step=step))

        def train_dataset(context, skip_batches):
            return classifier_features.classifier_dataset(
                train_path, context.get_per_replica_batch_size(FLAGS.train_batch_size),
                FLAGS.max_seq_length, regression, is_training=True, seed=FLAGS.seed,
                input_context=context, skip_batches=skip_batches)

        fine_tuning.train(FLAGS, trainer, train_dataset, num_train_steps, hooks=[keep_best])
    elif resuming:
        load_checkpoint(model, tf.train.latest_checkpoint(FLAGS.output_dir), strict=True)

    if FLAGS.do_eval and is_chief(strategy):
        results = evaluate()
        latest = tf.train.latest_checkpoint(FLAGS.output_dir)
        results["global_step"] = int(latest.rsplit("-", 1)[1]) if latest else 0
        _write_results(os.path.join(FLAGS.output_dir, "eval_results.txt"), results)

    if FLAGS.do_predict and is_chief(strategy):
        splits = ["test", "test_mismatched"] if FLAGS.task_name.lower() == "mnli" \
            else ["test"]
        for split in splits:
            examples = processor.get_examples(split)
            pair = any(e.text_b for e in examples) or pair
            logits, _ = predict_logits(model, finite_dataset(features(split, examples),
                                                             FLAGS.predict_batch_size))
            outputs = task.outputs(logits)
            suffix = "" if split == "test" else "_mismatched"
            rows = [("\t".join(f"{p:.6f}" for p in row) if outputs.ndim > 1
                     else f"{row:.6f}") for row in outputs]
            atomic_write_text(os.path.join(FLAGS.output_dir, f"test_results{suffix}.tsv"),
                              "\n".join(rows) + "\n")
            name = GLUE_SUBMISSION.get(FLAGS.task_name.lower())
            if name:
                name = "MNLI-mm" if suffix else name
                predictions = outputs if regression else [label_list[i] for i in
                                                          outputs.argmax(-1)]
                ids = [e.guid.split("-", 1)[1] for e in examples]
                body = "".join(f"{i}\t{p:.3f}\n" if regression else f"{i}\t{p}\n"
                               for i, p in zip(ids, predictions))
                atomic_write_text(os.path.join(FLAGS.output_dir, f"{name}.tsv"),
                                  "index\tprediction\n" + body)
            logging.info("Wrote predictions for %d %s examples.", len(examples), split)

    if FLAGS.export_dir and is_chief(strategy):
        from training.export import export_classifier
        export_classifier(model, FLAGS.export_dir, FLAGS.vocab_file, FLAGS.do_lower_case,
                          FLAGS.max_seq_length, label_list, regression, pair=pair)
        logging.info("Exported a SavedModel to %s (signatures serving_default: raw text, "
                     "serving_ids: token ids).", FLAGS.export_dir)


if __name__ == "__main__":
    app.run(main)
