"""Packing one or two token sequences into BERT's fixed-length inputs.

Pipeline position: between tokenization and the model, for fine-tuning readers and feature
extraction (pre-training data has its own, randomised truncation).

The layout (padding uses id 0, mask 0, segment 0):
```
tokens:      [CLS] is this jack ##son ##ville ? [SEP] no it is not . [SEP]
segment_ids:   0    0   0    0    0     0     0   0    1  1  1  1  1   1
input_mask:    1    1   1    1    1     1     1   1    1  1  1  1  1   1   (0 on padding)
```
"""

import dataclasses

# The model's three inputs, named as the original's features (and the TFRecords' keys):
# every reader, task, loop and export uses these names.
INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")


@dataclasses.dataclass
class PackedInput:
    """One packed example: `tokens` holds only real tokens, the id lists are padded."""
    tokens: list
    input_ids: list
    input_mask: list
    segment_ids: list


def truncate_seq_pair(tokens_a, tokens_b, max_length):
    """Truncates in place, one token at a time from the back of the longer list (from
    `tokens_b` on a tie), until the total fits: the original's deterministic rule, which
    keeps as much of a short sequence as possible.

    Example: a=[1,2,3,4], b=[5,6,7], max_length=5 -> a=[1,2,3], b=[5,6].
    """
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


def pack(tokenizer, text_a, text_b, max_seq_length):
    """Tokenizes and packs `text_a` (and `text_b`, if it has tokens) into `PackedInput`.

    Args:
        tokenizer: a `data_prep.tokenization.FullTokenizer`.
        text_a: str.
        text_b: str or None. An empty or all-whitespace `text_b` gives a single sequence.
        max_seq_length: int. Length of the padded id lists, specials included.
    """
    tokens_a = tokenizer.tokenize(text_a)
    tokens_b = tokenizer.tokenize(text_b) if text_b else []
    if tokens_b:
        truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    else:
        tokens_a = tokens_a[:max_seq_length - 2]
    tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += tokens_b + ["[SEP]"]
        segment_ids += [1] * (len(tokens_b) + 1)
    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    padding = [0] * (max_seq_length - len(input_ids))
    return PackedInput(tokens=tokens, input_ids=input_ids + padding,
                       input_mask=[1] * len(input_ids) + padding,
                       segment_ids=segment_ids + padding)
