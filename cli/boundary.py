"""What every entry point shares: a quiet console, a full log file, and one error boundary
around `main`.

Pipeline position: imported first by every script (`run_*.py`, `export_saved_model.py`,
`extract_features.py`, `demo.py` and the `data_prep` tools), which then call
`cli.run(main)` in place of `absl.app.run(main)`. Library code does not import it.

Quiet console: TensorFlow's C++ start-up lines (written before its logging is set up, so
no threshold hides them) are kept off the console by importing TensorFlow with the
process's stderr pointed at a buffer, and TensorFlow and Keras's own INFO lines are kept
out of the console; the script's lines, and every warning, stay. Everything goes to the
run's log file, `<output_dir>/log.txt`, for scripts with an `--output_dir` (beside the
folder, `<output_dir>.log`, for tools whose output folder holds data: extracted documents,
a Hugging Face model folder). Setting
`TF_CPP_MIN_LOG_LEVEL=0` turns the start-up capture off (another level of the user's is
kept, and the start-up still captured); `--alsologtostderr` (or a higher
`--verbosity`) shows the libraries' INFO lines again.

A known error (a bad input, config or flag, a file that cannot be read or written, a
diverged run) prints its message's first line as `error: ...` (the rest, a listing, goes
to the log) and exits with status 1; its full
traceback goes to a log file named on the next line (`<output_dir>/log.txt` when the
script has an existing `--output_dir`, else a file in the system's temporary folder),
not to the console. A run that fails before writing anything takes back the folders it
made for its log: the log moves to the temporary folder, and no empty --output_dir is
left behind. Anything else is a bug: its traceback is printed and the last line
says so. Known errors are those the project raises on purpose (`ValueError` and its
subclasses, `RuntimeError`s such as a diverged loss, raised by the project's own code),
and I/O errors (`OSError`, TensorFlow's `OpError`) wherever they come from.
A command line absl cannot parse (a misspelt flag, with absl's suggestion; a value of the
wrong type; required flags missing, all named) gets one `error: ...` line too, in place of
absl's "FATAL Flags parsing error" block.
"""

import functools
import logging as python_logging
import os
import re
import shutil
import sys
import tempfile
import time
import traceback

from absl import app, flags, logging

from common import onednn, quiet
from common.errors import op_error_text

quiet.quiet_tensorflow_start()  # entry points import this module before TensorFlow
# oneDNN on where it measured faster (once per machine; the user's TF_ENABLE_ONEDNN_OPTS
# wins): before TensorFlow is imported, like the quiet start.
_ONEDNN_DECISION = onednn.decide(log=lambda line: print(line, file=sys.stderr, flush=True))

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOG_FILE = "log.txt"


def _is_project_file(path):
    path = os.path.abspath(path)
    return path.startswith(_ROOT + os.sep) and os.sep + "site-packages" + os.sep not in path


# ----------------------------------------------------------------------------- logs
class _LibraryInfoFilter(python_logging.Filter):
    """Keeps INFO (and lower) lines of libraries (TensorFlow, Keras) off the console."""

    def filter(self, record):
        return record.levelno >= python_logging.WARNING or _is_project_file(record.pathname)


def _set_up_logs():
    """The console filter (unless --alsologtostderr or --verbosity above 0 asked for
    everything) and the run's log file, which gets every line and the start-up output."""
    values = flags.FLAGS
    handler = logging.get_absl_handler()
    if not (values["alsologtostderr"].value or values["verbosity"].value > 0):
        handler.addFilter(_LibraryInfoFilter())
    # TensorFlow's logger may have its own console handler ("INFO:tensorflow:..."): its
    # lines go through the root logger's handlers (the filtered console, the file) instead.
    tf_logger = python_logging.getLogger("tensorflow")
    for own in list(tf_logger.handlers):
        tf_logger.removeHandler(own)
    tf_logger.propagate = True
    path = _log_file_of(values)
    if path is None:
        return None
    global _made_for_log
    made = _missing_folders(os.path.dirname(os.path.abspath(path)))
    if _log_beside_output:
        made += _missing_folders(os.path.abspath(values["output_dir"].value))
    new_log = not os.path.exists(path)
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        file_handler = python_logging.FileHandler(path, encoding="utf-8")
    except (OSError, ValueError):
        return None  # an unusable --output_dir is reported by the run itself
    file_handler.setFormatter(logging.PythonFormatter())
    python_logging.getLogger().addHandler(file_handler)
    if new_log and made:
        _made_for_log = (os.path.abspath(path), made, file_handler)
    def append(text):
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)

    append(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(sys.argv)}\n" +
           (f"{_ONEDNN_DECISION}\n" if _ONEDNN_DECISION else "") + quiet.startup_output())
    quiet.on_capture(append)  # TensorFlow imported later (inside main): its lines too
    return path


def quiet_console():
    """Only warnings and errors on the console (the log file still gets everything),
    unless the user asked for more with --verbosity or --alsologtostderr. For scripts that
    print their own story (demo.py)."""
    values = flags.FLAGS
    if not (values["verbosity"].present or values["alsologtostderr"].value):
        logging.get_absl_handler().setLevel(python_logging.WARNING)


_log_beside_output = False  # set by `run` for tools whose --output_dir holds data only
# (log file, the folders made for it, its handler) when this run made them for its log.
_made_for_log = None


def _missing_folders(folder):
    """`folder` and those of its parents that do not exist yet, deepest first."""
    missing = []
    while folder and not os.path.exists(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return missing


def _take_back_output_dir(script):
    """A run that failed before making anything leaves nothing behind: when the only
    file in the folders it created is its own log, the log moves to the system's
    temporary folder and the folders go (a rerun then meets a fresh --output_dir, not a
    folder it may take for a run's). Returns where the log went, or None if it stays."""
    if _made_for_log is None:
        return None  # no log, or one in a folder that was there: it stays
    path, made, handler = _made_for_log
    ours = {path, *made}
    for folder in made:
        try:
            if any(os.path.join(folder, name) not in ours for name in os.listdir(folder)):
                return None  # the run wrote something: keep its log with it
        except FileNotFoundError:
            continue
    moved = _temporary_log(script)
    python_logging.getLogger().removeHandler(handler)
    handler.close()
    try:
        shutil.move(path, moved)
        for folder in made:  # deepest first
            if os.path.isdir(folder):
                os.rmdir(folder)
    except OSError:
        return None if os.path.exists(path) else moved
    return moved


def _log_file_of(values):
    """`<output_dir>/log.txt`; for a tool whose output folder must hold its data only
    (documents, a Hugging Face model folder), `<output_dir>.log` beside it."""
    if "output_dir" in values and values["output_dir"].value and \
            "://" not in str(values["output_dir"].value):
        output_dir = values["output_dir"].value
        if _log_beside_output:
            return os.path.normpath(os.path.abspath(output_dir)) + ".log"
        return os.path.join(output_dir, LOG_FILE)
    return None


def _raised_by_project(exc):
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and _is_project_file(frames[-1].filename)


def _is_op_error(exc):
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(exc, tf.errors.OpError)


def is_known(exc):
    """True for an error that is about the user's input or environment, not a bug."""
    if isinstance(exc, OSError) or _is_op_error(exc):
        return True
    return isinstance(exc, (ValueError, RuntimeError)) and _raised_by_project(exc)


def message(exc):
    """The user-facing text of a known error."""
    if _is_op_error(exc):
        return f"{type(exc).__name__}: {op_error_text(exc)}"
    if isinstance(exc, OSError) and exc.filename and str(exc.filename) not in str(exc):
        return f"{exc.filename}: {exc}"
    return str(exc) or type(exc).__name__


def _log_file(script):
    values = flags.FLAGS
    path = _log_file_of(values) if values.is_parsed() else None
    if path and os.path.isdir(os.path.dirname(path)):
        return path
    return _temporary_log(script)


def _temporary_log(script):
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
        _set_up_logs()
        status = main(argv)
    except SystemExit:
        raise
    except app.UsageError as exc:  # a flag is missing or contradicts another
        logging.flush()
        _take_back_output_dir(script)
        print(f"error: {str(exc).rstrip('.')} (see --helpfull).", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        logging.flush()
        print("Interrupted.", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # the boundary: everything ends here
        logging.flush()
        if hasattr(exc, "exit_status"):
            # A run that stopped as asked (a signal), its work saved: its own line and
            # status (`training.preemption.TrainingStopped`).
            print(str(exc), file=sys.stderr)
            sys.exit(exc.exit_status)
        log = _write_log(exc, script)
        log = _take_back_output_dir(script) or log
        if is_known(exc):
            line, _, detail = message(exc).partition("\n")
            print(f"error: {line}", file=sys.stderr)
            if log:
                what = "details and the full traceback are" if detail.strip() else \
                    "full traceback is"
                print(f"(the {what} in {log})", file=sys.stderr)
        else:
            traceback.print_exception(exc, file=sys.stderr)
            print(f"This is a bug in {script}, not a problem with your input: please "
                  f"report it with the traceback above"
                  + (f" (also in {log})." if log else "."), file=sys.stderr)
        sys.stderr.flush()
        sys.exit(1)
    _exit_at_once(status)


def _exit_at_once(status):
    """Ends a finished run now: every output is written (atomically) and every summary
    writer flushed, so what is left is the interpreter's teardown of TensorFlow (its
    threads, tf.data's iterators, a second or so after training), which the user would
    wait for and gain nothing from. The logs are flushed and closed first."""
    logging.flush()
    python_logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status if isinstance(status, int) else 0)


_REQUIRED = re.compile(r"Flag --(\w+) must have a value other than None")


def flag_error_line(exc):
    """One line for a command line absl cannot parse: the missing required flags named
    together, or absl's own message on one line."""
    if isinstance(exc, flags.UnrecognizedFlagError):
        # absl keeps its suggestions in the message only: "... Did you mean: a, b ?"
        tip = re.search(r"Did you mean: (.*?) ?\?", str(exc))
        close = [name.strip() for name in tip.group(1).split(",")] if tip else []
        return (f"error: unknown flag --{exc.flagname}"
                + (f"; did you mean --{' or --'.join(close)}?" if close else "")
                + " (see --helpfull).")
    missing = _REQUIRED.findall(str(exc))
    if missing:
        names = [f"--{name}" for name in missing]
        listed = names[0] if len(names) == 1 else \
            f"{', '.join(names[:-1])} and {names[-1]}"
        return f"error: {listed} {'is' if len(names) == 1 else 'are'} required " \
               f"(see --helpfull)."
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return f"error: {text.rstrip('.')} (see --helpfull)."


def _parse_flags(argv):
    """absl's parsing, with a one-line answer (not its "FATAL Flags parsing error" block)
    for an unknown flag, a bad value or a missing required flag; status 1, as absl's."""
    from cli.flags import list_in_help
    list_in_help()
    try:
        return flags.FLAGS(argv)
    except flags.Error as exc:
        print(flag_error_line(exc), file=sys.stderr)
        sys.exit(1)


def run(main, log_beside_output=False):
    """`absl.app.run(main)` inside the error boundary. `log_beside_output`: the log goes
    to `<output_dir>.log`, not into the folder (whose files are all data)."""
    global _log_beside_output
    _log_beside_output = log_beside_output
    app.run(functools.partial(_guarded, main), flags_parser=_parse_flags)
