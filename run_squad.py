"""Fine-tune and run BERT on SQuAD v1.1 / v2.0, with the official evaluation built in.

Pipeline position: a pre-trained checkpoint -> here -> predictions.json,
nbest_predictions.json (and null_odds.json for v2.0), eval_results.txt. Same flags as the
original `run_squad.py`, plus the shared training flags (strategies, dtypes, optimizer).

    python run_squad.py --vocab_file=$BERT/vocab.txt --bert_config_file=$BERT/bert_config.json \
      --init_checkpoint=$BERT/bert_model.ckpt --do_train --train_file=train-v1.1.json \
      --do_predict --predict_file=dev-v1.1.json --train_batch_size=24 --learning_rate=3e-5 \
      --num_train_epochs=2.0 --max_seq_length=384 --doc_stride=128 --output_dir=squad_out
    python run_squad.py --do_eval_only --predict_file=dev-v1.1.json \
      --predictions_file=squad_out/predictions.json
    python run_squad.py ... --init_checkpoint=squad_out --question="Who?" --context="..."
"""

import json
import os
import random

from absl import app, flags, logging

from training import fine_tuning
from training import flags as training_flags

training_flags.define_common_flags()
fine_tuning.define_fine_tuning_flags()
flags.FLAGS.set_default("max_seq_length", 384)
flags.DEFINE_string("train_file", None, "SQuAD JSON for training (train-v1.1.json).")
flags.DEFINE_string("predict_file", None, "SQuAD JSON to predict (dev-v1.1.json).")
flags.DEFINE_integer("doc_stride", 128, "Pieces between the starts of document windows.")
flags.DEFINE_integer("max_query_length", 64, "Question pieces kept.")
flags.DEFINE_integer("n_best_size", 20, "Candidates kept per question.")
flags.DEFINE_integer("max_answer_length", 30, "Longest answer, in pieces.")
flags.DEFINE_bool("version_2_with_negative", False, "SQuAD 2.0: questions may have no "
                  "answer.")
flags.DEFINE_float("null_score_diff_threshold", 0.0, "v2.0: predict no answer when "
                   "null score - best score exceeds this.")
flags.DEFINE_bool("verbose_logging", False, "Accepted for compatibility.")
flags.DEFINE_bool("do_eval_only", False, "Only score --predictions_file against "
                  "--predict_file (no model).")
flags.DEFINE_string("predictions_file", None, "predictions.json to score.")
flags.DEFINE_string("null_odds_file", None, "null_odds.json (v2.0) to score with.")
flags.DEFINE_string("question", None, "Answer this question about --context and exit.")
flags.DEFINE_string("context", None, "The passage for --question.")
FLAGS = flags.FLAGS


def _score(dataset, predictions, null_odds=None):
    """Official metrics of `predictions` against the "data" list of a SQuAD file."""
    from training import squad_metrics
    if FLAGS.version_2_with_negative:
        return squad_metrics.evaluate_v2(dataset, predictions, null_odds)
    return squad_metrics.evaluate_v1(dataset, predictions)


def _eval_only():
    for name in ("predict_file", "predictions_file"):
        if not getattr(FLAGS, name):
            raise app.UsageError(f"--do_eval_only needs --{name}.")
    with open(FLAGS.predictions_file, encoding="utf-8") as f:
        predictions = json.load(f)
    odds = None
    if FLAGS.null_odds_file:
        with open(FLAGS.null_odds_file, encoding="utf-8") as f:
            odds = json.load(f)
    from data_prep.squad import load_json
    print(json.dumps(_score(load_json(FLAGS.predict_file)["data"], predictions, odds)))


def main(_):
    if FLAGS.do_eval_only:
        return _eval_only()
    interactive = FLAGS.question is not None
    if not (FLAGS.do_train or FLAGS.do_predict or interactive or FLAGS.export_dir):
        raise app.UsageError("At least one of --do_train, --do_predict, --question, "
                             "--do_eval_only.")
    for name in ("vocab_file", "bert_config_file") + (() if interactive else ("output_dir",)):
        if not getattr(FLAGS, name):
            raise app.UsageError(f"--{name} is required.")
    if FLAGS.do_train and not FLAGS.train_file:
        raise app.UsageError("--do_train needs --train_file.")
    if FLAGS.do_predict and not FLAGS.predict_file:
        raise app.UsageError("--do_predict needs --predict_file.")
    if interactive and FLAGS.context is None:
        raise app.UsageError("--question needs --context.")

    from data_prep import squad
    from data_prep.tokenization import FullTokenizer
    from modeling import BertSpanLabeler, load_checkpoint
    from modeling.file_io import atomic_write_text
    from training.distribution import is_chief
    from training.span_task import SpanTask, predict_spans
    from training.squad_predictions import compute_predictions

    config, strategy, loss_scale = fine_tuning.set_up(FLAGS)
    import tensorflow as tf

    tokenizer = FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    with strategy.scope():
        model = BertSpanLabeler(config)
    output_dir = FLAGS.output_dir
    resuming = bool(output_dir) and tf.train.latest_checkpoint(output_dir) is not None
    if FLAGS.init_checkpoint and not resuming:
        load_checkpoint(model, FLAGS.init_checkpoint)

    def features_of(examples, is_training):
        return squad.convert_examples(examples, tokenizer, FLAGS.max_seq_length,
                                      FLAGS.doc_stride, FLAGS.max_query_length, is_training)

    def answer(examples):
        features = features_of(examples, False)
        starts, ends = predict_spans(model, squad.feature_arrays(features, False),
                                     FLAGS.predict_batch_size)
        return compute_predictions(examples, features, starts, ends, FLAGS.n_best_size,
                                   FLAGS.max_answer_length, FLAGS.do_lower_case,
                                   FLAGS.version_2_with_negative,
                                   FLAGS.null_score_diff_threshold), len(features)

    if FLAGS.do_train:
        examples, counts = squad.read_squad(FLAGS.train_file, True,
                                            FLAGS.version_2_with_negative)
        logging.info("Read %s: %d training examples; %s", FLAGS.train_file, len(examples),
                     counts)
        random.Random(12345).shuffle(examples)  # as the original
        features = features_of(examples, True)
        arrays = squad.feature_arrays(features, True)
        logging.info("%d features.", len(features))
        trainer, num_train_steps = fine_tuning.build_trainer(
            FLAGS, strategy, model, SpanTask(), len(examples), loss_scale)
        train_dataset = fine_tuning.array_dataset_fn(arrays, FLAGS)
        fine_tuning.train(FLAGS, trainer, train_dataset, num_train_steps)
    elif resuming:
        load_checkpoint(model, tf.train.latest_checkpoint(output_dir), strict=True)

    if FLAGS.export_dir and is_chief(strategy) and not interactive:
        from training.export import export_span_labeler
        export_span_labeler(model, FLAGS.export_dir, FLAGS.vocab_file, FLAGS.do_lower_case,
                            FLAGS.max_seq_length, FLAGS.max_query_length)
        logging.info("Exported a SavedModel to %s.", FLAGS.export_dir)

    if interactive:
        examples, _ = squad.read_squad_from_text(FLAGS.question, FLAGS.context)
        (predictions, nbest, _), _ = answer(examples)
        best = nbest["question"][0]
        print(json.dumps({"answer": predictions["question"],
                          "probability": best["probability"],
                          "score": best["start_logit"] + best["end_logit"]},
                         ensure_ascii=False))
        return

    if FLAGS.do_predict and is_chief(strategy):
        data = squad.load_json(FLAGS.predict_file)  # read once: examples and scoring
        examples, counts = squad.squad_examples(data, FLAGS.predict_file, False)
        (predictions, nbest, null_odds), n_features = answer(examples)
        for name, value in (("predictions.json", predictions),
                            ("nbest_predictions.json", nbest)) + (
                (("null_odds.json", null_odds),) if FLAGS.version_2_with_negative else ()):
            atomic_write_text(os.path.join(output_dir, name),
                              json.dumps(value, indent=4, ensure_ascii=False) + "\n")
        logging.info("Predicted %d questions (%d features); %s", len(examples), n_features,
                     counts)
        has_answers = any(qa.get("answers") for article in data["data"]
                          for p in article.get("paragraphs", []) for qa in p.get("qas", []))
        if has_answers:
            results = _score(data["data"], predictions,
                             null_odds if FLAGS.version_2_with_negative else None)
            atomic_write_text(os.path.join(output_dir, "eval_results.txt"), "".join(
                f"{k} = {v}\n" for k, v in sorted(results.items())))
            print(json.dumps(results))


if __name__ == "__main__":
    app.run(main)
