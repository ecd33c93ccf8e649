"""Run by test_pretraining in a fresh process (logical devices must be set before
TensorFlow starts): one SGD step on the same global batch of 16 with `one_device` and with
`mirrored` over two logical CPU devices; writes the losses, gradient norms and applied
gradients of both to an .npz file.

    python tests/mirrored_step.py RECORDS.tfrecord OUT.npz
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from training.distribution import get_strategy, use_cpu_devices  # noqa: E402

use_cpu_devices(2)

from pretraining_data import TINY_TRAINING_CONFIG  # noqa: E402

from modeling import BertConfig, BertPretrainer  # noqa: E402
from tasks.pretraining import PretrainingTask  # noqa: E402
from tasks.pretraining.input import pretraining_dataset  # noqa: E402
from training.loop import Trainer  # noqa: E402
from training.optimizers import _PreReducedGradients  # noqa: E402


class SGD(_PreReducedGradients, keras.optimizers.SGD):
    pass


def one_step(strategy, records, global_batch):
    with strategy.scope():
        keras.utils.set_random_seed(11)
        model = BertPretrainer(BertConfig(**TINY_TRAINING_CONFIG))
        optimizer = SGD(learning_rate=1.0)
    trainer = Trainer(strategy, model, PretrainingTask(), optimizer, "/unused")
    before = [v.numpy().copy() for v in model.trainable_variables]

    def fn(context):
        batch = pretraining_dataset(records, global_batch, 24, 4, is_training=False).take(1)
        # Each replica takes its consecutive slice of the same global batch.
        size = context.get_per_replica_batch_size(global_batch)
        return batch.unbatch().skip(size * context.input_pipeline_id).batch(size).repeat()

    iterator = iter(strategy.distribute_datasets_from_function(fn))
    out = trainer._train_loop(iterator, tf.constant(1))
    grads = [b - a.numpy() for b, a in zip(before, model.trainable_variables)]
    return float(out["last_loss"]), float(out["grad_norm_sum"]), grads


def main(records, out):
    loss_1, norm_1, grads_1 = one_step(get_strategy("one_device"), [records], 16)
    mirrored = get_strategy("mirrored")
    assert mirrored.num_replicas_in_sync == 2, mirrored.num_replicas_in_sync
    loss_2, norm_2, grads_2 = one_step(mirrored, [records], 16)
    np.savez(out, loss=[loss_1, loss_2], norm=[norm_1, norm_2],
             **{f"one_{i}": g for i, g in enumerate(grads_1)},
             **{f"two_{i}": g for i, g in enumerate(grads_2)})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
