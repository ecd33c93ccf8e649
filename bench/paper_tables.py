"""The paper's Tables 5-8 at CPU scale: small BERTs pre-trained on WikiText-2 with each
objective, size and masking procedure, fine-tuned (or used as frozen features) on GLUE and
CoNLL-2003 subsets, every step through the user-facing scripts.

Pipeline: WikiText-2 valid + test (`--shared_dir`/wikitext, 4.6 times smaller than the
paper's corpus by a factor of ~7,000) -> documents (the held-out last 10% for the masked-LM
evaluation) -> `data_prep/build_vocab.py` (a WordPiece vocabulary of `--vocab_size`) ->
`data_prep/create_pretraining_data.py` (one record set per masking procedure) ->
`run_pretraining.py` (per objective / size / masking) -> `run_classifier.py` on SST-2 (the
first `--train_examples` rows, full dev), MRPC (full) and QNLI (its dev set split:
4,463 rows to train, 1,000 to evaluate; the train set is not in `--shared_dir`) and
`run_ner.py` on CoNLL-2003 (the first `--ner_sentences` training sentences, full eng.testa).
Each run's folder is kept in `--work_dir`, and a finished run is not repeated, so the
script resumes; the tables are printed in Markdown with every command line in the log.

    python bench/paper_tables.py --shared_dir=../shared/data --tables=5,6,7,8 \
      [--work_dir=/tmp/paper_tables --pretrain_steps=2000]

At paper scale on a GPU/TPU: the same scripts with BERT-Base's config, the paper's
corpus (BooksCorpus + Wikipedia, `data_prep/extract_wikipedia.py`), `--max_seq_length=512`
records, 1,000,000 steps of batch 256 (`run_pretraining.py --distribution_strategy=tpu`
or `mirrored`) and the full GLUE / CoNLL / SQuAD sets; the flags per table are the ones
this script passes (see `VARIANTS`).
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

# Sequence length of pre-training and fine-tuning (the paper: 128 then 512; 64 here, so
# that a table fits in about half an hour on two cores), and masked positions per sequence.
SEQ, PREDICTIONS = 64, 10
# The base model of these tables (BERT-Base is L=12, H=768, A=12).
BASE = {"num_hidden_layers": 4, "hidden_size": 128, "num_attention_heads": 2}
# Table 6: (L, H, A).
SIZES = [(2, 128, 2), (4, 128, 2), (4, 256, 4)]
# Table 8: ([MASK], same, random) shares.
MASKINGS = [(0.8, 0.1, 0.1), (1.0, 0.0, 0.0), (0.8, 0.0, 0.2), (0.8, 0.2, 0.0),
            (0.0, 0.2, 0.8), (0.0, 0.0, 1.0)]
FEATURES = ["embeddings", "second_to_last", "last", "sum_last_four", "concat_last_four",
            "sum_all"]
GLUE_TASKS = ["SST-2", "MRPC", "QNLI"]
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


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = args.work_dir
        os.makedirs(self.work, exist_ok=True)
        self.log = open(os.path.join(self.work, "commands.log"), "a", encoding="utf-8")
        self.majority = {}  # task -> dev accuracy of always answering the majority label

    # ------------------------------------------------------------------ running
    def run(self, script, flags, done_file):
        """Runs `script` with `flags` unless `done_file` exists; returns its seconds."""
        if os.path.exists(done_file):
            return 0.0
        argv = [sys.executable, os.path.join(ROOT, script)] + [
            f"--{k}" if v is True else f"--{k}={v}" for k, v in flags.items()
            if v is not None and v is not False]
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
        train = os.path.join(self.work, "documents_train.txt")
        held_out = os.path.join(self.work, "documents_eval.txt")
        if not os.path.exists(held_out):
            from pretraining_data_speed import wikitext_documents
            text = "".join(wikitext_documents(os.path.join(
                self.args.shared_dir, "wikitext", "wikitext-2", name))
                for name in ("valid.txt", "test.txt"))
            docs = [d for d in text.split("\n\n") if d.strip()]
            cut = len(docs) * 9 // 10
            for path, part in ((train, docs[:cut]), (held_out, docs[cut:])):
                with open(path, "w", encoding="utf-8") as f:
                    f.write("\n\n".join(part) + "\n\n")
        return train, held_out

    def vocab(self):
        vocab = os.path.join(self.work, "vocab.txt")
        train, _ = self.documents()
        self.run("data_prep/build_vocab.py", {
            "input_file": train, "output_file": vocab, "vocab_size": self.args.vocab_size,
            "lower_thresh": 3}, vocab)
        return vocab

    def records(self, masking=MASKINGS[0]):
        name = "records-{}-{}-{}".format(*(int(100 * p) for p in masking))
        folder = os.path.join(self.work, name)
        os.makedirs(folder, exist_ok=True)
        vocab = self.vocab()
        files = {}
        for split, documents in zip(("train", "eval"), self.documents()):
            out = os.path.join(folder, f"{split}.tfrecord")
            self.run("data_prep/create_pretraining_data.py", {
                "input_file": documents, "output_file": out, "vocab_file": vocab,
                "do_lower_case": True, "max_seq_length": SEQ,
                "max_predictions_per_seq": PREDICTIONS, "dupe_factor": self.args.dupe_factor if split == "train" else 1,
                "masked_lm_prob": 0.15, "mask_token_prob": masking[0],
                "random_token_prob": masking[2], "random_seed": 12345, "num_workers": 2},
                out)
            files[split] = out
        return files

    # ------------------------------------------------------------------ models
    def pretrain(self, name, objective="mlm_nsp", size=None, masking=MASKINGS[0]):
        """Pre-trains (once) and returns (export folder, eval results)."""
        folder = os.path.join(self.work, "pretrain", name)
        os.makedirs(folder, exist_ok=True)
        config = os.path.join(folder, "bert_config.json")
        L, H, A = size or (BASE["num_hidden_layers"], BASE["hidden_size"],
                           BASE["num_attention_heads"])
        vocab = self.vocab()
        with open(vocab, encoding="utf-8") as f:
            vocab_size = sum(1 for _ in f)
        with open(config, "w") as f:
            json.dump({"vocab_size": vocab_size, "hidden_size": H, "num_hidden_layers": L,
                       "num_attention_heads": A, "intermediate_size": 4 * H,
                       "max_position_embeddings": SEQ, "type_vocab_size": 2}, f)
        records = self.records(masking)
        out = os.path.join(folder, "run")
        seconds = self.run("run_pretraining.py", {
            "input_file": records["train"], "eval_input_file": records["eval"],
            "bert_config_file": config, "output_dir": out, "objective": objective,
            "max_seq_length": SEQ, "max_predictions_per_seq": PREDICTIONS,
            "train_batch_size": 32,
            "num_train_steps": self.args.pretrain_steps,
            "num_warmup_steps": self.args.pretrain_steps // 10,
            "learning_rate": self.args.pretrain_learning_rate,
            "do_train": True, "do_eval": True, "max_eval_steps": 50,
            "save_checkpoints_steps": self.args.pretrain_steps, "eval_batch_size": 32},
            os.path.join(out, "eval_results.txt"))
        if seconds:
            print(f"  pre-trained {name} in {seconds:.0f} s", flush=True)
        return os.path.join(out, "export"), self.results(os.path.join(out, "eval_results.txt"))

    # ------------------------------------------------------------------ tasks
    def glue_data(self, task):
        folder = os.path.join(self.work, "glue", task)
        if os.path.exists(os.path.join(folder, "dev.tsv")):
            return folder
        os.makedirs(folder, exist_ok=True)
        source = os.path.join(self.args.shared_dir, "glue", task)
        if task == "QNLI":  # only its dev set is here: split it
            with open(os.path.join(source, "dev.tsv"), encoding="utf-8") as f:
                lines = f.readlines()
            parts = {"train.tsv": lines[:-1000], "dev.tsv": [lines[0]] + lines[-1000:]}
        else:
            with open(os.path.join(source, "train.tsv"), encoding="utf-8") as f:
                lines = f.readlines()
            with open(os.path.join(source, "dev.tsv"), encoding="utf-8") as f:
                dev = f.readlines()
            parts = {"train.tsv": lines[:self.args.train_examples + 1], "dev.tsv": dev}
        for name, part in parts.items():
            with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
                f.writelines(part)
        return folder

    def classify(self, model, task, tag, **extra):
        """Dev accuracy (MRPC: accuracy too, as the paper's Table 5) of `model` on `task`."""
        out = os.path.join(self.work, "finetune", f"{tag}-{task}")
        self.run("run_classifier.py", dict({
            "task_name": task, "data_dir": self.glue_data(task),
            "vocab_file": self.vocab(), "bert_config_file": f"{model}/bert_config.json",
            "init_checkpoint": f"{model}/bert_model.ckpt" if model != self.random_init()
            else None, "do_lower_case": True,
            "do_train": True, "do_eval": True, "max_seq_length": SEQ,
            "train_batch_size": 32, "learning_rate": 1e-4, "num_train_epochs": 3,
            "output_dir": out, "save_checkpoints_steps": 100000}, **extra),
            os.path.join(out, "eval_results.txt"))
        results = self.results(os.path.join(out, "eval_results.txt"))
        self.majority[task] = 100 * float(results["majority_class_accuracy"])
        return 100 * float(results["accuracy"])

    def random_init(self):
        """A folder with the base config and no checkpoint: fine-tuning from random
        weights, the floor a pre-trained model must beat."""
        folder = os.path.join(self.work, "pretrain", "random-init")
        if not os.path.exists(os.path.join(folder, "bert_config.json")):
            self.pretrain("base-mlm_nsp")  # writes the base config
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(self.work, "pretrain", "base-mlm_nsp",
                                   "bert_config.json")) as src, \
                    open(os.path.join(folder, "bert_config.json"), "w") as dst:
                dst.write(src.read())
        return folder

    def ner_data(self):
        folder = os.path.join(self.work, "conll")
        if not os.path.exists(os.path.join(folder, "eng.testa")):
            os.makedirs(folder, exist_ok=True)
            source = os.path.join(self.args.shared_dir, "conll2003")
            with open(os.path.join(source, "eng.train"), encoding="utf-8") as f:
                sentences = f.read().split("\n\n")
            with open(os.path.join(folder, "eng.train"), "w", encoding="utf-8") as f:
                f.write("\n\n".join(sentences[:self.args.ner_sentences]) + "\n")
            for name in ("eng.testa", "eng.testb"):
                with open(os.path.join(source, name), encoding="utf-8") as src, \
                        open(os.path.join(folder, name), "w", encoding="utf-8") as dst:
                    dst.write(src.read())
        return folder

    def ner(self, model, tag, **extra):
        """Entity F1 on eng.testa."""
        out = os.path.join(self.work, "ner", tag)
        self.run("run_ner.py", dict({
            "data_dir": self.ner_data(), "vocab_file": self.vocab(),
            "bert_config_file": f"{model}/bert_config.json",
            "init_checkpoint": f"{model}/bert_model.ckpt", "do_lower_case": True,
            "do_train": True, "do_eval": True, "max_seq_length": SEQ,
            "train_batch_size": 32, "learning_rate": 1e-4, "num_train_epochs": 3,
            "output_dir": out, "save_checkpoints_steps": 100000}, **extra),
            os.path.join(out, "eval_results.txt"))
        return float(self.results(os.path.join(out, "eval_results.txt"))["f1"])

    # ------------------------------------------------------------------ tables
    def table5(self):
        rows = []
        variants = [("BERT (MLM + NSP)", "mlm_nsp", {}), ("No NSP", "mlm", {}),
                    ("LTR & No NSP", "ltr", {}), ("+ BiLSTM", "ltr", {"head": "bilstm"})]
        for label, objective, extra in variants:
            model, pretrained = self.pretrain(f"base-{objective}", objective)
            tag = f"t5-{objective}" + ("-bilstm" if extra else "")
            scores = {task: self.classify(model, task, tag, **extra) for task in GLUE_TASKS}
            rows.append((label, pretrained, scores))
        print("\n| Tasks | " + " | ".join(GLUE_TASKS) + " | LM perplexity | paper (Base): "
              "QNLI / MRPC / SST-2 |")
        print("|---" * (len(GLUE_TASKS) + 3) + "|")
        floor = {task: self.classify(self.random_init(), task, "t5-random") for task in
                 GLUE_TASKS}
        for label, pretrained, scores in rows:
            ppl = pretrained.get("masked_lm_perplexity") or pretrained.get("lm_perplexity")
            paper = PAPER[5][label]
            print(f"| {label} | " + " | ".join(f"{scores[t]:.1f}" for t in GLUE_TASKS) +
                  f" | {float(ppl):.1f}{' (LTR)' if 'lm_perplexity' in pretrained else ''} | "
                  f"{paper['QNLI']} / {paper['MRPC']} / {paper['SST-2']} |")
        print("| (no pre-training: random weights) | " + " | ".join(
            f"{floor[t]:.1f}" for t in GLUE_TASKS) + " | | |")
        print("| (majority label) | " + " | ".join(f"{self.majority[t]:.1f}"
                                                   for t in GLUE_TASKS) + " | | |")

    def table6(self):
        print("\n| #L | #H | #A | LM (ppl), held out | SST-2 | MRPC | QNLI |")
        print("|---|---|---|---|---|---|---|")
        for L, H, A in SIZES:
            name = f"size-{L}-{H}-{A}" if (L, H, A) != tuple(BASE.values()) \
                else "base-mlm_nsp"
            model, pretrained = self.pretrain(name, size=(L, H, A))
            scores = [self.classify(model, task, f"t6-{L}-{H}-{A}") for task in
                      ("SST-2", "MRPC", "QNLI")]
            print(f"| {L} | {H} | {A} | {float(pretrained['masked_lm_perplexity']):.1f} | " +
                  " | ".join(f"{s:.1f}" for s in scores) + " |")

    def table7(self):
        model, _ = self.pretrain("base-mlm_nsp")
        print("\n| System | Dev F1 (CoNLL-2003 eng.testa) | paper (Base) |")
        print("|---|---|---|")
        print(f"| Fine-tuning approach | {self.ner(model, 't7-fine-tuning'):.1f} | "
              f"{PAPER[7]['fine-tuning']} |")
        for combination in FEATURES:
            f1 = self.ner(model, f"t7-{combination}", feature_based=combination,
                          bilstm_units=self.args.bilstm_units, learning_rate=1e-3)
            print(f"| Feature-based: {combination} | {f1:.1f} | {PAPER[7][combination]} |")

    def table8(self):
        print("\n| [MASK] | SAME | RND | MLM ppl | SST-2 (fine-tune) | NER (fine-tune) | "
              "NER (feature-based, concat last four) | paper: MNLI / NER fine-tune / "
              "feature-based |")
        print("|---|---|---|---|---|---|---|---|")
        for masking in MASKINGS:
            tag = "mask-{}-{}-{}".format(*(int(100 * p) for p in masking))
            name = "base-mlm_nsp" if masking == MASKINGS[0] else tag
            model, pretrained = self.pretrain(name, masking=masking)
            sst = self.classify(model, "SST-2", f"t8-{tag}")
            ner = self.ner(model, f"t8-{tag}")
            feature = self.ner(model, f"t8-{tag}-features", feature_based="concat_last_four",
                               bilstm_units=self.args.bilstm_units, learning_rate=1e-3)
            paper = PAPER[8][masking]
            print("| " + " | ".join(f"{int(100 * p)}%" for p in masking) +
                  f" | {float(pretrained['masked_lm_perplexity']):.1f} | {sst:.1f} | "
                  f"{ner:.1f} | {feature:.1f} | {paper[0]} / {paper[1]} / {paper[2]} |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared_dir", required=True)
    parser.add_argument("--tables", default="5,6,7,8")
    parser.add_argument("--work_dir", default="/tmp/paper_tables")
    parser.add_argument("--vocab_size", type=int, default=8000)
    parser.add_argument("--dupe_factor", type=int, default=3)
    parser.add_argument("--pretrain_steps", type=int, default=1000)
    # 1e-3 collapsed this model's representations (every token's last-layer vector the
    # same, fine-tuning stuck at the majority class); 1e-4 does not.
    parser.add_argument("--pretrain_learning_rate", type=float, default=1e-4)
    parser.add_argument("--train_examples", type=int, default=8000)
    parser.add_argument("--ner_sentences", type=int, default=4000)
    parser.add_argument("--bilstm_units", type=int, default=128,
                        help="Feature-based BiLSTM units per direction (the paper: 768).")
    args = parser.parse_args()
    from machine import cpu_model
    bench = Bench(args)
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; {vars(args)}", flush=True)
    for table in args.tables.split(","):
        start = time.time()
        getattr(bench, f"table{table.strip()}")()
        print(f"(Table {table}: {time.time() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
