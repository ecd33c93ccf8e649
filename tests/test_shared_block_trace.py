"""The training step traces one Transformer block for all of them
(`modeling.shared_block_trace`): the same losses, weights and dropout masks as the blocks
traced one by one, in float32 and mixed bfloat16, and one trace of the block's code."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from modeling import BertClassifier, BertConfig
from modeling import encoder as encoder_module
from modeling.layers import transformer_block
from tasks.classification.task import ClassificationTask
from tests.conftest import TINY_CONFIG
from training.loop import Trainer
from training.optimizers import create_optimizer

STEPS, BATCH, SEQ = 4, 6, 12


def _batches():
    rng = np.random.default_rng(0)
    ids = rng.integers(5, TINY_CONFIG["vocab_size"], (STEPS, BATCH, SEQ)).astype(np.int32)
    mask = (np.arange(SEQ) < rng.integers(3, SEQ + 1, (STEPS, BATCH))[..., None])
    return {"input_ids": ids * mask, "input_mask": mask.astype(np.int32),
            "segment_ids": np.zeros_like(ids),
            "label_ids": rng.integers(0, 3, (STEPS, BATCH)).astype(np.int32),
            "is_real_example": np.ones((STEPS, BATCH), np.float32)}


def _train(tmp_path, policy):
    """(per-step losses, final weights, how many times a block's code was traced)."""
    keras.mixed_precision.set_global_policy(policy)
    try:
        keras.utils.set_random_seed(3)
        config = BertConfig.from_dict(dict(TINY_CONFIG, num_hidden_layers=3))
        model = BertClassifier(config, 3)  # dropout on: the masks must be the same
        task = ClassificationTask.__new__(ClassificationTask)
        task.regression, task.multi_label = False, False
        traced = []
        call = transformer_block.TransformerBlock.call

        def counted(self, *args, **kwargs):
            traced.append(self.name)
            return call(self, *args, **kwargs)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(transformer_block.TransformerBlock, "call", counted)
            trainer = Trainer(tf.distribute.get_strategy(), model, task,
                              create_optimizer(model, 1e-2, STEPS, 1), str(tmp_path))
            data = tf.data.Dataset.from_tensor_slices(_batches())
            trainer.train(lambda context, skip: data.skip(skip), STEPS, steps_per_loop=2,
                          save_checkpoints_steps=STEPS, log_steps=1)
        losses = [row["loss"] for row in _metrics(tmp_path) if row["event"] == "train"]
        return np.array(losses), [v.numpy() for v in model.trainable_variables], traced
    finally:
        keras.mixed_precision.set_global_policy("float32")


def _metrics(model_dir):
    from training import metrics_log
    return metrics_log.read(str(model_dir / "metrics.jsonl"))


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_one_trace_of_the_block_trains_as_the_blocks_one_by_one(tmp_path, monkeypatch,
                                                                  policy):
    shared = _train(tmp_path / "shared", policy)
    monkeypatch.setattr(encoder_module, "shared_block_call", lambda blocks, training: None)
    each = _train(tmp_path / "each", policy)
    assert len(shared[0]) == STEPS and np.all(np.isfinite(shared[0]))
    tolerance = 1e-5 if policy == "float32" else 1e-2
    np.testing.assert_allclose(shared[0], each[0], rtol=tolerance)
    for a, b in zip(shared[1], each[1]):
        np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance * 1e-1)
    # One trace of the block's code for the training step; one a block without.
    assert len(set(each[2])) == 3 and len(each[2]) == 3
    assert len(shared[2]) == 1
