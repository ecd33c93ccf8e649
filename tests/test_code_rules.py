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
LAB = ("bench", "acceptance", "research")
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


def test_the_lab_runs_as_modules_without_editing_sys_path():
    """The lab (bench/, acceptance/, research/) is one small codebase: its scripts run as
    `python -m <home>.<name>` and import the project and each other as packages; only
    `bench.harness.import_project_from` (for the benches that time an older checkout's
    code) puts a folder on `sys.path`, and research's own tests' conftest.py (run apart,
    from any folder)."""
    for folder, _, names in (walked for home in LAB
                             for walked in os.walk(os.path.join(ROOT, home))):
        for name in names:
            if name.endswith(".py") and name not in ("harness.py", "conftest.py"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    assert not re.search(r"sys\.path\s*(\.\w|\[|\+?=)", f.read()), name


def test_no_product_module_edits_sys_path():
    """The product's packages are libraries: the tools that run by their path are the
    scripts at the root, which find the packages beside them as they are (a data_prep
    tool that was both library and script once put the root on sys.path itself)."""
    for folder, _, names in (walked for package in PACKAGES
                             for walked in os.walk(os.path.join(ROOT, package))):
        for name in names:
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    text = f.read()
                assert not re.search(r"sys\.path\s*(\.\w|\[|\+?=)", text), name
                assert "__main__" not in text, name


def test_the_layers_import_one_way():
    result = _contract(ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "2 kept, 0 broken" in result.stdout


def _copy(tmp_path):
    for package in PACKAGES + LAB:
        shutil.copytree(os.path.join(ROOT, package), tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__", "tests"))


def test_an_upward_import_breaks_the_contract(tmp_path):
    """`modeling` importing from `training` (a floor above it), added on purpose to a
    copy of the packages: the contract names the import."""
    _copy(tmp_path)
    with open(tmp_path / "modeling" / "padding.py", "a", encoding="utf-8") as f:
        f.write("\nfrom training import schedules  # noqa: E402,F401\n")
    result = _contract(tmp_path)
    assert result.returncode == 1, result.stdout[-3000:]
    assert "BROKEN" in result.stdout and "modeling.padding -> training.schedules" in \
        result.stdout


def test_a_product_import_of_the_lab_breaks_the_contract(tmp_path):
    """A task importing a research module (a metric left in the lab), added on purpose to
    a copy: the second contract names the import."""
    _copy(tmp_path)
    with open(tmp_path / "tasks" / "registry.py", "a", encoding="utf-8") as f:
        f.write("\nfrom research import plateau_escape  # noqa: E402,F401\n")
    result = _contract(tmp_path)
    assert result.returncode == 1, result.stdout[-3000:]
    assert "The product imports nothing of the lab" in result.stdout
    assert "tasks.registry -> research.plateau_escape" in result.stdout


def test_the_suite_imports_nothing_of_the_lab():
    """tests/ checks the lab's scripts from outside (their --help, as processes) and never
    imports them: the suite stands on the product alone."""
    import ast
    found = []
    for name in sorted(os.listdir(os.path.join(ROOT, "tests"))):
        if name.endswith(".py"):
            with open(os.path.join(ROOT, "tests", name), encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) \
                    else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                found += [f"{name}: {m}" for m in modules if m.split(".")[0] in LAB]
    assert not found, found
