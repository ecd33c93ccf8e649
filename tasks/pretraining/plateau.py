"""Is a pre-training run still on the frequent-token plateau? A warning, once, when it is
after a set share of the run.

Pipeline position: a hook of the pre-training task's training loop (`PretrainingTask`,
through `training.runner`), fed the loop's logs.

A masked LM first learns which tokens are frequent: predicting them whatever the context
gives a loss equal to the entropy of the masked tokens' unigram distribution (about 6.6
nats for an 8,192-piece English vocabulary). Leaving that plateau means using the
context; a run that has not left it after a good part of its steps will usually not
(the academic-budget recipe, Izsak et al. 2021, stops such runs early), and its model is
no better than random weights downstream. The entropy is estimated from a sample of the
training records before training.
"""

import math

from absl import logging

from data_prep.pretraining_records import read_examples

# The check runs at the first log after this share of the steps (past where a working
# recipe has left the plateau: the one-hour recipe leaves it before 40% of its steps)...
CHECK_AT_SHARE = 0.5
# ...and counts the run as on the plateau while its loss is within this many nats of the
# unigram entropy.
MARGIN_NATS = 1.0
# Runs shorter than this are not judged (a demo, a calibration): too short to leave it.
MIN_STEPS = 1000


def unigram_entropy(files, max_seq_length, max_predictions_per_seq, records=4000):
    """The entropy (nats) of the masked tokens' distribution in the first `records`
    records of `files` (taken in turn), and how many masked tokens it is from."""
    counts, total = {}, 0
    per_file = max(1, records // len(files))
    for path in files:
        try:
            for number, example in enumerate(read_examples(path, max_seq_length,
                                                           max_predictions_per_seq)):
                if number >= per_file:
                    break
                real = int(sum(example["masked_lm_weights"]))
                for token in example["masked_lm_ids"][:real]:
                    counts[token] = counts.get(token, 0) + 1
                    total += 1
        except ValueError:  # a damaged file: training names it when it gets there
            continue
    if not total:
        return None, 0
    return -sum(c / total * math.log(c / total) for c in counts.values()), total


class PlateauWatch:
    """`hook(step, logs)`: warns once if `logs[loss_name]` is still within
    `MARGIN_NATS` of `entropy` at the first log past `CHECK_AT_SHARE` of the run.

    Args:
        entropy: float. The masked tokens' unigram entropy (nats).
        num_train_steps: int. The run's last step.
        loss_name: str. The logged masked-LM loss.
    """

    def __init__(self, entropy, num_train_steps, loss_name="masked_lm_loss"):
        self.entropy = entropy
        self.check_step = math.ceil(CHECK_AT_SHARE * num_train_steps)
        self.num_train_steps = num_train_steps
        self.loss_name = loss_name
        self.done = False
        self.warned = False

    def __call__(self, step, logs):
        if (self.done or self.num_train_steps < MIN_STEPS or step < self.check_step
                or self.loss_name not in logs):
            return
        self.done = True
        loss = float(logs[self.loss_name])
        if loss <= self.entropy - MARGIN_NATS:
            return
        self.warned = True
        logging.warning(
            "Step %d of %d: the masked-LM loss is %.2f, still on the frequent-token "
            "plateau (the masked tokens' unigram entropy is %.2f nats): the model predicts "
            "frequent tokens whatever the context, and a model stopped here is usually no "
            "better than random weights downstream. Likely causes: a learning rate too low to "
            "leave it in this many steps, or too high for the warm-up (the representations "
            "collapse: every token the same vector); too little or too much warm-up; "
            "records in corpus order (create_pretraining_data --mode=fast from before "
            "2026-11-25 did not shuffle across pieces: make them again); a corpus of "
            "repeated lines; a model too narrow for the budget (at the CPU recipe's, "
            "hidden size 128 stayed here where 256 left it). See docs/pretraining.md, "
            "\"Pre-training on a CPU\", for a recipe that leaves it.",
            step, self.num_train_steps, loss, self.entropy)
