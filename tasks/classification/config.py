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
from tasks.classification import class_weights
from text.packing import LONG_DOCUMENT
from training.config import FineTuningConfig, HeadConfig, check

# Feature conversion: the Python tokenizer or the in-graph one (identical ids).
TOKENIZERS = ("python", "graph")
THRESHOLD = (lambda t: 0 < t < 1, "above 0 and below 1")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClassifierOutputs:
    """What a classifier answers and how it reads a long text: declared once, for
    fine-tuning (flags of `run_classifier.py`) and for the export (flags of the export
    scripts, which read them from the training run's record, `training.export_record`)."""
    labels: Optional[tuple] = setting(
        None, help="The label list, in the model's order (e.g. 0,1 or "
        "contradiction,entailment,neutral). Fine-tuning a generic task: default read from "
        "the training data. Exporting: default the training run's (for a tagger, "
        "run_ner.py's label_list.txt, also accepted as --labels_file).")
    regression: bool = setting(False, help="The label is a number: one score instead of "
                               "labels (generic task).")
    multi_label: bool = setting(
        False, recorded=True, help="Each example has any number of labels (none included; "
        "generic task): a list in JSON lines, labels joined by --label_separator in "
        "TSV/CSV. A sigmoid per label with binary cross-entropy; eval_results.txt has "
        "micro_f1, macro_f1 and exact_match.")
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

    def __post_init__(self):
        check(self, {"long_document": (lambda m: m in LONG_DOCUMENT,
                                       f"one of {list(LONG_DOCUMENT)}"),
                     "doc_stride": (lambda s: s >= 1, "at least 1"),
                     "multi_label_threshold": THRESHOLD})
        if self.multi_label and self.regression:
            raise ValueError("--multi_label and --regression: an example has labels or a "
                             "score, not both.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClassificationConfig(FineTuningConfig, HeadConfig, ClassifierOutputs):
    """The classification task's settings (the fields of `FineTuningConfig`, and these)."""
    task_name: str = setting(
        recorded=True, help="CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE, WNLI, XNLI, "
        "or generic (your own files).")
    data_dir: str = setting(recorded=True,
                            help="Folder with the task's train/dev/test files.")
    dropout_rate: float = setting(0.1, help="Dropout before the classifier.")
    xnli_language: str = setting("zh", help="XNLI: the language to train and test on.")
    tokenizer: str = setting(
        "python", choices=TOKENIZERS, help="Feature conversion: the original's "
        "WordPiece (compiled where its ids are the same) or the in-graph one (identical "
        "results).")
    text_a_column: str = setting("text_a", recorded=True,
                                 help="generic task: column of the first text.")
    text_b_column: Optional[str] = setting(
        None, recorded=True, help="generic task: column of the second text.")
    label_column: str = setting("label", recorded=True,
                                help="generic task: column of the label.")
    id_column: Optional[str] = setting(
        None, help="generic task: column of each example's id, which names it in "
        "test_predictions.tsv (default: a column named id where there is one, else the "
        "example's line in its file).")
    label_separator: str = setting(",", help="--multi_label, TSV/CSV files: what separates "
                                   "an example's labels in its label column.")
    bucket_by_length: bool = setting(
        False, recorded=True, help="Training batches of sequences of similar length (less "
        "padding, faster; as Hugging Face's group_by_length). Every batch is padded only "
        "to its own longest sequence either way.")
    class_weights: Optional[str] = setting(
        None, recorded=True, help="Weigh each label's examples in the training loss, for "
        "imbalanced labels: 'balanced' (inverse frequency in the training file: examples "
        "/ (labels x the label's examples), as scikit-learn and Keras users compute it) "
        "or one positive number per label, comma-separated, in the run's label order "
        "(export_settings.json's labels). --multi_label: each label's positive weight "
        "(PyTorch's pos_weight; 'balanced': its negatives / positives). The weights used "
        "are written to output_dir/class_weights.json.")

    def __post_init__(self):
        FineTuningConfig.__post_init__(self)
        ClassifierOutputs.__post_init__(self)
        check(self, {"dropout_rate": (lambda p: 0 <= p < 1, "in [0, 1)"),
                     "tokenizer": (lambda t: t in TOKENIZERS,
                                   f"one of {list(TOKENIZERS)}")})
        if self.multi_label and (self.task_name or "").lower() != "generic":
            raise ValueError(f"--multi_label is for your own files (--task_name=generic), "
                             f"not {self.task_name}.")
        if class_weights.parse(self.class_weights) and self.regression:
            raise ValueError("--class_weights with --regression: a score has no classes to "
                             "weigh.")
        if self.multi_label and not self.label_separator:
            raise ValueError("--label_separator is empty: give the text between labels.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClassificationExportOptions(HeadConfig, ClassifierOutputs):
    """What `export_saved_model.py` needs to rebuild a classifier beyond its checkpoint;
    a fine-tuning run records them (`ClassificationTask.export_options`)."""
    labels_file: Optional[str] = setting(
        None, help="A file with one label per line (run_ner.py writes "
        "output_dir/label_list.txt).")
    pair: bool = setting(False, help="Classifier: the raw-text signature also takes text_b.")
