"""The classification feature cache: keyed on what the features depend on, so a changed
data file is converted again and an unchanged one (copied, touched) is not."""

import os
import shutil

from tasks.classification import features
from tasks.classification.data import InputExample

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "dog", "ran"]


def _cache(tmp_path, data_file, examples):
    return features.cached_features(
        examples, str(data_file), str(tmp_path / "out"), "train", str(tmp_path / "vocab.txt"),
        True, 16, ["0", "1"], False)


def _examples(path):
    return [InputExample(str(i), line.split("\t")[0], None, line.split("\t")[1].strip())
            for i, line in enumerate(path.read_text().splitlines())]


def test_a_touched_or_copied_data_file_reuses_its_features_and_an_edited_one_does_not(
        tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    os.makedirs(tmp_path / "out")
    data = tmp_path / "train.tsv"
    data.write_text("the cat sat\t1\nthe dog ran\t0\n")
    first = _cache(tmp_path, data, _examples(data))
    assert features.count_records(first) == 2

    os.utime(data, (1, 1))  # an rsync without -t, a checkout: same bytes, new time
    assert _cache(tmp_path, data, _examples(data)) == first
    copy = tmp_path / "elsewhere.tsv"
    shutil.copy(data, copy)
    assert _cache(tmp_path, copy, _examples(copy)) == first

    data.write_text("the cat ran\t1\nthe dog sat\t0\n")  # same size, other words
    os.utime(data, (1, 1))
    edited = _cache(tmp_path, data, _examples(data))
    assert edited != first
    assert sorted(os.listdir(tmp_path / "out")) == sorted(
        os.path.basename(p) for p in (first, edited))


def test_an_edited_vocabulary_converts_again(tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    os.makedirs(tmp_path / "out")
    data = tmp_path / "train.tsv"
    data.write_text("the cat sat\t1\n")
    first = _cache(tmp_path, data, _examples(data))
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB[:-1] + ["bird"]) + "\n")
    assert _cache(tmp_path, data, _examples(data)) != first
