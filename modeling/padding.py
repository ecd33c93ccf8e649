"""A batch cut to its longest sequence: padding columns no sequence uses are dropped.

Pipeline position: between the model's inputs and the model, wherever batches are padded
to a fixed length but the outputs do not depend on padding: fine-tuning input pipelines
(`training.task`, the tasks' features) and the exports' signatures (`serving`).
"""

import tensorflow as tf

from modeling.inputs import INPUT_NAMES

# Padded lengths are rounded up to a multiple of this, so that a compiled step (and
# oneDNN's kernels for a shape) is reused across batches instead of made per length.
PAD_MULTIPLE = 16


@tf.autograph.experimental.do_not_convert  # no control flow: AutoGraph's rewrite costs
def trim_padding(batch, multiple=PAD_MULTIPLE):  # 0.1-0.2 s at a pipeline's first build
    """A batch of padded features without the padding columns every sequence has: the
    per-position features ([batch, seq_length] like `input_mask`) cut after the last
    position any sequence uses, rounded up to `multiple` (never past seq_length).

    The model's outputs at the real positions do not change: a padded key's attention
    score gets -10000 added, and exp(-10000) is exactly 0 in float32, so padding columns
    contribute nothing (up to float rounding of a different matmul shape). What goes is
    the compute spent on them: SST-2 sentences average about 25 pieces of a 128 window.
    """
    mask = batch["input_mask"]
    width = tf.shape(mask)[1]
    used = tf.reduce_any(tf.not_equal(mask, 0), axis=0)  # [seq_length]
    last = tf.reduce_max(tf.where(used, tf.range(1, width + 1), 0))
    length = tf.minimum(width, tf.maximum(1, (last + multiple - 1) // multiple) * multiple)
    return {name: value[:, :length] if _per_position(name, value, mask) else value
            for name, value in batch.items()}


@tf.autograph.experimental.do_not_convert  # plain ops: nothing for AutoGraph to rewrite
def trim_grouped_padding(batch):
    """A batch of groups of sequences ([batch, group, seq_length]: a question's choices, a
    pair's two sentences) cut after the last position any of its sequences uses
    (`trim_padding` over the groups' sequences as one batch)."""
    shape = tf.shape(batch["input_ids"])
    flat = trim_padding({name: tf.reshape(batch[name], [-1, shape[2]])
                         for name in INPUT_NAMES})
    out = dict(batch)
    out.update({name: tf.reshape(flat[name], [shape[0], shape[1], -1])
                for name in INPUT_NAMES})
    return out


def _per_position(name, value, mask):
    """The encoder's inputs, and any other [batch, seq_length] feature (as token labels)."""
    return name in INPUT_NAMES or (value.shape.rank == 2 and value.shape[1] is not None
                                   and value.shape[1] == mask.shape[1])


