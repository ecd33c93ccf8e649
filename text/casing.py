"""Does lower-casing suit the corpus's script? The original's uncased models lower-case and
strip accents (NFD, then combining marks dropped): right for English, but in many scripts
it changes the letters themselves: Japanese dakuten (です -> てす, パ -> ハ), Devanagari
vowel signs and viramas, Thai tone marks, Cyrillic й -> и, Hangul syllables (split into
jamo). The original's README advises cased models for such languages.

Pipeline position: `build_vocab` and `create_pretraining_data` look at the first lines of
their input (`warn_about_input`) and warn, once, with counts and an example per script,
when `--do_lower_case` would change the words of a script other than Latin.
"""

import collections
import unicodedata

from absl import logging

from text.tokenization import BasicTokenizer

# Warn when lower-casing changes at least this share of a script's words (and this many).
WARN_SHARE = 0.01
WARN_MIN_WORDS = 10


def script_of(word):
    """The Unicode script of a word's first letter ("LATIN", "HIRAGANA", "CJK",
    "DEVANAGARI"...), from its character name; None for a word without letters."""
    for char in word:
        if unicodedata.category(char).startswith("L"):
            return unicodedata.name(char, "UNKNOWN").split(" ")[0]
    return None


def uncased(word):
    """The original's lower-casing of a word: `str.lower`, NFD, combining marks dropped."""
    return "".join(c for c in unicodedata.normalize("NFD", word.lower())
                   if unicodedata.category(c) != "Mn")


def lower_casing_changes(lines):
    """{script: [words, words whose letters lower-casing changes, (an example, its
    uncased form)]} of the words in `lines`, scripts other than Latin only."""
    tokenizer = BasicTokenizer(do_lower_case=False)
    found = collections.defaultdict(lambda: [0, 0, None])
    for line in lines:
        for word in tokenizer.tokenize(line):
            script = script_of(word)
            if script in (None, "LATIN"):
                continue
            entry = found[script]
            entry[0] += 1
            after = uncased(word)  # Hangul syllables come out as jamo: changed too
            if after != unicodedata.normalize("NFC", word.lower()):
                entry[1] += 1
                if entry[2] is None:
                    entry[2] = (word, after)
    return dict(found)


def _shown(word, after):
    if unicodedata.normalize("NFC", after) == unicodedata.normalize("NFC", word.lower()):
        return f"{word!r} -> {len(after)} decomposed code points"  # looks the same
    return f"{word!r} -> {after!r}"


def lower_casing_warning(lines, source):
    """The warning text when lower-casing changes the words of a script other than Latin
    (at least `WARN_SHARE` of them), or None."""
    changes = lower_casing_changes(lines)
    hit = sorted(((changed / words, script, changed, words, example)
                  for script, (words, changed, example) in changes.items()
                  if changed >= WARN_MIN_WORDS and changed / words >= WARN_SHARE),
                 reverse=True)
    if not hit:
        return None
    listed = "; ".join(f"{share:.1%} of the {script.title()} words ({changed:,} of "
                       f"{words:,}, e.g. {_shown(*example)})"
                       for share, script, changed, words, example in hit)
    return (f"{source}: --do_lower_case changes the letters of {listed}: the original's "
            f"uncased models strip accents and marks, which in these scripts are part of the "
            f"letters. The original advises cased models for them: --do_lower_case=False "
            f"(for the vocabulary, the pre-training data and every fine-tuning run).")


def warn_about_input(files, do_lower_case, sample_lines=20000):
    """Logs `lower_casing_warning` for the first `sample_lines` lines of `files` when
    `do_lower_case`; returns the warning (None when there is nothing to say)."""
    from common.file_io import first_lines
    if not do_lower_case:
        return None
    text = lower_casing_warning(first_lines(files, sample_lines),
                                f"{files[0]}{' and the other input files' if files[1:] else ''}")
    if text:
        logging.warning(text)
    return text
