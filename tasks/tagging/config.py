"""The tagging task's settings (`TaggingConfig`): what `run_ner.py` defines as flags and
checks before TensorFlow is imported, so that a wrong flag is answered at once.

Pipeline position: flags -> this config -> `tasks.tagging.task` (fine-tuning).

`TaggingExportOptions`: what the export scripts (`export_saved_model.py`,
`export_huggingface.py`) need beyond the checkpoint, defined as their flags the same way.
"""

import dataclasses
from typing import Optional

from common.settings import setting
from training.config import WHOLE_POSITIVE, FineTuningConfig, HeadConfig, check


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaggingConfig(FineTuningConfig, HeadConfig):
    """The tagging task's settings (the fields of `FineTuningConfig`, and these)."""
    do_lower_case: bool = False  # NER models are cased
    predict_batch_size: int = 32
    data_dir: str = setting(
        recorded=True, help="Folder with train/dev/test files: eng.train, eng.testa, "
        "eng.testb or train.txt, valid.txt (dev.txt), test.txt.")
    tag_scheme: str = setting(
        "iob2", choices=("iob2", "keep"), help="iob2: convert the tags to IOB2 (BIO), "
        "e.g. CoNLL-2003's IOB1; keep: use them as they are.")
    doc_stride: Optional[int] = setting(
        None, recorded=True, help="Pieces between the starts of overlapping windows of a "
        "long sentence (default max_seq_length / 2).")
    document_context: bool = setting(
        False, help="Fill each window with the words of the neighbouring sentences of the "
        "same document (the paper's setting); they are not labelled or predicted.")

    def __post_init__(self):
        super().__post_init__()
        check(self, {"doc_stride": WHOLE_POSITIVE})


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaggingExportOptions(HeadConfig):
    """What `export_saved_model.py` needs to rebuild a tagger beyond its checkpoint."""
    labels: Optional[tuple] = setting(
        None, help="The tags, in training order (run_ner.py's label_list.txt).")
    labels_file: Optional[str] = setting(
        None, help="A file with one label per line (run_ner.py writes "
        "output_dir/label_list.txt).")
