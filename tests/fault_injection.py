"""Runs an entry point with a fault injected at the Nth call of a function: the process is
killed (SIGKILL, as a power cut or an OOM killer would), the call fails with "no space
left on device", or the process gets SIGINT (Ctrl-C) and the call goes on. For the fault
suite (tests/test_faults.py).

    python tests/fault_injection.py kill os.replace 2 -- run_classifier.py --flag=...
    python tests/fault_injection.py enospc tensorflow.io.TFRecordWriter.write 5 \
        -- create_pretraining_data.py --flag=...
    python tests/fault_injection.py kill os.replace@saved_model 2 -- ...

The fault strikes before the Nth call runs; with `@TEXT`, only calls whose first argument
contains TEXT count. The target is a dotted path to a function or a method of a class; it
is patched in this process only (spawned workers are not).
"""

import errno
import importlib
import os
import runpy
import signal
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _resolve(dotted):
    """(object holding the attribute, attribute name) for a dotted path."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            holder = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:-1]:
            holder = getattr(holder, name)
        return holder, parts[-1]
    raise ValueError(f"cannot find {dotted}")


def inject(kind, target, nth):
    target, _, match = target.partition("@")
    holder, name = _resolve(target)
    original = getattr(holder, name)
    calls = {"n": 0}

    def faulty(*args, **kwargs):
        if match and not (args and match in str(args[0])):
            return original(*args, **kwargs)
        calls["n"] += 1
        if calls["n"] == nth:
            if kind == "kill":
                sys.stdout.flush()
                sys.stderr.flush()
                os.kill(os.getpid(), signal.SIGKILL)
            if kind == "sigint":
                os.kill(os.getpid(), signal.SIGINT)
                return original(*args, **kwargs)
            raise OSError(errno.ENOSPC, "No space left on device (injected)")
        return original(*args, **kwargs)

    setattr(holder, name, faulty)


def main():
    kind, target, nth, separator, *command = sys.argv[1:]
    assert separator == "--" and kind in ("kill", "enospc", "sigint"), sys.argv
    sys.path.insert(0, ROOT)
    inject(kind, target, int(nth))
    if command[0] == "-m":
        sys.argv = [command[1]] + command[2:]
        runpy.run_module(command[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = command
        runpy.run_path(command[0], run_name="__main__")


if __name__ == "__main__":
    main()
