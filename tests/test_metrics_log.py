"""training.metrics_log: every line of metrics.jsonl is valid JSON, even after a kill cut
the last one; the reader skips a torn last line."""

import json

import numpy as np
import pytest

from training import metrics_log


def test_lines_stay_valid_after_a_torn_write(tmp_path):
    log = metrics_log.MetricsLog(str(tmp_path))
    log.write("train", step=1, loss=np.float32(2.5), eta_seconds=None)
    log.write("evaluation", step=1, accuracy=0.5, per_type={"PER": {"f1": 90.0}})
    path = tmp_path / metrics_log.FILE_NAME
    with open(path, "a") as f:
        f.write('{"event": "train", "step": 2, "lo')  # a kill in the middle of a write
    events = metrics_log.read(str(path))
    assert [e["event"] for e in events] == ["train", "evaluation"]
    assert events[0]["loss"] == 2.5 and events[1]["per_type"]["PER"]["f1"] == 90.0
    # A resumed run cuts the torn line off before appending: every line is JSON again.
    metrics_log.MetricsLog(str(tmp_path)).write("train", step=2, loss=float("nan"))
    lines = path.read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(line) for line in lines)
    assert json.loads(lines[-1])["loss"] == "nan"


def test_a_torn_line_inside_the_file_is_an_error(tmp_path):
    path = tmp_path / metrics_log.FILE_NAME
    path.write_text('{"event": "train"}\n{"eve\n{"event": "end"}\n')
    with pytest.raises(ValueError, match=":2: not a JSON line"):
        metrics_log.read(str(path))
