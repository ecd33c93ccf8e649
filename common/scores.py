"""Model outputs -> reported scores, in NumPy: the softmax of logits, the sigmoid of each
(multi-label), the mean of a document's windows, the cosine of two sentences' vectors, and
the correlations of predicted scores with gold ones (Pearson's, Spearman's).

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


def pearson(x, y):
    """Pearson's correlation of two sequences, in float64 (0 when either is constant)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / denominator) if denominator else 0.0


def _ranks(values):
    """Ranks from 1, ties given their average rank."""
    values = np.asarray(values)
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), np.float64)
    sorted_values = values[order]
    start = 0
    for end in range(1, len(values) + 1):
        if end == len(values) or sorted_values[end] != sorted_values[start]:
            ranks[order[start:end]] = (start + end + 1) / 2.0
            start = end
    return ranks


def spearman(x, y):
    """Spearman's rank correlation: Pearson's of the ranks, ties given their average
    (scipy.stats.spearmanr)."""
    return pearson(_ranks(x), _ranks(y))


def row_cosines(u, v):
    """The cosine of each row of `u` with the same row of `v` ([n, d] each), in float64;
    0 where either vector is zero."""
    u, v = np.asarray(u, np.float64), np.asarray(v, np.float64)
    norms = np.linalg.norm(u, axis=-1) * np.linalg.norm(v, axis=-1)
    return np.where(norms > 0, (u * v).sum(-1) / np.where(norms > 0, norms, 1.0), 0.0)
