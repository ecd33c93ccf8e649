"""WikiText as released (Merity et al., 2016: WikiText-2 and -103, `wiki.*.tokens`):
its lines -> articles, each a list of sentences.

Pipeline position: inside `extract_wikitext` (WikiText -> documents).

The release holds a paragraph per line, a blank line around each paragraph and heading,
and ` = Title = ` before each article. An article is everything from its title to the
next; section headings (` = = Section = = `) are dropped and paragraphs split into
sentences (`data_prep.sentences`). The text stays as released (tokenized: `@-@`,
`<unk>`). (Wikipedia's own markup is `wikitext_cleaning`'s.)
"""

import re

# An article's title line: "= Title =" (a section's is "= = Section = =").
TITLE = re.compile(r"^= [^=].* =$")


def articles(lines, language="en"):
    """WikiText lines (str) -> articles, each a list of sentences, in order. Lines
    before the first title make an article of their own."""
    from data_prep.sentences import split_sentences

    current = []
    for line in lines:
        line = line.strip()
        if TITLE.match(line):
            if current:
                yield current
            current = []
        elif line and not line.startswith("="):
            current.extend(split_sentences(line, language))
    if current:
        yield current
