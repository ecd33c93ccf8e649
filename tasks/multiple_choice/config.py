"""The multiple-choice task's settings (`MultipleChoiceConfig`): what `run_swag.py`
defines as flags and checks before TensorFlow is imported, so that a wrong flag is
answered at once.

Pipeline position: flags -> this config -> `tasks.multiple_choice.task` (fine-tuning).
"""

import dataclasses

from common.settings import setting
from tasks.multiple_choice import data
from training.config import FineTuningConfig, check


@dataclasses.dataclass(frozen=True, kw_only=True)
class MultipleChoiceConfig(FineTuningConfig):
    """The multiple-choice task's settings (the fields of `FineTuningConfig`, and these)."""
    data_dir: str = setting(
        recorded=True, help="Folder with the train/dev/test files: SWAG's train.csv, "
        "val.csv, test.csv, or train.jsonl, dev.jsonl, test.jsonl (see --data_format).")
    data_format: str = setting(
        "auto", choices=data.DATA_FORMATS, recorded=True,
        help="swag: the SWAG release's CSVs (first segment sent1, second sent2 + ending); "
        "jsonl: one {\"context\", \"question\" (optional), \"choices\", \"label\"} object "
        "per line; auto: swag when the folder has SWAG's files.")
    dropout_rate: float = setting(0.1, help="Dropout before the scoring layer.")

    def __post_init__(self):
        super().__post_init__()
        check(self, {"dropout_rate": (lambda p: 0 <= p < 1, "in [0, 1)")})
