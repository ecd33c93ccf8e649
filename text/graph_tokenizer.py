"""In-graph WordPiece tokenization with tensorflow-text, giving the same ids as
`text.tokenization.FullTokenizer`.

Pipeline position: inside tf.data input pipelines and exported SavedModels, so that a
server can send raw strings. The Python tokenizer is the reference; tests check the two
agree on every Unicode code point and on thousands of varied strings.

tensorflow-text's own `BertTokenizer` does not match the original exactly (its lower-casing
is NFKC case folding, so "ﬁ" -> "fi" and "ß" -> "ss"; it keeps control characters; its
200-character limit counts bytes), so the steps are composed here from core ops:
  clean (regex) -> [lower (ICU full mapping, as Python's str.lower) -> NFD -> drop Mn]
  -> space out punctuation and CJK characters (regex) -> split on whitespace -> words over
  200 characters become "[UNK]" -> tensorflow-text WordPiece (greedy longest match, "##").
`tokenize` takes a shorter road for rows that are pure ASCII (most English lines): drop
controls -> lower -> tensorflow-text's FastWordpiece splitting the words itself, whose
whitespace and punctuation rules are BasicTokenizer's on ASCII.

The original spaces out CJK characters before lower-casing; doing it with the punctuation,
in one pass, gives the same words: lower-casing and NFD map CJK characters to CJK
characters only and nothing else to them (checked over every code point by the tests),
CJK characters are neither cased nor case-ignorable (so final-sigma contexts do not
change) and, like the spaces around them, have combining class 0 (so NFD reorders
nothing differently).

Character classes (control, whitespace, punctuation, combining marks) are built from
Python's `unicodedata` rather than RE2's `\\p{..}` tables, and the few case mappings that
TensorFlow's ICU lacks are patched, so that both tokenizers follow the same Unicode version
(RE2 and ICU are newer or older than Python's for some recently assigned characters).
"""

import functools
import hashlib
import json
import os
import sys
import unicodedata

import tensorflow as tf
from absl import logging

try:
    import tensorflow_text as tf_text
except ImportError:  # no wheel for this platform (Windows, Intel macOS): see require_text
    tf_text = None

from common import file_io
from text import tokenization

# tensorflow-text counts its per-word limit in bytes; the original counts characters. Let
# every word of up to 200 characters (at most 4 bytes each) through, and apply the
# character limit separately.
_MAX_BYTES_PER_WORD = 4 * tokenization.MAX_INPUT_CHARS_PER_WORD


def _re2_class(code_points):
    """Sorted code points -> an RE2 character class of ranges, e.g. [\\x{41}-\\x{5A}]."""
    ranges, start, prev = [], None, None
    for cp in code_points:
        if start is None:
            start = prev = cp
        elif cp == prev + 1:
            prev = cp
        else:
            ranges.append((start, prev))
            start = prev = cp
    if start is not None:
        ranges.append((start, prev))
    body = "".join(f"\\x{{{a:X}}}" if a == b else f"\\x{{{a:X}}}-\\x{{{b:X}}}"
                   for a, b in ranges)
    return f"[{body}]"


def _cache_path(kind):
    """Where computed tables are kept between runs: $BERT_CACHE_DIR, else
    ~/.cache/bert_tf2, keyed by the Unicode and TensorFlow versions they depend on."""
    root = os.environ.get("BERT_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "bert_tf2")
    return os.path.join(root, f"{kind}-unicode{unicodedata.unidata_version}-"
                              f"tf{tf.__version__}-v2.json")


def _checksum(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode("utf-8")).hexdigest()


def _cached(kind, compute):
    """`compute()` (JSON-able), read from the cache when present. The cache holds the
    value with a SHA-256 of its content and is used only if they agree (a damaged or
    edited file is reported and rebuilt); it is written atomically and is only an
    optimisation (a cache that cannot be written is skipped)."""
    path = _cache_path(kind)
    try:
        with open(path, encoding="utf-8") as f:
            stored = json.load(f)
        if stored["checksum"] == _checksum(stored["value"]):
            return stored["value"]
        logging.warning("%s: the cached table does not match its checksum; rebuilding it.",
                        path)
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, TypeError) as e:
        logging.warning("%s: unreadable cache (%s); rebuilding it.", path, e)
    value = compute()
    try:
        file_io.atomic_write_text(path, json.dumps({"checksum": _checksum(value),
                                                    "value": value}))
    except OSError:
        pass
    return value


@functools.lru_cache(maxsize=1)
def _character_classes():
    return _cached("character-classes-v4", _compute_character_classes)


def _compute_character_classes():
    """RE2 patterns equivalent to BasicTokenizer's predicates, from this Python's Unicode
    database, and the lower-casing fixes ICU needs. Computed once per process (~1 s)."""
    drop, whitespace, punctuation, marks, splits = [], [], [], [], []
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        cat = unicodedata.category(ch)
        if cp == 0 or cp == 0xFFFD or (cat in ("Cc", "Cf") and ch not in "\t\n\r"):
            drop.append(cp)
            continue
        if ch in " \t\n\r" or cat == "Zs":
            whitespace.append(cp)
        elif ch.isspace():  # kept by cleaning, but Python's str.split splits on it
            splits.append(cp)
        if tokenization.is_punctuation(ch):
            punctuation.append(cp)
        if cat == "Mn":
            marks.append(cp)
    cjk_points = [cp for lo, hi in tokenization.CJK_RANGES for cp in range(lo, hi + 1)]
    return {
        "drop": _re2_class(drop),
        "whitespace": _re2_class(whitespace),
        # Every character Python's str.split splits on (whitespace included).
        "split": _re2_class(sorted(whitespace + splits)),
        "punctuation": _re2_class(punctuation),
        # Split off as words of their own: punctuation and CJK characters.
        "split_off": _re2_class(sorted(set(punctuation) | set(cjk_points))),
        "marks": _re2_class(marks),
        "other_spaces": _re2_class(sorted(set(whitespace + splits) - set(b" \t\n\r\v\f"))),
    }


@functools.lru_cache(maxsize=1)
def _lowercase_fixes():
    """(char, Python's lower-case) pairs where TensorFlow's ICU lower-cases differently
    (characters newer than its Unicode version). Final-sigma context is not involved."""
    return tuple(tuple(pair) for pair in _cached("lowercase-fixes", _compute_lowercase_fixes))


def _compute_lowercase_fixes():
    candidates = [chr(cp) for cp in range(sys.maxunicode + 1)
                  if not 0xD800 <= cp <= 0xDFFF and chr(cp).lower() != chr(cp)]
    icu = tf.strings.lower(tf.constant(candidates), encoding="utf-8").numpy()
    return [(ch, ch.lower()) for ch, low in zip(candidates, icu)
            if low.decode("utf-8") != ch.lower()]


def _on_rows(texts, rows, fn, other_fn=None):
    """Per-row string transformations: `fn` on the rows of `texts` [batch] where `rows`
    is True, `other_fn` (None: unchanged) on the others. With `rows` None, `fn` on all
    rows (`fn` must then also be right for the others)."""
    if rows is None:
        return fn(texts)
    picked = tf.cast(tf.where(rows)[:, 0], tf.int32)
    kept = tf.cast(tf.where(tf.logical_not(rows))[:, 0], tf.int32)
    others = tf.gather(texts, kept)
    return tf.dynamic_stitch([kept, picked], [other_fn(others) if other_fn else others,
                                              fn(tf.gather(texts, picked))])


def _non_ascii(texts):
    """bool [batch]: the rows with a byte outside ASCII."""
    return tf.logical_not(tf.strings.regex_full_match(texts, r"[\x00-\x7F]*"))


class TensorFlowTextMissing(ValueError):
    """tensorflow-text, which the in-graph tokenizer needs, is not installed."""


def require_text(what):
    """Raises `TensorFlowTextMissing` saying what needs tensorflow-text and how to get it,
    when it is not installed (its wheels: Linux x86-64 and ARM64, macOS on Apple
    silicon)."""
    if tf_text is None:
        raise TensorFlowTextMissing(
            f"{what} needs tensorflow-text, which is not installed. Install it with `pip "
            f"install tensorflow-text==2.21.1` (wheels for Linux x86-64/ARM64 and macOS on "
            f"Apple silicon; on Windows, use WSL). Everything else works without it.")


class GraphTokenizer(tf.Module):
    """Strings -> WordPiece ids, in TensorFlow ops (traceable, exportable).

    Args:
        vocab_file: str. Same vocabulary file as `FullTokenizer`; None for a tokenizer
            that only does `basic_tokenize` (e.g. to count words for a new vocabulary).
        do_lower_case: bool. Defaults to True.

    Example:
    ```python
    tokenizer = GraphTokenizer("vocab.txt")
    tokenizer.tokenize(tf.constant(["UNwant\\u00E9d,running"]))
    # <tf.RaggedTensor [[ids of un, ##want, ##ed, ",", runn, ##ing]]>
    ```
    """

    def __init__(self, vocab_file=None, do_lower_case=True, name=None):
        require_text("The in-graph tokenizer (--tokenizer=graph, raw-text SavedModels, "
                     "create_pretraining_data --mode=fast)")
        super().__init__(name=name)
        self.do_lower_case = do_lower_case
        self._classes = _character_classes()
        self._lower_fixes = _lowercase_fixes() if do_lower_case else ()
        self._lower_fix_any = "[" + "".join(ch for ch, _ in self._lower_fixes) + "]"
        self._wordpiece = None
        if vocab_file is None:
            return
        vocab = tokenization.load_vocab(vocab_file)
        if tokenization.UNK_TOKEN not in vocab:
            raise tokenization.VocabularyError(
                f"{vocab_file}: the vocabulary has no '{tokenization.UNK_TOKEN}' token.")
        self.vocab_size = max(vocab.values()) + 1
        tokens = list(vocab.keys())
        self._ascii_wordpiece = None
        if list(vocab.values()) == list(range(len(tokens))):
            # Ids are line numbers (no repeated token): tensorflow-text's linear-time
            # WordPiece, same greedy longest-match-first result, ~6x faster.
            try:
                self._wordpiece = tf_text.FastWordpieceTokenizer(
                    vocab=tokens, suffix_indicator="##",
                    max_bytes_per_word=_MAX_BYTES_PER_WORD, token_out_type=tf.int64,
                    unknown_token=tokenization.UNK_TOKEN, no_pretokenization=True,
                    support_detokenization=False)
                # For pure-ASCII rows, the same WordPiece with its own splitting at
                # whitespace and punctuation: on ASCII its rules are BasicTokenizer's
                # (the tests compare every ASCII character), and its per-word byte
                # limit is the original's character limit. Twice as fast as splitting
                # with regular expressions first.
                self._ascii_wordpiece = tf_text.FastWordpieceTokenizer(
                    vocab=tokens, suffix_indicator="##",
                    max_bytes_per_word=tokenization.MAX_INPUT_CHARS_PER_WORD,
                    token_out_type=tf.int64, unknown_token=tokenization.UNK_TOKEN,
                    no_pretokenization=False, support_detokenization=False)
            except (ValueError, RuntimeError, tf.errors.OpError):  # e.g. a 300-byte token
                self._wordpiece = self._ascii_wordpiece = None
        if self._wordpiece is None:
            keys = tf.constant(tokens, dtype=tf.string)
            values = tf.constant(list(vocab.values()), dtype=tf.int64)
            self._table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(keys, values), default_value=-1)
            self._wordpiece = tf_text.WordpieceTokenizer(
                self._table, suffix_indicator="##", max_bytes_per_word=_MAX_BYTES_PER_WORD,
                token_out_type=tf.int64, unknown_token=tokenization.UNK_TOKEN,
                split_unknown_characters=False)

    def _lower(self, texts):
        # ICU's full lower-casing is Python's str.lower (final sigma included) except for
        # characters newer than its Unicode tables; those are mapped first, and only in
        # batches that contain one.
        def patch(t):
            for ch, low in self._lower_fixes:
                t = tf.strings.regex_replace(t, ch, low)
            return t

        if self._lower_fixes:
            needs = tf.reduce_any(tf.strings.regex_full_match(
                texts, "(?s).*" + self._lower_fix_any + ".*"))  # (?s): texts may hold newlines
            texts = tf.cond(needs, lambda: patch(texts), lambda: texts)
        return tf.strings.lower(texts, encoding="utf-8")

    def basic_tokenize(self, texts, valid_utf8=False):
        """tf.string [batch] -> ragged tf.string [batch, (words)], as `BasicTokenizer`.

        `valid_utf8=True` skips dropping invalid UTF-8 bytes, for callers that have already
        checked their input."""
        texts = tf.convert_to_tensor(texts, dtype=tf.string)
        # Steps that leave ASCII text unchanged (dropping invalid UTF-8, NFD, dropping
        # combining marks, mapping rare spaces; ICU's lower-casing is ASCII lower-casing
        # there) run on the rows that are not pure ASCII only: in English text most lines
        # are, and these steps were a third of the time. Each step is per row, so the
        # result is the same.
        non_ascii = None if texts.shape.rank != 1 else _non_ascii(texts)
        return self._basic_tokenize(texts, non_ascii, valid_utf8)

    def _basic_tokenize(self, texts, non_ascii, valid_utf8):
        """`basic_tokenize` with the rows that need the Unicode steps given (bool
        [batch]; None: all rows)."""
        c = self._classes
        if not valid_utf8:
            # Invalid UTF-8 bytes are dropped, as Python's decode(errors="ignore").
            texts = _on_rows(texts, non_ascii, lambda t: tf.strings.unicode_transcode(
                t, "UTF-8", "UTF-8", errors="ignore"))
        texts = tf.strings.regex_replace(texts, c["drop"], "")

        def unicode_steps(t):
            if self.do_lower_case:
                t = tf_text.normalize_utf8(self._lower(t), "NFD")
                t = tf.strings.regex_replace(t, c["marks"], "")
            # Rare spaces become " " (after dropping: the ASCII ones are controls).
            return tf.strings.regex_replace(t, c["other_spaces"], " ")

        ascii_steps = (lambda t: tf.strings.lower(t)) if self.do_lower_case else None
        texts = _on_rows(texts, non_ascii, unicode_steps, ascii_steps)
        # Punctuation and CJK characters become words of their own; then the whitespace
        # tokenizer splits on the ASCII spaces. Twice as fast as one regex_split keeping
        # the punctuation.
        texts = tf.strings.regex_replace(texts, c["split_off"], r" \0 ")
        return tf_text.WhitespaceTokenizer().tokenize(texts)

    def split_words_with_offsets(self, texts):
        """Raw strings -> the words `BasicTokenizer` sees before WordPiece, with where
        they are: split at whitespace, punctuation and CJK characters being words of
        their own; no cleaning or lower-casing (so each word is a slice of its input).

        Example: "Hi, Ulm!" -> words ["Hi", ",", "Ulm", "!"], begin [0, 2, 4, 7], end
        [2, 3, 7, 8].

        Returns:
            (words, begin, end): ragged tf.string [batch, (words)] and their byte
            offsets into the input (ragged int32, end exclusive).
        """
        c = self._classes
        texts = tf.convert_to_tensor(texts, tf.string)
        # tensorflow-text's regex split ends a string at its first NUL (the rest of the
        # text would be lost); U+0001 splits nothing either (both are deleted by the
        # tokenizer's cleaning), so split that, and cut the words from the input itself.
        _, begin, end = tf_text.regex_split_with_offsets(
            tf.strings.regex_replace(texts, "\\x00", "\x01"),
            "|".join([c["split"], c["split_off"]]), c["split_off"])
        texts_of_words = tf.gather(texts, begin.value_rowids())
        words = begin.with_flat_values(tf.strings.substr(
            texts_of_words, begin.flat_values, end.flat_values - begin.flat_values))
        return words, tf.cast(begin, tf.int32), tf.cast(end, tf.int32)

    def tokenize(self, texts, valid_utf8=False):
        """tf.string [batch] -> ragged int64 [batch, (pieces)] of WordPiece ids (see
        `basic_tokenize` for `valid_utf8`)."""
        texts = tf.convert_to_tensor(texts, dtype=tf.string)
        if self._ascii_wordpiece is None or texts.shape.rank != 1:
            return self.tokenize_words(texts, valid_utf8).merge_dims(1, 2)
        # Pure-ASCII rows: drop control characters, lower-case, and let WordPiece split
        # the words itself. The other rows take every step of `basic_tokenize`.
        non_ascii = _non_ascii(texts)
        ascii_rows = tf.where(tf.logical_not(non_ascii))[:, 0]
        other_rows = tf.where(non_ascii)[:, 0]
        ascii_texts = tf.strings.regex_replace(tf.gather(texts, ascii_rows),
                                               self._classes["drop"], "")
        if self.do_lower_case:
            ascii_texts = tf.strings.lower(ascii_texts)
        ascii_ids = self._ascii_wordpiece.tokenize(ascii_texts)
        other_words = self._basic_tokenize(tf.gather(texts, other_rows), None, valid_utf8)
        other_ids = self._words_to_ids(other_words).merge_dims(1, 2)
        ids = tf.concat([ascii_ids, other_ids], 0)  # both int64 (token_out_type)
        order = tf.math.invert_permutation(tf.concat([ascii_rows, other_rows], 0))
        return tf.gather(ids, order)

    def tokenize_words(self, texts, valid_utf8=False):
        """tf.string [batch] -> ragged int64 [batch, (words), (pieces)]: each word's
        WordPiece ids (the layout of TF Hub preprocessors' `tokenize`)."""
        return self._words_to_ids(self.basic_tokenize(texts, valid_utf8))

    def _words_to_ids(self, words):
        """Ragged words [batch, (words)] -> ids [batch, (words), (pieces)]."""
        if self._wordpiece is None:
            raise ValueError("This GraphTokenizer has no vocabulary; pass vocab_file.")
        limit = tokenization.MAX_INPUT_CHARS_PER_WORD

        def unknown_if_too_long(flat):
            too_long = tf.strings.length(flat, unit="UTF8_CHAR") > limit
            return tf.where(too_long, tokenization.UNK_TOKEN, flat)

        # Counting characters only where some word has more than `limit` bytes (rare).
        flat = words.flat_values
        flat = tf.cond(tf.reduce_any(tf.strings.length(flat) > limit),
                       lambda: unknown_if_too_long(flat), lambda: flat)
        words = words.with_flat_values(flat)
        return self._wordpiece.tokenize(words)  # [batch, (words), (pieces)]
