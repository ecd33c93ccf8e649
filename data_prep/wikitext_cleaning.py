"""Wikitext of one article -> its plain-text paragraphs, as the BERT paper used Wikipedia:
"we extract only the text passages and ignore lists, tables, and headers".

Pipeline position: inside `extract_wikipedia` (dump -> documents).

Removed: headings, lists, tables, templates (infoboxes, citations, navigation boxes),
references, HTML comments, galleries and other extension tags, links into other
namespaces (files and their captions, categories) and interlanguage links, in the wiki's
own language (`wiki_namespaces`), behaviour switches; where one stood between two words, a
space. Italic and bold markup is read line by line as MediaWiki reads it (an unclosed "''"
ends with its line), and a paragraph ends where a list, table or heading line was. Kept:
the text of ordinary links and formatting.
Parsing is `mwparserfromhell`'s.
"""

import functools
import re

from data_prep.wiki_namespaces import NonArticleLinks

# Line-level markup of lists, definition lists, tables, headings and behaviour switches.
_DROPPED_LINE = re.compile(r"^\s*([*#:;]|\{\||\|\}|\||!|=.*=\s*$|__[A-Z]+__)")
# Behaviour switches anywhere, in any language (__NOTOC__, __目次非表示__, __БЕЗ_ОГЛАВЛЕНИЯ__).
_SWITCH = re.compile(r"__[^\W\d_](?:[^\W_]|_(?!_))*__")
# Extension and HTML tags whose whole content is not article prose.
_DROPPED_TAGS = {"ref", "references", "table", "gallery", "math", "chem", "timeline",
                 "score", "syntaxhighlight", "source", "pre", "code", "imagemap", "graph",
                 "mapframe", "templatedata", "noinclude", "includeonly", "div", "blockquote",
                 "sup", "sub", "small", "poem", "hiero", "ce", "nowiki", "br"}
_SPACES = re.compile(r"[ \t]+")
_MIN_PARAGRAPH_CHARS = 20
# Where a template or tag was taken out: a space if it stood between two words' letters or
# digits ("[[Rome]]{{•}}[[Paris]]", "15{{nbsp}}September", "one<br>two"), else nothing
# ("word.{{citation needed}}"). Not in scripts written without spaces (Thai, Lao, Myanmar,
# Khmer, kana, CJK ideographs), where a space would split a word.
_REMOVED = "\ue000"  # a private-use character: never in an article's text
_UNSPACED = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff"
_BETWEEN_WORDS = re.compile(rf"(?<=[^\W{_UNSPACED}]){_REMOVED}+(?=[^\W{_UNSPACED}])")
# Templates that stand for an apostrophe beside italic or bold markup (enwiki's {{'}} and
# {{'s}}: "''Eagle''{{'s}}"): a placeholder until the parsing is done (beside another
# apostrophe it would read as markup), then the apostrophe.
# Tags taken out of a word without a space: C<sub>2</sub>H, [[word]]<nowiki/>s.
_APOSTROPHE = "\ue001"
_PUNCTUATION_TEMPLATES = {"'": _APOSTROPHE, "'s": _APOSTROPHE + "s"}
_IN_WORD_TAGS = {"sup", "sub", "nowiki"}
# Italic and bold markup: runs of two or more apostrophes, closed by MediaWiki at the end of
# their line (an "''" left open would swallow the next paragraphs, or a <ref> tag, into one
# italic span): resolved line by line (`_plain_quotes`) before the parser sees the text.
_QUOTES = re.compile(r"'{2,}")


def _plain_quotes(line):
    """`line` without its italic and bold markup, the apostrophes it shows kept, as
    MediaWiki's Parser::doQuotes reads them: four apostrophes are one and bold, more than
    five the extra ones and bold italic; and when a line opens an odd number of both italic
    and bold, one bold (after a one-letter word, else after a longer word, else after a
    space) is an apostrophe and italic ("''Iliad'''s" shows "Iliad's" in italics)."""
    runs = list(_QUOTES.finditer(line))
    if not runs:
        return line
    shown = ["'" if len(m.group()) == 4 else "'" * max(0, len(m.group()) - 5) for m in runs]
    kinds = [3 if len(m.group()) == 4 else min(len(m.group()), 5) for m in runs]
    italics = sum(kind in (2, 5) for kind in kinds)
    bolds = sum(kind in (3, 5) for kind in kinds)
    if italics % 2 and bolds % 2:
        single = multi = space = None
        for i, (m, kind) in enumerate(zip(runs, kinds)):
            if kind != 3:
                continue
            before = line[:m.start()] + shown[i]
            x1, x2 = before[-1:], before[-2:-1]
            if x1 == " ":
                space = i if space is None else space
            elif x2 in (" ", ""):
                single = i
                break
            elif multi is None:
                multi = i
        chosen = next((i for i in (single, multi, space) if i is not None), None)
        if chosen is not None:
            shown[chosen] += "'"
    pieces, last = [], 0
    for m, text in zip(runs, shown):
        pieces += [line[last:m.start()], text]
        last = m.end()
    return "".join(pieces) + line[last:]


def _remove(wikicode, node, mark=_REMOVED):
    """Takes `node` out, leaving `mark` (see `_BETWEEN_WORDS`)."""
    try:
        wikicode.replace(node, mark)
    except ValueError:  # already gone with a removed parent
        pass


def clean_article(wikitext, links=None):
    """Returns the article's prose paragraphs (list of str, in order).

    Example: "'''Anarchism''' is a [[political philosophy]].<ref>x</ref>\\n== See also =="
    -> ["Anarchism is a political philosophy."]

    `links`: the wiki's `wiki_namespaces.NonArticleLinks` (default: English names only).
    """
    links = links or _links((), "en")
    import mwparserfromhell

    # 1. Constructs that may span lines go first, with the parser.
    code = mwparserfromhell.parse("\n".join(_plain_quotes(line)
                                             for line in wikitext.split("\n")))
    for node in code.filter_templates(recursive=False):
        _remove(code, node, _PUNCTUATION_TEMPLATES.get(str(node.name).strip(), _REMOVED))
    for node in code.filter_comments():
        _remove(code, node, "")
    for node in code.filter_tags():
        tag = str(node.tag).strip().lower()
        if tag in _DROPPED_TAGS:
            _remove(code, node, "" if tag in _IN_WORD_TAGS else _REMOVED)
    for node in code.filter_wikilinks():
        if links.match(str(node.title)):
            _remove(code, node)
    # 2. Then line-level markup (lists, tables, headings), each an empty line: a paragraph
    # ends there. 3. Then the remaining markup.
    kept_lines = ["" if _DROPPED_LINE.match(line.replace(_REMOVED, "")) else _SWITCH.sub("", line)
                  for line in str(code).split("\n")]
    text = mwparserfromhell.parse("\n".join(kept_lines)).strip_code(normalize=True,
                                                                      collapse=True)
    text = _BETWEEN_WORDS.sub(" ", text).replace(_REMOVED, "").replace(_APOSTROPHE, "'")
    text = re.sub(r"<[^<>\n]{0,200}>", " ", text)  # stray or unbalanced HTML tags
    paragraphs = []
    for block in re.split(r"\n\s*\n", text):
        block = _SPACES.sub(" ", block.replace("\n", " ")).strip()
        # Leftovers of removed constructs ("()", "; ,") and stubs are not passages.
        block = re.sub(r"\(\s*[,;]?\s*\)", "", block)
        block = re.sub(r"\s+([,.;:])", r"\1", block).strip()
        if len(block) >= _MIN_PARAGRAPH_CHARS and any(c.isalpha() for c in block):
            paragraphs.append(block)
    return paragraphs


@functools.lru_cache(maxsize=8)
def _links(namespace_names, language):
    return NonArticleLinks(namespace_names, language)


def article_sentences(args):
    """(wikitext, language[, the wiki's namespace names]) -> the article's sentences,
    paragraph after paragraph. Runs in worker processes (no TensorFlow needed here)."""
    from data_prep.sentences import split_sentences

    wikitext, language, *rest = args
    links = _links(tuple(rest[0]) if rest else (), language)
    out = []
    for paragraph in clean_article(wikitext, links):
        # Markup the parser could not balance (malformed wikitext) is not prose.
        out.extend(s for s in split_sentences(paragraph, language)
                   if not any(m in s for m in ("{{", "}}", "[[", "]]")))
    return out
