"""`training.time_budget`: a run's steps counted from the step time measured in the run,
against hand-computed counts (a clock that says what it is told)."""

from training.time_budget import TimeBudget


class Clock:
    def __init__(self, *times):
        self.times = list(times)

    def __call__(self):
        return self.times.pop(0)


def test_the_steps_left_are_the_time_left_at_the_rate_measured_after_the_trace():
    told = []
    budget = TimeBudget(deadline=1000, fixed_from=50, clock=Clock(30, 40, 50, 100),
                        on_resize=lambda total, seconds: told.append((total, seconds)))
    # The first loop (steps 0-10) traced: its 30 s are no rate.
    assert budget.resize(10, 400) == 400
    # Steps 10-20 in 10 s: 1 s a step, 960 s left: 20 + 960 steps.
    assert budget.resize(20, 400) == 980 and told == [(980, 1.0)]
    # Steps 20-30 in 10 s again: the same count, not said again.
    assert budget.resize(30, 980) == 980 and len(told) == 1
    # Steps 30-50 in 50 s: over the recent half of steps 10-50 (from step 30), 2.5 s a
    # step; 900 s left buy 360 more.
    assert budget.resize(50, 980) == 410 and told[-1] == (410, 2.5)
    assert budget.boundary(49) == 50 and budget.boundary(50) is None


def test_a_slow_start_of_training_is_left_out_and_the_total_is_kept_after_warmup():
    budget = TimeBudget(deadline=1000, fixed_from=50, clock=Clock(30, 60, 80, 90, 95))
    budget.resize(10, 100)
    # Steps 10-20 took 3 s each (another process was busy): 940 s left at 3 s a step.
    assert budget.resize(20, 100) == 20 + 313
    # Steps 20-40 at 1 s a step; the window is the recent half of steps 10-40 (from 20).
    assert budget.resize(40, 333) == 40 + 920
    assert budget.resize(50, 960) == 50 + 910
    # Past the end of warm-up the decay depends on the total: it is kept.
    assert budget.resize(60, 960) == 960


def test_a_budget_spent_before_warmup_ends_keeps_the_least_run():
    budget = TimeBudget(deadline=100, fixed_from=5, min_steps=10, clock=Clock(90, 200))
    budget.resize(3, 10)
    assert budget.resize(5, 20) == 10  # no time left: the least plan, not step 5
    assert TimeBudget(deadline=0, fixed_from=5).min_steps == 6  # the decay runs
