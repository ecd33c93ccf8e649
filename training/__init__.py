"""What every entry point shares to train a BERT model: the learning-rate schedule, the
optimizers, distribution strategies and mixed precision, the training loop (gradient
accumulation, checkpoints, resume, NaN guard, logs and TensorBoard) and evaluation.

Pipeline position: pre-training (`run_pretraining.py`) and fine-tuning (`run_classifier.py`,
`run_squad.py`, `run_ner.py`) all train through this package; the model comes from
`modeling`, the data from `data_prep`.
"""
