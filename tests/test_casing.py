"""Lower-casing against the corpus's script: which words the original's uncased rule
changes (hand-checked per script), and the one warning `build_vocab` and
`create_pretraining_data` give."""

import os

from tests import warm_processes
from text import casing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_what_the_original_lower_casing_changes():
    # Dakuten and handakuten are combining marks after NFD: stripped.
    assert casing.uncased("ヨーロッパ") == "ヨーロッハ" and casing.uncased("です") == "てす"
    # Devanagari vowel signs and virama are marks too (नमस्ते: न म स ् त े).
    assert casing.uncased("नमस्ते") == "नमसत"
    assert casing.uncased("йод") == "иод" and casing.uncased("Привет") == "привет"
    assert casing.uncased("한") == "\u1112\u1161\u11ab"  # a syllable comes out as jamo
    assert casing.uncased("東京") == "東京" and casing.uncased("Café") == "cafe"
    assert [casing.script_of(w) for w in ("Paris", "東京", "カナ", "서울", "12", "नमस्ते")] == [
        "LATIN", "CJK", "KATAKANA", "HANGUL", None, "DEVANAGARI"]


def test_warning_names_each_changed_script_with_counts_not_latin_or_plain_cyrillic():
    lines = ["Café naïve résumé. Привет мир.", "東京大学", "ヨーロッパの言語です。"] * 20
    text = casing.lower_casing_warning(lines, "corpus.txt")
    assert text.startswith("corpus.txt: --do_lower_case changes the letters of")
    assert "100.0% of the Katakana words (20 of 20, e.g. 'ヨーロッパの' -> 'ヨーロッハの')" in text
    assert "of the Hiragana words (20 of 20" in text and "--do_lower_case=False" in text
    for untouched in ("Latin", "Cyrillic", "Cjk"):  # accents of Latin are the design
        assert untouched not in text
    assert casing.lower_casing_warning(["Привет мир, как дела?"] * 20, "x") is None
    assert casing.lower_casing_warning(["ヨーロッパ"] * 5, "x") is None  # too few to say


def test_build_vocab_warns_once_and_not_when_cased(tmp_path):
    corpus = tmp_path / "ja.txt"
    corpus.write_text("日本語の文章です。\nヨーロッパの言語とは違います。\n" * 30, encoding="utf-8")

    def build(*flags):
        return warm_processes.run(
            ["build_vocab.py", f"--input_file={corpus}",
             f"--output_file={tmp_path / 'vocab.txt'}", "--vocab_size=300", *flags],
            cwd=ROOT)
    uncased = build()
    assert uncased.returncode == 0, uncased.stderr[-2000:]
    warnings = [line for line in uncased.stderr.splitlines() if "changes the letters" in line]
    assert len(warnings) == 1 and "Hiragana" in warnings[0], uncased.stderr[-2000:]
    cased = build("--do_lower_case=False")
    assert cased.returncode == 0 and "changes the letters" not in cased.stderr


JAPANESE = [
    ["日本語は日本で話される言語です。", "ヨーロッパの言語とは文法がかなり違います。",
     "ひらがなとカタカナと漢字を使います。"],
    ["東京は日本の首都です。", "デパートやビルがたくさんあります。",
     "電車でどこへでも行けます。"],
    ["パンはフランスから伝わりました。", "ブドウのジャムをパンにぬります。",
     "ごはんも人気があります。"],
] * 6


def test_japanese_from_text_to_instances_keeps_its_letters_when_cased(tmp_path):
    """Text -> vocabulary -> TFRecords, cased, as docs/data.md's 'Your own language': the
    instances decode to the corpus's own characters (dakuten and handakuten kept)."""
    from data_prep import pretraining_records
    from text.tokenization import load_vocab
    corpus = tmp_path / "ja.txt"
    corpus.write_text("\n\n".join("\n".join(d) for d in JAPANESE) + "\n", encoding="utf-8")
    vocab, records = tmp_path / "vocab.txt", tmp_path / "ja.tfrecord"
    for command in (["build_vocab.py", f"--input_file={corpus}",
                     f"--output_file={vocab}", "--vocab_size=400", "--do_lower_case=False"],
                    ["create_pretraining_data.py", f"--input_file={corpus}",
                     f"--output_file={records}", f"--vocab_file={vocab}",
                     "--do_lower_case=False", "--max_seq_length=64",
                     "--max_predictions_per_seq=8", "--dupe_factor=2", "--num_workers=1"]):
        result = warm_processes.run(command, cwd=ROOT)
        assert result.returncode == 0, result.stderr[-2000:]
        assert "changes the letters" not in result.stderr
    inverse = {i: t for t, i in load_vocab(str(vocab)).items()}
    corpus_chars = set(corpus.read_text(encoding="utf-8"))
    seen = set()
    for example in pretraining_records.read_examples(str(records)):
        for token_id in example["input_ids"]:
            token = inverse[token_id]
            if not token.startswith("["):
                seen.update(token.removeprefix("##"))
    assert seen and seen <= corpus_chars  # nothing decomposed, nothing stripped
    assert {"で", "パ", "ブ", "デ"} <= seen
    # Letters that only uncasing would make (パ -> ハ, デ -> テ, で -> て...): none.
    stripped_only = {casing.uncased(c) for c in corpus_chars} - corpus_chars
    assert {"ハ", "テ"} <= stripped_only and not seen & stripped_only
