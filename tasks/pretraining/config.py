"""The pre-training task's settings (`PretrainingConfig`) and its objectives: what
`run_pretraining.py` defines as flags and checks before TensorFlow is imported, so that a
wrong flag is answered at once.

Pipeline position: flags -> this config -> `tasks.pretraining.task` (pre-training).

`PretrainingExportOptions`: what the export scripts (`export_saved_model.py`,
`export_huggingface.py`) need beyond the checkpoint, defined as their flags the same way.
"""

import dataclasses
from typing import Optional

from common.settings import setting
from training.config import NON_NEGATIVE, STEPS, WHOLE_POSITIVE, TaskConfig, check

# The paper's Table 5: masked LM + next sentence (the original), masked LM alone ("No
# NSP"), and a left-to-right LM with no next sentence ("LTR & No NSP").
OBJECTIVES = ("mlm_nsp", "mlm", "ltr")


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainingConfig(TaskConfig):
    """The pre-training task's settings (`training.config.TaskConfig` adds the model)."""
    input_file: str = setting(
        recorded=True, help="Pre-training TFRecords: comma-separated files or globs.")
    eval_input_file: Optional[str] = setting(
        None, help="Evaluation TFRecords (default: --input_file, as the original).")
    max_predictions_per_seq: int = setting(
        20, recorded=True, help="Masked positions per sequence; must match the data.")
    num_train_steps: int = setting(100000, recorded=True,
                                   help="Number of training steps.")
    num_warmup_steps: int = setting(10000, recorded=True, help="Linear warm-up steps.")
    max_eval_steps: int = setting(100, help="Evaluation batches.")
    objective: str = setting(
        "mlm_nsp", choices=OBJECTIVES, recorded=True,
        help="mlm_nsp: masked LM + next sentence (the original); mlm: masked LM only (the "
        "paper's No NSP); ltr: left-to-right LM, causal attention, no [MASK] in the input "
        "(the original tokens are put back from the same records), no NSP.")
    pretraining_dropout: Optional[float] = setting(
        None, recorded=True,
        help="Dropout while pre-training, for both of bert_config.json's (hidden and "
        "attention; default: the config's, as the original). The exported "
        "bert_config.json keeps the config's, for fine-tuning. 0: none, as Cramming "
        "(Geiping & Goldstein 2022) pre-trains.")
    heads_only: bool = setting(
        False, recorded=True, help="Train the pre-training heads alone, the encoder (and "
        "the word embeddings the masked LM shares) frozen: a new head learns to read a "
        "released encoder before it steers it.")

    def __post_init__(self):
        super().__post_init__()
        check(self, {"objective": (lambda o: o in OBJECTIVES, f"one of {list(OBJECTIVES)}"),
                     "max_predictions_per_seq": WHOLE_POSITIVE,
                     "num_train_steps": STEPS, "num_warmup_steps": NON_NEGATIVE,
                     "max_eval_steps": WHOLE_POSITIVE,
                     "pretraining_dropout": (lambda p: 0 <= p < 1, "at least 0 and below 1")})
        if self.num_warmup_steps > self.num_train_steps:
            raise ValueError(
                f"--num_warmup_steps={self.num_warmup_steps} is more than --num_train_steps="
                f"{self.num_train_steps}: the learning rate would never reach its peak. "
                f"Give fewer warm-up steps (the original: 10,000 of 1,000,000; a short run: "
                f"about a tenth).")


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainingExportOptions:
    """What the export scripts need to rebuild a pre-training model: its heads."""
    objective: str = setting(
        "mlm_nsp", choices=OBJECTIVES, help="pretraining: the objective the checkpoint was "
        "trained with (run_pretraining.py --objective): mlm_nsp has the next-sentence "
        "head, mlm and ltr do not.")
