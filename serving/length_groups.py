"""A request's rows run in groups of similar length: each group padded to its own longest
row, so a batch of short sentences and a few long ones is not all padded to the longest;
and no model call computes more than a budget of positions (a large request's rows in a
few calls, each row at its own padded length).

Pipeline position: inside `serving.load` (`serving.predictor`), between a task's fast
path (which packs a request into id arrays padded to its longest row) and a model that
computes every position it is given (`model.tflite`). The rows are sorted by length and
cut where that saves more positions than another call costs (`overhead`, in positions):
over SST-2 dev in batches of 32, padding each batch to its longest computes 2.06x the
real tokens; in groups (the default overhead, about 3 groups a batch), 1.26x. The answers
are the same, up to float rounding of other matmul shapes: a row's outputs at its real
positions do not depend on how far it is padded.
"""

import numpy as np

from text.packing import padded_length

# What one more model call costs, in positions (rows x length) computed: measured with
# `bench/serving_speed.py --group_overhead` (see bench/RESULTS.md).
GROUP_OVERHEAD = 64
# The most positions one model call computes (`run_in_row_chunks`). A call's activations
# grow with rows x length (the attention's with rows x length^2) and past the CPU's caches
# a large request of long texts ran slower per text than small ones; the budgets measured
# are in research/RESULTS-archive.md ("At most 1,024 positions a TF Lite call").
MAX_POSITIONS = 1024


def row_lengths(input_mask):
    """Positions each row uses (its last real position + 1), for [rows, seq] or [rows,
    ..., seq] masks (multiple choice: the longest of a row's sequences)."""
    used = input_mask.reshape(len(input_mask), -1, input_mask.shape[-1]).any(axis=1)
    return np.where(used.any(axis=1), used.shape[1] - np.argmax(used[:, ::-1], axis=1), 0)


def plan_groups(lengths, multiple, overhead=GROUP_OVERHEAD):
    """The rows (indices into `lengths`) of each group, shortest first: the cut of the
    rows sorted by length into runs that minimises the positions computed (each run
    padded to its longest, rounded up to `multiple`) plus `overhead` per run."""
    order = np.argsort(lengths, kind="stable")
    padded = [_group_length(lengths[i], multiple) for i in order]
    n = len(order)
    best = [0.0] + [float("inf")] * n  # best[j]: the cost of the first j sorted rows
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(j):  # the last run: sorted rows i..j-1, padded to row j-1's length
            cost = best[i] + (j - i) * padded[j - 1] + overhead
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups, j = [], n
    while j:
        groups.append(order[cut[j]:j])
        j = cut[j]
    return groups[::-1]


def _group_length(longest, multiple):
    """Positions a group whose longest row has `longest` is padded to."""
    return padded_length(max(int(longest), 1), multiple, float("inf"))


def run_in_groups(model, inputs, multiple, sequence_outputs=(), overhead=GROUP_OVERHEAD):
    """`model(inputs)` ({name: array} -> {name: array}) computed group by group (see
    `plan_groups`) and put back in the rows' order. `sequence_outputs`: the outputs
    with a position axis after the row axis; they are padded back with zeros to the
    request's length (positions past a row's group's length are padding)."""
    if len(inputs["input_mask"]) < 2:  # one row, already padded to its own length
        return model(inputs)
    lengths = row_lengths(inputs["input_mask"])
    groups = plan_groups(lengths, multiple, overhead)
    if len(groups) == 1:
        return model(inputs)
    width = inputs["input_mask"].shape[-1]
    results = [model({name: value[rows][..., :_group_length(lengths[rows].max(), multiple)]
                      for name, value in inputs.items()}) for rows in groups]
    order = np.concatenate(groups)
    outputs = {}
    for name in results[0]:
        parts = [r[name] for r in results]
        if name in sequence_outputs:
            parts = [np.pad(p, [(0, 0), (0, width - p.shape[1])] + [(0, 0)] * (p.ndim - 2))
                     for p in parts]
        joined = np.concatenate(parts)
        outputs[name] = np.empty_like(joined)
        outputs[name][order] = joined
    return outputs


def run_in_row_chunks(model, inputs, max_positions=MAX_POSITIONS):
    """`model(inputs)` computed a few rows at a time, so that no call computes more than
    `max_positions` positions (rows x the request's padded length, every choice's; a row
    longer than that runs alone), the outputs joined in the rows' order. Each row keeps
    its padded length: only the batch is cut. None: one call."""
    mask = inputs["input_mask"]
    rows = len(mask)
    per_row = mask[0].size if rows else 0
    if not max_positions or rows < 2 or rows * per_row <= max_positions:
        return model(inputs)
    step = max(1, max_positions // per_row)
    results = [model({name: value[i:i + step] for name, value in inputs.items()})
               for i in range(0, rows, step)]
    return {name: np.concatenate([r[name] for r in results]) for name in results[0]}
