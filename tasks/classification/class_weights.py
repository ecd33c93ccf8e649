"""Class weights for imbalanced labels (`run_classifier.py --class_weights`): what the flag
says, the weights of `balanced` counted from the training examples, and the record of the
weights a run trained with.

Pipeline position: `tasks.classification.config` checks the flag before TensorFlow loads
(`parse`); the classification task resolves it once it has read the training file and its
label list (`resolve`), writes `output_dir/class_weights.json` and weighs its loss with
the result (`tasks.classification.task`).

The conventions are the peers' a user knows:
  * single-label: one weight per label; `balanced` is scikit-learn's (what Keras users
    pass to `fit(class_weight=)`): examples / (labels x the label's examples), so that the
    weights average 1 over the training examples and the learning rate keeps its meaning.
    The loss is Keras's with sample weights: the weight of each example's label times its
    cross-entropy, averaged over the batch's examples.
  * multi-label: one weight per label for its positive term, PyTorch's `pos_weight` of
    `BCEWithLogitsLoss`; `balanced` is a label's negatives over its positives, PyTorch's
    own suggestion.
"""

import json
import math
import os

import numpy as np

from common import file_io

BALANCED = "balanced"
FILE_NAME = "class_weights.json"


def parse(value):
    """None, `BALANCED`, or a tuple of positive floats, from `--class_weights` (a string
    of comma-separated numbers, or in Python a sequence of numbers). Raises ValueError
    naming the flag."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str) and value.strip().lower() == BALANCED:
        return BALANCED
    items = value.split(",") if isinstance(value, str) else list(value)
    try:
        weights = tuple(float(item) for item in items if str(item).strip())
    except (TypeError, ValueError):
        weights = ()
    if not weights:
        raise ValueError(f"--class_weights={value!r}: must be {BALANCED!r} or one number per "
                         f"label, comma-separated, in the run's label order (e.g. 1,4.5).")
    bad = [w for w in weights if not (w > 0 and math.isfinite(w))]
    if bad:
        raise ValueError(f"--class_weights={value!r}: {bad[0]:g} is not a positive number; "
                         f"every weight must be above 0.")
    return weights


def label_counts(labels, label_list, multi_label):
    """How many training examples have each label of `label_list`: `labels` holds one
    label per example, or for multi-label data a sequence of labels per example."""
    index = {label: i for i, label in enumerate(label_list)}
    counts = np.zeros(len(label_list), np.int64)
    for label in labels:
        for one in (label if multi_label else [label]):
            counts[index[str(one)]] += 1
    return counts


def balanced(counts, examples, multi_label):
    """The `balanced` weights of `counts` (per label) over `examples` training examples:
    examples / (labels x count), or for multi-label data negatives / positives."""
    counts = np.asarray(counts, np.float64)
    if multi_label:
        return (examples - counts) / counts
    return examples / (len(counts) * counts)


def resolve(spec, label_list, labels, multi_label, train_path):
    """The weights (a float32 array, one per label of `label_list`) that `spec` (what
    `parse` returns) gives for the training examples' `labels`, and the record written
    beside the run. Raises ValueError naming the flag and the fix."""
    counts = label_counts(labels, label_list, multi_label)
    order = ", ".join(label_list)
    if spec == BALANCED:
        for label, n in zip(label_list, counts):
            if n == 0 or (multi_label and n == len(labels)):
                raise ValueError(
                    f"--class_weights=balanced: {'every' if n else 'no'} example of "
                    f"{train_path} has the label {label!r}, so its weight cannot be "
                    f"counted; give one weight per label instead (in this order: {order}).")
        weights = balanced(counts, len(labels), multi_label)
    else:
        if len(spec) != len(label_list):
            raise ValueError(
                f"--class_weights: {len(spec)} weight(s) for {len(label_list)} labels; give "
                f"one per label, in the run's label order: {order}.")
        weights = np.asarray(spec, np.float64)
    record = {"class_weights": spec if spec == BALANCED else list(spec),
              "kind": "positive weight per label (multi-label)" if multi_label
              else "weight per label",
              "labels": list(label_list), "train_examples": len(labels),
              "train_counts": counts.tolist(), "weights": [float(w) for w in weights]}
    return weights.astype(np.float32), record


def describe(record):
    """One line for the log: each label's weight and training examples."""
    pairs = ", ".join(f"{label} {w:.4g} ({n:,} examples)" for label, w, n in zip(
        record["labels"], record["weights"], record["train_counts"]))
    return f"Class weights ({record['kind']}), in {FILE_NAME}: {pairs}."


def write(output_dir, record):
    """`output_dir/class_weights.json`, written atomically."""
    file_io.atomic_write_text(os.path.join(output_dir, FILE_NAME),
                              json.dumps(record, indent=2) + "\n")
