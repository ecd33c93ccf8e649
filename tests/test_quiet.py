"""A quiet console: an entry point run without TF_CPP_MIN_LOG_LEVEL shows its own lines
only; TensorFlow's C++ start-up lines and its INFO lines go to output_dir/log.txt. With
TF_CPP_MIN_LOG_LEVEL set, the user's level stands: at 0 every line shows, at 1 or more
the start-up lines (written before TensorFlow reads the level) are still kept off."""

import os
import re
import subprocess
import sys

from tests.startup_lines import tensorflow_startup_messages
from tests.test_faults import classifier, world  # noqa: F401 (world is a fixture)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ABSL_LINE = re.compile(r"^[IWEF]\d{4} [\d:.]+ +\d+ ([\w.]+):\d+\]")


def _project_files():
    return {name for _, _, files in os.walk(ROOT) if ".venv" not in _
            for name in files if name.endswith(".py")}


def test_console_holds_the_scripts_own_lines(world, tmp_path):  # noqa: F811
    out = tmp_path / "out"
    argv = classifier(world, out, export_dir=tmp_path / "export")
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = ROOT
    result = subprocess.run([sys.executable, os.path.join(ROOT, argv[0])] +
                            [str(a) for a in argv[1:]], capture_output=True, text=True,
                            env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    console = result.stderr + result.stdout
    assert "I0000" not in console and "absl::InitializeLog" not in console
    assert "INFO:tensorflow" not in console
    ours = _project_files()
    for line in console.splitlines():
        match = ABSL_LINE.match(line)
        if match:
            assert match.group(1) in ours, line  # a library's log line on the console
    log = (out / "log.txt").read_text()
    for message in tensorflow_startup_messages():  # the start-up lines: kept, not shown
        assert message in log and message not in console, message
    assert "step 3/3" in log and "Exported a SavedModel" in log
    assert "Assets written to" in log  # a TensorFlow INFO line: in the file only
    assert "Assets written to" not in console


def test_a_users_level_is_kept_and_its_start_up_lines_follow_it():
    """TF_CPP_MIN_LOG_LEVEL=3, the usual way to silence TensorFlow: the start-up lines
    it writes before reading the level stay off the console too; at 0, they show."""
    messages = tensorflow_startup_messages()
    code = ("import os; from common import quiet; quiet.quiet_tensorflow_start(); "
            "import tensorflow; print(os.environ['TF_CPP_MIN_LOG_LEVEL'])")
    for level in ("3", "0"):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=level, PYTHONPATH=ROOT)
        env.pop("BERT_TF2_QUIET_START", None)
        result = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                text=True, env=env, timeout=300, cwd=ROOT)
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout.strip() == level  # the user's level, kept
        shown = [m for m in messages if m in result.stderr]
        assert shown == (list(messages) if level == "0" else []), (level, result.stderr)
