"""The oneDNN decision (`common.onednn`): measured, cached per machine, and never over a
user's own TF_ENABLE_ONEDNN_OPTS. The probe is replaced by fixed timings here; one test
runs the real probe's child process once."""

import json
import os
import subprocess
import sys

import pytest

from common import onednn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No user setting, no earlier decision, a private cache, and TensorFlow counted as
    not imported yet (the decision must come before it)."""
    monkeypatch.delenv(onednn.ENV, raising=False)
    monkeypatch.delenv(onednn._DECIDED, raising=False)
    monkeypatch.setenv(onednn.CACHE_ENV, str(tmp_path / "onednn.json"))
    monkeypatch.setattr(onednn.platform, "system", lambda: "Linux")
    monkeypatch.setattr(onednn.platform, "machine", lambda: "x86_64")
    modules = dict(sys.modules)
    modules.pop("tensorflow", None)
    monkeypatch.setattr(onednn.sys, "modules", modules)
    monkeypatch.setattr(onednn.os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # a quiet CPU
    return tmp_path / "onednn.json"


def timings(default_ms, onednn_ms, calls):
    def fake(onednn_on):
        calls.append(onednn_on)
        return onednn_ms if onednn_on else default_ms
    return fake


def test_turned_on_when_measured_faster_and_cached(clean_env):
    calls = []
    line = onednn.decide(timings(30.0, 20.0, calls))
    assert os.environ[onednn.ENV] == "1"
    assert calls == [False, True, False, True]  # alternated
    assert "oneDNN on: 1.50x" in line
    entry = json.loads(clean_env.read_text())[onednn.fingerprint()]
    assert entry["onednn"] is True and entry["default_ms"] == 30.0
    # A second process on the same machine reads the cache: nothing measured.
    os.environ.pop(onednn.ENV)
    os.environ.pop(onednn._DECIDED)
    calls.clear()
    assert "oneDNN on" in onednn.decide(timings(99.0, 99.0, calls))
    assert calls == [] and os.environ[onednn.ENV] == "1"


def test_left_alone_when_not_faster_enough(clean_env):
    # 5% faster is below MIN_GAIN (10%): TensorFlow's default stays.
    line = onednn.decide(timings(21.0, 20.0, []))
    assert onednn.ENV not in os.environ
    assert "left at TensorFlow default: turning it on measured 1.05x" in line


def test_users_setting_wins(clean_env, monkeypatch):
    for value in ("0", "1"):
        monkeypatch.setenv(onednn.ENV, value)
        calls = []
        assert onednn.decide(timings(30.0, 10.0, calls)) is None
        assert calls == [] and os.environ[onednn.ENV] == value
        assert not clean_env.exists()


def test_too_late_once_tensorflow_is_imported(clean_env, monkeypatch):
    monkeypatch.setitem(onednn.sys.modules, "tensorflow", object())
    calls = []
    assert onednn.decide(timings(30.0, 10.0, calls)) is None
    assert calls == [] and onednn.ENV not in os.environ


def test_failed_probe_leaves_default_and_caches_nothing(clean_env):
    assert onednn.decide(timings(None, 10.0, [])) is None
    assert onednn.ENV not in os.environ and not clean_env.exists()


def test_corrupt_or_unwritable_cache_means_measuring_again(clean_env, monkeypatch):
    clean_env.write_text("{not json")
    calls = []
    onednn.decide(timings(30.0, 20.0, calls))
    assert calls and json.loads(clean_env.read_text())  # rewritten whole
    os.environ.pop(onednn.ENV)
    os.environ.pop(onednn._DECIDED)
    monkeypatch.setenv(onednn.CACHE_ENV, "/proc/no/such/dir/onednn.json")
    calls.clear()
    assert "oneDNN on" in onednn.decide(timings(30.0, 20.0, calls))
    assert calls  # measured; nothing could be cached, and nothing failed


def test_busy_machine_measures_nothing_and_caches_nothing(clean_env, monkeypatch):
    """Under load both settings time alike: no decision is taken from that."""
    monkeypatch.setattr(onednn.os, "getloadavg", lambda: (3.0 * os.cpu_count(), 0.0, 0.0))
    calls = []
    assert "CPU is busy" in onednn.decide(timings(30.0, 10.0, calls))
    assert calls == [] and onednn.ENV not in os.environ and not clean_env.exists()


def test_decision_reaches_child_processes_once(clean_env):
    """A process that decided marks its environment: its children (data workers, the
    scripts a bench runs) do not measure again, whatever was decided."""
    onednn.decide(timings(21.0, 20.0, []))  # left at the default: no TF_ENABLE_ONEDNN_OPTS
    calls = []
    assert onednn.decide(timings(30.0, 10.0, calls)) is None and calls == []


def test_real_probe_runs_both_ways(monkeypatch):
    """The probe's child process runs its BERT-shaped work and reports a time, with and
    without oneDNN (which is faster is the machine's business, not asserted)."""
    for onednn_on in (False, True):
        ms = onednn.probe(onednn_on, rounds=1)
        assert ms is not None and ms > 0


def test_entry_point_measures_once_and_logs_it(tmp_path):
    """An entry point without TF_ENABLE_ONEDNN_OPTS decides before TensorFlow starts (the
    probe replaced by a stub that says oneDNN is twice as fast), says so once on the
    console, and the run's log records it; TensorFlow then runs with oneDNN."""
    env = {k: v for k, v in os.environ.items() if k not in (onednn.ENV, onednn._DECIDED)}
    env[onednn.CACHE_ENV] = str(tmp_path / "cache.json")
    env["PYTHONPATH"] = ROOT
    script = (
        "import sys\n"
        "from common import onednn\n"
        "onednn.probe = lambda on, rounds=4: 10.0 if on else 20.0\n"
        "onednn.decide.__defaults__ = (onednn.probe, None, True)\n"
        "onednn._busy = lambda: False\n"
        "import cli\n"
        "def main(argv):\n"
        "    import tensorflow as tf\n"
        "    print('state', onednn.state())\n"
        "from absl import flags\n"
        "flags.DEFINE_string('output_dir', None, '')\n"
        "cli.run(main)\n")
    for run in range(2):
        result = subprocess.run([sys.executable, "-c", script,
                                 f"--output_dir={tmp_path / 'out'}"], env=env,
                                capture_output=True, text=True, cwd=ROOT)
        assert result.returncode == 0, result.stderr
        assert "state True" in result.stdout
        assert ("Measuring once" in result.stderr) == (run == 0), result.stderr
    log = (tmp_path / "out" / "log.txt").read_text()
    assert log.count("oneDNN on: 2.00x") == 2
