"""Extract fixed contextual embeddings from a BERT checkpoint (feature-based approach).

Pipeline position: after pre-training or fine-tuning. Same flags and JSON-lines output as
the original release's `extract_features.py` (and, with `--pooling`, a sentence vector per
line; with `--output_attentions`, each layer's attention probabilities; `--output_format=npy`
for large inputs); the checkpoint may be a Google TF1
checkpoint, a Hugging Face model.safetensors or this project's TF2 checkpoint.

    python extract_features.py --input_file=input.txt --output_file=output.jsonl \
      --vocab_file=uncased_L-12_H-768_A-12/vocab.txt \
      --bert_config_file=uncased_L-12_H-768_A-12/bert_config.json \
      --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \
      --layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8
"""

import dataclasses
import json
import time
from typing import Optional

from absl import app, flags, logging

import cli
from cli.flags import configs_from_flags, define_settings
from common.settings import setting
from common.shared_settings import ModelVocabulary, SequenceLength, WeightedModelFiles


@dataclasses.dataclass(frozen=True, kw_only=True)
class FeatureSettings(WeightedModelFiles, ModelVocabulary, SequenceLength):
    """This script's settings, the original's names."""
    input_file: str = setting(help="Text file with one example per line; 'text_a ||| "
                              "text_b' for a pair.")
    output_file: str = setting(help="JSON-lines file to write, one object per line.")
    layers: str = setting("-1,-2,-3,-4", help="Comma-separated indexes of the encoder "
                          "layers to output: -1 = the last block, 0 = the first block; "
                          "'embeddings' = the embedding layer (its \"index\" in the output "
                          "is \"embeddings\").")
    batch_size: int = setting(32, help="Batch size for prediction.")
    pooling: str = setting(
        "none", choices=("none", "cls", "mean", "pooled"),
        help="Add a sentence vector per line as \"embedding\": cls (the [CLS] vector), "
        "mean (the mean over real tokens; how all-MiniLM-L6-v2 is meant to be used), each "
        "averaged over --layers, or pooled (the tanh pooler output). none: the original's "
        "output only.")
    output_format: str = setting(
        "jsonl", choices=("jsonl", "npy"),
        help="jsonl: the original's JSON lines; npy: only the sentence vectors, as one "
        "float32 matrix [lines, hidden_size] in --output_file, and the lines in "
        "--output_file with .lines.txt for .npy (needs --pooling).")
    output_attentions: bool = setting(
        False, help="Add each layer's attention probabilities to each line as "
        "\"attentions\": [{\"index\": layer (0 = the first block), \"values\": heads x "
        "tokens x tokens}] over the line's tokens, as Hugging Face's output_attentions "
        "(jsonl only).")


define_settings(FeatureSettings)


# Accepted so that the original's command lines keep working; TPU use goes through
# tf.distribute in this implementation, and embeddings are always gathered.
@dataclasses.dataclass(frozen=True, kw_only=True)
class TpuSettings:
    """The original's TPU settings: no effect here."""
    use_tpu: bool = setting(False, help="Accepted for compatibility; has no effect here.")
    master: Optional[str] = setting(None, help="Accepted for compatibility; has no effect "
                                    "here.")
    num_tpu_cores: int = setting(8, help="Accepted for compatibility; has no effect here.")
    use_one_hot_embeddings: bool = setting(False, help="Accepted for compatibility; has "
                                           "no effect here.")


define_settings(TpuSettings)
FLAGS = flags.FLAGS


def main(_):
    configs_from_flags(FLAGS, FeatureSettings)  # required settings given, values checked
    import numpy as np

    import modeling
    from common import file_io
    from common.progress import Progress
    from modeling import feature_extraction
    from text import packing
    from text.tokenization import FullTokenizer, check_vocabulary_fits

    if FLAGS.output_format == "npy" and FLAGS.pooling == "none":
        raise app.UsageError("--output_format=npy writes sentence vectors: set --pooling to "
                             "cls, mean or pooled.")
    if FLAGS.output_format == "npy" and FLAGS.output_attentions:
        raise app.UsageError("--output_attentions writes the attention probabilities into "
                             "each JSON line: use --output_format=jsonl (npy holds sentence "
                             "vectors only).")
    outputs = [FLAGS.output_file] + ([lines_file(FLAGS.output_file)]
                                     if FLAGS.output_format == "npy" else [])
    file_io.refuse_inputs_as_outputs(
        {"output_file": outputs},
        {name: FLAGS[name].value for name in ("input_file", "vocab_file", "bert_config_file",
                                               "init_checkpoint")})
    config = modeling.BertConfig.from_json_file(FLAGS.bert_config_file)
    config.check_max_seq_length(FLAGS.max_seq_length)
    layer_indexes = feature_extraction.parse_layer_indexes(FLAGS.layers,
                                                           config.num_hidden_layers)
    check_vocabulary_fits(FLAGS.vocab_file, config.vocab_size, FLAGS.bert_config_file,
                          FLAGS.vocab_smaller_than_model)
    tokenizer = FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    examples = feature_extraction.read_examples(FLAGS.input_file)
    packed = [(uid, packing.pack(tokenizer, a, b, FLAGS.max_seq_length))
              for uid, a, b in examples]
    logging.info("Read %d examples from %s.", len(packed), FLAGS.input_file)

    with modeling.deferred_draws() as deferred:  # what the checkpoint fills is not drawn
        encoder = modeling.BertEncoder(config)
    report = modeling.load_checkpoint(encoder, FLAGS.init_checkpoint, deferred=deferred)
    if report.not_filled:
        raise ValueError(f"{FLAGS.init_checkpoint} lacks encoder weights "
                         f"{report.not_filled[:5]}...; features would be random.")

    start = time.time()
    progress = Progress("extract_features", ["examples"], total=("examples", len(packed)))
    if FLAGS.output_format == "npy":
        vectors = []
        for _, vector in feature_extraction.embed(encoder, packed, layer_indexes,
                                                  FLAGS.batch_size, FLAGS.pooling):
            vectors.append(vector)
            progress.update(examples=1)
        with file_io.atomic_paths(outputs) as (matrix_tmp, lines_tmp):
            with open(matrix_tmp, "wb") as f:
                np.save(f, np.stack(vectors).astype(np.float32))
            with open(lines_tmp, "w", encoding="utf-8") as f:
                f.write("".join(f"{a}{' ||| ' + b if b is not None else ''}\n"
                                for _, a, b in examples))
    else:
        with file_io.atomic_output(FLAGS.output_file, "w") as out:
            for obj in feature_extraction.extract(encoder, packed, layer_indexes,
                                                  FLAGS.batch_size, FLAGS.pooling,
                                                  FLAGS.output_attentions):
                out.write(json.dumps(obj) + "\n")
                progress.update(examples=1)
    progress.close()
    logging.info("Wrote %d examples to %s in %.1f s.", len(packed), ", ".join(outputs),
                 time.time() - start)


def lines_file(output_file):
    """emb.npy -> emb.lines.txt: the input lines, one per row of the matrix."""
    stem = output_file[:-len(".npy")] if output_file.endswith(".npy") else output_file
    return stem + ".lines.txt"


if __name__ == "__main__":
    cli.run(main)
