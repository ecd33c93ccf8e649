"""The SQuAD task's settings (`SquadConfig`, and `SquadReading`: how questions are read
and answered, which its exports keep): what `run_squad.py` defines as flags and checks
before TensorFlow is imported, so that a wrong flag is answered at once.

Pipeline position: flags -> this config -> `tasks.squad.task` (fine-tuning) and
`tasks.squad.export`.

`SquadExportOptions`: what the export scripts (`export_saved_model.py`,
`export_huggingface.py`) need beyond the checkpoint, defined as their flags the same way.
"""

import dataclasses
from typing import Optional

from common.settings import setting
from training.config import WHOLE_POSITIVE, FineTuningConfig, HeadConfig, check


@dataclasses.dataclass(frozen=True, kw_only=True)
class SquadReading:
    """How questions and passages are read and answered: the task's settings, and its
    exports' (`serving.load` answers as `run_squad.py` predicts)."""
    doc_stride: int = setting(128, recorded=True,
                              help="Pieces between the starts of document windows.")
    max_query_length: int = setting(64, recorded=True, help="Question pieces kept.")
    n_best_size: int = setting(20, help="Candidates kept per question.")
    max_answer_length: int = setting(30, help="Longest answer, in pieces.")
    version_2_with_negative: bool = setting(
        False, recorded=True, help="SQuAD 2.0: questions may have no answer.")
    null_score_diff_threshold: float = setting(
        0.0, help="v2.0: predict no answer when null score - best score exceeds this.")

    def reading(self):
        """These settings as a dict (for `export_squad` and `serving.json`)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(SquadReading)}


@dataclasses.dataclass(frozen=True, kw_only=True)
class SquadConfig(FineTuningConfig, HeadConfig, SquadReading):
    """The SQuAD task's settings (the fields of `FineTuningConfig`, of `SquadReading`,
    and these)."""
    max_seq_length: int = 384  # the original's SQuAD setting
    train_file: Optional[str] = setting(
        None, recorded=True, help="SQuAD JSON for training (train-v1.1.json).")
    predict_file: Optional[str] = setting(
        None, help="SQuAD JSON to predict (dev-v1.1.json).")
    train_on_first_answer: bool = setting(
        False, recorded=True, help="Train on the first answer of questions that have "
        "several (e.g. a dev file, as Hugging Face does); by default training takes "
        "questions with exactly one answer, as the original.")

    def __post_init__(self):
        super().__post_init__()
        check(self, {name: WHOLE_POSITIVE for name in (
            "doc_stride", "max_query_length", "n_best_size", "max_answer_length")})


@dataclasses.dataclass(frozen=True, kw_only=True)
class SquadExportOptions(HeadConfig, SquadReading):
    """What `export_saved_model.py` needs to export a question-answering model."""
