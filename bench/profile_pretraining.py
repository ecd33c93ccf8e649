"""Profile: where a pre-training step's time goes, by TensorFlow op type, ours beside
KerasHub (the peer of `bench/pretraining_speed.py`, same model, same batch).

Runs each implementation's training loop under TensorFlow's profiler and prints, per op
type, ms per step for each, sorted by the largest difference, with the wall time per
step and the total op time (the sum over both cores' executor threads).

    pip install -r bench/requirements.txt   # KerasHub
    python -m bench.profile_pretraining [--config=small] [--steps=5]
    # ours in float32 beside ours in bfloat16 (the --dtype of run_pretraining.py):
    python -m bench.profile_pretraining --runs=ours:float32,ours:bfloat16
    # the CPU recipe's model (its 8,192-piece vocabulary):
    python -m bench.profile_pretraining --runs=ours:float32,ours:bfloat16 --vocab_size=8192
"""

import argparse
import os
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from bench import pretraining_speed  # noqa: E402
from bench.machine import describe, set_onednn  # noqa: E402
from bench.pretraining_speed import CONFIGS, KerasHub, Ours, synthetic_batch  # noqa: E402
from bench.profile_serving import op_times  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="small", choices=sorted(CONFIGS))
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--onednn", choices=("auto", "on", "off"), default="auto")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--vocab_size", type=int, default=pretraining_speed.VOCAB,
                        help="BERT's 30,522 by default; 8192 is the CPU recipe's")
    parser.add_argument("--runs", default="ours,keras_hub",
                        help="comma-separated peer[:dtype] (peers: ours, keras_hub; dtype: "
                        "float32 or bfloat16, the compute policy the model is built under)")
    args = parser.parse_args()
    pretraining_speed.VOCAB = args.vocab_size  # read by the model and batch makers
    set_onednn(args.onednn)
    import tensorflow as tf

    from training.distribution import kept_precision, set_precision
    layers, hidden, heads, inter, batch_size, _ = CONFIGS[args.config]
    cfg = (layers, hidden, heads, inter)
    batch = synthetic_batch(batch_size)
    makers = {"ours": lambda: Ours(cfg, batch, jit=False),
              "keras_hub": lambda: KerasHub(cfg, batch)}
    runners = {}
    for run in args.runs.split(","):
        peer, _, dtype = run.partition(":")
        with kept_precision():
            set_precision(dtype or "float32")
            runners[run] = makers[peer]()
    wall, ops = {}, {}
    for name, runner in runners.items():
        runner.run(1)
        runner.run(1)
        start = time.perf_counter()
        runner.run(args.steps)
        wall[name] = (time.perf_counter() - start) / args.steps * 1e3
        logdir = tempfile.mkdtemp(prefix=f"profile_{name.replace(':', '_')}_")
        tf.profiler.experimental.start(logdir)
        runner.run(args.steps)
        tf.profiler.experimental.stop()
        ops[name] = op_times(logdir, args.steps)
    print(f"\n{describe()}")
    print(f"\n{args.config}, vocabulary {args.vocab_size:,}, batch {batch_size}: wall ms per step "
          + ", ".join(f"{n} {w:.0f}" for n, w in wall.items())
          + "; op ms per step " + ", ".join(f"{n} {sum(o.values()):.0f}"
                                            for n, o in ops.items()))
    names = list(runners)
    first, last = names[0], names[-1]
    print("\n| op type | " + " | ".join(f"{n} (ms/step)" for n in names) +
          (" | difference |" if len(names) == 2 else " |"))
    print("|---" * (len(names) + 1 + (len(names) == 2)) + "|")
    types = set().union(*(set(o) for o in ops.values()))
    rows = sorted(types, key=lambda t: -(abs(ops[first].get(t, 0) - ops[last].get(t, 0))
                                         if len(names) == 2 else ops[first].get(t, 0)))
    for t in rows[:args.top]:
        cells = [f"{ops[n].get(t, 0):.1f}" for n in names]
        if len(names) == 2:
            cells.append(f"{ops[first].get(t, 0) - ops[last].get(t, 0):+.1f}")
        print(f"| {t} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
