"""What several benchmarks share: a GLUE SST-2 task folder holding the first rows of the
real training set and the whole dev set."""

import os
import shutil


def sst2_subset(shared_dir, work, train_examples):
    """Writes `work/data/{train,dev}.tsv`: the first `train_examples` rows of SST-2's
    train.tsv (with its header) and its whole dev.tsv. Returns (data folder, the training
    rows as [sentence, label] lists, the dev rows likewise)."""
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    source = os.path.join(shared_dir, "glue", "SST-2")
    with open(os.path.join(source, "train.tsv"), encoding="utf-8") as f:
        lines = f.readlines()[:train_examples + 1]
    with open(os.path.join(data, "train.tsv"), "w", encoding="utf-8") as f:
        f.writelines(lines)
    shutil.copy(os.path.join(source, "dev.tsv"), os.path.join(data, "dev.tsv"))
    with open(os.path.join(source, "dev.tsv"), encoding="utf-8") as f:
        dev = [line.rstrip("\n").split("\t") for line in f.readlines()[1:]]
    return data, [line.rstrip("\n").split("\t") for line in lines[1:]], dev

