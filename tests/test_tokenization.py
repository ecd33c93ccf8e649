"""The Python tokenizer against the original release's documented behaviour, with small
inline vocabularies and hand-worked expected outputs."""

import pytest

from text import tokenization
from text.tokenization import BasicTokenizer, FullTokenizer, WordpieceTokenizer

VOCAB = ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing",
         ","]


def test_full_tokenizer_documented_example(write_vocab):
    tokenizer = FullTokenizer(write_vocab(VOCAB), do_lower_case=True)
    tokens = tokenizer.tokenize("UNwant\u00E9d,running")
    assert tokens == ["un", "##want", "##ed", ",", "runn", "##ing"]
    assert tokenizer.convert_tokens_to_ids(tokens) == [7, 4, 5, 10, 8, 9]
    assert tokenizer.convert_ids_to_tokens([7, 4, 5]) == ["un", "##want", "##ed"]


def test_wordpiece_whole_word_unknown():
    vocab = {t: i for i, t in enumerate(VOCAB)}
    wp = WordpieceTokenizer(vocab)
    assert wp.tokenize("") == []
    assert wp.tokenize("unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]
    # No partial pieces: an unmatched tail makes the whole word [UNK].
    assert wp.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]


def test_wordpiece_greedy_longest_match_first():
    vocab = {t: i for i, t in enumerate(["[UNK]", "a", "ab", "abc", "##c", "##bc", "##d"])}
    wp = WordpieceTokenizer(vocab)
    assert wp.tokenize("abcd") == ["abc", "##d"]  # not ab + ##c + ##d
    assert wp.tokenize("abd") == ["ab", "##d"]


def test_words_over_200_characters_are_unknown():
    vocab = {"[UNK]": 0, "a": 1, "##a": 2}
    wp = WordpieceTokenizer(vocab)
    assert wp.tokenize("a" * 200) == ["a"] + ["##a"] * 199
    assert wp.tokenize("a" * 201) == ["[UNK]"]
    # Counted in characters, not bytes: 200 four-byte characters are still looked up.
    assert WordpieceTokenizer({"[UNK]": 0, "😀": 1, "##😀": 2}).tokenize("😀" * 200)[0] == "😀"


def test_basic_tokenizer_lower():
    t = BasicTokenizer(do_lower_case=True)
    assert t.tokenize(" \tHeLLo!how  \n Are yoU?  ") == ["hello", "!", "how", "are", "you", "?"]
    assert t.tokenize("H\u00E9llo") == ["hello"]


def test_basic_tokenizer_no_lower_keeps_case_and_accents():
    t = BasicTokenizer(do_lower_case=False)
    assert t.tokenize(" \tHeLLo!how  \n Are yoU?  ") == ["HeLLo", "!", "how", "Are", "yoU", "?"]
    assert t.tokenize("H\u00E9llo") == ["H\u00E9llo"]


def test_chinese_characters_split_but_not_hangul_or_kana():
    t = BasicTokenizer()
    assert t.tokenize("ah\u535A\u63A8zz") == ["ah", "\u535A", "\u63A8", "zz"]
    assert t.tokenize("日本語のテキスト") == ["日", "本", "語", "のテキスト"]
    # Uncased: NFD without re-composition turns Hangul syllables into conjoining jamo.
    assert t.tokenize("한국") == ["\u1112\u1161\u11ab\u1100\u116e\u11a8"]
    assert BasicTokenizer(do_lower_case=False).tokenize("한국") == ["한국"]


def test_cleaning_and_whitespace_rules():
    t = BasicTokenizer()
    # NUL, U+FFFD, Cc and Cf (zero-width space) dropped; \u00a0 and \u3000 (Zs) split.
    assert t.tokenize("a\x00b\ufffdc\x07d\u200be") == ["abcde"]
    assert t.tokenize("a\u00a0b\u3000c") == ["a", "b", "c"]
    # str.split also splits on the line and paragraph separators.
    assert t.tokenize("a\u2028b\u2029c") == ["a", "b", "c"]
    # Private-use and emoji characters are kept (the 2019 "support emojis" change).
    assert t.tokenize("x\ue000y 😀") == ["x\ue000y", "😀"]


def test_ascii_symbols_are_punctuation():
    assert BasicTokenizer().tokenize("a$b^c`d+e<f=g>h|i~j") == list("a$b^c`d+e<f=g>h|i~j")
    # Special tokens in raw text are not protected, as in the original.
    assert BasicTokenizer().tokenize("[CLS] x") == ["[", "cls", "]", "x"]


def test_final_sigma_and_special_lowercasing():
    t = BasicTokenizer()
    assert t.tokenize("ΟΔΟΣ") == ["οδος"]
    assert t.tokenize("İ") == ["i"]  # "i" + combining dot, then the dot (Mn) is stripped
    assert t.tokenize("straße ﬁ") == ["straße", "ﬁ"]  # lower(), not case folding


def test_bytes_input_drops_invalid_utf8():
    assert BasicTokenizer().tokenize(b"caf\xc3\xa9 \xff ok") == ["cafe", "ok"]


def test_unknown_token_lookup_raises_like_the_original(write_vocab):
    tokenizer = FullTokenizer(write_vocab(VOCAB))
    with pytest.raises(KeyError):
        tokenizer.convert_tokens_to_ids(["nope"])


def test_vocabulary_errors(tmp_path, write_vocab):
    with pytest.raises(tokenization.VocabularyError, match="cannot read"):
        FullTokenizer(str(tmp_path / "missing.txt"))
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(tokenization.VocabularyError, match="empty"):
        FullTokenizer(str(empty))
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes(b"[UNK]\ncaf\xe9\n")
    with pytest.raises(tokenization.VocabularyError, match="not UTF-8"):
        FullTokenizer(str(latin1))
    with pytest.raises(tokenization.VocabularyError, match=r"no '\[UNK\]'"):
        FullTokenizer(write_vocab(["[CLS]", "a"], name="nounk.txt"))


def test_vocab_lines_are_stripped_and_ids_are_line_numbers(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"[PAD]\r\n[UNK]\n  hello \nhello\nlast")
    vocab = tokenization.load_vocab(str(path))
    assert vocab == {"[PAD]": 0, "[UNK]": 1, "hello": 3, "last": 4}
