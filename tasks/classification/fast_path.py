"""A classifier export served from raw text without TensorFlow: WordPiece, packing (long
texts truncated, head and tail, or in windows, as the model was fine-tuned) and the
answers of its raw-text signature, in NumPy around `model.tflite`.

Pipeline position: `serving.load` of a classification export (see `serving.fast_path`).
"""

import numpy as np

from common.scores import mean_over_windows, sigmoid, softmax
from serving.fast_path import FastPath
from text import packing


class ClassificationFastPath(FastPath):
    """`text_a` (and `text_b`) in; `probabilities`, `label_id`, `label`, `logits` out
    (or `score` for regression; `probabilities`, `logits`, `predicted` and `labels` for
    multi-label models), as `ClassificationModule.from_text`."""

    def __init__(self, config, tokenizer, seq_multiple=8):
        super().__init__(config, tokenizer, seq_multiple)
        self.regression = config.get("regression", False)
        self.multi_label = config.get("multi_label", False)
        self.threshold = config.get("threshold", 0.5)
        self.labels = np.array([label.encode("utf-8") for label in config["labels"]],
                               dtype=object)
        self.long_document = config.get("long_document", "truncate")
        self.doc_stride = config.get("doc_stride")

    def prepare(self, columns):
        ids_a = self.tokenizer.ids(columns[self.text_inputs[0]])
        ids_b = self.tokenizer.ids(columns[self.text_inputs[1]]) \
            if len(self.text_inputs) > 1 else [[]] * len(ids_a)
        pairs, rows = packing.segment_pairs(ids_a, ids_b, self.max_seq_length,
                                            self.long_document, self.doc_stride)
        return self.pack(pairs), (np.array(rows), len(ids_a))

    def answer(self, outputs, state):
        rows, batch = state
        if self.regression:  # the mean of the windows' scores
            return {"score": mean_over_windows(outputs["score"], rows, batch).astype(
                np.float32)}
        # The windows' mean logits. (Exports from before `logits` was an output give
        # probabilities only; their logs differ from the logits by a shift per window,
        # which the softmax cancels.)
        has_logits = "logits" in outputs
        logits = outputs["logits"] if has_logits else np.log(np.maximum(
            outputs["probabilities"], 1e-45))
        logits = mean_over_windows(logits, rows, batch)
        if self.multi_label:
            return self._labels(logits)
        probabilities = softmax(logits).astype(np.float32)
        label_id = logits.argmax(-1).astype(np.int32)
        answers = {"probabilities": probabilities, "label_id": label_id,
                   "label": self.labels[label_id]}
        if has_logits:
            answers["logits"] = logits.astype(np.float32)
        return answers

    def _labels(self, logits):
        """A multi-label model's answers: each label's probability, those predicted (0/1
        and their names, padded with b"" to the most any row has)."""
        logits = logits.astype(np.float32)
        probabilities = sigmoid(logits).astype(np.float32)
        predicted = probabilities >= np.float32(self.threshold)
        width = int(predicted.sum(1).max()) if len(predicted) else 0
        labels = np.full((len(predicted), width), b"", dtype=object)
        for row, chosen in enumerate(predicted):
            names = self.labels[chosen]
            labels[row, :len(names)] = names
        return {"probabilities": probabilities, "logits": logits,
                "predicted": predicted.astype(np.int32), "labels": labels}
