"""Reading a folder of plain-text books (BookCorpus-style, one book per .txt file): the
books found, and each book's sentences.

Pipeline position: books -> these sentences -> document files (the root's
`extract_bookcorpus.py`), one document per book.
"""

import os
import re


def book_sentences(args):
    """(path, language) -> (path, sentences, bytes that were not UTF-8)."""
    from data_prep.sentences import split_sentences

    path, language = args
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8", errors="replace")
    invalid = text.count("\ufffd") - raw.decode("utf-8", errors="ignore").count("\ufffd")
    text = text.replace("\ufffd", "")
    sentences = []
    for paragraph in re.split(r"\n\s*\n|\n(?=\s)", text):
        paragraph = paragraph.strip()
        if paragraph:
            sentences.extend(split_sentences(paragraph, language))
    return path, sentences, invalid


def find_books(input_dir):
    if not os.path.isdir(input_dir):
        raise ValueError(f"{input_dir}: not a folder.")
    books = sorted(os.path.join(root, name) for root, _, names in os.walk(input_dir)
                   for name in names if name.endswith(".txt"))
    if not books:
        raise ValueError(f"{input_dir}: no .txt files in this folder.")
    return books
