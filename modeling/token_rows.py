"""New tokens' rows in a model: a token given a vocabulary line of its own (a domain word
in an `[unusedK]` slot, `text.domain_words`) starts from the pieces it was split into.

Pipeline position: adapting a released model, between its checkpoint and continued
pre-training (`tasks.pretraining.adaptation`).

A new token's word-embedding row is the mean of its old pieces' rows (the vector the
model's input layer gave the word, averaged over its pieces; Hugging Face's
`resize_token_embeddings(mean_resizing=True)` starts new rows from the mean of all rows
instead); its masked-LM output bias, when the model has that head, is the mean of their
biases: the tied output layer then scores the new token about as it scored its pieces.
"""

import numpy as np


def initialise_rows(model, new_tokens):
    """Sets the rows of `new_tokens` ({id: [piece id, ...]}) in `model` (a `BertEncoder`
    or a model holding one as `encoder`, with or without a `masked_lm` head) from their
    pieces' rows, read before any is written. Returns the ids set."""
    encoder = getattr(model, "encoder", model)
    table = encoder.word_embeddings
    rows = np.array(table.numpy())
    head = getattr(model, "masked_lm", None)
    bias = np.array(head.output_bias.numpy()) if head is not None else None
    new_rows, new_bias = rows.copy(), None if bias is None else bias.copy()
    for token, pieces in new_tokens.items():
        pieces = list(pieces)
        new_rows[token] = rows[pieces].mean(axis=0)
        if bias is not None:
            new_bias[token] = bias[pieces].mean()
    table.assign(new_rows)
    if bias is not None:
        head.output_bias.assign(new_bias)
    return sorted(new_tokens)
