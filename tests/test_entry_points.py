"""Every tool a user runs works from any folder, by its path: the root scripts (as the
original release's) and the data tools (`data_prep/*.py`, also `python -m data_prep.X`)."""

import concurrent.futures
import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = sorted(
    [os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "*.py"))] +
    [f"data_prep/{name}.py" for name in ("extract_wikipedia", "extract_bookcorpus",
                                         "build_vocab", "create_pretraining_data",
                                         "inspect_tfrecord")])


@pytest.fixture(scope="module")
def helps(tmp_path_factory):
    """Each script's --helpshort, run by its absolute path from an unrelated folder with
    no PYTHONPATH."""
    elsewhere = str(tmp_path_factory.mktemp("elsewhere"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"

    def run(script):
        return subprocess.run([sys.executable, os.path.join(ROOT, script), "--helpshort"],
                              cwd=elsewhere, env=env, capture_output=True, text=True,
                              timeout=300)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return dict(zip(SCRIPTS, pool.map(run, SCRIPTS)))


@pytest.mark.parametrize("script", SCRIPTS)
def test_runs_by_its_path_from_another_folder(helps, script):
    result = helps[script]
    output = result.stdout + result.stderr
    # absl prints the usage and exits with 1 after --helpshort; an import that fails
    # (the packages not found from there) is a traceback instead.
    assert result.returncode in (0, 1) and "Traceback" not in output, output[-2000:]
    assert "Try --helpfull" in output, output[-2000:]


def test_the_original_releases_root_scripts_are_there():
    for name in ("run_pretraining.py", "run_classifier.py", "run_squad.py",
                 "create_pretraining_data.py", "extract_features.py"):
        assert name in SCRIPTS
