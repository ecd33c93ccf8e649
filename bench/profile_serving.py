"""Profile: where a SavedModel's serving time goes, by TensorFlow op type.

Runs a signature of an export (`bench/serving_speed.py --work_dir=W` leaves one in
`W/saved_model`) under TensorFlow's profiler and sums the op events of its trace by op
type: ms per call and share of the op time, beside the matmul FLOPs the call does and
the float32 matmul peak measured in the same run (the fraction of peak the call reaches).

    python -m bench.profile_serving --export_dir=/tmp/serving/saved_model \
      [--signature=serving_ids --batch=32 --seq=128]    # full-length ids
    python -m bench.profile_serving --export_dir=... --signature=serving_default \
      --shared_dir=../shared/data                       # 32 raw SST-2 sentences
"""

import collections
import dataclasses
import glob
import os
import tempfile
import time
from typing import Optional

import numpy as np

from bench import harness
from bench.harness import describe, matmul_peak
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def op_times(logdir, calls):
    """{op type: ms per call} from the profiler's trace in `logdir`."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2
    path = sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))[-1]
    space = xplane_pb2.XSpace()
    with open(path, "rb") as f:
        space.ParseFromString(f.read())
    totals = collections.Counter()
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        for line in plane.lines:
            if not line.name.startswith("tf_Compute"):
                continue  # op events run on the executor's threads
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                op = name.rsplit(":", 1)[1] if ":" in name else None  # "node:OpType"
                if op and op != "Process":  # "Process": the executor's span, not an op
                    totals[op] += event.duration_ps / 1e9 / calls
    return totals


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """The flags of this bench (`python -m bench.profile_serving --help`)."""
    export_dir: str = setting(help='A SavedModel export (`run_classifier.py --export_dir`).')
    signature: str = setting('serving_ids', help="The signature to profile: serving_ids (ids "
                             "in) or serving_default (raw text).")
    batch: int = setting(32, help='Sequences per call.')
    seq: int = setting(128, help="Sequence length of serving_ids' inputs.")
    shared_dir: Optional[str] = setting(None, help='SST-2 sentences for serving_default')
    calls: int = setting(5, help='Profiled calls (after warm-up).')


def main(settings):
    from common import onednn
    onednn.decide(log=print)
    from common import quiet
    quiet.quiet_tensorflow_start()
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    loaded = tf.saved_model.load(settings.export_dir)
    fn = loaded.signatures[settings.signature]
    if settings.signature == "serving_default":
        with open(os.path.join(settings.shared_dir, "glue", "SST-2", "dev.tsv"),
                  encoding="utf-8") as f:
            sentences = [line.split("\t")[0] for line in f.read().splitlines()[1:]]
        inputs = {"text_a": tf.constant(sentences[:settings.batch])}
    else:
        ids = np.random.default_rng(0).integers(1000, 30000, (settings.batch, settings.seq))
        ids = tf.constant(ids, tf.int32)
        inputs = {"input_ids": ids, "input_mask": tf.ones_like(ids),
                  "segment_ids": tf.zeros_like(ids)}
    for _ in range(3):
        fn(**inputs)
    start = time.perf_counter()
    for _ in range(settings.calls):
        [v.numpy() for v in fn(**inputs).values()]
    wall = (time.perf_counter() - start) / settings.calls * 1e3
    logdir = tempfile.mkdtemp(prefix="profile_")
    tf.profiler.experimental.start(logdir)
    for _ in range(settings.calls):
        [v.numpy() for v in fn(**inputs).values()]
    tf.profiler.experimental.stop()
    totals = op_times(logdir, settings.calls)
    total = sum(totals.values())
    peak = matmul_peak()
    print(f"\n{describe()}; matmul peak {peak / 1e9:.0f} GFLOP/s")
    print(f"{settings.signature}, batch {settings.batch}" +
          (f" x {settings.seq} ids" if settings.signature != "serving_default" else " sentences") +
          f": {wall:.1f} ms per call unprofiled; op time by type (profiled):\n")
    print("| op type | ms per call | share of op time |")
    print("|---|---|---|")
    for op, ms in totals.most_common(12):
        print(f"| {op} | {ms:.1f} | {100 * ms / total:.1f}% |")
    if settings.signature != "serving_default":  # full-length ids: the matmul FLOPs known
        flops = encoder_matmul_flops(loaded.model_variables, settings.batch, settings.seq)
        matmul_ms = sum(ms for op, ms in totals.items() if "MatMul" in op)
        print(f"\nMatmul FLOPs per call {flops / 1e9:.1f} G: the whole call runs at "
              f"{100 * flops / (wall / 1e3) / peak:.0f}% of the matmul peak, its matmul "
              f"ops at {100 * flops / (matmul_ms / 1e3) / peak:.0f}% (profiled).")


def encoder_matmul_flops(variables, batch, seq):
    """2 x each transformer kernel's size per token, plus attention's scores and
    context (4 x seq x hidden per token and layer)."""
    per_token, layers, hidden = 0, 0, 0
    for v in variables:
        name = v.name
        if name.startswith("transformer_layer_") and name.endswith("/kernel:0"):
            per_token += 2 * int(np.prod(v.shape))
            if "/query/" in name:
                layers, hidden = layers + 1, int(v.shape[0])
    return batch * seq * (per_token + layers * 4 * seq * hidden)

if __name__ == "__main__":
    harness.run(main, Settings)
