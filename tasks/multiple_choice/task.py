"""Multiple choice: SWAG (the paper's Table 4) or the user's own sets, scored by accuracy.

Pipeline position: a pre-trained checkpoint -> this task (through `training.runner`, from
`run_swag.py`) -> eval_results.txt, test_results.tsv and a SavedModel that takes the
context and the choices as text. The task reads the files (`tasks.multiple_choice.data`),
packs one sequence per choice (`.features`), trains `.model.BertMultipleChoice` and
exports (`.export`).

Loss: softmax cross-entropy over each example's choices (a score per choice), averaged
over the global batch.
"""


import numpy as np
import tensorflow as tf
from absl import logging

from common import tables
from common.scores import softmax
from tasks.multiple_choice import data, features
from tasks.multiple_choice.model import BertMultipleChoice
from text.tokenization import FullTokenizer
from training import loop
from training.task import (
    Task,
    TrainInput,
    array_dataset_fn,
    requested_splits,
    static_shapes_needed,
    steps_for_epochs,
    token_count,
)


class MultipleChoiceTask(Task):
    """Fine-tunes `BertMultipleChoice` on a `MultipleChoiceConfig` task."""

    name = "multiple_choice"
    main_metric = "accuracy"
    skip_padding = True  # each choice scored from its [CLS]

    def __init__(self, config):
        super().__init__(config)
        self.tokenizer = FullTokenizer(config.vocab_file, do_lower_case=config.do_lower_case)
        self.format = None
        self.splits = {}  # split -> (path, examples)
        self._arrays = {}  # split -> features, packed once per run

    # ------------------------------------------------------------------ inputs
    def prepare(self, output_dir, do_train=False, do_eval=False, do_predict=False):
        """Reads (and checks) every file the run uses."""
        c = self.config
        self.format = data.data_format(c.data_dir, c.data_format)
        for split in requested_splits(do_train, do_eval, do_predict):
            path = data.find_split(c.data_dir, split, self.format)
            examples = data.read_examples(path, self.format, labelled=split != "test")
            self.splits[split] = (path, examples)
            logging.info("%s: %d %s examples of %d choices.", path, len(examples), split,
                         len(examples[0].choices))

    def input_paths(self):
        return dict(super().input_paths(),
                    data_dir=[path for path, _ in self.splits.values()])

    def _features(self, split):
        if split not in self._arrays:
            self._arrays[split] = features.convert_examples(
                self.splits[split][1], self.tokenizer, self.config.max_seq_length)
        return self._arrays[split]

    def build_model(self, bert_config):
        return BertMultipleChoice(bert_config, dropout_rate=self.config.dropout_rate)

    def train_input(self, global_batch_size, seed):
        c = self.config
        arrays = self._features("train")
        count = len(arrays["label_ids"])
        steps, warmup = steps_for_epochs(count, global_batch_size, c.num_train_epochs,
                                         c.warmup_proportion)
        return TrainInput(array_dataset_fn(
            arrays, global_batch_size, seed, pad_to_longest=not static_shapes_needed(),
            grouped=True),
            steps, warmup, count)

    # ------------------------------------------------------------------ the loss
    def loss(self, model, batch, normalizers, training):
        logits = tf.cast(self.encode(model, batch, training)["logits"], tf.float32)
        per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=batch["label_ids"], logits=logits)
        loss = tf.reduce_sum(per_example) / normalizers["examples"]
        return loss, {"tokens": token_count(batch)}

    # ------------------------------------------------------------------ results
    def probabilities(self, model, split, batch_size):
        """(probabilities [examples, choices], labels [examples]) of a split."""
        arrays = self._features(split)
        logits = loop.predict_arrays(model, arrays, ["logits"], batch_size,
                                     skip_padding=self.padding_skipped(),
                                     max_seq_length=self.config.max_seq_length)["logits"]
        return softmax(logits), arrays["label_ids"]

    def evaluate(self, model, strategy=None):
        """Accuracy on the dev file, the mean loss, and the number of examples."""
        probabilities, labels = self.probabilities(model, "dev", self.config.eval_batch_size)
        picked = probabilities[np.arange(len(labels)), labels]
        return {"accuracy": float(np.mean(probabilities.argmax(-1) == labels)),
                "eval_loss": float(np.mean(-np.log(np.maximum(picked, 1e-30)))),
                "eval_examples": len(labels)}

    def predict(self, model):
        """test_results.tsv: per example, the probability of each choice, the index of the
        chosen one and its text (tab-separated, no header, in the file's order); and
        test_predictions.tsv, the same with a header and each example's id and text."""
        path, examples = self.splits["test"]
        probabilities, _ = self.probabilities(model, "test", self.config.predict_batch_size)
        rows, table = [], []
        for example, row in zip(examples, probabilities):
            chosen = int(row.argmax())
            text = " ".join(example.choices[chosen].split())  # no tab or newline inside
            rows.append("\t".join(f"{p:.6f}" for p in row) + f"\t{chosen}\t{text}\n")
            table.append([example.guid, example.context, example.question, chosen, text,
                          *map(float, row)])
        logging.info("Predicted %d examples of %s.", len(examples), path)
        choices = probabilities.shape[-1] if len(probabilities) else 0
        header = ["id", "context", "question", "answer", "answer_text",
                  *(f"p({i})" for i in range(choices))]
        return {"test_results.tsv": "".join(rows),
                "test_predictions.tsv": tables.tsv(header, table)}, None

    def serving_requests(self):
        """The dev questions as (context, question, choices)."""
        if "dev" not in self.splits:
            return None
        return [(e.context, e.question or "", list(e.choices)) for e in self.splits["dev"][1]]

    def export(self, model, export_dir, tflite_quantize=False):
        c = self.config
        # here, not at the top: the export's modules import tensorflow-text (0.2 s)
        from tasks.multiple_choice.export import save_for_export
        save_for_export(model, export_dir, None, c.vocab_file, c.do_lower_case,
                        c.max_seq_length, tflite_quantize=tflite_quantize)
        logging.info("Exported a SavedModel to %s (serving_default: context, question, "
                     "choices as text; serving_ids: token ids [batch, choices, seq]).",
                     export_dir)
