"""The tests' warm process runner (tests/warm_processes.py) answers as a process of its
own does: each command below is run both ways and the answers compared."""

import concurrent.futures
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests import warm_processes

SCRIPT = """
import atexit, os, sys, threading, time
print("argv", sys.argv[1:], "cwd", os.path.basename(os.getcwd()), "env", os.environ.get("X"))
print("path0", os.path.basename(sys.path[0]) or "''", "main", __name__)
print("to stderr", file=sys.stderr)
atexit.register(lambda: print("atexit ran"))
threading.Thread(target=lambda: (time.sleep(0.2), print("thread finished"))).start()
how = sys.argv[1]
if how == "exit3":
    sys.exit(3)
if how == "exit_text":
    sys.exit("stopped: a reason")
if how == "raise":
    raise KeyError("boom")
if how == "kill":
    sys.stdout.flush()
    os.kill(os.getpid(), 9)
"""


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    folder = tmp_path_factory.mktemp("scripts")
    path = folder / "probe.py"
    path.write_text(SCRIPT)
    (folder / "probe_module.py").write_text(SCRIPT)
    return folder


def _both(argv, cwd):
    env = dict(os.environ, X="from the env")
    real = subprocess.run([sys.executable] + argv, capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=60)
    warm = warm_processes.run(argv, cwd=cwd, env=env, timeout=60)
    return real, warm


@pytest.mark.parametrize("how", ["exit0", "exit3", "exit_text", "raise", "kill"])
@pytest.mark.parametrize("form", ["script", "module", "code"])
def test_answers_as_a_process_of_its_own(script, tmp_path, how, form):
    argv = {"script": [str(script / "probe.py"), how],
            "module": ["-m", "probe_module", how],
            "code": ["-c", SCRIPT, how]}[form]
    real, warm = _both(argv, cwd=script)
    assert warm.returncode == real.returncode
    assert warm.stdout == real.stdout
    # A traceback names the runner's own frames; its last line is the same.
    assert warm.stderr.splitlines()[-1:] == real.stderr.splitlines()[-1:]
    assert warm.stderr.splitlines()[0] == real.stderr.splitlines()[0] == "to stderr"


def test_tensorflow_is_imported_already_and_a_timeout_is_one(tmp_path):
    warm = warm_processes.run(["-c", "import sys; print('tensorflow' in sys.modules)"])
    assert warm.stdout == "True\n"
    with pytest.raises(subprocess.TimeoutExpired):
        warm_processes.run(["-c", "import time; time.sleep(30)"], timeout=1)


def test_settings_read_at_import_run_a_process_of_their_own():
    changed = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="1", TF_ENABLE_ONEDNN_OPTS="0")
    warm = warm_processes.run(["-c", "import sys; print('tensorflow' in sys.modules)"],
                              env=changed)
    assert warm.stdout == "False\n"


def test_many_commands_at_once_each_get_their_answer():
    """Requests that reach the server together (one read) are all started."""
    code = "import sys, time; time.sleep(0.2); print(sys.argv[1])"
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: warm_processes.run(["-c", code, str(i)], timeout=60),
                                range(24)))
    assert [r.stdout for r in results] == [f"{i}\n" for i in range(24)]


def test_requests_that_arrive_in_one_read_are_all_started(tmp_path):
    """Two request lines written at once, the input left open: both commands run (a
    buffered reader would keep the second from `select` until more input came)."""
    server = subprocess.Popen(
        [sys.executable, "-c", "from tests.warm_processes import serve; serve()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=warm_processes.ROOT,
        env=dict(os.environ, PYTHONPATH=warm_processes.ROOT))
    answers = queue.Queue()
    threading.Thread(target=lambda: [answers.put(line) for line in server.stdout],
                     daemon=True).start()
    try:
        server.stdin.write("".join(json.dumps(
            {"id": str(i), "argv": ["-c", "pass"], "cwd": str(tmp_path), "env": dict(os.environ),
             "stdout": str(tmp_path / f"{i}.out"), "stderr": str(tmp_path / f"{i}.err")}) + "\n"
            for i in range(2)))
        server.stdin.flush()
        ended = set()
        while len(ended) < 2:
            kind, id_, _ = answers.get(timeout=120).split()  # queue.Empty: one never ran
            if kind == "ended":
                ended.add(id_)
        assert ended == {"0", "1"}
    finally:
        server.kill()
        server.wait()


def test_the_commands_temporary_folder_is_its_own(tmp_path):
    """A command's TMPDIR is where its temporary files go (the server has found its own
    already), and the suite's commands do not write into the machine's /tmp."""
    code = "import tempfile; print(tempfile.gettempdir())"
    real, warm = _both(["-c", code], cwd=tmp_path)
    assert warm.stdout == real.stdout == os.environ["TMPDIR"] + "\n"
    assert os.environ["TMPDIR"] != "/tmp"
    env = dict(os.environ, TMPDIR=str(tmp_path))
    assert warm_processes.run(["-c", code], env=env).stdout == f"{tmp_path}\n"


SIGNALLED = """
import os, signal, sys, time
if sys.argv[1] == "handler":
    def stop(signum, frame):
        print("stopped by", signal.Signals(signum).name)
        sys.exit(128 + signum)
    signal.signal(signal.SIGTERM, stop)
open(sys.argv[2], "w").close()
while True:
    time.sleep(0.01)
"""


@pytest.mark.parametrize("how, signum", [("handler", signal.SIGTERM),
                                         ("none", signal.SIGTERM),
                                         ("none", signal.SIGINT),
                                         ("none", signal.SIGKILL)])
def test_a_signal_to_the_pid_acts_as_on_a_process_of_its_own(tmp_path, how, signum):
    """`start` gives the child's pid: a signal sent to it is handled by the script's
    handler, kills it, or (SIGINT) raises KeyboardInterrupt, as in a fresh interpreter."""
    answers = []
    for name, begin in (("real", lambda argv: subprocess.Popen(
            [sys.executable] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)), ("warm", warm_processes.start)):
        ready = tmp_path / f"{name}.ready"
        process = begin(["-c", SIGNALLED, how, str(ready)])
        try:
            deadline = time.time() + 60
            while not ready.exists():
                assert process.poll() is None and time.time() < deadline
                time.sleep(0.01)
            process.send_signal(signum)
            stdout, stderr = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
        answers.append((process.returncode, stdout, stderr.splitlines()[-1:]))
    assert answers[1] == answers[0]
    assert answers[0][0] == {"handler": 128 + signum}.get(how, -signum)
