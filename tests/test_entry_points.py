"""Every tool a user runs works from any folder, by its path: the root scripts (as the
original release's) and the data tools (`data_prep/*.py`, also `python -m data_prep.X`);
their flags come from settings declared once, so a flag several tools share means the same
in each."""

import concurrent.futures
import glob
import os
import re
import subprocess
import sys

import pytest

from tests import warm_processes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Every tool is a script at the root (the data tools too), importing from the packages
# beside it with no sys.path edit.
SCRIPTS = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "*.py")))


@pytest.fixture(scope="module")
def helps(tmp_path_factory):
    """Each script's --help, run by its absolute path from an unrelated folder with no
    PYTHONPATH."""
    elsewhere = str(tmp_path_factory.mktemp("elsewhere"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"

    def run(script):
        return warm_processes.run([os.path.join(ROOT, script), "--help"],
                                  cwd=elsewhere, env=env, timeout=300)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return dict(zip(SCRIPTS, pool.map(run, SCRIPTS)))


@pytest.mark.parametrize("script", SCRIPTS)
def test_runs_by_its_path_from_another_folder(helps, script):
    result = helps[script]
    output = result.stdout + result.stderr
    # absl prints the usage and exits with 0 after --help; an import that fails (the
    # packages not found from there) is a traceback instead.
    assert result.returncode in (0, 1) and "Traceback" not in output, output[-2000:]
    assert "Try --helpfull" in output, output[-2000:]


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_lists_the_scripts_flags_and_not_abseils(helps, script):
    """absl's --help lists the main module's flags only; a script's are defined by
    `cli.flags` from its settings, and must be listed all the same."""
    listed = _flag_helps(helps[script].stdout + helps[script].stderr)
    assert len(listed) >= 2, helps[script].stdout[-2000:]
    assert "verbosity" not in listed and "logtostderr" not in listed


def _flag_helps(output):
    """{flag: its help text} from absl's --help listing."""
    helps = {}
    for match in re.finditer(r"^  --(?:\[no\])?(\w+): (.*?)(?=^  --|^\S|\Z)", output,
                             re.M | re.S):
        text = re.sub(r"\s+", " ", match.group(2))
        helps[match.group(1)] = re.sub(r" \(default: .*?\)$", "", text.strip())
    return helps


# A command line absl cannot parse, and the one line that answers it (hand-written):
# scripts with required flags run with none, a misspelt flag, a value of the wrong type.
MISSPELT = (["--max_seq_lenght=128"],
            "error: unknown flag --max_seq_lenght; did you mean --max_seq_length? "
            "(see --helpfull).")
WRONG_TYPE = (["--max_seq_length=long"],
              "error: flag --max_seq_length=long: invalid literal for int() with base 10: "
              "'long' (see --helpfull).")
PARSE_CASES = {
    ("export_huggingface.py", "no flags"): (
        [], "error: --bert_config_file, --init_checkpoint and --output_dir are required "
            "(see --helpfull)."),
    ("glue_submission.py", "no flags"): ([], "error: --run_dirs is required (see --helpfull)."),
    # export_saved_model.py: a model's export needs its config and checkpoint, the
    # preprocessor's only the vocabulary (two settings classes, one way of requiring).
    ("export_saved_model.py", "no flags"): (
        [], "error: --vocab_file, --export_dir, --bert_config_file and --init_checkpoint are "
            "required (see --helpfull)."),
    ("export_saved_model.py", "preprocessor"): (
        ["--task_type=preprocessor"],
        "error: --vocab_file and --export_dir are required (see --helpfull)."),
    ("pretrain_from_text.py", "no flags"): (
        [], "error: --input_text and --output_dir are required (see --helpfull)."),
    ("create_pretraining_data.py", "no flags"): (
        [], "error: --vocab_file, --input_file and --output_file are required "
            "(see --helpfull)."),
    ("build_vocab.py", "misspelt"): (
        ["--vocab_sise=8"],
        "error: unknown flag --vocab_sise; did you mean --vocab_size? (see --helpfull)."),
    ("run_classifier.py", "no stage"): (
        ["--task_name=SST-2"], "error: Nothing to do: give at least one of --do_train, "
        "--do_eval, --do_predict (see --helpfull)."),
    ("run_ner.py", "no stage"): (
        [], "error: Nothing to do: give at least one of --do_train, --do_eval, "
            "--do_predict, --do_eval_only (see --helpfull)."),
    ("run_classifier.py", "misspelt"): MISSPELT,
    ("extract_features.py", "misspelt"): MISSPELT,
    ("run_classifier.py", "wrong type"): WRONG_TYPE,
    ("create_pretraining_data.py", "wrong type"): WRONG_TYPE,
}


@pytest.mark.parametrize("script, case", sorted(PARSE_CASES),
                         ids=[f"{s} {c}" for s, c in sorted(PARSE_CASES)])
def test_a_command_line_absl_cannot_parse_gets_one_line(script, case, tmp_path):
    """absl's own answer is a block ("FATAL Flags parsing error:", a line per missing flag,
    "Pass --helpshort ..."); ours is the one line of every other known error."""
    argv, expected = PARSE_CASES[(script, case)]
    result = warm_processes.run([os.path.join(ROOT, script)] + argv, cwd=str(tmp_path),
                                env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
                                timeout=300)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 1, result.stderr[-2000:]
    assert lines[-1:] == [expected], result.stderr[-2000:]
    assert not [line for line in lines if "FATAL" in line or "Traceback" in line
                or line.startswith("error: ") and line != expected], result.stderr[-2000:]


SHARED = ("vocab_file", "do_lower_case", "max_seq_length", "bert_config_file",
          "init_checkpoint", "do_eval_only", "predictions_file")


def test_a_shared_flag_means_the_same_in_every_tool(helps):
    """Declared once (`common.shared_settings`), so its help is the same everywhere; a
    tool that declared its own `--vocab_file` by hand would differ."""
    seen = {name: {} for name in SHARED}
    for script, result in helps.items():
        for name, text in _flag_helps(result.stdout + result.stderr).items():
            if name in seen:
                seen[name].setdefault(text, []).append(script)
    assert len(seen["vocab_file"]) >= 1 and sum(map(len, seen["vocab_file"].values())) >= 8
    for name, texts in seen.items():
        assert len(texts) <= 1, f"--{name} has {len(texts)} meanings: {texts}"


def test_no_tool_declares_a_flag_by_hand():
    """Every flag is generated from a setting (`cli.flags.define_settings`), the training
    scripts' stage flags (`--do_train`...) aside."""
    for script in SCRIPTS:
        with open(os.path.join(ROOT, script), encoding="utf-8") as f:
            assert "flags.DEFINE" not in f.read(), script


def test_the_original_releases_root_scripts_are_there():
    for name in ("run_pretraining.py", "run_classifier.py", "run_squad.py",
                 "create_pretraining_data.py", "extract_features.py"):
        assert name in SCRIPTS


WITHOUT_TENSORFLOW = """
import runpy, sys
sys.argv = sys.argv[1:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as exit:
    print("exit", exit.code, "tensorflow imported:", "tensorflow" in sys.modules)
"""
# script: (a command line with a wrong or missing flag, what the answer says)
WRONG_FLAGS = {script: (["--do_train", "--learning_rate=-1", "--train_batch_size=0"],
                        "error: --") for script in ("run_classifier.py", "run_ner.py",
                                                    "run_squad.py", "run_swag.py",
                                                    "run_pretraining.py")}
WRONG_FLAGS["export_saved_model.py"] = (["--task_type=tagging", "--labels=O,B-PER"],
                                        "error: --vocab_file, --export_dir")
WRONG_FLAGS["export_huggingface.py"] = (["--task_type=tagging"], "error: --bert_config_file, "
                                        "--init_checkpoint and --output_dir are required")


@pytest.mark.parametrize("script", sorted(WRONG_FLAGS))
def test_a_wrong_flag_is_answered_before_tensorflow_is_imported(script, tmp_path):
    """The flags are checked against the task's settings (`tasks.<task>.config`, which
    imports no TensorFlow) before the task is imported: a typo or a missing flag costs a
    fraction of a second, not TensorFlow's start-up."""
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_TENSORFLOW, os.path.join(ROOT, script)] +
        WRONG_FLAGS[script][0],
        cwd=str(tmp_path), capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYTHONPATH=ROOT))
    assert "exit 1 tensorflow imported: False" in result.stdout, result.stdout + result.stderr
    assert WRONG_FLAGS[script][1] in result.stderr, result.stderr[-2000:]


REFUSED = {  # a flag value refused by the run itself (after its log was opened)
    "run_classifier.py": ["--task_name=nope", "--data_dir=.", "--vocab_file=v.txt",
                          "--bert_config_file=c.json", "--do_train"],
    "extract_wikitext.py": ["--input_file=in.txt", "--language=english"],
}


@pytest.mark.parametrize("script", sorted(REFUSED))
def test_a_run_refused_before_any_work_leaves_no_output_dir(script, tmp_path):
    """The log opens before the flags are checked, in a folder it makes (`<out>/log.txt`,
    or `<out>.log` beside it): a refused run takes that back, so the user's rerun meets no
    half-made --output_dir; the traceback it names is in the temporary folder. A folder
    that was already there keeps the log."""
    (tmp_path / "in.txt").write_text("Some text .\n")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    argv = [os.path.join(ROOT, script)] + REFUSED[script]
    result = warm_processes.run(argv + ["--output_dir=new/out"], cwd=str(tmp_path),
                                env=env, timeout=300)
    assert result.returncode == 1, result.stderr[-2000:]
    assert sorted(os.listdir(tmp_path)) == ["in.txt"], result.stderr[-2000:]
    log = re.search(r"\(the full traceback is in (.*)\)", result.stderr).group(1)
    assert not os.path.realpath(log).startswith(os.path.realpath(tmp_path))
    assert "Traceback" in open(log, encoding="utf-8").read()
    os.remove(log)
    if script == "run_classifier.py":
        (tmp_path / "mine").mkdir()
        again = warm_processes.run(argv + ["--output_dir=mine"], cwd=str(tmp_path),
                                   env=env, timeout=300)
        assert "(the full traceback is in mine/log.txt)" in again.stderr, again.stderr
        assert os.listdir(tmp_path / "mine") == ["log.txt"]


TRAINING_MODULES = """
import sys
import training.runner
from tasks import registry
for entry in registry.load_all().values():
    if entry.task_class is not None:
        entry.task_class
print("tensorflow_text imported:", "tensorflow_text" in sys.modules)
"""


def test_a_training_run_leaves_tensorflow_text_to_what_uses_it():
    """The runner and every task's training code import no tensorflow-text (0.2 s of each
    run's start-up): the exports and the in-graph tokenizer import it when used."""
    result = subprocess.run([sys.executable, "-c", TRAINING_MODULES], cwd=ROOT,
                            capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3"))
    assert "tensorflow_text imported: False" in result.stdout, result.stdout + result.stderr


def test_a_training_run_starts_with_the_imports_out_of_the_collectors_view(
        tmp_path, tiny_config_dict, write_vocab):
    """The training scripts freeze what their imports made (`gc.freeze`) before the run:
    the run's full garbage collection then walks the run's objects only, not TensorFlow's
    (`cli.training_run.settle_imports`)."""
    import json
    config = tmp_path / "bert_config.json"
    config.write_text(json.dumps(tiny_config_dict))
    vocab = write_vocab(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"])
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import gc, runpy, sys\n"
        "gc.unfreeze()  # a warm process's parent froze its own imports\n"
        f"sys.path.insert(0, {ROOT!r})\n"
        "from training import runner\n"
        "def started(*args, **kwargs):\n"
        "    print('frozen', gc.get_freeze_count())\n"
        "    sys.exit(0)\n"
        "runner.run = started\n"
        f"sys.argv = [{os.path.join(ROOT, 'run_classifier.py')!r}, '--task_name=SST-2',\n"
        f"            '--data_dir={tmp_path}', '--vocab_file={vocab}',\n"
        f"            '--bert_config_file={config}', '--output_dir={tmp_path / 'out'}',\n"
        "            '--do_train']\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n")
    done = warm_processes.run([str(driver)], env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert done.returncode == 0, done.stderr[-3000:]
    frozen = int(done.stdout.split("frozen ")[1].split()[0])
    assert frozen > 100_000, done.stdout  # TensorFlow's import alone makes more
