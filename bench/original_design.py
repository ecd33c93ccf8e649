"""The original create_pretraining_data script's design, as a benchmark baseline, built from
this project's modules: read every line into memory, tokenize with the pure-Python
tokenizer into *string* tokens, build instances of strings with one `random.Random` (the
same algorithm, `data_prep.pretraining_instances`, which works on any token type), convert
tokens to ids per instance, and build one protobuf `tf.train.Example` per instance.

Same flags as the original for what the benchmark uses. Not part of the product.

    python bench/original_design.py --input_file=... --output_file=a,b --vocab_file=...
"""

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    parser = argparse.ArgumentParser()
    for name, default in (("input_file", None), ("output_file", None), ("vocab_file", None)):
        parser.add_argument(f"--{name}", default=default, required=True)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--random_seed", type=int, default=12345)
    parser.add_argument("--dupe_factor", type=int, default=10)
    parser.add_argument("--masked_lm_prob", type=float, default=0.15)
    parser.add_argument("--short_seq_prob", type=float, default=0.1)
    opts = parser.parse_args()

    import tensorflow as tf

    from data_prep.pretraining_instances import (InstanceParams, TrainingInstance, VocabInfo,
                                                 create_training_instances)
    from data_prep.pretraining_records import serialize_instance
    from data_prep.tokenization import FullTokenizer

    start = time.time()
    tokenizer = FullTokenizer(opts.vocab_file, True)
    documents = [[]]
    for path in opts.input_file.split(","):
        with open(path, encoding="utf-8", errors="ignore") as f:
            for line in f:
                line = line.strip()
                if not line:
                    documents.append([])
                tokens = tokenizer.tokenize(line)
                if tokens:
                    documents[-1].append(tokens)
    documents = [d for d in documents if d]
    # String tokens: the special tokens and the vocabulary as strings.
    vocab_info = VocabInfo(cls_id="[CLS]", sep_id="[SEP]", mask_id="[MASK]",
                           word_ids=tuple(tokenizer.vocab.keys()),
                           is_continuation=frozenset(t for t in tokenizer.vocab
                                                     if t.startswith("##")))
    params = InstanceParams(opts.max_seq_length, opts.short_seq_prob, opts.masked_lm_prob,
                            opts.max_predictions_per_seq)
    instances = create_training_instances(documents, vocab_info, params, opts.dupe_factor,
                                          random.Random(opts.random_seed))
    outputs = opts.output_file.split(",")
    writers = [tf.io.TFRecordWriter(p) for p in outputs]
    for index, inst in enumerate(instances):
        as_ids = TrainingInstance(tokenizer.convert_tokens_to_ids(inst.input_ids),
                                  inst.segment_ids, inst.masked_lm_positions,
                                  tokenizer.convert_tokens_to_ids(inst.masked_lm_ids),
                                  inst.is_random_next)
        writers[index % len(writers)].write(serialize_instance(
            as_ids, opts.max_seq_length, opts.max_predictions_per_seq))
    for w in writers:
        w.close()
    print(f"Wrote {len(instances):,} instances in {time.time() - start:.1f} s.",
          file=sys.stderr)


if __name__ == "__main__":
    main()
