"""Training checkpoints: what is saved, under which names, and how a run resumes.

Pipeline position: `training.loop` saves one every `--save_checkpoints_steps` and restores
the latest one when a command is rerun in the same `output_dir`; the final weights also go
out as a Google-format checkpoint (`modeling.checkpoint.save_google_checkpoint`).

A training checkpoint (`output_dir/ckpt-STEP`) holds, each under a stable name:
  * `model/<canonical TF1 name>`: the weights, as `modeling.checkpoint` reads them (so a
    training checkpoint is also a valid `--init_checkpoint`);
  * `optimizer/<canonical name>/<slot>` and `optimizer/iterations` (and the dynamic loss
    scale), keyed by the weight's canonical name rather than by creation order;
  * `global_step` and the dropout random generators (`seeds/N`); with the input's
    deterministic order (the loop skips the batches already used), a resumed run
    continues exactly where it stopped.

Writes are atomic at the level that matters: TensorFlow writes the data and index files
first and only then rewrites the `checkpoint` state file (itself atomically), so a run
killed while saving resumes from the previous complete checkpoint.
"""

import keras
import tensorflow as tf
from absl import logging

from modeling import checkpoint_mapping
from modeling.checkpoint import TF2_WEIGHTS_KEY

# Slot lists of the optimizers `training.optimizers` creates, by class attribute.
_SLOT_ATTRIBUTES = (("_m", "m"), ("_v", "v"), ("_momentums", "m"), ("_velocities", "v"),
                    ("_velocity_hats", "v_hat"))


def model_weights(model):
    """{canonical name: variable} for every weight of `model`."""
    return {name: variable
            for name, (variable, _) in checkpoint_mapping.variable_map(model).items()}


def random_states(model):
    """The model's dropout seed-generator states, in a stable order."""
    named = {id(v) for v in model_weights(model).values()}
    return {f"{i}": v for i, v in enumerate(
        v for v in model.non_trainable_variables if id(v) not in named)}


def optimizer_state(optimizer, model):
    """{name: variable} for the optimizer's state, keyed by canonical weight names.

    `optimizer` must be built on `model.trainable_variables`."""
    state = {}
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        state["loss_scale"] = optimizer.dynamic_scale
        state["loss_scale_good_steps"] = optimizer.step_counter
        state["outer_iterations"] = optimizer.iterations
        optimizer = optimizer.inner_optimizer
    state["iterations"] = optimizer.iterations
    by_id = {id(v): name for name, v in model_weights(model).items()}
    for variable in model.trainable_variables:
        name = by_id.get(id(variable), variable.path)
        index = optimizer._get_variable_index(variable)
        for attribute, slot in _SLOT_ATTRIBUTES:
            slots = getattr(optimizer, attribute, None)
            if slots and slots[index] is not None:
                state[f"{name}/{slot}"] = slots[index]
    return state


def training_checkpoint(model, optimizer, global_step):
    """The `tf.train.Checkpoint` that `training.loop` saves and restores."""
    parts = {TF2_WEIGHTS_KEY: model_weights(model),
             "optimizer": optimizer_state(optimizer, model),
             "global_step": global_step,
             "seeds": random_states(model)}
    return tf.train.Checkpoint(**parts)


def restore_latest(checkpoint, manager):
    """Restores the newest complete checkpoint in `manager.directory`, if any.

    Returns:
        the checkpoint path restored, or None for a fresh start.
    """
    latest = manager.latest_checkpoint
    if not latest:
        return None
    status = checkpoint.restore(latest)
    try:
        status.assert_existing_objects_matched()
    except AssertionError as err:
        raise ValueError(
            f"{latest}: this training checkpoint does not match the model being trained "
            f"(different bert_config.json, optimizer or task?). Use another --output_dir "
            f"or remove the old checkpoints.\n{err}") from err
    logging.info("Resuming from %s", latest)
    return latest
