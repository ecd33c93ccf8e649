"""What every task shares to train and serve a BERT model: its settings (`config`), the
flags that set them (`flags`), distribution strategies and mixed precision
(`distribution`), the learning-rate schedule and optimizers (`schedules`, `optimizers`),
the training loop with evaluation and prediction (`loop`), training checkpoints and the
record of the flags beside them (`checkpointing`, `run_flags`), the task interface
(`task`), the one runner (`runner`) and the SavedModel plumbing (`export`).

Pipeline position: pre-training and fine-tuning both train through this package; the
model comes from `modeling`, the data from `data_prep`, and each task's own code from
`tasks`.
"""
