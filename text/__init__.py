"""Text -> token ids -> model inputs: the original's WordPiece tokenizer (`tokenization`)
and its in-graph twin (`graph_tokenizer`), vocabulary learning (`vocabulary`), packing
into `[CLS] a [SEP] b [SEP]` in Python and in TensorFlow ops (`packing`, `graph_packing`),
and the check that lower-casing suits a script (`casing`).

Pipeline position: below the pre-training data pipeline (`data_prep`), the tasks' readers
(`tasks/`) and the exports (`serving`, `tasks/*/export.py`); above `common` and the model's
input contract (`modeling.inputs`). It imports no task, training or command-line code.
"""

from common import quiet

quiet.quiet_tensorflow_start()  # when we import TensorFlow: no start-up lines
