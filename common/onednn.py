"""oneDNN on where it makes this CPU faster, decided by a measurement (once per machine).

Pipeline position: before TensorFlow is imported, by every entry point (`cli.boundary`)
and by `serving.load` before it loads a SavedModel (the cached answer only, no
measurement); imports no TensorFlow itself.

TensorFlow's x86 Linux wheels carry oneDNN kernels but turn them on by default only on
CPUs with some Intel-only features (AVX512_VNNI, AVX512_BF16, AMX); on AMD CPUs they stay
off, although on the project's AMD EPYC (AVX2) they make a training step 1.8x faster and
the SavedModel 1.3x. A vendor string does not say which CPUs gain, so `decide()`
measures: short child processes (two per setting, alternated) run the same BERT-shaped
float32 work (matmuls, GELU, softmax, layer norm, forward and backward) under
TensorFlow's default and with `TF_ENABLE_ONEDNN_OPTS=1`, and oneDNN is turned on when it
is at least `MIN_GAIN` faster. The answer is cached per CPU model, CPU flags and
TensorFlow version (`$XDG_CACHE_HOME/bert_tf2/onednn.json`, else `~/.cache/...`), so
the measurement (about 25 s) happens once per machine.

On a busy machine (load average above half the cores) nothing is measured or cached:
TensorFlow's default stands for that run, and a later start measures.

A user's own `TF_ENABLE_ONEDNN_OPTS` (0 or 1) always wins: nothing is measured then.
`BERT_TF2_ONEDNN_CACHE` names another cache file. To run TensorFlow Serving or your own
`tf.saved_model.load` the same way, set `TF_ENABLE_ONEDNN_OPTS=1` in its environment
(`docker run -e TF_ENABLE_ONEDNN_OPTS=1 tensorflow/serving ...`).
"""

import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

from common import cpu

ENV = "TF_ENABLE_ONEDNN_OPTS"
CACHE_ENV = "BERT_TF2_ONEDNN_CACHE"
# oneDNN is turned on when TensorFlow's default takes at least this much longer.
MIN_GAIN = 1.1
# No measurement while the 1-minute load average is above this share of the cores.
BUSY_LOAD = 0.5
_DECIDED = "BERT_TF2_ONEDNN_DECIDED"  # set in the environment once a process decided

# The probe: BERT-shaped float32 work (one encoder layer of H=256 on 8 x 128 tokens,
# forward and backward), timed as the best of several rounds; prints milliseconds per call.
_PROBE = r"""
import os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf
tf.random.set_seed(0)
b, s, h, heads = 8, 128, 256, 4
x = tf.random.normal([b, s, h])
w = [tf.random.normal(shape) * 0.05 for shape in
     ([h, 3 * h], [h, h], [h, 4 * h], [4 * h, h])]

def forward(x):
    qkv = tf.reshape(tf.matmul(tf.reshape(x, [-1, h]), w[0]), [b, s, 3, heads, h // heads])
    q, k, v = [tf.transpose(qkv[:, :, i], [0, 2, 1, 3]) for i in range(3)]
    p = tf.nn.softmax(tf.matmul(q, k, transpose_b=True) * 0.125)
    a = tf.reshape(tf.transpose(tf.matmul(p, v), [0, 2, 1, 3]), [-1, h])
    y = tf.reshape(tf.matmul(a, w[1]), [b, s, h]) + x
    m, var = tf.nn.moments(y, [-1], keepdims=True)
    y = (y - m) * tf.math.rsqrt(var + 1e-12)
    f = tf.nn.gelu(tf.matmul(tf.reshape(y, [-1, h]), w[2]), approximate=False)
    return tf.reshape(tf.matmul(f, w[3]), [b, s, h]) + y

@tf.function
def layer(x):  # a training step's work: forward and backward
    with tf.GradientTape() as tape:
        tape.watch(w)
        loss = tf.reduce_sum(forward(x) ** 2)
    return tape.gradient(loss, w)[0]

for _ in range(3):
    layer(x).numpy()
best = float("inf")
for _ in range(int(sys.argv[1])):
    start = time.perf_counter()
    for _ in range(5):
        out = layer(x)
    out.numpy()
    best = min(best, (time.perf_counter() - start) / 5)
print(best * 1000)
"""


def _tensorflow_version():
    try:
        from importlib import metadata
        return metadata.version("tensorflow")
    except Exception:  # not installed under that name (tensorflow-cpu, a source build)
        return "unknown"


def fingerprint():
    """What the decision depends on: CPU model, its flags, core count, TensorFlow."""
    model, flags = cpu.identity()
    digest = hashlib.sha256(flags.encode()).hexdigest()[:16]
    return f"{model} | flags {digest} | {os.cpu_count()} cores | tensorflow " \
           f"{_tensorflow_version()}"


def cache_path():
    if os.environ.get(CACHE_ENV):
        return os.environ[CACHE_ENV]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                            ".cache")
    return os.path.join(base, "bert_tf2", "onednn.json")


def _read_cache(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}  # absent, unreadable or corrupt: measure again


def _write_cache(path, data):
    """Atomically; a cache that cannot be written only means measuring again next time."""
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass


def probe(onednn, rounds=4):
    """Milliseconds per call of the probe's work in a child process, TensorFlow's default
    (`onednn=False`) or oneDNN forced on; None when the child fails."""
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if onednn:
        env[ENV] = "1"
    try:
        result = subprocess.run([sys.executable, "-c", _PROBE, str(rounds)], env=env,
                                capture_output=True, text=True, timeout=300)
        return float(result.stdout.strip().splitlines()[-1]) if result.returncode == 0 \
            else None
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None


def measure(measure_fn=probe):
    """Both settings, alternated twice (a busy neighbour then slows both alike); the
    best time of each. Returns (default_ms, onednn_ms), either None when its probes
    failed."""
    times = {False: [], True: []}
    for onednn in (False, True, False, True):
        ms = measure_fn(onednn)
        if ms is not None:
            times[onednn].append(ms)
    return tuple(min(times[k]) if times[k] else None for k in (False, True))


def _busy():
    """True when other work keeps most cores busy: timings then say more about the
    neighbours than about oneDNN (under load both settings measure alike)."""
    try:
        return os.getloadavg()[0] > BUSY_LOAD * (os.cpu_count() or 1)
    except OSError:
        return False


def decide(measure_fn=probe, log=None, measure_now=True):
    """Sets `TF_ENABLE_ONEDNN_OPTS=1` in this process's environment when oneDNN is faster
    on this CPU and the user did not set it; must run before TensorFlow is imported.
    Returns a one-line account of the decision (None when the user's setting stood or
    nothing applies), also passed to `log` when the measurement ran now. With
    `measure_now=False` only a cached answer is used (a server does not stop for a
    measurement): without one, TensorFlow's default stands."""
    if ENV in os.environ or os.environ.get(_DECIDED):
        return None  # the user's choice, or decided already (a parent process)
    if "tensorflow" in sys.modules:
        return None  # too late to change it
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return None  # the wheels with oneDNN as an option
    os.environ[_DECIDED] = "1"
    key, path = fingerprint(), cache_path()
    cache = _read_cache(path)
    entry = cache.get(key)
    fresh = not (isinstance(entry, dict) and "onednn" in entry)
    if fresh and not measure_now:
        return None
    if fresh and _busy():
        return ("oneDNN left at TensorFlow default for now: the CPU is busy (load "
                f"average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores), so a "
                "measurement would not tell; it runs on a later, quieter start")
    if fresh:
        if log:
            log("Measuring once on this machine whether oneDNN makes TensorFlow faster "
                f"(cached in {path}; set {ENV}=0 or 1 to choose yourself)...")
        default_ms, onednn_ms = measure(measure_fn)
        if default_ms is None or onednn_ms is None:
            return None  # a probe failed: leave TensorFlow's default, measure next time
        entry = {"onednn": onednn_ms * MIN_GAIN <= default_ms, "default_ms":
                 round(default_ms, 3), "onednn_ms": round(onednn_ms, 3),
                 "measured": time.strftime("%Y-%m-%d")}
        cache[key] = entry
        _write_cache(path, cache)
    if entry["onednn"]:
        os.environ[ENV] = "1"
    speed = entry["default_ms"] / entry["onednn_ms"] if entry.get("onednn_ms") else 0
    measured = f"measured {entry.get('measured', '?')}; {ENV} overrides"
    line = (f"oneDNN on: {speed:.2f}x TensorFlow's default speed on this CPU ({measured})"
            if entry["onednn"] else
            f"oneDNN left at TensorFlow default: turning it on measured {speed:.2f}x the "
            f"default's speed on this CPU, under the {MIN_GAIN:.1f}x it takes ({measured})")
    if fresh and log:
        log(line)
    return line


def state():
    """Whether TensorFlow (imported) runs with oneDNN: for benchmark tables and logs."""
    try:
        from tensorflow.python.util import _pywrap_util_port
        return bool(_pywrap_util_port.IsMklEnabled())
    except Exception:
        return os.environ.get(ENV) == "1"
