"""Benchmark: a vocabulary learned from a sample of the training text against one learned
from all of it, as `pretrain_from_text.py` samples a large corpus (every k-th line, at
most `tasks.pretraining.from_text.VOCAB_SAMPLE_BYTES`).

For each sample size (a share of the text): learning seconds, the tokens shared with the
vocabulary of the whole text, and, on held-out text, pieces per word (fewer is better)
and the [UNK] share, tokenized with `FullTokenizer` (the original's algorithm).

    python pretrain_from_text.py --input_text=... --output_dir=my_bert   # or any text
    python -m research.vocab_sample --text=my_bert/text/train.txt \
      --heldout=my_bert/text/heldout.txt [--shares=1,0.5,0.25,0.125] [--vocab_size=8192]
"""

import dataclasses
import math
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from bench import harness
from bench.harness import describe
from bench.vocab_learning import evaluate
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """The flags of this bench (`python -m research.vocab_sample --help`)."""
    text: str = setting(help='the training text')
    heldout: str = setting(help='held-out text to tokenize')
    shares: str = setting('1,0.5,0.25,0.125', help="Comma-separated shares of the text to "
                          "learn from.")
    vocab_size: int = setting(8192, help='Vocabulary size learned.')
    do_lower_case: int = setting(1, help='1: lower-case and strip accents; 0: keep case.')


def main(settings):
    from tasks.pretraining.from_text import sample_lines
    from text import vocabulary

    with open(settings.heldout, encoding="utf-8") as f:
        held_out = [line.strip() for line in f if line.strip()]
    size = os.path.getsize(settings.text)
    work = tempfile.mkdtemp(prefix="vocab_sample_")
    print(describe(), flush=True)
    rows, whole = [], None
    for share in (float(s) for s in settings.shares.split(",")):
        start = time.time()
        source = sample_lines(settings.text, os.path.join(work, f"sample-{share}.txt"),
                              math.ceil(size * share))
        counts = vocabulary.count_words_in_files([source], bool(settings.do_lower_case))
        tokens = vocabulary.learn_from_counts(counts, settings.vocab_size)
        seconds = time.time() - start
        whole = whole if whole is not None else set(tokens)
        result = evaluate(tokens, held_out, bool(settings.do_lower_case))
        every = math.ceil(size / math.ceil(size * share))  # as sample_lines chooses
        rows.append((every, os.path.getsize(source) / 2**20, seconds,
                     len(set(tokens) & whole) / len(tokens), result))
        print(f"share {share}: {seconds:.0f} s", flush=True)
    print(f"\n{settings.text}: {size / 2**20:.1f} MB; held out: {settings.heldout} "
          f"({len(held_out):,} lines); {settings.vocab_size:,} tokens asked\n")
    print("| sample | MB | learning seconds | tokens shared with the whole text's | "
          "pieces per held-out word | [UNK] of held-out pieces |")
    print("|---|---|---|---|---|---|")
    for every, mb, seconds, shared, r in rows:
        label = "the whole text" if every == 1 else f"1 line in {every}"
        print(f"| {label} "
              f"| {mb:.1f} | {seconds:.0f} | {shared:.1%} | {r['pieces_per_word']:.4f} | "
              f"{r['unk']:.3%} ({r['unk_count']}) |")


if __name__ == "__main__":
    harness.run(main, Settings)
