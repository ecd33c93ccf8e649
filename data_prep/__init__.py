"""Text to model inputs: tokenization, vocabularies, pre-training data and task readers.

Pipeline position: the first stage (text -> token ids -> TFRecords); its tokenizers are
also used in-graph by exported SavedModels.
"""
