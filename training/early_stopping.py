"""Early stopping: a fine-tuning run ends once the dev metric that selects `best/` has not
improved for `patience` evaluations in a row (Keras's `EarlyStopping` with `min_delta=0`,
Hugging Face's `EarlyStoppingCallback` with no threshold: a tie is no improvement), and
remembers that it did, so that rerunning its command does not train on.

Pipeline position: the runner's best-checkpoint keeper (`training.runner`) evaluates the
task at every checkpoint and reports each evaluation here; when `evaluated` says stop, the
keeper's hook returns `training.loop.STOP` and the loop ends after that step's checkpoint.
The count lives in `output_dir/early_stopping.json`, rewritten (atomically) at every
evaluation: a run cut off resumes its count, and a rerun of a stopped run does not train
(a larger patience continues it; the count is the same evaluations, compared afresh).
"""

import json
import os

from common import file_io

FILE_NAME = "early_stopping.json"


class EarlyStopping:
    """Counts the evaluations since the best one of a run in `output_dir`.

    Args:
        output_dir: the run's folder (its count is read back from there).
        patience: evaluations without improvement that end the run (at least 1).
        metric: the name of the dev metric watched (for the messages).
        best_step: the step of the run's best checkpoint so far (`best/`), or None. A
            recorded count that belongs to another best step is stale (the run went on
            without early stopping) and starts over.
    """

    def __init__(self, output_dir, patience, metric, best_step=None):
        self.path = os.path.join(output_dir, FILE_NAME)
        self.patience, self.metric = patience, metric
        state = file_io.read_json_state(self.path, "early stopping counts afresh")
        if state.get("best_step") == best_step and best_step is not None:
            self.waited = int(state.get("evaluations_without_improvement", 0))
            self.last_step = state.get("last_evaluated_step")
        else:
            self.waited, self.last_step = 0, None
        self.best_step = best_step

    def evaluated(self, step, improved):
        """Counts the evaluation at `step` (`improved`: it beat the best so far) and
        records the count. Returns True when the run should stop."""
        if improved:
            self.best_step, self.waited = step, 0
        else:
            self.waited += 1
        self.last_step = step
        file_io.atomic_write_text(self.path, json.dumps({
            "metric": self.metric, "patience": self.patience, "best_step": self.best_step,
            "evaluations_without_improvement": self.waited, "last_evaluated_step": step,
            "stopped": self.should_stop()}, indent=2))
        return self.should_stop()

    def should_stop(self):
        return self.waited >= self.patience

    def stopped_at(self, step):
        """True when the run, whose newest checkpoint is at `step`, stopped there: its
        last evaluation was at `step` and the count had reached the patience."""
        return self.last_step == step and self.should_stop()

    def reason(self, best):
        """Why the run stops, in words (`best`: the best value of the metric, or None)."""
        best = "" if best is None else f"'s {best:.4f}"
        return (f"dev {self.metric} has not improved on step {self.best_step}{best} in "
                f"{self.waited} evaluation{'s' * (self.waited != 1)} "
                f"(--early_stopping_patience={self.patience})")


def evaluations(num_train_steps, every):
    """How many times a run of `num_train_steps` evaluates: at every `every` steps and at
    its last."""
    return -(-num_train_steps // every)

