"""A trained sentence encoder rebuilt for export: `export_huggingface.py
--task_type=sentence_embedding` writes it in sentence-transformers' layout (a BertModel,
its pooling and the L2 normalisation as modules; `BertSentenceEncoder.hf_extra_files`).

Pipeline position: a checkpoint of `run_sentence_embedding.py` (its pooling recorded in
export_settings.json) -> here -> the export scripts.
"""

from tasks.sentence_embedding.model import BertSentenceEncoder


def model_for_export(bert_config, options=None):
    """The sentence encoder with the recorded pooling, weights not loaded."""
    return BertSentenceEncoder(bert_config, pooling=options.pooling if options else "mean")
