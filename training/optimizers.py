"""Optimizers for pre-training and fine-tuning, as Keras 3 optimizers.

Pipeline position: `create_optimizer` is the one optimizer factory of every entry point.

  * `AdamWeightDecay` (default): the original release's `AdamWeightDecayOptimizer`, update
    for update: Adam moments *without bias correction*, decoupled weight decay added to
    the update (`update = m / (sqrt(v) + eps) + decay * param`), variables named
    LayerNorm/layer_norm/bias not decayed.
  * `Lamb` (You et al., 2019, https://arxiv.org/abs/1904.00962): bias-corrected Adam
    direction plus weight decay, scaled per variable by the trust ratio
    ||param|| / ||update||; the decay exclusions are also excluded from the trust ratio,
    as in TF Model Garden's LAMB.
  * `keras.optimizers.AdamW`: bias-corrected, for users who want it (`--optimizer=adamw`).

Names for the exclusions are the canonical TF1 variable names (`bert/encoder/layer_0/
attention/output/LayerNorm/gamma`, `cls/predictions/output_bias`, ...), so the same
regular expressions as the original select the same variables.

The training loop (`training.loop`) all-reduces the gradients across replicas and clips
them by global norm itself, so clipping sees the gradient of the whole global batch
whatever the number of replicas; the optimizers here therefore skip Keras's own
cross-replica sum (`_PreReducedGradients`).
"""

import math
import re
import types
import weakref

import keras
import numpy as np
from keras import ops

from modeling import checkpoint_mapping
from training import config
from training.schedules import WarmupLinearDecay

DEFAULT_DECAY_EXCLUSIONS = ("LayerNorm", "layer_norm", "bias")
OPTIMIZER_NAMES = config.OPTIMIZER_NAMES


class _PreReducedGradients:
    """Gradients reach `apply` already summed over replicas by the training loop."""

    def _all_reduce_sum_gradients(self, grads_and_vars):
        return list(grads_and_vars)


class _ExcludedByKey:
    """Weight-decay exclusion by variable identity (set with `exclude_variables`)."""

    def exclude_variables(self, variables):
        self._excluded_keys = {self._var_key(v) for v in variables}

    def _decays(self, variable):
        return self._var_key(variable) not in getattr(self, "_excluded_keys", set())


class _AdamMoments(_PreReducedGradients, _ExcludedByKey, keras.optimizers.Optimizer):
    """Adam's two moments per variable and the decoupled weight-decay rate; subclasses
    turn them into an update in `update_step`."""

    SLOT_NAMES = ("m", "v")

    def __init__(self, learning_rate=0.001, weight_decay_rate=0.01, beta_1=0.9,
                 beta_2=0.999, epsilon=1e-6, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.weight_decay_rate = weight_decay_rate
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._m, self._v = self.add_optimizer_variables(var_list, list(self.SLOT_NAMES))

    def _update_moments(self, gradient, variable):
        """m <- beta_1 m + (1 - beta_1) g;  v <- beta_2 v + (1 - beta_2) g^2."""
        gradient = ops.cast(gradient, variable.dtype)
        index = self._get_variable_index(variable)
        m, v = self._m[index], self._v[index]
        self.assign(m, self.beta_1 * m + (1.0 - self.beta_1) * gradient)
        self.assign(v, self.beta_2 * v + (1.0 - self.beta_2) * ops.square(gradient))
        return m, v

    def get_config(self):
        config = super().get_config()
        config.update({"weight_decay_rate": self.weight_decay_rate, "beta_1": self.beta_1,
                       "beta_2": self.beta_2, "epsilon": self.epsilon})
        return config


@keras.saving.register_keras_serializable(package="bert")
class AdamWeightDecay(_AdamMoments):
    """The original BERT optimizer (`optimization.AdamWeightDecayOptimizer`).

    For each variable with a gradient g:
        m <- beta_1 * m + (1 - beta_1) * g
        v <- beta_2 * v + (1 - beta_2) * g^2
        update = m / (sqrt(v) + epsilon) [+ weight_decay_rate * param]
        param <- param - learning_rate * update
    No bias correction: with the original's warm-up this is what BERT was trained with.

    Args:
        learning_rate: float or schedule.
        weight_decay_rate: float. Defaults to 0.01.
        beta_1, beta_2, epsilon: Adam constants. Default 0.9, 0.999, 1e-6.
        **kwargs: `keras.optimizers.Optimizer` arguments (e.g. `global_clipnorm`).
    """

    SLOT_NAMES = ("adam_m", "adam_v")  # the original's slot names

    def __init__(self, learning_rate=0.001, name="adam_weight_decay", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)

    def update_step(self, gradient, variable, learning_rate):
        if self._fused_update(gradient, variable, learning_rate):
            return
        lr = ops.cast(learning_rate, variable.dtype)
        m, v = self._update_moments(gradient, variable)
        update = m / (ops.sqrt(v) + self.epsilon)
        if self.weight_decay_rate and self._decays(variable):
            update = update + self.weight_decay_rate * variable
        self.assign_sub(variable, lr * update)

    def _kernel_scales(self, dtype):
        """(learning-rate factor, epsilon factor) for `ResourceApplyAdam`: its m and v are
        the original's times a1 and a2 (`_kernel_moment_ratios`), so m / (sqrt(v) + eps)
        is the original's with lr * sqrt(a2) / a1 and eps * sqrt(a2)."""
        dtype = np.dtype(getattr(dtype, "name", dtype))
        a1 = _kernel_moment_ratios(self.beta_1, dtype)
        a2 = _kernel_moment_ratios(self.beta_2, dtype)
        return math.sqrt(a2) / a1, math.sqrt(a2)

    def _kernel_arguments(self, learning_rate, dtype):
        """`ResourceApplyAdam`'s scalar arguments for this step's `learning_rate` (the
        one object every variable's update is given) in `dtype`: (lr * weight_decay_rate,
        the kernel's lr, beta_1, beta_2, epsilon, 0). Made once per step and dtype and
        shared by every variable's update, not once per variable: a hundred variables'
        casts and constants cost the step's tracing and graph optimisation. Only while
        tracing, and per graph: a learning-rate variable is the same object in every trace
        and every eager step, and its value changes."""
        import tensorflow as tf
        def arguments():
            lr = ops.cast(learning_rate, dtype)
            lr_scale, epsilon_scale = self._kernel_scales(dtype)
            return (lr * self.weight_decay_rate, lr * lr_scale,
                    tf.constant(self.beta_1, dtype), tf.constant(self.beta_2, dtype),
                    tf.constant(self.epsilon * epsilon_scale, dtype), tf.zeros([], dtype))
        if tf.executing_eagerly():
            return arguments()
        graph = tf.compat.v1.get_default_graph()
        # A namespace, not a tuple or dict, which Keras would track (and copy); weak: it
        # keeps no graph alive.
        cache = getattr(self, "_kernel_argument_cache", None)
        if cache is None or cache.learning_rate != id(learning_rate) or cache.graph() is not graph:
            cache = types.SimpleNamespace(learning_rate=id(learning_rate), graph=weakref.ref(graph),
                                          arguments={})
            self._kernel_argument_cache = cache
        key = str(dtype)
        if key not in cache.arguments:
            cache.arguments[key] = arguments()
        return cache.arguments[key]

    def _fused_update(self, gradient, variable, learning_rate):
        """The same update as TensorFlow's fused Adam kernel (`ResourceApplyAdam`: one op
        per variable instead of about fifteen, which the step's tracing, its graph
        optimisation and each step pay for), where the variable and its moments are plain
        resource variables (one device; not a distribution strategy's mirrored ones).
        Bias correction off as in the original: the kernel's lr * sqrt(1 - beta_2^t) /
        (1 - beta_1^t) with both powers 0 is lr. The decay goes first, from the old
        value: param - lr * decay * param - lr * m / (sqrt(v) + eps) is the original's
        param - lr * (m / (sqrt(v) + eps) + decay * param). The kernel forms 1 - beta in
        the variable's precision (float32: 0.999987e-3 for 0.999) where the original
        multiplies by the constant 1 - beta (float32(1e-3)), so its moments are the
        original's times a constant (`_kernel_scales`), which the learning rate and
        epsilon given to it undo: the same update up to rounding. True when done."""
        if keras.backend.backend() != "tensorflow":
            return False
        import tensorflow as tf
        index = self._get_variable_index(variable)
        values = [_resource_variable(x) for x in (variable, self._m[index], self._v[index])]
        if any(x is None for x in values):
            return False
        decay, kernel_lr, beta_1, beta_2, epsilon, zero = self._kernel_arguments(
            learning_rate, variable.dtype)
        if self.weight_decay_rate and self._decays(variable):
            values[0].assign_sub(decay * values[0])
        tf.raw_ops.ResourceApplyAdam(
            var=values[0].handle, m=values[1].handle, v=values[2].handle,
            beta1_power=zero, beta2_power=zero, lr=kernel_lr, beta1=beta_1, beta2=beta_2,
            epsilon=epsilon, grad=tf.cast(gradient, variable.dtype))
        return True


def _kernel_moment_ratios(beta, dtype):
    """What `ResourceApplyAdam` multiplies a moment's new term by (1 - beta formed in
    `dtype`) over what the original does (the constant 1 - beta rounded to `dtype`)."""
    one = np.asarray(1, dtype)
    return float(one - np.asarray(beta, dtype)) / float(np.asarray(1.0 - beta, dtype))


def _resource_variable(variable):
    """The plain TensorFlow resource variable of a Keras variable (or the variable
    itself), or None (a distribution strategy's mirrored variable, another backend)."""
    value = variable if type(variable).__name__ == "ResourceVariable" else \
        getattr(variable, "_value", None)
    return value if type(value).__name__ == "ResourceVariable" else None


@keras.saving.register_keras_serializable(package="bert")
class Lamb(_AdamMoments):
    """LAMB: layer-wise adaptive moments for large-batch training (You et al., 2019).

        m, v as Adam (bias-corrected: m_hat, v_hat)
        r = m_hat / (sqrt(v_hat) + epsilon) [+ weight_decay_rate * param]
        ratio = ||param|| / ||r|| (1 if either is 0, or for excluded variables)
        param <- param - learning_rate * ratio * r

    Args as `AdamWeightDecay`.
    """

    SLOT_NAMES = ("lamb_m", "lamb_v")

    def __init__(self, learning_rate=0.001, name="lamb", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)

    def update_step(self, gradient, variable, learning_rate):
        lr = ops.cast(learning_rate, variable.dtype)
        t = ops.cast(self.iterations + 1, variable.dtype)
        m, v = self._update_moments(gradient, variable)
        m_hat = m / (1.0 - ops.power(ops.cast(self.beta_1, variable.dtype), t))
        v_hat = v / (1.0 - ops.power(ops.cast(self.beta_2, variable.dtype), t))
        update = m_hat / (ops.sqrt(v_hat) + self.epsilon)
        if self._decays(variable):
            if self.weight_decay_rate:
                update = update + self.weight_decay_rate * variable
            w_norm = ops.sqrt(ops.sum(ops.square(variable)))
            u_norm = ops.sqrt(ops.sum(ops.square(update)))
            ratio = ops.where(ops.logical_and(w_norm > 0, u_norm > 0),
                              w_norm / ops.maximum(u_norm, 1e-30), 1.0)
            update = ratio * update
        self.assign_sub(variable, lr * update)


@keras.saving.register_keras_serializable(package="bert")
class AdamW(_PreReducedGradients, keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` (bias-corrected) fed by the training loop's reduction."""


def canonical_names(model):
    """{variable key: canonical TF1 name} for `model`'s trainable weights; a weight with
    no canonical name (none in this project's models) is named by its Keras path."""
    by_id = {id(variable): name
             for name, (variable, _) in checkpoint_mapping.variable_map(model).items()}
    return [(variable, by_id.get(id(variable), variable.path))
            for variable in model.trainable_variables]


def decay_excluded(model, patterns=DEFAULT_DECAY_EXCLUSIONS):
    """The trainable weights whose canonical name matches any of `patterns` (`re.search`,
    as the original's `_do_use_weight_decay`), as (variable, name) pairs."""
    pattern = re.compile("|".join(patterns)) if patterns else None
    return [(variable, name) for variable, name in canonical_names(model)
            if pattern is not None and pattern.search(name)]


def create_optimizer(model, learning_rate, num_train_steps, num_warmup_steps,
                     optimizer="adamw_original", weight_decay_rate=0.01,
                     clip_norm=None, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                     decay_exclusions=DEFAULT_DECAY_EXCLUSIONS, loss_scale=False,
                     num_stable_steps=0):
    """The optimizer every entry point trains with: the original's by default.

    Args:
        model: the model to be trained (its weights must exist; they are matched against
            `decay_exclusions` by canonical name).
        learning_rate: float. Peak learning rate of `WarmupLinearDecay`.
        num_train_steps, num_warmup_steps: int. The schedule.
        num_stable_steps: int. Steps at the peak before the decay starts (0: the
            original's decay from step 0).
        optimizer: one of OPTIMIZER_NAMES.
        clip_norm: float. Global-norm clipping inside the optimizer; None (default) when
            training with `training.loop.Trainer`, which clips the summed gradient itself
            (its `clip_norm`, 1.0 by default).
        loss_scale: bool. Wrap in a dynamic `keras.optimizers.LossScaleOptimizer`
            (float16 mixed precision).

    Returns:
        A Keras optimizer; call `training.loop` with it.
    """
    schedule = WarmupLinearDecay(learning_rate, num_train_steps, num_warmup_steps,
                                 num_stable_steps)
    excluded = [variable for variable, _ in decay_excluded(model, decay_exclusions)]
    common = dict(learning_rate=schedule, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
                  global_clipnorm=clip_norm)
    if optimizer == "adamw_original":
        opt = AdamWeightDecay(weight_decay_rate=weight_decay_rate, **common)
        opt.exclude_variables(excluded)
    elif optimizer == "lamb":
        opt = Lamb(weight_decay_rate=weight_decay_rate, **common)
        opt.exclude_variables(excluded)
    elif optimizer == "adamw":
        opt = AdamW(weight_decay=weight_decay_rate, **common)
        opt.exclude_from_weight_decay(var_list=excluded)
    else:
        raise ValueError(f"--optimizer={optimizer!r} is not one of {list(OPTIMIZER_NAMES)}.")
    if loss_scale:
        opt = keras.optimizers.LossScaleOptimizer(opt)
    return opt


def schedule_of(optimizer):
    """The `WarmupLinearDecay` an optimizer of `create_optimizer` follows."""
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        optimizer = optimizer.inner_optimizer
    return optimizer._learning_rate  # where Keras keeps the schedule it was given
