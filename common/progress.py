"""A dependency-free progress line for long jobs: counts, rates and, when the total is
known, the share done and the time left; redrawn in place on a terminal and written every
few seconds otherwise. Short jobs print nothing.

Pipeline position: used by the offline data stages (extraction, pre-training data) and by
the tasks' feature conversion (SQuAD windows, NER windows, classification features).
"""

import sys
import time


def format_duration(seconds):
    """1h02m03s / 4m05s / 12s."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{seconds:02d}s"
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


class Progress:
    """`Progress("create", ["documents", "instances"])`, then `update(documents=10)`.

    Args:
        label: str. What the job is.
        counters: list of counter names.
        total: (counter, total) or None. With it, the line shows the share of that counter
            done and the time left.
        interval: float. Seconds between lines; a job shorter than this prints nothing.
        stream: where to write (stderr by default).
    """

    def __init__(self, label, counters, total=None, interval=2.0, stream=None):
        self.label = label
        self.counts = {name: 0 for name in counters}
        self.total = total
        self.interval = interval
        self.stream = stream or sys.stderr
        self.start = self._last = time.time()
        self._tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._drawn = None  # the counts last drawn

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
        text = f"{self.label}: " + ", ".join(parts) + f" [{format_duration(elapsed)}"
        if self.total and self.total[1]:
            done = self.counts.get(self.total[0], 0) / self.total[1]
            text += f", {done:.0%}"
            if 0 < done < 1:
                text += f", {format_duration(elapsed * (1 - done) / done)} left"
        return text + "]"

    def _draw(self, final):
        if self._tty:
            self.stream.write("\r" + self.line() + ("\n" if final else ""))
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()
        self._drawn = dict(self.counts)

    def close(self):
        """The final line, for a job that has shown progress (or when it ran so long),
        unless the last line written (not on a terminal) already holds the final counts."""
        if self._drawn == self.counts and not self._tty:
            return
        if self._drawn or time.time() - self.start >= self.interval:
            self._draw(final=True)
