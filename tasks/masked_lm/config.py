"""The fill-mask export's settings (`MaskedLMExportOptions`): what the export scripts
define as flags for `--task_type=masked_lm`, read before TensorFlow is imported.

Pipeline position: flags -> this -> `tasks.masked_lm.export`.
"""

import dataclasses

from common.settings import setting

DEFAULT_TOP_K = 5


@dataclasses.dataclass(frozen=True, kw_only=True)
class MaskedLMExportOptions:
    """What the fill-mask SavedModel answers beyond the model."""
    top_k: int = setting(DEFAULT_TOP_K, help="masked_lm: the words the export answers per "
                         "[MASK], most probable first.")

    def __post_init__(self):
        if self.top_k < 1:
            raise ValueError(f"--top_k={self.top_k}: must be at least 1.")
