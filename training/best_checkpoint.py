"""A run's best checkpoint, `output_dir/best/`: the weights that scored best on dev
(`model.ckpt`) and their results (`best_results.txt`, "key = value" lines in the format
of the original's eval_results.txt, for people and for the code alike). The one reader
and the one writer of that folder's results.

Pipeline position: written while fine-tuning (each evaluation that beats the best so far,
and a grid's choice among its combinations), read to resume that comparison, to predict
and export with the best weights, and to compare a grid's combinations.
"""

import os

import tensorflow as tf

from common import file_io

BEST_DIR = "best"
RESULTS_FILE = "best_results.txt"
CHECKPOINT = "model.ckpt"


def folder(output_dir):
    """The best checkpoint's folder of a run."""
    return os.path.join(output_dir, BEST_DIR)


def checkpoint(output_dir):
    """The best checkpoint's prefix of a run."""
    return os.path.join(output_dir, BEST_DIR, CHECKPOINT)


def read_results(output_dir):
    """{key: value as written} of the run's best checkpoint, or None when it kept none."""
    path = os.path.join(output_dir, BEST_DIR, RESULTS_FILE)
    if not file_io.exists(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        return dict(line.rstrip("\n").split(" = ", 1) for line in f if " = " in line)


def write_results(best_folder, text, step):
    """`text` (a task's results in the original's format) as `best_folder`'s results,
    with the step they were measured at when the text leaves it out."""
    if not any(line.startswith("global_step = ") for line in text.splitlines()):
        text += f"global_step = {step}\n"
    file_io.atomic_write_text(os.path.join(best_folder, RESULTS_FILE), text)


def add_results(best_folder, **entries):
    """Lines added to `best_folder`'s results (a grid's chosen combination)."""
    path = os.path.join(best_folder, RESULTS_FILE)
    with tf.io.gfile.GFile(path) as f:
        text = f.read()
    text += "".join(f"{key} = {value}\n" for key, value in entries.items())
    file_io.atomic_write_text(path, text)
