"""Contextual embeddings for the feature-based approach (the paper's Section 5.3): the
activations of chosen encoder layers for every real token, as `extract_features.py` of the
original release writes them.

Pipeline position: after a checkpoint (pre-trained or fine-tuned); an alternative to
fine-tuning.
"""

import re

import numpy as np
import tensorflow as tf

from modeling.inputs import INPUT_NAMES

_PAIR = re.compile(r"^(.*) \|\|\| (.*)$")


class InputError(ValueError):
    """An input file that cannot be read as examples."""


def read_examples(input_file):
    """Reads one example per line; `text_a ||| text_b` is a pair.

    Lines are stripped as the original does; an empty line is still an example.

    Returns:
        list of (unique_id, text_a, text_b or None), unique_id the 0-based line number.

    Raises:
        InputError: unreadable or empty file, or a line that is not UTF-8 (named by number).
    """
    try:
        with tf.io.gfile.GFile(input_file, "rb") as f:
            raw_lines = f.read().split(b"\n")
    except (tf.errors.OpError, OSError) as e:
        raise InputError(f"{input_file}: cannot read the input file ({e}).") from e
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    if not raw_lines:
        raise InputError(f"{input_file}: the input file is empty; write one example per "
                         f"line (\"text_a ||| text_b\" for a pair).")
    examples = []
    for number, raw in enumerate(raw_lines):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError as e:
            raise InputError(f"{input_file}, line {number + 1}: not UTF-8 text ({e}). "
                             f"Convert the file to UTF-8.") from e
        match = _PAIR.match(line)
        if match:
            examples.append((number, match.group(1), match.group(2)))
        else:
            examples.append((number, line, None))
    return examples


# The name of the embedding layer (the encoder's input: word + position + segment
# embeddings, normalised) in `--layers`; integers index the Transformer blocks' outputs.
EMBEDDINGS = "embeddings"


def parse_layer_indexes(spec, num_layers):
    """"-1,-2" -> [-1, -2], each checked against the encoder's depth; "embeddings" names
    the embedding layer (0 is the first block's output, -1 the last's)."""
    indexes = []
    for item in (x.strip() for x in spec.split(",")):
        if not item:
            continue
        if item == EMBEDDINGS:
            indexes.append(EMBEDDINGS)
            continue
        try:
            indexes.append(int(item))
        except ValueError:
            raise ValueError(f"--layers={spec!r}: expected comma-separated integers such as "
                             f"-1,-2,-3,-4, or '{EMBEDDINGS}'.") from None
    if not indexes:
        raise ValueError("--layers is empty; give at least one layer index such as -1.")
    for index in indexes:
        if index != EMBEDDINGS and not -num_layers <= index < num_layers:
            raise ValueError(f"--layers: index {index} is out of range for a model with "
                             f"{num_layers} layers (valid: {-num_layers}..{num_layers - 1}, "
                             f"or '{EMBEDDINGS}').")
    return indexes


class _Activations(list):
    """The blocks' outputs by index, and the embedding layer as `[EMBEDDINGS]`."""
    embeddings = None

    def __getitem__(self, index):
        return self.embeddings if index == EMBEDDINGS else super().__getitem__(index)


POOLINGS = ("none", "cls", "mean", "pooled")

# The paper's Table 7: which activations of a frozen BERT a feature-based model reads.
FEATURE_COMBINATIONS = ("embeddings", "second_to_last", "last", "sum_last_four",
                        "concat_last_four", "sum_all")


def combined_width(combination, hidden_size):
    """The width of a `combine_layers` output."""
    return 4 * hidden_size if combination == "concat_last_four" else hidden_size


def combine_layers(outputs, combination):
    """The `combination` of an encoder's outputs (its `embedding_output` and per-block
    `encoder_outputs`), [batch, seq_length, width]: the embeddings; the second-to-last or
    last block; the sum or concatenation of the last four blocks; or the sum of all blocks
    (the paper's "Sum All 12 Layers": the blocks, not the embeddings)."""
    blocks = outputs["encoder_outputs"]
    if combination == "embeddings":
        return outputs["embedding_output"]
    if combination == "second_to_last":
        return blocks[-2]
    if combination == "last":
        return blocks[-1]
    if combination == "sum_last_four":
        return sum(blocks[-4:][1:], blocks[-4:][0])
    if combination == "concat_last_four":
        return tf.concat(blocks[-4:], axis=-1)
    if combination == "sum_all":
        return sum(blocks[1:], blocks[0])
    raise ValueError(f"{combination!r} is not one of {list(FEATURE_COMBINATIONS)}.")


def _batches(encoder, packed_examples, batch_size, output_attentions=False):
    """Yields (chunk, per-layer activations [L] of float32 [b, length, H], pooled output
    float32 [b, H], input mask int32 [b, length], and with `output_attentions` each
    block's attention probabilities [L] of float32 [b, heads, length, length], else None)
    per batch, in order."""
    run = tf.function(lambda x: encoder(x, training=False,
                                        output_attentions=output_attentions),
                      reduce_retracing=True, autograph=False)
    for start in range(0, len(packed_examples), batch_size):
        chunk = packed_examples[start:start + batch_size]
        # Pad to the longest example in the batch: padded keys get exp(-10000) = 0 weight,
        # so real tokens' activations do not depend on how much padding there is.
        length = max(len(p.tokens) for _, p in chunk)
        batch = {name: np.array([getattr(p, name)[:length] for _, p in chunk], np.int32)
                 for name in INPUT_NAMES}
        out = run(batch)
        layers = _Activations(np.asarray(layer, np.float32) for layer in out["encoder_outputs"])
        layers.embeddings = np.asarray(out["embedding_output"], np.float32)
        attentions = [np.asarray(a, np.float32) for a in out["attentions"]] \
            if output_attentions else None
        yield chunk, layers, np.asarray(out["pooled_output"], np.float32), \
            batch["input_mask"], attentions


def pool(layers, pooled_output, input_mask, layer_indexes, pooling):
    """Sentence vectors of a batch, float32 [b, H].

    cls: the [CLS] vector; mean: the mean over real tokens (mask 1, [CLS] and [SEP]
    included, as sentence-transformers' mean pooling); each averaged over `layer_indexes`.
    pooled: the tanh pooler output (the next-sentence head's input), whatever the layers.
    """
    if pooling == "pooled":
        return pooled_output
    chosen = np.mean([layers[i] for i in layer_indexes], axis=0)  # [b, length, H]
    if pooling == "cls":
        return chosen[:, 0]
    if pooling == "mean":
        mask = input_mask[:, :, None].astype(np.float32)
        return (chosen * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0)
    raise ValueError(f"--pooling={pooling!r} is not one of {list(POOLINGS)}.")


def embed(encoder, packed_examples, layer_indexes, batch_size, pooling):
    """Yields (unique_id, float32 vector [H]) per example, in order (see `pool`)."""
    for chunk, layers, pooled, mask, _ in _batches(encoder, packed_examples, batch_size):
        vectors = pool(layers, pooled, mask, layer_indexes, pooling)
        for (unique_id, _), vector in zip(chunk, vectors):
            yield unique_id, vector


def extract(encoder, packed_examples, layer_indexes, batch_size, pooling="none",
            output_attentions=False):
    """Runs `encoder` over packed examples and yields the original's JSON objects.

    Args:
        encoder: a `modeling.BertEncoder`, weights loaded.
        packed_examples: list of (unique_id, `text.packing.PackedInput`).
        layer_indexes: list of int, indexes into the per-layer outputs (-1 = last block;
            0 = the first block's output), or `EMBEDDINGS` for the embedding layer.
        batch_size: int.
        pooling: str. "none" (the original's objects), or "cls", "mean" or "pooled" to
            add an "embedding" (see `pool`).
        output_attentions: bool. Add each block's attention probabilities over the
            example's tokens as "attentions".

    Yields:
        dicts `{"linex_index": id, "features": [{"token": ..., "layers": [{"index": i,
        "values": [6-decimal floats]}, ...]}, ...]}` (and "embedding": [floats]; and
        "attentions": [{"index": block, 0 first, "values": heads x tokens (queries) x
        tokens (keys), 6-decimal floats}] for every block), one per example, in order.
    """
    for chunk, layers, pooled, mask, attentions in _batches(
            encoder, packed_examples, batch_size, output_attentions):
        vectors = None if pooling == "none" else pool(layers, pooled, mask, layer_indexes,
                                                      pooling)
        for row, (unique_id, packed) in enumerate(chunk):
            features = []
            for position, token in enumerate(packed.tokens):
                features.append({
                    "token": token,
                    "layers": [{"index": index,
                                "values": _rounded(layers[index][row, position].tolist())}
                               for index in layer_indexes],
                })
            obj = {"linex_index": unique_id, "features": features}
            if vectors is not None:
                obj["embedding"] = _rounded(vectors[row].tolist())
            if attentions is not None:
                real = len(packed.tokens)  # the example's tokens, not the batch's padding
                obj["attentions"] = [
                    {"index": block,
                     "values": _rounded(probabilities[row, :, :real, :real].tolist())}
                    for block, probabilities in enumerate(attentions)]
            yield obj


def _rounded(values):
    """Nested lists of floats (`ndarray.tolist()`) rounded to 6 decimals, as the original
    writes them."""
    return [_rounded(v) if isinstance(v, list) else round(v, 6) for v in values]
