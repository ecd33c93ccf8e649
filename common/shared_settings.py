"""The settings several tools share, declared once: the model's files, its vocabulary and
casing, and the input length. Each is a small frozen dataclass of `common.settings.setting`
fields that a config or a tool's options inherit, so that `--vocab_file` means the same
thing, with the same help, in every script that takes it.

Pipeline position: under every stage that reads a model or tokenizes text (vocabulary ->
TFRecords -> pre-training -> fine-tuning -> export); `cli.flags.define_settings` turns the
fields into flags.

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class MyToolOptions(Vocabulary, SequenceLength):
        output_file: str = setting(help="Where to write.")
"""

import dataclasses
import os
from typing import Optional

from common.settings import setting

CHECKPOINT_HELP = ("The weights: a Google TF1 checkpoint prefix, a Hugging Face "
                   "model.safetensors, or a checkpoint of this project (output_dir/ckpt-N, "
                   "output_dir/best/model.ckpt). To train: omit to start from random "
                   "weights.")
VOCAB_FILE_HELP = "The WordPiece vocabulary (vocab.txt) of the model."
BERT_CONFIG_HELP = "The bert_config.json of the model (or a Hugging Face config.json)."


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelFiles:
    """The model: its configuration and its weights."""
    bert_config_file: str = setting(recorded=True, help=BERT_CONFIG_HELP)
    init_checkpoint: Optional[str] = setting(None, recorded=True, help=CHECKPOINT_HELP)


@dataclasses.dataclass(frozen=True, kw_only=True)
class WeightedModelFiles(ModelFiles):
    """A model whose weights a tool needs (to read features, to export): the checkpoint
    is required."""
    init_checkpoint: str = setting(recorded=True, help=CHECKPOINT_HELP)


@dataclasses.dataclass(frozen=True, kw_only=True)
class VocabularyFile:
    """The vocabulary alone (of records, or of a model)."""
    vocab_file: str = setting(recorded=True, help=VOCAB_FILE_HELP)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Casing:
    """Whether text is lower-cased before WordPiece."""
    do_lower_case: bool = setting(
        True, recorded=True, help="Lower-case and strip accents: True for uncased models, "
        "False for cased ones.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Vocabulary(Casing, VocabularyFile):
    """How text becomes WordPiece ids: the vocabulary and its casing."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelVocabulary(Vocabulary):
    """A model's vocabulary: its length must be the model's `vocab_size` (checked before
    anything runs, `text.tokenization.check_vocabulary_fits`)."""
    vocab_smaller_than_model: bool = setting(
        False, help="Accept a --vocab_file with fewer tokens than the model's vocab_size "
        "(an embedding table padded on purpose); otherwise a vocabulary of another length "
        "than the model's is refused.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SequenceLength:
    """The input length."""
    max_seq_length: int = setting(
        128, recorded=True, help="Maximum sequence length in WordPiece tokens, [CLS] and "
        "[SEP] included; longer inputs are truncated (or split into windows where the "
        "task says so).")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScoreOnly:
    """Scoring a predictions file with the task's own metric, no model."""
    do_eval_only: bool = setting(False, help="Only score --predictions_file with the "
                                 "task's metric (against the task's evaluation data); "
                                 "no model.")
    predictions_file: Optional[str] = setting(None, help="The predictions to score "
                                              "(the file the task's --do_predict writes).")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DocumentOutput:
    """Where an extraction tool writes its documents, and with how many processes."""
    output_dir: str = setting(help="Folder for the document files.")
    num_output_files: int = setting(16, help="How many document files to write.")
    num_workers: int = setting(os.cpu_count() or 1, help="Worker processes (reading, "
                               "cleaning and sentence splitting).")


# The Chinese word segmenters `--word_segmenter` offers (`text.chinese_words`).
WORD_SEGMENTERS = ("none", "jieba")


@dataclasses.dataclass(frozen=True, kw_only=True)
class WholeWordMasking:
    """Which tokens the masked LM masks together."""
    do_whole_word_mask: bool = setting(False, help="Mask all WordPieces of a word "
                                       "together rather than each independently.")
    word_segmenter: str = setting(
        "none", choices=WORD_SEGMENTERS, help="With --do_whole_word_mask: group the "
        "characters of Chinese words with this segmenter and mask each word whole "
        "(Chinese BERT-wwm; needs `pip install jieba`); 'none': every CJK character is a "
        "word of its own, as in the original.")
