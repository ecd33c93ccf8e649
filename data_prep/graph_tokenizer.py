"""In-graph WordPiece tokenization with tensorflow-text, giving the same ids as
`data_prep.tokenization.FullTokenizer`.

Pipeline position: inside tf.data input pipelines and exported SavedModels, so that a
server can send raw strings. The Python tokenizer is the reference; a test checks the two
agree on thousands of varied strings.

tensorflow-text's own `BertTokenizer` does not match the original exactly (its lower-casing
is NFKC case folding, so "ﬁ" -> "fi" and "ß" -> "ss"; it keeps control characters; its
200-character limit counts bytes), so the steps are composed here from core ops:
  clean (regex) -> CJK spacing (regex) -> [lower (ICU full mapping, as Python's str.lower)
  -> NFD -> drop Mn] -> split on whitespace, keeping punctuation -> words over 200
  characters become "[UNK]" -> tensorflow-text WordPiece (greedy longest match, "##").
"""

import tensorflow as tf
import tensorflow_text as tf_text

from data_prep import tokenization

# RE2 patterns mirroring tokenization.BasicTokenizer.
_WHITESPACE = r"[\t\n\r\p{Zs}]"
_CJK = "[" + "".join(f"\\x{{{lo:X}}}-\\x{{{hi:X}}}" for lo, hi in tokenization.CJK_RANGES) + "]"
# After cleaning only " " and the line/paragraph separators (which Python's str.split also
# splits on) remain as separators.
_SPLIT = r"[ \x{2028}\x{2029}]"
_PUNCTUATION = r"[!-/:-@\[-`{-~]|\p{P}"
# tensorflow-text counts its per-word limit in bytes; the original counts characters. Let
# every word of up to 200 characters (at most 4 bytes each) through, and apply the
# character limit separately.
_MAX_BYTES_PER_WORD = 4 * tokenization.MAX_INPUT_CHARS_PER_WORD


def _drop_pattern():
    # RE2 has no class subtraction; spell "Cc or Cf, except tab, newline, carriage return".
    return r"[\x00\x{FFFD}\x01-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F\p{Cf}]"


class GraphTokenizer(tf.Module):
    """Strings -> WordPiece ids, in TensorFlow ops (traceable, exportable).

    Args:
        vocab_file: str. Same vocabulary file as `FullTokenizer`.
        do_lower_case: bool. Defaults to True.

    Example:
    ```python
    tokenizer = GraphTokenizer("vocab.txt")
    tokenizer.tokenize(tf.constant(["UNwant\\u00E9d,running"]))
    # <tf.RaggedTensor [[ids of un, ##want, ##ed, ",", runn, ##ing]]>
    ```
    """

    def __init__(self, vocab_file, do_lower_case=True, name=None):
        super().__init__(name=name)
        self.do_lower_case = do_lower_case
        vocab = tokenization.load_vocab(vocab_file)
        if tokenization.UNK_TOKEN not in vocab:
            raise tokenization.VocabularyError(
                f"{vocab_file}: the vocabulary has no '{tokenization.UNK_TOKEN}' token.")
        self.vocab_size = max(vocab.values()) + 1
        keys = tf.constant(list(vocab.keys()), dtype=tf.string)
        values = tf.constant(list(vocab.values()), dtype=tf.int64)
        self._table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(keys, values), default_value=-1)
        self._wordpiece = tf_text.WordpieceTokenizer(
            self._table, suffix_indicator="##", max_bytes_per_word=_MAX_BYTES_PER_WORD,
            token_out_type=tf.int64, unknown_token=tokenization.UNK_TOKEN,
            split_unknown_characters=False)
        self._vocab_file = tf.saved_model.Asset(vocab_file)

    def basic_tokenize(self, texts):
        """tf.string [batch] -> ragged tf.string [batch, (words)], as `BasicTokenizer`."""
        texts = tf.convert_to_tensor(texts, dtype=tf.string)
        # Invalid UTF-8 bytes are dropped, as Python's decode(errors="ignore").
        texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="ignore")
        texts = tf.strings.regex_replace(texts, _drop_pattern(), "")
        texts = tf.strings.regex_replace(texts, _WHITESPACE, " ")
        texts = tf.strings.regex_replace(texts, _CJK, r" \0 ")
        if self.do_lower_case:
            texts = tf.strings.lower(texts, encoding="utf-8")  # ICU full mapping = str.lower
            texts = tf_text.normalize_utf8(texts, "NFD")
            texts = tf.strings.regex_replace(texts, r"\p{Mn}", "")
        return tf_text.regex_split(texts, _SPLIT + "|" + _PUNCTUATION, _PUNCTUATION)

    def tokenize(self, texts):
        """tf.string [batch] -> ragged int64 [batch, (pieces)] of WordPiece ids."""
        words = self.basic_tokenize(texts)
        too_long = tf.strings.length(words.flat_values, unit="UTF8_CHAR") > \
            tokenization.MAX_INPUT_CHARS_PER_WORD
        words = words.with_flat_values(
            tf.where(too_long, tokenization.UNK_TOKEN, words.flat_values))
        pieces = self._wordpiece.tokenize(words)  # [batch, (words), (pieces)]
        return pieces.merge_dims(1, 2)
