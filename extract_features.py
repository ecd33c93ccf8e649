"""Extract fixed contextual embeddings from a BERT checkpoint (feature-based approach).

Pipeline position: after pre-training or fine-tuning. Same flags and JSON-lines output as
the original release's `extract_features.py`; the checkpoint may be a Google TF1
checkpoint, a Hugging Face model.safetensors or this project's TF2 checkpoint.

    python extract_features.py --input_file=input.txt --output_file=output.jsonl \
      --vocab_file=uncased_L-12_H-768_A-12/vocab.txt \
      --bert_config_file=uncased_L-12_H-768_A-12/bert_config.json \
      --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \
      --layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8
"""

import json
import time

from absl import flags, logging

from data_prep import cli

flags.DEFINE_string("input_file", None,
                    "Text file with one example per line; 'text_a ||| text_b' for a pair.")
flags.DEFINE_string("output_file", None, "JSON-lines file to write, one object per line.")
flags.DEFINE_string("layers", "-1,-2,-3,-4",
                    "Comma-separated indexes of the encoder layers to output (-1 = last).")
flags.DEFINE_string("bert_config_file", None,
                    "The bert_config.json (or Hugging Face config.json) of the model.")
flags.DEFINE_integer("max_seq_length", 128,
                     "Maximum total input length after WordPiece, [CLS] and [SEP] included. "
                     "Longer inputs are truncated.")
flags.DEFINE_string("init_checkpoint", None,
                    "Checkpoint to read: a TF1 prefix, a folder, or a model.safetensors.")
flags.DEFINE_string("vocab_file", None, "The vocabulary the model was trained with.")
flags.DEFINE_bool("do_lower_case", True,
                  "Lower-case and strip accents: True for uncased models, False for cased.")
flags.DEFINE_integer("batch_size", 32, "Batch size for prediction.")
# Accepted so that the original's command lines keep working; TPU use goes through
# tf.distribute in this implementation, and embeddings are always gathered.
flags.DEFINE_bool("use_tpu", False, "Accepted for compatibility; has no effect here.")
flags.DEFINE_string("master", None, "Accepted for compatibility; has no effect here.")
flags.DEFINE_integer("num_tpu_cores", 8, "Accepted for compatibility; has no effect here.")
flags.DEFINE_bool("use_one_hot_embeddings", False,
                  "Accepted for compatibility; has no effect here.")

FLAGS = flags.FLAGS


def main(_):
    import modeling
    from data_prep import file_io, packing
    from data_prep.tokenization import FullTokenizer
    from modeling import feature_extraction

    file_io.refuse_inputs_as_outputs(
        {"output_file": FLAGS.output_file},
        {name: FLAGS[name].value for name in ("input_file", "vocab_file", "bert_config_file",
                                               "init_checkpoint")})
    config = modeling.BertConfig.from_json_file(FLAGS.bert_config_file)
    config.check_max_seq_length(FLAGS.max_seq_length)
    layer_indexes = feature_extraction.parse_layer_indexes(FLAGS.layers,
                                                           config.num_hidden_layers)
    tokenizer = FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    if max(tokenizer.vocab.values()) >= config.vocab_size:
        raise ValueError(f"{FLAGS.vocab_file} has ids up to {max(tokenizer.vocab.values())} "
                         f"but vocab_size is {config.vocab_size} in {FLAGS.bert_config_file}.")
    examples = feature_extraction.read_examples(FLAGS.input_file)
    packed = [(uid, packing.pack(tokenizer, a, b, FLAGS.max_seq_length))
              for uid, a, b in examples]
    logging.info("Read %d examples from %s.", len(packed), FLAGS.input_file)

    encoder = modeling.BertEncoder(config)
    report = modeling.load_checkpoint(encoder, FLAGS.init_checkpoint)
    if report.not_filled:
        raise ValueError(f"{FLAGS.init_checkpoint} lacks encoder weights "
                         f"{report.not_filled[:5]}...; features would be random.")

    start, written = time.time(), 0
    with file_io.atomic_output(FLAGS.output_file, "w") as out:
        for obj in feature_extraction.extract(encoder, packed, layer_indexes,
                                              FLAGS.batch_size):
            out.write(json.dumps(obj) + "\n")
            written += 1
            if written % 1000 == 0:
                logging.info("%d / %d examples (%.1f examples/s)", written, len(packed),
                             written / (time.time() - start))
    logging.info("Wrote %d examples to %s in %.1f s.", written, FLAGS.output_file,
                 time.time() - start)


if __name__ == "__main__":
    flags.mark_flags_as_required(["input_file", "output_file", "vocab_file",
                                  "bert_config_file", "init_checkpoint"])
    cli.run(main)
