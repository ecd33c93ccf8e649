"""C++ libraries' console lines caught: file descriptor 2 pointed at a temporary file for
the duration of a block.

Pipeline position: wherever a library we call writes start-up lines straight to the
process's stderr (TensorFlow's import, TF Lite's delegate), below Python's `sys.stderr`:
TensorFlow's import (`common.quiet`) and `serving` keep them off the console.
"""

import os
import sys
import tempfile
import threading

_LOCK = threading.RLock()  # one capture at a time: file descriptor 2 is the process's


class CapturedStderr:
    """`with CapturedStderr() as captured: ...`; afterwards `captured.text` holds what
    was written to file descriptor 2 (by C++ or Python) inside the block. Other threads'
    stderr lines written meanwhile are caught too: keep the block short."""

    text = ""

    def __enter__(self):
        _LOCK.acquire()
        sys.stderr.flush()
        self._buffer = tempfile.TemporaryFile()
        self._saved = os.dup(2)
        os.dup2(self._buffer.fileno(), 2)
        return self

    def __exit__(self, *exc):
        try:
            sys.stderr.flush()
            os.dup2(self._saved, 2)
            os.close(self._saved)
            self._buffer.seek(0)
            self.text = self._buffer.read().decode("utf-8", "replace")
            self._buffer.close()
        finally:
            _LOCK.release()
        return False
