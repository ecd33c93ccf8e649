"""The lab's three homes as one small codebase (bench/README.md): the speed benchmarks
(`bench/`), the real-data acceptance runs (`acceptance/`) and the experiments
(`research/`). Every script declares its flags once, as settings (`bench.harness.run`, the
tools' flag style), answers `--help` with them, and takes every flag its documented
command lines give it; no function is over 60 lines. The scripts themselves need real
data and peers and are not run here, and nothing here imports them (their own tests are
under `research/tests`, run apart)."""

import ast
import glob
import os
import re

import pytest

from tests import warm_processes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOMES = ("bench", "acceptance", "research")
HELPERS = {"bench.__init__", "bench.harness", "bench.hf_peers", "bench.sst2",
           "bench.process_probe", "acceptance.__init__", "research.__init__",
           "research.paper.__init__"}
# Each script as its module name: "bench.serving_speed", "research.paper.tables".
MODULES = sorted(os.path.relpath(p, ROOT)[:-3].replace(os.sep, ".")
                 for home in HOMES
                 for p in glob.glob(os.path.join(ROOT, home, "**", "*.py"), recursive=True)
                 if f"{os.sep}tests{os.sep}" not in p)
SCRIPTS = [name for name in MODULES if name not in HELPERS]
# Where lab commands are written down for a reader.
DOCUMENTS = ["README.md", *(f"{home}/README.md" for home in HOMES), "bench/RESULTS.md",
             *sorted(os.path.relpath(p, ROOT)
                     for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))]


def _tree(name):
    with open(os.path.join(ROOT, *name.split(".")) + ".py", encoding="utf-8") as f:
        return ast.parse(f.read())


@pytest.fixture(scope="module")
def helps():
    """{script: the flags its --help lists}, each run as `python -m <home>.<script>`."""
    listed = {}
    for name in SCRIPTS:
        result = warm_processes.run(["-m", name, "--help"], cwd=ROOT, timeout=300)
        assert result.returncode in (0, 1) and "Traceback" not in result.stderr, \
            (name, result.stdout[-1500:] + result.stderr[-1500:])
        listed[name] = set(re.findall(r"^  --(?:\[no\])?(\w+):", result.stdout, re.M))
    return listed


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_bench_declares_its_flags_as_settings_and_runs_through_the_harness(name):
    tree = _tree(name)
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    assert "argparse" not in imported, f"{name}: declare a Settings dataclass"
    calls = [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Call)]
    assert "harness.run(main, Settings)" in calls, name


def test_no_bench_function_is_over_60_lines():
    long = []
    for name in MODULES:
        for node in ast.walk(_tree(name)):
            if isinstance(node, ast.FunctionDef) and node.end_lineno - node.lineno >= 60:
                long.append(f"{name}:{node.name} ({node.end_lineno - node.lineno + 1})")
    assert not long, long


def test_every_bench_answers_help_with_its_flags(helps):
    for name in SCRIPTS:
        assert helps[name], f"{name} --help lists no flag"
    # A shared flag is listed where it is declared (nsp_seeds inherits paper_tables').
    assert {"shared_dir", "recipe_dir", "runs", "tables"} <= helps["research.paper.nsp_seeds"]
    assert "verbosity" not in helps["bench.pretraining_speed"]


def _documented_commands():
    """(where, script, flags) of every `python -m <home>.<script> --flag ...` line written
    in the documents and in the benches' own docstrings (continuation lines joined)."""
    sources = [(path, open(os.path.join(ROOT, path), encoding="utf-8").read())
               for path in DOCUMENTS]
    sources += [(name, ast.get_docstring(_tree(name)) or "")
                for name in SCRIPTS]
    found = []
    for where, text in sources:
        text = re.sub(r"\\\n\s*", " ", text)
        pattern = r"python -m ((?:bench|acceptance|research)\.[\w.]+)([^\n`]*)"
        for match in re.finditer(pattern, text):
            flags = re.findall(r"--(\w+)", match.group(2))
            found.append((where, match.group(1), flags))
    return found


def test_every_documented_bench_command_names_a_bench_and_its_flags(helps):
    commands = _documented_commands()
    assert len(commands) >= 25 and any(s == "research.paper.tables" for _, s, _ in commands)
    wrong = [(where, script, flag) for where, script, flags in commands
             for flag in (flags if script in helps else ["<no such bench>"])
             if flag not in helps.get(script, ())]
    assert not wrong, wrong


def test_the_results_page_stays_a_results_page():
    """bench/RESULTS.md holds the current figures, not their history: at most 300 lines,
    each summary row a line of at most 300 characters (a figure, its peer, its goal, the
    CPU, the section); what it no longer needs goes to research/RESULTS-archive.md."""
    with open(os.path.join(ROOT, "bench", "RESULTS.md"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    assert len(lines) <= 301, f"bench/RESULTS.md has {len(lines)} lines (at most 300)"
    start = lines.index("## Summary")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("## "))
    rows = [line for line in lines[start:end] if line.startswith("| ")]
    assert len(rows) >= 10
    long = [row[:60] for row in rows if len(row) > 300]
    assert not long, long
