"""Benchmark: what Chinese whole-word masking costs `create_pretraining_data.py
--mode=fast`: the same Chinese text (the Wikipedia excerpt of ../shared/data, repeated to
--target_mb) written with the documented command three ways, in alternating rounds, each a
whole process (start-up included):

  pieces       no whole-word masking (masking vectorised in NumPy)
  wwm          --do_whole_word_mask (every CJK character a word of its own, as the original)
  wwm + jieba  --do_whole_word_mask --word_segmenter=jieba (Chinese words masked whole)

and jieba's own speed on the text in this process (`lcut` line by line), as a Markdown
table of instances/s and the ratio to wwm.

    python -m bench.chinese_segmentation_speed --shared_dir=../shared/data [--target_mb=4]
"""

import dataclasses
import os
import re
import tempfile
import time
from typing import Optional

from acceptance.chinese_whole_words import zh_text
from bench import harness
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = {"pieces": [], "wwm": ["--do_whole_word_mask"],
           "wwm + jieba": ["--do_whole_word_mask", "--word_segmenter=jieba"]}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData, harness.Rounds):
    input_text: Optional[str] = setting(None, help="Chinese text instead of the Wikipedia excerpt.")
    target_mb: float = setting(4.0, help="The text is repeated to about this many MB.")


def repeated(text, target_mb, workdir):
    with open(text, encoding="utf-8") as f:
        body = f.read().strip() + "\n\n"
    copies = max(1, round(target_mb * 2 ** 20 / len(body.encode("utf-8"))))
    path = os.path.join(workdir, "corpus.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(body * copies)
    return path


def write(corpus, vocab, workdir, extra):
    """Seconds and instances of one run of the documented command (two output files)."""
    outputs = ",".join(os.path.join(workdir, f"out-{i}.tfrecord") for i in range(2))
    seconds, done = harness.in_fresh_process(
        ["python", os.path.join(ROOT, "create_pretraining_data.py"), f"--input_file={corpus}",
         f"--output_file={outputs}", f"--vocab_file={vocab}", *extra], cwd=ROOT)
    instances = int(re.search(r"Wrote ([\d,]+) instances", done.stderr).group(1)
                    .replace(",", ""))
    return seconds, instances


def jieba_speed(corpus):
    """MB/s of jieba's `lcut` over the text's lines, in this process (after a first call
    that loads its dictionary)."""
    from text.chinese_words import load_segmenter
    segment = load_segmenter("jieba")
    segment("预热")
    with open(corpus, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    start = time.perf_counter()
    for line in lines:
        segment(line)
    return sum(len(line.encode("utf-8")) for line in lines) / 2 ** 20 / (
        time.perf_counter() - start)


def main(settings):
    with tempfile.TemporaryDirectory() as workdir:
        text, vocab = zh_text(settings, workdir)
        corpus = repeated(text, settings.target_mb, workdir)
        megabytes = os.path.getsize(corpus) / 2 ** 20
        print(harness.describe())
        print(f"{megabytes:.1f} MB of Chinese text ({text} repeated)")
        results = harness.medians(harness.alternate(
            {name: (lambda extra=extra: write(corpus, vocab, workdir, extra))
             for name, extra in CONFIGS.items()}, settings.rounds))
        base = results["wwm"][1] / results["wwm"][0]
        rows = [[name, f"{seconds:.1f}", f"{instances:,}", f"{instances / seconds:,.0f}",
                 f"{megabytes / seconds:.2f}", f"{instances / seconds / base:.2f}"]
                for name, (seconds, instances) in results.items()]
        print(harness.table(["run", "seconds", "instances", "instances/s", "MB/s",
                             "x wwm"], rows))
        print(f"jieba alone: {jieba_speed(corpus):.2f} MB/s (one core)")


if __name__ == "__main__":
    harness.run(main, Settings)
