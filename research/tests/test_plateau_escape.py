"""research/plateau_escape.py's arithmetic, without training: variants combine left to right,
a variant's compute a step is counted against the recipe's, and the escape step is the
first evaluation one nat under the plateau level."""

import json

import pytest

from research import plateau_escape as bench
from tasks.pretraining import from_text


def test_variants_combine_left_to_right_and_undo_the_recipes_changes():
    first = bench.variant_changes("first_recipe")
    assert first["masking"] == {"masked_lm_prob": 0.15, "max_predictions_per_seq": 20}
    assert first["trainer"] == {"learning_rate": 3e-4}
    assert first["config"] == {"initializer_range": 0.02,
                               "position_embedding_init": "truncated_normal"}
    assert first["task"] == {"pretraining_dropout": None}  # the config's 0.1
    assert first["schedule"] == {"warmup_share": 0.06}  # no floor of MIN_WARMUP_STEPS
    # The first recipe with 40% masking: the later part wins.
    again = bench.variant_changes("first_recipe+mask_40")
    assert again["masking"]["masked_lm_prob"] == 0.40
    assert again["config"]["initializer_range"] == 0.02
    # Undoing the recipe's changes one by one gives the first recipe.
    undone = bench.variant_changes(
        "mask_15+init_0.02+random_pos+lr_3e-4+dropout_0.1+warmup_6pct")
    assert undone == first


def test_compute_is_counted_in_the_recipes_steps(tmp_path):
    config = dict(from_text.RECIPE["model"], vocab_size=8192)
    (tmp_path / "bert_config.json").write_text(json.dumps(config))
    data = {"config": str(tmp_path / "bert_config.json")}
    settings = bench.Settings(input_text="x", work_dir=str(tmp_path))
    # FLOPs are linear in the batch: half the sequences, half the compute.
    assert bench.step_cost("batch_16", data, settings) == pytest.approx(0.5)
    assert bench.step_cost("recipe", data, settings) == 1.0
    assert bench.step_cost("init_0.02+random_pos", data, settings) == 1.0  # same sizes
    # Fewer masked positions, less of the head: 20 of 52 predictions a sequence.
    hidden, vocab = 256, 8192
    head_52 = 2 * 32 * 52 * (hidden * hidden + hidden * vocab)
    head_20 = 2 * 32 * 20 * (hidden * hidden + hidden * vocab)
    full = bench.step_flops(config, 32, 52, 128) / 3
    assert bench.step_cost("mask_15", data, settings) == pytest.approx(
        (full - head_52 + head_20) / full)
    off = bench.Settings(input_text="x", work_dir=str(tmp_path), equal_compute=False)
    assert bench.step_cost("batch_16", data, off) == 1.0


def test_the_escape_is_the_first_evaluation_a_nat_under_the_plateau():
    evaluations = [(100, {"masked_lm_loss": 6.7}), (200, {"masked_lm_loss": 5.8}),
                   (300, {"masked_lm_loss": 5.7}), (400, {"masked_lm_loss": 5.9})]
    assert bench.escape_step(6.72, evaluations) == 300
    assert bench.escape_step(6.9, evaluations) == 200
    assert bench.escape_step(7.0, evaluations[:1]) is None
