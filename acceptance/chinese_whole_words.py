"""Acceptance: Chinese whole-word masking on real Chinese text. The Chinese Wikipedia
excerpt of ../shared/data (or --input_text) goes through `create_pretraining_data.py
--do_whole_word_mask --word_segmenter=jieba` in both modes, and every instance is checked
against jieba called directly on the text: each word jieba finds (two or more CJK
characters) has all of its characters in the instance masked, or none; and the share of
masked tokens stays at --masked_lm_prob. Ends with a PASS or FAIL line per check.

    python -m acceptance.chinese_whole_words --shared_dir=../shared/data

The check (`tests.chinese_text.check_instances`, the suite's own) reads the text with
jieba and the tokenizer alone, a word at a time, not with the project's word marks.
"""

import dataclasses
import os
import subprocess
import sys
import tempfile
from typing import Optional

from bench import harness
from common.settings import setting
from tests.chinese_text import check_instances, read_documents, word_tokens

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DUMP = os.path.join("wiki", "zhwiki-sample.xml.bz2")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData):
    input_text: Optional[str] = setting(None, help="Chinese text (one sentence per line, "
                                        "a blank line between documents) instead of the "
                                        "Wikipedia excerpt.")
    masked_lm_prob: float = setting(0.15, help="--masked_lm_prob of the runs.")
    dupe_factor: int = setting(5, help="--dupe_factor of the runs.")


def zh_text(settings, workdir):
    """The text and a vocabulary learned from it (build_vocab.py): --input_text, or the
    excerpt's articles (extract_wikipedia.py)."""
    text = settings.input_text
    if not text:
        subprocess.run([sys.executable, os.path.join(ROOT, "extract_wikipedia.py"),
                        f"--input_file={os.path.join(settings.shared_dir, DUMP)}",
                        f"--output_dir={workdir}/wiki", "--num_output_files=1"],
                       cwd=ROOT, check=True, capture_output=True)
        text = os.path.join(workdir, "wiki", "wiki-00000-of-00001.txt")
    vocab = os.path.join(workdir, "vocab.txt")
    subprocess.run([sys.executable, os.path.join(ROOT, "build_vocab.py"),
                    f"--input_file={text}", f"--output_file={vocab}", "--vocab_size=8000"],
                   cwd=ROOT, check=True, capture_output=True)
    return text, vocab


def write_records(text, vocab, output, mode, settings, segmenter="jieba"):
    subprocess.run([sys.executable, os.path.join(ROOT, "create_pretraining_data.py"),
                    f"--input_file={text}", f"--output_file={output}",
                    f"--vocab_file={vocab}", f"--mode={mode}", "--do_whole_word_mask",
                    f"--word_segmenter={segmenter}", "--num_workers=1",
                    f"--dupe_factor={settings.dupe_factor}",
                    f"--masked_lm_prob={settings.masked_lm_prob}"],
                   cwd=ROOT, check=True, capture_output=True)


def main(settings):
    from data_prep import pretraining_records as records
    from text.chinese_words import load_segmenter
    from text.tokenization import FullTokenizer
    checks = []
    with tempfile.TemporaryDirectory() as workdir:
        text, vocab = zh_text(settings, workdir)
        ids, words, left_out = word_tokens(read_documents(text),
                                           FullTokenizer(vocab, True),
                                           load_segmenter("jieba"))
        print(f"{text}: {os.path.getsize(text):,} bytes, {len(ids):,} tokens, "
              f"{int(words.max()) + 1:,} words of 2+ CJK characters; {left_out} lines "
              f"left out (their words tokenize otherwise than the line).")
        for mode in ("fast", "original"):
            output = os.path.join(workdir, f"{mode}.tfrecord")
            write_records(text, vocab, output, mode, settings)
            c = check_instances(records.read_examples(output), ids, words)
            share = c["masked"] / c["tokens"]
            print(f"--mode={mode}: {c['segments']:,} segments checked ({c['unlocated']:,} "
                  f"not located), {c['whole']:,} words masked whole, {c['split']:,} split; "
                  f"{share:.2%} of tokens masked")
            checks += [(c["split"] == 0 and c["whole"] > 0, f"{mode}: no word split"),
                       (abs(share - settings.masked_lm_prob) <= 0.005,
                        f"{mode}: masked share {share:.2%} within 0.5 points of "
                        f"{settings.masked_lm_prob:.0%}")]
    harness.verdicts(checks)


if __name__ == "__main__":
    harness.run(main, Settings)
