"""Readers for sentence(-pair) classification data: the GLUE tasks and XNLI in their
official layouts, and the user's own CSV / TSV / JSON-lines files.

Pipeline position: raw task files -> here (`InputExample`s) ->
`tasks.classification.features` (packed ids, cached TFRecords) -> the classification task.

Every reader names the file and line of a bad row: a row with too few columns, or a label
not in the task's label list (`DataError`).
"""

import csv
import dataclasses
import json
import os

csv.field_size_limit(2 ** 31 - 1)


class DataError(ValueError):
    """A data file that cannot be read as the task's layout says."""


@dataclasses.dataclass
class InputExample:
    """One example: `label` is None for unlabelled (test) data; a float for regression;
    a tuple of labels (maybe empty) for multi-label data."""
    guid: str
    text_a: str
    text_b: str = None
    label: object = None


def read_tsv(path, quotechar=None):
    """Rows of a tab-separated file (UTF-8, optional BOM), as the original's `_read_tsv`:
    no quoting by default, since GLUE text contains bare quotes."""
    if not os.path.exists(path):
        raise DataError(f"{path}: file not found.")
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            return list(csv.reader(f, delimiter="\t", quotechar=quotechar))
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 ({err}).") from err


class DataProcessor:
    """A task's files, columns and labels. Subclasses set the class attributes:

    labels: list of label strings (None for regression).
    files: {"train": name, "dev": name, "test": name} relative to the data folder.
    header: bool. The files start with a header row.
    columns: (text_a, text_b or None, label) column indexes for train/dev.
    test_columns: (text_a, text_b) for test; test_id: the id column, or None.
    """
    labels = None
    files = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
    header = True
    columns = (0, None, 1)
    test_header = True
    test_columns = (1, None)
    test_id = 0
    skip_short_rows = False
    regression = False

    def __init__(self, data_dir):
        self.data_dir = data_dir

    def get_labels(self):
        return self.labels

    def path(self, split):
        return os.path.join(self.data_dir, self.files[split])

    def splits(self):
        """The evaluation splits (MNLI has two)."""
        return ["dev"]

    def get_examples(self, split):
        path = self.path(split)
        rows = read_tsv(path)
        is_test = split.startswith("test")
        header = self.test_header if is_test else self.header
        columns = self.test_columns + (None,) if is_test else self.columns
        examples, skipped = [], 0
        needed = max(c for c in columns if c is not None and c >= 0)
        for line, row in enumerate(rows, start=1):
            if header and line == 1:
                continue
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) <= needed:
                if self.skip_short_rows:
                    skipped += 1
                    continue
                raise DataError(f"{path}:{line}: {len(row)} columns, expected at least "
                                f"{needed + 1} for {type(self).__name__[:-9]} (is this the "
                                f"official layout, tab-separated?).")
            a, b, lab = columns
            guid = f"{split}-{row[self.test_id] if is_test and self.test_id is not None else line}"
            label = None if is_test else self._label(row[lab].strip(), path, line)
            examples.append(InputExample(guid, row[a], row[b] if b is not None else None,
                                         label))
        if skipped:
            print(f"{path}: skipped {skipped} malformed rows (a known quirk of this file).")
        if not examples:
            raise DataError(f"{path}: no examples.")
        return examples

    def _label(self, value, path, line):
        if self.regression:
            try:
                return float(value)
            except ValueError:
                raise DataError(f"{path}:{line}: score {value!r} is not a number.") from None
        if value not in self.labels:
            raise DataError(f"{path}:{line}: label {value!r} is not one of {self.labels}.")
        return value


class ColaProcessor(DataProcessor):
    labels = ["0", "1"]
    header = False
    columns = (3, None, 1)


class Sst2Processor(DataProcessor):
    labels = ["0", "1"]
    columns = (0, None, 1)


class MrpcProcessor(DataProcessor):
    labels = ["0", "1"]
    columns = (3, 4, 0)
    test_columns = (3, 4)


class StsbProcessor(DataProcessor):
    regression = True
    columns = (7, 8, 9)
    test_columns = (7, 8)


class QqpProcessor(DataProcessor):
    labels = ["0", "1"]
    columns = (3, 4, 5)
    test_columns = (1, 2)
    skip_short_rows = True  # the official train.tsv has a few broken rows


class MnliProcessor(DataProcessor):
    """MNLI, and the GLUE diagnostic set (AX, predicted by the MNLI model for the
    leaderboard): `test_ax` is GLUE's `diagnostic/diagnostic.tsv` beside the MNLI folder
    (`glue_data/diagnostic/`), or `diagnostic.tsv` / `AX.tsv` in it."""
    labels = ["contradiction", "entailment", "neutral"]
    files = {"train": "train.tsv", "dev": "dev_matched.tsv",
             "dev_mismatched": "dev_mismatched.tsv", "test": "test_matched.tsv",
             "test_mismatched": "test_mismatched.tsv"}
    columns = (8, 9, -1)
    test_columns = (8, 9)
    AX_FILES = (os.path.join(os.pardir, "diagnostic", "diagnostic.tsv"), "diagnostic.tsv",
                "AX.tsv")

    def splits(self):
        return ["dev", "dev_mismatched"]

    def path(self, split):
        if split != "test_ax":
            return super().path(split)
        found = [os.path.join(self.data_dir, name) for name in self.AX_FILES
                 if os.path.exists(os.path.join(self.data_dir, name))]
        return os.path.normpath(found[0]) if found else None

    def get_examples(self, split):
        if split != "test_ax":
            return super().get_examples(split)
        path, examples = self.path(split), []
        for line, row in enumerate(read_tsv(path), start=1):
            if line == 1 or not row:
                continue
            if len(row) < 3:
                raise DataError(f"{path}:{line}: {len(row)} columns, expected index, "
                                f"sentence1 and sentence2 (GLUE's diagnostic.tsv).")
            examples.append(InputExample(f"test_ax-{row[0]}", row[1], row[2]))
        if not examples:
            raise DataError(f"{path}: no examples.")
        return examples


class QnliProcessor(DataProcessor):
    labels = ["entailment", "not_entailment"]
    columns = (1, 2, 3)
    test_columns = (1, 2)


class RteProcessor(QnliProcessor):
    pass


class WnliProcessor(DataProcessor):
    labels = ["0", "1"]
    columns = (1, 2, 3)
    test_columns = (1, 2)


class XnliProcessor(DataProcessor):
    """XNLI as the original: training data from `multinli/multinli.train.LANG.tsv`
    (machine-translated MNLI; "contradictory" read as "contradiction"), dev and test from
    `xnli.dev.tsv` / `xnli.test.tsv` filtered to `language`."""
    labels = ["contradiction", "entailment", "neutral"]

    def __init__(self, data_dir, language="zh"):
        super().__init__(data_dir)
        self.language = language
        self.files = {"train": os.path.join("multinli", f"multinli.train.{language}.tsv"),
                      "dev": "xnli.dev.tsv", "test": "xnli.test.tsv"}

    def get_examples(self, split):
        path = self.path(split)
        examples = []
        for line, row in enumerate(read_tsv(path), start=1):
            if line == 1 or not row:
                continue
            if split == "train":
                if len(row) < 3:
                    raise DataError(f"{path}:{line}: {len(row)} columns, expected 3.")
                label = "contradiction" if row[2] == "contradictory" else row[2]
                a, b = row[0], row[1]
            else:
                if len(row) < 8:
                    raise DataError(f"{path}:{line}: {len(row)} columns, expected >= 8.")
                if row[0] != self.language:
                    continue
                a, b, label = row[6], row[7], row[1]
            examples.append(InputExample(f"{split}-{line}", a, b,
                                         self._label(label, path, line)))
        if not examples:
            raise DataError(f"{path}: no examples for --xnli_language={self.language}.")
        return examples


class GenericProcessor(DataProcessor):
    """The user's own data: `train`/`dev`/`test` files with extension .tsv, .csv or
    .jsonl in the data folder (first found), a header row (CSV/TSV) or keys (JSON lines)
    naming the columns `text_a_column`, `text_b_column` (optional) and `label_column`.
    The label list is read from the training data (sorted), unless given. Each example
    is named by its `id_column` (by default a column named "id" where a row has one),
    else by its line in the file.

    `multi_label`: an example has any number of labels, none included: a list in JSON
    lines (`"labels": ["sports", "politics"]`), or in TSV/CSV the labels joined by
    `label_separator` (an empty cell: none)."""

    def __init__(self, data_dir, text_a_column="text_a", text_b_column=None,
                 label_column="label", labels=None, regression=False, id_column=None,
                 multi_label=False, label_separator=","):
        super().__init__(data_dir)
        self.text_a_column, self.text_b_column = text_a_column, text_b_column
        self.label_column = label_column
        self.id_column = id_column
        self.multi_label, self.label_separator = multi_label, label_separator
        self.regression = regression
        self.labels = list(labels) if labels else None

    def path(self, split):
        for ext in (".tsv", ".csv", ".jsonl"):
            candidate = os.path.join(self.data_dir, split + ext)
            if os.path.exists(candidate):
                return candidate
        raise DataError(f"{self.data_dir}: no {split}.tsv, {split}.csv or {split}.jsonl.")

    def _records(self, path):
        if path.endswith(".jsonl"):
            with open(path, encoding="utf-8-sig") as f:
                for line, text in enumerate(f, start=1):
                    if text.strip():
                        try:
                            yield line, json.loads(text)
                        except json.JSONDecodeError as err:
                            raise DataError(f"{path}:{line}: not JSON ({err.msg}).") from None
            return
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f, delimiter="\t" if path.endswith(".tsv") else ",")
            for line, row in enumerate(reader, start=2):
                if None in row:
                    raise DataError(f"{path}:{line}: more columns than the header.")
                yield line, row

    def get_labels(self):
        if self.labels is None and not self.regression:
            examples = self._read("train", check=False)
            values = {label for e in examples for label in e.label} if self.multi_label \
                else {str(e.label) for e in examples}
            if not values:
                raise DataError(f"{self.path('train')}: no example has a label; give the "
                                f"label list with --labels.")
            self.labels = sorted(values)
        return self.labels

    def get_examples(self, split):
        if not split.startswith("test") and not self.regression:
            self.get_labels()
        return self._read(split, check=True)

    def _read(self, split, check):
        path = self.path(split)
        is_test = split.startswith("test")
        examples = []
        for line, row in self._records(path):
            wanted = [self.text_a_column] + ([self.text_b_column] if self.text_b_column
                                             else [])
            if not is_test:
                wanted.append(self.label_column)
            if self.id_column:
                wanted.append(self.id_column)
            missing = [c for c in wanted if row.get(c) is None]
            if missing:
                raise DataError(f"{path}:{line}: no value for column(s) {missing} (columns: "
                                f"{sorted(row)}); set --text_a_column/--text_b_column/"
                                f"--label_column/--id_column.")
            label = None
            if not is_test and self.multi_label:
                label = self._label_set(row[self.label_column], path, line, check)
            elif not is_test:
                label = self._label(str(row[self.label_column]).strip(), path, line) \
                    if check else str(row[self.label_column]).strip()
            name = row.get(self.id_column or "id")
            name = line if name is None or not str(name).strip() else str(name).strip()
            examples.append(InputExample(f"{split}-{name}", str(row[self.text_a_column]),
                                         str(row[self.text_b_column]) if self.text_b_column
                                         else None, label))
        if not examples:
            raise DataError(f"{path}: no examples.")
        return examples


    def _label_set(self, value, path, line, check):
        """A multi-label example's labels (a tuple, in the file's order, each once): a
        JSON list, or a TSV/CSV cell split at `label_separator`."""
        if path.endswith(".jsonl"):
            if not isinstance(value, list) or any(isinstance(v, (list, dict)) for v in value):
                raise DataError(
                    f"{path}:{line}: label {value!r} is not a list: with --multi_label, the "
                    f"{self.label_column!r} of each line is a list of labels, e.g. "
                    f"[\"sports\", \"politics\"] ([] for none).")
            labels = [str(v).strip() for v in value]
        else:
            labels = [v.strip() for v in str(value).split(self.label_separator)]
        labels = tuple(dict.fromkeys(v for v in labels if v))
        if check:
            unknown = [v for v in labels if v not in self.labels]
            if unknown:
                raise DataError(f"{path}:{line}: label {unknown[0]!r} is not one of "
                                f"{self.labels}.")
        return labels


PROCESSORS = {"cola": ColaProcessor, "sst-2": Sst2Processor, "sst2": Sst2Processor,
              "mrpc": MrpcProcessor, "sts-b": StsbProcessor, "stsb": StsbProcessor,
              "qqp": QqpProcessor, "mnli": MnliProcessor, "qnli": QnliProcessor,
              "rte": RteProcessor, "wnli": WnliProcessor, "xnli": XnliProcessor,
              "generic": GenericProcessor}


def get_processor(task_name, data_dir, **kwargs):
    """The processor for `--task_name` (case-insensitive)."""
    key = (task_name or "").lower()
    if key not in PROCESSORS:
        raise DataError(f"--task_name={task_name!r} is not one of "
                        f"{sorted(set(PROCESSORS) - {'sst2', 'stsb'})}.")
    cls = PROCESSORS[key]
    if cls is XnliProcessor:
        return cls(data_dir, kwargs.get("language", "zh"))
    if cls is GenericProcessor:
        return cls(data_dir, **{k: v for k, v in kwargs.items() if k != "language"})
    return cls(data_dir)
