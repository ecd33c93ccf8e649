"""A training run sized to a wall-clock deadline from the step time measured in the run
itself: the steps planned from a short calibration are re-counted at the ends of the
training loops during warm-up, where the learning rate does not depend on the total yet.

Pipeline position: made by an entry point that trains for a time (`pretrain_from_text.py`)
and handed to `training.runner.run`; `training.loop.Trainer` asks it after every loop of
a run that starts at step 0 and resizes the schedule (`training.schedules`) to its answer.
"""

import math
import time


class TimeBudget:
    """Counts the steps that end a run at `deadline`.

    After each training loop the trainer calls `resize(step, total)` (the first call
    is the run's first loop, which traced); until `fixed_from`
    (the end of warm-up: from there the decay depends on the total) the answer is the step
    reached plus the steps the time left buys at the measured rate. The rate is measured
    over the recent half of the steps since the first loop (which traces the step, and so
    is slower), between loop ends, so that it includes saving checkpoints and logging and
    leaves out a disturbance at the start.

    Args:
        deadline: float. When the last step should end (`clock()` seconds).
        fixed_from: int. The step from which the total is kept.
        min_steps: int. The least total (default: one step past `fixed_from`, so that
            the decay runs), however little time is left.
        on_resize: `on_resize(total, seconds_per_step)`, called when the total changes
            (to record it, so that a resumed run keeps it).
        clock: the time source (`time.time`).
    """

    def __init__(self, deadline, fixed_from, min_steps=None, on_resize=None,
                 clock=time.time):
        self.deadline = deadline
        self.fixed_from = fixed_from
        self.min_steps = max(fixed_from + 1, min_steps or 0)
        self.on_resize = on_resize
        self.clock = clock
        self.seconds_per_step = None  # the last rate measured
        self.last_loop_end = None  # clock() at the end of the last loop
        self._ends = []  # (step, clock()) at the end of each loop until fixed_from

    def boundary(self, step):
        """A step the next loop should end at, so that the total is counted once more
        before it is fixed (None: it is fixed)."""
        return self.fixed_from if step < self.fixed_from else None

    def resize(self, step, total):
        """The run's total steps after a loop ending at `step`; `total` while the total
        is fixed or unmeasured."""
        now = self.last_loop_end = self.clock()
        if not self._ends:  # the first loop: its time is the trace's
            self._ends = [(step, now)]
            return total
        if step > self.fixed_from:
            return total
        self._ends.append((step, now))
        first_step = self._ends[0][0]
        middle = (first_step + step) / 2
        start_step, start = [end for end in self._ends if end[0] <= middle][-1]
        if step == start_step:
            return total
        self.seconds_per_step = (now - start) / (step - start_step)
        left = max(0.0, self.deadline - now)
        resized = max(step + math.floor(left / self.seconds_per_step), self.min_steps)
        if resized != total and self.on_resize is not None:
            self.on_resize(resized, self.seconds_per_step)
        return resized
