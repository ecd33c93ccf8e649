"""BERT in Keras 3: configuration, layers, encoder, heads, models and checkpoint I/O.

Pipeline position: the model every stage uses (text -> TFRecords -> pre-training ->
fine-tuning -> SavedModel). See README.md for how the pieces fit.
"""

from modeling.checkpoint import (CheckpointError, CheckpointReadError, LoadReport,
                                 load_checkpoint, save_google_checkpoint, save_tf2_checkpoint)
from modeling.config import BertConfig, BertConfigError
from modeling.encoder import BertEncoder
from modeling.huggingface import save_huggingface
from modeling.models import (BertClassifier, BertPretrainer, BertSpanLabeler,
                             BertTokenClassifier, EncoderModel)

__all__ = [
    "BertConfig", "BertConfigError", "BertEncoder", "BertPretrainer", "BertClassifier",
    "BertSpanLabeler", "BertTokenClassifier", "load_checkpoint", "save_google_checkpoint",
    "save_tf2_checkpoint", "save_huggingface", "CheckpointError", "CheckpointReadError",
    "LoadReport", "EncoderModel",
]
