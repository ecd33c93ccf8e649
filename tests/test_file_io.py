"""common.file_io: the one write-to-temporary-then-rename helper. A file, a folder or a
set of files appears complete or not at all, and replacing a folder never leaves neither."""

import os

import pytest

from common import file_io


def _tree(path):
    return sorted(os.listdir(path))


def test_a_file_appears_only_when_complete(tmp_path):
    target = tmp_path / "results.txt"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with file_io.atomic_output(str(target)) as f:
            f.write("half")
            raise RuntimeError("killed")
    assert target.read_text() == "old\n" and _tree(tmp_path) == ["results.txt"]
    file_io.atomic_write_text(str(target), "new\n")
    assert target.read_text() == "new\n" and _tree(tmp_path) == ["results.txt"]


def test_a_folder_is_replaced_only_by_a_complete_one(tmp_path):
    target = tmp_path / "saved_model"
    target.mkdir()
    (target / "old.pb").write_text("old")
    with pytest.raises(RuntimeError):
        with file_io.atomic_path(str(target)) as tmp:
            os.makedirs(tmp)
            (tmp_path / os.path.basename(tmp) / "new.pb").write_text("half")
            raise RuntimeError("killed")
    assert _tree(target) == ["old.pb"] and _tree(tmp_path) == ["saved_model"]
    with file_io.atomic_path(str(target)) as tmp:
        os.makedirs(tmp)
        with open(os.path.join(tmp, "new.pb"), "w") as f:
            f.write("new")
    assert _tree(target) == ["new.pb"] and _tree(tmp_path) == ["saved_model"]


def test_a_set_is_published_together_or_not_at_all(tmp_path):
    paths = [str(tmp_path / "a.tfrecord"), str(tmp_path / "sub" / "b.tfrecord")]
    with pytest.raises(RuntimeError):
        with file_io.atomic_paths(paths) as temps:
            with open(temps[0], "w") as f:
                f.write("complete")
            raise RuntimeError("the second one failed")
    assert _tree(tmp_path) == ["sub"] and _tree(tmp_path / "sub") == []
    with file_io.atomic_paths(paths) as temps:
        for tmp in temps:
            with open(tmp, "w") as f:
                f.write("x")
    assert _tree(tmp_path) == ["a.tfrecord", "sub"]
    assert _tree(tmp_path / "sub") == ["b.tfrecord"]


def test_a_checkpoint_keeps_its_old_files_until_the_new_ones_are_written(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    with pytest.raises(RuntimeError):
        with file_io.atomic_checkpoint(prefix) as tmp_prefix:
            with open(tmp_prefix + ".data-00000-of-00001", "w") as f:
                f.write("half")
            raise RuntimeError("killed")
    assert _tree(tmp_path) == []
    with file_io.atomic_checkpoint(prefix) as tmp_prefix:
        for suffix in (".data-00000-of-00001", ".index"):
            with open(tmp_prefix + suffix, "w") as f:
                f.write("x")
    assert _tree(tmp_path) == ["model.ckpt.data-00000-of-00001", "model.ckpt.index"]
