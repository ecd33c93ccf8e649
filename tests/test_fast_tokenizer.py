"""The serving path's tokenizer (`text.fast_tokenizer`, Hugging Face `tokenizers` where it
agrees) gives `FullTokenizer`'s ids on the tokenizer agreement corpus, and on the
characters where the Rust tokenizer alone would not."""

import pytest

from tests import text_generator
from text.fast_tokenizer import FastTokenizer
from text.tokenization import FullTokenizer

pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def corpus():
    return text_generator.generate(4000, seed=4321)


@pytest.fixture(scope="module")
def vocab_file(corpus, tmp_path_factory):
    return text_generator.write_covering_vocab(corpus, tmp_path_factory.mktemp("vocab"))


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_same_ids_as_the_python_tokenizer(corpus, vocab_file, do_lower_case):
    python = FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    fast = FastTokenizer(vocab_file, do_lower_case=do_lower_case)
    assert fast.compiled
    texts = corpus + [
        "ΟΔΟΣ ΣΟΦΟΣ", "a\x0bb c\x0cd", "x\x85y", "private \ue000 use", "unassigned \u0378",
        "İstanbul Straße ﬁnance", b"bytes \xff\xfe ok", "", "   ", "a" * 250]
    got = fast.ids(texts)
    differ = [(t, g) for t, g in zip(texts, got)
              if g != python.convert_tokens_to_ids(python.tokenize(t))]
    assert not differ, f"{len(differ)} of {len(texts)} differ, e.g. {differ[:3]!r}"
    # Most of the corpus really went through the Rust tokenizer (else this proves little).
    rust = sum(fast._rust_safe(t) for t in corpus if isinstance(t, str))
    assert rust > 0.5 * len(corpus)


def test_without_the_package_python_does_it(vocab_file, monkeypatch):
    import text.fast_tokenizer as module
    monkeypatch.setattr(module, "_rust_tokenizer", lambda vocab, lower: None)
    fast = FastTokenizer(vocab_file)
    python = FullTokenizer(vocab_file)
    assert not fast.compiled
    assert fast.ids(["The quick brown fox."]) == [
        python.convert_tokens_to_ids(python.tokenize("The quick brown fox."))]
