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

import os

import keras
import tensorflow as tf
from absl import logging
from google.protobuf.message import DecodeError

from common.errors import op_error_text
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


def remove_partial_saves(directory):
    """Removes the `ckpt-N_temp/` folders TensorFlow writes a checkpoint's shards into
    before merging them: a run killed while saving leaves one behind. (Call it where only
    this run writes: the chief, before it saves.)"""
    for leftover in tf.io.gfile.glob(os.path.join(directory, "ckpt-*_temp")):
        logging.info("Removing %s, left by an interrupted save.", leftover)
        tf.io.gfile.rmtree(leftover)


def step_of(checkpoint_path):
    """The step in a training checkpoint's name (`output_dir/ckpt-STEP`); 0 for None."""
    return int(checkpoint_path.rsplit("-", 1)[1]) if checkpoint_path else 0


# What reading a damaged checkpoint raises (a truncated data file gives an IndexError).
READ_ERRORS = (tf.errors.OpError, IndexError, DecodeError)


def newest_first(directory):
    """The training checkpoints of `directory`, newest first (from its state file)."""
    state = tf.train.get_checkpoint_state(directory)
    return list(reversed(state.all_model_checkpoint_paths)) if state else []


def restore_latest(checkpoint, manager):
    """Restores the newest readable checkpoint in `manager.directory`, if any. A newest
    one that cannot be read (damaged, cut short) is reported and left in place, and the
    one before it is used.

    Returns:
        the checkpoint path restored, or None for a fresh start.

    Raises:
        ValueError: the checkpoints do not match the model, or none can be read.
    """
    tried = []
    for path in reversed(manager.checkpoints):
        try:
            status = checkpoint.restore(path)
        except ValueError as err:  # a weight of another shape: another model
            first_line = str(err).strip().splitlines()[0] if str(err).strip() else ""
            raise ValueError(
                f"{path}: this training checkpoint does not match the model being trained "
                f"(a bert_config.json of another size?): {first_line} Use the run's own "
                f"config to resume it, or another --output_dir (or "
                f"--overwrite_output_dir) to start afresh.") from err
        except READ_ERRORS as err:
            logging.warning("%s: cannot be read (%s: %s); left in place, trying the "
                            "checkpoint before it.", path, type(err).__name__,
                            op_error_text(err))
            tried.append(path)
            continue
        try:
            status.assert_existing_objects_matched()
        except AssertionError as err:
            raise ValueError(
                f"{path}: this training checkpoint does not match the model being trained "
                f"(different bert_config.json, optimizer or task?). Use another "
                f"--output_dir or remove the old checkpoints.\n{err}") from err
        logging.info("Resuming from %s", path)
        return path
    if tried:
        raise ValueError(f"{manager.directory}: no training checkpoint can be read "
                         f"({', '.join(tried)}); they are damaged. Move them away to start "
                         f"afresh, or use another --output_dir.")
    return None
