"""A GLUE leaderboard submission from the runs of `run_classifier.py --do_predict`.

Pipeline position: after fine-tuning each GLUE task (each run writes its task's file:
`MRPC.tsv`, `MNLI-m.tsv`, `MNLI-mm.tsv`, and `AX.tsv` from the MNLI model) ->
`glue_submission.py` gathers them from the runs' output folders, checks each one against
the leaderboard's format (the header, the task's labels or scores, the official test set's
row count) and writes the zip the leaderboard takes (the files at its top level).
"""

import os
import zipfile

from common import file_io

# The leaderboard's file names, each task's answers (None: a score) and test-set rows.
TASKS = {
    "CoLA": ({"0", "1"}, 1063), "SST-2": ({"0", "1"}, 1821), "MRPC": ({"0", "1"}, 1725),
    "STS-B": (None, 1379), "QQP": ({"0", "1"}, 390965),
    "MNLI-m": ({"entailment", "neutral", "contradiction"}, 9796),
    "MNLI-mm": ({"entailment", "neutral", "contradiction"}, 9847),
    "QNLI": ({"entailment", "not_entailment"}, 5463),
    "RTE": ({"entailment", "not_entailment"}, 3000), "WNLI": ({"0", "1"}, 146),
    "AX": ({"entailment", "neutral", "contradiction"}, 1104),
}


# The file a run writes for the leaderboard, by `run_classifier.py --task_name`
# (lower-cased); MNLI's mismatched and diagnostic test splits write their own.
FILE_OF_TASK = {"cola": "CoLA", "sst-2": "SST-2", "sst2": "SST-2", "mrpc": "MRPC",
                "sts-b": "STS-B", "stsb": "STS-B", "qqp": "QQP", "mnli": "MNLI-m",
                "qnli": "QNLI", "rte": "RTE", "wnli": "WNLI"}
FILE_OF_SPLIT = {"_mismatched": "MNLI-mm", "_ax": "AX"}


def leaderboard_file(task_name, split_suffix=""):
    """The leaderboard's name (a key of TASKS) for the test split `split_suffix` ("",
    "_mismatched", "_ax") of `task_name`; None for a task the leaderboard does not take."""
    name = FILE_OF_TASK.get(task_name.lower())
    return FILE_OF_SPLIT.get(split_suffix, name) if name else None


class SubmissionError(ValueError):
    """A file that the leaderboard would refuse, or two runs with the same task."""


def collect(run_dirs):
    """{task: path} of the leaderboard files found in the runs' output folders."""
    found = {}
    for folder in run_dirs:
        if not os.path.isdir(folder):
            raise SubmissionError(f"{folder}: not a folder (a run_classifier.py "
                                  f"--output_dir is expected).")
        for task in TASKS:
            path = os.path.join(folder, f"{task}.tsv")
            if os.path.exists(path):
                if task in found:
                    raise SubmissionError(f"{task}.tsv is in both {found[task]} and {path}: "
                                          f"give one run per task.")
                found[task] = path
    if not found:
        raise SubmissionError(f"no GLUE submission file ({', '.join(TASKS)}: <task>.tsv) in "
                              f"{', '.join(run_dirs)}; run run_classifier.py with "
                              f"--do_predict on the GLUE tasks first.")
    return found


def check(task, path):
    """Raises `SubmissionError` naming the file and line the leaderboard would refuse;
    returns (rows, a note when the row count is not the official test set's)."""
    answers, official_rows = TASKS[task]
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if not lines or lines[0] != "index\tprediction":
        raise SubmissionError(f"{path}:1: the header must be 'index<TAB>prediction'.")
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != 2:
            raise SubmissionError(f"{path}:{number}: {len(fields)} fields, expected 2.")
        value = fields[1]
        if answers is None:
            try:
                float(value)
            except ValueError:
                raise SubmissionError(f"{path}:{number}: {value!r} is not a score.") from None
        elif value not in answers:
            raise SubmissionError(f"{path}:{number}: {value!r} is not one of "
                                  f"{sorted(answers)}.")
    rows = len(lines) - 1
    note = None if rows == official_rows else (
        f"{rows} rows, the official test set has {official_rows}")
    return rows, note


def write(files, output_file):
    """The zip of `files` ({task: path}), each as `<task>.tsv` at its top level; written
    under a temporary name and renamed."""
    with file_io.atomic_path(output_file) as tmp:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
            for task, path in sorted(files.items()):
                archive.write(path, f"{task}.tsv")
