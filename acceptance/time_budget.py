"""Does `pretrain_from_text.py --budget_minutes=N` train N minutes, whether or not its
calibration (stage 3, the step timed to plan the run) was disturbed?

For each budget, the command a user runs (from scratch on WikiText-2's test and validation
text, default flags) runs alone, and again with `--load_processes` busy processes started
when its calibration starts and stopped when it goes on to write its records (another job
on the machine for half a minute). The minutes trained (from the start of stage 5 to the end of
its last step, as the command's final line says them) are held to the budget within
`--tolerance`; the table says the calibrated plan beside the steps trained.

    python -m acceptance.time_budget --shared_dir=../shared/data [--budgets=5,30 \
      --loads=none,calibration --work_dir=/tmp/budget]

Ends with a PASS or FAIL line per run; exits with status 1 on a FAIL.
"""

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from bench import harness
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOADS = ("none", "calibration")
TRAINED = re.compile(r"Done in ([\d.]+) minutes: ([\d,]+) steps of pre-training in "
                     r"([\d.]+) minutes")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData, harness.WorkDir):
    """The flags of this check (`python -m acceptance.time_budget --help`)."""
    budgets: str = setting("5,30", help="Budgets (--budget_minutes), comma-separated.")
    loads: str = setting(",".join(LOADS), help="none: the command alone; calibration: "
                         "busy processes from its stage 3 to its stage 4.")
    load_processes: int = setting(2, help="Busy processes of the load (a core each).")
    tolerance: float = setting(0.05, help="Largest share of the budget the minutes trained "
                               "may miss it by.")


def busy_processes(count):
    """`count` processes that each keep a core busy until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(count)]


def pretrain(text, out, budget, load_processes):
    """Runs the command, loaded from its stage 3 to its stage 4 when `load_processes`;
    returns its stderr."""
    command = [sys.executable, os.path.join(ROOT, "pretrain_from_text.py"),
               f"--input_text={text}", f"--output_dir={out}", f"--budget_minutes={budget:g}"]
    process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    load, lines = [], []
    try:
        for line in process.stderr:
            lines.append(line)
            if line.startswith("[3/5]") and load_processes:
                load = busy_processes(load_processes)
            elif line.startswith("[4/5]"):
                for busy in load:
                    busy.kill()
    finally:
        for busy in load:
            busy.kill()
        process.wait()
    if process.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{''.join(lines[-20:])}")
    return "".join(lines)


def main(settings):
    data = os.path.join(settings.shared_dir, "wikitext", "wikitext-2")
    text = ",".join(os.path.join(data, name) for name in ("test.txt", "valid.txt"))
    work = settings.work_dir or tempfile.mkdtemp(prefix="time-budget-")
    print(harness.describe())
    rows, checks = [], []
    for budget in map(float, settings.budgets.split(",")):
        for load in settings.loads.split(","):
            out = os.path.join(work, f"{budget:g}-{load}")
            shutil.rmtree(out, ignore_errors=True)
            said = pretrain(text, out, budget,
                            settings.load_processes if load == "calibration" else 0)
            total, steps, trained = TRAINED.search(said).groups()
            with open(os.path.join(out, "recipe.json"), encoding="utf-8") as f:
                record = json.load(f)
            calibrated = record.get("calibrated", record["plan"])
            rows.append([f"{budget:g}", load, f"{calibrated['seconds_per_step']:.2f} s: "
                         f"{calibrated['num_train_steps']:,}",
                         f"{record['plan']['seconds_per_step']:.2f} s: {steps}", trained,
                         f"{float(trained) / budget:.3f}", total])
            checks.append((abs(float(trained) - budget) <= settings.tolerance * budget,
                           f"{budget:g} minutes, load {load}: {trained} minutes trained "
                           f"(at most {settings.tolerance:.0%} off)"))
            print(" | ".join(rows[-1]), flush=True)
    print(harness.table(["budget (min)", "load", "calibrated plan", "trained (counted in "
                         "training)", "minutes trained", "share of budget",
                         "whole command (min)"], rows))
    harness.verdicts(checks)


if __name__ == "__main__":
    harness.run(main, Settings)
