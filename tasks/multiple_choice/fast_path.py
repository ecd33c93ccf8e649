"""A multiple-choice export served from raw text without TensorFlow: each choice packed
as in training (`[CLS] context [SEP] question choice [SEP]`) and scored, in Python and
NumPy around `model.tflite`.

Pipeline position: `serving.load` of a multiple-choice export (see `serving.fast_path`).
"""

import numpy as np

from serving.fast_path import FastPath
from text import packing


class MultipleChoiceFastPath(FastPath):
    """`context`, `question` (may be empty) and `choices` (a list per row, the same
    number in every row) in; `scores`, `probabilities` and `label_id` out, as
    `MultipleChoiceModule.from_text`."""

    def prepare(self, columns):
        context_name, question_name, choices_name = self.text_inputs
        choices = [list(row) for row in columns[choices_name]]
        widths = {len(row) for row in choices}
        if len(widths) != 1 or 0 in widths:
            raise ValueError(f"choices must be [batch, num_choices] with one or more "
                             f"choices in every row, the same number; got "
                             f"{sorted(widths)} choices per row.")
        num_choices = widths.pop()
        firsts, seconds = [], []
        for context, question, row in zip(columns[context_name], columns[question_name],
                                          choices):
            question = question.decode("utf-8") if isinstance(question, bytes) else question
            for choice in row:
                choice = choice.decode("utf-8") if isinstance(choice, bytes) else choice
                firsts.append(context)
                seconds.append(f"{question} {choice}" if question else choice)
        pairs = [packing.document_segments(a, b, self.max_seq_length)[0] for a, b in
                 zip(self.tokenizer.ids(firsts), self.tokenizer.ids(seconds))]
        flat = self.pack(pairs)
        return {name: value.reshape(len(choices), num_choices, -1)
                for name, value in flat.items()}, None

    def answer(self, outputs, state):
        return {"scores": outputs["scores"].astype(np.float32),
                "probabilities": outputs["probabilities"].astype(np.float32),
                "label_id": outputs["label_id"].astype(np.int32)}
