"""Sentence pairs -> two packed sequences per pair -> feature arrays.

Pipeline position: `tasks.sentence_embedding.data` (pairs) -> here -> the task (training,
evaluation, prediction).

Each text is its own sequence, `[CLS] text [SEP]`, cut to `max_seq_length` pieces as
sentence-transformers cuts it (`text.packing.pack` of one text). A pair's features are
[2, max_seq_length] arrays; training batches are [batch, 2, seq_length], cut to the longest
sequence they hold (`training.task.array_dataset_fn` with `grouped`).
"""

import numpy as np

from common.progress import Progress
from modeling.inputs import INPUT_NAMES
from text.packing import pack


def convert_pairs(pairs, tokenizer, max_seq_length, score_range=None):
    """{"input_ids", "input_mask", "segment_ids": int32 [pairs, 2, max_seq_length],
    "targets": float32 [pairs], each score scaled from `score_range` to [0, 1] (0 for
    unscored pairs)}."""
    shape = (len(pairs), 2, max_seq_length)
    arrays = {name: np.zeros(shape, np.int32) for name in INPUT_NAMES}
    targets = np.zeros(len(pairs), np.float32)
    progress = Progress("pack", ["pairs"], total=("pairs", len(pairs)))
    for i, pair in enumerate(pairs):
        for j, text in enumerate((pair.text_a, pair.text_b)):
            packed = pack(tokenizer, text, None, max_seq_length)
            arrays["input_ids"][i, j] = packed.input_ids
            arrays["input_mask"][i, j] = packed.input_mask
        if pair.score is not None and score_range:
            low, high = score_range
            targets[i] = (pair.score - low) / (high - low)
        progress.update(pairs=1)
    progress.close()
    arrays["targets"] = targets
    return arrays
