"""Chinese whole-word masking (`text.chinese_words`, `--word_segmenter=jieba`): the marks
on a hand-checked sentence; every instance of both modes masks jieba's words whole,
checked against jieba called directly on the text a word at a time
(`tests.chinese_text.check_instances`, which does not use the marks); the
masked share stays at --masked_lm_prob; English grouping and the segmenter-off output
unchanged; the refusals, and a quiet console."""

import os
import sys

import numpy as np
import pytest

from data_prep import pretraining_records as records
from tests import chinese_text, warm_processes
from tests.chinese_text import check_instances, read_documents, word_tokens
from tests.test_create_pretraining_data import make_corpus, make_vocab, read_all, run_cli
from text import chinese_words
from text.tokenization import FullTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytest.importorskip("jieba")


def _marks(line, tokenizer, lower=True):
    words = chinese_words.WordMarks(tokenizer.vocab, lower,
                                    chinese_words.load_segmenter("jieba"))
    tokens = tokenizer.tokenize(line)
    marked = words.continuing(line, tokenizer.convert_tokens_to_ids(tokens))
    return " ".join(("##" if i in marked else "") + t for i, t in enumerate(tokens)), words


def test_a_sentence_is_marked_as_jieba_cuts_it(tmp_path):
    """jieba's own example (its README: 我/来到/北京/清华大学), by hand: every character
    of a word after its first continues it; one-character words, punctuation, English
    and a word mixing Latin and CJK ("T恤") stay alone."""
    _, vocab = chinese_text.write(tmp_path, [["我来到北京清华大学，T恤很好。"]])
    tokenizer = FullTokenizer(vocab, True)
    marked, words = _marks("我来到北京清华大学，T恤很好。", tokenizer)
    assert marked == "我 来 ##到 北 ##京 清 ##华 ##大 ##学 ， [UNK] 恤 很 好 。"
    assert words.unaligned_lines == 0


def test_characters_outside_the_vocabulary_keep_their_word(tmp_path):
    """A character the vocabulary lacks is an [UNK] token in its place: the word is still
    grouped (清 [UNK] 大 学); a word of unknown characters alone is not grouped; a CJK
    compatibility ideograph, which a lower-casing tokenizer maps to its unified form
    (NFD), lines up."""
    line = "我来到北京清华大学"
    _, vocab = chinese_text.write(tmp_path, [[line + "\u8c48"]], leave_out="华北京")
    tokenizer = FullTokenizer(vocab, True)
    marked, words = _marks(line, tokenizer)
    assert marked == "我 来 ##到 [UNK] [UNK] 清 ##[UNK] ##大 ##学"
    assert tokenizer.tokenize("\uf900") == ["\u8c48"]
    assert _marks("我来到\uf900", tokenizer)[1].unaligned_lines == 0
    assert words.unaligned_lines == 0


def test_tokens_that_do_not_line_up_are_counted_and_left_alone(tmp_path):
    _, vocab = chinese_text.write(tmp_path)
    tokenizer = FullTokenizer(vocab, True)
    words = chinese_words.WordMarks(tokenizer.vocab, True,
                                    chinese_words.load_segmenter("jieba"))
    ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize("北京大学"))
    assert words.continuing("北京大学学习", ids) == []
    assert words.unaligned_lines == 1
    # The ragged form marks what the list form marks, empty lines included.
    lines = ["我们在北京大学学习自然语言处理。", "", "English only.", "今天的天气非常好"]
    lists = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(x)) for x in lines]
    splits = np.cumsum([0] + [len(x) for x in lists])
    flat = words.mark_flat([x.encode() for x in lines],
                           np.array([i for row in lists for i in row], np.int64), splits)
    expected = words.mark_lists(lines, lists)
    assert flat.tolist() == [i for row in expected for i in row]
    # By hand: 我们 北京大学 学习 自然语言 处理 (1 + 3 + 1 + 3 + 1), 今天 天气 非常 (3).
    assert sum(i >= chinese_words.CONTINUES_WORD for i in flat) == 12


@pytest.fixture(scope="module")
def chinese(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chinese")
    text, vocab = chinese_text.write(folder)
    ids, words, left_out = word_tokens(read_documents(text), FullTokenizer(vocab, True),
                                       chinese_words.load_segmenter("jieba"))
    assert left_out == 0
    return folder, text, vocab, ids, words


@pytest.mark.parametrize("mode", ["original", "fast"])
def test_every_instance_masks_jiebas_words_whole(chinese, mode, caplog):
    folder, text, vocab, ids, words = chinese
    flags = dict(mode=mode, num_workers=1, input_file=text, vocab_file=vocab,
                 dupe_factor=10, max_seq_length=48, max_predictions_per_seq=12,
                 do_whole_word_mask=True)
    out = str(folder / f"{mode}.tfrecord")
    run_cli(output_file=out, word_segmenter="jieba", **flags)
    counts = check_instances(records.read_examples(out), ids, words)
    assert counts["segments"] > 200 and counts["unlocated"] < counts["segments"] / 10
    assert counts["split"] == 0 and counts["whole"] > 300, counts
    assert counts["masked"] / counts["tokens"] == pytest.approx(0.15, abs=0.005)
    assert "Add --word_segmenter=jieba" not in caplog.text
    # Without the segmenter the same check finds words split: it can fail. The command
    # says Chinese is then masked a character at a time.
    plain = str(folder / f"{mode}-plain.tfrecord")
    run_cli(output_file=plain, word_segmenter="none", **flags)
    assert check_instances(records.read_examples(plain), ids, words)["split"] > 100
    assert "are CJK ideographs, each a word of its own for --do_whole_word_mask: " \
           "Chinese is masked a character at a time. Add --word_segmenter=jieba" in caplog.text


@pytest.mark.parametrize("mode", ["original", "fast"])
def test_text_without_chinese_is_written_as_without_the_segmenter(tmp_path, mode):
    """English words' "##" grouping is unchanged: on text without CJK characters the
    segmenter changes nothing (the segmenter-off output is the original's:
    test_create_pretraining_data.py)."""
    vocab, _ = make_vocab(tmp_path / "vocab.txt")
    corpus = make_corpus(tmp_path / "corpus.txt", n_docs=40)
    written = {}
    for segmenter in ("none", "jieba"):
        out = str(tmp_path / f"{segmenter}.tfrecord")
        run_cli(mode=mode, num_workers=1, input_file=corpus, output_file=out,
                vocab_file=vocab, dupe_factor=2, do_whole_word_mask=True,
                word_segmenter=segmenter)
        written[segmenter] = read_all([out])
    assert len(written["none"]) > 100 and written["none"] == written["jieba"]
    assert chinese_words.characters_alone_warning(["A mostly English line, 中文."], "x") is None


def test_the_segmenter_is_refused_without_whole_word_masking_or_jieba(chinese, monkeypatch):
    from pretrain_from_text import FromTextSettings
    folder, text, vocab, _, _ = chinese
    out = folder / "refused.tfrecord"
    with pytest.raises(ValueError, match="--word_segmenter=jieba groups Chinese characters "
                                         "into words for whole-word masking: add "
                                         "--do_whole_word_mask"):
        run_cli(input_file=text, output_file=str(out), vocab_file=vocab,
                word_segmenter="jieba")
    with pytest.raises(ValueError, match="add --do_whole_word_mask"):
        FromTextSettings(input_text=text, output_dir=str(folder / "run"),
                         word_segmenter="jieba")
    monkeypatch.setitem(sys.modules, "jieba", None)  # as if not installed
    with pytest.raises(chinese_words.SegmenterMissing,
                       match=r"needs jieba.*`pip install jieba==0\.42\.1`"):
        run_cli(input_file=text, output_file=str(out), vocab_file=vocab,
                do_whole_word_mask=True, word_segmenter="jieba")
    with pytest.raises(chinese_words.SegmenterMissing, match="needs jieba"):
        FromTextSettings(input_text=text, output_dir=str(folder / "run"),
                         do_whole_word_mask=True, word_segmenter="jieba")
    assert not out.exists() and not (folder / "run").exists()


def test_the_console_stays_quiet_and_the_summary_is_the_usual(chinese):
    """jieba's dictionary log lines and the deprecation warning its import raises are not
    the user's business: the command prints its progress and summary only."""
    folder, text, vocab, _, _ = chinese
    result = warm_processes.run(
        [os.path.join(ROOT, "create_pretraining_data.py"), f"--input_file={text}",
         f"--output_file={folder / 'quiet.tfrecord'}", f"--vocab_file={vocab}",
         "--do_whole_word_mask", "--word_segmenter=jieba", "--num_workers=1",
         "--dupe_factor=1"], cwd=str(folder))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "prefix dict" not in result.stderr and "pkg_resources" not in result.stderr
    assert "Wrote " in result.stderr and "Warning" not in result.stderr, result.stderr


def test_the_recipe_masks_chinese_words_whole_and_keeps_it_in_its_plan(chinese, tmp_path):
    from tasks.pretraining import from_text
    folder, text, vocab, ids, words = chinese
    out = str(tmp_path / "train.tfrecord")
    from_text.write_records(text, [out], vocab, True, 10, 7, do_whole_word_mask=True,
                            word_segmenter="jieba")
    counts = check_instances(records.read_examples(out), ids, words)
    assert counts["split"] == 0 and counts["whole"] > 300, counts
    # The recipe's 40% masked.
    assert counts["masked"] / counts["tokens"] == pytest.approx(
        from_text.RECIPE["masked_lm_prob"], abs=0.02)
    plan = from_text.choose_plan(str(tmp_path), 60, 10_000_000, 0.5,
                                 do_whole_word_mask=True, word_segmenter="jieba")
    kept = from_text.kept_plan(str(tmp_path))
    assert kept == plan and (kept.do_whole_word_mask, kept.word_segmenter) == (True, "jieba")
