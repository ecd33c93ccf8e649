"""Several fine-tunings at once on one CPU (`research/paper/tables.py --jobs`): runs finished
per hour one at a time, `--jobs` at once on TensorFlow's default thread pools (each
process sized to every core), and `--jobs` at once with cores/jobs threads each
(`TF_NUM_INTRAOP_THREADS`, `TF_NUM_INTEROP_THREADS`, `OMP_NUM_THREADS`).

Each run is `run_classifier.py --do_train` on SST-2's first `--train_examples` rows, with
`research/paper/tables.py`'s fine-tuning flags and the model of `--bert_config_file`
(random weights: the speed does not depend on them), timed from launch to exit, as the
tables pay for it. TensorFlow's float32 matmul peak is measured in the same run.

    python -m research.concurrent_finetunes --shared_dir=../shared/data \
      --bert_config_file=my_bert/bert_config.json --vocab_file=my_bert/vocab.txt
"""

import dataclasses
import os
import subprocess
import sys
import tempfile
import time

from bench import harness
from bench.harness import matmul_peak
from bench.sst2 import sst2_subset
from common.settings import setting
from research.paper.tables import FINE_TUNING

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def launch(data, out, settings, seed, threads=None):
    flags = dict(FINE_TUNING, do_eval=False, task_name="SST-2", data_dir=data,
                 vocab_file=settings.vocab_file, bert_config_file=settings.bert_config_file,
                 max_seq_length=128, learning_rate=1e-4, seed=seed, output_dir=out,
                 num_train_epochs=settings.epochs)
    argv = [sys.executable, os.path.join(ROOT, "run_classifier.py")] + [
        f"--{k}" if v is True else f"--{k}={v}" for k, v in flags.items()
        if v is not None and v is not False]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_ENABLE_ONEDNN_OPTS="1")
    if threads:
        env.update(TF_NUM_INTRAOP_THREADS=str(threads), TF_NUM_INTEROP_THREADS=str(threads),
                   OMP_NUM_THREADS=str(threads))
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def wait(processes):
    for p in processes:
        _, err = p.communicate()
        if p.returncode:
            sys.exit(f"run_classifier.py failed:\n{err[-3000:]}")


def timed(data, work, settings, label, at_once, threads=None):
    """Seconds for `settings.runs` runs, `at_once` at a time."""
    start, seed = time.perf_counter(), 0
    while seed < settings.runs:
        batch = []
        for _ in range(min(at_once, settings.runs - seed)):
            seed += 1
            batch.append(launch(data, os.path.join(work, f"{label}-{seed}"), settings, seed,
                                threads))
        wait(batch)
    return time.perf_counter() - start


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData):
    """The flags of this bench (`python -m research.concurrent_finetunes --help`)."""
    bert_config_file: str = setting(help="The model's bert_config.json (random weights: the "
                                    "speed does not depend on them).")
    vocab_file: str = setting(help="The model's vocab.txt.")
    jobs: int = setting(2, help='Runs at once in the configurations that overlap them.')
    runs: int = setting(4, help='runs per configuration')
    train_examples: int = setting(8000, help="Training rows, the first ones of SST-2's "
                                  "train.tsv.")
    epochs: float = setting(0.5, help='Epochs of each run.')


def main(settings):
    from bench.harness import describe

    cores = os.cpu_count() or 1
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = "1"  # as the runs (and research/paper/tables.py) have it
    print(f"{describe()}; float32 matmul peak {matmul_peak() / 1e9:.0f} GFLOP/s", flush=True)
    with tempfile.TemporaryDirectory() as work:
        data, _, _ = sst2_subset(settings.shared_dir, work, settings.train_examples)
        configurations = [
            ("one at a time", 1, None),
            (f"{settings.jobs} at once, default threads", settings.jobs, None),
            (f"{settings.jobs} at once, {max(1, cores // settings.jobs)} thread(s) each",
             settings.jobs, max(1, cores // settings.jobs))]
        rows = []
        for number, (label, at_once, threads) in enumerate(configurations):
            seconds = timed(data, work, settings, f"c{number}", at_once, threads)
            rows.append((label, seconds))
            print(f"  {label}: {seconds:.0f} s", flush=True)
    base = rows[0][1]
    print(f"\n{settings.runs} runs of {settings.epochs:g} epoch of "
          f"{settings.train_examples:,} SST-2 rows "
          f"(batch 32, length 128), each timed from launch to exit:\n")
    print("| configuration | seconds | runs per hour | speed-up over one at a time |")
    print("|---|---|---|---|")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.0f} | {3600 * settings.runs / seconds:.1f} | "
              f"{base / seconds:.2f}x |")


if __name__ == "__main__":
    harness.run(main, Settings)
