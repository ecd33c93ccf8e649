"""Entry points run as processes of their own, forked from a warm interpreter.

The end-to-end tests run scripts as a user does: `python run_classifier.py --flags`, its
own process, exit status and console. Importing TensorFlow, Keras and TensorFlow Text
costs each such process about 5 s of CPU before the script does anything, which over the
suite's many such processes was the largest part of its time.

`run(argv)` answers as `subprocess.run([python, *argv], capture_output=True, text=True)`
does (exit status, stdout, stderr, the files written), but from a process forked from
one that has imported those libraries already (`serve`: one per pytest worker and list
of modules to import, started on first use; its own errors go to warm-server-<pid>.log
in the temporary folder). The child takes the command's environment and folder, puts
the script's folder first on `sys.path` (or the folder, for `-m module`), runs it as
`__main__`, and exits as Python would (non-daemon threads joined, `atexit` handlers
run, `SystemExit`'s code as the status, an uncaught exception's traceback on stderr and
status 1, an uncaught KeyboardInterrupt's traceback and death by SIGINT).

`start(argv)` is the `subprocess.Popen` of the same: the forked child's `pid` (to send
it a signal, as a scheduler or a user's Ctrl-C does), `poll`, `send_signal`, `kill` and
`communicate`. A child inherits the server's signal dispositions, which are a fresh
interpreter's (the server installs no handler).

What a fork cannot show stays with real processes: what a script prints while
TensorFlow is imported (tests/test_quiet.py), settings read when it is imported (`run`
itself falls back to `subprocess` when those differ), and that a wrong flag is answered
before TensorFlow is imported (tests/test_entry_points.py).
"""

import atexit
import gc
import json
import os
import runpy
import select
import signal
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
    # Signals as a fresh interpreter has them, whatever the server inherited from the
    # thread that started it: none blocked, Ctrl-C raising KeyboardInterrupt, SIGTERM
    # killing (a full suite run once saw a warm child sit through SIGINT for 60 s).
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
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
    except KeyboardInterrupt:  # as the interpreter does: the traceback, then dies of SIGINT
        traceback.print_exc()
        status = -signal.SIGINT
    except BaseException:  # noqa: B902 - as the interpreter does: print it, status 1
        traceback.print_exc()
    finally:
        try:
            threading._shutdown()  # noqa: SLF001 - what the interpreter does at exit
            atexit._run_exitfuncs()  # noqa: SLF001
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            if status == -signal.SIGINT:
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGINT)
            os._exit(status)


def serve(preload=PRELOAD):
    """The warm interpreter: imports `preload`, then forks a child per request line on
    stdin and answers `started <id> <pid>` and `ended <id> <status>` on stdout. One
    thread, so that nothing holds a lock when it forks."""
    global _BASE_PATH
    ours = set(os.environ.get("PYTHONPATH", "").split(os.pathsep)) | {""}
    _BASE_PATH = [p for p in sys.path[1:] if p not in ours]  # an interpreter's own
    for name in preload:
        __import__(name)
    # The imports' objects out of the collector's view: a child's collections neither
    # walk them nor write to their pages (which the fork shares until written).
    gc.freeze()
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

    def __init__(self, preload):
        # Beside the commands' temporary files (the suite's TMPDIR when it set one).
        self.log = os.path.join(os.environ.get("TMPDIR") or tempfile.gettempdir(),
                                f"warm-server-{os.getpid()}.log")
        with open(self.log, "a", encoding="utf-8") as errors:
            self.process = subprocess.Popen(
                [sys.executable, "-c", "from tests.warm_processes import serve; "
                 f"serve({list(preload)!r})"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True,
                cwd=ROOT, env=dict(_SERVER_ENV, PYTHONPATH=ROOT))
        self.lock = threading.Lock()
        self.next_id = 0
        self.pids, self.statuses = {}, {}
        self.started, self.ended = {}, {}  # id -> threading.Event
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            kind, id_, value = line.split()
            with self.lock:
                if kind == "started":
                    self.pids[id_] = int(value)
                    self.started[id_].set()
                else:
                    self.statuses[id_] = int(value)
                    self.ended[id_].set()
        with self.lock:  # the server is gone: nobody will answer
            for event in list(self.started.values()) + list(self.ended.values()):
                event.set()

    def _died(self):
        return RuntimeError("the warm interpreter (tests/warm_processes.py) died: see "
                            f"{self.log}")

    def submit(self, request):
        """Starts the command; returns (its id, its pid)."""
        with self.lock:
            self.next_id += 1
            request["id"] = id_ = str(self.next_id)
            self.started[id_], self.ended[id_] = threading.Event(), threading.Event()
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        self.started[id_].wait()
        if id_ not in self.pids:
            raise self._died()
        return id_, self.pids[id_]

    def status(self, id_, timeout):
        """The command's exit status, None while it runs after `timeout` seconds."""
        if not self.ended[id_].wait(timeout):
            return None
        if id_ not in self.statuses:
            raise self._died()
        return self.statuses[id_]


class _Started:
    """`subprocess.Popen(command, stdout=PIPE, stderr=PIPE, text=True)` of a command
    forked from the warm interpreter: `pid`, `returncode`, `poll`, `wait`,
    `communicate`, `send_signal`, `kill`."""

    def __init__(self, command, argv, cwd, env, preload):
        self.args = command
        self.returncode = None
        self._streams = tempfile.TemporaryDirectory(prefix="warm-")
        self._out = os.path.join(self._streams.name, "stdout")
        self._err = os.path.join(self._streams.name, "stderr")
        self._server = _the_server(preload)
        self._id, self.pid = self._server.submit({
            "argv": argv, "cwd": str(cwd or os.getcwd()), "env": env, "stdout": self._out,
            "stderr": self._err})

    def poll(self):
        if self.returncode is None:
            self.returncode = self._server.status(self._id, 0)
        return self.returncode

    def wait(self, timeout=None):
        if self.returncode is None:
            self.returncode = self._server.status(self._id, timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def communicate(self, timeout=None):
        self.wait(timeout)
        with open(self._out, encoding="utf-8", errors="replace") as f:
            stdout = f.read()
        with open(self._err, encoding="utf-8", errors="replace") as f:
            stderr = f.read()
        self._streams.cleanup()
        return stdout, stderr

    def send_signal(self, signum):
        if self.poll() is None:  # as Popen: never a pid the system may have reused
            os.kill(self.pid, signum)

    def kill(self):
        self.send_signal(9)


_servers = {}  # preload -> _Server
_server_lock = threading.Lock()


def _the_server(preload):
    preload = tuple(preload)
    with _server_lock:
        if preload not in _servers or _servers[preload].process.poll() is not None:
            _servers[preload] = _Server(preload)
        return _servers[preload]


def _read_at_import(env):
    """The variables TensorFlow and its libraries read when they are imported (not
    TF_CONFIG: a distribution strategy reads it when it is made)."""
    return {k: v for k, v in env.items()
            if k.startswith(IMPORT_TIME_PREFIXES) and k != "TF_CONFIG"}


def start(argv, cwd=None, env=None, preload=PRELOAD):
    """`subprocess.Popen([sys.executable, *argv], stdout=PIPE, stderr=PIPE, text=True,
    cwd=cwd, env=env)`, forked from the warm interpreter (the same fallback and
    `preload` as `run`)."""
    argv = [str(a) for a in argv]
    command = [sys.executable] + argv
    env = dict(os.environ if env is None else env)
    if _read_at_import(env) != _read_at_import(_SERVER_ENV):
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=cwd, env=env)
    return _Started(command, argv, cwd, env, preload)


def run(argv, cwd=None, env=None, timeout=600, preload=PRELOAD):
    """`subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=cwd,
    env=env, timeout=timeout)`, forked from the warm interpreter. `argv[0]` is a script
    (relative to `cwd`), "-m" or "-c". A command whose environment changes what is read
    when TensorFlow is imported (TF_*, OMP_*, ...) runs as a process of its own.
    `preload`: the modules imported before the fork (one warm interpreter for each
    list), e.g. without tensorflow_text for a command that must find it missing."""
    process = start(argv, cwd, env, preload)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate(timeout=30)
        raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
