"""Is the next-sentence model's STS-B gain a property of the recipe, or of one run?

At the recipe's scale (docs/pretraining.md), a float32 `--objective=mlm_nsp` run
fine-tuned STS-B to 40 Pearson and its bfloat16 twin (same records, schedule and seed;
losses equal to 0.02) to random weights' 19. This script pre-trains more such runs, one
per `--runs` entry (`dtype:seed`: the compute precision and the pre-training seed, which
draws the weights and the dropout), on the records and schedule of the recipe (as
`tables.py` does for Table 5's MLM + NSP row), and fine-tunes each on `--tasks`
with `--seeds` fine-tuning seeds, through the user-facing scripts.

    python -m research.paper.nsp_seeds --shared_dir=../shared/data --recipe_dir=/tmp/bf16_full \
      --work_dir=/tmp/tables_bf16 --runs=float32:2,bfloat16:2 [--tasks=STS-B,CoNLL-2003]

Runs live in `--work_dir` (`pretrain/nsp-<dtype>-seed<seed>`, fine-tunings tagged
`t5x-nsp-<dtype>-seed<seed>`); a finished one is not repeated, so the script resumes.
"""

import dataclasses
import time

from bench import harness
from common.settings import setting
from research.paper import tables as paper_tables


class SeededBench(paper_tables.Bench):
    """Table 5's bench with the pre-training precision and seed given."""

    def __init__(self, settings, dtype, seed):
        super().__init__(settings)
        self._dtype, self._seed = dtype, seed

    @property
    def dtype(self):
        return self._dtype

    def schedule(self):
        return dict(super().schedule(), seed=self._seed)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(paper_tables.Settings):
    """The tables' recipe-scale flags (`python -m research.paper.nsp_seeds --help`), with this
    bench's own."""
    recipe_dir: str = setting(help="A pretrain_from_text.py --output_dir run: the records "
                              "and schedule to pre-train on.")
    work_dir: str = "/tmp/paper_tables_recipe"
    jobs: int = 2
    runs: str = setting("float32:2,bfloat16:2", help="dtype:seed of each pre-training, "
                        "comma-separated.")
    tasks: str = setting("STS-B", help="Comma-separated tasks to fine-tune.")


def main(settings):
    print(f"{harness.describe()}; {settings}", flush=True)
    tasks = settings.tasks.split(",")
    rows = []
    for run in settings.runs.split(","):
        dtype, seed = run.split(":")
        bench = SeededBench(settings, dtype, int(seed))
        name = f"nsp-{dtype}-seed{seed}"
        start = time.time()
        model, results = bench.pretrain(name, objective="mlm_nsp")
        scores = bench.fine_tune_all([(model, task, f"t5x-{name}", {}) for task in tasks])
        held_out = (f"{float(results['masked_lm_accuracy']):.1%} / "
                    f"{float(results['next_sentence_accuracy']):.1%}")
        rows.append([f"{dtype}, seed {seed}", held_out] + [
            f"{paper_tables.shown(s)} ({', '.join(f'{x:.1f}' for x in s)})" for s in scores])
        print(f"{name}: {time.time() - start:.0f} s", flush=True)
    print("\n" + harness.table(["pre-training", "held out: masked LM / next sentence", *tasks],
                               rows))


if __name__ == "__main__":
    harness.run(main, Settings)
