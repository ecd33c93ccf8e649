"""The classification task's settings (`ClassificationConfig`): what `run_classifier.py`
defines as flags and checks before TensorFlow is imported, so that a wrong flag is
answered at once.

Pipeline position: flags -> this config -> `tasks.classification.task` (fine-tuning).

`ClassificationExportOptions`: what the export scripts (`export_saved_model.py`,
`export_huggingface.py`) need beyond the checkpoint, defined as their flags the same way.
"""

import dataclasses
from typing import Optional

from common.settings import setting
from text.packing import LONG_DOCUMENT
from training.config import FineTuningConfig, HeadConfig, check

# Feature conversion: the Python tokenizer or the in-graph one (identical ids).
TOKENIZERS = ("python", "graph")
THRESHOLD = (lambda t: 0 < t < 1, "above 0 and below 1")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClassificationConfig(FineTuningConfig, HeadConfig):
    """The classification task's settings (the fields of `FineTuningConfig`, and these)."""
    task_name: str = setting(
        recorded=True, help="CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE, WNLI, XNLI, "
        "or generic (your own files).")
    data_dir: str = setting(recorded=True,
                            help="Folder with the task's train/dev/test files.")
    dropout_rate: float = setting(0.1, help="Dropout before the classifier.")
    xnli_language: str = setting("zh", help="XNLI: the language to train and test on.")
    tokenizer: str = setting(
        "python", choices=TOKENIZERS, help="Feature conversion: the Python "
        "tokenizer or the in-graph one (identical results).")
    text_a_column: str = setting("text_a",
                                 help="generic task: column of the first text.")
    text_b_column: Optional[str] = setting(
        None, help="generic task: column of the second text.")
    label_column: str = setting("label", help="generic task: column of the label.")
    id_column: Optional[str] = setting(
        None, help="generic task: column of each example's id, which names it in "
        "test_predictions.tsv (default: a column named id where there is one, else the "
        "example's line in its file).")
    labels: Optional[tuple] = setting(
        None, help="generic task: the label list (default: read from the training "
        "data).")
    regression: bool = setting(False, help="generic task: the label is a number.")
    multi_label: bool = setting(
        False, recorded=True, help="generic task: each example has any number of labels "
        "(none included): a list in JSON lines, labels joined by --label_separator in "
        "TSV/CSV. A sigmoid per label with binary cross-entropy; eval_results.txt has "
        "micro_f1, macro_f1 and exact_match.")
    label_separator: str = setting(",", help="--multi_label, TSV/CSV files: what separates "
                                   "an example's labels in its label column.")
    multi_label_threshold: float = setting(
        0.5, help="--multi_label: a label is predicted when its probability is at least "
        "this.")
    long_document: str = setting(
        "truncate", choices=LONG_DOCUMENT, recorded=True,
        help="A text longer than --max_seq_length: truncate (the original), head_tail "
        "(its first and last pieces, Sun et al. 2019: 128 + 382 of 510) or windows "
        "(every window, --doc_stride pieces apart; trained on each with the document's "
        "label, scored by the mean of the windows' logits). For pairs, text_b is kept "
        "whole and text_a is the long one.")
    doc_stride: Optional[int] = setting(
        None, recorded=True, help="--long_document=windows: pieces between window starts "
        "(default half a window).")
    bucket_by_length: bool = setting(
        False, recorded=True, help="Training batches of sequences of similar length (less "
        "padding, faster; as Hugging Face's group_by_length). Every batch is padded only "
        "to its own longest sequence either way.")

    def __post_init__(self):
        super().__post_init__()
        check(self, {"dropout_rate": (lambda p: 0 <= p < 1, "in [0, 1)"),
                     "long_document": (lambda m: m in LONG_DOCUMENT,
                                       f"one of {list(LONG_DOCUMENT)}"),
                     "doc_stride": (lambda s: s >= 1, "at least 1"),
                     "tokenizer": (lambda t: t in TOKENIZERS,
                                   f"one of {list(TOKENIZERS)}"),
                     "multi_label_threshold": THRESHOLD})
        if self.multi_label and (self.task_name or "").lower() != "generic":
            raise ValueError(f"--multi_label is for your own files (--task_name=generic), "
                             f"not {self.task_name}.")
        if self.multi_label and self.regression:
            raise ValueError("--multi_label and --regression: an example has labels or a "
                             "score, not both.")
        if self.multi_label and not self.label_separator:
            raise ValueError("--label_separator is empty: give the text between labels.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClassificationExportOptions(HeadConfig):
    """What `export_saved_model.py` needs to rebuild a classifier beyond its checkpoint."""
    labels: Optional[tuple] = setting(
        None, help="The label list, in training order (e.g. 0,1 or "
        "contradiction,entailment,neutral; for a tagger, run_ner.py's label_list.txt, also "
        "accepted as --labels_file).")
    labels_file: Optional[str] = setting(
        None, help="A file with one label per line (run_ner.py writes "
        "output_dir/label_list.txt).")
    regression: bool = setting(False, help="Classifier: one score instead of labels.")
    multi_label: bool = setting(False, help="Classifier: any number of labels per text (a "
                                "sigmoid per label; run_classifier.py --multi_label).")
    multi_label_threshold: float = setting(
        0.5, help="Classifier, --multi_label: the probability from which a label is "
        "predicted.")
    pair: bool = setting(False, help="Classifier: the raw-text signature also takes text_b.")
    long_document: str = setting(
        "truncate", choices=LONG_DOCUMENT, help="Classifier: how the raw-text signature "
        "reads a long text, as the model was fine-tuned (run_classifier.py "
        "--long_document).")
    doc_stride: Optional[int] = setting(
        None, help="Classifier, --long_document=windows: pieces between window starts "
        "(default half a window).")

    def __post_init__(self):
        check(self, {"multi_label_threshold": THRESHOLD})
