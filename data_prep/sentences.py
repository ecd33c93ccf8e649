"""Sentence segmentation for document text: one wrapper over `sentencex` (Wikimedia's
rule-based segmenter: ~300 languages, no model download), shared by the Wikipedia and
BookCorpus extractors.

Pipeline position: raw passages -> one sentence per line -> create_pretraining_data.
"""

import re

_SPACES = re.compile(r"\s+")


def split_sentences(text, language="en"):
    """"Dr. Smith came. He left." -> ["Dr. Smith came.", "He left."].

    Whitespace inside a sentence (including line breaks) becomes one space; empty results
    are dropped.
    """
    from sentencex import segment

    out = []
    for sentence in segment(language, text):
        sentence = _SPACES.sub(" ", sentence).strip()
        if sentence:
            out.append(sentence)
    return out
