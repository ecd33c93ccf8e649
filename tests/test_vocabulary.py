"""Learned vocabularies: the released layout, "##" suffix pieces that split unseen words,
[UNK] only where a character was never seen, the size asked for when the corpus allows it,
and a warning for vocabularies learned without suffix pieces."""

import os
import random
import subprocess
import sys

import pytest

from tests import warm_processes
from text import vocabulary
from text.tokenization import BasicTokenizer, FullTokenizer, is_cjk, is_punctuation

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEMS = ["walk", "talk", "jump", "play", "look", "cook", "help", "work"]
ENDINGS = ["", "s", "ed", "ing", "er"]


def _tokenizer(tokens, tmp_path, do_lower_case=True):
    path = str(tmp_path / "vocab.txt")
    vocabulary.write_vocabulary(tokens, path)
    return FullTokenizer(path, do_lower_case=do_lower_case)


def _made_up_words(rng, n):
    """Words of two or three syllables, Zipf-distributed like a language's words."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words = sorted({"".join(rng.choice(syllables) for _ in range(rng.choice([2, 3])))
                    for _ in range(n)})
    weights = [1 / (rank + 1) for rank in range(len(words))]
    rng.shuffle(words)
    return words, weights


def test_learned_vocabulary_layout_and_coverage(tmp_path):
    lines = ["The cats sat on the mats.", "Unbelievable things happen, said the cat!",
             "Naïve CAFÉ owners sat.", "東京 東京"] * 5
    tokens = vocabulary.learn_vocabulary(lines, vocab_size=200)
    assert len(tokens) <= 200 and len(set(tokens)) == len(tokens)
    # The released English vocabularies' special ids.
    assert tokens[0] == "[PAD]" and tokens[1] == "[unused0]" and tokens[99] == "[unused98]"
    assert tokens[100:104] == ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer = _tokenizer(tokens, tmp_path)
    for line in lines:  # every word of the training text is covered, none is [UNK]
        assert "[UNK]" not in tokenizer.tokenize(line), line
    assert "naive" in tokenizer.vocab or "##ive" in tokenizer.vocab  # accents stripped


def test_unseen_words_split_into_a_stem_and_a_learned_ending(tmp_path):
    """Hand-checked: three stem+ending words are left out of a corpus of the other 37;
    each of their stems and endings occurs in it. With room for 26 learned pieces (170 less
    104 reserved, 20 letters and their 20 "##" forms) the vocabulary holds those stems and
    "##ed", "##ing", "##er", not all 37 words whole."""
    held_out = {"jumped", "cooking", "helper"}
    words = [s + e for s in STEMS for e in ENDINGS if s + e not in held_out]
    tokens = vocabulary.learn_vocabulary([" ".join(words)] * 3, vocab_size=170)
    assert len(tokens) == 170
    assert {"##ed", "##ing", "##er"} <= set(tokens)
    tokenizer = _tokenizer(tokens, tmp_path)
    assert tokenizer.tokenize("Jumped cooking helper") == [
        "jump", "##ed", "cook", "##ing", "help", "##er"]


def test_size_as_asked_with_suffix_pieces_and_unknown_only_for_unseen_characters(tmp_path):
    rng = random.Random(7)
    words, weights = _made_up_words(rng, 3000)
    corpus = [" ".join(rng.choices(words, weights, k=12)) for _ in range(3000)]
    held_out = [" ".join(rng.choices(words, weights, k=12)) for _ in range(300)]
    held_out.append("bazuki quxo bádo")  # q, x and á were never seen (á stays: cased)
    tokens = vocabulary.learn_vocabulary(corpus, vocab_size=600, do_lower_case=False)
    assert len(tokens) == 600 and len(set(tokens)) == 600  # the corpus holds more
    suffixes = [t for t in tokens if t.startswith("##")]
    assert len(suffixes) > 60, len(suffixes)
    tokenizer = _tokenizer(tokens, tmp_path, do_lower_case=False)
    seen = set("".join(corpus))
    basic = BasicTokenizer(do_lower_case=False)
    for line in held_out:
        got = tokenizer.tokenize(line)
        expected_unknown = sum(any(c not in seen for c in w) for w in basic.tokenize(line))
        assert got.count("[UNK]") == expected_unknown, (line, got)
    pieces = sum(len(tokenizer.tokenize(line)) for line in held_out[:-1])
    multi = sum(len(basic.tokenize(line)) for line in held_out[:-1])
    assert pieces < 2 * multi  # words split into a few pieces, not into letters


def test_small_corpus_gives_what_it_holds(tmp_path):
    words = [s + e for s in STEMS for e in ENDINGS]
    tokens = vocabulary.learn_vocabulary([" ".join(words)] * 3, vocab_size=30522)
    assert len(tokens) < 400 and set(words) <= set(tokens)


def test_no_suffix_form_of_characters_that_are_always_words_of_their_own():
    lines = ["東京は大きい。京都も!", "tokyo, kyoto; osaka."] * 4
    tokens = vocabulary.learn_vocabulary(lines, vocab_size=400, do_lower_case=False)
    for token in tokens:
        if token.startswith("##") and len(token) == 3:
            assert not (is_cjk(ord(token[2])) or is_punctuation(token[2])), token
    assert "東" in tokens and "##い" in tokens and "##o" in tokens


def test_too_small_for_the_alphabet_is_a_clear_error():
    with pytest.raises(ValueError, match="too small for the corpus's alphabet"):
        vocabulary.learn_vocabulary(["abcdefghijklmnopqrstuvwxyz"] * 3, vocab_size=120)


def test_vocabulary_without_suffix_pieces_is_reported_when_loaded(tmp_path):
    big_old = tmp_path / "old_vocab.txt"
    big_old.write_text("".join(f"word{i}\n" for i in range(5000)), encoding="utf-8")
    small = tmp_path / "small_vocab.txt"
    small.write_text("".join(f"word{i}\n" for i in range(500)), encoding="utf-8")
    with_pieces = tmp_path / "new_vocab.txt"
    with_pieces.write_text("".join(f"word{i}\n" for i in range(5000)) + "##s\n",
                           encoding="utf-8")
    code = ("import sys; from text.tokenization import load_vocab\n"
            "for path in sys.argv[1:]: load_vocab(path); load_vocab(path)\n")
    result = subprocess.run([sys.executable, "-c", code, str(big_old), str(small),
                             str(with_pieces)], capture_output=True, text=True, check=True)
    warnings = [line for line in result.stderr.splitlines() if "suffix piece" in line]
    assert len(warnings) == 1 and "old_vocab.txt: none of its 5000 tokens" in warnings[0]


def _hanzi_lines(rng, distinct=1500, each=8, per_line=30):
    """Lines of ideographs in which each of `distinct` occurs `each` times."""
    chars = [chr(0x4E00 + i) for i in range(distinct)] * each
    rng.shuffle(chars)
    return ["".join(chars[i:i + per_line]) for i in range(0, len(chars), per_line)]


def test_the_alphabet_fits_a_cjk_corpus_and_the_unknown_share_is_reported():
    """1,500 distinct ideographs (more than tensorflow-text's default alphabet of 1,000):
    the default keeps them all; a cap of 1,000 leaves words out, and `coverage` says how
    many, computed here independently from the corpus."""
    lines = _hanzi_lines(random.Random(3))
    hanzi = set("".join(lines))
    counts = vocabulary.count_words(lines, do_lower_case=False)
    tokens = vocabulary.learn_from_counts(counts, 4000)
    assert len(hanzi) == 1500 and hanzi <= set(tokens)
    assert vocabulary.coverage(counts, tokens)["unknown_words"] == 0.0
    capped = vocabulary.learn_from_counts(counts, 4000, max_unique_chars=1000)
    kept = {t for t in capped if len(t) == 1}
    left_out = sum(n for w, n in counts.items() if w not in kept)
    found = vocabulary.coverage(counts, capped)
    assert found["unknown_words"] == pytest.approx(left_out / sum(counts.values()))
    assert found["unknown_words"] > 0.3 and found["alphabet"] == 1000
    assert found["corpus_chars"] == 1500


def test_build_vocab_warns_with_the_fix(tmp_path):
    corpus = tmp_path / "zh.txt"
    corpus.write_text("\n".join(_hanzi_lines(random.Random(4))) + "\n", encoding="utf-8")
    def build(*flags):
        return warm_processes.run(
            ["build_vocab.py", f"--input_file={corpus}",
             f"--output_file={tmp_path / 'vocab.txt'}", "--vocab_size=4000", *flags],
            cwd=ROOT)
    fitted = build()
    assert fitted.returncode == 0, fitted.stderr[-2000:]
    assert "0.000% of the words become [UNK]" in fitted.stderr
    assert "1,500 of the corpus's 1,500 distinct characters kept" in fitted.stderr
    capped = build("--max_unique_chars=1000")
    assert capped.returncode == 0, capped.stderr[-2000:]
    warning = [line for line in capped.stderr.splitlines() if "become [UNK] with" in line]
    assert len(warning) == 1 and "500 characters left out" in warning[0] and \
        "raise --max_unique_chars (now 1000; 0 fits the corpus)" in warning[0]
