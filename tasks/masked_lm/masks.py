"""Texts with `[MASK]` where a word is missing -> the model's inputs and the masked
positions; and the top-k answers as the user reads them. NumPy only: used by
`fill_mask.py` and by `serving.load`'s fast path alike.

Pipeline position: raw text -> here -> the masked-LM head (`tasks.masked_lm.predict`,
the export's `serving_ids`) -> here -> predictions.

`[MASK]` in a text is the mask token; the text around it is tokenized as always (the
basic tokenizer would split the literal into "[", "mask", "]").
"""

import numpy as np

from text import packing

MASK = "[MASK]"


class NoMaskError(ValueError):
    """A text without `[MASK]`, or with one past the length the model reads: `index`, its
    place in the request, and `reason`, what is wrong with it."""

    def __init__(self, index, text, reason):
        super().__init__(f"text {index} ({text[:60]!r}): {reason}")
        self.index, self.reason = index, reason


def ids_with_masks(texts, tokenize, mask_id):
    """Each text's WordPiece ids, `mask_id` where it says `[MASK]`.

    Args:
        texts: list of str.
        tokenize: list of str -> list of id lists (`text.fast_tokenizer.FastTokenizer.ids`,
            or a `FullTokenizer` through `full_tokenizer_ids`).
        mask_id: int. The vocabulary's `[MASK]`.
    """
    segments = [str(text).split(MASK) for text in texts]
    flat = iter(tokenize([part for parts in segments for part in parts]))
    out = []
    for parts in segments:
        ids = []
        for i in range(len(parts)):
            if i:
                ids.append(mask_id)
            ids.extend(next(flat))
        out.append(ids)
    return out


def full_tokenizer_ids(tokenizer):
    """`tokenize` for `ids_with_masks` from a `text.tokenization.FullTokenizer`."""
    return lambda texts: [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(t))
                          for t in texts]


def pack(rows, cls_id, sep_id, mask_id, max_seq_length, seq_multiple=1):
    """Id lists -> the model's inputs (`[CLS] ids [SEP]`, cut to `max_seq_length`, padded
    to the batch's longest, rounded up to `seq_multiple`) and `masked_lm_positions`
    [batch, most masks] (0 where a row has fewer), with each row's count of masks that
    fit (`mask_counts`) and of masks it had (`masks_given`)."""
    kept = [ids[:max_seq_length - 2] for ids in rows]
    length = packing.padded_length(max(len(ids) for ids in kept) + 2, seq_multiple,
                                   max_seq_length)
    inputs = packing.pack_id_pairs([(ids, []) for ids in kept], cls_id, sep_id, length)
    positions = [np.flatnonzero(row == mask_id) for row in inputs["input_ids"]]
    width = max(1, max(len(p) for p in positions))
    inputs["masked_lm_positions"] = np.zeros((len(rows), width), np.int32)
    for row, found in enumerate(positions):
        inputs["masked_lm_positions"][row, :len(found)] = found
    counts = np.array([len(p) for p in positions], np.int32)
    given = np.array([ids.count(mask_id) for ids in rows], np.int32)
    return inputs, counts, given


def top_k(probabilities, k):
    """(ids, probabilities) of the `k` most probable tokens along the last axis, most
    probable first (ties: the lower id first, as `tf.math.top_k`)."""
    k = min(k, probabilities.shape[-1])
    order = np.argsort(-probabilities, axis=-1, kind="stable")[..., :k]
    return order.astype(np.int32), np.take_along_axis(probabilities, order, axis=-1)


def predictions(texts, ids, probabilities, counts, tokens):
    """The user's answers: per text {"text", "predictions": one list per `[MASK]` that
    fit, in order, of {"token", "id", "probability"}, most probable first}.

    Args:
        ids, probabilities: [batch, masks, k] (`top_k`'s, per masked position).
        counts: [batch] masks of each text (the rest of its rows are padding).
        tokens: id -> token (a list, or an array of str).
    """
    out = []
    for row, text in enumerate(texts):
        out.append({"text": text, "predictions": [
            [{"token": tokens[int(i)], "id": int(i), "probability": float(p)}
             for i, p in zip(ids[row, m], probabilities[row, m])]
            for m in range(int(counts[row]))]})
    return out
