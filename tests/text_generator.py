"""Seeded generator of varied text for tokenizer agreement tests: English, accented Latin,
CJK, Korean, Japanese, Cyrillic, Greek, Arabic, Thai, Devanagari, emoji, control and format
characters, every kind of whitespace, punctuation and symbols, combining marks, random
code points, very long words and empty strings."""

import os
import random

_RANGES = {
    "ascii_letters": [(0x41, 0x5A), (0x61, 0x7A)],
    "digits": [(0x30, 0x39)],
    "latin_accented": [(0xC0, 0xFF), (0x100, 0x17F), (0x180, 0x24F), (0x1E00, 0x1EFF)],
    "cjk": [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0xF900, 0xFAFF), (0x20000, 0x2A6DF),
            (0x2F800, 0x2FA1F)],
    "hangul": [(0xAC00, 0xD7A3), (0x1100, 0x11FF), (0x3130, 0x318F)],
    "kana": [(0x3040, 0x309F), (0x30A0, 0x30FF), (0xFF66, 0xFF9D)],
    "cyrillic": [(0x400, 0x4FF)],
    "greek": [(0x370, 0x3FF), (0x1F00, 0x1FFF)],
    "arabic": [(0x600, 0x6FF)],
    "thai": [(0xE00, 0xE7F)],
    "devanagari": [(0x900, 0x97F)],
    "emoji": [(0x1F300, 0x1F5FF), (0x1F600, 0x1F64F), (0x1F900, 0x1F9FF), (0x2600, 0x26FF)],
    "control": [(0x0, 0x1F), (0x7F, 0x9F), (0x200B, 0x200F), (0x2028, 0x202E),
                (0x2060, 0x2064), (0xFEFF, 0xFEFF), (0xFFFD, 0xFFFD)],
    "whitespace": [(0x20, 0x20), (0x9, 0xD), (0xA0, 0xA0), (0x1680, 0x1680),
                   (0x2000, 0x200A), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000)],
    "punctuation": [(0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E), (0xA1, 0xBF),
                    (0x2010, 0x2027), (0x3001, 0x3003), (0xFF01, 0xFF0F), (0x2E00, 0x2E4F)],
    "symbols": [(0x2100, 0x214F), (0x2190, 0x21FF), (0x2200, 0x22FF), (0x20A0, 0x20C0),
                (0x2460, 0x24FF), (0xFB00, 0xFB06)],
    "combining": [(0x300, 0x36F), (0x1AB0, 0x1AC0), (0x20D0, 0x20F0)],
    "random_bmp": [(0x20, 0xD7FF), (0xE000, 0xFFFD)],
}
_WORDS = ("the quick brown fox jumps over lazy dog BERT Transformer unaffable running "
          "naïve café résumé Straße ΟΔΟΣ İstanbul ﬁnance Ⅻ NASA e-mail don't U.S.A. "
          "3.14 $100 #hashtag @user https://example.com/a?b=c 東京 서울 Москва").split()


def _chars(rng, kind, n):
    out = []
    for _ in range(n):
        lo, hi = rng.choice(_RANGES[kind])
        cp = rng.randint(lo, hi)
        if 0xD800 <= cp <= 0xDFFF:
            cp = 0x41
        out.append(chr(cp))
    return "".join(out)


def _fragment(rng):
    kind = rng.choice(list(_RANGES) + ["word"] * 6 + ["long"])
    if kind == "word":
        w = rng.choice(_WORDS)
        return w.upper() if rng.random() < 0.2 else w
    if kind == "long":  # around the 200-character WordPiece limit
        return _chars(rng, rng.choice(["ascii_letters", "latin_accented", "cjk", "emoji"]),
                      rng.choice([199, 200, 201, 250]))
    return _chars(rng, kind, rng.randint(1, 8))


def generate(n, seed=0):
    """n strings; a few are empty or whitespace-only."""
    rng = random.Random(seed)
    texts = []
    for i in range(n):
        if i % 97 == 0:
            texts.append("")
            continue
        parts = [_fragment(rng) for _ in range(rng.randint(1, 10))]
        seps = [rng.choice([" ", " ", " ", "", "\t", "\n", "\u3000", "\u00a0"])
                for _ in parts]
        texts.append("".join(p + s for p, s in zip(parts, seps)))
    return texts


def covering_vocab(texts, basic_tokenizers, rng_seed=0, drop_share=0.03):
    """A vocabulary in which almost every word splits into pieces (so that normalisation
    differences show up as different ids, not as [UNK] on both sides): every character
    seen, alone and as "##" continuation, plus frequent words and prefixes. A small share
    of characters is left out on purpose, to exercise whole-word [UNK]."""
    rng = random.Random(rng_seed)
    words, chars = {}, set()
    for tok in basic_tokenizers:
        for text in texts:
            for w in tok.tokenize(text):
                words[w] = words.get(w, 0) + 1
                chars.update(w)
    chars = [c for c in sorted(chars) if rng.random() > drop_share]  # seeded: sorted first
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab += chars + ["##" + c for c in chars]
    frequent = sorted(words, key=lambda w: (-words[w], w))[:2000]
    vocab += frequent + [w[:3] for w in frequent if len(w) > 4] + \
        ["##" + w[-3:] for w in frequent if len(w) > 4]
    seen, unique = set(), []
    for t in vocab:
        if t.strip() == t and t and t not in seen:
            seen.add(t)
            unique.append(t)
    return unique


def write_covering_vocab(texts, folder, do_lower_case=(True, False)):
    """`covering_vocab` of `texts` for the given casings, written to `folder/vocab.txt`;
    returns its path."""
    from text.tokenization import BasicTokenizer
    vocab = covering_vocab(texts, [BasicTokenizer(case) for case in do_lower_case])
    path = os.path.join(str(folder), "vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    return path
