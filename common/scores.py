"""Model outputs -> reported scores, in NumPy: the softmax of logits, the sigmoid of each
(multi-label), and the mean of a document's windows.

Pipeline position: after the model, wherever answers are made in Python (the tasks'
evaluation and predictions, `serving.load`'s fast paths); the exports do the same in
TensorFlow ops (`tf.nn.softmax`, `tf.math.unsorted_segment_mean`).
"""

import numpy as np


def softmax(logits, axis=-1):
    """NumPy softmax in float64 (for reported probabilities)."""
    logits = np.asarray(logits, np.float64)
    logits = logits - logits.max(axis=axis, keepdims=True)
    exps = np.exp(logits)
    return exps / exps.sum(axis=axis, keepdims=True)


def sigmoid(logits):
    """NumPy logistic function in float64 (each label's probability, multi-label)."""
    logits = np.asarray(logits, np.float64)
    return np.exp(-np.logaddexp(0.0, -logits))


def mean_over_windows(values, rows, num_rows):
    """The mean of the `values` of each row's windows, in float64: a document read in
    several windows is scored by the mean of its windows' logits (`text.packing`'s
    "windows").

    Args:
        values: float array [windows, ...].
        rows: int array [windows]: the row each window belongs to; every row in
            [0, num_rows) has at least one.
        num_rows: int.

    Returns:
        float64 array [num_rows, ...].
    """
    values = np.asarray(values, np.float64)
    rows = np.asarray(rows)
    if len(rows) == num_rows:  # a window a row (each has one): no sum, no scatter-add
        means = np.empty_like(values)
        means[rows] = values
        return means
    sums = np.zeros((num_rows,) + values.shape[1:], np.float64)
    np.add.at(sums, rows, values)
    counts = np.bincount(rows, minlength=num_rows)
    return sums / counts.reshape((-1,) + (1,) * (values.ndim - 1))
