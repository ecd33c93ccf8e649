"""Fine-tune BERT for named-entity recognition (CoNLL-2003 or any CoNLL-style data), with
entity-level F1 as conlleval computes it.

Pipeline position: a pre-trained checkpoint -> here -> eval_results.txt,
test_predictions.txt (CoNLL columns: word, gold, predicted). Uses the shared training
loop, optimizer and flags of run_pretraining.py / run_classifier.py.

    python run_ner.py --data_dir=conll2003 --vocab_file=cased_L-12_H-768_A-12/vocab.txt \
      --bert_config_file=cased_L-12_H-768_A-12/bert_config.json \
      --init_checkpoint=cased_L-12_H-768_A-12/bert_model.ckpt --do_lower_case=False \
      --do_train --do_eval --do_predict --max_seq_length=128 --output_dir=ner_out
    python run_ner.py --do_eval_only --predictions_file=ner_out/test_predictions.txt
"""

import json
import os

from absl import app, flags, logging

from training import fine_tuning
from training import flags as training_flags

training_flags.define_common_flags()
fine_tuning.define_fine_tuning_flags(do_lower_case=False, predict_batch_size=32)
flags.DEFINE_string("data_dir", None, "Folder with train/dev/test files: eng.train, "
                    "eng.testa, eng.testb or train.txt, valid.txt (dev.txt), test.txt.")
flags.DEFINE_enum("tag_scheme", "iob2", ["iob2", "keep"],
                  "iob2: convert the tags to IOB2 (BIO), e.g. CoNLL-2003's IOB1; keep: use "
                  "them as they are.")
flags.DEFINE_integer("doc_stride", None, "Pieces between the starts of overlapping "
                     "windows of a long sentence (default max_seq_length / 2).")
flags.DEFINE_bool("document_context", False, "Fill each window with the words of the "
                  "neighbouring sentences of the same document (the paper's setting); "
                  "they are not labelled or predicted.")
flags.DEFINE_bool("do_eval_only", False, "Only score --predictions_file with conlleval's "
                  "metric; no model.")
flags.DEFINE_string("predictions_file", None, "CoNLL predictions: word, gold tag, predicted "
                    "tag per line.")
FLAGS = flags.FLAGS


def _format(results):
    lines = [f"{k} = {results[k]}" for k in ("precision", "recall", "f1", "accuracy",
                                             "gold_entities", "predicted_entities",
                                             "correct_entities") if k in results]
    for kind, r in results.get("per_type", {}).items():
        lines.append(f"{kind} = precision {r['precision']:.2f} recall {r['recall']:.2f} "
                     f"f1 {r['f1']:.2f} ({r['gold']} gold, {r['predicted']} predicted)")
    return "\n".join(lines) + "\n"


def _eval_only():
    from training import ner_metrics
    if not FLAGS.predictions_file:
        raise app.UsageError("--do_eval_only needs --predictions_file.")
    gold, pred = ner_metrics.read_predictions(FLAGS.predictions_file)
    results = ner_metrics.evaluate(gold, pred)
    print(_format(results), end="")
    print(json.dumps(results))


def main(_):
    if FLAGS.do_eval_only:
        return _eval_only()
    if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
        raise app.UsageError("At least one of --do_train, --do_eval, --do_predict "
                             "(or --do_eval_only).")
    for name in ("data_dir", "vocab_file", "bert_config_file", "output_dir"):
        if not getattr(FLAGS, name):
            raise app.UsageError(f"--{name} is required.")
    from data_prep import conll, tagging_features
    from data_prep.tokenization import FullTokenizer
    from modeling import BertTokenClassifier, load_checkpoint
    from modeling.file_io import atomic_write_text
    from training import ner_metrics
    from training.distribution import is_chief
    from training.tagging_task import TaggingTask, predict_label_ids

    config, strategy, loss_scale = fine_tuning.set_up(FLAGS)
    import tensorflow as tf

    tokenizer = FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)

    def read(split):
        path = conll.find_split(FLAGS.data_dir, split)
        sentences = conll.read_conll(path)
        if FLAGS.tag_scheme == "iob2":
            for s in sentences:
                s.tags = conll.iob1_to_iob2(s.tags)
        return path, sentences

    train_path, train_sentences = read("train")
    label_list = conll.label_list(train_sentences)
    label_map = {tag: i for i, tag in enumerate(label_list)}
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    atomic_write_text(os.path.join(FLAGS.output_dir, "label_list.txt"),
                      "\n".join(label_list) + "\n")

    def check_tags(path, sentences):
        for s in sentences:
            for offset, tag in enumerate(s.tags):
                if tag not in label_map:
                    raise conll.ConllError(
                        f"{path}:{s.line + offset}: tag {tag!r} does not occur in the "
                        f"training data {train_path} (tags: {label_list}).")

    def features(sentences):
        return tagging_features.convert_sentences(sentences, tokenizer, label_map,
                                                  FLAGS.max_seq_length, FLAGS.doc_stride,
                                                  FLAGS.document_context)

    with strategy.scope():
        model = BertTokenClassifier(config, len(label_list))
    resuming = tf.train.latest_checkpoint(FLAGS.output_dir) is not None
    if FLAGS.init_checkpoint and not resuming:
        load_checkpoint(model, FLAGS.init_checkpoint)

    if FLAGS.do_train:
        arrays, windows = features(train_sentences)
        trainer, num_train_steps = fine_tuning.build_trainer(
            FLAGS, strategy, model, TaggingTask(), len(windows), loss_scale)
        logging.info("%d training sentences in %d windows, %d tags.", len(train_sentences),
                     len(windows), len(label_list))
        train_dataset = fine_tuning.array_dataset_fn(
            {k: v for k, v in arrays.items() if k != "predict_weights"}, FLAGS)
        fine_tuning.train(FLAGS, trainer, train_dataset, num_train_steps)
    elif resuming:
        load_checkpoint(model, tf.train.latest_checkpoint(FLAGS.output_dir), strict=True)

    def predict(sentences):
        arrays, windows = features(sentences)
        ids = predict_label_ids(model, arrays, FLAGS.predict_batch_size)
        return tagging_features.word_predictions(windows, ids, sentences, label_list)

    if FLAGS.do_eval and is_chief(strategy):
        path, dev = read("dev")
        check_tags(path, dev)
        results = ner_metrics.evaluate([s.tags for s in dev], predict(dev))
        logging.info("***** Dev results (%s) *****\n%s", path, _format(results))
        atomic_write_text(os.path.join(FLAGS.output_dir, "eval_results.txt"),
                          _format(results))

    if FLAGS.do_predict and is_chief(strategy):
        path, test = read("test")
        check_tags(path, test)
        predicted = predict(test)
        lines, document = [], None
        for sentence, tags in zip(test, predicted):
            if sentence.document != document:
                lines.append("-DOCSTART- O O\n")
                document = sentence.document
            lines.extend(f"{w} {g} {p}\n" for w, g, p in zip(sentence.words, sentence.tags,
                                                               tags))
            lines.append("\n")
        atomic_write_text(os.path.join(FLAGS.output_dir, "test_predictions.txt"),
                          "".join(lines))
        results = ner_metrics.evaluate([s.tags for s in test], predicted)
        logging.info("***** Test results (%s) *****\n%s", path, _format(results))
        atomic_write_text(os.path.join(FLAGS.output_dir, "test_results.txt"),
                          _format(results))

    if FLAGS.export_dir and is_chief(strategy):
        from training.export import export_tagger
        export_tagger(model, FLAGS.export_dir, FLAGS.vocab_file, FLAGS.do_lower_case,
                      FLAGS.max_seq_length, label_list)
        logging.info("Exported a SavedModel to %s (serving_default: a sentence -> entities "
                     "with character offsets; serving_ids: token ids).", FLAGS.export_dir)


if __name__ == "__main__":
    app.run(main)
