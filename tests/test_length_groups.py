"""`serving.length_groups`: the cut of a request into groups of similar length is the
cheapest one (against every cut, enumerated), and answers come back in the rows' order
with per-position outputs padded back; a request over the budget of positions a call runs
a few rows at a time, at its own width."""

import itertools

import numpy as np

from serving import length_groups


def _cost(groups, lengths, multiple, overhead):
    return sum(len(g) * -(-max(lengths[i] for i in g) // multiple) * multiple + overhead
               for g in groups)


def _every_cut(order):
    """Every way to cut `order` into contiguous runs."""
    n = len(order)
    for cuts in itertools.product((False, True), repeat=n - 1):
        groups, start = [], 0
        for i, cut in enumerate(cuts, 1):
            if cut:
                groups.append(order[start:i])
                start = i
        yield groups + [order[start:]]


def test_row_lengths_of_single_and_multiple_choice_masks():
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]])
    assert length_groups.row_lengths(mask).tolist() == [2, 4, 1]
    choices = np.array([[[1, 1, 0, 0], [1, 1, 1, 0]], [[1, 0, 0, 0], [1, 1, 0, 0]]])
    assert length_groups.row_lengths(choices).tolist() == [3, 2]


def test_the_plan_is_the_cheapest_cut_of_the_sorted_rows():
    rng = np.random.default_rng(0)
    for _ in range(40):
        lengths = rng.integers(2, 60, rng.integers(1, 10))
        multiple, overhead = int(rng.choice([1, 8])), int(rng.choice([0, 16, 64, 500]))
        groups = length_groups.plan_groups(lengths, multiple, overhead)
        assert sorted(np.concatenate(groups).tolist()) == list(range(len(lengths)))
        order = list(np.argsort(lengths, kind="stable"))
        best = min(_cost(g, lengths, multiple, overhead) for g in _every_cut(order))
        assert _cost(groups, lengths, multiple, overhead) == best
    # No overhead: every distinct padded length a group; a huge one: one group.
    lengths = np.array([30, 9, 31, 10, 60])
    assert [sorted(g.tolist()) for g in length_groups.plan_groups(lengths, 8, 0)] == \
        [[1, 3], [0, 2], [4]]
    assert len(length_groups.plan_groups(lengths, 8, 10 ** 6)) == 1


def test_answers_in_the_rows_order_with_positions_padded_back():
    rng = np.random.default_rng(1)
    lengths = np.array([5, 30, 7, 29, 3, 31, 6, 2])
    width = 32
    mask = (np.arange(width) < lengths[:, None]).astype(np.int32)
    ids = rng.integers(5, 100, mask.shape).astype(np.int32) * mask
    inputs = {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids)}
    shapes = []

    def model(batch):  # per row: the sum of its real ids; per position: id * 2
        shapes.append(batch["input_ids"].shape)
        return {"total": (batch["input_ids"] * batch["input_mask"]).sum(1),
                "twice": batch["input_ids"] * 2}

    got = length_groups.run_in_groups(model, inputs, 8, sequence_outputs=("twice",),
                                      overhead=16)
    assert len(shapes) > 1 and all(s[1] < width for s in shapes[:-1])
    np.testing.assert_array_equal(got["total"], ids.sum(1))
    np.testing.assert_array_equal(got["twice"], ids * 2)  # zeros past each row's group
    shapes.clear()
    one = length_groups.run_in_groups(model, inputs, 8, ("twice",), overhead=10 ** 6)
    assert shapes == [(8, width)]
    np.testing.assert_array_equal(one["twice"], ids * 2)


def test_rows_over_the_budget_run_a_few_at_a_time_at_the_same_width():
    rng = np.random.default_rng(2)
    ids = rng.integers(5, 100, [10, 32]).astype(np.int32)
    inputs = {"input_ids": ids, "input_mask": np.ones_like(ids)}
    shapes = []

    def model(batch):
        shapes.append(batch["input_ids"].shape)
        return {"total": batch["input_ids"].sum(1), "twice": batch["input_ids"] * 2}

    got = length_groups.run_in_row_chunks(model, inputs, max_positions=100)  # 3 rows
    assert shapes == [(3, 32), (3, 32), (3, 32), (1, 32)]
    np.testing.assert_array_equal(got["total"], ids.sum(1))
    np.testing.assert_array_equal(got["twice"], ids * 2)
    for budget, calls in ((None, 1), (320, 1), (319, 2), (8, 10)):  # a row over it: alone
        shapes.clear()
        length_groups.run_in_row_chunks(model, inputs, max_positions=budget)
        assert len(shapes) == calls, (budget, shapes)
    # Multiple choice: a row's positions are every choice's.
    choices = {"input_ids": ids.reshape(5, 2, 32), "input_mask": np.ones([5, 2, 32])}
    shapes.clear()
    length_groups.run_in_row_chunks(lambda b: model({"input_ids": b["input_ids"][:, 0]}),
                                    choices, max_positions=128)
    assert [s[0] for s in shapes] == [2, 2, 1]
