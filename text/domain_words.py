"""Domain words in a released vocabulary's `[unusedK]` slots: the frequent words of a
corpus that the vocabulary splits into several pieces, each given a slot of its own,
every other line and id unchanged.

Pipeline position: adapting a released model to a domain (text -> this -> vocab.txt
with the new words -> the model's embedding rows for them, `modeling.token_rows` -> the
TFRecords and continued pre-training, `tasks.pretraining.adaptation`); or alone, for the
vocabulary (`python build_vocab.py --extend`).

The released vocabularies keep such slots for this (English BERT: 994 `[unusedK]` lines;
the original's README and issues #9, #237, #396): a line holds one token and its line
number is its id, so a model trained on the vocabulary still reads every id it knew, and
the new words' rows start from their old pieces' (`modeling.token_rows`).
"""

import dataclasses
import re

from text.tokenization import UNK_TOKEN, WordpieceTokenizer, load_vocab

UNUSED = re.compile(r"^\[unused\d+\]$")
# A word seen fewer times than this is not worth a slot: its row would learn from too
# few examples.
MIN_COUNT = 5


class DomainWordsError(ValueError):
    """A vocabulary that cannot take domain words."""


@dataclasses.dataclass(frozen=True)
class DomainWord:
    """A word given a slot: its text, id (the slot's line), the pieces it was split into
    before (their ids, to start its rows from) and how often the corpus has it."""
    word: str
    id: int
    slot: str
    pieces: tuple
    piece_ids: tuple
    count: int


def vocabulary_lines(vocab_file):
    """The vocabulary's lines (tokens, stripped as the tokenizer reads them), checked
    as the tokenizer checks them (`text.tokenization.load_vocab`)."""
    load_vocab(vocab_file)
    with open(vocab_file, encoding="utf-8") as f:
        lines = [line.strip() for line in f.read().split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def unused_slots(lines):
    """The ids of a vocabulary's `[unusedK]` lines, in order."""
    return [index for index, token in enumerate(lines) if UNUSED.match(token)]


def choose_words(counts, vocab, limit, min_count=MIN_COUNT):
    """Up to `limit` of the most frequent words of `counts` ({word: count}, words as the
    basic tokenizer splits them, cased as the model reads them) that WordPiece splits
    into two or more pieces, none unknown; words without a letter (numbers, symbols) are
    left alone. Returns [(word, count, pieces)], most frequent first (ties by word)."""
    wordpiece = WordpieceTokenizer(vocab)
    chosen = []
    for word, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        if len(chosen) == limit or count < min_count:
            break
        if word in vocab or not any(char.isalpha() for char in word):
            continue
        pieces = wordpiece.tokenize(word)
        if len(pieces) >= 2 and UNK_TOKEN not in pieces:
            chosen.append((word, count, tuple(pieces)))
    return chosen


def extend_vocabulary(vocab_file, counts, limit, min_count=MIN_COUNT):
    """The vocabulary of `vocab_file` with up to `limit` domain words of `counts` (see
    `choose_words`) in its first `[unusedK]` lines.

    Returns:
        (lines, [DomainWord]): the new file's lines (as many as the old one's, every
        other line unchanged) and the words placed, by slot.

    Raises:
        DomainWordsError: the vocabulary has no `[unusedK]` line.
    """
    lines = vocabulary_lines(vocab_file)
    vocab = load_vocab(vocab_file)
    slots = unused_slots(lines)
    if not slots:
        raise DomainWordsError(
            f"{vocab_file}: no [unusedK] lines to put domain words in (the released BERT "
            f"vocabularies keep about 1,000; this one has none). Adapt without "
            f"--domain_words, or use a vocabulary with unused slots.")
    placed = []
    for slot, (word, count, pieces) in zip(slots, choose_words(counts, vocab, limit,
                                                               min_count)):
        placed.append(DomainWord(word=word, id=slot, slot=lines[slot], pieces=pieces,
                                 piece_ids=tuple(vocab[p] for p in pieces), count=count))
        lines[slot] = word
    return lines, placed


def describe(placed, free_slots):
    """Log lines naming each placed word, its slot and its old pieces."""
    lines = [f"{len(placed)} domain words placed in [unused] slots ({free_slots} were "
             f"free):"]
    lines += [f"  {w.word!r} -> id {w.id} (was {w.slot}; before: {' '.join(w.pieces)}; "
              f"{w.count:,} times)" for w in placed]
    return lines
