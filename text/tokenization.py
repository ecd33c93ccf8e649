"""WordPiece tokenization, identical to the original release's `tokenization.py`.

Pipeline position: text -> token ids, for pre-training data, every fine-tuning reader and
feature extraction. `text.graph_tokenizer` is the in-graph twin (same ids) used by
tf.data pipelines and SavedModels.

The steps, in the original's order (see docs/data.md, "Tokenization"):
  1. clean: drop NUL, U+FFFD and control characters (Cc/Cf except \\t \\n \\r); map
     whitespace (space, \\t, \\n, \\r, Zs) to a space;
  2. put spaces around CJK ideographs (all models, English included);
  3. split on whitespace (Python `str.split`, which also splits on U+2028/U+2029);
  4. if lower-casing: `str.lower`, NFD, drop combining marks (Mn) -- only then;
  5. split off every punctuation character (ASCII symbols count as punctuation);
  6. WordPiece: greedy longest-match-first with "##" continuations; a word with no
     segmentation, or longer than 200 characters, becomes one "[UNK]".
"""

import collections
import unicodedata

try:
    from absl import logging
except ImportError:  # a serving-only install (requirements-serving.txt): no absl
    import logging

UNK_TOKEN = "[UNK]"
MAX_INPUT_CHARS_PER_WORD = 200

# CJK Unified Ideographs and their extensions / compatibility blocks. Hangul, Hiragana and
# Katakana are deliberately not here: the original leaves them to whitespace splitting.
CJK_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)


class VocabularyError(ValueError):
    """A vocabulary file that cannot be used."""


def convert_to_unicode(text):
    """str stays str; bytes are decoded as UTF-8, dropping invalid bytes (as the original)."""
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    raise TypeError(f"Expected str or bytes, got {type(text).__name__}.")


def load_vocab(vocab_file):
    """Reads a vocabulary: one token per line, id = 0-based line number.

    Each line is stripped, as the original does; a repeated token keeps its last id (the
    line counter still advances). Returns an ordered dict token -> id.

    Raises:
        VocabularyError: missing, empty or non-UTF-8 file, or a blank line (it would
            shift the ids after it). A repeated token is only a warning, as the original
            accepts it.
    """
    vocab = collections.OrderedDict()
    try:
        with open(vocab_file, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise VocabularyError(f"{vocab_file}: cannot read the vocabulary ({e}).") from e
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise VocabularyError(f"{vocab_file}: the vocabulary is not UTF-8 text ({e}).") from e
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline ending the last line
    blank, repeated = [], {}
    for index, line in enumerate(lines):
        token = line.strip()
        if not token:
            blank.append(index + 1)
        elif token in vocab:
            repeated.setdefault(token, [vocab[token] + 1]).append(index + 1)
        vocab[token] = index
    last_token = max((i for i, line in enumerate(lines) if line.strip()), default=-1) + 1
    blank = [n for n in blank if n < last_token]  # trailing blank lines shift nothing
    if blank:
        raise VocabularyError(
            f"{vocab_file}: blank line(s) {_some(blank)}; every line is a token and its "
            f"line number its id, so a blank line shifts the ids of the tokens after it. "
            f"Remove it if it was added by mistake (the model was trained without it).")
    if repeated:
        logging.warning("%s: %d token(s) appear on more than one line (%s); as the original "
                        "does, each keeps the id of its last line.", vocab_file,
                        len(repeated), "; ".join(f"{t!r} on lines {_some(n)}" for t, n in
                                                 list(repeated.items())[:3]))
    if last_token == 0:
        raise VocabularyError(f"{vocab_file}: the vocabulary is empty; it needs one token "
                              f"per line, e.g. [PAD], [UNK], [CLS], [SEP], [MASK], ...")
    _warn_if_without_suffix_pieces(vocab_file, vocab)
    return vocab


# A WordPiece vocabulary this large always has "##" pieces (30,522-token English ones:
# 5,828); build_vocab before it learned them made vocabularies without.
_SUFFIX_PIECES_EXPECTED_ABOVE = 3000
_warned_without_suffix_pieces = set()


def _warn_if_without_suffix_pieces(vocab_file, vocab):
    if len(vocab) <= _SUFFIX_PIECES_EXPECTED_ABOVE or vocab_file in \
            _warned_without_suffix_pieces or any(t.startswith("##") for t in vocab):
        return
    _warned_without_suffix_pieces.add(vocab_file)
    logging.warning(
        "%s: none of its %d tokens is a '##' suffix piece, so every word it does not hold "
        "whole becomes [UNK]. build_vocab made such vocabularies before it learned suffix "
        "pieces: learn this one again with build_vocab (and pre-train on it), unless it "
        "is meant to be one of whole words or characters.", vocab_file, len(vocab))


def _some(numbers, limit=5):
    shown = ", ".join(str(n) for n in numbers[:limit])
    return shown + (f" and {len(numbers) - limit} more" if len(numbers) > limit else "")


def whitespace_tokenize(text):
    """Strips and splits on whitespace, Python `str.split` semantics."""
    return text.strip().split()


def _is_whitespace(char):
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char):
    if char in ("\t", "\n", "\r"):
        return False  # whitespace, not control, in this scheme
    return unicodedata.category(char) in ("Cc", "Cf")


def is_punctuation(char):
    cp = ord(char)
    # ASCII non-letter/number symbols such as "^", "$" and "`" are not Unicode category P,
    # but the original treats them as punctuation for consistency.
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


_FIRST_CJK = min(lo for lo, _ in CJK_RANGES)


def is_cjk(cp):
    # Most text is below the first range: one comparison instead of eight.
    return cp >= _FIRST_CJK and any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def _splits_words(char):
    """A character a word ends at, dropped: whitespace, and what `str.split` splits at,
    unless cleaning deletes it (then it is part of the word, as in the in-graph split)."""
    if char in (" ", "\t", "\n", "\r"):
        return True
    if ord(char) in (0, 0xFFFD) or _is_control(char):
        return False
    return unicodedata.category(char) == "Zs" or char.isspace()


def split_words_with_offsets(text):
    """The words `BasicTokenizer` sees before WordPiece, with where they are in `text`:
    split at whitespace, punctuation and CJK characters being words of their own; no
    cleaning or lower-casing (each word is a slice of `text`). The Python twin of
    `text.graph_tokenizer.GraphTokenizer.split_words_with_offsets`, in characters.

    Example: "Hi, Ulm!" -> [("Hi", 0, 2), (",", 2, 3), ("Ulm", 4, 7), ("!", 7, 8)].

    Returns:
        list of (word, begin, end): character offsets, end exclusive.
    """
    words, start = [], None
    for i, char in enumerate(text):
        alone = is_punctuation(char) or is_cjk(ord(char))
        if alone or _splits_words(char):
            if start is not None:
                words.append((text[start:i], start, i))
                start = None
            if alone:
                words.append((char, i, i + 1))
        elif start is None:
            start = i
    if start is not None:
        words.append((text[start:], start, len(text)))
    return words


class BasicTokenizer:
    """Cleaning, CJK splitting, lower-casing and punctuation splitting (no WordPiece).

    Example: `BasicTokenizer().tokenize(" \\tHeLLo!how  \\n Are yoU?  ")` ->
    `["hello", "!", "how", "are", "you", "?"]`.
    """

    def __init__(self, do_lower_case=True):
        self.do_lower_case = do_lower_case

    def tokenize(self, text):
        text = self._clean_text(convert_to_unicode(text))
        text = self._tokenize_chinese_chars(text)
        split_tokens = []
        for token in whitespace_tokenize(text):
            if self.do_lower_case:
                token = self._run_strip_accents(token.lower())
            split_tokens.extend(self._run_split_on_punc(token))
        return whitespace_tokenize(" ".join(split_tokens))

    @staticmethod
    def _run_strip_accents(text):
        """NFD, then drop combining marks: "héllo" -> "hello". Never re-composed."""
        return "".join(c for c in unicodedata.normalize("NFD", text)
                       if unicodedata.category(c) != "Mn")

    @staticmethod
    def _run_split_on_punc(text):
        """"a,b" -> ["a", ",", "b"]: each punctuation character alone."""
        output, start_new = [], True
        for char in text:
            if is_punctuation(char):
                output.append([char])
                start_new = True
            else:
                if start_new:
                    output.append([])
                start_new = False
                output[-1].append(char)
        return ["".join(x) for x in output]

    @staticmethod
    def _tokenize_chinese_chars(text):
        """"中文ab" -> " 中  文 ab"."""
        out = []
        for char in text:
            if is_cjk(ord(char)):
                out.extend((" ", char, " "))
            else:
                out.append(char)
        return "".join(out)

    @staticmethod
    def _clean_text(text):
        out = []
        for char in text:
            cp = ord(char)
            if cp == 0 or cp == 0xFFFD or _is_control(char):
                continue
            out.append(" " if _is_whitespace(char) else char)
        return "".join(out)


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece over already basic-tokenized text.

    Example: with a vocabulary holding "un", "##aff", "##able":
    `tokenize("unaffable")` -> `["un", "##aff", "##able"]`.
    """

    def __init__(self, vocab, unk_token=UNK_TOKEN,
                 max_input_chars_per_word=MAX_INPUT_CHARS_PER_WORD):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word

    def tokenize(self, text):
        output_tokens = []
        for token in whitespace_tokenize(convert_to_unicode(text)):
            if len(token) > self.max_input_chars_per_word:
                output_tokens.append(self.unk_token)
                continue
            pieces, start = [], 0
            while start < len(token):
                end = len(token)
                piece = None
                while start < end:
                    candidate = token[start:end]
                    if start > 0:
                        candidate = "##" + candidate
                    if candidate in self.vocab:
                        piece = candidate
                        break
                    end -= 1
                if piece is None:  # no segmentation: the whole word is unknown
                    pieces = None
                    break
                pieces.append(piece)
                start = end
            output_tokens.extend(pieces if pieces is not None else [self.unk_token])
        return output_tokens


class FullTokenizer:
    """Basic tokenization then WordPiece, with the vocabulary's id mappings.

    Args:
        vocab_file: str. One token per line.
        do_lower_case: bool. True for uncased models (lower-case and strip accents),
            False for cased ones. Defaults to True.

    Example:
    ```python
    tokenizer = FullTokenizer("vocab.txt", do_lower_case=True)
    tokenizer.tokenize("UNwant\\u00E9d,running")  # ['un', '##want', '##ed', ',', 'runn', '##ing']
    ```
    """

    def __init__(self, vocab_file, do_lower_case=True):
        self.vocab_file = vocab_file
        self.do_lower_case = do_lower_case
        self.vocab = load_vocab(vocab_file)
        self.inv_vocab = {v: k for k, v in self.vocab.items()}
        if UNK_TOKEN not in self.vocab:
            raise VocabularyError(f"{vocab_file}: the vocabulary has no '{UNK_TOKEN}' "
                                  f"token, which WordPiece needs for unknown words.")
        self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
        self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)

    def tokenize(self, text):
        split_tokens = []
        for token in self.basic_tokenizer.tokenize(text):
            split_tokens.extend(self.wordpiece_tokenizer.tokenize(token))
        return split_tokens

    def convert_tokens_to_ids(self, tokens):
        """Plain lookup, as the original: an unknown token raises KeyError."""
        return [self.vocab[token] for token in tokens]

    def convert_ids_to_tokens(self, ids):
        return [self.inv_vocab[i] for i in ids]


_LOWER_CASED_MODELS = ("uncased_L-24_H-1024_A-16", "uncased_L-12_H-768_A-12",
                       "multilingual_L-12_H-768_A-12", "chinese_L-12_H-768_A-12")
_CASED_MODELS = ("cased_L-12_H-768_A-12", "cased_L-24_H-1024_A-16",
                 "multi_cased_L-12_H-768_A-12")


def validate_case_matches_checkpoint(do_lower_case, init_checkpoint):
    """The original's check that `--do_lower_case` suits a released checkpoint, recognised
    by its folder name (`.../uncased_L-12_H-768_A-12/bert_model.ckpt`), and the same for a
    Hugging Face model whose `tokenizer_config.json` (in the checkpoint's folder) says
    `do_lower_case`; other checkpoints are not checked. Raises ValueError on a mismatch."""
    if not init_checkpoint:
        return
    _check_tokenizer_config(do_lower_case, str(init_checkpoint))
    import re
    match = re.match(r"^.*?([A-Za-z0-9_-]+)/bert_model.ckpt", str(init_checkpoint))
    if match is None:
        return
    model_name = match.group(1)
    if model_name in _LOWER_CASED_MODELS and not do_lower_case:
        raise ValueError(f"--init_checkpoint={init_checkpoint} is an uncased model "
                         f"({model_name}) but --do_lower_case=False; set "
                         f"--do_lower_case=True.")
    if model_name in _CASED_MODELS and do_lower_case:
        raise ValueError(f"--init_checkpoint={init_checkpoint} is a cased model "
                         f"({model_name}) but --do_lower_case=True; set "
                         f"--do_lower_case=False.")


def _check_tokenizer_config(do_lower_case, init_checkpoint):
    """A Hugging Face model folder's tokenizer_config.json against --do_lower_case."""
    import json
    import os
    if "://" in init_checkpoint:
        return
    folder = init_checkpoint if os.path.isdir(init_checkpoint) else \
        os.path.dirname(init_checkpoint)
    path = os.path.join(folder, "tokenizer_config.json")
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError):
        return  # no (readable) tokenizer config: nothing to check against
    lower = config.get("do_lower_case") if isinstance(config, dict) else None
    if isinstance(lower, bool) and lower != bool(do_lower_case):
        kind = "an uncased" if lower else "a cased"
        raise ValueError(
            f"{path}: the model is {kind} one (\"do_lower_case\": {str(lower).lower()}) but "
            f"--do_lower_case={bool(do_lower_case)}; set --do_lower_case={lower}.")


def check_vocabulary_fits(vocab_file, vocab_size, config_file, allow_smaller=False,
                          allow_smaller_name="--vocab_smaller_than_model"):
    """The vocabulary against the model's `vocab_size` (the rows of its embedding table,
    which `modeling.load_checkpoint` checks against the checkpoint's).

    A vocabulary with more tokens than the table gives ids with no row; one with fewer
    is most often another model's vocabulary (its ids pick the wrong rows, and the run
    trains without a word), so it is refused too, unless `allow_smaller`: a table padded
    on purpose (e.g. to a multiple of 64), or a vocabulary cut short where the user means
    it (`allow_smaller_name` is how the caller's user says so). Raises ValueError naming
    both files and the fix."""
    vocab = load_vocab(vocab_file)
    tokens = max(vocab.values()) + 1
    if tokens == vocab_size or (tokens < vocab_size and allow_smaller):
        return
    if tokens > vocab_size:
        raise ValueError(
            f"{vocab_file}: {tokens:,} tokens, but {config_file} has "
            f"vocab_size {vocab_size:,}, so ids from {vocab_size:,} up have no embedding "
            f"row: give the vocab.txt that came with this model (or its bert_config.json).")
    raise ValueError(
        f"{vocab_file}: {tokens:,} tokens, but {config_file} has vocab_size "
        f"{vocab_size:,}: it is likely another model's vocabulary, whose ids would pick the "
        f"wrong embedding rows. Give the vocab.txt that came with this model, or "
        f"{allow_smaller_name} if its table is larger on purpose.")
