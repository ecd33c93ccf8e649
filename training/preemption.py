"""Stopping training on SIGTERM or SIGINT with a checkpoint of the current step.

Pipeline position: `training.loop.Trainer.train` watches for the signals while it trains.
Schedulers preempt with SIGTERM (Slurm, Kubernetes, spot VMs, TPU VMs) and users with
Ctrl-C; without this, everything since the last `--save_checkpoints_steps` checkpoint is
lost. With it, the step running when the signal came finishes, the loop stops (every
replica and worker at the same step: the request is all-reduced in the step), a checkpoint
of that step is saved, and the entry point exits with 128 + the signal's number (143 for
SIGTERM, 130 for SIGINT) and one line saying how to resume. Rerunning the same command
continues from that step exactly as an uninterrupted run would.

The loop runs many steps inside one TensorFlow call, during which Python's own signal
handlers cannot run; so the signal is also written to a wake-up socket
(`signal.set_wakeup_fd`) that a watcher thread reads at once, setting the variable the
loop reads at every step. Once the first signal of a kind is handled, that signal's default
action is back: a second one ends the process without saving.
"""

import signal
import socket
import threading

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class TrainingStopped(Exception):
    """Training stopped on a signal, after saving a checkpoint of the current step.
    `exit_status` is what the entry point exits with (128 + the signal)."""

    def __init__(self, signum, step, checkpoint, message=None):
        self.signum, self.step, self.checkpoint = signum, step, checkpoint
        self.exit_status = 128 + signum
        super().__init__(message or
            f"Stopped by {signal.Signals(signum).name} at step {step}; saved {checkpoint}. "
            f"Rerun the same command to resume from there.")

    def saying(self, message):
        """The same stop, with `message` in place of the resume promise (for a training
        whose checkpoints its caller does not keep)."""
        return TrainingStopped(self.signum, self.step, self.checkpoint,
                               message=f"Stopped by {signal.Signals(self.signum).name}; "
                                       f"{message}")


class SignalWatch:
    """`with SignalWatch(on_signal) as watch:` calls `on_signal()` from a thread as soon as
    SIGTERM or SIGINT arrives (even while the main thread is inside TensorFlow), and keeps
    `watch.signum`. Outside the main thread (where handlers cannot be set) it does
    nothing."""

    def __init__(self, on_signal):
        self.on_signal = on_signal
        self.signum = None
        self._active = False

    def __enter__(self):
        if threading.current_thread() is not threading.main_thread():
            return self
        self._reader, self._writer = socket.socketpair()
        self._writer.setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._writer.fileno(),
                                                 warn_on_full_buffer=False)
        self._previous = {s: signal.signal(s, self._handle) for s in SIGNALS}
        self._thread = threading.Thread(target=self._watch, daemon=True,
                                        name="signal-watch")
        self._thread.start()
        self._active = True
        return self

    def _handle(self, signum, frame):
        # Python's handler, run in the main thread once TensorFlow returns (the watcher
        # has seen the signal already): a second one of the kind is not caught.
        signal.signal(signum, signal.SIG_DFL)

    def _watch(self):
        while True:
            try:
                data = self._reader.recv(64)
            except OSError:
                return
            if not data:
                return  # closed: the watch ended
            for signum in data:
                if signum in SIGNALS and self.signum is None:
                    self.signum = signum
                    self.on_signal()

    def __exit__(self, *exc):
        if not self._active:
            return False
        self._active = False
        signal.set_wakeup_fd(self._previous_fd)
        for s, handler in self._previous.items():
            if signal.getsignal(s) is self._handle:
                signal.signal(s, handler)
        self._writer.close()
        self._reader.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)
        self._reader.close()
        return False
