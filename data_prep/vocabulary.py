"""Learning a BERT WordPiece vocabulary from text, with the released vocabularies' layout.

Pipeline position: the first stage for a new language or domain (text -> vocab.txt ->
TFRecords -> ...). Words are split by this project's own `BasicTokenizer`, so the learned
pieces are exactly the units the tokenizers will later look up; the piece selection is
tensorflow-text's WordPiece learner.

Layout (as the released English vocabularies): `[PAD]` = 0, `[unused0]`..`[unused98]` =
1..99, `[UNK]` = 100, `[CLS]` = 101, `[SEP]` = 102, `[MASK]` = 103, then the learned
pieces.
"""

import collections

from data_prep import file_io
from data_prep.tokenization import BasicTokenizer

SPECIAL_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[MASK]")


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

    from data_prep.graph_tokenizer import GraphTokenizer

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
                     lower_thresh=1, max_unique_chars=1000):
    """Learns a WordPiece vocabulary of at most `vocab_size` tokens (reserved included).

    Args:
        lines: iterable of str.
        vocab_size: int. Upper bound on the vocabulary size.
        do_lower_case: bool. Must match how the model will tokenize. Defaults to True.
        num_unused: int. Number of `[unusedN]` slots. Defaults to 99.
        lower_thresh: int. Lowest word count the learner considers. Defaults to 1.
        max_unique_chars: int. Alphabet size limit (raise it for CJK). Defaults to 1000.

    Returns:
        list of str tokens, id = position.
    """
    return learn_from_counts(count_words(lines, do_lower_case), vocab_size, num_unused,
                             lower_thresh, max_unique_chars)


def learn_from_counts(counts, vocab_size, num_unused=99, lower_thresh=1,
                      max_unique_chars=1000):
    """`learn_vocabulary` from word counts (see `count_words_in_files`)."""
    from data_prep.graph_tokenizer import require_text
    require_text("Learning a vocabulary (tensorflow-text's WordPiece learner)")
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as lib

    reserved = reserved_tokens(num_unused)
    if vocab_size <= len(reserved):
        raise ValueError(f"vocab_size={vocab_size} leaves no room after the "
                         f"{len(reserved)} reserved tokens.")
    if not counts:
        raise ValueError("No words to learn a vocabulary from: the input text is empty.")
    learned = lib.learn(sorted(counts.items()), vocab_size, reserved,
                        lower_thresh=lower_thresh, max_unique_chars=max_unique_chars,
                        include_joiner_token=False)
    tokens = list(reserved) + [t for t in learned if t not in set(reserved)]
    return tokens[:vocab_size]


def write_vocabulary(tokens, path):
    file_io.atomic_write_text(path, "".join(t + "\n" for t in tokens))
