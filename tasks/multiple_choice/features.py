"""Multiple-choice examples -> one packed sequence per choice -> batches.

Pipeline position: `tasks.multiple_choice.data` (examples) -> here -> the multiple-choice
task (training, evaluation, prediction).

Each choice is its own BERT sequence, `[CLS] context [SEP] question choice [SEP]`, packed
as the original packs a sentence pair (`text.packing.pack`: the longer side truncated
first). An example's features are [num_choices, max_seq_length] arrays; a batch is
[batch, num_choices, seq_length], cut to the longest sequence it holds (not on TPUs).
"""

import numpy as np
import tensorflow as tf

from common.progress import Progress
from modeling.inputs import INPUT_NAMES
from modeling.padding import trim_padding
from text.packing import pack
from training.task import array_dataset_fn


def convert_examples(examples, tokenizer, max_seq_length):
    """{"input_ids", "input_mask", "segment_ids": int32 [examples, choices, seq_length],
    "label_ids": int32 [examples] (-1 where unlabelled)}."""
    num_choices = len(examples[0].choices)
    shape = (len(examples), num_choices, max_seq_length)
    arrays = {name: np.zeros(shape, np.int32) for name in INPUT_NAMES}
    labels = np.full(len(examples), -1, np.int32)
    progress = Progress("pack", ["examples"], total=("examples", len(examples)))
    for i, example in enumerate(examples):
        for j, second in enumerate(example.second_segments()):
            packed = pack(tokenizer, example.context, second, max_seq_length)
            arrays["input_ids"][i, j] = packed.input_ids
            arrays["input_mask"][i, j] = packed.input_mask
            arrays["segment_ids"][i, j] = packed.segment_ids
        if example.label is not None:
            labels[i] = example.label
        progress.update(examples=1)
    progress.close()
    arrays["label_ids"] = labels
    return arrays


@tf.autograph.experimental.do_not_convert  # plain ops: nothing for AutoGraph to rewrite
def trim_choice_padding(batch):
    """A batch [batch, choices, seq_length] cut after the last position any of its
    sequences uses (`modeling.padding.trim_padding` over the choices as one batch)."""
    shape = tf.shape(batch["input_ids"])
    flat = trim_padding({name: tf.reshape(batch[name], [-1, shape[2]])
                         for name in INPUT_NAMES})
    out = dict(batch)
    out.update({name: tf.reshape(flat[name], [shape[0], shape[1], -1])
                for name in INPUT_NAMES})
    return out


def train_dataset_fn(arrays, global_batch_size, seed, pad_to_longest):
    """`TrainInput.dataset_fn` over the feature arrays (`training.task.array_dataset_fn`),
    each batch cut to its longest sequence with `pad_to_longest`."""
    examples = array_dataset_fn(arrays, global_batch_size, seed)

    def dataset_fn(context, skip_batches):
        dataset = examples(context, skip_batches)
        if pad_to_longest:
            dataset = dataset.map(trim_choice_padding, num_parallel_calls=tf.data.AUTOTUNE)
        return dataset

    return dataset_fn

