"""What a serving process costs: a new Python process from its start to its first answer
(imports, load, one request), and its RSS after 1,000 single-row requests; for
`serving.load` and for ONNX Runtime with the Rust `tokenizers`, on the same rows.

Used by the serving benchmarks (`serving_process.py`, `serving_tasks.py`); the rows are a
JSON file of strings or of [text_a, text_b] pairs.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_OURS = """
import sys, time, json
import serving  # the clone on PYTHONPATH, as docs/serving.md's application has it
predict = serving.load({export!r}, precision={precision!r})
rows = [r if isinstance(r, str) else tuple(r) for r in json.loads(open({rows!r}).read())]
predict([rows[0]])
print("first", flush=True)
for r in rows[:1000]:
    predict([r])
rss = int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) / 1024
print(json.dumps({{"rss_mb": rss, "tensorflow": "tensorflow" in sys.modules}}), flush=True)
"""

_ORT = """
import sys, json
import numpy as np
import onnxruntime
from tokenizers import BertWordPieceTokenizer
tokenizer = BertWordPieceTokenizer({vocab!r}, lowercase=True)
tokenizer.enable_truncation({max_len})
session = onnxruntime.InferenceSession({onnx!r}, providers=["CPUExecutionProvider"])
rows = json.loads(open({rows!r}).read())
def predict(row):
    e = tokenizer.encode(row) if isinstance(row, str) else tokenizer.encode(*row)
    ids = np.array([e.ids], np.int64)
    return session.run(None, {{"input_ids": ids, "attention_mask": np.ones_like(ids),
                               "token_type_ids": np.array([e.type_ids], np.int64)}})
predict(rows[0])
print("first", flush=True)
for r in rows[:1000]:
    predict(r)
rss = int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) / 1024
print(json.dumps({{"rss_mb": rss, "tensorflow": "tensorflow" in sys.modules}}), flush=True)
"""


def write_rows(rows, path):
    """1,001 request rows (repeated as needed) as the children's JSON file."""
    rows = [r if isinstance(r, str) else list(r) for r in rows]
    with open(path, "w", encoding="utf-8") as f:
        json.dump((rows * (1 + 1001 // len(rows)))[:1001], f)
    return path


def ours_child(export_dir, precision, rows_file):
    return _OURS.format(root=ROOT, export=export_dir, precision=precision, rows=rows_file)


def ort_child(vocab, max_len, onnx_file, rows_file):
    return _ORT.format(vocab=vocab, max_len=max_len, onnx=onnx_file, rows=rows_file)


def cold_start(code):
    """(seconds from process start to its first answer, the child's final report: RSS,
    whether it imported TensorFlow, and its console lines)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if "import serving" in code:  # ours: the clone on the path, nothing else
        env["PYTHONPATH"] = ROOT
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=tempfile.gettempdir(),
                             env=env)
    first = child.stdout.readline()
    seconds = time.perf_counter() - start
    rest, err = child.communicate()
    if first.strip() != "first" or child.returncode:
        sys.exit(f"child failed:\n{err[-3000:]}")
    report = json.loads(rest.strip().splitlines()[-1])
    report["stderr_lines"] = len([line for line in err.splitlines() if line.strip()])
    return seconds, report


def probe(children, rounds):
    """{name: (median seconds to the first answer, median RSS in MB, imported
    TensorFlow in any round, most console lines)} of the children {name: code}, run in
    turn, `rounds` times."""
    import statistics
    starts, reports = {n: [] for n in children}, {n: [] for n in children}
    for _ in range(rounds):
        for name, code in children.items():
            seconds, report = cold_start(code)
            starts[name].append(seconds)
            reports[name].append(report)
    return {n: (statistics.median(starts[n]),
                statistics.median(r["rss_mb"] for r in reports[n]),
                any(r["tensorflow"] for r in reports[n]),
                max(r["stderr_lines"] for r in reports[n])) for n in children}
