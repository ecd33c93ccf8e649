"""Wikipedia-dump, WikiText and book extraction on small hand-written inputs."""

import bz2
import os

import pytest

from data_prep.sentences import check_language, split_sentences
from data_prep.wikitext_cleaning import article_sentences, clean_article
from tests import warm_processes

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


def test_taken_out_markup_leaves_a_space_only_between_words():
    """Modelled on ukwiki's year pages ("[[A]]{{•}}[[B]]": the words were glued, as
    "революціяРіч"), enwiki's {{nbsp}}, {{snd}}, <br /> and {{'s}}, and jawiki's
    {{要出典}}: a space where the markup stood between two words, nothing after
    punctuation, inside a formula's subscripts, or in a script written without spaces."""
    text = ("[[Річ Посполита]]{{•}}[[Запорозька Січ]]{{•}} [[Руїна]] були на мапі цього року.\n\n"
            "On 15{{nbsp}}September the order{{snd}}readily implemented{{snd}}converts it."
            "<ref>x</ref> Line one<br />line two of the same paragraph.\n\n"
            "''Eagle''{{'s}} footpad touched C<sub>20</sub>H<sub>42</sub> wax.{{citation needed}}"
            "\n\n東京{{要出典}}は日本の首都である。とても大きい都市だ。\n"
            "{{anchor|x}}* A list item after a template is still a list.")
    assert clean_article(text) == [
        "Річ Посполита Запорозька Січ Руїна були на мапі цього року.",
        "On 15 September the order readily implemented converts it. Line one line two of "
        "the same paragraph.",
        "Eagle's footpad touched CH wax.",
        "東京は日本の首都である。とても大きい都市だ。",
    ]


def test_italics_end_with_their_line_and_headings_end_paragraphs():
    """Modelled on enwiki's Abraham Lincoln (a <ref> holding an unclosed "''" leaked into the
    text), Achilles ("''Iliad'''s": an apostrophe, as MediaWiki reads it) and ukwiki's year
    pages ("''Див. також [[:Категорія:...]]" left open, which joined two stubs across a
    list and a heading into "Див. також Див. також ''")."""
    text = ("The Iliad is an epic poem of ancient Greece.<ref>Allan Nevins, ''Ordeal'' of the "
            "Union'' (1959)</ref> Its hero is Achilles.\n"
            "== Reception ==\n"
            "Scholars read the ''Iliad'''s description of the shield closely.\n\n"
            "== Born ==\n"
            "''See also [[Category:Births in 1854]]\n"
            "* [[18 January]] – Thomas Watson, an inventor of the telephone\n"
            "== Died ==\n"
            "''See also [[Category:Deaths in 1854]]''\n")
    assert clean_article(text) == [
        "The Iliad is an epic poem of ancient Greece. Its hero is Achilles.",
        "Scholars read the Iliad's description of the shield closely.",
    ]


def test_sentences_split_without_breaking_abbreviations():
    assert article_sentences((ARTICLE, "en"))[2:4] == [
        "Her mother was Anne Isabella Milbanke.", "Dr. Smith was her tutor in 1829."]
    # An abbreviation the segmenter does not know, followed by a lower-case word, does not
    # end the sentence (ruwiki: "в." is "век"); one before a capital still does.
    assert split_sentences("Литва возникла в XIII в. на берегах Немана. Столица — Вильнюс.",
                           "ru") == ["Литва возникла в XIII в. на берегах Немана.",
                                     "Столица — Вильнюс."]


def _dump(pages, dbname="enwiki", namespaces=()):
    body = "".join(
        f"<page><title>{t}</title><ns>{ns}</ns><id>{i}</id>"
        + ("<redirect title=\"X\" />" if redirect else "")
        + f"<revision><id>{i}</id><text xml:space=\"preserve\">{text}</text></revision></page>"
        for i, (t, ns, redirect, text) in enumerate(pages))
    names = "".join(f'<namespace key="{key}" case="first-letter">{name}</namespace>'
                    for key, name in namespaces)
    return ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10">'
            f"<siteinfo><sitename>Wikipedia</sitename><dbname>{dbname}</dbname>"
            f'<namespaces><namespace key="0" case="first-letter" />{names}</namespaces>'
            "</siteinfo>" + body + "</mediawiki>")


# Hand-checked cases modelled on real pages of these wikis' dumps (namespace names
# from their <siteinfo>, link forms and image options as their articles use them): the
# file links (with their localised options and captions), categories, interlanguage links
# and behaviour switches go; the prose stays, split into its sentences.
WIKIS = {
    "jawiki": ([(6, "ファイル"), (14, "Category")],
               "[[ファイル:Map.png|thumb|400px|世界の言語の分布図]]日本語は日本の言語である。"
               "[[画像:Old.jpg|サムネイル|右|古い写真]]地域ごとの方言が多い。__目次非表示__\n"
               "[[Category:日本語]] [[カテゴリ:言語]]\n[[en:Japanese language]]",
               ["日本語は日本の言語である。", "地域ごとの方言が多い。"]),
    "ukwiki": ([(6, "Файл"), (14, "Категорія")],
               "[[Файл:Bohr.png|міні|праворуч|250пкс|Атомна модель [[Нільс Бор|Бора]]]] "
               "Атом складається з ядра та електронів. Геогра́фія, або заст. землепис, вивчає "
               "Землю.\n[[Зображення:X.jpg|thumb|Підпис]]\n[[Категорія:Фізика]]",
               ["Атом складається з ядра та електронів.",
                "Геогра́фія, або заст. землепис, вивчає Землю."]),
    "mrwiki": ([(6, "चित्र"), (14, "वर्ग")],
               "[[चित्र:Palas.jpg|इवलेसे|200px|उजवे|वसंत ऋतूत पळसाला आलेला बहर.]]"
               "महाराष्ट्र हे भारताचे एक राज्य आहे। मुंबई ही राजधानी आहे।\n"
               "[[वर्ग:महाराष्ट्र]] [[File:Logo.svg|25px|link=]]",
               ["महाराष्ट्र हे भारताचे एक राज्य आहे।", "मुंबई ही राजधानी आहे।"]),
    "ltgwiki": ([(6, "Fails"), (14, "Kategoreja")],
                "[[Fails:Augi.jpg|thumb|250px|Augoji]] Auguoji ir dzeivūs organizmu grupa. "
                "Tī aug Latgolā.\n[[Kategoreja:Biologeja]]\n[[zh-min-nan:Si̍t-bu̍t]]",
                ["Auguoji ir dzeivūs organizmu grupa.", "Tī aug Latgolā."]),
    "zhwiki": ([(6, "File"), (14, "Category")],
               "[[File:Galaxy.jpg|thumb|星系]]天文學是研究天體的科學。它的歷史非常悠久。\n"
               "[[分類:天文學|天文學]] [[圖像:Sun.png|缩略图|太陽]]",
               ["天文學是研究天體的科學。", "它的歷史非常悠久。"]),
}


@pytest.mark.parametrize("dbname", sorted(WIKIS))
def test_articles_in_the_wikis_own_language(dbname):
    namespaces, text, expected = WIKIS[dbname]
    language = dbname[:-len("wiki")]
    assert article_sentences((text, language, [n for _, n in namespaces])) == expected


def test_extract_wikipedia_reads_the_namespaces_of_the_dump(tmp_path):
    """The command, on a jawiki-like dump: its <siteinfo> names (ファイル) reach the cleaning."""
    from xml.sax.saxutils import escape
    namespaces, text, expected = WIKIS["jawiki"]
    dump = tmp_path / "jawiki-pages-articles.xml.bz2"
    dump.write_bytes(bz2.compress(_dump([("A", "0", False, escape(text))], "jawiki",
                                        namespaces).encode("utf-8")))
    result = warm_processes.run(
        ["extract_wikipedia.py", f"--input_file={dump}",
         f"--output_dir={tmp_path / 'docs'}", "--num_output_files=1", "--num_workers=1"],
        cwd=ROOT, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, result.stderr[-2000:]
    documents = (tmp_path / "docs" / "wiki-00000-of-00001.txt").read_text(encoding="utf-8")
    assert documents.strip().split("\n") == expected and "sentences split as 'ja'" in \
        result.stderr


def test_links_that_are_not_prose():
    from data_prep.wiki_namespaces import NonArticleLinks
    links = NonArticleLinks(["Файл", "Категорія", "Вікіпедія"], "uk")
    for title in ("Файл:X.jpg", "файл:X.jpg", " :Категорія:Фізика", "Зображення:Y.png",
                  "Image:Z.svg", "Category:A", "Вікіпедія:Правила", "fr:Paris",
                  "zh-min-nan:Si̍t-bu̍t", "simple:Atom", "Anything:Photo of a cat.JPG",
                  "Template_talk:X"):
        assert links.match(title), title
    for title in ("Атом", "Star Wars: Episode IV", "Нільс Бор", "wikt:атом", "2001: A Space"):
        assert not links.match(title), title


def test_extract_wikipedia_end_to_end(tmp_path):
    from xml.sax.saxutils import escape
    pages = [("Ada Lovelace", "0", False, escape(ARTICLE)),
             ("Lovelace", "0", True, "#REDIRECT [[Ada Lovelace]]"),
             ("Talk:Ada Lovelace", "1", False, "Talk page text that must not appear."),
             ("Second", "0", False, "The second article has one sentence only.")]
    dump = tmp_path / "enwiki-pages-articles.xml.bz2"
    dump.write_bytes(bz2.compress(_dump(pages).encode("utf-8")))
    out = tmp_path / "docs"
    result = warm_processes.run(
        ["extract_wikipedia.py", f"--input_file={dump}",
         f"--output_dir={out}", "--num_output_files=1", "--num_workers=2"],
        cwd=ROOT, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
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


def test_extract_wikipedia_with_no_prose_and_more_files_than_articles(tmp_path):
    from xml.sax.saxutils import escape
    dump = tmp_path / "enwiki-pages-articles.xml.bz2"
    dump.write_bytes(bz2.compress(_dump([("A", "0", False, escape(
        "A short stub.\n[[Category:Stubs]]"))]).encode("utf-8")))
    command = ["extract_wikipedia.py", f"--input_file={dump}",
               f"--output_dir={tmp_path / 'docs'}", "--num_output_files=3",
               "--num_workers=1"]
    result = warm_processes.run(command, cwd=ROOT)
    assert result.returncode == 1 and "no article has prose left after cleaning (of 1 " \
        "read" in result.stderr, result.stderr[-2000:]
    assert not os.path.exists(tmp_path / "docs") or not os.listdir(tmp_path / "docs")
    dump.write_bytes(bz2.compress(_dump([("A", "0", False, escape(
        "One article of prose only, for three output files."))]).encode("utf-8")))
    result = warm_processes.run(command, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    sizes = [os.path.getsize(tmp_path / "docs" / f"wiki-0000{i}-of-00003.txt")
             for i in range(3)]
    assert sorted(sizes)[:2] == [0, 0] and max(sizes) > 0  # empty files, all published


def test_extract_wikipedia_bad_dump(tmp_path):
    bad = tmp_path / "bad.xml.bz2"
    bad.write_bytes(b"this is not bz2")
    result = warm_processes.run(
        ["extract_wikipedia.py", f"--input_file={bad}",
         f"--output_dir={tmp_path / 'o'}"], cwd=ROOT)
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
    result = warm_processes.run(
        ["extract_bookcorpus.py", f"--input_dir={books}",
         f"--output_dir={out}", "--num_output_files=1", "--num_workers=1"], cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "1 empty books skipped" in result.stderr and "1 bytes that were not UTF-8" in \
        result.stderr
    assert os.listdir(out) == ["books-00000-of-00001.txt"] and (tmp_path / "out.log").exists()
    docs = (out / "books-00000-of-00001.txt").read_text().strip().split("\n\n")
    assert docs == ["Chapter One\nIt was a dark night.\nThe rain fell.\nShe said: \"Go home.\""
                    "\nHe went.", "Another book.\nWith a bad byte here."]


# WikiText as released (hand-written in its layout): a blank line around every line, an
# article's title "= T =", a section's "= = S = =", paragraphs of tokenized sentences.
WIKITEXT = """ 
 = Homarus gammarus = 
 
 Homarus gammarus is a lobster from the Atlantic Ocean . It grows to 60 cm ( 24 in ) . 
 
 = = Description = = 
 
 It is blue , not red @-@ brown . 
 
 = Second article = 
 
 A short text . 
"""


def test_extract_wikitext_makes_an_article_a_document_of_sentences(tmp_path):
    """pretrain_from_text.py would read the release as six one-line documents; here the
    two articles are two documents, the section heading dropped, sentences one a line."""
    source = tmp_path / "wiki.valid.tokens"
    source.write_text(WIKITEXT, encoding="utf-8")
    out = tmp_path / "docs"
    command = ["extract_wikitext.py", f"--input_file={source}",
               f"--output_dir={out}"]
    result = warm_processes.run(command, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Wrote 2 articles, 4 sentences to 1 file" in result.stderr
    assert os.listdir(out) == ["wikitext-00000-of-00001.txt"]
    assert (out / "wikitext-00000-of-00001.txt").read_text(encoding="utf-8") == (
        "Homarus gammarus is a lobster from the Atlantic Ocean .\n"
        "It grows to 60 cm ( 24 in ) .\nIt is blue , not red @-@ brown .\n\n"
        "A short text .\n\n")

    plain = tmp_path / "sentences.txt"
    plain.write_text("One sentence a line.\nAnother.\n\nA second document.\n")
    result = warm_processes.run(command[:2] + [f"--input_file={plain}",
                                               f"--output_dir={tmp_path / 'o2'}"], cwd=ROOT)
    assert result.returncode == 1
    assert "sentences.txt: no article title" in result.stderr, result.stderr[-2000:]
    assert not os.path.exists(tmp_path / "o2") or not os.listdir(tmp_path / "o2")


@pytest.mark.parametrize("code", ["en", "eng", "zh-yue", "pt-BR", "be-x-old"])
def test_language_codes_pass(code):
    check_language(code)


def test_a_language_that_is_not_a_code_is_refused_before_any_work(tmp_path):
    """sentencex applies general rules for any code it has none for, "english" included:
    without the check, a typo would split with the wrong rules and say nothing."""
    for code in ("english", "en_US", "", "e"):
        with pytest.raises(ValueError, match="is not a language code"):
            check_language(code, "--split_sentences")
    source = tmp_path / "wiki.valid.tokens"
    source.write_text(WIKITEXT, encoding="utf-8")
    result = warm_processes.run(["extract_wikitext.py", f"--input_file={source}",
                                 f"--output_dir={tmp_path / 'o'}", "--language=English"],
                                cwd=ROOT)
    assert result.returncode == 1
    assert "error: --language=English is not a language code: give one such as en, de, ja " \
           "or zh-yue (ISO 639)." in result.stderr, result.stderr[-2000:]
    assert not os.path.exists(tmp_path / "o")
