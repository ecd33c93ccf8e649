"""Print pre-training instances decoded back to tokens, and the files' statistics.

Pipeline position: after create_pretraining_data, to check what was made before spending
GPU-days on it.

    python inspect_tfrecord.py --input_file='out/*.tfrecord' --vocab_file=vocab.txt
      [--num_examples=5] [--max_records=100000]

A masked position shows as `[MASK](original)`, `random(original)` or `=kept=`; `|` marks
the segment boundary.
"""

import dataclasses

from absl import flags

import cli
from cli.flags import configs_from_flags, define_settings
from common.settings import setting
from common.shared_settings import VocabularyFile
from data_prep.record_inspection import render, statistics


@dataclasses.dataclass(frozen=True, kw_only=True)
class InspectionSettings(VocabularyFile):
    """The tool's settings (the vocabulary: the one the records were made with)."""
    input_file: str = setting(help="TFRecord file(s): comma-separated files or globs.")
    num_examples: int = setting(5, help="How many instances to print.")
    max_records: int = setting(0, help="Read at most this many records for the "
                               "statistics (0: all).")


define_settings(InspectionSettings)
FLAGS = flags.FLAGS


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


if __name__ == "__main__":
    cli.run(main)
