"""What every entry point shares: one error boundary around `main`.

Pipeline position: around `main` of every script (`run_*.py`, `export_saved_model.py`,
`extract_features.py`, `demo.py` and the `data_prep` tools): `cli.run(main)` in place of
`absl.app.run(main)`.

A known error (a bad input, config or flag, a file that cannot be read or written, a
diverged run) prints its message as `error: ...` and exits with status 1; its full
traceback goes to a log file named on the next line (`<output_dir>/log.txt` when the
script has an existing `--output_dir`, else a file in the system's temporary folder),
not to the console. Anything else is a bug: its traceback is printed and the last line
says so. Known errors are those the project raises on purpose (`ValueError` and its
subclasses, `RuntimeError`s such as a diverged loss, raised by the project's own code),
and I/O errors (`OSError`, TensorFlow's `OpError`) wherever they come from.
"""

import functools
import os
import re
import sys
import tempfile
import time
import traceback

from absl import app, flags, logging

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _raised_by_project(exc):
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return False
    path = os.path.abspath(frames[-1].filename)
    return path.startswith(_ROOT + os.sep) and os.sep + "site-packages" + os.sep not in path


def _is_op_error(exc):
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(exc, tf.errors.OpError)


def is_known(exc):
    """True for an error that is about the user's input or environment, not a bug."""
    if isinstance(exc, OSError) or _is_op_error(exc):
        return True
    return isinstance(exc, (ValueError, RuntimeError)) and _raised_by_project(exc)


def op_error_text(err):
    """A TensorFlow error's text without its graph decorations (`{{function_node ...}}`,
    `[[node ...]]`, `[Op:...]`), on one line."""
    text = getattr(err, "message", None) or str(err)
    text = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", text)
    text = re.sub(r"\s*\[\[[^\]]*\]\]", "", text)
    text = re.sub(r"\s*\[Op:[^\]]*\]( name: \S*)?", "", text)
    return " ".join(text.split())


def message(exc):
    """The user-facing text of a known error."""
    if _is_op_error(exc):
        return f"{type(exc).__name__}: {op_error_text(exc)}"
    if isinstance(exc, OSError) and exc.filename and str(exc.filename) not in str(exc):
        return f"{exc.filename}: {exc}"
    return str(exc) or type(exc).__name__


def _log_file(script):
    output_dir = None
    values = flags.FLAGS
    if "output_dir" in values and values.is_parsed():
        output_dir = values["output_dir"].value
    if output_dir and os.path.isdir(output_dir):
        return os.path.join(output_dir, "log.txt")
    return os.path.join(tempfile.gettempdir(), f"{script}-{os.getpid()}.log")


def _write_log(exc, script):
    """Appends the traceback to the run's log file; returns its path (None if it could
    not be written)."""
    path = _log_file(script)
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"\n{time.strftime('%Y-%m-%d %H:%M:%S')} {script} "
                    f"{' '.join(sys.argv[1:])}\n")
            f.write("".join(traceback.format_exception(exc)))
        return path
    except OSError:
        return None


def _guarded(main, argv):
    script = os.path.splitext(os.path.basename(sys.argv[0] or "bert"))[0]
    try:
        return main(argv)
    except SystemExit:
        raise
    except app.UsageError as exc:  # a flag is missing or contradicts another
        logging.flush()
        print(f"error: {str(exc).rstrip('.')} (see --helpfull).", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        logging.flush()
        print("Interrupted.", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # the boundary: everything ends here
        logging.flush()
        log = _write_log(exc, script)
        if is_known(exc):
            print(f"error: {message(exc)}", file=sys.stderr)
            if log:
                print(f"(the full traceback is in {log})", file=sys.stderr)
        else:
            traceback.print_exception(exc, file=sys.stderr)
            print(f"This is a bug in {script}, not a problem with your input: please "
                  f"report it with the traceback above"
                  + (f" (also in {log})." if log else "."), file=sys.stderr)
        sys.stderr.flush()
        sys.exit(1)


def run(main):
    """`absl.app.run(main)` inside the error boundary."""
    app.run(functools.partial(_guarded, main))
