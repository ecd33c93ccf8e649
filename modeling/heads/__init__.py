"""Output heads that sit on the encoder: masked LM, classification (of the [CLS] vector
or of every token), span.

Pipeline position: `modeling.models` joins them to a `BertEncoder` for pre-training
(`MaskedLMHead` + a 2-way `ClassificationHead` for next sentence) and fine-tuning.
"""

from modeling.heads.bilstm import HEADS, BiLSTM
from modeling.heads.classification import ClassificationHead
from modeling.heads.masked_lm import MaskedLMHead
from modeling.heads.span_labeling import SpanLabelingHead

__all__ = ["BiLSTM", "ClassificationHead", "HEADS", "MaskedLMHead", "SpanLabelingHead"]
