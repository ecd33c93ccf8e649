"""A tagging (NER) export served from raw text without TensorFlow: words split as the
BERT tokenizer splits them, each word's first WordPiece tagged, tags joined into
entities with character offsets, in Python and NumPy around `model.tflite`.

Pipeline position: `serving.load` of a tagging export (see `serving.fast_path`).
"""

import numpy as np

from serving.fast_path import FastPath
from tasks.tagging.metrics import chunks
from text.tokenization import split_words_with_offsets


class TaggingFastPath(FastPath):
    """`text` in; `entity_type`, `entity_text`, `entity_start`, `entity_end`, `words` and
    `word_tags` out, each padded per row, as `TaggingModule.from_text`: an entity starts
    at a B-X (or S-X) tag or at an X tag after another type; words past
    `max_seq_length` pieces are tagged O. And `entities`, for people: per text, a list of
    {"label", "text", "start", "end"} (character offsets, end exclusive), the words
    merged into entities as conlleval reads the tags (`tasks.tagging.metrics.chunks`)."""

    sequence_outputs = ("probabilities", "label_id", "label")

    def __init__(self, config, tokenizer, seq_multiple=8):
        super().__init__(config, tokenizer, seq_multiple)
        self.labels = list(config["labels"])
        self.types = sorted({t[2:] for t in self.labels if t != "O"})
        self.kind = [0 if t == "O" else 1 + self.types.index(t[2:]) for t in self.labels]
        self.begins = [t.startswith(("B-", "S-")) for t in self.labels]

    def prepare(self, columns):
        texts = [t.decode("utf-8") if isinstance(t, bytes) else t
                 for t in columns[self.text_inputs[0]]]
        words = [split_words_with_offsets(text) for text in texts]
        flat = self.tokenizer.ids([word for row in words for word, _, _ in row])
        pieces, starts, at = [], [], 0
        for row in words:
            row_pieces, row_starts = [], []
            for word_ids in flat[at:at + len(row)]:
                row_starts.append(1 + len(row_pieces))  # [CLS] first
                row_pieces += word_ids or [self.unk_id]  # a word of nothing known: [UNK]
            at += len(row)
            pieces.append(row_pieces[:self.max_seq_length - 2])
            starts.append(row_starts)
        return self.pack([(p, []) for p in pieces]), (texts, words, starts)

    def answer(self, outputs, state):
        texts, words, starts = state
        label_id = outputs["label_id"]
        rows = []
        for row, (text, row_words, row_starts) in enumerate(zip(texts, words, starts)):
            tags = [int(label_id[row, s]) if s < self.max_seq_length - 1 else 0
                    for s in row_starts]
            entities, previous = [], 0
            for (_, begin, end), tag in zip(row_words, tags):
                kind = self.kind[tag]
                if kind and (self.begins[tag] or kind != previous):
                    entities.append([self.types[kind - 1], begin, end])
                elif kind:
                    entities[-1][2] = end
                previous = kind
            rows.append(([(t, text[b:e], b, e) for t, b, e in entities],
                         [(w, self.labels[t]) for (w, _, _), t in zip(row_words, tags)]))
        return {"entities": [_entities(text, row_words, [t for _, t in r[1]])
                             for text, row_words, r in zip(texts, words, rows)],
                "entity_type": _padded([[e[0] for e in r[0]] for r in rows], b""),
                "entity_text": _padded([[e[1] for e in r[0]] for r in rows], b""),
                "entity_start": _padded([[e[2] for e in r[0]] for r in rows], -1),
                "entity_end": _padded([[e[3] for e in r[0]] for r in rows], -1),
                "words": _padded([[w for w, _ in r[1]] for r in rows], b""),
                "word_tags": _padded([[t for _, t in r[1]] for r in rows], b"")}


def _entities(text, words, tags):
    """A text's entities as dicts, from its words (word, start, end) and their tags."""
    return [{"label": kind, "text": text[words[first][1]:words[end - 1][2]],
             "start": words[first][1], "end": words[end - 1][2]}
            for first, end, kind in sorted(chunks(tags))]


def _padded(rows, pad):
    """Rows of values -> an array [rows, longest], padded with `pad`: strings as UTF-8
    bytes (object), numbers as int64."""
    width = max((len(r) for r in rows), default=0)
    if isinstance(pad, bytes):
        out = np.full((len(rows), width), pad, dtype=object)
        for i, row in enumerate(rows):
            out[i, :len(row)] = [v.encode("utf-8") for v in row]
        return out
    out = np.full((len(rows), width), pad, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    return out
