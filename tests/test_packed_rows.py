"""`serving.packed_rows`: a request's sequences packed side by side into shared rows, and
the packed model's outputs put back in the request's layout; hand-checked plans and a
fake model whose answers are known per sequence (the real model's packed rows are checked
against the NumPy forward pass in tests/test_modeling_numerics.py and through
`serving.load` in tests/test_serving_load.py)."""

import numpy as np

from serving import packed_rows


def padded_request(sequences):
    """The fast path's layout: a row per sequence, padded to the longest."""
    width = max(len(s) for s in sequences)
    ids = np.zeros((len(sequences), width), np.int32)
    for row, sequence in enumerate(sequences):
        ids[row, :len(sequence)] = sequence
    return {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32),
            "segment_ids": (ids % 2).astype(np.int32) * (ids > 0)}


def test_rows_are_filled_best_fit_longest_first():
    # Lengths 5, 3, 7, 2 in rows of 8: 7 alone (room 1), then 5 + 3, then 2.
    assert packed_rows.plan_rows([5, 3, 7, 2], 8) == [[2], [0, 1], [3]]
    assert packed_rows.plan_rows([4, 4, 4], 8) == [[0, 1], [2]]  # ties in request order
    assert packed_rows.plan_rows([9], 8) == [[0]]  # a longer sequence has a row alone


def test_the_row_width():
    assert packed_rows.row_width([5, 3, 7, 2], 8) == 24  # all 17 tokens, rounded up
    assert packed_rows.row_width([100, 3], 8) == 104  # the longest sequence, rounded up
    # Rows of 64 need two for 60 + 10 (2 x 64 x (1 + 64 / 1,500) = 133.5), one of 72
    # holds both (72 x 1.048 = 75.5).
    assert packed_rows.row_width([60, 10], 8) == 72
    # 35-token sequences: two to a row of 72 (16 rows: 1,207), three to 112 (11: 1,324).
    assert packed_rows.row_width([35] * 32, 8) == 72
    # 30s from width 40: three rows of 40 (123.2) beat two of 64 (133.5).
    assert packed_rows.row_width([30, 30, 30], 8, width=40) == 40


def test_the_packed_arrays_by_hand():
    request = padded_request([[2, 7, 9, 3], [2, 5, 3], [2, 8, 8, 8, 8, 3]])
    lengths = [4, 3, 6]
    rows = packed_rows.plan_rows(lengths, 8)
    assert rows == [[2], [0, 1]]
    packed, where = packed_rows.pack(request, lengths, rows, 8)
    np.testing.assert_array_equal(packed["input_ids"], [[2, 8, 8, 8, 8, 3, 0, 0],
                                                        [2, 7, 9, 3, 2, 5, 3, 0]])
    np.testing.assert_array_equal(packed["position_ids"], [[0, 1, 2, 3, 4, 5, 0, 0],
                                                           [0, 1, 2, 3, 0, 1, 2, 0]])
    np.testing.assert_array_equal(packed["sequence_ids"], [[1, 1, 1, 1, 1, 1, 0, 0],
                                                           [1, 1, 1, 1, 2, 2, 2, 0]])
    np.testing.assert_array_equal(packed["segment_ids"], [[0, 0, 0, 0, 0, 1, 0, 0],
                                                          [0, 1, 1, 1, 0, 1, 1, 0]])
    np.testing.assert_array_equal(packed["cls_positions"], [8, 12, 0])  # request order
    assert where == [(0, 1, 0), (1, 1, 4), (2, 0, 0)]  # (sequence, row, column)


def fake_model(packed):
    """Per sequence: the sum of its ids (found from its [CLS] and its sequence number);
    per position: 100 * position + id."""
    flat_ids = packed["input_ids"].ravel()
    flat_seq = packed["sequence_ids"].ravel()
    width = packed["input_ids"].shape[1]
    sums = []
    for cls in packed["cls_positions"].ravel():
        row = slice(cls // width * width, (cls // width + 1) * width)
        sums.append(flat_ids[row][flat_seq[row] == flat_seq[cls]].sum())
    return {"total": np.array(sums, np.int64).reshape(packed["cls_positions"].shape),
            "tags": (100 * packed["position_ids"] + packed["input_ids"])[..., None]}


def test_outputs_come_back_in_the_requests_layout_within_the_budget():
    rng = np.random.default_rng(0)
    sequences = [[2] + list(rng.integers(4, 30, n)) + [3] for n in rng.integers(0, 20, 37)]
    request = padded_request(sequences)
    calls = []

    def recording(packed):
        calls.append(packed["input_ids"].shape)
        return fake_model(packed)

    got = packed_rows.run_packed(recording, request, 8, sequence_outputs=("tags",),
                                 width=32, max_positions=4 * 32)
    assert len(calls) > 1 and all(rows * width <= 4 * 32 for rows, width in calls)
    assert sum(rows for rows, _ in calls) < len(sequences) / 2
    np.testing.assert_array_equal(got["total"], [sum(s) for s in sequences])
    want = np.zeros(request["input_ids"].shape + (1,), np.int32)
    for row, sequence in enumerate(sequences):
        want[row, :len(sequence), 0] = 100 * np.arange(len(sequence)) + sequence
    np.testing.assert_array_equal(got["tags"], want)


def test_choices_pack_as_sequences_and_come_back_per_row():
    """Multiple choice ([rows, choices, length]): every choice packed as a sequence, a call
    takes whole rows (`cls_positions` [rows, choices]), the outputs per row."""
    rng = np.random.default_rng(1)
    sequences = [[2] + list(rng.integers(4, 30, n)) + [3] for n in rng.integers(0, 12, 9 * 3)]
    flat = padded_request(sequences)
    request = {name: value.reshape(9, 3, -1) for name, value in flat.items()}
    calls = []

    def recording(packed):
        calls.append((packed["input_ids"].shape, packed["cls_positions"].shape))
        return {"total": fake_model(packed)["total"]}

    got = packed_rows.run_packed(recording, request, 8, width=32, max_positions=2 * 32)
    np.testing.assert_array_equal(got["total"],
                                  np.array([sum(s) for s in sequences]).reshape(9, 3))
    assert len(calls) > 1 and sum(cls[0] for _, cls in calls) == 9
    assert all(cls[1] == 3 and (ids[0] * ids[1] <= 2 * 32 or cls[0] == 1)
               for ids, cls in calls)
