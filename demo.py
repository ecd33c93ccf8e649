"""The main job on an embedded default: every stage that exists so far, end to end, on
`demo/corpus.txt`, in a minute on two CPU cores, with no download.

Stages (grown as the project grows: vocabulary -> TFRecords -> pre-training ->
fine-tuning -> SavedModel):
  1. learn a WordPiece vocabulary from the corpus;
  2. tokenize the corpus with the Python tokenizer and the in-graph one, and compare;
  3. write masked-LM / next-sentence pre-training TFRecords (create_pretraining_data's
     fast mode) and decode one instance back;
  4. pre-train a small BERT on those TFRecords for a few dozen steps (the training loop
     of run_pretraining.py) and save it as a Google-format checkpoint + bert_config.json;
  5. load that checkpoint back and check the activations are identical;
  6. extract contextual features (extract_features.py's JSON lines) for three sentences;
  7. fine-tune the pre-trained model on the bundled sentiment set (demo/sentiment, SST-2
     layout) with run_classifier.py's reader, task and loop, and report dev accuracy;
  8. export a SavedModel that takes raw strings, load it back and classify new sentences.

    python demo.py [--output_dir=demo_output]
"""

import json
import os
import time

from absl import app, flags

flags.DEFINE_string("output_dir", "demo_output", "Folder for everything the demo writes.")
flags.DEFINE_integer("vocab_size", 1000, "Size of the vocabulary to learn.")
flags.DEFINE_integer("pretraining_steps", 80, "Pre-training steps of the small model.")
flags.DEFINE_integer("seed", 12345, "Seed for weights, dropout and shuffling.")
FLAGS = flags.FLAGS

HERE = os.path.dirname(os.path.abspath(__file__))


def stage(number, title):
    print(f"\n[{number}] {title}", flush=True)


def main(_):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import tensorflow as tf

    import modeling
    from data_prep import packing, vocabulary
    from data_prep.graph_tokenizer import GraphTokenizer
    from data_prep.tokenization import FullTokenizer
    from modeling import feature_extraction
    from modeling.file_io import atomic_output

    import keras
    keras.utils.set_random_seed(FLAGS.seed)
    out = FLAGS.output_dir
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    corpus_file = os.path.join(HERE, "demo", "corpus.txt")
    with open(corpus_file, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    sentiment_dir = os.path.join(HERE, "demo", "sentiment")
    from data_prep.classifier_data import get_processor
    sentiment = get_processor("SST-2", sentiment_dir)
    sentiment_text = [e.text_a for e in sentiment.get_examples("train")]

    stage(1, "Vocabulary")
    tokens = vocabulary.learn_vocabulary(lines + sentiment_text, FLAGS.vocab_size)
    vocab_file = os.path.join(out, "vocab.txt")
    vocabulary.write_vocabulary(tokens, vocab_file)
    print(f"    learned {len(tokens)} WordPiece tokens from "
          f"{len(lines) + len(sentiment_text)} sentences "
          f"-> {vocab_file}")

    stage(2, "Tokenization (Python and in-graph)")
    tokenizer = FullTokenizer(vocab_file, do_lower_case=True)
    graph_tokenizer = GraphTokenizer(vocab_file, do_lower_case=True)
    python_ids = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(s)) for s in lines]
    graph_ids = graph_tokenizer.tokenize(tf.constant(lines)).to_list()
    agree = sum(a == b for a, b in zip(python_ids, graph_ids))
    print(f"    {lines[10]!r}\n    -> {tokenizer.tokenize(lines[10])}")
    print(f"    Python and tensorflow-text tokenizers agree on {agree}/{len(lines)} sentences")
    if agree != len(lines):
        raise SystemExit("tokenizers disagree")

    stage(3, "Pre-training TFRecords")
    from data_prep import fast_pretraining, pretraining_records
    from data_prep.inspect_tfrecord import render
    from data_prep.pretraining_instances import InstanceParams
    records_file = os.path.join(out, "pretraining.tfrecord")
    params = InstanceParams(max_seq_length=64, max_predictions_per_seq=10)
    job = fast_pretraining.Job(pieces=fast_pretraining.plan_pieces([corpus_file]),
                               output_files=[records_file], vocab_file=vocab_file,
                               do_lower_case=True, params=params, dupe_factor=5, seed=12345)
    totals = fast_pretraining.run([job])
    first = next(pretraining_records.read_examples(records_file))
    print(f"    {totals['instances']} instances from {totals['documents']} documents "
          f"({totals['masked'] / totals['tokens']:.1%} of tokens masked) -> {records_file}")
    print("    " + render(first, tokenizer.inv_vocab)[:300] + " ...")

    stage(4, "Short pre-training and Google-format checkpoint")
    from data_prep.pretraining_input import pretraining_dataset
    from training.loop import Trainer
    from training.optimizers import create_optimizer
    from training.pretraining_task import PretrainingTask
    config = modeling.BertConfig(vocab_size=len(tokens), hidden_size=64, num_hidden_layers=2,
                                 num_attention_heads=4, intermediate_size=256,
                                 max_position_embeddings=128, type_vocab_size=2)
    model = modeling.BertPretrainer(config)
    model_dir = os.path.join(out, "model")
    steps = FLAGS.pretraining_steps
    trainer = Trainer(tf.distribute.get_strategy(), model, PretrainingTask(),
                      create_optimizer(model, 2e-3, steps, steps // 10),
                      os.path.join(out, "pretraining"))
    history = []
    trainer.train(lambda context, skip: pretraining_dataset(
                      [records_file], 16, 64, 10, is_training=True, seed=1,
                      skip_batches=skip),
                  steps, steps_per_loop=steps, save_checkpoints_steps=steps,
                  log_steps=steps // 4, global_batch_size=16,
                  hooks=[lambda step, logs: history.append((step, logs))])
    for step, logs in history:
        print(f"    step {step:3d}: masked-LM loss {logs['masked_lm_loss']:.3f}, "
              f"next-sentence loss {logs['next_sentence_loss']:.3f}, "
              f"{logs['sequences_per_second']:.0f} sequences/s")
    config.to_json_file(os.path.join(model_dir, "bert_config.json"))
    prefix = modeling.save_google_checkpoint(model, os.path.join(model_dir, "bert_model.ckpt"))
    names = tf.train.list_variables(prefix)
    print(f"    BERT with {model.count_params():,} parameters; wrote {len(names)} variables "
          f"under the original names to {prefix}")

    stage(5, "Load it back")
    fresh = modeling.BertPretrainer(modeling.BertConfig.from_json_file(
        os.path.join(model_dir, "bert_config.json")))
    report = modeling.load_checkpoint(fresh, prefix, strict=True)
    packed = packing.pack(tokenizer, lines[0], lines[1], 64)
    batch = {k: np.array([getattr(packed, k)], np.int32)
             for k in ("input_ids", "input_mask", "segment_ids")}
    diff = np.max(np.abs(model(batch)["sequence_output"] - fresh(batch)["sequence_output"]))
    print(f"    loaded {len(report.loaded)} weights ({report.format}); largest activation "
          f"difference after the round trip: {diff}")

    stage(6, "Feature extraction")
    examples = [(i, lines[i], None) for i in (0, 9, 16)]
    packed = [(uid, packing.pack(tokenizer, a, b, 64)) for uid, a, b in examples]
    features_file = os.path.join(out, "features.jsonl")
    with atomic_output(features_file) as f:
        for obj in feature_extraction.extract(fresh.encoder, packed, [-1, -2], batch_size=8):
            f.write(json.dumps(obj) + "\n")
    with open(features_file) as f:
        first = json.loads(f.readline())
    print(f"    wrote {len(examples)} examples to {features_file}; example 0 has "
          f"{len(first['features'])} tokens x {len(first['features'][0]['layers'])} layers x "
          f"{len(first['features'][0]['layers'][0]['values'])} values")

    stage(7, "Fine-tuning on the bundled sentiment set")
    from data_prep import classifier_features
    from training import classification_metrics
    from training.classification_task import ClassificationTask, predict_logits
    labels = sentiment.get_labels()
    classifier = modeling.BertClassifier(fresh.encoder, len(labels))  # pre-trained encoder
    cache = os.path.join(out, "sentiment")

    def sentiment_features(split):
        return classifier_features.cached_features(
            sentiment.get_examples(split), sentiment.path(split), cache, split, vocab_file,
            True, 32, labels, False)

    train_path, dev_path = sentiment_features("train"), sentiment_features("dev")
    task = ClassificationTask()
    steps = 200  # 10 epochs: 97.5-100% dev accuracy over seeds 0-3
    Trainer(tf.distribute.get_strategy(), classifier, task,
            create_optimizer(classifier, 5e-4, steps, steps // 10), cache).train(
        lambda context, skip: classifier_features.classifier_dataset(
            train_path, 16, 32, False, is_training=True, seed=1, skip_batches=skip),
        steps, steps_per_loop=steps, save_checkpoints_steps=steps, log_steps=0)
    logits, dev_labels = predict_logits(classifier, classifier_features.classifier_dataset(
        dev_path, 16, 32, False, is_training=False))
    accuracy = classification_metrics.accuracy(logits.argmax(-1), dev_labels)
    print(f"    {steps} steps on {len(sentiment_text)} sentences; dev accuracy "
          f"{accuracy:.1%} on {len(dev_labels)} sentences")

    stage(8, "SavedModel: raw strings in, labels out")
    from training.export import export_classifier
    export_dir = os.path.join(out, "saved_model")
    export_classifier(classifier, export_dir, vocab_file, True, 32, labels, pair=False)
    served = tf.saved_model.load(export_dir).signatures["serving_default"]
    new = ["The soundtrack was wonderful from start to finish .",
           "The plot was boring and slow ."]
    result = served(text_a=tf.constant(new))
    for text, label, probs in zip(new, result["label"].numpy(),
                                  result["probabilities"].numpy()):
        print(f"    {text!r} -> label {label.decode()} (p = {probs.max():.2f})")
    print(f"\nDone in {time.time() - t0:.1f} s. Everything is in {out}/")


if __name__ == "__main__":
    app.run(main)
