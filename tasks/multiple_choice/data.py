"""Multiple-choice data: SWAG's release CSVs, and JSON lines for the user's own sets.

Pipeline position: the files in `--data_dir` -> here (`Example`s) -> `.features` (one
packed sequence per choice) -> the multiple-choice task.

Layouts (`--data_format`):
  * swag: `train.csv`, `val.csv`, `test.csv` of the SWAG release (Zellers et al. 2018),
    columns `video-id, fold-ind, startphrase, sent1, sent2, gold-source, ending0..ending3,
    label` (the first, unnamed column is a row index; `test.csv` has no labels). As in the
    paper and Hugging Face's `run_swag`, the first segment of each choice is `sent1` and
    the second `sent2 + " " + ending_i`.
  * jsonl: `train.jsonl`, `dev.jsonl` (or `val.jsonl`), `test.jsonl`, one example per
    line: `{"context": str, "question": str (optional), "choices": [str, ...],
    "label": int (the index of the right choice; absent in test), "id": (optional)}`.
    The first segment is the context, the second `question + " " + choice` (the choice
    alone without a question). Every example of a file has the same number of choices.
  * auto (the default): swag when the folder has `train.csv`, `val.csv` or `test.csv`,
    otherwise jsonl.
"""

import csv
import dataclasses
import json
import os
from typing import Optional

csv.field_size_limit(2 ** 31 - 1)

DATA_FORMATS = ("auto", "swag", "jsonl")
SWAG_ENDINGS = ("ending0", "ending1", "ending2", "ending3")
SWAG_COLUMNS = ("sent1", "sent2") + SWAG_ENDINGS
_FILES = {"swag": {"train": ("train.csv",), "dev": ("val.csv", "dev.csv"),
                   "test": ("test.csv",)},
          "jsonl": {"train": ("train.jsonl",), "dev": ("dev.jsonl", "val.jsonl"),
                    "test": ("test.jsonl",)}}


class DataError(ValueError):
    """A multiple-choice file that cannot be read as its layout says."""


@dataclasses.dataclass
class Example:
    """One question: the choices share `context` (and `question`); `label` is the index of
    the right choice, None in unlabelled (test) data."""
    guid: str
    context: str
    question: str
    choices: list
    label: Optional[int] = None

    def second_segments(self):
        """The second segment of each choice's sequence."""
        return [f"{self.question} {c}" if self.question else c for c in self.choices]


def data_format(data_dir, requested="auto"):
    """The layout of `data_dir`: `requested`, or for "auto" the one its files show."""
    if requested != "auto":
        return requested
    swag = [name for names in _FILES["swag"].values() for name in names]
    return "swag" if any(os.path.exists(os.path.join(data_dir, n)) for n in swag) else "jsonl"


def find_split(data_dir, split, fmt):
    """The file of `split` ("train", "dev" or "test") in `data_dir`."""
    names = _FILES[fmt][split]
    for name in names:
        path = os.path.join(data_dir, name)
        if os.path.exists(path):
            return path
    raise DataError(f"{data_dir}: no {' or '.join(names)} (the {split} data, "
                    f"--data_format={fmt}).")


def read_examples(path, fmt, labelled=True):
    """The examples of one file; `labelled` requires a label on every example."""
    try:
        examples = (_read_swag if fmt == "swag" else _read_jsonl)(path, labelled)
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 ({err}).") from None
    if not examples:
        raise DataError(f"{path}: no examples.")
    counts = {len(e.choices) for e in examples}
    if len(counts) > 1:
        first = len(examples[0].choices)
        odd = next(e for e in examples if len(e.choices) != first)
        raise DataError(f"{path}: example {odd.guid} has {len(odd.choices)} choices, the "
                        f"first one {first}: every example of a file needs the same number.")
    return examples


def _label(path, line, value, num_choices, labelled):
    if value is None or (isinstance(value, str) and not value.strip()):
        if labelled:
            raise DataError(f"{path}:{line}: no label (the index of the right choice).")
        return None
    try:
        label = int(value)
    except (TypeError, ValueError):
        raise DataError(f"{path}:{line}: label {value!r} is not a choice index "
                        f"(0-{num_choices - 1}).") from None
    if not 0 <= label < num_choices or isinstance(value, float) and value != label:
        raise DataError(f"{path}:{line}: label {value!r} is not a choice index "
                        f"(0-{num_choices - 1}).")
    return label


def _read_swag(path, labelled):
    examples = []
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in SWAG_COLUMNS + (("label",) if labelled else ())
                   if c not in (reader.fieldnames or [])]
        if missing:
            raise DataError(f"{path}: no column(s) {missing} in the header "
                            f"{reader.fieldnames}: not a SWAG file (use --data_format=jsonl "
                            f"for your own layout).")
        line = reader.line_num
        for row in reader:
            empty = [c for c in SWAG_COLUMNS if row.get(c) is None]
            if empty or None in row:
                raise DataError(f"{path}:{line + 1}: {len(row) - (None in row)} columns, "
                                f"the header has {len(reader.fieldnames)}.")
            guid = row.get("") or row.get("fold-ind") or str(len(examples))
            examples.append(Example(
                guid=f"{os.path.basename(path)}-{guid}", context=row["sent1"],
                question=row["sent2"], choices=[row[c] for c in SWAG_ENDINGS],
                label=_label(path, line + 1, row.get("label"), 4, labelled)))
            line = reader.line_num
    return examples


def _read_jsonl(path, labelled):
    examples = []
    with open(path, encoding="utf-8-sig") as f:
        for line, text in enumerate(f, start=1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as err:
                raise DataError(f"{path}:{line}: not JSON ({err.msg}).") from None
            if not isinstance(record, dict):
                raise DataError(f"{path}:{line}: a JSON object is expected, got "
                                f"{type(record).__name__}.")
            context, question = record.get("context"), record.get("question") or ""
            choices = record.get("choices")
            if not isinstance(context, str):
                raise DataError(f"{path}:{line}: field 'context' must be a string "
                                f"(fields: {sorted(record)}).")
            if not isinstance(question, str):
                raise DataError(f"{path}:{line}: field 'question' must be a string.")
            if not (isinstance(choices, list) and len(choices) >= 2 and
                    all(isinstance(c, str) for c in choices)):
                raise DataError(f"{path}:{line}: field 'choices' must be a list of at least "
                                f"two strings (fields: {sorted(record)}).")
            examples.append(Example(
                guid=str(record.get("id", f"{os.path.basename(path)}-{line}")),
                context=context, question=question, choices=choices,
                label=_label(path, line, record.get("label"), len(choices), labelled)))
    return examples
