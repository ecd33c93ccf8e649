"""The paper's Tables 5-8 at CPU scale: small BERTs pre-trained with each objective, size
and masking procedure, fine-tuned (or used as frozen features) on GLUE and CoNLL-2003
subsets, every step through the user-facing scripts, each score the mean and standard
error over `--seeds` fine-tuning seeds.

Two scales:
  * small (the default): WikiText-2 valid + test (`--shared_dir`/wikitext; the held-out
    last 10% of documents for the masked-LM evaluation), a WordPiece vocabulary of
    `--vocab_size` (`build_vocab.py`), length-64 records, L=4 H=128 models and
    `--pretrain_steps` (1,000) steps: each table in 15-60 minutes on 2 cores;
  * the recipe (`--recipe_dir`, a `pretrain_from_text.py --output_dir`): its documents,
    vocabulary, model, records and schedule (`recipe.json`: steps, warm-up, learning rate,
    optimizer), its finished run as the base model, and length-128 fine-tuning. Each other
    pre-training costs about as much as the recipe's run (Table 6's sizes in proportion).
Pipeline: documents -> `create_pretraining_data.py` (one record set per masking
procedure) -> `run_pretraining.py` (per objective / size / masking) -> `run_classifier.py`
on SST-2 (the first `--train_examples` rows, full dev), MRPC and STS-B (full) and QNLI
(its dev set split: 4,463 rows to train, 1,000 to evaluate; the train set is not in
`--shared_dir`) and `run_ner.py` on CoNLL-2003 (the first `--ner_sentences` training
sentences, full eng.testa). At the recipe's scale, the tasks that show pre-training
there (STS-B, CoNLL-2003) are added to Table 5 and replace MRPC and QNLI in Tables 6 and
8 (SST-2 kept). Each run's folder is kept in
`--work_dir`, and a finished run is not repeated (an unfinished pre-training resumes
from its last checkpoint; a fine-tuning another table made with the same flags is
linked), so the script resumes; the tables are printed in Markdown with every command
line in the log. Table 8 prints each row as soon as its runs are done (a row costs a
pre-training at the recipe's scale), and `--maskings` picks its rows.

    python -m research.paper.tables --shared_dir=../shared/data --tables=5,6,7,8 \
      [--work_dir=/tmp/paper_tables --pretrain_steps=2000] [--recipe_dir=<pretrain_from_text
      output>] [--seeds=3 --jobs=2]

At paper scale on a GPU/TPU: the same scripts with BERT-Base's config, the paper's
corpus (BooksCorpus + Wikipedia, `extract_wikipedia.py`), `--max_seq_length=512`
records, 1,000,000 steps of batch 256 (`run_pretraining.py --distribution_strategy=tpu`
or `mirrored`) and the full GLUE / CoNLL / SQuAD sets; the flags per table are the ones
this script passes.
"""

import concurrent.futures
import dataclasses
import functools
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import time
from typing import Optional

from bench import harness
from common.file_io import atomic_write_text
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The small scale's sequence length of pre-training and fine-tuning (the paper: 128 then
# 512; 64 here, so that a table fits in about half an hour on two cores), and masked
# positions per sequence. The recipe's come from its recipe.json.
SEQ, PREDICTIONS = 64, 10
# The small scale's base model, (L, H, A) (BERT-Base is 12, 768, 12).
BASE = (4, 128, 2)
# Table 6: (L, H, A) at each scale. Around the recipe's 4/256/4, each costs about
# L * H^2 of its time: 0.5, 0.25, 1 (the recipe's own run) and 1.5.
SIZES = [(2, 128, 2), (4, 128, 2), (4, 256, 4)]
RECIPE_SIZES = [(2, 256, 4), (4, 128, 2), (4, 256, 4), (6, 256, 4)]
# Table 8: ([MASK], same, random) shares.
MASKINGS = [(0.8, 0.1, 0.1), (1.0, 0.0, 0.0), (0.8, 0.0, 0.2), (0.8, 0.2, 0.0),
            (0.0, 0.2, 0.8), (0.0, 0.0, 1.0)]
FEATURES = ["embeddings", "second_to_last", "last", "sum_last_four", "concat_last_four",
            "sum_all"]
GLUE_TASKS = ["SST-2", "MRPC", "QNLI"]
# The tables' tasks (the paper's Table 5: MNLI-m, QNLI, MRPC, SST-2, SQuAD; Table 6:
# MNLI-m, MRPC, SST-2; Table 8: MNLI and NER). At the recipe's scale, the tasks that show
# pre-training at all (STS-B and CoNLL-2003 gain 20 points over random weights; SST-2,
# MRPC and QNLI gain nothing two standard errors can tell: the recipe's section of
# bench/RESULTS.md) are added to Table 5 (CoNLL-2003 standing for SQuAD's token-level
# answers) and replace the other tasks in Tables 6 and 8, SST-2 kept as the paper's.
TABLE5_TASKS = {"small": tuple(GLUE_TASKS), "recipe": tuple(GLUE_TASKS) + ("STS-B", "CoNLL-2003")}
TABLE6_TASKS = {"small": tuple(GLUE_TASKS), "recipe": ("SST-2", "STS-B", "CoNLL-2003")}
TABLE8_SENTENCE_TASK = {"small": "SST-2", "recipe": "STS-B"}
# Table 6 at the recipe's scale also fine-tunes each size from random weights on the task
# that shows pre-training (a model's size alone moves its random-weights score: the floor
# of one size is no floor for another).
TABLE6_FLOOR_TASKS = {"small": (), "recipe": ("CoNLL-2003",)}
# Fine-tuning, every table and task; the peak learning rate is --learning_rate (a run
# at another rate than LEARNING_RATE is kept in a folder of its own).
LEARNING_RATE = 1e-4
FINE_TUNING = {"train_batch_size": 32, "num_train_epochs": 3, "do_lower_case": True,
               "do_train": True, "do_eval": True, "save_checkpoints_steps": 100000}
# The paper's figures, for orientation (BERT-Base, dev sets).
PAPER = {
    5: {"BERT (MLM + NSP)": {"MNLI-m": 84.4, "QNLI": 88.4, "MRPC": 86.7, "SST-2": 92.7},
        "No NSP": {"MNLI-m": 83.9, "QNLI": 84.9, "MRPC": 86.5, "SST-2": 92.6},
        "LTR & No NSP": {"MNLI-m": 82.1, "QNLI": 84.3, "MRPC": 77.5, "SST-2": 92.1},
        "+ BiLSTM": {"MNLI-m": 82.1, "QNLI": 84.1, "MRPC": 75.7, "SST-2": 91.6}},
    6: {"3/768/12": (5.84, 77.9, 79.8, 88.4), "6/768/3": (5.24, 80.6, 82.2, 90.7),
        "6/768/12": (4.68, 81.9, 84.8, 91.3), "12/768/12": (3.99, 84.4, 86.7, 92.9),
        "12/1024/16": (3.54, 85.7, 86.9, 93.3), "24/1024/16": (3.23, 86.6, 87.8, 93.7)},
    7: {"fine-tuning": 96.4, "embeddings": 91.0, "second_to_last": 95.6, "last": 94.9,
        "sum_last_four": 95.9, "concat_last_four": 96.1, "sum_all": 95.5},
    8: {(0.8, 0.1, 0.1): (84.2, 95.4, 94.9), (1.0, 0.0, 0.0): (84.3, 94.9, 94.0),
        (0.8, 0.0, 0.2): (84.1, 95.2, 94.6), (0.8, 0.2, 0.0): (84.4, 95.2, 94.7),
        (0.0, 0.2, 0.8): (83.7, 94.8, 94.6), (0.0, 0.0, 1.0): (83.6, 94.9, 94.6)},
}


def mean_se(values):
    """Mean and standard error of the mean (0 for one value)."""
    mean = statistics.mean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return mean, se


def masking_tag(masking):
    """A masking procedure's name: "mask-80-10-10" for 80% [MASK], 10% same, 10% random."""
    return "mask-{}-{}-{}".format(*(round(100 * p) for p in masking))


def shown(values):
    """A table cell: the mean, and its standard error when there are several seeds."""
    mean, se = mean_se(values)
    return f"{mean:.1f} ± {se:.1f}" if len(values) > 1 else f"{mean:.1f}"


class Bench:
    def __init__(self, settings):
        self.settings = settings
        self.work = settings.work_dir
        os.makedirs(self.work, exist_ok=True)
        self.log = open(os.path.join(self.work, "commands.log"), "a", encoding="utf-8")
        self.majority = {}  # task -> dev accuracy of always answering the majority label
        self.seeds = range(1, settings.seeds + 1)

    # ------------------------------------------------------------------ scale
    @functools.cached_property
    def recipe(self):
        """The recipe's recipe.json (its "recipe" and "plan"), or None at the small scale;
        read when first needed (the recipe's run may be made by this process)."""
        if not self.settings.recipe_dir:
            return None
        path = os.path.join(self.settings.recipe_dir, "recipe.json")
        if not os.path.exists(path):
            sys.exit(f"{path} is missing: --recipe_dir takes the --output_dir of a "
                     "pretrain_from_text.py run.")
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    @property
    def seq(self):
        return self.recipe["recipe"]["max_seq_length"] if self.recipe else SEQ

    @property
    def predictions(self):
        return self.recipe["recipe"]["max_predictions_per_seq"] if self.recipe else PREDICTIONS

    @property
    def base(self):
        """(L, H, A) of the base model."""
        if not self.recipe:
            return BASE
        model = self.recipe["recipe"]["model"]
        return (model["num_hidden_layers"], model["hidden_size"],
                model["num_attention_heads"])

    @property
    def objective(self):
        """The base model's pre-training objective (the paper's: MLM + NSP)."""
        return self.recipe["plan"]["objective"] if self.recipe else "mlm_nsp"

    @property
    def dtype(self):
        """The recipe run's compute precision, which every row pre-trains in (None: the
        default, float32)."""
        return self.recipe["plan"].get("dtype") if self.recipe else None

    @property
    def sizes(self):
        return RECIPE_SIZES if self.recipe else SIZES

    @property
    def scale(self):
        return "recipe" if self.recipe else "small"

    # ------------------------------------------------------------------ running
    @staticmethod
    def argv(script, flags):
        return [sys.executable, os.path.join(ROOT, script)] + [
            f"--{k}" if v is True else f"--{k}={v}" for k, v in flags.items()
            if v is not None and v is not False]

    @staticmethod
    def same_run_key(argv):
        """What makes two commands the same run: the script and every flag but
        --output_dir, in any order."""
        return (os.path.basename(argv[1]),
                tuple(sorted(a for a in argv[2:] if not a.startswith("--output_dir="))))

    def finished_run(self, argv, done_name):
        """The --output_dir of a finished run of the same command under another name
        (commands.log holds every command this work folder has run), or None."""
        key = self.same_run_key(argv)
        with open(os.path.join(self.work, "commands.log"), encoding="utf-8") as f:
            for line in f:
                earlier = shlex.split(line)
                if len(earlier) > 1 and self.same_run_key(earlier) == key:
                    out = next(a.split("=", 1)[1] for a in earlier
                               if a.startswith("--output_dir="))
                    if os.path.exists(os.path.join(out, done_name)):
                        return out
        return None

    def run(self, script, flags, done_file):
        """Runs `script` with `flags` unless `done_file` exists; returns its seconds. A
        fine-tuning run that another table already made (the base model's, the same
        task, seed and flags) is linked, not run again."""
        if os.path.exists(done_file):
            return 0.0
        argv = self.argv(script, flags)
        out = flags.get("output_dir")
        if out and os.path.dirname(done_file) == out and not os.path.exists(out) and \
                "finetune" in out.split(os.sep):
            same = self.finished_run(argv, os.path.basename(done_file))
            if same:
                print(f"  {os.path.basename(out)}: the run of {same}", flush=True)
                os.symlink(same, out)
                return 0.0
        line = " ".join(shlex.quote(a) for a in argv)
        print("$", line, flush=True)
        self.log.write(line + "\n")
        self.log.flush()
        start = time.time()
        # oneDNN on: 1.8x faster training steps on the AMD EPYC here (TensorFlow leaves it
        # off on AMD CPUs); these tables measure quality, not the default path's speed.
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
        env.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
        result = subprocess.run(argv, env=env,
                                capture_output=True, text=True)
        if result.returncode:
            sys.exit(f"{script} failed:\n{result.stderr[-3000:]}")
        return time.time() - start

    @staticmethod
    def results(path):
        with open(path, encoding="utf-8") as f:
            return {k.strip(): v.strip() for k, v in
                    (line.split(" = ", 1) for line in f if " = " in line)}

    # ------------------------------------------------------------------ data
    def documents(self):
        """(training documents, held-out documents): text files, one sentence a line."""
        if self.recipe:
            text = os.path.join(self.settings.recipe_dir, "text")
            return os.path.join(text, "train.txt"), os.path.join(text, "heldout.txt")
        train = os.path.join(self.work, "documents_train.txt")
        held_out = os.path.join(self.work, "documents_eval.txt")
        if not os.path.exists(held_out):
            from bench.pretraining_data_speed import wikitext_documents
            text = "".join(wikitext_documents(os.path.join(
                self.settings.shared_dir, "wikitext", "wikitext-2", name))
                for name in ("valid.txt", "test.txt"))
            docs = [d for d in text.split("\n\n") if d.strip()]
            cut = len(docs) * 9 // 10
            for path, part in ((train, docs[:cut]), (held_out, docs[cut:])):
                atomic_write_text(path, "\n\n".join(part) + "\n\n")
        return train, held_out

    def vocab(self):
        if self.recipe:
            return os.path.join(self.settings.recipe_dir, "vocab.txt")
        vocab = os.path.join(self.work, "vocab.txt")
        train, _ = self.documents()
        self.run("build_vocab.py", {
            "input_file": train, "output_file": vocab, "vocab_size": self.settings.vocab_size,
            "lower_thresh": 3}, vocab)
        return vocab

    def records(self, masking=MASKINGS[0]):
        """{"train": files, "eval": file} of this masking procedure (the recipe's own
        records for the original's)."""
        if self.recipe and masking == MASKINGS[0]:
            folder = os.path.join(self.settings.recipe_dir, "records")
            return {"train": ",".join(os.path.join(folder, f"train-{i:02d}.tfrecord")
                                      for i in range(2)),
                    "eval": os.path.join(folder, "heldout.tfrecord")}
        name = "records-{}-{}-{}".format(*(int(100 * p) for p in masking))
        folder = os.path.join(self.work, name)
        os.makedirs(folder, exist_ok=True)
        vocab = self.vocab()
        dupe = self.recipe["plan"]["dupe_factor"] if self.recipe else self.settings.dupe_factor
        files = {}
        for split, documents in zip(("train", "eval"), self.documents()):
            out = os.path.join(folder, f"{split}.tfrecord")
            self.run("create_pretraining_data.py", {
                "input_file": documents, "output_file": out, "vocab_file": vocab,
                "do_lower_case": True, "max_seq_length": self.seq,
                "max_predictions_per_seq": self.predictions,
                "dupe_factor": dupe if split == "train" else 1,
                "masked_lm_prob": 0.15, "mask_token_prob": masking[0],
                "random_token_prob": masking[2], "random_seed": 12345, "num_workers": 2},
                out)
            files[split] = out
        return files

    # ------------------------------------------------------------------ models
    def base_name(self):
        return f"base-{self.objective}"

    def pretrain(self, name, objective=None, size=None, masking=MASKINGS[0]):
        """Pre-trains (once) and returns (export folder, eval results)."""
        objective = objective or self.objective
        L, H, A = size = size or self.base
        if self.recipe and (objective, size, masking) == (self.objective, self.base,
                                                          MASKINGS[0]) and \
                self.schedule()["num_train_steps"] == self.recipe["plan"]["num_train_steps"]:
            return self.recipe_model(name)
        folder = os.path.join(self.work, "pretrain", name)
        os.makedirs(folder, exist_ok=True)
        config = os.path.join(folder, "bert_config.json")
        vocab = self.vocab()
        with open(vocab, encoding="utf-8") as f:
            vocab_size = sum(1 for _ in f)
        model = dict(self.recipe["recipe"]["model"]) if self.recipe else {
            "max_position_embeddings": SEQ, "type_vocab_size": 2}
        model.update(vocab_size=vocab_size, hidden_size=H, num_hidden_layers=L,
                     num_attention_heads=A, intermediate_size=4 * H)
        atomic_write_text(config, json.dumps(model))
        records = self.records(masking)
        out = os.path.join(folder, "run")
        seconds = self.run("run_pretraining.py", dict({
            "input_file": records["train"], "eval_input_file": records["eval"],
            "bert_config_file": config, "output_dir": out, "objective": objective,
            "max_seq_length": self.seq, "max_predictions_per_seq": self.predictions,
            "do_train": True, "do_eval": True, "dtype": self.dtype}, **self.schedule()),
            os.path.join(out, "eval_results.txt"))
        if seconds:
            print(f"  pre-trained {name} in {seconds:.0f} s", flush=True)
        return os.path.join(out, "export"), self.results(os.path.join(out, "eval_results.txt"))

    def schedule(self):
        """run_pretraining.py's flags for steps, schedule and evaluation."""
        if not self.recipe:
            steps = self.settings.pretrain_steps
            return {"train_batch_size": 32, "num_train_steps": steps,
                    "num_warmup_steps": steps // 10,
                    "learning_rate": self.settings.pretrain_learning_rate,
                    "max_eval_steps": 50, "save_checkpoints_steps": steps,
                    "eval_batch_size": 32}
        recipe, plan = self.recipe["recipe"], self.recipe["plan"]
        steps = self.settings.pretrain_steps or plan["num_train_steps"]
        warmup = round(plan["num_warmup_steps"] * steps / plan["num_train_steps"])
        # Checkpoints every tenth of the run, as the recipe's: a stopped run resumes.
        return {"train_batch_size": recipe["train_batch_size"], "num_train_steps": steps,
                "num_warmup_steps": warmup, "learning_rate": recipe["learning_rate"],
                "optimizer": recipe["optimizer"], "save_checkpoints_steps": max(100, steps // 10),
                "log_steps": 100, "iterations_per_loop": 100, "max_eval_steps": 100,
                "eval_batch_size": 64}

    def recipe_model(self, name):
        """The recipe's finished run as the base model: (its export, its evaluation on the
        recipe's held-out records)."""
        export = os.path.join(self.settings.recipe_dir, "pretraining", "export")
        if not os.path.exists(os.path.join(export, "bert_model.ckpt.index")):
            sys.exit(f"{export}/bert_model.ckpt is missing: finish the recipe's run first "
                     f"(rerun its pretrain_from_text.py command, which resumes).")
        return export, self.evaluate(export, os.path.join(self.work, "pretrain", name, "eval"))

    def evaluate(self, export, out):
        """The masked LM of an exported model on the held-out records of the original's
        masking (80% [MASK], 10% same, 10% random), as the pre-trainings evaluate: its
        evaluation results."""
        records = self.records()
        self.run("run_pretraining.py", {
            "input_file": records["eval"], "eval_input_file": records["eval"],
            "objective": self.objective, "bert_config_file": f"{export}/bert_config.json",
            "init_checkpoint": f"{export}/bert_model.ckpt", "output_dir": out,
            "do_eval": True, "max_seq_length": self.seq,
            "max_predictions_per_seq": self.predictions, "dtype": self.dtype,
            **{k: self.schedule()[k] for k in ("max_eval_steps", "eval_batch_size")}},
            os.path.join(out, "eval_results.txt"))
        return self.results(os.path.join(out, "eval_results.txt"))

    def random_init(self, size=None):
        """A folder with the base config (or that of Table 6's `size`) and no checkpoint:
        fine-tuning from random weights, the floor a pre-trained model must beat."""
        if size and tuple(size) != tuple(self.base):
            folder = os.path.join(self.work, "random-init-{}-{}-{}".format(*size))
            self.pretrain("size-{}-{}-{}".format(*size), size=size)  # writes its config
            source = os.path.join(self.work, "pretrain", "size-{}-{}-{}".format(*size),
                                  "bert_config.json")
        elif self.recipe:
            folder = os.path.join(self.work, "random-init")
            source = os.path.join(self.settings.recipe_dir, "bert_config.json")
        else:
            folder = os.path.join(self.work, "pretrain", "random-init")
            self.pretrain(self.base_name())  # writes the base config
            source = os.path.join(self.work, "pretrain", self.base_name(), "bert_config.json")
        if not os.path.exists(os.path.join(folder, "bert_config.json")):
            os.makedirs(folder, exist_ok=True)
            with open(source) as src:
                atomic_write_text(os.path.join(folder, "bert_config.json"), src.read())
        return folder

    # ------------------------------------------------------------------ tasks
    def glue_data(self, task):
        """The task's folder: QNLI's dev set split in two, SST-2's first
        --train_examples training rows, the others as they are."""
        source = os.path.join(self.settings.shared_dir, "glue", task)
        if task not in ("QNLI", "SST-2"):
            return source
        folder = os.path.join(self.work, "glue", task)
        if os.path.exists(os.path.join(folder, "dev.tsv")):
            return folder
        os.makedirs(folder, exist_ok=True)
        if task == "QNLI":  # only its dev set is here: split it
            with open(os.path.join(source, "dev.tsv"), encoding="utf-8") as f:
                lines = f.readlines()
            parts = {"train.tsv": lines[:-1000], "dev.tsv": [lines[0]] + lines[-1000:]}
        else:
            with open(os.path.join(source, "train.tsv"), encoding="utf-8") as f:
                lines = f.readlines()
            with open(os.path.join(source, "dev.tsv"), encoding="utf-8") as f:
                dev = f.readlines()
            parts = {"train.tsv": lines[:self.settings.train_examples + 1], "dev.tsv": dev}
        for name, part in parts.items():
            atomic_write_text(os.path.join(folder, name), "".join(part))
        return folder

    def ner_data(self):
        folder = os.path.join(self.work, "conll")
        if not os.path.exists(os.path.join(folder, "eng.testb")):  # the last written
            os.makedirs(folder, exist_ok=True)
            source = os.path.join(self.settings.shared_dir, "conll2003")
            with open(os.path.join(source, "eng.train"), encoding="utf-8") as f:
                sentences = f.read().split("\n\n")
            atomic_write_text(os.path.join(folder, "eng.train"),
                              "\n\n".join(sentences[:self.settings.ner_sentences]) + "\n")
            for name in ("eng.testa", "eng.testb"):
                with open(os.path.join(source, name), encoding="utf-8") as src:
                    atomic_write_text(os.path.join(folder, name), src.read())
        return folder

    def fine_tune(self, model, task, tag, seed, **extra):
        """The dev score of `model` (an export folder, or `random_init()`) fine-tuned on
        `task` with one seed: accuracy (SST-2, MRPC, QNLI), Pearson (STS-B) or entity F1
        on eng.testa (CoNLL-2003), in points."""
        checkpoint = os.path.join(model, "bert_model.ckpt")
        lr = self.settings.learning_rate
        out = os.path.join(self.work, "finetune", f"{tag}-{task}-seed{seed}" + (
            f"-lr{lr:g}" if lr != LEARNING_RATE and "learning_rate" not in extra else ""))
        flags = dict(FINE_TUNING, vocab_file=self.vocab(), max_seq_length=self.seq,
                     learning_rate=lr, seed=seed, output_dir=out,
                     bert_config_file=os.path.join(model, "bert_config.json"),
                     init_checkpoint=checkpoint if os.path.exists(checkpoint + ".index")
                     else None)
        flags.update(extra)
        done = os.path.join(out, "eval_results.txt")
        if task == "CoNLL-2003":
            self.run("run_ner.py", dict(flags, data_dir=self.ner_data()), done)
            return float(self.results(done)["f1"])
        self.run("run_classifier.py", dict(flags, task_name=task,
                                           data_dir=self.glue_data(task)), done)
        results = self.results(done)
        if "majority_class_accuracy" in results:
            self.majority[task] = 100 * float(results["majority_class_accuracy"])
        return 100 * float(results["pearson" if task == "STS-B" else "accuracy"])

    def feature_based(self, combination):
        """run_ner.py's flags for a frozen encoder's `combination` of layers under a
        BiLSTM (Tables 7 and 8)."""
        return {"feature_based": combination, "bilstm_units": self.settings.bilstm_units,
                "learning_rate": 1e-3}

    def fine_tune_all(self, runs):
        """[scores over the seeds] for each (model, task, tag, extra flags) of `runs`,
        --jobs runs at a time (each task's data made first, once)."""
        for task in {run[1] for run in runs}:
            if task == "CoNLL-2003":
                self.ner_data()
            else:
                self.glue_data(task)
        calls = [(run, seed) for run in runs for seed in self.seeds]
        with concurrent.futures.ThreadPoolExecutor(self.settings.jobs) as pool:
            scores = list(pool.map(lambda c: self.fine_tune(*c[0][:3], c[1], **c[0][3]),
                                   calls))
        per_seed = len(self.seeds)
        return [scores[i * per_seed:(i + 1) * per_seed] for i in range(len(runs))]

    # ------------------------------------------------------------------ tables
    def table5(self):
        tasks = TABLE5_TASKS[self.scale]
        variants = [("BERT (MLM + NSP)", "mlm_nsp", {}), ("No NSP", "mlm", {}),
                    ("LTR & No NSP", "ltr", {}), ("+ BiLSTM", "ltr", {"head": "bilstm"})]
        models = [self.pretrain(f"base-{objective}", objective) for _, objective, _ in
                  variants]
        # The floor first: the rows are read against it.
        runs = [(self.random_init(), task, "t5-random", {}) for task in tasks]
        runs += [(model, task, f"t5-{objective}" + ("-bilstm" if extra else ""), extra)
                 for (_, objective, extra), (model, _) in zip(variants, models)
                 for task in tasks]
        scores = self.fine_tune_all(runs)
        random_weights, scores = scores[:len(tasks)], iter(scores[len(tasks):])
        print("\n| Tasks | " + " | ".join(tasks) + " | LM perplexity | paper (Base): "
              "QNLI / MRPC / SST-2 |")
        print("|---" * (len(tasks) + 3) + "|")
        for (label, _, _), (_, pretrained) in zip(variants, models):
            row = [shown(next(scores)) for _ in tasks]
            ppl = pretrained.get("masked_lm_perplexity") or pretrained.get("lm_perplexity")
            paper = PAPER[5][label]
            print(f"| {label} | " + " | ".join(row) +
                  f" | {float(ppl):.1f}{' (LTR)' if 'lm_perplexity' in pretrained else ''} | "
                  f"{paper['QNLI']} / {paper['MRPC']} / {paper['SST-2']} |")
        print("| (no pre-training: random weights) | " + " | ".join(
            shown(s) for s in random_weights) + " | | |")
        print("| (majority label) | " + " | ".join(
            f"{self.majority[t]:.1f}" if t in self.majority else "" for t in tasks) + " | | |")

    def table6(self):
        tasks, floors = TABLE6_TASKS[self.scale], TABLE6_FLOOR_TASKS[self.scale]
        models = [self.pretrain(f"size-{L}-{H}-{A}" if (L, H, A) != self.base
                                else self.base_name(), size=(L, H, A))
                  for L, H, A in self.sizes]
        runs = [(model, task, f"t6-{L}-{H}-{A}", {})
                for (L, H, A), (model, _) in zip(self.sizes, models) for task in tasks]
        # The base size's random weights are Table 5's floor (the same runs, linked).
        floor_runs = [(self.random_init(size), task, "t5-random" if tuple(size) == tuple(
                          self.base) else "t6-random-{}-{}-{}".format(*size), {})
                      for size in self.sizes for task in floors]
        scores = [shown(s) for s in self.fine_tune_all(runs + floor_runs)]
        scores, floor_scores = scores[:len(runs)], scores[len(runs):]
        print("\n| #L | #H | #A | LM (ppl), held out | " + " | ".join(tasks) + "".join(
            f" | {task}, random weights of the size" for task in floors) + " |")
        print("|---" * (4 + len(tasks) + len(floors)) + "|")
        for i, ((L, H, A), (_, pretrained)) in enumerate(zip(self.sizes, models)):
            row = (scores[i * len(tasks):(i + 1) * len(tasks)] +
                   floor_scores[i * len(floors):(i + 1) * len(floors)])
            print(f"| {L} | {H} | {A} | {float(pretrained['masked_lm_perplexity']):.1f} | " +
                  " | ".join(row) + " |")

    def table7(self):
        model, _ = self.pretrain(self.base_name())
        runs = [(model, "CoNLL-2003", "t7-fine-tuning", {})] + [
            (model, "CoNLL-2003", f"t7-{combination}", self.feature_based(combination))
            for combination in FEATURES]
        scores = self.fine_tune_all(runs)
        print("\n| System | Dev F1 (CoNLL-2003 eng.testa) | paper (Base) |")
        print("|---|---|---|")
        print(f"| Fine-tuning approach | {shown(scores[0])} | {PAPER[7]['fine-tuning']} |")
        for combination, f1 in zip(FEATURES, scores[1:]):
            print(f"| Feature-based: {combination} | {shown(f1)} | {PAPER[7][combination]} |")

    def table8(self):
        """Row by row (pre-training, its evaluations, its fine-tunings, then the row), so
        that a stopped run has printed the rows it finished; --maskings picks the rows."""
        rows = self.maskings()
        features = self.feature_based("concat_last_four")
        sentence_task = TABLE8_SENTENCE_TASK[self.scale]
        print(f"\n| [MASK] | SAME | RND | MLM ppl, own masking | MLM accuracy / ppl, "
              f"80-10-10 masking | {sentence_task} (fine-tune) | NER (fine-tune) | "
              "NER (feature-based, concat last four) | paper: MNLI / NER fine-tune / "
              "feature-based |", flush=True)
        print("|---|---|---|---|---|---|---|---|---|", flush=True)
        for masking in rows:
            tag = masking_tag(masking)
            name = self.base_name() if masking == MASKINGS[0] else tag
            export, own = self.pretrain(name, masking=masking)
            # Each run's own held-out records are masked its way, so its perplexity there
            # compares with no other row's; the original's masking of the same held-out
            # documents puts every row on one scale.
            common = own if masking == MASKINGS[0] else self.evaluate(
                export, os.path.join(self.work, "pretrain", name, "eval-80-10-10"))
            # The original's masking is Table 5's and Table 7's base model: their runs.
            tuned, frozen = (f"t5-{self.objective}", "t7-concat_last_four") if \
                masking == MASKINGS[0] else (f"t8-{tag}", f"t8-{tag}-features")
            sentence, ner, feature = (shown(scores) for scores in self.fine_tune_all([
                (export, sentence_task, tuned, {}), (export, "CoNLL-2003", tuned, {}),
                (export, "CoNLL-2003", frozen, features)]))
            paper = PAPER[8][masking]
            print("| " + " | ".join(f"{int(100 * p)}%" for p in masking) +
                  f" | {float(own['masked_lm_perplexity']):.1f} | "
                  f"{100 * float(common['masked_lm_accuracy']):.1f}% / "
                  f"{float(common['masked_lm_perplexity']):.1f} | {sentence} | "
                  f"{ner} | {feature} | {paper[0]} / {paper[1]} / {paper[2]} |", flush=True)

    def maskings(self):
        """Table 8's rows of --maskings (all six by default), in the paper's order."""
        if not self.settings.maskings:
            return MASKINGS
        tags = {masking_tag(m): m for m in MASKINGS}
        wanted = [t.strip() for t in self.settings.maskings.split(",") if t.strip()]
        unknown = [t for t in wanted if t not in tags]
        if unknown:
            sys.exit(f"--maskings={self.settings.maskings}: {', '.join(unknown)} is not a row of "
                     f"Table 8; give some of {', '.join(tags)}.")
        return [m for m in MASKINGS if masking_tag(m) in wanted]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """The flags of the tables (`python -m research.paper.tables --help`), and of the benches
    that reuse `Bench`."""
    shared_dir: str = setting(help="The shared data folder (`../shared/data`: GLUE, "
                              "CoNLL-2003, WikiText).")
    tables: str = setting("5,6,7,8", help="Comma-separated tables to run, of 5, 6, 7, 8.")
    work_dir: str = setting("/tmp/paper_tables", help="Folder of every run (a finished one "
                            "is reused: the script resumes).")
    recipe_dir: Optional[str] = setting(None, help="A pretrain_from_text.py --output_dir: the "
                                        "tables at the recipe's scale (its text, vocabulary, "
                                        "records, model and schedule; its run is the base "
                                        "model).")
    vocab_size: int = setting(8000, help="Vocabulary size at the small scale.")
    dupe_factor: int = setting(3, help="create_pretraining_data.py's --dupe_factor at the "
                               "small scale.")
    pretrain_steps: Optional[int] = setting(None, help="Pre-training steps (default: 1,000 at "
                                            "the small scale, the recipe's with --recipe_dir).")
    # 1e-3 collapsed this model's representations (every token's last-layer vector the
    # same, fine-tuning stuck at the majority class); 1e-4 does not.
    pretrain_learning_rate: float = setting(1e-4, help="Pre-training peak learning rate at "
                                            "the small scale (the recipe's is in its "
                                            "recipe.json).")
    learning_rate: float = setting(LEARNING_RATE, help="Fine-tuning peak learning rate.")
    maskings: Optional[str] = setting(None, help="Table 8's rows, e.g. "
                                      "mask-80-10-10,mask-100-0-0 (default: all).")
    seeds: int = setting(3, help="Fine-tuning seeds per score.")
    jobs: int = setting(1, help="Fine-tuning runs at once (2 on 2 cores: 1.16x the "
                        "throughput, bench/RESULTS.md).")
    train_examples: int = setting(8000, help="GLUE training rows, the first ones of each "
                                  "task's train.tsv.")
    ner_sentences: int = setting(4000, help="CoNLL-2003 training sentences.")
    bilstm_units: int = setting(128, help="Feature-based BiLSTM units per direction (the "
                                "paper: 768).")


def main(settings):
    if not settings.recipe_dir and settings.pretrain_steps is None:
        settings = dataclasses.replace(settings, pretrain_steps=1000)
    bench = Bench(settings)
    print(f"{harness.describe()}; {settings}", flush=True)
    for table in settings.tables.split(","):
        start = time.time()
        getattr(bench, f"table{table.strip()}")()
        print(f"(Table {table}: {time.time() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    harness.run(main, Settings)
