"""What every benchmark here shares, written once: its flags (a dataclass of settings, as
the tools declare theirs), the machine line a table must carry (CPU model, vector ISA,
cores, oneDNN), TensorFlow's matmul peak measured in the same run, a command timed in a
fresh process and where its time went (from its log), measures taken in alternating
rounds, and a Markdown table.

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Settings:
        rounds: int = setting(3, help="Rounds, the measures alternating.")

    def main(settings): ...

    if __name__ == "__main__":
        harness.run(main, Settings)
"""

import dataclasses
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import time
from typing import Optional

from common.settings import setting


def run(main, settings_class):
    """Defines an absl flag per field of the dataclass `settings_class` (declared with
    `common.settings.setting`: name, type, default, help; a field without a default is a
    required flag), parses the command line and calls `main(settings)`."""
    from absl import app, flags

    from cli.flags import configs_from_flags, define_settings, list_in_help
    define_settings(settings_class)
    list_in_help()

    def parsed(argv):
        if len(argv) > 1:
            raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
        main(configs_from_flags(flags.FLAGS, settings_class)[0])

    app.run(parsed)


# --- The machine --------------------------------------------------------------------------

def cpu_model():
    from common import cpu
    return cpu.identity()[0] or "unknown CPU"


def isa():
    """The widest vector extensions the CPU has (AVX-512 subsets, AMX, AVX2, FMA)."""
    from common import cpu
    have = cpu.identity()[1].split()
    if not have:
        return "unknown ISA"
    wanted = ("avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "avx_vnni", "avx2", "fma")
    return ", ".join(f for f in wanted if f in have) or "no AVX2"


def set_onednn(mode):
    """`auto` decides as the entry points do (`common.onednn`: measured once, cached);
    `on` / `off` force it. Call before TensorFlow is imported."""
    from common import onednn
    if mode == "auto":
        onednn.decide(log=print)
    else:
        os.environ[onednn.ENV] = "1" if mode == "on" else "0"


def describe(threads=None):
    """One line for a table's caption: the CPU, its ISA, the cores (and `threads` used),
    TensorFlow's version and oneDNN state. Imports TensorFlow (decide oneDNN first)."""
    import tensorflow as tf

    from common import onednn
    return (f"CPU: {cpu_model()} ({isa()}), {os.cpu_count()} cores"
            + (f", {threads} threads" if threads else "")
            + f"; TensorFlow {tf.__version__}, oneDNN {'on' if onednn.state() else 'off'}"
            f" ({onednn.ENV}={os.environ.get(onednn.ENV, 'unset')})")


def forward_flops(layers, hidden, intermediate, batch, seq):
    """Matmul FLOPs of one forward pass of a BERT encoder (QKVO, FFN, attention scores
    and context)."""
    per_token = 2 * 4 * hidden * hidden + 2 * 2 * hidden * intermediate + 2 * 2 * seq * hidden
    return batch * seq * layers * per_token


def matmul_peak(dtype="float32"):
    """TensorFlow's matmul rate (FLOP/s) in `dtype` on this machine: the best of five
    timings of ten 2048^3 products."""
    import tensorflow as tf
    a = tf.cast(tf.random.normal([2048, 2048]), dtype)
    f = tf.function(lambda x: tf.matmul(x, x))
    f(a).numpy()
    best = 0.0
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(10):
            out = f(a)
        out.numpy()
        best = max(best, 10 * 2 * 2048 ** 3 / (time.perf_counter() - start))
    return best


# --- Measuring ----------------------------------------------------------------------------

RESULT_PREFIX = "RESULT "  # the line a peer's process prints its figures on, as JSON


def print_result(figures):
    """Prints a peer process's figures (JSON-able) for `read_result`."""
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


def read_result(stdout):
    """The figures a peer process printed with `print_result`."""
    line = next(x for x in stdout.splitlines() if x.startswith(RESULT_PREFIX))
    return json.loads(line[len(RESULT_PREFIX):])


def in_fresh_process(argv, *, env=None, cwd=None, capture=True, check=True, timeout=None):
    """Runs `argv` (a list; a leading "python" means this interpreter) in a new process,
    TensorFlow's C++ logging silenced. Returns (wall seconds, the CompletedProcess)."""
    if argv and argv[0] == "python":
        argv = [sys.executable, *argv[1:]]
    start = time.perf_counter()
    done = subprocess.run(argv, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", **(env or {})),
                          cwd=cwd, capture_output=capture, text=True, check=check,
                          timeout=timeout)
    return time.perf_counter() - start, done


_STAMP = re.compile(r"I(\d\d)(\d\d) (\d\d:\d\d:\d\d\.\d+) .*?\] (.*)")  # absl's log prefix


def process_breakdown(log_path, launched, ended, results_line="Eval results"):
    """{phase: seconds} of a fine-tuning script's process (`--do_train` then its dev or
    predict pass) from the timestamps of its log (`log.txt` in its output folder), launched
    and ended at the given `time.time()`s: start-up (launch to the first line), data and
    weights (to "Training from step"), tracing (the first log window's excess over the
    steady step time of the others), training steps, evaluation (the last step to the
    first line containing `results_line`: the last checkpoint's save, the pass, its
    scoring and the best weights' save; "of which the dev pass" as the evaluation's own
    log line times it, where there is one) and the end (to exit)."""
    marks = []
    with open(log_path, encoding="utf-8") as f:
        for line in f:
            m = _STAMP.match(line)
            if m:
                when = datetime.datetime.strptime(
                    f"{datetime.date.fromtimestamp(launched).year}{m.group(1)}{m.group(2)} "
                    f"{m.group(3)}", "%Y%m%d %H:%M:%S.%f").timestamp()
                marks.append((when, m.group(4)))
    first = marks[0][0]
    loop_start = next(t for t, text in marks if text.startswith("Training from step"))
    steps = [(t, int(re.match(r"step (\d+)/", text).group(1))) for t, text in marks
             if re.match(r"step \d+/\d+", text)]
    results = next(t for t, text in marks if results_line in text)
    from training.runner import EVALUATED  # the dev pass's seconds in its log line
    passes = [float(m.group(1)) for _, text in marks for m in [EVALUATED.search(text)] if m]
    (t1, s1), (tn, sn) = steps[0], steps[-1]
    steady = (tn - t1) / max(sn - s1, 1)
    tracing = (t1 - loop_start) - s1 * steady
    return {"start-up": first - launched, "data and weights": loop_start - first,
            "tracing": tracing, "training steps": tn - loop_start - tracing,
            "evaluation": results - tn, "of which the dev pass": passes[-1] if passes
            else float("nan"), "end": ended - results}


def said(parts):
    """The line a bench prints for `process_breakdown`'s figures (a phase the log did not
    time left out)."""
    return "  where the time went: " + ", ".join(f"{k} {v:.1f} s" for k, v in parts.items()
                                                 if v == v)


def alternate(measures, rounds, log=print):
    """Calls each function of `measures` ({name: function()}) once per round, in turn and
    in reverse order every other round (A B, B A, ...), so that a machine's drift and the
    cost of going first fall on all of them alike. Returns {name: [result per round]}."""
    results = {name: [] for name in measures}
    names = list(measures)
    for number in range(rounds):
        for name in names if number % 2 == 0 else names[::-1]:
            measure = measures[name]
            results[name].append(measure())
            if log:
                log(f"round {number + 1}/{rounds}: {name}: {results[name][-1]}")
    return results


def medians(results):
    """{name: median of its list} of `alternate`'s results."""
    return {name: statistics.median(values) for name, values in results.items()}


def table(header, rows):
    """A Markdown table: `header` a list of column names, `rows` lists of cells (str() of
    each). Returns the text, a line per row."""
    lines = ["| " + " | ".join(map(str, header)) + " |", "|---" * len(header) + "|"]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    return "\n".join(lines)


def verdicts(checks):
    """An acceptance run's last lines: each check of `checks` ((passed, what against the
    bar), ...) as PASS or FAIL; exits with status 1 when one failed."""
    for passed, text in checks:
        print(f"{'PASS' if passed else 'FAIL'}  {text}")
    if not all(passed for passed, _ in checks):
        sys.exit(1)


PROJECT_PACKAGES = ("common", "text", "modeling", "serving", "training", "cli", "data_prep",
                    "tasks")


def import_project_from(root):
    """Makes the project's packages import from the checkout `root` (another commit's, to
    time its code beside this one's): `root` first on `sys.path`, and this checkout's
    modules imported so far (the settings of the flags) forgotten. Call before importing
    anything of the project that is to be timed."""
    sys.path.insert(0, root)
    for name in list(sys.modules):
        if name.split(".")[0] in PROJECT_PACKAGES:
            del sys.modules[name]


# --- Settings several benches share (a bench's Settings subclasses those it takes; a
# subclass may change only the default: `rounds: int = 4`) --------------------------------

@dataclasses.dataclass(frozen=True, kw_only=True)
class SharedData:
    shared_dir: str = setting(help="The shared data folder (`../shared/data`: GLUE, "
                              "CoNLL-2003, SQuAD, WikiText, Wikipedia dumps).")


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkDir:
    work_dir: Optional[str] = setting(None, help="Folder for this bench's files (default: a "
                                      "new temporary folder).")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Before:
    before: Optional[str] = setting(None, help="A checkout of an older commit to time beside "
                                    "this one (`git worktree add`).")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Rounds:
    rounds: int = setting(3, help="Rounds of measurement, the implementations alternating; "
                          "the median counts.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Threads:
    threads: int = setting(2, help="Threads of every implementation (TensorFlow's pools, "
                           "PyTorch's, ONNX Runtime's).")

    def thread_env(self):
        """The environment that gives a process's TensorFlow and OpenMP pools `threads`."""
        return {"TF_NUM_INTRAOP_THREADS": str(self.threads),
                "OMP_NUM_THREADS": str(self.threads)}


@dataclasses.dataclass(frozen=True, kw_only=True)
class OneDNN:
    onednn: str = setting("auto", choices=("auto", "on", "off"), help="oneDNN: auto decides "
                          "as the entry points do (measured once, cached); on or off force "
                          "it.")
