"""Entry points run as processes of their own, forked from a warm interpreter.

The end-to-end tests run scripts as a user does: `python run_classifier.py --flags`, its
own process, exit status and console. Importing TensorFlow, Keras and TensorFlow Text
costs each such process about 5 s of CPU before the script does anything, which over the
suite's many such processes was the largest part of its time.

`run(argv)` answers as `subprocess.run([python, *argv], capture_output=True, text=True)`
does (exit status, stdout, stderr, the files written), but from a process forked from
one that has imported those libraries already (`serve`: one per pytest worker, started
on first use; its own errors go to warm-server-<pid>.log in the temporary folder). The
child takes the command's environment and folder, puts the script's folder first on
`sys.path` (or the folder, for `-m module`), runs it as `__main__`, and exits as Python
would (non-daemon threads joined, `atexit` handlers run, `SystemExit`'s code as the
status, an uncaught exception's traceback on stderr and status 1).

What a fork cannot show stays with real processes: what a script prints while
TensorFlow is imported (tests/test_quiet.py), settings read when it is imported (`run`
itself falls back to `subprocess` when those differ), that a wrong flag is answered
before TensorFlow is imported (tests/test_entry_points.py), and signals sent to a pid.
"""

import atexit
import json
import os
import runpy
import select
import subprocess
import sys
import tempfile
import threading
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRELOAD = ["tensorflow", "keras", "tensorflow_text"]
IMPORT_TIME_PREFIXES = ("TF_", "TENSORFLOW_", "KERAS_", "CUDA_", "OMP_", "KMP_", "MKL_",
                        "ONEDNN_", "DNNL_", "XLA_")
_BASE_PATH = []  # the server's sys.path without its own entries (set by `serve`)
_SERVER_ENV = dict(os.environ)  # the server's, as it starts (with this module's import)


def _exit_status(code):
    """The process exit status Python gives `sys.exit(code)`."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _child(request):
    """The forked child: the command, with its streams sent to the request's files."""
    for fd, path in ((0, os.devnull), (1, request["stdout"]), (2, request["stderr"])):
        target = os.open(path, os.O_RDONLY if fd == 0 else
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    sys.stdin = open(0, encoding="utf-8", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False,
                      buffering=1)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False,
                      buffering=1)
    argv, env = request["argv"], request["env"]
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None  # found again from the command's TMPDIR, as a new process does
    os.chdir(request["cwd"])
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    status = 1
    try:
        if argv[0] == "-c":
            sys.path[:] = [""] + extra + _BASE_PATH
            sys.argv = ["-c"] + argv[2:]
            namespace = {"__name__": "__main__", "__builtins__": __builtins__}
            exec(compile(argv[1], "<string>", "exec"), namespace)  # noqa: S102
        elif argv[0] == "-m":
            sys.path[:] = [os.getcwd()] + extra + _BASE_PATH
            sys.argv = [argv[1]] + argv[2:]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            script = os.path.abspath(argv[0])
            sys.path[:] = [os.path.dirname(script)] + extra + _BASE_PATH
            sys.argv = [script] + argv[1:]
            runpy.run_path(script, run_name="__main__")
        status = 0
    except SystemExit as exit_:
        status = _exit_status(exit_.code)
    except BaseException:  # noqa: B902 - as the interpreter does: print it, status 1
        traceback.print_exc()
    finally:
        try:
            threading._shutdown()  # noqa: SLF001 - what the interpreter does at exit
            atexit._run_exitfuncs()  # noqa: SLF001
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)


def serve():
    """The warm interpreter: imports PRELOAD, then forks a child per request line on
    stdin and answers `started <id> <pid>` and `ended <id> <status>` on stdout. One
    thread, so that nothing holds a lock when it forks."""
    global _BASE_PATH
    ours = set(os.environ.get("PYTHONPATH", "").split(os.pathsep)) | {""}
    _BASE_PATH = [p for p in sys.path[1:] if p not in ours]  # an interpreter's own
    for name in PRELOAD:
        __import__(name)
    requests = sys.stdin.fileno()  # read raw: a buffered reader would hide lines from select
    answers = sys.stdout
    children = {}
    pending = b""
    open_input = True
    while open_input or children:
        ready, _, _ = select.select([requests] if open_input else [], [], [], 0.05)
        if ready:
            chunk = os.read(requests, 1 << 16)
            open_input = bool(chunk)
            pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            request = json.loads(line)
            pid = os.fork()
            if pid == 0:
                _child(request)
            children[pid] = request["id"]
            answers.write(f"started {request['id']} {pid}\n")
            answers.flush()
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            answers.write(f"ended {children.pop(pid)} {os.waitstatus_to_exitcode(status)}\n")
            answers.flush()


class _Server:
    """The client side: the server process, and a thread that reads its answers."""

    def __init__(self):
        # Beside the commands' temporary files (the suite's TMPDIR when it set one).
        self.log = os.path.join(os.environ.get("TMPDIR") or tempfile.gettempdir(),
                                f"warm-server-{os.getpid()}.log")
        with open(self.log, "a", encoding="utf-8") as errors:
            self.process = subprocess.Popen(
                [sys.executable, "-c", "from tests.warm_processes import serve; serve()"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True,
                cwd=ROOT, env=dict(_SERVER_ENV, PYTHONPATH=ROOT))
        self.lock = threading.Lock()
        self.next_id = 0
        self.pids, self.statuses, self.events = {}, {}, {}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            kind, id_, value = line.split()
            with self.lock:
                (self.pids if kind == "started" else self.statuses)[id_] = int(value)
                if kind == "ended":
                    self.events[id_].set()
        with self.lock:  # the server is gone: nobody will answer
            for event in self.events.values():
                event.set()

    def submit(self, request):
        with self.lock:
            self.next_id += 1
            request["id"] = id_ = str(self.next_id)
            self.events[id_] = threading.Event()
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        return id_

    def wait(self, id_, timeout):
        if not self.events[id_].wait(timeout):
            pid = self.pids.get(id_)
            if pid:
                os.kill(pid, 9)
            self.events[id_].wait(30)
            return None
        if id_ not in self.statuses:
            raise RuntimeError("the warm interpreter (tests/warm_processes.py) died: see "
                               f"{self.log}")
        return self.statuses.pop(id_)


_server = None
_server_lock = threading.Lock()


def _the_server():
    global _server
    with _server_lock:
        if _server is None or _server.process.poll() is not None:
            _server = _Server()
    return _server


def _read_at_import(env):
    """The variables TensorFlow and its libraries read when they are imported."""
    return {k: v for k, v in env.items() if k.startswith(IMPORT_TIME_PREFIXES)}


def run(argv, cwd=None, env=None, timeout=600):
    """`subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=cwd,
    env=env, timeout=timeout)`, forked from the warm interpreter. `argv[0]` is a script
    (relative to `cwd`), "-m" or "-c". A command whose environment changes what is read
    when TensorFlow is imported (TF_*, OMP_*, ...) runs as a process of its own."""
    argv = [str(a) for a in argv]
    command = [sys.executable] + argv
    env = dict(os.environ if env is None else env)
    if _read_at_import(env) != _read_at_import(_SERVER_ENV):
        return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env,
                              timeout=timeout)
    with tempfile.TemporaryDirectory(prefix="warm-") as streams:
        out, err = os.path.join(streams, "stdout"), os.path.join(streams, "stderr")
        server = _the_server()
        id_ = server.submit({"argv": argv, "cwd": str(cwd or os.getcwd()), "env": env,
                             "stdout": out, "stderr": err})
        status = server.wait(id_, timeout)
        if status is None:
            raise subprocess.TimeoutExpired(command, timeout)
        with open(out, encoding="utf-8", errors="replace") as f:
            stdout = f.read()
        with open(err, encoding="utf-8", errors="replace") as f:
            stderr = f.read()
    return subprocess.CompletedProcess(command, status, stdout, stderr)
