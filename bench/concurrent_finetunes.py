"""Several fine-tunings at once on one CPU (`bench/paper_tables.py --jobs`): runs finished
per hour one at a time, `--jobs` at once on TensorFlow's default thread pools (each
process sized to every core), and `--jobs` at once with cores/jobs threads each
(`TF_NUM_INTRAOP_THREADS`, `TF_NUM_INTEROP_THREADS`, `OMP_NUM_THREADS`).

Each run is `run_classifier.py --do_train` on SST-2's first `--train_examples` rows, with
`bench/paper_tables.py`'s fine-tuning flags and the model of `--bert_config_file`
(random weights: the speed does not depend on them), timed from launch to exit, as the
tables pay for it. TensorFlow's float32 matmul peak is measured in the same run.

    python -m bench.concurrent_finetunes --shared_dir=../shared/data \
      --bert_config_file=my_bert/bert_config.json --vocab_file=my_bert/vocab.txt
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from bench.paper_tables import FINE_TUNING  # noqa: E402
from bench.sst2 import matmul_peak, sst2_subset  # noqa: E402


def launch(data, out, args, seed, threads=None):
    flags = dict(FINE_TUNING, do_eval=False, task_name="SST-2", data_dir=data,
                 vocab_file=args.vocab_file, bert_config_file=args.bert_config_file,
                 max_seq_length=128, learning_rate=1e-4, seed=seed, output_dir=out,
                 num_train_epochs=args.epochs)
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


def timed(data, work, args, label, at_once, threads=None):
    """Seconds for `args.runs` runs, `at_once` at a time."""
    start, seed = time.perf_counter(), 0
    while seed < args.runs:
        batch = []
        for _ in range(min(at_once, args.runs - seed)):
            seed += 1
            batch.append(launch(data, os.path.join(work, f"{label}-{seed}"), args, seed,
                                threads))
        wait(batch)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared_dir", required=True)
    parser.add_argument("--bert_config_file", required=True)
    parser.add_argument("--vocab_file", required=True)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=int, default=4, help="runs per configuration")
    parser.add_argument("--train_examples", type=int, default=8000)
    parser.add_argument("--epochs", type=float, default=0.5)
    args = parser.parse_args()
    from bench.machine import describe

    cores = os.cpu_count() or 1
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = "1"  # as the runs (and paper_tables.py) have it
    print(f"{describe()}; float32 matmul peak {matmul_peak() / 1e9:.0f} GFLOP/s", flush=True)
    with tempfile.TemporaryDirectory() as work:
        data, _, _ = sst2_subset(args.shared_dir, work, args.train_examples)
        configurations = [
            ("one at a time", 1, None),
            (f"{args.jobs} at once, default threads", args.jobs, None),
            (f"{args.jobs} at once, {max(1, cores // args.jobs)} thread(s) each", args.jobs,
             max(1, cores // args.jobs))]
        rows = []
        for number, (label, at_once, threads) in enumerate(configurations):
            seconds = timed(data, work, args, f"c{number}", at_once, threads)
            rows.append((label, seconds))
            print(f"  {label}: {seconds:.0f} s", flush=True)
    base = rows[0][1]
    print(f"\n{args.runs} runs of {args.epochs:g} epoch of {args.train_examples:,} SST-2 rows "
          f"(batch 32, length 128), each timed from launch to exit:\n")
    print("| configuration | seconds | runs per hour | speed-up over one at a time |")
    print("|---|---|---|---|")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.0f} | {3600 * args.runs / seconds:.1f} | "
              f"{base / seconds:.2f}x |")


if __name__ == "__main__":
    main()
