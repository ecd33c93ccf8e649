"""A dependency-free progress line for long data jobs: counts and rates, redrawn in place
on a terminal and logged every few seconds otherwise.

Pipeline position: used by the offline data stages (extraction, pre-training data).
"""

import sys
import time


class Progress:
    """`Progress("create", ["documents", "instances"])`, then `update(documents=10)`."""

    def __init__(self, label, counters, interval=2.0, stream=None):
        self.label = label
        self.counts = {name: 0 for name in counters}
        self.interval = interval
        self.stream = stream or sys.stderr
        self.start = self._last = time.time()
        self._tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def update(self, **increments):
        for name, n in increments.items():
            self.counts[name] = self.counts.get(name, 0) + n
        now = time.time()
        if now - self._last >= self.interval:
            self._last = now
            self._draw(final=False)

    def line(self):
        elapsed = max(time.time() - self.start, 1e-9)
        parts = [f"{n:,} {name} ({n / elapsed:,.0f}/s)" for name, n in self.counts.items()]
        return f"{self.label}: " + ", ".join(parts) + f" [{elapsed:,.0f} s]"

    def _draw(self, final):
        if self._tty:
            self.stream.write("\r" + self.line() + ("\n" if final else ""))
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def close(self):
        self._draw(final=True)
