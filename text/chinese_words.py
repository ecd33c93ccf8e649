"""Chinese words for whole-word masking: which tokens of a line continue a word of a
Chinese word segmenter, so that `--do_whole_word_mask` masks the characters of a Chinese
word together, as it masks the WordPieces of an English word together.

Pipeline position: text -> (tokenize) -> **word marks** -> masked-LM instances
(`data_prep.pretraining_instances`, `data_prep.fast_pretraining`) -> TFRecords.

The original tokenizer makes every CJK ideograph a token of its own, so whole-word
masking, which groups a token with the one before it when it starts with "##", masks
Chinese one character at a time. Chinese BERT-wwm (Cui et al. 2019,
https://arxiv.org/abs/1906.08101) groups the characters of each word a segmenter finds;
Hugging Face's `run_chinese_ref.py` does the same by marking the characters after a
word's first as "##" pieces for the masking alone. Here the segmenter is jieba
(https://github.com/fxsjy/jieba, its default `lcut`), and a word is grouped when all its
characters are CJK ideographs (the tokenizer's `is_cjk`) and it has more than one:
"T恤" or "iPhone" are left to the tokenizer's own pieces, as in `run_chinese_ref.py`.

A mark travels with the token's id: a token that continues a word carries the
CONTINUES_WORD bit (above every vocabulary id) through chunking and truncation, and the
masking treats it as a "##" piece and clears it (`without_marks`); the ids written are
the vocabulary's. With the segmenter off no id carries the bit, and the output is the
original's.
"""

import logging
import unicodedata
import warnings

import numpy as np

from common.shared_settings import WORD_SEGMENTERS as SEGMENTERS
from text.tokenization import UNK_TOKEN, is_cjk

# Above every vocabulary id (vocabularies have at most a few hundred thousand entries),
# below the int32 the fast mode keeps token ids in.
CONTINUES_WORD = 1 << 24
_ID_BITS = CONTINUES_WORD - 1
JIEBA_INSTALL = "pip install jieba==0.42.1"


class SegmenterMissing(ValueError):
    """The segmenter asked for is not installed."""


def check_segmenter(do_whole_word_mask, word_segmenter):
    """Refuses in one line (ValueError) a segmenter without whole-word masking, or one
    that is not installed (`SegmenterMissing`), before any work."""
    if word_segmenter == "none":
        return
    if not do_whole_word_mask:
        raise ValueError(f"--word_segmenter={word_segmenter} groups Chinese characters into "
                         f"words for whole-word masking: add --do_whole_word_mask (or drop "
                         f"--word_segmenter).")
    require_segmenter(word_segmenter, f"--word_segmenter={word_segmenter}")


def require_segmenter(name, what):
    """Raises `SegmenterMissing` in one line, saying how to install it, when segmenter
    `name` is asked for (`what`: the flag that asks) and not installed."""
    if name == "none":
        return
    try:
        _import_jieba()
    except ImportError:
        raise SegmenterMissing(
            f"{what} needs jieba, the Chinese word segmenter, which is not installed. "
            f"Install it with `{JIEBA_INSTALL}` (pure Python; everything else works "
            f"without it).") from None


def _import_jieba():
    # jieba imports pkg_resources, which warns that it is deprecated, and logs its
    # dictionary loading at DEBUG to the console: neither is the user's business.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import jieba
    jieba.setLogLevel(logging.WARNING)
    return jieba


def load_segmenter(name):
    """`str -> list of str` whose pieces concatenate to the line (jieba's `lcut`, its
    dictionary and HMM for unknown words as it ships)."""
    if name != "jieba":
        raise ValueError(f"word segmenter {name!r}: one of {SEGMENTERS[1:]}")
    return _import_jieba().lcut


def word_marks(vocab, do_lower_case, do_whole_word_mask, word_segmenter):
    """The `WordMarks` of a run that masks `word_segmenter`'s Chinese words whole, or
    None (no whole-word masking, or no segmenter)."""
    if not do_whole_word_mask or word_segmenter == "none":
        return None
    return WordMarks(vocab, do_lower_case, load_segmenter(word_segmenter))


def without_marks(ids):
    """Token ids with the CONTINUES_WORD bit cleared (a list or a NumPy array)."""
    if isinstance(ids, np.ndarray):
        return ids & _ID_BITS
    return [i & _ID_BITS for i in ids]


class WordMarks:
    """Marks the tokens of lines that continue a word of the segmenter.

    Args:
        vocab: dict token -> id, the tokenizer's vocabulary.
        do_lower_case: the tokenizer's casing (a lower-casing tokenizer maps CJK
            compatibility ideographs to their unified form, NFD).
        segment: `str -> list of str`, the segmenter (`load_segmenter`).
    """

    def __init__(self, vocab, do_lower_case, segment):
        self._segment = segment
        self._lower = do_lower_case
        self._vocab = vocab
        self._unk = vocab.get(UNK_TOKEN, -1)
        # Ids of the tokens that are one CJK character: in the tokenizer's output, only
        # a CJK character of the text becomes one (a "##" piece is another entry).
        self._cjk_id = np.zeros(max(vocab.values(), default=0) + 1, bool)
        for token, i in vocab.items():
            if len(token) == 1 and is_cjk(ord(token)):
                self._cjk_id[i] = True
        self._has_token = {}
        self.unaligned_lines = 0  # lines whose CJK tokens did not match their text

    def _in_vocab(self, char):
        known = self._has_token.get(char)
        if known is None:
            token = unicodedata.normalize("NFD", char) if self._lower else char
            known = self._has_token[char] = token in self._vocab
        return known

    def continuing(self, line, ids):
        """Positions in `ids` (the tokens of `line`, str) of the tokens that continue a
        word of the segmenter: every CJK character of a word of two or more CJK
        characters but its first. A line whose tokens do not line up with its text is
        counted in `unaligned_lines` and left unmarked."""
        ids = np.asarray(ids)
        cjk_positions = np.flatnonzero(self._cjk_id[np.minimum(ids, len(self._cjk_id) - 1)])
        if not len(cjk_positions):
            return []
        # The k-th CJK token of the line is the k-th CJK character of the text that the
        # vocabulary holds; one it lacks is an [UNK] of its own, between the same
        # neighbours.
        chars = [i for i, c in enumerate(line) if is_cjk(ord(c)) and self._in_vocab(c)]
        if len(chars) != len(cjk_positions):
            self.unaligned_lines += 1
            return []
        position = dict(zip(chars, cjk_positions.tolist()))
        marked, start = [], 0
        for word in self._segment(line):
            end = start + len(word)
            if end - start > 1 and all(is_cjk(ord(c)) for c in word):
                first = self._first_position(word, start, position, ids)
                if first is not None:
                    marked.extend(range(first + 1, first + len(word)))
            start = end
        return marked

    def _first_position(self, word, start, position, ids):
        """The position of the token of the word's first character, if every character
        of the word is where it should be (the known ones at their positions, the others
        [UNK] in between); else None."""
        anchor = next((position[start + j] - j for j in range(len(word))
                       if start + j in position), None)
        if anchor is None or anchor < 0 or anchor + len(word) > len(ids):
            return None
        for j in range(len(word)):
            expected = position.get(start + j)
            if expected is None and ids[anchor + j] != self._unk:
                return None
            if expected is not None and expected != anchor + j:
                return None
        return anchor

    def mark_lists(self, lines, id_lists):
        """Lines (UTF-8 bytes or str) and their token ids (lists) -> the ids, with the
        CONTINUES_WORD bit set on each token that continues a word."""
        out = []
        for line, ids in zip(lines, id_lists):
            marked = self.continuing(_text(line), ids) if ids else []
            if marked:
                ids = list(ids)
                for p in marked:
                    ids[p] |= CONTINUES_WORD
            out.append(ids)
        return out

    def mark_flat(self, lines, values, splits):
        """`mark_lists` for ragged ids: row r (line r) is `values[splits[r]:splits[r+1]]`;
        returns a marked copy of `values`."""
        values = np.array(values, copy=True)
        splits = np.asarray(splits)
        cjk = np.concatenate([[0], np.cumsum(
            self._cjk_id[np.minimum(values, len(self._cjk_id) - 1)])])
        has_cjk = cjk[splits[1:]] > cjk[splits[:-1]]
        for row, line in enumerate(lines):
            lo, hi = int(splits[row]), int(splits[row + 1])
            if hi > lo and has_cjk[row]:
                marked = self.continuing(_text(line), values[lo:hi])
                if marked:
                    values[lo + np.asarray(marked)] |= CONTINUES_WORD
        return values


def _text(line):
    return line.decode("utf-8", "ignore") if isinstance(line, bytes) else line


def characters_alone_warning(lines, source):
    """For whole-word masking without a segmenter: a warning (text) when most of the
    letters of `lines` are CJK ideographs, whose words are then masked a character at a
    time; None otherwise."""
    letters = cjk = 0
    for line in lines:
        for char in line:
            if char.isalpha():
                letters += 1
                cjk += is_cjk(ord(char))
    if not letters or cjk < letters / 2:
        return None
    return (f"{source}: {cjk / letters:.0%} of the letters are CJK ideographs, each a word "
            f"of its own for --do_whole_word_mask: Chinese is masked a character at a time. "
            f"Add --word_segmenter=jieba to mask Chinese words whole (docs/data.md).")
