"""Benchmark: create_pretraining_data throughput, both modes, side by side.

Builds ~10 MB of real prose from ../shared/data (WikiText-2 articles plus the English
Wikipedia dump sample run through extract_wikipedia), then times whole processes (start-up
included) with the original's default flags (dupe_factor 10, max_seq_length 128, ...):

  baseline   --mode=original --tokenizer=python   (the original script's design)
  original   --mode=original --tokenizer=graph
  fast x1    --mode=fast --num_workers=1
  fast x2    --mode=fast --num_workers=2

and prints instances/s, instances/s per core, the ratios to the baseline per core and the
1 -> 2 worker scaling, as a Markdown table.

    python bench/pretraining_data_speed.py --shared_dir=../shared/data [--target_mb=10]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def wikitext_documents(path):
    """WikiText-2 (tokenized release): ' = Title = ' starts an article; paragraphs are
    split into sentences with the project's segmenter."""
    sys.path.insert(0, ROOT)
    from data_prep.sentences import split_sentences
    docs, current = [], []
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if re.match(r"^= [^=].* =$", line):
            if current:
                docs.append(current)
            current = []
        elif line and not line.startswith("="):
            current.extend(split_sentences(line))
    if current:
        docs.append(current)
    return "\n\n".join("\n".join(d) for d in docs) + "\n\n"


def build_corpus(shared_dir, workdir, target_mb):
    parts = [wikitext_documents(os.path.join(shared_dir, "wikitext", "wikitext-2", name))
             for name in ("valid.txt", "test.txt")]
    dump = os.path.join(shared_dir, "wiki",
                        "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")
    wiki_dir = os.path.join(workdir, "wiki")
    subprocess.run([sys.executable, "-m", "data_prep.extract_wikipedia", f"--input_file={dump}",
                    f"--output_dir={wiki_dir}", "--num_output_files=1"], cwd=ROOT, check=True,
                   capture_output=True)
    parts.append(open(os.path.join(wiki_dir, "wiki-00000-of-00001.txt"), encoding="utf-8").read())
    text = "".join(parts)
    copies = max(1, round(target_mb * 2 ** 20 / len(text.encode("utf-8"))))
    corpus = os.path.join(workdir, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write(text * copies)
    return corpus, copies


def build_vocab(corpus, workdir):
    vocab = os.path.join(workdir, "vocab.txt")
    subprocess.run([sys.executable, "-m", "data_prep.build_vocab", f"--input_file={corpus}",
                    f"--output_file={vocab}", "--vocab_size=30522", "--lower_thresh=5"],
                   cwd=ROOT, check=True, capture_output=True)
    return vocab


def run(corpus, vocab, workdir, args):
    outputs = ",".join(os.path.join(workdir, f"out-{i}.tfrecord") for i in range(2))
    start = time.time()
    result = subprocess.run(
        [sys.executable, "-m", "data_prep.create_pretraining_data", f"--input_file={corpus}",
         f"--output_file={outputs}", f"--vocab_file={vocab}", "--dupe_factor=10",
         "--max_seq_length=128", "--max_predictions_per_seq=20", "--masked_lm_prob=0.15",
         "--random_seed=12345"] + args,
        cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    elapsed = time.time() - start
    if result.returncode:
        raise SystemExit(result.stderr[-3000:])
    instances = int(re.search(r"Wrote ([\d,]+) instances", result.stderr).group(1)
                    .replace(",", ""))
    return instances, elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared_dir", default=os.path.join(ROOT, "..", "shared", "data"))
    parser.add_argument("--target_mb", type=float, default=10.0)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        corpus, copies = build_corpus(opts.shared_dir, workdir, opts.target_mb)
        vocab = build_vocab(corpus, workdir)
        size = os.path.getsize(corpus) / 2 ** 20
        print(f"Corpus: {size:.1f} MB ({copies} copies of WikiText-2 valid+test and the "
              f"enwiki sample, extracted); vocabulary learned from it.\n")
        configs = [("baseline: original, Python tokenizer", ["--mode=original",
                                                             "--tokenizer=python"], 1),
                   ("original, graph tokenizer", ["--mode=original", "--tokenizer=graph"], 1),
                   ("fast, 1 worker", ["--mode=fast", "--num_workers=1"], 1),
                   ("fast, 2 workers", ["--mode=fast", "--num_workers=2"], 2)]
        rows = []
        for name, args, cores in configs:
            instances, elapsed = run(corpus, vocab, workdir, args)
            rows.append((name, cores, instances, elapsed, instances / elapsed / cores))
        base = rows[0][4]
        print("| run | cores | instances | seconds | instances/s | per core | x baseline per core |")
        print("|---|---|---|---|---|---|---|")
        for name, cores, instances, elapsed, per_core in rows:
            print(f"| {name} | {cores} | {instances:,} | {elapsed:.1f} | "
                  f"{instances / elapsed:,.0f} | {per_core:,.0f} | {per_core / base:.1f} |")
        print(f"\nScaling 1 -> 2 workers: {rows[3][2] / rows[3][3] / (rows[2][2] / rows[2][3]):.2f}x"
              f" instances/s.")


if __name__ == "__main__":
    main()
