"""Does the one-hour CPU recipe make a better model than random weights? `pretrain_from_text.py`
end to end on the English corpus of `bench/english_corpus.py`, then the pre-trained model
beside the same model with random weights, fine-tuned with several seeds on tasks that can
tell (a randomly initialised BERT already reaches ~80% on SST-2).

Reported, mean and standard error over `--seeds` fine-tuning seeds:
  * held-out masked-LM accuracy and perplexity on WikiText-2 test (prose in no training
    source), the records made with the recipe's vocabulary;
  * STS-B dev Pearson (full training set), CoNLL-2003 entity F1 on eng.testa (the first
    `--ner_sentences` training sentences), QNLI (its dev set split as the paper tables
    split it: 4,463 to train, 1,000 to evaluate), SST-2 dev accuracy (the first
    `--train_examples` training sentences).
Every command is printed and logged in `--work_dir/commands.log`; a finished step is not
repeated, so the script resumes.

    python -m bench.pretrain_recipe --shared_dir=../shared/data --work_dir=/tmp/recipe \
      [--budget_minutes=60 --seeds=3]
"""

import argparse
import json
import math
import os
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from bench import english_corpus  # noqa: E402
from bench.paper_tables import LEARNING_RATE, Bench, mean_se  # noqa: E402

TASKS = ("STS-B", "CoNLL-2003", "QNLI", "SST-2")
# The goals: points over random weights, by at least two standard errors.
GOALS = {"STS-B": 20, "CoNLL-2003": 10, "QNLI": 5}


class Recipe(Bench):
    """The paper tables' runner and task data, with the recipe's model and vocabulary."""

    def __init__(self, args):
        args.recipe_dir = os.path.join(args.work_dir, "recipe")
        super().__init__(args)

    def pretrain_recipe(self):
        corpus = english_corpus.build(self.args.shared_dir, os.path.join(self.work, "corpus"))
        files = [path for paths in corpus.values() for path in paths]
        export = os.path.join(self.args.recipe_dir, "pretraining", "export")
        seconds = self.run("pretrain_from_text.py", {
            "input_text": ",".join(files), "output_dir": self.args.recipe_dir,
            "budget_minutes": self.args.budget_minutes, "objective": self.args.objective,
            "dtype": self.args.dtype},
            os.path.join(export, "bert_model.ckpt.index"))
        if seconds:
            with open(os.path.join(self.work, "pretrain_seconds.txt"), "w") as f:
                f.write(f"{seconds:.0f}\n")
        return corpus, export

    def random_checkpoint(self):
        """The recipe's model with random weights (seed 1), heads included, as a
        checkpoint: what the held-out masked LM of random weights is measured on."""
        folder = os.path.join(self.work, "random-checkpoint")
        prefix = os.path.join(folder, "bert_model.ckpt")
        if not os.path.exists(prefix + ".index"):
            import keras

            import modeling
            keras.utils.set_random_seed(1)
            config = modeling.BertConfig.from_json_file(
                os.path.join(self.args.recipe_dir, "bert_config.json"))
            model = modeling.BertPretrainer(config, next_sentence=False)
            os.makedirs(folder, exist_ok=True)
            modeling.save_google_checkpoint(model, prefix)
            config.to_json_file(os.path.join(folder, "bert_config.json"))
        return folder

    def heldout_mlm(self, model, tag):
        """Masked-LM accuracy and perplexity on WikiText-2 test."""
        text = english_corpus.heldout(self.args.shared_dir, self.work)
        records = os.path.join(self.work, "heldout_records", "wikitext2_test.tfrecord")
        self.run("data_prep/create_pretraining_data.py", {
            "input_file": text, "output_file": records, "vocab_file": self.vocab(),
            "do_lower_case": True, "max_seq_length": 128, "max_predictions_per_seq": 20,
            "dupe_factor": 5, "random_seed": 12345}, records)
        out = os.path.join(self.work, "heldout_eval", tag)
        checkpoint = os.path.join(model, "bert_model.ckpt")
        self.run("run_pretraining.py", {
            "input_file": records, "eval_input_file": records, "objective": "mlm",
            "bert_config_file": os.path.join(model, "bert_config.json"),
            "init_checkpoint": checkpoint if os.path.exists(checkpoint + ".index") else None,
            "output_dir": out, "do_eval": True, "max_seq_length": 128,
            "max_predictions_per_seq": 20, "max_eval_steps": 1000, "eval_batch_size": 64},
            os.path.join(out, "eval_results.txt"))
        results = self.results(os.path.join(out, "eval_results.txt"))
        return (100 * float(results["masked_lm_accuracy"]),
                float(results["masked_lm_perplexity"]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared_dir", required=True)
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--budget_minutes", type=float, default=60)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--objective", default=None, choices=("mlm", "mlm_nsp"),
                        help="pretrain_from_text.py --objective (default: the recipe's)")
    parser.add_argument("--dtype", default=None, choices=("float32", "bfloat16"),
                        help="pretrain_from_text.py --dtype (default: float32)")
    parser.add_argument("--train_examples", type=int, default=8000, help="SST-2 rows")
    parser.add_argument("--ner_sentences", type=int, default=4000)
    parser.add_argument("--learning_rate", type=float, default=LEARNING_RATE,
                        help="fine-tuning peak learning rate")
    parser.add_argument("--tasks", default=",".join(TASKS),
                        help="comma-separated, of " + ", ".join(TASKS))
    parser.add_argument("--models", default="pre-trained,random weights",
                        help="which to fine-tune (a run done already is reused); random weights "
                        "alone need no pre-training")
    parser.add_argument("--jobs", type=int, default=1,
                        help="fine-tuning runs at once (2 on 2 cores: 1.16x the throughput, "
                        "bench/RESULTS.md)")
    args = parser.parse_args()
    bench = Recipe(args)
    start = time.time()
    models = args.models.split(",")
    # Random weights alone need only the recipe's vocabulary and config: they can be
    # fine-tuned while the pre-training still runs.
    corpus, export = bench.pretrain_recipe() if "pre-trained" in models else (None, None)
    random_weights = bench.random_init()
    mlm = {}
    if "pre-trained" in models:
        mlm["pre-trained"] = bench.heldout_mlm(export, "pretrained")
    if "random weights" in models:
        mlm["random weights"] = bench.heldout_mlm(bench.random_checkpoint(), "random")
    tasks = [task for task in TASKS if task in args.tasks.split(",")]
    runs = [(name, model, tag, task) for task in tasks
            for name, model, tag in (("pre-trained", export, "pretrained"),
                                     ("random weights", random_weights, "random"))
            if name in models]
    done = bench.fine_tune_all([(model, task, tag, {}) for _, model, tag, task in runs])
    scores = {name: {task: [] for task in tasks} for name, *_ in runs}
    for (name, _, _, task), score in zip(runs, done):
        scores[name][task] = score
    with open(os.path.join(args.recipe_dir, "recipe.json"), encoding="utf-8") as f:
        plan = json.load(f)
    pretrain_seconds = open(os.path.join(args.work_dir, "pretrain_seconds.txt")).read().strip() \
        if os.path.exists(os.path.join(args.work_dir, "pretrain_seconds.txt")) else "?"

    from bench.machine import cpu_model, isa
    print(f"\nCPU: {cpu_model()} ({isa()}), {os.cpu_count()} cores. pretrain_from_text.py: "
          f"{pretrain_seconds} s in all; plan {plan['plan']}; recipe {plan['recipe']}")
    if corpus:
        print("\n" + english_corpus.describe(corpus))
    print("\n| | held-out masked-LM accuracy (%) | perplexity |\n|---|---|---|")
    for name, (accuracy, perplexity) in mlm.items():
        print(f"| {name} | {accuracy:.1f} | {perplexity:.1f} |")
    print(f"\n| task ({args.seeds} seeds, mean ± standard error) | pre-trained | random "
          f"weights | difference | in standard errors | goal |")
    print("|---|---|---|---|---|---|")
    if len(scores) < 2:
        return print(f"\nEvery score: {json.dumps(scores)}")
    for task in tasks:
        (a, sa), (b, sb) = mean_se(scores["pre-trained"][task]), mean_se(
            scores["random weights"][task])
        se = math.sqrt(sa ** 2 + sb ** 2)
        goal = f"+{GOALS[task]}" if task in GOALS else ""
        print(f"| {task} | {a:.1f} ± {sa:.1f} | {b:.1f} ± {sb:.1f} | {a - b:+.1f} | "
              f"{(a - b) / se if se else float('inf'):.1f} | {goal} |")
    print(f"\nEvery score: {json.dumps(scores)}\nBench time {(time.time() - start) / 60:.0f} min")


if __name__ == "__main__":
    main()
