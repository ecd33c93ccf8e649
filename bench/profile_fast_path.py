"""Profile: where a batch-1 request to `serving.load` spends its time, stage by stage,
beside ONNX Runtime's tokenizer and session on the same model: WordPiece and packing
(`fast_path.prepare`), the model (`model.tflite` or `model_int8.tflite` on LiteRT), the
answers (`fast_path.answer`).

    python -m bench.profile_fast_path --export_dir=W/process/export \
      --onnx_dir=W/process --shared_dir=../shared/data
(`bench/serving_speed.py --work_dir=W` leaves the fine-tuned export and its ONNX files
there: `fused.onnx`, `int8.onnx`.)
"""

import dataclasses
import os
import statistics
import time

import numpy as np

from bench import harness
from bench.harness import describe
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData, harness.Rounds):
    """The flags of this bench (`python -m bench.profile_fast_path --help`)."""
    export_dir: str = setting(help="A SavedModel export of a classifier (`run_classifier.py "
                              "--export_dir`).")
    onnx_dir: str = setting(help="A folder holding the same model exported to ONNX "
                            "(model.onnx), as serving_speed.py writes it.")
    requests: int = setting(300, help='Batch-1 requests per round.')


def main(settings):
    import onnxruntime
    from tokenizers import BertWordPieceTokenizer

    import serving
    with open(os.path.join(settings.shared_dir, "glue", "SST-2", "dev.tsv"),
              encoding="utf-8") as f:
        sentences = [line.split("\t")[0] for line in f.read().splitlines()[1:]]
    sentences = sentences[:settings.requests]
    ours = {p: serving.load(settings.export_dir, backend="tflite", precision=p)
            for p in ("float32", "int8")}
    tokenizer = BertWordPieceTokenizer(os.path.join(settings.export_dir, "vocab.txt"),
                                       lowercase=True)
    sessions = {p: onnxruntime.InferenceSession(os.path.join(settings.onnx_dir, f),
                                                providers=["CPUExecutionProvider"])
                for p, f in (("float32", "fused.onnx"), ("int8", "int8.onnx"))}
    stages = {}
    for _ in range(settings.rounds):
        for precision, predict in ours.items():
            for s in sentences:
                inputs, prepare = timed(predict.fast_path.prepare, {"text_a": [s]})
                outputs, model = timed(predict._lite, inputs[0])
                _, answer = timed(predict.fast_path.answer, outputs, inputs[1])
                for name, t in (("prepare", prepare), ("model", model), ("answer", answer)):
                    stages.setdefault(("ours", precision, name), []).append(t)
        for precision, session in sessions.items():
            for s in sentences:
                encoded, tokenize = timed(tokenizer.encode, s)
                ids = np.array([encoded.ids], np.int64)
                feed = {"input_ids": ids, "attention_mask": np.ones_like(ids),
                        "token_type_ids": np.zeros_like(ids)}
                _, model = timed(session.run, None, feed)
                for name, t in (("prepare", tokenize), ("model", model)):
                    stages.setdefault(("ORT", precision, name), []).append(t)
    print(f"\n{describe()}; {len(sentences)} SST-2 dev sentences at batch 1, "
          f"{settings.rounds} rounds; median ms per request")
    print("\n| stage | ours fp32 | ours int8 | ORT fp32 | ORT int8 |")
    print("|---|---|---|---|---|")
    for name in ("prepare", "model", "answer"):
        cells = [stages.get((who, p, name)) for who in ("ours", "ORT")
                 for p in ("float32", "int8")]
        print(f"| {name} | " + " | ".join("-" if c is None else
                                          f"{1e3 * statistics.median(c):.2f}"
                                          for c in cells) + " |")


if __name__ == "__main__":
    harness.run(main, Settings)
