"""TensorFlow's start-up lines kept off the console.

Pipeline position: set up before TensorFlow is imported by every entry point (through
`cli.boundary`), by `create_pretraining_data`'s worker processes, and by the library
packages that use TensorFlow (`modeling`, `text`, `data_prep`, `training`, `tasks`,
`serving`: their `__init__`), so that a Python session that imports them
(`modeling.from_pretrained`, docs/python.md) starts as quietly as a script.

TensorFlow 2.21 writes its C++ start-up lines (oneDNN, CUDA drivers, CPU features) through
Abseil logging before that is initialised, so `TF_CPP_MIN_LOG_LEVEL` does not hide them.
Importing TensorFlow with file descriptor 2 pointed at a buffer does; the lines are kept
for the run's log file (`startup_output`). A user who set `TF_CPP_MIN_LOG_LEVEL` chose
their own level, which is kept: at 0 (every line) nothing is captured; at 1 or more the
import is captured too, since those start-up lines are written before the level is read.
"""

import importlib.util
import os
import sys

from common.stderr import CapturedStderr

_startup_output = []  # what TensorFlow wrote while it was imported
_listeners = []  # called with what a later capture caught (e.g. to append it to a log)
_OURS = "BERT_TF2_QUIET_START"  # set beside TF_CPP_MIN_LOG_LEVEL when this module set it


def startup_output():
    return "".join(_startup_output)


def on_capture(listener):
    """Calls `listener(text)` with what each capture from now on catches."""
    _listeners.append(listener)


class _Captured(CapturedStderr):
    """File descriptor 2 caught for the duration of the block; what was written is kept
    in `_startup_output` and passed to the listeners."""

    def __exit__(self, *exc):
        super().__exit__(*exc)
        _startup_output.append(self.text)
        for listener in _listeners:
            listener(self.text)
        return False


class _QuietTensorFlowImport:
    """A meta-path finder that runs the first `import tensorflow` inside `_Captured`."""

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def quiet_exec_module(module):
            with _Captured():
                exec_module(module)

        spec.loader.exec_module = quiet_exec_module
        return spec


def import_tensorflow():
    """Imports TensorFlow now, quietly (see `quiet_tensorflow_start`); returns it."""
    quiet_tensorflow_start()
    import tensorflow
    return tensorflow


def quiet_tensorflow_start():
    """Arranges for TensorFlow's start-up lines to stay off the console: unless it is
    imported already or the user asked for every line (TF_CPP_MIN_LOG_LEVEL=0), its
    first import is captured, and unless the user chose a level, its C++ log lines are
    turned off."""
    user_level = None if _OURS in os.environ else os.environ.get("TF_CPP_MIN_LOG_LEVEL")
    if "tensorflow" in sys.modules or (user_level is not None and user_level.strip() in (
            "", "0")) or any(isinstance(f, _QuietTensorFlowImport) for f in sys.meta_path):
        return
    if user_level is None:
        # 3: also its C++ errors about absent GPUs ("failed call to cuInit") on CPU
        # machines; a real failure surfaces as a Python exception anyway.
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        os.environ[_OURS] = "1"  # inherited by worker processes: still ours
    sys.meta_path.insert(0, _QuietTensorFlowImport())
