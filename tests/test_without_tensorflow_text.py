"""Where tensorflow-text has no wheel (Windows, Intel macOS), everything but the in-graph
tokenizer works, and what needs it says so in one line. Simulated by hiding the module."""

import os

import pytest

from tests import warm_processes
from tests.test_faults import classifier, records, world  # noqa: F401 (world: a fixture)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def hidden(tmp_path_factory):
    """A folder that shadows tensorflow_text with a package that cannot be imported."""
    folder = tmp_path_factory.mktemp("no_text")
    (folder / "tensorflow_text").mkdir()
    (folder / "tensorflow_text" / "__init__.py").write_text(
        "raise ImportError(\"No module named 'tensorflow_text'\")\n")
    return str(folder)


def _run(argv, hidden):
    """`argv` forked from an interpreter that has imported TensorFlow and Keras but not
    tensorflow_text, with `hidden` first on the path."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=f"{hidden}{os.pathsep}{ROOT}")
    command = [argv[0], argv[1]] if argv[0] == "-m" else [os.path.join(ROOT, argv[0])]
    return warm_processes.run(command + argv[(2 if argv[0] == "-m" else 1):], cwd=ROOT,
                              env=env, preload=["tensorflow", "keras"])


def test_fine_tuning_works_and_the_graph_tokenizer_says_what_is_missing(world, hidden,  # noqa
                                                                        tmp_path):
    trained = _run(classifier(world, tmp_path / "a", do_eval=True), hidden)
    assert trained.returncode == 0, trained.stderr[-2000:]
    assert (tmp_path / "a" / "eval_results.txt").exists()
    for argv in (classifier(world, tmp_path / "b", export_dir=tmp_path / "export"),
                 classifier(world, tmp_path / "c", tokenizer="graph"),
                 records(world, tmp_path / "d", mode="fast")):
        refused = _run(argv, hidden)
        errors = [line for line in refused.stderr.splitlines() if line.startswith("error: ")]
        assert refused.returncode == 1 and len(errors) == 1, refused.stderr[-2000:]
        assert "needs tensorflow-text, which is not installed" in errors[0]
        assert "pip install tensorflow-text" in errors[0]
    assert not (tmp_path / "b" / "ckpt-3.index").exists()  # refused before training
    original = _run(records(world, tmp_path / "e", mode="original", tokenizer="python"),
                    hidden)
    assert original.returncode == 0, original.stderr[-2000:]
