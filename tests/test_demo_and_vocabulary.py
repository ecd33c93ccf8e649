"""The README's main job runs end to end."""

import os
import subprocess
import sys

from tests.startup_lines import tensorflow_startup_messages

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_demo_runs_end_to_end(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run([sys.executable, os.path.join(ROOT, "demo.py"),
                             f"--output_dir={tmp_path}"], capture_output=True, text=True,
                            cwd=ROOT, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    # Quiet: the console holds the demo's own lines only (stage titles, their indented
    # lines, the last line); TensorFlow's start-up and library lines are in log.txt.
    assert result.stderr == "", result.stderr[-3000:]
    for line in result.stdout.splitlines():
        assert line == "" or line.startswith(("[", "    ", "Done in")), line
    log = (tmp_path / "log.txt").read_text()
    for message in tensorflow_startup_messages():  # what TensorFlow printed: in the log
        assert message in log and message not in result.stdout, message
    assert "agree on 28/28 sentences" in result.stdout
    assert "largest activation difference after the round trip: 0.0" in result.stdout
    assert "instances from 4 documents" in result.stdout
    losses = [float(line.split("masked-LM loss ")[1].split(",")[0])
              for line in result.stdout.splitlines() if "masked-LM loss" in line]
    assert len(losses) == 4 and losses[-1] < losses[0] - 1.0, losses
    accuracy = float(result.stdout.split("dev accuracy ")[1].split("%")[0])
    assert accuracy >= 80.0, result.stdout
    assert "'The soundtrack was wonderful from start to finish .' -> label 1" in result.stdout
    assert "'The plot was boring and slow .' -> label 0" in result.stdout
    for name in ("vocab.txt", "pretraining.tfrecord", "model/bert_config.json", "model/bert_model.ckpt.index",
                 "features.jsonl", "saved_model/saved_model.pb"):
        assert (tmp_path / name).exists(), name
