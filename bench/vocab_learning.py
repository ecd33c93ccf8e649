"""Benchmark: the vocabulary `build_vocab` learns against Hugging Face's WordPiece trainer.

Both learn from the same words (this project's basic tokenizer: cleaning, CJK splitting,
punctuation, casing), with the same reserved tokens ([PAD], [unused0..98], [UNK], [CLS],
[SEP], [MASK]) and the same total size; then this project's `FullTokenizer` (the
original's algorithm) tokenizes held-out text of the same kind with each vocabulary.
Reported per vocabulary: tokens, share of "##" suffix pieces, [UNK] share of the held-out
tokens, pieces per held-out word (fewer is better), learning time.

Corpora:
  wikitext2  learn on WikiText-2 valid, hold out WikiText-2 test (English, uncased)
  jawiki     the jawiki sample extracted as extract_wikipedia does; even articles learn,
             odd articles are held out (Japanese, cased: uncased strips dakuten)

    pip install -r bench/requirements.txt   # tokenizers comes with transformers
    python -m bench.vocab_learning --shared_dir=../shared/data [--sizes=4000,8000,16000] \
      [--corpora=wikitext2,jawiki] [--max_unique_chars=1000]
"""

import dataclasses
import os
import tempfile
import time

from bench import harness
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def wikitext2(shared_dir):
    folder = os.path.join(shared_dir, "wikitext", "wikitext-2")

    def read(name):
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            return [line.strip() for line in f if line.strip()]
    return read("valid.txt"), read("test.txt"), True


def jawiki(shared_dir):
    from data_prep.wikipedia_dump import iter_articles
    from data_prep.wikitext_cleaning import article_sentences

    stats = {"pages": 0, "redirects": 0, "other_namespaces": 0, "dbname": ""}
    learn, held_out = [], []
    path = os.path.join(shared_dir, "wiki", "jawiki-sample.xml.bz2")
    for i, (_, text) in enumerate(iter_articles(path, stats)):
        (learn if i % 2 == 0 else held_out).extend(article_sentences((text, "ja")))
    return learn, held_out, False


def evaluate(tokens, held_out, do_lower_case):
    from text.tokenization import BasicTokenizer, FullTokenizer

    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False,
                                     encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in tokens))
    tokenizer = FullTokenizer(f.name, do_lower_case)
    os.unlink(f.name)
    words = pieces = unknown = 0
    basic = BasicTokenizer(do_lower_case)
    for line in held_out:
        words += len(basic.tokenize(line))
        out = tokenizer.tokenize(line)
        pieces += len(out)
        unknown += out.count("[UNK]")
    return {"tokens": len(tokens),
            "suffix": sum(t.startswith("##") for t in tokens) / len(tokens),
            "unk": unknown / pieces, "unk_count": unknown,
            "pieces_per_word": pieces / words}


def learn_hf(counts, size, reserved, do_lower_case, max_unique_chars):
    """Hugging Face's WordPiece trainer (BertWordPieceTokenizer's defaults: min_frequency
    2; limit_alphabet as our max_unique_chars) on the same words and counts."""
    from tokenizers import BertWordPieceTokenizer

    hf = BertWordPieceTokenizer(lowercase=do_lower_case, strip_accents=do_lower_case)

    def lines():  # each word as often as it was counted, in lines of about 1,000 words
        batch = []
        for word, count in counts.items():
            batch.extend([word] * count)
            if len(batch) >= 1000:
                yield " ".join(batch)
                batch = []
        if batch:
            yield " ".join(batch)

    hf.train_from_iterator(lines(), vocab_size=size, special_tokens=list(reserved),
                           limit_alphabet=max_unique_chars, show_progress=False)
    return [t for t, _ in sorted(hf.get_vocab().items(), key=lambda item: item[1])]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData):
    """The flags of this bench (`python -m bench.vocab_learning --help`)."""
    corpora: str = setting('wikitext2,jawiki', help="Comma-separated corpora: wikitext2, "
                           "jawiki.")
    sizes: str = setting('4000,8000,16000', help='Comma-separated vocabulary sizes to learn.')
    max_unique_chars: int = setting(1000, help="Alphabet size limit of both learners "
                                    "(build_vocab's flag; Hugging Face's limit_alphabet); 0: "
                                    "build_vocab's default, the alphabet that fits the "
                                    "corpus, for both.")


def main(settings):
    from common import quiet
    quiet.quiet_tensorflow_start()
    from text import vocabulary

    reserved = vocabulary.reserved_tokens()
    print("| corpus | size asked | learner | tokens | ## pieces | [UNK] of held-out tokens "
          "| pieces per word | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for name in settings.corpora.split(","):
        learn, held_out, do_lower_case = {"wikitext2": wikitext2, "jawiki": jawiki}[name](
            settings.shared_dir)
        counts = vocabulary.count_words(learn, do_lower_case)
        print(f"<!-- {name}: {len(learn):,} lines, {len(counts):,} distinct words to learn "
              f"from; {len(held_out):,} held-out lines -->")
        for size in [int(s) for s in settings.sizes.split(",")]:
            alphabet = settings.max_unique_chars or vocabulary.alphabet_size(counts, size)
            for learner in ("ours", "hf"):
                start = time.perf_counter()
                if learner == "ours":
                    tokens = vocabulary.learn_from_counts(counts, size,
                                                          max_unique_chars=alphabet)
                else:
                    tokens = learn_hf(counts, size, reserved, do_lower_case, alphabet)
                seconds = time.perf_counter() - start
                r = evaluate(tokens, held_out, do_lower_case)
                print(f"| {name} (alphabet {alphabet:,}) | {size:,} | {learner} | "
                      f"{r['tokens']:,} | "
                      f"{r['suffix']:.1%} | {r['unk']:.3%} ({r['unk_count']:,}) | "
                      f"{r['pieces_per_word']:.3f} | {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    harness.run(main, Settings)
