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
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as lib

    reserved = reserved_tokens(num_unused)
    counts = count_words(lines, do_lower_case)
    if not counts:
        raise ValueError("No words to learn a vocabulary from: the input text is empty.")
    learned = lib.learn(sorted(counts.items()), vocab_size, reserved,
                        lower_thresh=lower_thresh, max_unique_chars=max_unique_chars,
                        include_joiner_token=False)
    tokens = list(reserved) + [t for t in learned if t not in set(reserved)]
    return tokens[:vocab_size]


def write_vocabulary(tokens, path):
    from modeling.file_io import atomic_write_text
    atomic_write_text(path, "".join(t + "\n" for t in tokens))
