"""Sentence segmentation for document text: one wrapper over `sentencex` (Wikimedia's
rule-based segmenter: ~300 languages, no model download), shared by the Wikipedia and
BookCorpus extractors.

Pipeline position: raw passages -> one sentence per line -> create_pretraining_data.
"""

import re

_SPACES = re.compile(r"\s+")
# ISO 639-1 or -3, then optional subtags: "en", "eng", "zh-yue", "pt-BR", "be-x-old".
_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}(-[a-z0-9]{1,8})*", re.IGNORECASE)


def check_language(code, flag="--language"):
    """Raises ValueError unless `code` has the shape of a language code. sentencex applies
    general rules for a code it has none for, so a value such as "english" would otherwise
    be taken silently."""
    if not _LANGUAGE_CODE.fullmatch(code or ""):
        raise ValueError(f"{flag}={code} is not a language code: give one such as en, de, "
                         "ja or zh-yue (ISO 639).")


def split_sentences(text, language="en"):
    """"Dr. Smith came. He left." -> ["Dr. Smith came.", "He left."].

    Whitespace inside a sentence (including line breaks) becomes one space; empty results
    are dropped. A piece that starts with a lower-case letter after one that ends with a
    full stop is the same sentence, cut at an abbreviation the segmenter does not know
    ("або заст. землепис", "в XIII в. на территории"): the two are joined. Scripts
    without case (CJK, Devanagari...) are never joined.
    """
    from sentencex import segment

    out = []
    for sentence in segment(language, text):
        sentence = _SPACES.sub(" ", sentence).strip()
        if not sentence:
            continue
        if out and out[-1].endswith(".") and sentence[:1].islower():
            out[-1] += " " + sentence
        else:
            out.append(sentence)
    return out
