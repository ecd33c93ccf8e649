"""Keras 3 building blocks of the BERT encoder: embeddings, self-attention, Transformer block.

Pipeline position: assembled by `modeling.encoder.BertEncoder`, which every later stage
(pre-training, fine-tuning, feature extraction, export) uses.
"""

from modeling.layers.attention import SelfAttention, attention_mask_adder
from modeling.layers.embeddings import BertEmbeddings
from modeling.layers.transformer_block import TransformerBlock

__all__ = ["BertEmbeddings", "SelfAttention", "TransformerBlock", "attention_mask_adder"]
