"""bench/ as one small codebase (bench/README.md): every script declares its flags once, as
settings (`bench.harness.run`, the tools' flag style), answers `--help` with them, and takes
every flag its documented command lines give it; no function is over 60 lines. The
benches themselves need real data and peers and are not run here."""

import ast
import glob
import os
import re

import pytest

from tests import warm_processes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HELPERS = {"__init__", "harness", "hf_peers", "sst2", "process_probe", "paper.__init__"}
# Each bench as its module name under bench/: "serving_speed", "paper.tables".
MODULES = sorted(os.path.relpath(p, os.path.join(ROOT, "bench"))[:-3].replace(os.sep, ".")
                 for p in glob.glob(os.path.join(ROOT, "bench", "**", "*.py"), recursive=True))
SCRIPTS = [name for name in MODULES if name not in HELPERS]
# Where bench commands are written down for a reader.
DOCUMENTS = ["README.md", "bench/README.md", "bench/RESULTS.md", *sorted(
    os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))]


def _tree(name):
    with open(os.path.join(ROOT, "bench", *name.split(".")) + ".py", encoding="utf-8") as f:
        return ast.parse(f.read())


@pytest.fixture(scope="module")
def helps():
    """{script: the flags its --help lists}, each run as `python -m bench.<script>`."""
    listed = {}
    for name in SCRIPTS:
        result = warm_processes.run(["-m", f"bench.{name}", "--help"], cwd=ROOT, timeout=300)
        assert result.returncode in (0, 1) and "Traceback" not in result.stderr, \
            (name, result.stdout[-1500:] + result.stderr[-1500:])
        listed[name] = set(re.findall(r"^  --(?:\[no\])?(\w+):", result.stdout, re.M))
    return listed


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_bench_declares_its_flags_as_settings_and_runs_through_the_harness(name):
    tree = _tree(name)
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    assert "argparse" not in imported, f"bench/{name}.py: declare a Settings dataclass"
    calls = [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Call)]
    assert "harness.run(main, Settings)" in calls, name


def test_no_bench_function_is_over_60_lines():
    long = []
    for name in MODULES:
        for node in ast.walk(_tree(name)):
            if isinstance(node, ast.FunctionDef) and node.end_lineno - node.lineno >= 60:
                long.append(f"bench/{name}.py:{node.name} ({node.end_lineno - node.lineno + 1})")
    assert not long, long


def test_every_bench_answers_help_with_its_flags(helps):
    for name in SCRIPTS:
        assert helps[name], f"bench/{name}.py --help lists no flag"
    # A shared flag is listed where it is declared (nsp_seeds inherits paper_tables').
    assert {"shared_dir", "recipe_dir", "runs", "tables"} <= helps["paper.nsp_seeds"]
    assert "verbosity" not in helps["pretraining_speed"]


def _documented_commands():
    """(where, script, flags) of every `python -m bench.<script> --flag ...` line written
    in the documents and in the benches' own docstrings (continuation lines joined)."""
    sources = [(path, open(os.path.join(ROOT, path), encoding="utf-8").read())
               for path in DOCUMENTS]
    sources += [(f"bench.{name}", ast.get_docstring(_tree(name)) or "")
                for name in SCRIPTS]
    found = []
    for where, text in sources:
        text = re.sub(r"\\\n\s*", " ", text)
        for match in re.finditer(r"python -m bench\.([\w.]+)([^\n`]*)", text):
            flags = re.findall(r"--(\w+)", match.group(2))
            found.append((where, match.group(1), flags))
    return found


def test_every_documented_bench_command_names_a_bench_and_its_flags(helps):
    commands = _documented_commands()
    assert len(commands) >= 25 and any(s == "paper.tables" for _, s, _ in commands)
    wrong = [(where, script, flag) for where, script, flags in commands
             for flag in (flags if script in helps else ["<no such bench>"])
             if flag not in helps.get(script, ())]
    assert not wrong, wrong


def test_the_task_text_source_keeps_training_sentences_without_labels(tmp_path):
    """The corpus's optional SST-2 source (task-adaptive pre-training) takes train.tsv's
    sentences only: no label, no header, nothing of dev.tsv; an unknown source is refused."""
    from bench.paper import english_corpus
    glue = tmp_path / "shared" / "glue" / "SST-2"
    glue.mkdir(parents=True)
    (glue / "train.tsv").write_text("sentence\tlabel\nhide new secretions \t0\n"
                                    "contains no wit \t0\nloves its characters \t1\n")
    (glue / "dev.tsv").write_text("sentence\tlabel\nit 's a charming journey \t1\n")
    [path] = english_corpus.sst2(str(tmp_path / "shared"), str(tmp_path), rows_per_document=2)
    with open(path, encoding="utf-8") as f:
        assert f.read() == ("hide new secretions\ncontains no wit\n\nloves its characters\n")
    with pytest.raises(SystemExit, match="task text qnli: not a source"):
        english_corpus.build(str(tmp_path / "shared"), str(tmp_path / "out"), ("qnli",))
