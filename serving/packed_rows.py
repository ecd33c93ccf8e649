"""A request's texts packed into shared rows: short sequences side by side in one row of
the model's input, each attending only to itself, instead of one padded row each.

Pipeline position: inside `serving.load` (`serving.predictor`), between a task's fast
path (which packs a request into id arrays, a row per sequence, padded to its longest) and
the `serving_packed` signature of `model.tflite` (`BertEncoder.packed`: a sequence's
outputs are those it has alone in a row, up to float rounding). A model that computes
every position it is given then computes little padding: SST-2's dev sentences in
requests of 32, packed into rows of 64 positions, are 1.06x their real tokens, against
1.26x in groups of similar length (`serving.length_groups`).

The rows are filled best-fit, longest sequence first. Per-sequence outputs (a
classifier's) come back in the request's row order (the model reads each sequence's
[CLS] at `cls_positions`); per-position outputs (`sequence_outputs`, a tagger's) are
unpacked into the request's [rows, length, ...] layout, zeros past each sequence's end. A
multiple-choice request packs every choice, and its outputs are per request row.
"""

import heapq

import numpy as np

from serving.length_groups import row_lengths
from text.packing import padded_length

# The narrowest packed row `row_width` tries, unless the request's longest sequence is
# longer (then its length) or the whole request shorter (then the request's tokens): short
# enough that the attention over a row stays a small part of a call's work, long enough
# that a few sentences share it. `bench/serving_speed.py --pack_width` measures other widths
# (bench/RESULTS.md).
PACK_WIDTH = 64
# The row width at which a packed row's attention would double a position's cost, as
# `row_width` weighs widths: fitted to all-MiniLM-L6-v2 (hidden 384) on SST-2's sentences
# (rows of 64 against 128: 1.059x against 1.097x the real tokens, 1.08x the time); wider
# models spend relatively less on attention, so it errs towards narrow rows for them.
ATTENTION_SPAN = 1500


def plan_rows(lengths, width):
    """The sequences (indices into `lengths`) of each row of `width` positions: longest
    first (ties in request order), each into the row it fills best (the least room that
    holds it; the earliest such row), else a new row. Rows are found by their room, so a
    request of many texts is planned in time linear in its size."""
    rows, by_room = [], [[] for _ in range(width + 1)]  # by_room[r]: heap of rows, r free
    for i in np.argsort(-np.asarray(lengths), kind="stable"):
        n = max(int(lengths[i]), 1)
        room = next((r for r in range(n, width + 1) if by_room[r]), None)
        if room is None:
            rows.append([int(i)])
            row, left = len(rows) - 1, width - n
        else:
            row = heapq.heappop(by_room[room])
            rows[row].append(int(i))
            left = room - n
        if left > 0:
            heapq.heappush(by_room[left], row)
    return rows


def row_width(lengths, multiple, width=PACK_WIDTH):
    """Positions of each packed row for sequences of `lengths`: among the multiples of
    `multiple` from `width` (or the longest sequence when longer, or all the tokens
    together when fewer) to twice that, the one whose rows cost least, counting a row of
    w positions as w * (1 + w / ATTENTION_SPAN) (its attention grows with its width)."""
    longest = padded_length(int(max(lengths)), multiple, float("inf"))
    together = padded_length(int(sum(lengths)), multiple, float("inf"))
    first = max(longest, min(width, together))
    costs = {w: len(plan_rows(lengths, w)) * w * (1 + w / ATTENTION_SPAN)
             for w in range(first, max(first, 2 * width) + 1, multiple)}
    return min(costs, key=lambda w: (costs[w], w))


def pack(inputs, lengths, rows, width):
    """The packed model inputs of `rows` (from `plan_rows`): `input_ids`, `segment_ids`,
    `position_ids` (each sequence counted from 0), `sequence_ids` (1, 2, ... in a row, 0
    at the padding), int32 [len(rows), width], and `cls_positions` (one per sequence of
    `rows`, in request order); with where each of those sequences is, (its index, packed
    row, column), in the same order."""
    members = sorted(i for row in rows for i in row)
    packed = {name: np.zeros((len(rows), width), np.int32) for name in
              ("input_ids", "segment_ids", "position_ids", "sequence_ids")}
    where = {}
    for r, row in enumerate(rows):
        start = 0
        for number, i in enumerate(row, 1):
            n = int(lengths[i])
            packed["input_ids"][r, start:start + n] = inputs["input_ids"][i, :n]
            packed["segment_ids"][r, start:start + n] = inputs["segment_ids"][i, :n]
            packed["position_ids"][r, start:start + n] = np.arange(n)
            packed["sequence_ids"][r, start:start + n] = number
            where[i] = (r, start)
            start += n
    packed["cls_positions"] = np.array([where[i][0] * width + where[i][1] for i in members],
                                       np.int32)
    return packed, [(i,) + where[i] for i in members]


def run_packed(model, inputs, multiple, sequence_outputs=(), width=PACK_WIDTH,
               max_positions=None, cls_positions=True):
    """`model` (the packed signature: packed inputs -> outputs) on a request's padded
    inputs ({"input_ids", "input_mask", "segment_ids"} [rows, length]), its outputs in the
    request's layout: per-sequence outputs [rows, ...] in row order, `sequence_outputs`
    [rows, length, ...] with zeros past each sequence. At most `max_positions` positions
    a call (several calls of whole packed rows). `cls_positions`: whether the model takes
    them (a tagger's does not). Inputs of several sequences a row ([rows, choices,
    length], multiple choice): see `run_packed_choices`."""
    if inputs["input_mask"].ndim == 3:
        return run_packed_choices(model, inputs, multiple, width, max_positions)
    lengths = np.maximum(row_lengths(inputs["input_mask"]), 1)
    count, length = inputs["input_mask"].shape
    width = row_width(lengths, multiple, width)
    rows = plan_rows(lengths, width)
    per_call = max(1, max_positions // width) if max_positions else len(rows)
    outputs = {}
    for first in range(0, len(rows), per_call):
        chunk = rows[first:first + per_call]
        packed, where = pack(inputs, lengths, chunk, width)
        if not cls_positions:
            del packed["cls_positions"]
        results = model(packed)
        members = [i for i, _, _ in where]
        for name, value in results.items():
            if name not in outputs:
                shape = (count, length) + value.shape[2:] if name in sequence_outputs \
                    else (count,) + value.shape[1:]
                outputs[name] = np.zeros(shape, value.dtype)
            if name not in sequence_outputs:
                outputs[name][members] = value
                continue
            for i, r, start in where:
                n = int(lengths[i])
                outputs[name][i, :n] = value[r, start:start + n]
    return outputs


def run_packed_choices(model, inputs, multiple, width=PACK_WIDTH, max_positions=None):
    """`run_packed` for requests whose rows hold several sequences each ([rows, choices,
    length]: a context with each of its choices): every sequence packed, a call takes
    whole request rows (`cls_positions` [rows, choices]) and its outputs are per request
    row."""
    rows, choices, length = inputs["input_mask"].shape
    flat = {name: value.reshape(rows * choices, length) for name, value in inputs.items()}
    lengths = np.maximum(row_lengths(flat["input_mask"]), 1)
    width = row_width(lengths, multiple, width)
    outputs = {}
    for first, end in _whole_rows_a_call(lengths.reshape(rows, choices), width,
                                         max_positions):
        span = slice(first * choices, end * choices)
        part = {name: value[span] for name, value in flat.items()}
        packed, _ = pack(part, lengths[span], plan_rows(lengths[span], width), width)
        packed["cls_positions"] = packed["cls_positions"].reshape(end - first, choices)
        for name, value in model(packed).items():
            outputs.setdefault(name, []).append(value)
    return {name: np.concatenate(parts) for name, parts in outputs.items()}


def _whole_rows_a_call(lengths, width, max_positions):
    """(first, end) request rows of each call: as many whole rows (`lengths` [rows,
    sequences a row]) as their packed rows of `width` fit in `max_positions` positions,
    at least one."""
    calls, first = [], 0
    for end in range(2, len(lengths) + 1) if max_positions else ():
        if len(plan_rows(lengths[first:end].ravel(), width)) * width > max_positions:
            calls.append((first, end - 1))
            first = end - 1
    return calls + [(first, len(lengths))]

