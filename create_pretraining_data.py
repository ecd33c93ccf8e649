"""Create masked-LM / next-sentence pre-training TFRecords from document text files.

Pipeline position: documents (one sentence per line, blank line between documents; or
one text per line, `--line_by_line`) -> **TFRecords** -> run_pretraining.py. Same flags and
features as the original release's script, in two modes:

  --mode=original  the original's output, instance for instance (one process; faster only
                   through C++ tokenization);
  --mode=fast      (default) the same algorithm and distributions, streamed in pieces,
                   vectorised and spread over --num_workers processes; deterministic for a
                   given seed, input and worker count (see data_prep/fast_pretraining.py).

    python create_pretraining_data.py --input_file='docs/*.txt' \
      --output_file=out/shard-0.tfrecord,out/shard-1.tfrecord --vocab_file=vocab.txt \
      --do_lower_case --max_seq_length=128 --max_predictions_per_seq=20 \
      --masked_lm_prob=0.15 --random_seed=12345 --dupe_factor=10
"""

import dataclasses
import os
import sys
import time
from typing import Optional

from absl import flags, logging

import cli
from cli.flags import configs_from_flags, define_settings
from common.settings import setting
from common.shared_settings import SequenceLength, Vocabulary, WholeWordMasking
from data_prep import pretraining_data


@dataclasses.dataclass(frozen=True, kw_only=True)
class CreationSettings(Vocabulary, SequenceLength, WholeWordMasking):
    """The tool's settings, the original's names (the vocabulary, casing and length are
    those of the model the records are for)."""
    input_file: str = setting(help="Input raw text file(s): comma-separated list of "
                              "files or globs.")
    output_file: str = setting(help="Output TFRecord file(s), comma-separated.")
    max_predictions_per_seq: int = setting(
        20, help="Maximum number of masked-LM predictions per sequence.")
    random_seed: int = setting(12345, help="Random seed for data generation.")
    dupe_factor: int = setting(10, help="Number of times to duplicate the input data "
                               "(with different masks).")
    masked_lm_prob: float = setting(0.15, help="Masked-LM probability.")
    mask_token_prob: float = setting(0.8, help="Share of the chosen positions that become "
                                     "[MASK] (the paper's Table 8 varies it).")
    random_token_prob: float = setting(0.1, help="Share of the chosen positions that "
                                       "become a random vocabulary entry; the rest keep "
                                       "their token.")
    short_seq_prob: float = setting(0.1, help="Probability of creating sequences shorter "
                                    "than the maximum length.")
    sentence_order: bool = setting(False, help="Label 1 is segments A and B in swapped "
                                   "order instead of B from another document (ALBERT's "
                                   "sentence-order prediction; train with "
                                   "--objective=mlm_nsp). Not the original's.")
    line_by_line: Optional[bool] = setting(
        None, help="--mode=fast: each line of the input is a text of its own (a review, a "
        "tweet, an abstract), not a sentence of a document: the texts are packed into "
        "full sequences for the masked LM (train with --objective=mlm: the next-sentence "
        "labels then pair texts, not sentences). Default: so for each file with no blank "
        "line between two lines of text, said in one line; false: such a file is one "
        "document, as the original reads it.")
    mode: str = setting("fast", choices=("fast", "original"),
                        help="'original': identical output to the original script; "
                        "'fast': same algorithm, parallel and streamed.")
    num_workers: int = setting(os.cpu_count() or 1, help="--mode=fast: worker processes "
                               "(at most one per output file).")
    num_shards: int = setting(1, help="--mode=fast: split the input pieces over this "
                              "many machines...")
    shard_index: int = setting(0, help="...and process only this machine's share "
                               "(0-based).")
    piece_mb: float = setting(1.0, help="--mode=fast: size of the input pieces processed "
                              "independently (bounds memory per worker).")
    max_invalid_utf8_share: float = setting(
        0.5, help="Largest share of an input file's lines that may hold bytes that are "
        "not UTF-8 (they are dropped, as the original does); a file with more is refused "
        "as binary or in another encoding.")
    tokenizer: str = setting("graph", choices=("graph", "python"),
                             help="--mode=original: 'graph' (tensorflow-text, C++) or "
                             "'python' (the original's pure-Python tokenizer); both give "
                             "identical ids.")


define_settings(CreationSettings)
FLAGS = flags.FLAGS


def _params():
    from data_prep.pretraining_instances import InstanceParams
    return InstanceParams(max_seq_length=FLAGS.max_seq_length,
                          short_seq_prob=FLAGS.short_seq_prob,
                          masked_lm_prob=FLAGS.masked_lm_prob,
                          max_predictions_per_seq=FLAGS.max_predictions_per_seq,
                          do_whole_word_mask=FLAGS.do_whole_word_mask,
                          mask_token_prob=FLAGS.mask_token_prob,
                          random_token_prob=FLAGS.random_token_prob,
                          sentence_order=FLAGS.sentence_order)


def _validate():
    if FLAGS.max_seq_length < 5:
        raise ValueError(f"--max_seq_length={FLAGS.max_seq_length}: need at least 5 "
                         f"([CLS] a [SEP] b [SEP]).")
    if not 0 < FLAGS.masked_lm_prob < 1:
        raise ValueError(f"--masked_lm_prob={FLAGS.masked_lm_prob} must be in (0, 1).")
    shares = (FLAGS.mask_token_prob, FLAGS.random_token_prob)
    if min(shares) < 0 or sum(shares) > 1 + 1e-9:
        raise ValueError(f"--mask_token_prob={shares[0]} and --random_token_prob="
                         f"{shares[1]} must be shares: each at least 0, at most 1 together "
                         f"(the rest keep their token).")
    if not 0 <= FLAGS.short_seq_prob <= 1:
        raise ValueError(f"--short_seq_prob={FLAGS.short_seq_prob} must be in [0, 1].")
    if FLAGS.dupe_factor < 1 or FLAGS.max_predictions_per_seq < 1:
        raise ValueError("--dupe_factor and --max_predictions_per_seq must be at least 1.")
    if FLAGS.line_by_line and FLAGS.mode == "original":
        raise ValueError("--line_by_line: --mode=original reproduces the original's "
                         "output, which reads documents only (a blank line between "
                         "them); use --mode=fast.")
    from text.chinese_words import check_segmenter
    check_segmenter(FLAGS.do_whole_word_mask, FLAGS.word_segmenter)
    if not 0 <= FLAGS.shard_index < FLAGS.num_shards:
        raise ValueError(f"--shard_index={FLAGS.shard_index} must be in "
                         f"[0, --num_shards={FLAGS.num_shards}).")


def main(_):
    configs_from_flags(FLAGS, CreationSettings)  # required settings given, values checked
    from common import file_io
    from common.progress import Progress
    from data_prep import corpus
    from text import casing
    from text.tokenization import FullTokenizer

    _validate()
    files = corpus.expand_input_patterns(FLAGS.input_file)
    outputs = [p.strip() for p in FLAGS.output_file.split(",") if p.strip()]
    file_io.refuse_inputs_as_outputs({"output_file": outputs},
                                     {"input_file": files, "vocab_file": FLAGS.vocab_file})
    vocab = FullTokenizer(FLAGS.vocab_file, FLAGS.do_lower_case).vocab
    casing.warn_about_input(files, FLAGS.do_lower_case)
    if FLAGS.do_whole_word_mask and FLAGS.word_segmenter == "none":
        from common.file_io import first_lines
        from text.chinese_words import characters_alone_warning
        alone = characters_alone_warning(first_lines(files, 2000), files[0])
        if alone:
            logging.warning("%s", alone)
    texts = [] if FLAGS.mode == "original" else corpus.line_by_line_files(
        files, FLAGS.line_by_line)
    said = corpus.describe_line_by_line(texts, files, FLAGS.line_by_line)
    if said:
        print(said, file=sys.stderr)
    params = _params()
    logging.info("Reading %d input file(s) in --mode=%s.", len(files), FLAGS.mode)
    progress = Progress(f"create_pretraining_data ({FLAGS.mode})",
                        ["lines", "documents", "instances"] +
                        (["pieces"] if FLAGS.mode == "fast" else []))
    start = time.time()
    common = dict(vocab_file=FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case,
                  dupe_factor=FLAGS.dupe_factor, random_seed=FLAGS.random_seed,
                  max_invalid_utf8_share=FLAGS.max_invalid_utf8_share,
                  word_segmenter=FLAGS.word_segmenter)
    if FLAGS.mode == "original":
        totals = pretraining_data.run_original(files, outputs, vocab, params, progress,
                              tokenizer=FLAGS.tokenizer, **common)
    else:
        totals = pretraining_data.run_fast(files, outputs, params, progress, num_workers=FLAGS.num_workers,
                          piece_mb=FLAGS.piece_mb, num_shards=FLAGS.num_shards,
                          shard_index=FLAGS.shard_index, line_by_line=texts, **common)
    progress.close()
    elapsed = time.time() - start
    n = max(totals["instances"], 1)
    summary = (f"Wrote {totals['instances']:,} instances from {totals['documents']:,} "
               f"documents to {len(outputs)} file(s) in {elapsed:.1f} s "
               f"({totals['instances'] / elapsed:,.0f} instances/s): "
               f"{totals['tokens']:,} tokens, {totals['masked'] / max(totals['tokens'], 1):.1%}"
               f" of tokens masked, {totals['random_next'] / n:.1%} random next sentences"
               + (f", {totals['lines_with_invalid_utf8']} lines with invalid UTF-8"
                  if totals["lines_with_invalid_utf8"] else "") + "."
               + (" The texts read one per line are packed into full sequences for the "
                  "masked LM: train with --objective=mlm (their next-sentence labels pair "
                  "texts, not sentences)." if texts else ""))
    print(summary, file=sys.stderr)
    if totals.get("lines_not_segmented"):
        logging.warning(
            "%d line(s) with CJK characters could not be lined up with their tokens: their "
            "characters are masked one by one, not as --word_segmenter=%s's words.",
            totals["lines_not_segmented"], FLAGS.word_segmenter)
    if totals["long_one_line_documents"] and texts:
        logging.warning(
            "%d text(s) are longer than --max_seq_length=%d: each is truncated to about "
            "%d tokens, and the rest is never seen. Split long texts into sentences, one "
            "per line, a blank line between texts.", totals["long_one_line_documents"],
            FLAGS.max_seq_length, FLAGS.max_seq_length)
    elif totals["long_one_line_documents"]:
        logging.warning(
            "%d document(s) are a single line longer than --max_seq_length=%d: each gives "
            "instances of its first ~%d tokens only, and the rest is never seen. Put one "
            "sentence (or paragraph) per line, a blank line between documents.",
            totals["long_one_line_documents"], FLAGS.max_seq_length, FLAGS.max_seq_length)


if __name__ == "__main__":
    cli.run(main)
