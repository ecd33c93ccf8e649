"""Sentence pairs from the user's files: GLUE's STS-B as it is released, or any TSV, CSV or
JSON-lines file whose header (or keys) names the two text columns and, for scored pairs,
the score column.

Pipeline position: the data folder (`train`, `dev`, `test` files) -> here (`Pair`s) ->
`tasks.sentence_embedding.features` (two packed sequences per pair) -> the task.

The defaults read GLUE's STS-B (`sentence1`, `sentence2`, `score`) and sentence-transformers'
pair datasets (`sentence1`, `sentence2`, `score`; `anchor`, `positive` with
`--text_a_column=anchor --text_b_column=positive`). A TSV is read as GLUE's are, without
quoting (its sentences hold bare quotes); a CSV with the usual quoting. Every refusal names
the file, the line and the column (`DataError`), before any training step.
"""

import csv
import dataclasses
import json
import math
import os

csv.field_size_limit(2 ** 31 - 1)
EXTENSIONS = (".tsv", ".csv", ".jsonl")
# The text columns of scored pairs (GLUE's STS-B, sentence-transformers' scored sets): an
# evaluation file is read with them when it has not the training file's columns.
SCORED_PAIR_TEXTS = ("sentence1", "sentence2")


class DataError(ValueError):
    """A data file that cannot be read as sentence pairs."""


@dataclasses.dataclass(frozen=True)
class Pair:
    """Two texts and, for a scored pair, the score as the file gives it (None otherwise)."""
    guid: str
    text_a: str
    text_b: str
    score: float = None


@dataclasses.dataclass(frozen=True)
class Columns:
    """Where a file's pairs are: the two text columns, the score column (None: unscored
    pairs), and an optional filter: keep the rows whose `label_column` holds
    `positive_label` (NLI's entailment pairs for in-batch negatives)."""
    text_a: str
    text_b: str
    score: str = None
    label: str = None
    positive_label: str = None


def find_split(data_dir, split):
    """The folder's `split` file (.tsv, .csv or .jsonl, first found)."""
    for extension in EXTENSIONS:
        path = os.path.join(data_dir, split + extension)
        if os.path.exists(path):
            return path
    raise DataError(f"{data_dir}: no {split}.tsv, {split}.csv or {split}.jsonl.")


def _records(path):
    """(line, {column: value}) of each row of a TSV, CSV or JSON-lines file."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            if path.endswith(".jsonl"):
                for line, text in enumerate(f, start=1):
                    if text.strip():
                        yield line, _json_object(text, path, line)
                return
            quoting = csv.QUOTE_NONE if path.endswith(".tsv") else csv.QUOTE_MINIMAL
            reader = csv.DictReader(f, delimiter="\t" if path.endswith(".tsv") else ",",
                                    quoting=quoting)
            for row in reader:
                if not any((value or "").strip() for value in row.values()):
                    continue  # a blank line
                if None in row:
                    raise DataError(f"{path}:{reader.line_num}: more columns than the "
                                    f"header.")
                yield reader.line_num, row
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 ({err}).") from None


def _json_object(text, path, line):
    try:
        record = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(f"{path}:{line}: not JSON ({err.msg}).") from None
    if not isinstance(record, dict):
        raise DataError(f"{path}:{line}: not a JSON object.")
    return record


def read_pairs(path, columns, score_range=None, fallback=None):
    """The pairs of `path`, in file order. Scores are read when `columns.score` is set and
    must lie in `score_range` (low, high) when given. `fallback`: text columns (a, b) read
    instead when the file has not `columns`' but has these (an evaluation file of scored
    pairs beside training pairs of another layout).

    Raises:
        DataError: a missing column or empty text, a score that is not a number or lies
            outside the range, or no pair at all.
    """
    pairs, header = [], None
    for line, row in _records(path):
        if header is None:
            header = sorted(row)
            if fallback and {columns.text_a, columns.text_b} - set(row) and \
                    not set(fallback) - set(row):
                columns = dataclasses.replace(columns, text_a=fallback[0],
                                              text_b=fallback[1])
        if columns.label and not _kept(row, columns, path, line, header):
            continue
        texts = [_text(row, name, path, line, header) for name in (columns.text_a,
                                                                  columns.text_b)]
        score = _score(row, columns.score, path, line, header, score_range) \
            if columns.score else None
        pairs.append(Pair(f"{line}", texts[0], texts[1], score))
    if not pairs:
        kept = f" with {columns.label} = {columns.positive_label!r}" if columns.label else ""
        raise DataError(f"{path}: no pairs{kept}.")
    return pairs


def _kept(row, columns, path, line, header):
    """Whether the row's label is the one kept (`Columns.positive_label`)."""
    if row.get(columns.label) is None:
        raise DataError(f"{path}:{line}: no column {columns.label!r} (columns: {header}); "
                        f"set --label_column.")
    return str(row[columns.label]).strip() == columns.positive_label


def _text(row, name, path, line, header):
    value = row.get(name)
    if value is None:
        raise DataError(f"{path}:{line}: no column {name!r} (columns: {header}); set "
                        f"--text_a_column and --text_b_column.")
    value = str(value)
    if not value.strip():
        raise DataError(f"{path}:{line}: the text in column {name!r} is empty; give each "
                        f"pair two texts.")
    return value


def _score(row, name, path, line, header, score_range):
    value = row.get(name)
    if value is None or not str(value).strip():
        raise DataError(f"{path}:{line}: no score in column {name!r} (columns: {header}); "
                        f"set --score_column (dev files are always scored; unscored "
                        f"training pairs train with --objective=multiple_negatives_ranking).")
    value = str(value).strip()
    try:
        score = float(value)
    except ValueError:
        raise DataError(f"{path}:{line}: score {value!r} in column {name!r} is not a "
                        f"number.") from None
    if not math.isfinite(score):
        raise DataError(f"{path}:{line}: score {value!r} in column {name!r} is not a "
                        f"finite number.")
    if score_range and not score_range[0] <= score <= score_range[1]:
        low, high = score_range
        raise DataError(f"{path}:{line}: score {value!r} lies outside [{low:g}, {high:g}]; "
                        f"set --min_score and --max_score to the scores' scale.")
    return score
