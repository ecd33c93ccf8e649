"""Does the one-hour CPU recipe make a better model than random weights? `pretrain_from_text.py`
end to end on the English corpus of `research/paper/english_corpus.py`, then the pre-trained model
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

    python -m research.paper.pretrain_recipe --shared_dir=../shared/data --work_dir=/tmp/recipe \
      [--budget_minutes=60 --seeds=3 --plan_seconds_per_step=0.94]
"""

import dataclasses
import json
import math
import os
import time
from typing import Optional

from bench import harness
from common.settings import setting
from modeling.config import POOLINGS
from research.paper import english_corpus
from research.paper import tables as paper_tables
from research.paper.tables import LEARNING_RATE, Bench, mean_se
from tasks.pretraining.from_text import OBJECTIVES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TASKS = ("STS-B", "CoNLL-2003", "QNLI", "SST-2")
# The goals: points over random weights, by at least two standard errors.
GOALS = {"STS-B": 20, "CoNLL-2003": 15, "QNLI": 5, "SST-2": 3}


class Recipe(Bench):
    """The paper tables' runner and task data, with the recipe's model and vocabulary."""

    def __init__(self, settings):
        super().__init__(paper_tables.Settings(
            shared_dir=settings.shared_dir, work_dir=settings.work_dir,
            recipe_dir=os.path.join(settings.work_dir, "recipe"), seeds=settings.seeds,
            train_examples=settings.train_examples, ner_sentences=settings.ner_sentences,
            learning_rate=settings.learning_rate, jobs=settings.jobs))
        self.recipe_settings = settings

    def pretrain_recipe(self):
        corpus = english_corpus.build(
            self.settings.shared_dir, os.path.join(self.work, "corpus"),
            tuple(filter(None, self.recipe_settings.task_text.split(","))))
        files = [path for paths in corpus.values() for path in paths]
        if self.recipe_settings.plan_seconds_per_step:
            self.fixed_plan(files)
        export = os.path.join(self.settings.recipe_dir, "pretraining", "export")
        seconds = self.run("pretrain_from_text.py", {
            "input_text": ",".join(files), "output_dir": self.settings.recipe_dir,
            "budget_minutes": self.recipe_settings.budget_minutes,
            "objective": self.recipe_settings.objective, "dtype": self.recipe_settings.dtype,
            "seed": self.recipe_settings.pretraining_seed},
            os.path.join(export, "bert_model.ckpt.index"))
        if seconds:
            with open(os.path.join(self.work, "pretrain_seconds.txt"), "w") as f:
                f.write(f"{seconds:.0f}\n")
        return corpus, export

    def adapt(self, model, minutes):
        """The recipe's model (`model`: its export folder) continued for `minutes` on
        SST-2's training sentences, labels dropped, one a document (`pretrain_from_text.py
        --init_checkpoint`: task-adaptive pre-training, the route of a released model);
        returns the adapted model's export folder."""
        from bench import adaptation
        text = adaptation.corpus(self.settings.shared_dir, self.work)
        out = os.path.join(self.work, "adapted")
        export = os.path.join(out, "pretraining", "export")
        self.run("pretrain_from_text.py", {
            "input_text": text, "output_dir": out, "budget_minutes": minutes,
            "init_checkpoint": os.path.join(model, "bert_model.ckpt"),
            "bert_config_file": os.path.join(model, "bert_config.json"),
            "vocab_file": self.vocab(), "do_lower_case": True},
            os.path.join(export, "bert_model.ckpt.index"))
        return export

    def fixed_plan(self, files):
        """recipe.json as a CPU taking `plan_seconds_per_step` a step would write it for
        `budget_minutes` (the same steps, warm-up and records on any machine);
        `pretrain_from_text.py` keeps it as a resumed run's plan instead of timing steps."""
        from tasks.pretraining import from_text
        out = self.settings.recipe_dir
        if from_text.kept_plan(out) is None:
            os.makedirs(out, exist_ok=True)
            train_text, _ = from_text.prepare_text(files, out)
            from_text.choose_plan(out, self.recipe_settings.budget_minutes,
                                  os.path.getsize(train_text),
                                  self.recipe_settings.plan_seconds_per_step,
                                  self.recipe_settings.objective or
                                  from_text.RECIPE["objective"],
                                  self.recipe_settings.dtype or "float32")

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
                os.path.join(self.settings.recipe_dir, "bert_config.json"))
            model = modeling.BertPretrainer(config, next_sentence=False)
            os.makedirs(folder, exist_ok=True)
            modeling.save_google_checkpoint(model, prefix)
            config.to_json_file(os.path.join(folder, "bert_config.json"))
        return folder

    def with_pooling(self, model, pooling, tag):
        """A folder with `model`'s checkpoint (linked) and its config with `pooling`
        (`BertConfig.pooling`): the same weights, fine-tuned with another pooling."""
        folder = os.path.join(self.work, f"{tag}-pooling-{pooling}")
        os.makedirs(folder, exist_ok=True)
        for name in os.listdir(model):
            if name.startswith("bert_model.ckpt") and not os.path.exists(
                    os.path.join(folder, name)):
                os.symlink(os.path.abspath(os.path.join(model, name)),
                           os.path.join(folder, name))
        with open(os.path.join(model, "bert_config.json"), encoding="utf-8") as f:
            config = dict(json.load(f), pooling=pooling)
        if pooling == "cls":
            del config["pooling"]  # the original's, written only when not "cls"
        from common.file_io import atomic_write_text
        atomic_write_text(os.path.join(folder, "bert_config.json"),
                          json.dumps(config, indent=2, sort_keys=True) + "\n")
        return folder

    def heldout_mlm(self, model, tag):
        """Masked-LM accuracy and perplexity on WikiText-2 test."""
        text = english_corpus.heldout(self.settings.shared_dir, self.work)
        records = os.path.join(self.work, "heldout_records", "wikitext2_test.tfrecord")
        self.run("create_pretraining_data.py", {
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


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData):
    """The flags of this bench (`python -m research.paper.pretrain_recipe --help`)."""
    work_dir: str = setting(help="Folder of the recipe's run and the fine-tunings (a run "
                            "found there is reused).")
    budget_minutes: float = setting(60, help='pretrain_from_text.py --budget_minutes.')
    seeds: int = setting(3, help='Fine-tuning seeds per task and model.')
    objective: Optional[str] = setting(None, help="pretrain_from_text.py --objective "
                                       "(default: the recipe's)", choices=OBJECTIVES)
    dtype: Optional[str] = setting(None, help="pretrain_from_text.py --dtype (default: "
                                   "float32)", choices=('float32', 'bfloat16'))
    pretraining_seed: Optional[int] = setting(
        None, help="pretrain_from_text.py --seed (masking and weights; default: its own): "
        "another pre-training of the same plan, to measure the pre-training's own variance")
    plan_seconds_per_step: Optional[float] = setting(
        None, help="Plan the run as a CPU taking this long a step would (0.94: 2 AVX2 "
        "cores, the hour's 3,829 steps), whatever this one takes; default: time a step "
        "here, as pretrain_from_text.py does.")
    task_text: str = setting('', help="comma-separated, of " + ", ".join(
        english_corpus.TASK_TEXT) + ": add that task's unlabeled training sentences to the "
        "corpus (task-adaptive pre-training, Gururangan et al. 2020); default none")
    train_examples: int = setting(8000, help='SST-2 rows')
    ner_sentences: int = setting(4000, help='CoNLL-2003 training sentences.')
    learning_rate: float = setting(LEARNING_RATE, help='fine-tuning peak learning rate')
    tasks: str = setting(','.join(TASKS), help='comma-separated, of ' + ', '.join(TASKS))
    models: str = setting('pre-trained,random weights', help="which to fine-tune (a run done "
                          "already is reused); random weights alone need no pre-training")
    pooling: Optional[str] = setting(None, choices=POOLINGS, help="fine-tune both models "
                                     "with this pooling (bert_config.json's 'pooling'; "
                                     "default: each model's own; a pooler of another width "
                                     "starts afresh)")
    adapt_minutes: float = setting(
        0, help="Also fine-tune the pre-trained model adapted for this many minutes to "
        "SST-2's unlabelled training sentences (pretrain_from_text.py --init_checkpoint); "
        "0: not")
    jobs: int = setting(1, help="fine-tuning runs at once (2 on 2 cores: 1.16x the "
                        "throughput, bench/RESULTS.md)")


def main(settings):
    bench = Recipe(settings)
    start = time.time()
    models = settings.models.split(",")
    # Random weights alone need only the recipe's vocabulary and config: they can be
    # fine-tuned while the pre-training still runs.
    corpus, export = bench.pretrain_recipe() if "pre-trained" in models else (None, None)
    random_weights = bench.random_init()
    mlm = {}
    if "pre-trained" in models:
        mlm["pre-trained"] = bench.heldout_mlm(export, "pretrained")
    if "random weights" in models:
        mlm["random weights"] = bench.heldout_mlm(bench.random_checkpoint(), "random")
    tasks = [task for task in TASKS if task in settings.tasks.split(",")]
    tuned = [("pre-trained", export, "pretrained"), ("random weights", random_weights, "random")]
    if settings.adapt_minutes and export:
        adapted = bench.adapt(export, settings.adapt_minutes)
        mlm["adapted"] = bench.heldout_mlm(adapted, "adapted")
        tuned.append(("adapted", adapted, "adapted"))
        models.append("adapted")
    if settings.pooling:  # the same weights, another pooling: runs of their own
        tuned = [(name, bench.with_pooling(model, settings.pooling, tag) if model else model,
                  f"{tag}-{settings.pooling}") for name, model, tag in tuned]
    runs = [(name, model, tag, task) for task in tasks for name, model, tag in tuned
            if name in models]
    done = bench.fine_tune_all([(model, task, tag, {}) for _, model, tag, task in runs])
    scores = {name: {task: [] for task in tasks} for name, *_ in runs}
    for (name, _, _, task), score in zip(runs, done):
        scores[name][task] = score
    with open(os.path.join(bench.settings.recipe_dir, "recipe.json"), encoding="utf-8") as f:
        plan = json.load(f)
    seconds_file = os.path.join(settings.work_dir, "pretrain_seconds.txt")
    pretrain_seconds = open(seconds_file).read().strip() \
        if os.path.exists(seconds_file) else "?"

    from bench.harness import cpu_model, isa
    print(f"\nCPU: {cpu_model()} ({isa()}), {os.cpu_count()} cores. pretrain_from_text.py: "
          f"{pretrain_seconds} s in all; plan {plan['plan']}; recipe {plan['recipe']}")
    if corpus:
        print("\n" + english_corpus.describe(corpus))
    print("\n| | held-out masked-LM accuracy (%) | perplexity |\n|---|---|---|")
    for name, (accuracy, perplexity) in mlm.items():
        print(f"| {name} | {accuracy:.1f} | {perplexity:.1f} |")
    if "random weights" not in scores:
        return print(f"\nEvery score: {json.dumps(scores)}")
    print(f"\n| task ({settings.seeds} seeds, mean ± standard error) | model | score | random "
          f"weights | difference | in standard errors | goal |")
    print("|---|---|---|---|---|---|---|")
    for task in tasks:
        for name in (n for n in scores if n != "random weights"):
            (a, sa), (b, sb) = mean_se(scores[name][task]), mean_se(
                scores["random weights"][task])
            se = math.sqrt(sa ** 2 + sb ** 2)
            goal = f"+{GOALS[task]}" if task in GOALS else ""
            print(f"| {task} | {name} | {a:.1f} ± {sa:.1f} | {b:.1f} ± {sb:.1f} | "
                  f"{a - b:+.1f} | {(a - b) / se if se else float('inf'):.1f} | {goal} |")
    print(f"\nEvery score: {json.dumps(scores)}\nBench time {(time.time() - start) / 60:.0f} min")


if __name__ == "__main__":
    harness.run(main, Settings)
