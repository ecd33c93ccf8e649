"""How far `model_int8.tflite` answers from `model.tflite`: both served by `serving.load`
(LiteRT) on the same requests, compared answer by answer.

Pipeline position: after an export with `tflite_quantize` (`run_classifier.py
--export_dir --tflite_quantize --do_eval`), on the task's dev requests; the report is
written beside the export as `int8_check.json` and logged.
"""

import json
import os

import numpy as np

from serving.predictor import load

REPORT_FILE = "int8_check.json"
# The answer compared per task's outputs: the first of these the export answers with
# ("predicted": a multi-label model's labels; "id": fill-mask's top words).
_ANSWER_KEYS = ("label_id", "predicted", "word_tags", "answer", "score", "id")


def int8_report(export_dir, requests, batch_size=32):
    """{"requests", "answer", "agreement" (share of requests whose int8 answer equals
    the float32 one; for a score, within 0.05), "max_probability_difference"} over
    `requests` (rows as `serving.load` takes them); written to `export_dir`'s
    `int8_check.json` too."""
    answers = {}
    for precision in ("float32", "int8"):
        predict = load(export_dir, backend="tflite", precision=precision)
        answers[precision] = [predict(requests[i:i + batch_size])
                              for i in range(0, len(requests), batch_size)]
    first = answers["float32"][0]
    key = next(k for k in _ANSWER_KEYS if k in first)
    same, total, worst = 0, 0, 0.0
    for a, b in zip(answers["float32"], answers["int8"]):
        if key == "score":
            equal = np.abs(a[key] - b[key]) <= 0.05
        elif a[key].ndim > 1:  # per word: a request agrees when every word does
            equal = np.all(a[key] == b[key], axis=tuple(range(1, a[key].ndim)))
        else:
            equal = a[key] == b[key]
        same += int(np.sum(equal))
        total += len(equal)
        if "probabilities" in a:
            worst = max(worst, float(np.abs(a["probabilities"] - b["probabilities"]).max()))
    report = {"requests": total, "answer": key, "agreement": same / max(total, 1),
              "max_probability_difference": worst}
    path = os.path.join(export_dir, REPORT_FILE)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    os.replace(path + ".tmp", path)
    return report
