"""Learning a BERT WordPiece vocabulary from text, with the released vocabularies' layout.

Pipeline position: the first stage for a new language or domain (text -> vocab.txt ->
TFRecords -> ...). Words are split by this project's own `BasicTokenizer`, so the learned
pieces are exactly the units the tokenizers will later look up; the piece selection is
tensorflow-text's WordPiece learner, with "##" suffix pieces (every character of the
alphabet has one, so no word of known characters becomes [UNK]) and a search for the count
threshold that gives the size asked for.

Layout (as the released English vocabularies): `[PAD]` = 0, `[unused0]`..`[unused98]` =
1..99, `[UNK]` = 100, `[CLS]` = 101, `[SEP]` = 102, `[MASK]` = 103, then the learned
pieces.
"""

import collections
import time

from common import file_io
from text import tokenization
from text.tokenization import BasicTokenizer

SPECIAL_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[MASK]")
JOINER = "##"  # the prefix of a piece that continues a word


def reserved_tokens(num_unused=99):
    return ["[PAD]"] + [f"[unused{i}]" for i in range(num_unused)] + list(SPECIAL_TOKENS)


def count_words(lines, do_lower_case=True):
    """Counts basic-tokenized words. Example: ["A cat, a hat."] -> {"a": 2, "cat": 1, ...}."""
    tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
    counts = collections.Counter()
    for line in lines:
        counts.update(tokenizer.tokenize(line))
    return counts


def count_words_in_files(files, do_lower_case=True, batch_size=8192, progress=None):
    """Counts basic-tokenized words of text files with the in-graph tokenizer (C++; the
    same words as `BasicTokenizer`), streaming, for corpora of any size."""
    import tensorflow as tf

    from text.graph_tokenizer import GraphTokenizer

    tokenizer = GraphTokenizer(None, do_lower_case)
    counts = collections.Counter()

    def flush(batch):
        words = tokenizer.basic_tokenize(tf.constant(batch)).flat_values.numpy()
        counts.update(w.decode("utf-8") for w in words)
        if progress is not None:
            progress.update(lines=len(batch))

    for path in files:
        batch = []
        with tf.io.gfile.GFile(path, "rb") as f:
            for raw in f:
                line = raw.strip()
                if line:
                    batch.append(line)
                if len(batch) >= batch_size:
                    flush(batch)
                    batch = []
        if batch:
            flush(batch)
    return counts


def learn_vocabulary(lines, vocab_size, do_lower_case=True, num_unused=99,
                     lower_thresh=1, max_unique_chars=None):
    """Learns a WordPiece vocabulary of at most `vocab_size` tokens (reserved included).

    Args:
        lines: iterable of str.
        vocab_size: int. Upper bound on the vocabulary size.
        do_lower_case: bool. Must match how the model will tokenize. Defaults to True.
        num_unused: int. Number of `[unusedN]` slots. Defaults to 99.
        lower_thresh: int. Lowest count a piece may have. Defaults to 1.
        max_unique_chars: int or None. Alphabet size limit: the most frequent characters
            are kept. None (default): `alphabet_size`, which fits the corpus.

    Returns:
        list of str tokens, id = position.
    """
    return learn_from_counts(count_words(lines, do_lower_case), vocab_size, num_unused,
                             lower_thresh, max_unique_chars)


# The default alphabet: the most frequent characters, at least this many (as
# tensorflow-text's learner's default, so English vocabularies keep every character) and
# as many more as cover this share of the corpus's characters (CJK corpora have thousands).
MIN_ALPHABET = 1000
ALPHABET_COVERAGE = 0.9999


def char_counts(counts):
    """{character: occurrences} of word counts."""
    chars = collections.Counter()
    for word, count in counts.items():
        for char in word:
            chars[char] += count
    return chars


def alphabet_size(counts, vocab_size, num_reserved=len(reserved_tokens())):
    """How many of the most frequent characters to keep: at least `MIN_ALPHABET`, and as
    many as cover `ALPHABET_COVERAGE` of the corpus's characters, within half of the room
    the reserved tokens leave (a character may need its "##" form too)."""
    frequencies = sorted(char_counts(counts).values(), reverse=True)
    total, covered, needed = sum(frequencies), 0, 0
    for needed, frequency in enumerate(frequencies, start=1):
        covered += frequency
        if covered >= ALPHABET_COVERAGE * total:
            break
    return max(MIN_ALPHABET, min(needed, (vocab_size - num_reserved) // 2))


def coverage(counts, tokens):
    """What a learned vocabulary leaves out of the corpus it learned from: the share of
    word occurrences that become [UNK] (a character outside the vocabulary, or longer than
    the tokenizer's limit) and the share of characters outside it; with the numbers of
    distinct characters in the corpus and in the vocabulary."""
    vocab_chars = {t for t in tokens if len(t) == 1}
    chars = char_counts(counts)
    words = sum(counts.values())
    unknown = sum(count for word, count in counts.items()
                  if len(word) > tokenization.MAX_INPUT_CHARS_PER_WORD or
                  any(c not in vocab_chars for c in word))
    outside = sum(n for c, n in chars.items() if c not in vocab_chars)
    return {"unknown_words": unknown / max(words, 1),
            "outside_chars": outside / max(sum(chars.values()), 1),
            "corpus_chars": len(chars), "alphabet": len(vocab_chars & set(chars))}


def _never_continues(char):
    """True for a character the basic tokenizer always makes a word of its own
    (punctuation, CJK ideographs): "##" + it can never be looked up."""
    return tokenization.is_punctuation(char) or tokenization.is_cjk(ord(char))


class _Learner:
    """tensorflow-text's WordPiece learner at one count threshold at a time, on the words
    it keeps (no reserved token, at most 50 characters, alphabet of the
    `max_unique_chars` most frequent characters)."""

    def __init__(self, counts, reserved, max_unique_chars, report=None):
        from text.graph_tokenizer import require_text
        require_text("Learning a vocabulary (tensorflow-text's WordPiece learner)")
        from tensorflow_text.tools.wordpiece_vocab import (
            wordpiece_tokenizer_learner_lib as lib,
        )

        self._lib = lib
        self._params = lib.Params(
            upper_thresh=None, lower_thresh=None, num_iterations=4,
            max_input_tokens=5_000_000, max_token_length=50,
            max_unique_chars=max_unique_chars, vocab_size=None, slack_ratio=0,
            include_joiner_token=True, joiner=JOINER, reserved_tokens=list(reserved))
        words = lib.get_input_words(sorted(counts.items()), reserved, 50)
        alphabet = lib.get_allowed_chars(words, max_unique_chars)
        self.words = lib.filter_input_words(words, alphabet, 5_000_000)
        self.total_chars = sum(len(word) * count for word, count in self.words)
        self._cache = {}
        self._report = report

    def __call__(self, thresh):
        """The vocabulary learned keeping pieces seen at least `thresh` times: the
        reserved tokens, every character and its "##" form (where one can occur), then
        the learned pieces, most frequent first."""
        if thresh not in self._cache:
            start = time.perf_counter()
            tokens = self._lib.learn_with_thresh(self.words, thresh, self._params)
            self._cache[thresh] = [
                t for t in tokens if not (t.startswith(JOINER) and len(t) == len(JOINER) + 1
                                          and _never_continues(t[-1]))]
            if self._report is not None:
                self._report(thresh, len(self._cache[thresh]), time.perf_counter() - start)
        return self._cache[thresh]


def learn_from_counts(counts, vocab_size, num_unused=99, lower_thresh=1,
                      max_unique_chars=None, report=None):
    """`learn_vocabulary` from word counts (see `count_words_in_files`).

    The learner keeps the pieces seen at least a threshold number of times; the threshold
    is searched for (geometric bisection): the vocabulary is the learner's at the lowest
    threshold (2 or more) whose vocabulary fits `vocab_size`, filled up to that size with
    the most frequent further pieces of the threshold one below (the learner at a
    threshold of 1 keeps every word seen once whole and drops the pieces they share, so
    it only fills). Every character of the alphabet is kept with its "##" suffix form, so
    a word made of them never becomes [UNK]. Fewer tokens than asked for when the corpus
    holds no more pieces seen `lower_thresh` times.

    `max_unique_chars`: None for `alphabet_size`. `report(threshold, tokens, seconds)`, if
    given, is called after each threshold tried.
    """
    reserved = reserved_tokens(num_unused)
    if vocab_size <= len(reserved):
        raise ValueError(f"vocab_size={vocab_size} leaves no room after the "
                         f"{len(reserved)} reserved tokens.")
    if not counts:
        raise ValueError("No words to learn a vocabulary from: the input text is empty.")
    if max_unique_chars is None:
        max_unique_chars = alphabet_size(counts, vocab_size, len(reserved))
    learner = _Learner(counts, reserved, max_unique_chars, report)
    if not learner.words:
        raise ValueError("No words to learn a vocabulary from: every word is longer than "
                         "50 characters or a reserved token.")
    lower_thresh = max(1, int(lower_thresh))
    floor = max(2, lower_thresh)
    low, high = floor - 1, floor
    if len(learner(floor)) > vocab_size:
        # At a threshold above every piece's count only the characters are left.
        low, high = floor, learner.total_chars + 1
        while high - low > 1:  # the answer is usually a small count: bisect geometrically
            middle = min(high - 1, max(low + 1, round((low * high) ** 0.5)))
            if len(learner(middle)) > vocab_size:
                low = middle
            else:
                high = middle
    tokens = learner(high)
    if len(tokens) > vocab_size:
        raise ValueError(
            f"vocab_size={vocab_size} is too small for the corpus's alphabet: its "
            f"characters, their '##' suffix forms and the {len(reserved)} reserved tokens "
            f"need {len(tokens)}. Raise the vocabulary size or lower max_unique_chars "
            f"(now {max_unique_chars}).")
    if low >= lower_thresh:
        have = set(tokens)
        tokens = tokens + [t for t in learner(low) if t not in have][:vocab_size - len(tokens)]
    return tokens


def write_vocabulary(tokens, path):
    file_io.atomic_write_text(path, "".join(t + "\n" for t in tokens))
