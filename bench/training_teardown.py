"""Benchmark: how long `run_pretraining.py` sits idle once training has ended, this
checkout against an older one (e.g. before one replica read its dataset's own iterator).

Each round runs, per checkout and in a fresh process, `run_pretraining.py --do_train` for
`--steps` steps of a small model (2 layers, hidden 128) on made-up records, and reads two
times: the whole process (launch to exit), and the gap from its last "Saved checkpoint"
line to the "Wrote ... for fine-tuning" line that follows (the log's own timestamps): the
training iterator is deleted in between, and nothing else there takes more than a tenth of
a second. The gap varies from run to run (it depends on when tf.data's autotuning thread
next wakes), hence the rounds and both the median and the largest gap.

    git worktree add /tmp/before <commit>
    python -m bench.training_teardown --before=/tmp/before [--rounds=6] [--steps=30]
"""

import dataclasses
import datetime
import functools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from bench import harness
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = {"vocab_size": 1000, "hidden_size": 128, "num_hidden_layers": 2,
          "num_attention_heads": 2, "intermediate_size": 512, "hidden_act": "gelu",
          "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
          "max_position_embeddings": 128, "type_vocab_size": 2, "initializer_range": 0.02}
SEQ, PREDICTIONS, RECORDS = 128, 20, 2048
TIME = re.compile(r"^I\d{4} (\d\d:\d\d:\d\d\.\d+) .*?\] (.*)$")


def write_inputs(work):
    """bert_config.json and one TFRecord file of random pre-training examples."""
    import tensorflow as tf
    with open(os.path.join(work, "bert_config.json"), "w") as f:
        json.dump(CONFIG, f)
    rng = np.random.default_rng(0)

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))

    with tf.io.TFRecordWriter(os.path.join(work, "train.tfrecord")) as writer:
        for _ in range(RECORDS):
            features = {
                "input_ids": ints(rng.integers(5, CONFIG["vocab_size"], SEQ)),
                "input_mask": ints([1] * SEQ), "segment_ids": ints([0] * SEQ),
                "masked_lm_positions": ints(sorted(rng.choice(SEQ, PREDICTIONS, False))),
                "masked_lm_ids": ints(rng.integers(5, CONFIG["vocab_size"], PREDICTIONS)),
                "masked_lm_weights": tf.train.Feature(
                    float_list=tf.train.FloatList(value=[1.0] * PREDICTIONS)),
                "next_sentence_labels": ints([int(rng.integers(2))])}
            writer.write(tf.train.Example(features=tf.train.Features(
                feature=features)).SerializeToString())


def idle_after_training(log):
    """Seconds from the last "Saved checkpoint" line to the next line of the log."""
    times = [(datetime.datetime.strptime(m.group(1), "%H:%M:%S.%f"), m.group(2))
             for m in map(TIME.match, log.splitlines()) if m]
    last = max(i for i, (_, text) in enumerate(times) if text.startswith("Saved checkpoint"))
    return (times[last + 1][0] - times[last][0]).total_seconds()


def one_run(root, work, steps):
    """{what: seconds} of one `run_pretraining.py` process with `root`'s code."""
    out = tempfile.mkdtemp(dir=work)
    command = [sys.executable, os.path.join(root, "run_pretraining.py"), "--do_train",
               f"--bert_config_file={work}/bert_config.json",
               f"--input_file={work}/train.tfrecord", f"--output_dir={out}/run",
               f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PREDICTIONS}",
               "--train_batch_size=16", f"--num_train_steps={steps}",
               "--num_warmup_steps=2", "--learning_rate=1e-4"]
    start = time.perf_counter()
    subprocess.run(command, capture_output=True, text=True, check=True, cwd=work)
    seconds = time.perf_counter() - start
    with open(os.path.join(out, "run", "log.txt"), encoding="utf-8") as f:
        idle = idle_after_training(f.read())
    shutil.rmtree(out)
    return {"whole process": seconds, "idle after training": idle}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.Before):
    """The flags of this bench (`python -m bench.training_teardown --help`)."""
    rounds: int = setting(6, help="Rounds, the checkouts alternating.")
    steps: int = setting(30, help="Training steps per run (batch 16, length 128).")


def main(settings):
    work = tempfile.mkdtemp(prefix="training_teardown_")
    write_inputs(work)
    roots = {"this checkout": ROOT}
    if settings.before:
        roots["before"] = os.path.abspath(settings.before)
    results = harness.alternate({name: functools.partial(one_run, root, work, settings.steps)
                                 for name, root in roots.items()}, settings.rounds)
    shutil.rmtree(work)
    print(f"\n{harness.describe()}\n{settings.rounds} rounds of run_pretraining.py, "
          f"{settings.steps} steps, seconds\n")
    rows = []
    for name in roots:
        idle = [r["idle after training"] for r in results[name]]
        rows.append([name, f"{statistics.median(r['whole process'] for r in results[name]):.1f}",
                     f"{statistics.median(idle):.2f}", f"{max(idle):.2f}",
                     " ".join(f"{s:.1f}" for s in idle)])
    print(harness.table(["checkout", "whole process (median)", "idle after training (median)",
                         "idle (largest)", "idle, each run"], rows))


if __name__ == "__main__":
    harness.run(main, Settings)
