"""Learn a BERT WordPiece vocabulary from document text files.

Pipeline position: text -> **vocab.txt** -> create_pretraining_data -> ... Needed when
pre-training for a new language or domain. Words are split exactly as the tokenizers will
split them (cleaning, CJK characters, lower-casing and accents, punctuation); tensorflow-
text's WordPiece learner chooses the pieces, "##" suffix pieces included. The result has
the released vocabularies' layout: [PAD]=0, [unused0..N-1], [UNK], [CLS], [SEP], [MASK],
then the learned pieces. At the end it reports the share of the corpus's words that become
[UNK] (warning, with the flag that fixes it, above 0.5%), and before it starts, whether
--do_lower_case would change the letters of the corpus's script (`text.casing`).

    python build_vocab.py --input_file='docs/*.txt' --output_file=vocab.txt \
      --vocab_size=30522 --do_lower_case

With `--extend=<a released vocab.txt>` it learns nothing: it writes that vocabulary with
up to `--domain_words` frequent words of the input that it splits into several pieces in
its `[unusedK]` lines, every other line unchanged (`text.domain_words`), and names each.
A model's rows for those lines are then its unused slots' (never trained):
`pretrain_from_text.py --init_checkpoint=... --domain_words=N` starts them from the
words' old pieces and continues pre-training.
"""

import dataclasses
import sys
import time
from typing import Optional

from absl import flags, logging

import cli
from cli.flags import configs_from_flags, define_settings
from common.settings import setting
from common.shared_settings import Casing


@dataclasses.dataclass(frozen=True, kw_only=True)
class VocabularySettings(Casing):
    """The tool's settings."""
    input_file: str = setting(help="Text file(s): comma-separated files or globs.")
    output_file: str = setting(help="The vocabulary file to write.")
    vocab_size: int = setting(30522, help="Maximum vocabulary size, reserved tokens "
                              "included.")
    num_unused: int = setting(99, help="Number of [unusedN] slots before [UNK] (99 puts "
                              "[UNK] at 100, [CLS] at 101, as in the released vocabularies).")
    lower_thresh: int = setting(1, help="Lowest count a learned piece may have (the count "
                                "threshold that gives --vocab_size is searched for above it).")
    extend: Optional[str] = setting(
        None, help="A released vocab.txt to extend instead of learning one: up to "
        "--domain_words frequent words of the input that it splits into several pieces go "
        "into its [unusedK] lines, every other line unchanged.")
    domain_words: int = setting(500, help="With --extend: the most words to add.")
    max_unique_chars: int = setting(
        0, help="Alphabet size limit: the most frequent characters are kept (a word with "
        "another becomes [UNK]). 0: fit the corpus (at least 1,000, and as many as cover "
        "99.99%% of its characters, CJK included).")


define_settings(VocabularySettings)
FLAGS = flags.FLAGS
UNKNOWN_WARNING = 0.005  # share of the corpus's words that may become [UNK] unannounced


def main(_):
    configs_from_flags(FLAGS, VocabularySettings)  # required settings given, values checked
    from common import file_io
    from common.progress import Progress
    from data_prep import corpus
    from text import casing, vocabulary

    files = corpus.expand_input_patterns(FLAGS.input_file)
    file_io.refuse_inputs_as_outputs({"output_file": FLAGS.output_file}, {"input_file": files})
    if FLAGS.extend:
        file_io.refuse_inputs_as_outputs({"output_file": FLAGS.output_file},
                                         {"extend": FLAGS.extend})
    casing.warn_about_input(files, FLAGS.do_lower_case)
    start = time.time()
    progress = Progress("build_vocab: counting words", ["lines"])
    counts = vocabulary.count_words_in_files(files, FLAGS.do_lower_case, progress=progress)
    progress.close()
    if not counts:
        raise ValueError(f"{', '.join(files)}: no words in the input files.")
    if FLAGS.extend:
        return extend(counts)
    print(f"{len(counts):,} distinct words, {sum(counts.values()):,} in all; learning "
          f"{FLAGS.vocab_size:,} pieces...", file=sys.stderr)
    def report(threshold, size, seconds):
        print(f"  pieces seen {threshold:,}+ times: {size:,} tokens ({seconds:.1f} s)",
              file=sys.stderr, flush=True)

    tokens = vocabulary.learn_from_counts(counts, FLAGS.vocab_size, FLAGS.num_unused,
                                          FLAGS.lower_thresh, FLAGS.max_unique_chars or None,
                                          report=report)
    vocabulary.write_vocabulary(tokens, FLAGS.output_file)
    suffixes = sum(t.startswith(vocabulary.JOINER) for t in tokens)
    short = "" if len(tokens) == FLAGS.vocab_size else (
        f" (of {FLAGS.vocab_size:,} asked for: the corpus holds no more pieces)")
    print(f"Wrote {len(tokens):,} tokens{short}, {suffixes:,} of them '##' suffix pieces, "
          f"to {FLAGS.output_file} in {time.time() - start:.1f} s.", file=sys.stderr)
    report_coverage(vocabulary.coverage(counts, tokens))


def extend(counts):
    """--extend: the released vocabulary with the domain words in its unused lines."""
    from text import domain_words, vocabulary
    if FLAGS.domain_words < 1:
        raise ValueError(f"--domain_words={FLAGS.domain_words}: must be at least 1.")
    lines, placed = domain_words.extend_vocabulary(FLAGS.extend, counts,
                                                   FLAGS.domain_words)
    vocabulary.write_vocabulary(lines, FLAGS.output_file)
    for line in domain_words.describe(placed, len(domain_words.unused_slots(lines)) +
                                      len(placed)):
        print(line, file=sys.stderr)
    print(f"Wrote {FLAGS.output_file}: {FLAGS.extend} with {len(placed):,} domain words "
          f"(every other line unchanged).", file=sys.stderr)


def report_coverage(found):
    """The [UNK] share the vocabulary leaves on its own corpus; a warning naming the fix
    when it is above `UNKNOWN_WARNING`."""
    print(f"On the corpus it learned from: {found['unknown_words']:.3%} of the words become "
          f"[UNK], {found['outside_chars']:.3%} of the characters are outside the alphabet "
          f"({found['alphabet']:,} of the corpus's {found['corpus_chars']:,} distinct "
          f"characters kept).", file=sys.stderr)
    if found["unknown_words"] <= UNKNOWN_WARNING:
        return
    fix = (f"raise --max_unique_chars (now {FLAGS.max_unique_chars}; 0 fits the corpus)"
           if FLAGS.max_unique_chars else
           f"raise --vocab_size (now {FLAGS.vocab_size:,}): the alphabet may take half of it")
    logging.warning("%s: %.2f%% of its words become [UNK] with this vocabulary (words "
                    "holding one of the %d characters left out of the alphabet); to keep "
                    "them, %s.", FLAGS.input_file, 100 * found["unknown_words"],
                    found["corpus_chars"] - found["alphabet"], fix)


if __name__ == "__main__":
    cli.run(main)
