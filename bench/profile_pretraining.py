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

import dataclasses
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from bench import (
    harness,
    pretraining_speed,
)
from bench.harness import describe, set_onednn
from bench.pretraining_speed import CONFIGS, KerasHub, Ours, synthetic_batch
from bench.profile_serving import op_times
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.OneDNN):
    """The flags of this bench (`python -m bench.profile_pretraining --help`)."""
    config: str = setting('small', help="The model config to profile.",
                          choices=sorted(CONFIGS))
    steps: int = setting(5, help='Profiled training steps (after warm-up).')
    top: int = setting(20, help='Op types shown, the most expensive first.')
    vocab_size: int = setting(pretraining_speed.VOCAB, help="BERT's 30,522 by default; 8192 "
                              "is the CPU recipe's")
    runs: str = setting('ours,keras_hub', help="comma-separated peer[:dtype] (peers: ours, "
                        "keras_hub; dtype: float32 or bfloat16, the compute policy the model "
                        "is built under)")


def main(settings):
    pretraining_speed.VOCAB = settings.vocab_size  # read by the model and batch makers
    set_onednn(settings.onednn)
    import tensorflow as tf

    from training.distribution import kept_precision, set_precision
    layers, hidden, heads, inter, batch_size, _ = CONFIGS[settings.config]
    cfg = (layers, hidden, heads, inter)
    batch = synthetic_batch(batch_size)
    makers = {"ours": lambda: Ours(cfg, batch, jit=False),
              "keras_hub": lambda: KerasHub(cfg, batch)}
    runners = {}
    for run in settings.runs.split(","):
        peer, _, dtype = run.partition(":")
        with kept_precision():
            set_precision(dtype or "float32")
            runners[run] = makers[peer]()
    wall, ops = {}, {}
    for name, runner in runners.items():
        runner.run(1)
        runner.run(1)
        start = time.perf_counter()
        runner.run(settings.steps)
        wall[name] = (time.perf_counter() - start) / settings.steps * 1e3
        logdir = tempfile.mkdtemp(prefix=f"profile_{name.replace(':', '_')}_")
        tf.profiler.experimental.start(logdir)
        runner.run(settings.steps)
        tf.profiler.experimental.stop()
        ops[name] = op_times(logdir, settings.steps)
    print(f"\n{describe()}")
    print(f"\n{settings.config}, vocabulary {settings.vocab_size:,}, batch {batch_size}: "
          "wall ms per step "
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
    for t in rows[:settings.top]:
        cells = [f"{ops[n].get(t, 0):.1f}" for n in names]
        if len(names) == 2:
            cells.append(f"{ops[first].get(t, 0) - ops[last].get(t, 0):+.1f}")
        print(f"| {t} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    harness.run(main, Settings)
