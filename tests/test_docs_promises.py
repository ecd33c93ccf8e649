"""What the docs promise a newcomer beyond their examples running: every check that
docs/errors.md lists names tests that exist, and every code example needs nothing but
what the README's first command installs (requirements.txt), or says what it needs.
"""

import ast
import glob
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCUMENTS = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs",
                                                                                "*.md")))
PROJECT = {name for name in os.listdir(ROOT) if os.path.isdir(os.path.join(ROOT, name))} | {
    os.path.splitext(name)[0] for name in os.listdir(ROOT) if name.endswith(".py")}
# Import names of requirements.txt's packages where they differ from the package's name.
IMPORT_NAMES = {"absl-py": "absl", "tensorflow-text": "tensorflow_text",
                "ai-edge-litert": "ai_edge_litert"}


def _test_names(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def _named_tests():
    """(cell text, reference) of every test docs/errors.md names in its tables."""
    text = open(os.path.join(ROOT, "docs", "errors.md"), encoding="utf-8").read()
    for row in re.findall(r"^\|(.*)\|$", text, re.M):
        cells = [c.strip() for c in row.split("|")]
        tests = cells[-1]
        if tests in ("tests", "---"):
            continue
        for part in re.split(r";\s*", tests):
            if part.startswith("faults:"):
                yield from (("faults", name.strip()) for name in
                            part[len("faults:"):].split(","))
            else:
                yield from (("test", name.strip()) for name in part.split(","))


def test_every_check_of_errors_md_names_tests_that_exist():
    from tests.test_faults import ERROR_CASES
    cases = {case[0] for case in ERROR_CASES}
    named = list(_named_tests())
    assert len(named) >= 40
    for kind, name in named:
        if kind == "faults":
            assert name in cases, f"docs/errors.md names faults case {name!r}: no such case"
            continue
        path, _, function = name.partition("::")
        assert os.path.exists(os.path.join(ROOT, path)), name
        assert function in _test_names(os.path.join(ROOT, path)), name


def _requirements():
    names = set()
    for line in open(os.path.join(ROOT, "requirements.txt"), encoding="utf-8"):
        line = line.split("#")[0].strip()
        if line:
            package = re.split(r"[=<>;\[ ]", line, 1)[0].lower()
            names.add(IMPORT_NAMES.get(package, package.replace("-", "_")))
    return names


def _examples():
    """(where, code, the text around it) of every Python block and `python -c` command."""
    for path in DOCUMENTS:
        text = open(path, encoding="utf-8").read()
        for match in re.finditer(r"```(python|bash)\n(.*?)```", text, re.S):
            where = f"{os.path.relpath(path, ROOT)}:{text[:match.start()].count(chr(10)) + 1}"
            around = text[max(0, match.start() - 600):match.end()]
            if match.group(1) == "python":
                yield where, match.group(2), around
            for code in re.findall(r"python3? -c \"([^\"]*)\"", match.group(2)):
                yield where, code.replace("; ", "\n"), around


def _imports(code):
    for line in code.splitlines():
        found = re.match(r"\s*(?:import|from)\s+([A-Za-z_][\w]*)", line)
        if found:
            yield found.group(1)


@pytest.mark.parametrize("where, code, around", list(_examples()),
                         ids=[e[0] for e in _examples()])
def test_every_example_needs_only_what_setup_installs_or_says_so(where, code, around):
    """An example importing a package that requirements.txt does not install says, in
    its block or just before it, how to install it (`pip install <name>`)."""
    known = _requirements() | PROJECT | set(sys.stdlib_module_names)
    for name in _imports(code):
        if name in known:
            continue
        package = name.replace("_", "-")
        assert re.search(rf"pip install[^\n]*\b({re.escape(package)}|{name})\b", around,
                         re.I), f"{where}: imports {name}, which the set-up does not " \
                                f"install, and does not say how to get it"
