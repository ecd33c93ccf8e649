"""Print pre-training instances decoded back to tokens, and the files' statistics.

Pipeline position: after create_pretraining_data, to check what was made before spending
GPU-days on it.

    python -m data_prep.inspect_tfrecord --input_file='out/*.tfrecord' --vocab_file=vocab.txt
      [--num_examples=5] [--max_records=100000]

A masked position shows as `[MASK](original)`, `random(original)` or `=kept=`; `|` marks
the segment boundary.
"""

import collections
import dataclasses
import os
import sys

from absl import flags

if not __package__:  # run by its path: this project's packages import from the
    # repository root, as under `python -m data_prep.<tool>`
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cli  # noqa: E402
from cli.flags import configs_from_flags, define_settings  # noqa: E402
from common.settings import setting  # noqa: E402
from common.shared_settings import VocabularyFile  # noqa: E402


@dataclasses.dataclass(frozen=True, kw_only=True)
class InspectionSettings(VocabularyFile):
    """The tool's settings (the vocabulary: the one the records were made with)."""
    input_file: str = setting(help="TFRecord file(s): comma-separated files or globs.")
    num_examples: int = setting(5, help="How many instances to print.")
    max_records: int = setting(0, help="Read at most this many records for the "
                               "statistics (0: all).")


define_settings(InspectionSettings)
FLAGS = flags.FLAGS


def render(example, inv_vocab):
    """One instance as a line of tokens with masked positions and segments marked."""
    n = sum(example["input_mask"])
    k = int(sum(example["masked_lm_weights"]))
    labels = dict(zip(example["masked_lm_positions"][:k], example["masked_lm_ids"][:k]))
    out, previous_segment = [], 0
    for i in range(n):
        if example["segment_ids"][i] != previous_segment:
            out.append("|")
            previous_segment = example["segment_ids"][i]
        token = inv_vocab.get(example["input_ids"][i], f"<id {example['input_ids'][i]}>")
        if i in labels:
            original = inv_vocab.get(labels[i], f"<id {labels[i]}>")
            token = f"={original}=" if labels[i] == example["input_ids"][i] \
                else f"{token}({original})"
        out.append(token)
    label = "random next" if example["next_sentence_labels"][0] else "actual next"
    return f"[{label}, {n} tokens, {k} masked] " + " ".join(out)


def statistics(examples, mask_id):
    counts = collections.Counter()
    lengths = collections.Counter()
    for e in examples:
        n = sum(e["input_mask"])
        k = int(sum(e["masked_lm_weights"]))
        lengths[(n // 16) * 16] += 1
        counts["instances"] += 1
        counts["tokens"] += n
        counts["masked"] += k
        counts["random_next"] += e["next_sentence_labels"][0]
        for p, label in zip(e["masked_lm_positions"][:k], e["masked_lm_ids"][:k]):
            token = e["input_ids"][p]
            counts["as_mask" if token == mask_id else
                   "kept" if token == label else "random_token"] += 1
    return counts, lengths


def main(_):
    configs_from_flags(FLAGS, InspectionSettings)  # required settings given, values checked
    import itertools

    from data_prep import corpus
    from data_prep import pretraining_records as records
    from text.tokenization import load_vocab

    vocab = load_vocab(FLAGS.vocab_file)
    inv_vocab = {i: t for t, i in vocab.items()}
    files = corpus.expand_input_patterns(FLAGS.input_file)
    examples = itertools.chain.from_iterable(records.read_examples(f) for f in files)
    if FLAGS.max_records:
        examples = itertools.islice(examples, FLAGS.max_records)
    shown = []

    def tap(stream):
        for e in stream:
            if len(shown) < FLAGS.num_examples:
                shown.append(e)
                print(render(e, inv_vocab) + "\n")
            yield e

    counts, lengths = statistics(tap(examples), vocab.get("[MASK]"))
    n = max(counts["instances"], 1)
    m = max(counts["masked"], 1)
    print(f"{counts['instances']:,} instances in {len(files)} file(s); mean length "
          f"{counts['tokens'] / n:.1f} tokens; {counts['masked'] / max(counts['tokens'], 1):.1%}"
          f" of tokens masked ({counts['as_mask'] / m:.1%} [MASK], {counts['kept'] / m:.1%} "
          f"kept, {counts['random_token'] / m:.1%} random); "
          f"{counts['random_next'] / n:.1%} random next sentences.")
    print("length histogram: " + ", ".join(f"{lo}-{lo + 15}: {c}"
                                           for lo, c in sorted(lengths.items())))


def run_as_script():
    """The tool's command line (also the root script's, where there is one)."""
    cli.run(main)


if __name__ == "__main__":
    run_as_script()
