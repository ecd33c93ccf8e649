"""Multiple-choice examples -> one packed sequence per choice -> batches.

Pipeline position: `tasks.multiple_choice.data` (examples) -> here -> the multiple-choice
task (training, evaluation, prediction).

Each choice is its own BERT sequence, `[CLS] context [SEP] question choice [SEP]`, packed
as the original packs a sentence pair (`text.packing.pack`: the longer side truncated
first). An example's features are [num_choices, max_seq_length] arrays; a batch is
[batch, num_choices, seq_length], cut to the longest sequence it holds (not on TPUs;
`training.task.array_dataset_fn` with `grouped`).
"""

import numpy as np

from common.progress import Progress
from modeling.inputs import INPUT_NAMES
from text.packing import pack


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
