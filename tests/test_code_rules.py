"""The code rules, checked on every run of the suite: ruff's lint (`ruff.toml`: unused
imports and names, import order, no mutable default argument) and the layer contract of
docs/repository.md (`.importlinter`, import-linter). Each check is also shown to fail on
a copy of the code given the fault it is there to catch."""

import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("common", "text", "modeling", "serving", "training", "cli", "data_prep", "tasks")
LINT_IMPORTS = os.path.join(os.path.dirname(sys.executable), "lint-imports")


def _ruff(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def _contract(folder):
    return subprocess.run([LINT_IMPORTS, "--config", os.path.join(ROOT, ".importlinter"),
                           "--no-cache"], cwd=folder, capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONPATH=str(folder)))


def test_ruff_finds_nothing():
    result = _ruff(".")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


def test_ruff_refuses_an_unused_import_and_imports_out_of_order(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import sys\nimport os\n\nprint(sys.argv)\n")
    result = _ruff("--config", os.path.join(ROOT, "ruff.toml"), str(bad), cwd=tmp_path)
    assert result.returncode == 1
    assert "F401" in result.stdout and "I001" in result.stdout


def test_the_benches_run_as_modules_without_editing_sys_path():
    """bench/ is one small codebase: its scripts run as `python -m bench.<name>` and import
    the project and each other as packages; only `bench.harness.import_project_from` (for
    the benches that time an older checkout's code) puts a folder on `sys.path`."""
    for folder, _, names in os.walk(os.path.join(ROOT, "bench")):
        for name in names:
            if name.endswith(".py") and name != "harness.py":
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    assert not re.search(r"sys\.path\s*(\.\w|\[|\+?=)", f.read()), name


def test_the_layers_import_one_way():
    result = _contract(ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "1 kept, 0 broken" in result.stdout


def test_an_upward_import_breaks_the_contract(tmp_path):
    """`modeling` importing from `training` (a floor above it), added on purpose to a
    copy of the packages: the contract names the import."""
    for package in PACKAGES:
        shutil.copytree(os.path.join(ROOT, package), tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    with open(tmp_path / "modeling" / "padding.py", "a", encoding="utf-8") as f:
        f.write("\nfrom training import schedules  # noqa: E402,F401\n")
    result = _contract(tmp_path)
    assert result.returncode == 1, result.stdout[-3000:]
    assert "BROKEN" in result.stdout and "modeling.padding -> training.schedules" in \
        result.stdout
