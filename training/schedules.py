"""The original release's learning-rate schedule: linear warm-up, then linear decay to 0
(optionally after a stable phase at the peak).

Pipeline position: built by `training.optimizers.create_optimizer` for pre-training and
every fine-tuning task; `training.loop.Trainer` may `resize` it during warm-up (a run
sized to a time budget, `training.time_budget`).
"""

import keras
import tensorflow as tf
from keras import ops


@keras.saving.register_keras_serializable(package="bert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """`optimization.create_optimizer`'s rate at step g (the count *before* the update):

        g < num_warmup_steps:  learning_rate * g / num_warmup_steps
        otherwise:             learning_rate * (1 - min(g, num_train_steps) / num_train_steps)

    The decay line starts at step 0, not at the end of warm-up, so the rate jumps at the
    end of warm-up to learning_rate * (1 - warmup / total), as in the original; the first
    update (g = 0) has rate 0 when there is a warm-up.

    With `num_stable_steps` = s > 0 the rate stays at its peak after warm-up until step s,
    then falls linearly to 0 at num_train_steps (a warm-up, stable, decay shape):

        otherwise:             learning_rate * min(1, (total - min(g, total)) / (total - s))

    s = 0 is the original's line above.

    `resize(n)` moves the end of the decay to step n in a step already traced (the total
    is read from a variable): a run sized to a time budget does so before its warm-up
    ends, so no rate it has applied changes.

    Args:
        learning_rate: float. Peak rate.
        num_train_steps: int. The rate reaches 0 here.
        num_warmup_steps: int. 0 for no warm-up.
        num_stable_steps: int. The decay starts here (0: at step 0, the original's).
    """

    def __init__(self, learning_rate, num_train_steps, num_warmup_steps=0,
                 num_stable_steps=0):
        if num_train_steps <= 0:
            raise ValueError(f"num_train_steps must be positive, got {num_train_steps}.")
        if num_warmup_steps < 0:
            raise ValueError(f"num_warmup_steps must be >= 0, got {num_warmup_steps}.")
        if not 0 <= num_stable_steps < num_train_steps:
            raise ValueError(f"num_stable_steps must be in [0, num_train_steps), got "
                             f"{num_stable_steps}.")
        self.learning_rate = float(learning_rate)
        self.num_train_steps = int(num_train_steps)
        self.num_warmup_steps = int(num_warmup_steps)
        self.num_stable_steps = int(num_stable_steps)
        self._total = tf.Variable(float(self.num_train_steps), trainable=False,
                                  dtype=tf.float32, name="num_train_steps")

    def resize(self, num_train_steps):
        """The rate reaches 0 at `num_train_steps` from now on."""
        if not self.num_stable_steps < num_train_steps:
            raise ValueError(f"num_train_steps must be more than the {self.num_stable_steps} "
                             f"stable steps, got {num_train_steps}.")
        self.num_train_steps = int(num_train_steps)
        self._total.assign(float(self.num_train_steps))

    def __call__(self, step):
        step = ops.cast(step, "float32")
        total = self._total  # float32, as the original's float(num_train_steps) constant
        if self.num_stable_steps:
            left = (total - ops.minimum(step, total)) / (total - self.num_stable_steps)
            decayed = self.learning_rate * ops.minimum(1.0, left)
        else:  # the original's arithmetic, to the bit
            decayed = self.learning_rate * (1.0 - ops.minimum(step, total) / total)
        if not self.num_warmup_steps:
            return decayed
        warmup = self.learning_rate * step / float(self.num_warmup_steps)
        return ops.where(step < float(self.num_warmup_steps), warmup, decayed)

    def get_config(self):
        return {"learning_rate": self.learning_rate, "num_train_steps": self.num_train_steps,
                "num_warmup_steps": self.num_warmup_steps,
                "num_stable_steps": self.num_stable_steps}
