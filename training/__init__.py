"""What every task shares to train a BERT model: its settings (`config`), distribution
strategies and mixed precision (`distribution`), the learning-rate schedule and optimizers
(`schedules`, `optimizers`), the training loop with evaluation and prediction (`loop`),
training checkpoints and the record of the flags beside them (`checkpointing`,
`run_flags`), preemption and the output folder's lock (`preemption`, `run_lock`), the task
interface (`task`), the one runner (`runner`) and the grid of runs (`grid`).

Pipeline position: pre-training and fine-tuning both train through this package; the
model comes from `modeling`, the inputs from `text`, and each task's own code from
`tasks` (through the `Task` interface: this package names no task). The flags that set
its configs are in `cli.flags`; the exports in `serving`.
"""

from common import quiet

quiet.quiet_tensorflow_start()  # when we import TensorFlow: no start-up lines
