"""Gradient checkpointing (`--gradient_checkpointing`, `BertEncoder.
enable_gradient_checkpointing`): with dropout on, the recomputed blocks give the loss and
gradients of the same network run once with the same dropout masks (the truth: each
block called directly on the same seeds, nothing recomputed); and the flag trains a
model end to end as the run without it does."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests import warm_processes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = {"vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 3,
          "num_attention_heads": 4, "intermediate_size": 64, "hidden_dropout_prob": 0.3,
          "attention_probs_dropout_prob": 0.3, "max_position_embeddings": 32,
          "type_vocab_size": 2}


def _inputs():
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 50, (3, 12)).astype(np.int32)
    mask = (np.arange(12) < np.array([[12], [9], [5]])).astype(np.int32)
    return {"input_ids": ids * mask, "input_mask": mask,
            "segment_ids": (np.arange(12) >= 4).astype(np.int32) * mask}


@pytest.mark.parametrize("skip_padding", [False, True])
def test_recomputed_blocks_give_the_same_loss_and_gradients(skip_padding):
    from modeling import BertConfig, BertEncoder
    from modeling.encoder import _forward
    keras.utils.set_random_seed(1)
    encoder = BertEncoder(BertConfig.from_dict(CONFIG))
    encoder.embeddings.dropout.rate = 0.0  # outside the blocks: not what is compared
    encoder.enable_gradient_checkpointing(seed=3)
    inputs = _inputs()
    weights = tf.constant(np.random.default_rng(1).normal(size=(3, 12, 32)), tf.float32)
    real = tf.constant(inputs["input_mask"][..., None], tf.float32)
    variables = [v for v in encoder.trainable_variables if "pooler" not in v.path]
    state = encoder._block_seeds.state.numpy()

    with tf.GradientTape() as tape:
        out = encoder(inputs, training=True, skip_padding=skip_padding)["sequence_output"]
        loss = tf.reduce_sum(out * weights * real)
    gradients = tape.gradient(loss, variables)

    # The truth: the seeds that forward pass drew, each block run once on its own seed.
    encoder._block_seeds.state.assign(state)
    seeds = encoder.draw_block_seeds()
    with tf.GradientTape() as tape:
        x = _forward(encoder.embeddings, encoder.transformer_layers, None, encoder.pooler,
                     {k: tf.constant(v) for k, v in inputs.items()}, training=True,
                     skip_padding=skip_padding, block_seeds=seeds,
                     recompute=False)["sequence_output"]
        truth = tf.reduce_sum(x * weights * real)
    expected = tape.gradient(truth, variables)
    assert float(loss) == pytest.approx(float(truth), rel=1e-5)
    for got, want, variable in zip(gradients, expected, variables):
        np.testing.assert_allclose(tf.convert_to_tensor(got), tf.convert_to_tensor(want),
                                   rtol=1e-4, atol=1e-6, err_msg=variable.path)
    # Dropout is on: without it the loss is another; and each forward pass draws anew.
    plain = tf.reduce_sum(encoder(inputs, training=False)["sequence_output"] * weights * real)
    assert abs(float(plain) - float(loss)) > 1e-3
    again = tf.reduce_sum(encoder(inputs, training=True)["sequence_output"] * weights * real)
    assert abs(float(again) - float(loss)) > 1e-3


def test_the_flag_trains_as_the_run_without_it(tmp_path):
    """Without dropout (the masks being the only thing drawn differently), a fine-tuning
    run with --gradient_checkpointing logs the losses of the run without it."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(40)]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    (tmp_path / "bert_config.json").write_text(json.dumps(dict(
        CONFIG, vocab_size=len(vocab), hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0)))
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(0)
    for split in ("train", "dev"):
        rows = ["text_a\tlabel"] + [
            " ".join(f"w{i}" for i in rng.integers(0, 40, rng.integers(3, 9))) +
            f"\t{int(rng.integers(0, 2))}" for _ in range(64)]
        (data / f"{split}.tsv").write_text("\n".join(rows) + "\n")
    losses = {}
    for flag in ("--nogradient_checkpointing", "--gradient_checkpointing"):
        out = tmp_path / flag.strip("-")
        done = warm_processes.run(
            [os.path.join(ROOT, "run_classifier.py"), "--task_name=generic",
             f"--data_dir={data}", f"--vocab_file={tmp_path / 'vocab.txt'}",
             f"--bert_config_file={tmp_path / 'bert_config.json'}", "--max_seq_length=16",
             "--do_train", "--train_batch_size=16", "--num_train_epochs=2",
             "--dropout_rate=0", "--log_steps=1", "--learning_rate=1e-3",
             f"--output_dir={out}", flag],
            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        losses[flag] = [row["loss"] for row in map(json.loads, open(out / "metrics.jsonl"))
                        if row["event"] == "train"]
    assert len(losses["--gradient_checkpointing"]) == 8
    np.testing.assert_allclose(losses["--gradient_checkpointing"],
                               losses["--nogradient_checkpointing"], rtol=1e-4)
