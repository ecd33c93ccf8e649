"""A question-answering export served from raw text without TensorFlow, answering as
`run_squad.py` predicts: the passage in windows (`doc_stride` apart), the n-best spans of
each, the original's post-processing back onto the passage's words, and for SQuAD 2.0
the null answer, in Python and NumPy around `model.tflite`.

Pipeline position: `serving.load` of a SQuAD export (see `serving.fast_path`). Unlike
the SavedModel's raw-text signature (one window; the logits and each position's span),
it answers with text.
"""

import numpy as np

from serving.fast_path import FastPath
from tasks.squad.config import SquadReading
from tasks.squad.data import convert_examples, squad_examples
from tasks.squad.predictions import compute_predictions


class SquadFastPath(FastPath):
    """`question` and `context` in; `answer` (UTF-8 bytes; "" when SQuAD 2.0's null
    answer wins), its `probability` among the n-best, its `start_logit` and `end_logit`
    out, and `null_odds` (null score minus the best answer's) for SQuAD 2.0."""

    # As in the original's post-processing, the n-best starts and ends are picked among
    # every position of a window, padding included: a window's answer would depend on
    # how far its group is padded.
    group_by_length = False

    def __init__(self, config, tokenizer, seq_multiple=8):
        super().__init__(config, tokenizer, seq_multiple)
        # serving.json's reading settings; their defaults for an export that predates them.
        self.reading = {name: config.get(name, default) for name, default in
                        SquadReading().reading().items()}
        self.do_lower_case = config["do_lower_case"]

    def prepare(self, columns):
        texts = {name: [t.decode("utf-8") if isinstance(t, bytes) else t for t in values]
                 for name, values in columns.items()}
        paragraphs = [{"context": context, "qas": [{"id": str(row), "question": question}]}
                      for row, (question, context) in
                      enumerate(zip(texts["question"], texts["context"]))]
        examples, _ = squad_examples({"data": [{"paragraphs": paragraphs}]}, "the request",
                                     is_training=False)
        r = self.reading
        features = convert_examples(examples, self.tokenizer.python, self.max_seq_length,
                                    r["doc_stride"], r["max_query_length"],
                                    is_training=False)
        length = self.length(max(len(f.tokens) for f in features))
        inputs = {name: np.array([getattr(f, name)[:length] for f in features], np.int32)
                  for name in ("input_ids", "input_mask", "segment_ids")}
        return inputs, (examples, features)

    def answer(self, outputs, state):
        examples, features = state
        r = self.reading
        answers, nbest, null_odds = compute_predictions(
            examples, features, outputs["start_logits"], outputs["end_logits"],
            r["n_best_size"], r["max_answer_length"], self.do_lower_case,
            r["version_2_with_negative"], r["null_score_diff_threshold"])
        chosen = []
        for example in examples:
            text = answers[example.qas_id]
            chosen.append(next((e for e in nbest[example.qas_id] if e["text"] == text),
                               {"text": text, "probability": 0.0, "start_logit": 0.0,
                                "end_logit": 0.0}))
        out = {"answer": np.array([e["text"].encode("utf-8") for e in chosen], object)}
        for key in ("probability", "start_logit", "end_logit"):
            out[key] = np.array([e[key] for e in chosen], np.float32)
        if r["version_2_with_negative"]:
            out["null_odds"] = np.array([null_odds.get(e.qas_id, 0.0) for e in examples],
                                        np.float32)
        return out
