"""A machine-readable record of a run: one JSON object per line in
`output_dir/metrics.jsonl`.

Pipeline position: written by the training loop (`training.loop`, one "train" line per
log step) and the runner (`training.runner`: one "evaluation" line per evaluation, one
"end" line with the final results); read by anything that plots or compares runs:

    {"event": "train", "step": 300, "total_steps": 1000, "loss": 2.41, ...,
     "learning_rate": 4.1e-05, "gradient_norm": 1.3, "sequences_per_second": 61.2,
     "tokens_per_second": 7812, "elapsed_seconds": 143.2, "eta_seconds": 334.1, "time": ...}
    {"event": "evaluation", "step": 1000, "accuracy": 0.91, ..., "time": ...}
    {"event": "end", "step": 1000, "eval_results": {...}, "time": ...}

Every line is valid JSON even after a kill -9: each object is one append, and a line torn
by a kill (no newline at the end) is cut off when the file is next opened for writing;
`read` also skips a torn last line. A rerun that resumes appends to the same file.
"""

import json
import math
import os
import time

FILE_NAME = "metrics.jsonl"


def _plain(value):
    """JSON-able: NumPy scalars as Python numbers, NaN/Inf as strings."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class MetricsLog:
    """Appends events to `<directory>/metrics.jsonl` (local folders; a remote one is
    skipped, as TensorBoard's summaries record it there)."""

    def __init__(self, directory):
        self.path = None if "://" in str(directory) else os.path.join(directory, FILE_NAME)
        if self.path and os.path.exists(self.path):
            _cut_torn_tail(self.path)

    def write(self, event, **fields):
        if not self.path:
            return
        record = {"event": event, **{k: _plain(v) for k, v in fields.items()},
                  "time": round(time.time(), 3)}
        line = json.dumps(record, sort_keys=False) + "\n"
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line)  # one append: a kill leaves at most this line torn


def _cut_torn_tail(path):
    """Truncates a last line that has no newline (a write cut by a kill)."""
    with open(path, "rb+") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        if size == 0:
            return
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        f.seek(0)
        data = f.read()
        f.truncate(data.rfind(b"\n") + 1)


def read(path):
    """The events of a metrics file, skipping a torn last line."""
    events = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except ValueError:
            if number == len(lines) - 1:  # the last line, cut by a kill
                break
            raise ValueError(f"{path}:{number + 1}: not a JSON line.") from None
    return events
