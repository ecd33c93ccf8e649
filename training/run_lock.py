"""One run per output folder: a lock file naming the run that holds it.

Pipeline position: `training.runner.run` (every entry point's training, evaluation and
prediction) holds the lock of its `output_dir` from start to end, on the chief. A second
run on the same folder would resume the same checkpoints and write over the first one's;
it is refused in one line naming the first (its host and process id). A lock left by a
process of this host that no longer runs (killed with -9, the machine rebooted) is taken
over with a warning; one from another host is only reported, since this host cannot tell
whether that run still lives. Remote folders (gs://...) are not locked.
"""

import os
import socket
import time

from absl import logging

from common import file_io

FILE_NAME = ".run.lock"


class OutputDirInUse(ValueError):
    """Another run holds the output folder."""


class RunLock:
    """`with RunLock(output_dir): ...` holds the folder's lock for the block."""

    def __init__(self, output_dir):
        self.path = None if file_io.is_remote(str(output_dir)) else os.path.join(
            str(output_dir), FILE_NAME)
        self._held = False  # False too when this process held the lock already (nested)

    def __enter__(self):
        if self.path is None:
            return self
        record = f"{socket.gethostname()} {os.getpid()} {time.strftime('%Y-%m-%d %H:%M:%S')}\n"
        for _ in range(2):  # a second try after taking over a stale lock
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if self._take_over_or_refuse():
                    return self  # nested: the outer holder releases it
                continue
            with os.fdopen(fd, "w") as f:
                f.write(record)
            self._held = True
            return self
        raise OutputDirInUse(f"{os.path.dirname(self.path)}: could not lock the folder.")

    def _take_over_or_refuse(self):
        try:
            with open(self.path, encoding="utf-8") as f:
                host, pid, started = (f.read().split(" ", 2) + ["", "", ""])[:3]
        except OSError:
            return  # released meanwhile: try again
        folder = os.path.dirname(self.path)
        mine = host == socket.gethostname()
        if mine and pid == str(os.getpid()):
            return True  # this process holds it (a grid's final run in the grid's folder)
        if mine and pid.isdigit() and not file_io.process_alive(int(pid)):
            logging.warning("%s: taking over the lock of process %s, which no longer runs "
                            "(started %s).", folder, pid, started.strip())
            try:
                os.remove(self.path)
            except FileNotFoundError:
                pass
            return
        where = "this host" if mine else f"host {host}"
        raise OutputDirInUse(
            f"{folder} is in use by another run (process {pid} on {where}, started "
            f"{started.strip()}): two runs on one output folder would write over each "
            f"other's checkpoints. Wait for it to end, or use another --output_dir"
            + ("." if mine else f"; if that run is gone, remove {self.path}."))

    def move_folder_aside(self, suffix):
        """Renames the locked folder to `<folder>.<suffix>` (the run it held, kept whole)
        and locks a new, empty folder under its name. Returns the new name of the old."""
        folder = os.path.dirname(self.path)
        aside = f"{folder.rstrip(os.sep)}.{suffix}"
        os.replace(folder, aside)
        os.makedirs(folder)
        self._held = False
        self.__enter__()
        try:
            os.remove(os.path.join(aside, FILE_NAME))  # ours, carried along
        except FileNotFoundError:
            pass
        return aside

    def __exit__(self, *exc):
        if self._held:
            self._held = False
            try:
                os.remove(self.path)
            except FileNotFoundError:
                pass
        return False
