"""Does `--dtype=bfloat16` speed up the CPU pre-training recipe, and does it learn as well?

On the records and model of a `pretrain_from_text.py` run (`--recipe_dir`), the recipe's
pre-training (`run_pretraining.py`, its batch, learning rate and schedule, shortened to
`--steps`) is run from the same seed with `--dtype=float32` and `--dtype=bfloat16`
(Keras mixed precision: bfloat16 compute, float32 weights), alternating, each run in its
own process. Reported: training sequences per second (median of the logged rates after
the first log), the held-out masked-LM loss and accuracy at the end, and TensorFlow's
float32 and bfloat16 matmul peaks measured in the same run (bfloat16 matmuls are fast
only where the CPU has AVX512_BF16 or AMX).

    python -m research.recipe_bfloat16 --recipe_dir=/tmp/recipe/recipe [--steps=600]
"""

import dataclasses
import json
import os
import statistics
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from bench import harness
from bench.harness import describe, matmul_peak
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pretrain(recipe_dir, dtype, steps, out):
    """The recipe's pre-training for `steps` steps in `dtype`; returns (sequences/s,
    held-out results)."""
    with open(os.path.join(recipe_dir, "recipe.json"), encoding="utf-8") as f:
        recipe = json.load(f)["recipe"]
    records = os.path.join(recipe_dir, "records")
    argv = [sys.executable, os.path.join(ROOT, "run_pretraining.py"),
            f"--input_file={records}/train-00.tfrecord,{records}/train-01.tfrecord",
            f"--eval_input_file={records}/heldout.tfrecord",
            f"--bert_config_file={os.path.join(recipe_dir, 'bert_config.json')}",
            f"--objective={recipe['objective']}", f"--output_dir={out}",
            f"--max_seq_length={recipe['max_seq_length']}",
            f"--max_predictions_per_seq={recipe['max_predictions_per_seq']}",
            f"--train_batch_size={recipe['train_batch_size']}",
            f"--learning_rate={recipe['learning_rate']}", f"--optimizer={recipe['optimizer']}",
            f"--num_train_steps={steps}",
            f"--num_warmup_steps={int(recipe['warmup_share'] * steps)}",
            f"--dtype={dtype}", "--do_train", "--do_eval", "--log_steps=50",
            "--iterations_per_loop=50", f"--save_checkpoints_steps={steps}",
            "--eval_batch_size=64", "--max_eval_steps=200", "--seed=1"]
    print("$", " ".join(argv), flush=True)
    result = subprocess.run(argv, capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    if result.returncode:
        sys.exit(f"run_pretraining.py failed:\n{result.stderr[-3000:]}")
    rates, evaluation = [], {}
    with open(os.path.join(out, "metrics.jsonl"), encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row.get("event") == "train":
                rates.append(row["sequences_per_second"])
            elif row.get("event") == "evaluation":
                evaluation = row
    return statistics.median(rates[1:] or rates), evaluation


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """The flags of this bench (`python -m research.recipe_bfloat16 --help`)."""
    recipe_dir: str = setting(help='a pretrain_from_text.py --output_dir (records, config)')
    work_dir: str = setting('/tmp/recipe_bfloat16', help='Folder of the two short runs.')
    steps: int = setting(600, help='Training steps of each run.')


def main(settings):
    peaks = {dtype: matmul_peak(dtype) for dtype in ("float32", "bfloat16")}
    results = {}
    for dtype in ("float32", "bfloat16"):
        out = os.path.join(settings.work_dir, dtype)
        if os.path.exists(out):
            sys.exit(f"{out} exists: give another --work_dir")
        results[dtype] = pretrain(settings.recipe_dir, dtype, settings.steps, out)
    print(f"\n{describe()}; matmul peak float32 {peaks['float32'] / 1e9:.0f} GFLOP/s, "
          f"bfloat16 {peaks['bfloat16'] / 1e9:.0f} GFLOP/s "
          f"({peaks['bfloat16'] / peaks['float32']:.2f}x)")
    print("\n| --dtype | sequences/s | held-out masked-LM loss | accuracy (%) |\n"
          "|---|---|---|---|")
    for dtype, (rate, ev) in results.items():
        print(f"| {dtype} | {rate:.1f} | {ev.get('masked_lm_loss', float('nan')):.3f} | "
              f"{100 * ev.get('masked_lm_accuracy', float('nan')):.1f} |")
    speedup = results["bfloat16"][0] / results["float32"][0]
    print(f"\nbfloat16 / float32 training speed: {speedup:.2f}x ({settings.steps} steps each)")


if __name__ == "__main__":
    harness.run(main, Settings)
