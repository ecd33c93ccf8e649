"""Word-tagged sentences -> WordPiece windows with per-word labels, and back.

Pipeline position: `tasks.tagging.conll` (sentences) -> here -> the tagging task (training,
prediction) -> here again (`word_predictions`) -> CoNLL output and the metric.

Each word's first WordPiece carries the word's label; its other pieces are ignored by the
loss and the metric (weight 0). A sentence longer than `max_seq_length - 2` pieces is
split into windows of whole words that overlap by about `max_seq_length / 2` pieces; each
word is predicted once, from the window where it has the most context on both sides
(as SQuAD's max-context rule). Nothing is silently truncated; only a single word longer
than a whole window keeps just its first pieces. Optionally (`document_context`) the
words of neighbouring sentences of the same document fill the rest of the window.
"""

import dataclasses

import numpy as np

from common.progress import Progress


@dataclasses.dataclass
class Window:
    sentence: int
    first_word: int
    end_word: int            # exclusive
    word_positions: list     # position of each window word's first piece in the sequence
    owned: list              # bools: this window predicts the word


def word_pieces(tokenizer, words):
    """WordPieces of each word; a word that tokenizes to nothing gets [UNK] so that it
    is still labelled and predicted."""
    return [tokenizer.tokenize(word) or ["[UNK]"] for word in words]


def plan_windows(piece_counts, max_pieces, stride=None):
    """(first_word, end_word) ranges of whole words, each at most `max_pieces` pieces
    (a longer single word is cut), consecutive windows starting >= `stride` pieces apart
    and overlapping, covering every word."""
    n = len(piece_counts)
    stride = stride or max(1, max_pieces // 2)
    counts = [min(c, max_pieces) for c in piece_counts]
    windows, start = [], 0
    while True:
        end, total = start, 0
        while end < n and total + counts[end] <= max_pieces:
            total += counts[end]
            end += 1
        end = max(end, start + 1)
        windows.append((start, end))
        if end >= n:
            return windows
        advance, moved = start, 0
        while advance < end - 1 and moved < stride:
            moved += counts[advance]
            advance += 1
        start = max(advance, start + 1)


def _owners(windows, n):
    best = [None] * n
    for index, (first, end) in enumerate(windows):
        for word in range(first, end):
            score = min(word - first, end - 1 - word)
            if best[word] is None or score > best[word][0]:
                best[word] = (score, index)
    return [b[1] for b in best]


def _context(sentences, index, pieces_of, budget):
    """Word pieces around sentence `index` in its document, one word at a time from the
    left and from the right in turn, until `budget` pieces are used.

    Returns:
        (left, right): lists of piece lists, left in reading order.
    """
    document = sentences[index].document

    def words(step):
        j = index + step
        while 0 <= j < len(sentences) and sentences[j].document == document:
            word_pieces_j = pieces_of(j)
            yield from (reversed(word_pieces_j) if step < 0 else word_pieces_j)
            j += step

    sides = {"left": words(-1), "right": words(1)}
    taken = {"left": [], "right": []}
    while sides:
        for side in list(sides):
            word = next(sides[side], None)
            if word is None or len(word) > budget:
                del sides[side]
                continue
            taken[side].append(word)
            budget -= len(word)
    return list(reversed(taken["left"])), taken["right"]


def convert_sentences(sentences, tokenizer, label_map, max_seq_length, stride=None,
                      document_context=False):
    """Features for `sentences` (their `tags` may be None).

    With `document_context`, a sentence that fits in one window is surrounded by the
    words of the sentences before and after it in its document (as the paper's CoNLL
    experiment), up to `max_seq_length`; context words are neither labelled nor predicted.

    Returns:
        (dict of arrays: int32 input_ids / input_mask / segment_ids / label_ids
        [n_windows, max_seq_length], float32 label_weights (first pieces) and
        predict_weights (first pieces of owned words); list of `Window`).
    """
    rows = {k: [] for k in ("input_ids", "input_mask", "segment_ids", "label_ids",
                            "label_weights", "predict_weights")}
    windows = []
    max_pieces = max_seq_length - 2
    cache = {}

    def pieces_of(index):
        if index not in cache:
            cache[index] = word_pieces(tokenizer, sentences[index].words)
        return cache[index]

    progress = Progress("NER features", ["sentences"], total=("sentences", len(sentences)))
    for s_index, sentence in enumerate(sentences):
        progress.update(sentences=1)
        pieces = pieces_of(s_index)
        plan = plan_windows([len(p) for p in pieces], max_pieces, stride)
        owners = _owners(plan, len(pieces))
        left, right = [], []
        if document_context and len(plan) == 1:
            left, right = _context(sentences, s_index, pieces_of,
                                   max_pieces - sum(len(p) for p in pieces))
        left_pieces = [p for word in left for p in word]
        right_pieces = [p for word in right for p in word]
        for w_index, (first, end) in enumerate(plan):
            tokens = ["[CLS]"] + left_pieces
            positions, labels = [], [0] * len(tokens)
            weights, predict = [0.0] * len(tokens), [0.0] * len(tokens)
            for word in range(first, end):
                word_tokens = pieces[word][:max_pieces]
                positions.append(len(tokens))
                tokens.extend(word_tokens)
                tag = sentence.tags[word] if sentence.tags else None
                labels.extend([label_map[tag] if tag else 0] + [0] * (len(word_tokens) - 1))
                weights.extend([1.0] + [0.0] * (len(word_tokens) - 1))
                predict.extend([1.0 if owners[word] == w_index else 0.0] +
                               [0.0] * (len(word_tokens) - 1))
            tokens.extend(right_pieces + ["[SEP]"])
            labels.extend([0] * (len(right_pieces) + 1))
            weights.extend([0.0] * (len(right_pieces) + 1))
            predict.extend([0.0] * (len(right_pieces) + 1))
            pad = max_seq_length - len(tokens)
            rows["input_ids"].append(tokenizer.convert_tokens_to_ids(tokens) + [0] * pad)
            rows["input_mask"].append([1] * len(tokens) + [0] * pad)
            rows["segment_ids"].append([0] * max_seq_length)
            rows["label_ids"].append(labels + [0] * pad)
            rows["label_weights"].append(weights + [0.0] * pad)
            rows["predict_weights"].append(predict + [0.0] * pad)
            windows.append(Window(s_index, first, end, positions,
                                  [owners[w] == w_index for w in range(first, end)]))
    progress.close()
    arrays = {k: np.array(v, np.float32 if k.endswith("weights") else np.int32)
              for k, v in rows.items()}
    return arrays, windows


def word_predictions(windows, predicted_ids, sentences, label_list):
    """Per-sentence predicted tags from per-position label ids [n_windows, seq_length]."""
    tags = [[None] * len(s.words) for s in sentences]
    for window, ids in zip(windows, predicted_ids):
        for offset, (position, owned) in enumerate(zip(window.word_positions,
                                                       window.owned)):
            if owned:
                tags[window.sentence][window.first_word + offset] = label_list[ids[position]]
    missing = [(i, j) for i, t in enumerate(tags) for j, tag in enumerate(t) if tag is None]
    if missing:
        raise AssertionError(f"words without a prediction: {missing[:5]}")
    return tags
