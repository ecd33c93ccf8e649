"""CoNLL-style column files (CoNLL-2003 NER and any language's equivalents): sentences of
words with their tags, and the IOB1 -> IOB2 conversion.

Pipeline position: `eng.train` / `train.txt` ... -> here -> `tasks.tagging.features`
-> the tagging task. One token per line (the word first, the tag last, whitespace-separated),
a blank line between sentences, `-DOCSTART-` lines between documents.
"""

import dataclasses
import os
import re

TAG = re.compile(r"^(O|[BI]-\S+)$")
SPLIT_FILES = {"train": ("train.txt", "eng.train"),
               "dev": ("valid.txt", "dev.txt", "eng.testa"),
               "test": ("test.txt", "eng.testb")}


class ConllError(ValueError):
    """A malformed line, named by file and line number."""


@dataclasses.dataclass
class Sentence:
    words: list
    tags: list          # None for unlabelled input
    document: int = 0   # index of the -DOCSTART- document it belongs to
    line: int = 0       # line of its first word


def find_split(data_dir, split):
    for name in SPLIT_FILES[split]:
        path = os.path.join(data_dir, name)
        if os.path.exists(path):
            return path
    raise ConllError(f"{data_dir}: no {split} file (looked for "
                     f"{', '.join(SPLIT_FILES[split])}).")


def read_conll(path, labelled=True):
    """Sentences of a CoNLL file. With `labelled`, every token line needs at least two
    columns and a tag of the form O, B-TYPE or I-TYPE."""
    sentences, words, tags, start, document = [], [], [], 0, 0
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except UnicodeDecodeError as err:
        raise ConllError(f"{path}: not UTF-8 ({err}).") from err
    columns = None

    def flush():
        if words:
            sentences.append(Sentence(list(words), list(tags) if labelled else None,
                                      document, start))
        words.clear()
        tags.clear()

    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields:
            flush()
            continue
        if fields[0] == "-DOCSTART-":
            flush()
            document += 1
            continue
        if labelled:
            if len(fields) < 2:
                raise ConllError(f"{path}:{number}: one column ({line!r}); expected the "
                                 f"word first and the tag last.")
            if columns is None:
                columns = len(fields)
            elif len(fields) != columns:
                raise ConllError(f"{path}:{number}: {len(fields)} columns where the file "
                                 f"has {columns} ({line!r}).")
            if not TAG.match(fields[-1]):
                raise ConllError(f"{path}:{number}: tag {fields[-1]!r} is not O, B-TYPE or "
                                 f"I-TYPE.")
        if not words:
            start = number
        words.append(fields[0])
        tags.append(fields[-1] if labelled else None)
    flush()
    if not sentences:
        raise ConllError(f"{path}: no sentences.")
    return sentences


def iob1_to_iob2(tags):
    """IOB1 (I- throughout, B- only between two adjacent entities of a type) -> IOB2
    (every entity starts with B-). IOB2 input is returned unchanged."""
    out = []
    for i, tag in enumerate(tags):
        if tag.startswith("I-"):
            previous = out[i - 1] if i else "O"
            if previous == "O" or previous[2:] != tag[2:]:
                tag = "B-" + tag[2:]
        out.append(tag)
    return out


def label_list(sentences):
    """Tags of the training data: "O" first, then the others sorted."""
    tags = {t for s in sentences for t in s.tags}
    return ["O"] + sorted(tags - {"O"})
