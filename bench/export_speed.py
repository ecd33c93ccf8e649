"""Benchmark: how long an export and a short fine-tuning run take, this checkout against
an older one (e.g. before the serving functions were traced without AutoGraph).

Two measurements, each in a fresh process per checkout, the checkouts alternating:
  * `export`: `tasks.classification.export.export_classification` of a sentence-pair
    classifier on all-MiniLM-L6-v2's shape (6 layers, hidden 384; random weights: the
    time does not depend on them) and on a tiny one (2 layers, hidden 16): the SavedModel,
    its two signatures and the TF Lite file, as `run_classifier.py --export_dir` writes
    them;
  * `run_classifier`: the whole command a user runs, on 64 made-up SST-2 rows with the
    tiny model: `--do_train --do_eval --export_dir`, one epoch of batch 8 (start-up,
    tracing, 8 steps, evaluation, export), wall time of the process.

    git worktree add /tmp/before <commit>
    python -m bench.export_speed --before=/tmp/before [--rounds=3]
"""

import dataclasses
import functools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Optional

from bench import harness
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORDS = ("good great fine nice bad awful poor sad the movie was a plot and acting very "
         "really film").split()
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
TINY = {"vocab_size": len(VOCAB), "hidden_size": 16, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 24, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": 64, "type_vocab_size": 2, "initializer_range": 0.02}
MINILM = dict(TINY, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
              intermediate_size=1536, max_position_embeddings=512)
MODELS = {"MiniLM-L6 shape": MINILM, "tiny": TINY}


def measure_export(root, work, name):
    """In this process: seconds to export the classifier `name` with `root`'s code."""
    harness.import_project_from(root)
    import modeling
    from tasks.classification.export import export_classification
    config = modeling.BertConfig.from_dict(MODELS[name])
    model = modeling.BertClassifier(config, 2)
    target = tempfile.mkdtemp(dir=work)
    start = time.perf_counter()
    export_classification(model, os.path.join(target, "export"), os.path.join(work,
                          "vocab.txt"), True, 128, ["0", "1"], pair=True)
    seconds = time.perf_counter() - start
    shutil.rmtree(target)
    return seconds


def run_classifier(root, work):
    """Wall seconds of `run_classifier.py` (train, evaluate, export) with `root`'s code."""
    out = tempfile.mkdtemp(dir=work)
    command = [sys.executable, os.path.join(root, "run_classifier.py"), "--task_name=SST-2",
               f"--data_dir={work}/sst", f"--vocab_file={work}/vocab.txt",
               f"--bert_config_file={work}/tiny.json", f"--output_dir={out}/run",
               "--max_seq_length=16", "--train_batch_size=8", "--num_train_epochs=1",
               "--do_train", "--do_eval", f"--export_dir={out}/export"]
    start = time.perf_counter()
    subprocess.run(command, capture_output=True, text=True, check=True, cwd=work,
                   env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    seconds = time.perf_counter() - start
    shutil.rmtree(out)
    return seconds


def write_inputs(work):
    with open(os.path.join(work, "vocab.txt"), "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    with open(os.path.join(work, "tiny.json"), "w") as f:
        json.dump(TINY, f)
    os.makedirs(os.path.join(work, "sst"), exist_ok=True)
    rng = random.Random(0)
    for split in ("train", "dev"):
        rows = "".join(" ".join(rng.choice(WORDS) for _ in range(6)) + f"\t{i % 2}\n"
                       for i in range(64))
        with open(os.path.join(work, "sst", f"{split}.tsv"), "w") as f:
            f.write("sentence\tlabel\n" + rows)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.Before):
    """The flags of this bench (`python -m bench.export_speed --help`)."""
    rounds: int = setting(3, help="Rounds, the checkouts alternating.")
    measure: Optional[str] = setting(None, help="Internal: time, in this process, the export "
                                     "of this model (a key of MODELS).")
    root: Optional[str] = setting(None, help="Internal: the checkout whose code --measure "
                                  "times.")
    work_dir: Optional[str] = setting(None, help="Internal: the folder of the inputs.")


def one_round(root, work):
    """{what: seconds} with `root`'s code: each export in a fresh process, then the whole
    run_classifier.py command."""
    times = {}
    for model in MODELS:
        _, done = harness.in_fresh_process(
            ["python", "-m", "bench.export_speed", f"--measure={model}", f"--root={root}",
             f"--work_dir={work}"], cwd=ROOT)
        times[f"export, {model}"] = json.loads(done.stdout.strip().splitlines()[-1])
    times["run_classifier.py, tiny"] = run_classifier(root, work)
    return times


def main(settings):
    if settings.measure:
        print(json.dumps(measure_export(settings.root, settings.work_dir, settings.measure)))
        return
    work = tempfile.mkdtemp(prefix="export_speed_")
    write_inputs(work)
    roots = {"this checkout": ROOT}
    if settings.before:
        roots["before"] = os.path.abspath(settings.before)
    results = harness.alternate({name: functools.partial(one_round, root, work)
                                 for name, root in roots.items()}, settings.rounds)
    shutil.rmtree(work)
    print(f"\n{harness.describe()}\nmedian of {settings.rounds} rounds, seconds\n")
    names, rows = list(roots), []
    for what in results[names[0]][0]:
        medians = [statistics.median(r[what] for r in results[name]) for name in names]
        rows.append([what, *(f"{m:.1f}" for m in medians)]
                    + ([f"{medians[1] / medians[0]:.2f}x"] if len(names) == 2 else []))
    print(harness.table(["what", *names] + (["ratio"] if len(names) == 2 else []), rows))


if __name__ == "__main__":
    harness.run(main, Settings)
