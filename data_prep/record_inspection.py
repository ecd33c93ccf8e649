"""Pre-training records read back: an instance as a line of tokens (masked positions and
segments marked), and a file set's statistics.

Pipeline position: after the records are written (`create_pretraining_data.py`), to check
what was made (the root's `inspect_tfrecord.py`, `demo.py`).
"""

import collections


def render(example, inv_vocab):
    """One instance as a line of tokens with masked positions and segments marked."""
    n = sum(example["input_mask"])
    k = int(sum(example["masked_lm_weights"]))
    labels = dict(zip(example["masked_lm_positions"][:k], example["masked_lm_ids"][:k]))
    out, previous_segment = [], 0
    for i in range(n):
        if example["segment_ids"][i] != previous_segment:
            out.append("|")
            previous_segment = example["segment_ids"][i]
        token = inv_vocab.get(example["input_ids"][i], f"<id {example['input_ids'][i]}>")
        if i in labels:
            original = inv_vocab.get(labels[i], f"<id {labels[i]}>")
            token = f"={original}=" if labels[i] == example["input_ids"][i] \
                else f"{token}({original})"
        out.append(token)
    label = "random next" if example["next_sentence_labels"][0] else "actual next"
    return f"[{label}, {n} tokens, {k} masked] " + " ".join(out)


def statistics(examples, mask_id):
    counts = collections.Counter()
    lengths = collections.Counter()
    for e in examples:
        n = sum(e["input_mask"])
        k = int(sum(e["masked_lm_weights"]))
        lengths[(n // 16) * 16] += 1
        counts["instances"] += 1
        counts["tokens"] += n
        counts["masked"] += k
        counts["random_next"] += e["next_sentence_labels"][0]
        for p, label in zip(e["masked_lm_positions"][:k], e["masked_lm_ids"][:k]):
            token = e["input_ids"][p]
            counts["as_mask" if token == mask_id else
                   "kept" if token == label else "random_token"] += 1
    return counts, lengths
