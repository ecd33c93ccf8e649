"""Benchmark: a vocabulary learned from a sample of the training text against one learned
from all of it, as `pretrain_from_text.py` samples a large corpus (every k-th line, at
most `tasks.pretraining.from_text.VOCAB_SAMPLE_BYTES`).

For each sample size (a share of the text): learning seconds, the tokens shared with the
vocabulary of the whole text, and, on held-out text, pieces per word (fewer is better)
and the [UNK] share, tokenized with `FullTokenizer` (the original's algorithm).

    python pretrain_from_text.py --input_text=... --output_dir=my_bert   # or any text
    python -m bench.vocab_sample --text=my_bert/text/train.txt \
      --heldout=my_bert/text/heldout.txt [--shares=1,0.5,0.25,0.125] [--vocab_size=8192]
"""

import argparse
import math
import os
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from bench.machine import describe  # noqa: E402
from bench.vocab_learning import evaluate  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--text", required=True, help="the training text")
    parser.add_argument("--heldout", required=True, help="held-out text to tokenize")
    parser.add_argument("--shares", default="1,0.5,0.25,0.125")
    parser.add_argument("--vocab_size", type=int, default=8192)
    parser.add_argument("--do_lower_case", type=int, default=1)
    args = parser.parse_args()
    from tasks.pretraining.from_text import sample_lines
    from text import vocabulary

    with open(args.heldout, encoding="utf-8") as f:
        held_out = [line.strip() for line in f if line.strip()]
    size = os.path.getsize(args.text)
    work = tempfile.mkdtemp(prefix="vocab_sample_")
    print(describe(), flush=True)
    rows, whole = [], None
    for share in (float(s) for s in args.shares.split(",")):
        start = time.time()
        source = sample_lines(args.text, os.path.join(work, f"sample-{share}.txt"),
                              math.ceil(size * share))
        counts = vocabulary.count_words_in_files([source], bool(args.do_lower_case))
        tokens = vocabulary.learn_from_counts(counts, args.vocab_size)
        seconds = time.time() - start
        whole = whole if whole is not None else set(tokens)
        result = evaluate(tokens, held_out, bool(args.do_lower_case))
        every = math.ceil(size / math.ceil(size * share))  # as sample_lines chooses
        rows.append((every, os.path.getsize(source) / 2**20, seconds,
                     len(set(tokens) & whole) / len(tokens), result))
        print(f"share {share}: {seconds:.0f} s", flush=True)
    print(f"\n{args.text}: {size / 2**20:.1f} MB; held out: {args.heldout} "
          f"({len(held_out):,} lines); {args.vocab_size:,} tokens asked\n")
    print("| sample | MB | learning seconds | tokens shared with the whole text's | "
          "pieces per held-out word | [UNK] of held-out pieces |")
    print("|---|---|---|---|---|---|")
    for every, mb, seconds, shared, r in rows:
        label = "the whole text" if every == 1 else f"1 line in {every}"
        print(f"| {label} "
              f"| {mb:.1f} | {seconds:.0f} | {shared:.1%} | {r['pieces_per_word']:.4f} | "
              f"{r['unk']:.3%} ({r['unk_count']}) |")


if __name__ == "__main__":
    main()
