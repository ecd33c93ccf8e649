"""Reading document files: one sentence (or paragraph) per line, a blank line between
documents, as the original `create_pretraining_data.py` reads them.

Pipeline position: text files (from `extract_wikipedia`, `extract_bookcorpus` or the user)
-> tokenized documents -> pre-training instances.
"""

import dataclasses

from common import file_io


class CorpusError(ValueError):
    """Input text that cannot be used."""


@dataclasses.dataclass
class CorpusStats:
    """What reading found, for the end-of-run summary."""
    files: int = 0
    lines: int = 0
    empty_files: list = dataclasses.field(default_factory=list)
    files_without_breaks: list = dataclasses.field(default_factory=list)
    lines_with_invalid_utf8: int = 0
    lines_without_tokens: int = 0
    documents: int = 0
    # path -> [lines with bytes that are not UTF-8, lines] (to refuse binary input)
    invalid_by_file: dict = dataclasses.field(default_factory=dict)

    def count_file(self, path, invalid, lines):
        counts = self.invalid_by_file.setdefault(path, [0, 0])
        counts[0] += invalid
        counts[1] += lines


def check_text(invalid_by_file, max_share, flag="--max_invalid_utf8_share"):
    """Raises `CorpusError` naming the first input file whose share of lines holding
    bytes that are not UTF-8 exceeds `max_share` (a binary file, or text in another
    encoding, whose bytes the original silently drops). `flag`: the command's flag that
    sets `max_share`, named in the error (None: the command has none)."""
    for path, (invalid, lines) in sorted(invalid_by_file.items()):
        if lines and invalid / lines > max_share:
            raise CorpusError(
                f"{path}: {invalid:,} of its {lines:,} lines ({invalid / lines:.0%}) hold bytes "
                f"that are not UTF-8; is it a text file in UTF-8? Convert it (e.g. iconv -f "
                f"latin1 -t utf-8)" + (f", leave it out, or raise {flag} (now {max_share})."
                                       if flag else " or leave it out."))


def expand_input_patterns(spec):
    """"a/*.txt,b.txt" -> sorted files of each comma-separated glob, in order.

    Raises:
        CorpusError: a pattern that matches no file (named).
    """
    files = []
    for pattern in [p.strip() for p in spec.split(",") if p.strip()]:
        matches = file_io.glob(pattern)
        if not matches:
            raise CorpusError(f"{pattern}: no input file matches this pattern.")
        files.extend(matches)
    if not files:
        raise CorpusError("--input_file is empty; give one or more files or globs.")
    return files


def clean_line(raw, stats):
    """One raw line (bytes) -> the stripped line, or b"" if the original sees a blank line
    (a document break).

    As the original reads: TensorFlow's `GFile.readline` drops every carriage return, not
    only a final one ("a\\rb" is "ab"), and the line is stripped as a Python `str`, so a
    line of Unicode spaces (U+3000, U+00A0, ...) or of \\x1c-\\x1f is blank. Bytes that are
    not UTF-8 are dropped here (and the line counted in `stats`), as the original's
    `convert_to_unicode` does with errors="ignore": what this returns is valid UTF-8.
    """
    if b"\r" in raw:
        raw = raw.replace(b"\r", b"")
    line = raw.strip()
    if not line:
        return line
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        stats.lines_with_invalid_utf8 += 1
        line = line.decode("utf-8", "ignore").strip().encode("utf-8")
        return line
    return line if text.strip() else b""


def iter_lines(path, stats):
    """Yields each line of `path` as `clean_line` makes it (stripped, valid UTF-8, b"" for
    a document break; lines that had invalid bytes are counted in `stats`)."""
    try:
        f = file_io.open_binary(path)
    except OSError as e:
        raise CorpusError(f"{path}: cannot read the input file ({e}).") from e
    stats.files += 1
    n_lines, breaks, invalid_before = 0, 0, stats.lines_with_invalid_utf8
    with f:
        while True:
            try:
                raw = f.readline()
            except OSError as e:
                raise CorpusError(f"{path}: cannot read the input file ({e}).") from e
            if not raw:
                break
            n_lines += 1
            line = clean_line(raw, stats)
            breaks += not line
            yield line
    stats.lines += n_lines
    stats.count_file(path, stats.lines_with_invalid_utf8 - invalid_before, n_lines)
    if n_lines == 0 or (breaks == n_lines):
        stats.empty_files.append(path)
    elif breaks == 0 and n_lines > 1:
        stats.files_without_breaks.append(path)


def read_documents(files, tokenize_batch, stats, batch_size=4096, progress=None):
    """Reads all files into documents of tokenized segments, as the original: a blank line
    starts a new document, a line that tokenizes to nothing is skipped (and is no break),
    files continue the current document, empty documents are removed.

    Args:
        files: list of paths.
        tokenize_batch: callable, list of bytes lines -> list of lists of token ids.
        stats: `CorpusStats`, updated.

    Returns:
        list of documents, each a list of segments (lists of ids).
    """
    documents = [[]]
    pending = []  # lines waiting for batch tokenization; None marks a document break

    def flush():
        texts = [line for line in pending if line is not None]
        ids = iter(tokenize_batch(texts)) if texts else iter(())
        for line in pending:
            if line is None:
                documents.append([])
                continue
            tokens = next(ids)
            if tokens:
                documents[-1].append(tokens)
            else:
                stats.lines_without_tokens += 1
        if progress is not None:
            progress.update(lines=len(pending))
        pending.clear()

    for path in files:
        for line in iter_lines(path, stats):
            pending.append(line if line else None)
            if len(pending) >= batch_size:
                flush()
    flush()
    documents = [d for d in documents if d]
    stats.documents = len(documents)
    return documents


def reads_as_documents(path):
    """Whether `path` holds a blank line (as `clean_line` sees one: whitespace only)
    between two lines of text, i.e. a document break, or fewer than two lines of text
    (nothing to decide). Blank lines before the first or after the last line of text
    break nothing. A file of several lines without one holds one text per line (reviews,
    tweets, abstracts) or a single document: `--line_by_line` decides which."""
    texts, pending = 0, False
    stats = CorpusStats()
    try:
        f = file_io.open_binary(path)
    except OSError as e:
        raise CorpusError(f"{path}: cannot read the input file ({e}).") from e
    with f:
        for raw in iter(f.readline, b""):
            if clean_line(raw, stats):
                if pending:
                    return True
                texts += 1
            else:
                pending = texts > 0
    return texts < 2


def line_by_line_files(files, line_by_line=None):
    """The input files to read one text per line: all of them (`line_by_line` True), none
    (False), or, by default (None), those of several lines of text without a blank line
    between two of them (`reads_as_documents`). A list, in the order of `files`."""
    if line_by_line is not None:
        return list(files) if line_by_line else []
    return [path for path in files if not reads_as_documents(path)]


def describe_line_by_line(chosen, files, line_by_line):
    """The one line that says which files are read one text per line, when that was
    decided by their layout (`line_by_line` None); None when there is nothing to say."""
    if line_by_line is not None or not chosen:
        return None
    which = (chosen[0] if len(chosen) == 1 else
             f"{len(chosen)} of the {len(files)} input files ({chosen[0]}, ...)")
    return (f"{which}: no blank line between texts, so each line is read as one text "
            f"(--line_by_line=false reads such a file as one document).")
