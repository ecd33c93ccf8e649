"""Benchmark: create_pretraining_data throughput, both modes, side by side.

Builds ~10 MB of real prose from ../shared/data (WikiText-2 articles plus the English
Wikipedia dump sample run through extract_wikipedia), then times whole processes (start-up
included) with the original's default flags (dupe_factor 10, max_seq_length 128, ...):

  baseline   Google's original create_pretraining_data.py (the `bert-tensorflow` package
             from PyPI: installed with the test requirements, else downloaded to a
             temporary folder for this run)
  original   --mode=original --tokenizer=python   (this project, the pure-Python tokenizer)
  original   --mode=original --tokenizer=graph
  fast x1    --mode=fast --num_workers=1
  fast x2    --mode=fast --num_workers=2

and prints instances/s, instances/s per core, CPU seconds, the ratios to the baseline per
core and the 1 -> 2 worker scaling, as a Markdown table. It also checks that
--mode=original wrote the same instances as the original script.

    python -m bench.pretraining_data_speed --shared_dir=../shared/data [--target_mb=10]
"""

import dataclasses
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

from bench import harness
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def wikitext_documents(path):
    """WikiText-2 (tokenized release) as documents: `extract_wikitext.py`'s
    articles, as one string."""
    from data_prep.wikitext_dataset import articles
    with open(path, encoding="utf-8") as f:
        return "".join("\n".join(d) + "\n\n" for d in articles(f))


def build_corpus(shared_dir, workdir, target_mb):
    parts = [wikitext_documents(os.path.join(shared_dir, "wikitext", "wikitext-2", name))
             for name in ("valid.txt", "test.txt")]
    dump = os.path.join(shared_dir, "wiki",
                        "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")
    wiki_dir = os.path.join(workdir, "wiki")
    subprocess.run([sys.executable, os.path.join(ROOT, "extract_wikipedia.py"), f"--input_file={dump}",
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
    subprocess.run([sys.executable, os.path.join(ROOT, "build_vocab.py"), f"--input_file={corpus}",
                    f"--output_file={vocab}", "--vocab_size=30522", "--lower_thresh=5"],
                   cwd=ROOT, check=True, capture_output=True)
    return vocab


def original_script(workdir):
    """The PYTHONPATH entry that makes Google's `bert` package importable (None when it
    is installed already)."""
    try:
        import bert.create_pretraining_data  # noqa: F401  (installed: test requirement)
        return None
    except ImportError:
        target = os.path.join(workdir, "bert-tensorflow")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                        f"--target={target}", "bert-tensorflow==1.0.4", "six"], check=True)
        return target


def run(command, outputs, pythonpath=None, repeats=1):
    """Runs a whole process `repeats` times; returns (wall seconds, CPU seconds, stderr) of
    the fastest run (the machine is shared: the fastest run is the least disturbed).
    `outputs` are deleted before each run (untimed), so that no run pays for freeing
    the files of the one before."""
    runs = []
    for _ in range(repeats):
        for path in outputs:
            if os.path.exists(path):
                os.remove(path)
        runs.append(_run_once(command, pythonpath))
    return min(runs, key=lambda r: r[0])


def _run_once(command, pythonpath):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    result = subprocess.run([sys.executable] + command, cwd=ROOT, capture_output=True,
                            text=True, env=env)
    elapsed = time.time() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode:
        raise SystemExit(result.stderr[-3000:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu, result.stderr


def same_instances(paths_a, paths_b):
    from data_prep.pretraining_records import read_examples
    for a, b in zip(paths_a, paths_b):
        if list(read_examples(a)) != list(read_examples(b)):
            return False
    return True


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """The flags of this bench (`python -m bench.pretraining_data_speed --help`)."""
    shared_dir: str = setting(os.path.join(ROOT, '..', 'shared', 'data'), help="The shared "
                              "data folder (`../shared/data`: WikiText-2 is read).")
    target_mb: float = setting(10.0, help="Size of the corpus the configurations are timed "
                               "on, in MB.")
    repeats: int = setting(2, help="Runs per configuration on the ~10 MB corpus; the fastest "
                           "counts (every configuration, the baseline included).")
    scaling_mb: float = setting(40.0, help="Also time --mode=fast with 1 and 2 workers on a "
                                "corpus of this size (0: skip), where start-up weighs less.")


def main(settings):
    with tempfile.TemporaryDirectory() as workdir:
        corpus, copies = build_corpus(settings.shared_dir, workdir, settings.target_mb)
        vocab = build_vocab(corpus, workdir)
        size = os.path.getsize(corpus) / 2 ** 20
        print(f"Corpus: {size:.1f} MB ({copies} copies of WikiText-2 valid+test and the "
              f"enwiki sample, extracted); vocabulary learned from it.\n")
        flags_ = [f"--input_file={corpus}", f"--vocab_file={vocab}", "--do_lower_case=True",
                  "--dupe_factor=10", "--max_seq_length=128", "--max_predictions_per_seq=20",
                  "--masked_lm_prob=0.15", "--short_seq_prob=0.1", "--random_seed=12345"]
        ours = [os.path.join(ROOT, "create_pretraining_data.py")]
        configs = [("baseline: Google's create_pretraining_data.py",
                    ["-m", "bert.create_pretraining_data"], 1, original_script(workdir)),
                   ("original, Python tokenizer", ours + ["--mode=original",
                                                          "--tokenizer=python"], 1, None),
                   ("original, graph tokenizer", ours + ["--mode=original",
                                                         "--tokenizer=graph"], 1, None),
                   ("fast, 1 worker", ours + ["--mode=fast", "--num_workers=1"], 1, None),
                   ("fast, 2 workers", ours + ["--mode=fast", "--num_workers=2"], 2, None)]
        rows, written = time_configs(configs, flags_, workdir, "run", settings.repeats)
        print_table(rows)
        for index in (1, 2):
            print(f"{rows[index][0]}: same instances as the original script: "
                  f"{same_instances(written[0], written[index])}")
        if settings.scaling_mb:
            big = os.path.join(workdir, "big.txt")
            text = open(corpus, encoding="utf-8").read()
            with open(big, "w", encoding="utf-8") as f:
                f.write(text * max(1, round(settings.scaling_mb / size)))
            print(f"\n{os.path.getsize(big) / 2 ** 20:.0f} MB corpus (the same text repeated):\n")
            big_rows, _ = time_configs([configs[0], configs[3], configs[4]],
                                       [f"--input_file={big}"] + flags_[1:], workdir, "big", 1)
            print_table(big_rows)


def time_configs(configs, flags_, workdir, prefix, repeats):
    """Runs each (name, command, cores, pythonpath) with `flags_`; returns the rows
    (name, cores, instances, seconds, CPU seconds) and each run's output files."""
    rows, written = [], []
    for index, (name, command, cores, pythonpath) in enumerate(configs):
        outputs = [os.path.join(workdir, f"{prefix}{index}-{i}.tfrecord") for i in range(2)]
        elapsed, cpu, log = run(command + flags_ + [f"--output_file={','.join(outputs)}"],
                                outputs, pythonpath, repeats)
        instances = int(re.search(r"Wrote ([\d,]+) (total )?instances", log).group(1)
                        .replace(",", ""))
        rows.append((name, cores, instances, elapsed, cpu))
        written.append(outputs)
    return rows, written


def print_table(rows):
    """Markdown table against rows[0] (the baseline), then the scaling of the last two
    rows (fast mode with 1 and 2 workers)."""
    base = rows[0][2] / rows[0][3]
    print("| run | cores | instances | seconds | CPU seconds | instances/s | per core "
          "| x baseline per core |")
    print("|---|---|---|---|---|---|---|---|")
    for name, cores, instances, elapsed, cpu in rows:
        per_core = instances / elapsed / cores
        print(f"| {name} | {cores} | {instances:,} | {elapsed:.1f} | {cpu:.1f} | "
              f"{instances / elapsed:,.0f} | {per_core:,.0f} | {per_core / base:.1f} |")
    fast1, fast2 = rows[-2], rows[-1]
    print(f"\nScaling 1 -> 2 workers: {fast2[2] / fast2[3] / (fast1[2] / fast1[3]):.2f}x"
          f" instances/s.")


if __name__ == "__main__":
    harness.run(main, Settings)
