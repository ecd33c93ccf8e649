"""Wikipedia-dump and book extraction on small hand-written inputs."""

import bz2
import os
import subprocess
import sys

import pytest

from data_prep.wikitext_cleaning import article_sentences, clean_article

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ARTICLE = """{{Infobox person
| name = Ada Lovelace
| birth_date = {{birth date|1815|12|10}}
}}
'''Augusta Ada King''' was an English [[mathematician]] and [[Writer|writer]].<ref>{{cite book
| title = Ada
}}</ref> She worked on [[Charles Babbage]]'s [[Analytical Engine|engine]].<!-- hidden -->

[[File:Ada Lovelace portrait.jpg|thumb|right|Portrait of Ada.]]
== Early life ==
Her mother was Anne Isabella Milbanke. Dr. Smith was her tutor in 1829.

{| class="wikitable"
|-
! Year !! Event
|-
| 1815 || Born
|}
* A list item that is not prose at all.
# Another numbered list item here.
; Term : definition text here

=== Legacy ===
Ada Lovelace Day is held every October.<ref name="x"/>
[[Category:English mathematicians]]
[[fr:Ada Lovelace]]
"""


def test_clean_article_keeps_only_prose():
    assert clean_article(ARTICLE) == [
        "Augusta Ada King was an English mathematician and writer. She worked on Charles "
        "Babbage's engine.",
        "Her mother was Anne Isabella Milbanke. Dr. Smith was her tutor in 1829.",
        "Ada Lovelace Day is held every October.",
    ]


def test_sentences_split_without_breaking_abbreviations():
    assert article_sentences((ARTICLE, "en"))[2:4] == [
        "Her mother was Anne Isabella Milbanke.", "Dr. Smith was her tutor in 1829."]


def _dump(pages):
    body = "".join(
        f"<page><title>{t}</title><ns>{ns}</ns><id>{i}</id>"
        + ("<redirect title=\"X\" />" if redirect else "")
        + f"<revision><id>{i}</id><text xml:space=\"preserve\">{text}</text></revision></page>"
        for i, (t, ns, redirect, text) in enumerate(pages))
    return ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10">'
            "<siteinfo><sitename>Wikipedia</sitename><dbname>enwiki</dbname></siteinfo>"
            + body + "</mediawiki>")


def test_extract_wikipedia_end_to_end(tmp_path):
    from xml.sax.saxutils import escape
    pages = [("Ada Lovelace", "0", False, escape(ARTICLE)),
             ("Lovelace", "0", True, "#REDIRECT [[Ada Lovelace]]"),
             ("Talk:Ada Lovelace", "1", False, "Talk page text that must not appear."),
             ("Second", "0", False, "The second article has one sentence only.")]
    dump = tmp_path / "enwiki-pages-articles.xml.bz2"
    dump.write_bytes(bz2.compress(_dump(pages).encode("utf-8")))
    out = tmp_path / "docs"
    result = subprocess.run(
        [sys.executable, "-m", "data_prep.extract_wikipedia", f"--input_file={dump}",
         f"--output_dir={out}", "--num_output_files=1", "--num_workers=2"],
        capture_output=True, text=True, cwd=ROOT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "1 redirects and 1 pages of other namespaces skipped" in result.stderr
    text = (out / "wiki-00000-of-00001.txt").read_text(encoding="utf-8")
    documents = text.strip().split("\n\n")
    assert len(documents) == 2
    assert documents[0].split("\n")[0] == "Augusta Ada King was an English mathematician " \
                                          "and writer."
    assert documents[1] == "The second article has one sentence only."
    assert "Talk page" not in text and "list item" not in text and "1815" not in text
    # The output folder holds the documents only (a 'docs/*' glob reads nothing else);
    # the run's log is beside it.
    assert os.listdir(out) == ["wiki-00000-of-00001.txt"]
    assert "extract_wikipedia" in (tmp_path / "docs.log").read_text()


def test_extract_wikipedia_bad_dump(tmp_path):
    bad = tmp_path / "bad.xml.bz2"
    bad.write_bytes(b"this is not bz2")
    result = subprocess.run(
        [sys.executable, "-m", "data_prep.extract_wikipedia", f"--input_file={bad}",
         f"--output_dir={tmp_path / 'o'}"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode != 0
    assert "bad.xml.bz2: the dump is truncated or not bz2" in result.stderr


def test_extract_bookcorpus(tmp_path):
    books = tmp_path / "books"
    books.mkdir()
    (books / "a.txt").write_text("Chapter One\n\nIt was a dark night. The rain fell.\n"
                                 "She said: \"Go home.\" He went.\n", encoding="utf-8")
    (books / "b.txt").write_bytes(b"Another book. With a bad byte \xff here.\n")
    (books / "empty.txt").write_text("")
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "data_prep.extract_bookcorpus", f"--input_dir={books}",
         f"--output_dir={out}", "--num_output_files=1", "--num_workers=1"],
        capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "1 empty books skipped" in result.stderr and "1 bytes that were not UTF-8" in \
        result.stderr
    assert os.listdir(out) == ["books-00000-of-00001.txt"] and (tmp_path / "out.log").exists()
    docs = (out / "books-00000-of-00001.txt").read_text().strip().split("\n\n")
    assert docs == ["Chapter One\nIt was a dark night.\nThe rain fell.\nShe said: \"Go home.\""
                    "\nHe went.", "Another book.\nWith a bad byte here."]
