"""Text to model inputs for every task: tokenizers (Python and in-graph), packing,
vocabulary learning, corpus extraction, the pre-training data pipeline, and file access
with atomic writes (`file_io`).

Pipeline position: the first stage (text -> token ids -> TFRecords) and the bottom layer:
it imports nothing else of the project, and its tokenizers and packing are also used by
the tasks (`tasks/`) and in-graph by exported SavedModels. Each task's own reader and
features live in its folder under `tasks/`.
"""
