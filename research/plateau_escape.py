"""When does a pre-training recipe leave the frequent-token plateau? Variants of the
one-hour CPU recipe (`tasks.pretraining.recipe.RECIPE`), each trained on the same
records to the same compute, evaluated on held-out documents at every checkpoint.

Steps are the recipe's: a variant whose step costs c times the recipe's training FLOPs
(a narrower model, a larger batch, more masked positions) runs a schedule of --steps / c
steps (the steps the same hour buys it) and is reported at equal compute, which holds on
any machine. Reported per variant:
  * the escape step: the first evaluated step whose held-out masked-LM loss is 1 nat
    below the masked tokens' unigram entropy (the loss of predicting frequent tokens
    whatever the context: `tasks.pretraining.plateau`), in the recipe's steps;
  * held-out masked-LM accuracy at each of `--report_steps` (the evaluation at that
    compute or the last one before it): the steps a CPU's hour buys (AVX2 about 4,400 at
    2026-11-29's step, AVX-512 9,500).

The data are made as `pretrain_from_text.py` makes them (held-out documents, the recipe's
vocabulary, records masked as many times as the steps need); a variant's run that is
there already is resumed or reused, so the bench can be stopped and rerun.

    python -m research.plateau_escape --input_text=../shared/data/wikitext/wikitext-2/test.txt \
      --work_dir=/tmp/plateau --variants=recipe,mask_25,dropout_0.1+mask_25 --steps=1000 \
      --eval_every=100
"""

import dataclasses
import json
import os
from typing import Optional

from bench import harness
from common.settings import setting

# Each variant: fields of the recipe's bert_config.json, of its trainer, of its records'
# masking, of its task and of its schedule, changed. Variants join with "+"
# (`dropout_0.1+mask_25`): each measured alone, then together.
# The original's masking (15%, 20 predictions in 128 tokens): the first recipe's, and the
# records the plateau level is estimated on, whatever the recipe now masks.
ORIGINAL_MASKING = {"masked_lm_prob": 0.15, "max_predictions_per_seq": 20}
VARIANTS = {
    "recipe": {},
    # Issue 62's changes undone one by one, and the recipe before it (first_recipe:
    # initialised at 0.02, a random position table, 15% masked, lr 3e-4, dropout 0.1).
    "mask_15": {"masking": ORIGINAL_MASKING},
    "lr_3e-4": {"trainer": {"learning_rate": 3e-4}},
    "init_0.02": {"config": {"initializer_range": 0.02}},
    "random_pos": {"config": {"position_embedding_init": "truncated_normal"}},
    "first_recipe": {"config": {"initializer_range": 0.02,
                                "position_embedding_init": "truncated_normal"},
                     "masking": ORIGINAL_MASKING, "trainer": {"learning_rate": 3e-4},
                     "task": {"pretraining_dropout": None},
                     "schedule": {"warmup_share": 0.06}},  # no floor on the warm-up
    # The recipe's warm-up without its floor of MIN_WARMUP_STEPS: 6% of any schedule.
    "warmup_6pct": {"schedule": {"warmup_share": 0.06}},
    # The config's dropout (0.1) while pre-training, as before the recipe turned it off.
    "dropout_0.1": {"task": {"pretraining_dropout": None}},
    "lr_5e-4": {"trainer": {"learning_rate": 5e-4}},
    "lr_1e-3": {"trainer": {"learning_rate": 1e-3}},
    "lr_2e-3": {"trainer": {"learning_rate": 2e-3}},
    "pre_ln": {"config": {"pre_layer_norm": True}},
    # Cheaper steps: a narrower model (BERT-Tiny's width, Turc et al. 2019, at 4 layers),
    # or twice the sequences a step (each run to the compute of the recipe's steps).
    "h128": {"config": {"hidden_size": 128, "num_attention_heads": 2,
                        "intermediate_size": 512}},
    "batch_64": {"trainer": {"train_batch_size": 64}},
    # More updates for the same compute: half or a quarter of the sequences a step (a
    # larger batch was slower per sequence in issue 34's probes: batch 128 at 6.74 where
    # 32 was at 6.20 after the same 20,600 sequences).
    "batch_16": {"trainer": {"train_batch_size": 16}},
    "batch_8": {"trainer": {"train_batch_size": 8}},
    "pre_ln_lr_1e-3": {"config": {"pre_layer_norm": True},
                       "trainer": {"learning_rate": 1e-3}},
    # Larger initial weights: at 0.02 a head's query-key logits start near 0.1 (attention
    # near uniform, and the gradient of the query and key kernels small, as the product of
    # the two); at 0.05 near 0.6.
    "init_0.05": {"config": {"initializer_range": 0.05}},
    "init_0.1": {"config": {"initializer_range": 0.1}},
    # The position table starts as Vaswani et al.'s sinusoids (rows' dot products
    # already a function of their distance), not as random vectors.
    "sin_pos": {"config": {"position_embedding_init": "sinusoidal"}},
    "clip_0.5": {"trainer": {"clip_norm": 0.5}},
    "beta2_0.98": {"trainer": {"adam_beta2": 0.98}},
    # Wettig et al. 2022 ("Should You Mask 15%..."): 25-40% beats 15%; predictions capped
    # at the share of a full sequence of 128.
    "mask_25": {"masking": {"masked_lm_prob": 0.25, "max_predictions_per_seq": 32}},
    "mask_40": {"masking": {"masked_lm_prob": 0.40, "max_predictions_per_seq": 52}},
    # A warm-up of 1% of the schedule (the original's 10,000 of 1,000,000 steps), not 6%.
    "warmup_1pct": {"schedule": {"warmup_share": 0.01}},
    # The peak learning rate held to half-way or 3/4 of the schedule, then the linear
    # decay to 0 (a warm-up, stable, decay shape), not the original's decay from step 0.
    "stable_0.5": {"trainer": {"lr_stable_share": 0.5}},
    "stable_0.75": {"trainer": {"lr_stable_share": 0.75}},
    # ALBERT's sentence-order prediction beside the masked LM (Lan et al. 2019).
    "sop": {"masking": {"sentence_order": True}, "task": {"objective": "mlm_nsp"}},
    # Geiping & Goldstein 2022, "Cramming", final configuration as far as it is a setting
    # here: pre-LayerNorm blocks, no dropout, peak learning rate 1e-3, clipping 0.5, Adam
    # beta2 0.98, 25% masking (not its one-cycle schedule nor its batch ramp).
    "cramming": {"config": {"pre_layer_norm": True, "hidden_dropout_prob": 0.0,
                            "attention_probs_dropout_prob": 0.0},
                 "trainer": {"learning_rate": 1e-3, "clip_norm": 0.5, "adam_beta2": 0.98},
                 "masking": {"masked_lm_prob": 0.25, "max_predictions_per_seq": 32}},
}
ESCAPE_NATS = 1.0  # below the unigram entropy


class StopTraining(Exception):
    """A variant reached --train_until."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    input_text: str = setting(help="Text files (comma-separated files or globs), laid out "
                              "as pretrain_from_text.py reads them.")
    work_dir: str = setting(help="Folder of the data and of every variant's run (reused).")
    variants: str = setting("recipe,cramming", help="Comma-separated, of "
                            + ", ".join(VARIANTS) + "; parts joined with + combine.")
    steps: int = setting(1000, help="Training steps of every variant's schedule (warm-up "
                         "and decay), as a run of that length has it.")
    train_until: Optional[int] = setting(None, help="Stop each variant at this step (default "
                                         "--steps); a later run with a larger value goes "
                                         "on, on the same schedule.")
    equal_compute: bool = setting(True, help="Steps are the recipe's: a variant whose step "
                                  "costs c times the recipe's training FLOPs runs a "
                                  "schedule of --steps / c steps and is reported at the "
                                  "same compute. False: --steps of every variant.")
    eval_every: int = setting(100, help="Steps between held-out evaluations (checkpoints), "
                              "the recipe's (scaled as --steps).")
    report_steps: str = setting("800,2400,4400,9500", help="Steps at which held-out "
                                "accuracy is reported (those above --steps are left out).")
    split_sentences: Optional[str] = setting(None, help="As pretrain_from_text.py.")
    seed: int = setting(12345, help="Seed of the split, the masking and the weights.")


def prepare_data(settings):
    """The documents, vocabulary and config, as pretrain_from_text.py makes them, and the
    duplicates a run of `settings.steps` steps needs (as the recipe's plan chooses them)."""
    from data_prep import corpus
    from tasks.pretraining import from_text
    out = os.path.join(settings.work_dir, "data")
    os.makedirs(out, exist_ok=True)
    files = corpus.expand_input_patterns(settings.input_text)
    train_text, heldout_text = from_text.prepare_text(files, out, settings.split_sentences)
    vocab = from_text.learn_vocabulary(train_text, out, from_text.RECIPE["vocab_size"], True)
    plan = from_text.choose_plan(out, 1.0, os.path.getsize(train_text), 60.0 / settings.steps)
    return {"dir": out, "train_text": train_text, "heldout_text": heldout_text,
            "vocab": vocab, "config": from_text.bert_config(out, vocab),
            "dupe_factor": plan.dupe_factor}


def write_records(data, masking, settings):
    """(training records, held-out records) masked as `masking` says (the recipe's when
    empty). The held-out records are masked at `from_text.HELDOUT_MASKED_LM_PROB` whatever
    the variant, so that every variant is judged on the same predictions."""
    from tasks.pretraining import from_text
    chosen = {"masked_lm_prob": from_text.RECIPE["masked_lm_prob"],
              "max_predictions_per_seq": from_text.RECIPE["max_predictions_per_seq"],
              "sentence_order": False, **masking}
    name = "records-dupe{}-mask{masked_lm_prob:g}-{max_predictions_per_seq}".format(
        data["dupe_factor"], **chosen) + ("-sop" if chosen["sentence_order"] else "")
    records = os.path.join(data["dir"], name)
    heldout = [os.path.join(records, "heldout.tfrecord")]
    from_text.write_records(data["heldout_text"], heldout, data["vocab"], True, 1,
                            settings.seed + 1,
                            masked_lm_prob=from_text.HELDOUT_MASKED_LM_PROB,
                            max_predictions_per_seq=chosen["max_predictions_per_seq"])
    train = [os.path.join(records, f"train-{i:02d}.tfrecord") for i in range(2)]
    from_text.write_records(data["train_text"], train, data["vocab"], True,
                            data["dupe_factor"], settings.seed, **chosen)
    return train, heldout, chosen["max_predictions_per_seq"]


def recipe_entropy(data, settings):
    """The unigram entropy of the masked tokens of training records masked as the
    original masks (ORIGINAL_MASKING): one plateau level for every variant (an estimate
    from more masked tokens, as records masked more would give, comes out higher)."""
    from tasks.pretraining import from_text, plateau
    train, _, max_predictions = write_records(data, ORIGINAL_MASKING, settings)
    entropy, _ = plateau.unigram_entropy(train, from_text.RECIPE["max_seq_length"],
                                         max_predictions)
    return entropy


def step_flops(config, batch, max_predictions, seq):
    """Training FLOPs of one step: three times the forward matmuls of the encoder and of
    the masked-LM head (transform and tied output layer) at the predicted positions."""
    hidden, vocab = config["hidden_size"], config["vocab_size"]
    head = 2 * batch * max_predictions * (hidden * hidden + hidden * vocab)
    return 3 * (harness.forward_flops(config["num_hidden_layers"], hidden,
                                      config["intermediate_size"], batch, seq) + head)


def step_cost(name, data, settings):
    """Variant `name`'s training FLOPs a step over the recipe's (1.0 without
    --equal_compute)."""
    from tasks.pretraining import from_text
    if not settings.equal_compute:
        return 1.0
    with open(data["config"], encoding="utf-8") as f:
        recipe = json.load(f)
    change = variant_changes(name)
    seq = from_text.RECIPE["max_seq_length"]

    def flops(config, trainer, masking):
        return step_flops(config, trainer.get("train_batch_size",
                                              from_text.RECIPE["train_batch_size"]),
                          masking.get("max_predictions_per_seq",
                                      from_text.RECIPE["max_predictions_per_seq"]), seq)
    return flops({**recipe, **change["config"]}, change["trainer"],
                 change["masking"]) / flops(recipe, {}, {})


def variant_changes(name):
    """{"config": ..., "trainer": ..., "masking": ..., "task": ..., "schedule": ...} of
    variant `name` (parts joined with "+")."""
    changes = {"config": {}, "trainer": {}, "masking": {}, "task": {}, "schedule": {}}
    for part in name.split("+"):
        for kind, fields in VARIANTS[part].items():
            changes[kind].update(fields)
    return changes


def train_variant(name, data, settings, cost):
    """Trains variant `name` (resuming a run that is there) on the schedule of
    --steps / `cost` steps to --train_until / `cost`, evaluating the held-out records at
    every checkpoint; returns ([(step, results)], seconds of training as its log has
    them)."""
    from tasks.pretraining import from_text
    from training import metrics_log, runner
    from training.config import RuntimeConfig
    change = variant_changes(name)
    train, heldout, max_predictions = write_records(data, change["masking"], settings)
    out = os.path.join(settings.work_dir, name)
    os.makedirs(out, exist_ok=True)
    config_file = os.path.join(out, "bert_config.json")
    with open(data["config"], encoding="utf-8") as f:
        config = {**json.load(f), **from_text.RECIPE["model"], **change["config"]}
    with open(config_file, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=1)
    steps = round(settings.steps / cost)
    share = change["schedule"].get("warmup_share")  # None: the recipe's warm-up
    warmup = from_text.warmup_steps(steps) if share is None else int(share * steps)
    task = from_text.pretraining_task(train, heldout, config_file, steps, warmup,
                                      max_predictions_per_seq=max_predictions,
                                      **change["task"])
    task.main_metric = "masked_lm_accuracy"  # the runner evaluates at every checkpoint
    every = max(1, round(settings.eval_every / cost))
    trainer = from_text.trainer_config(os.path.join(out, "run"), steps,
                                       save_checkpoints_steps=every,
                                       **change["trainer"])
    until = round((settings.train_until or settings.steps) / cost)

    def stop(step, logs):  # after the step's checkpoint and evaluation
        if step >= until:
            raise StopTraining

    done = runner.checkpoint_step(trainer.output_dir) or 0
    try:
        if done < until:  # a run that got there already is read, not trained on
            runner.run(task, trainer, RuntimeConfig(seed=settings.seed), do_train=True,
                       do_eval=True, hooks=[stop])
    except StopTraining:
        pass
    events = metrics_log.read(os.path.join(out, "run", "metrics.jsonl"))
    evaluations = sorted({e["step"]: e for e in events
                          if e["event"] == "evaluation" and e["step"] <= until}.items())
    seconds = max(e.get("elapsed_seconds", 0) for e in events if e["event"] == "train")
    return evaluations, seconds


def escape_step(entropy, evaluations):
    """The first evaluated step with the held-out masked-LM loss ESCAPE_NATS below
    `entropy`, or None."""
    for step, results in evaluations:
        if results["masked_lm_loss"] <= entropy - ESCAPE_NATS:
            return step
    return None


def accuracy_at(evaluations, step):
    """Held-out masked-LM accuracy (%) of the last evaluation at or before `step`."""
    before = [results for at, results in evaluations if at <= step]
    return 100 * before[-1]["masked_lm_accuracy"] if before else None


def main(settings):
    unknown = [part for v in settings.variants.split(",") for part in v.split("+")
               if part not in VARIANTS]
    if unknown:
        raise SystemExit(f"--variants: no variant {', '.join(unknown)} (known: "
                         f"{', '.join(VARIANTS)})")
    data = prepare_data(settings)
    entropy = recipe_entropy(data, settings)
    rows = []
    for name in settings.variants.split(","):
        cost = step_cost(name, data, settings)
        evaluations, seconds = train_variant(name, data, settings, cost)
        rows.append((name, cost, evaluations, seconds))
        print(f"{name} (x{cost:.2f} the recipe's step): " + ", ".join(
            f"{step} {r['masked_lm_loss']:.2f}" for step, r in evaluations), flush=True)
    report(rows, entropy, settings)


def report(rows, entropy, settings):
    """The table: steps are the recipe's (a variant's step counts `cost` of them)."""
    until = settings.train_until or settings.steps
    reports = [int(s) for s in settings.report_steps.split(",") if int(s) <= until]
    print(f"\nCPU: {harness.cpu_model()} ({harness.isa()}), {os.cpu_count()} cores; "
          f"the compute of {until} of the recipe's steps each, of a schedule of "
          f"{settings.steps}; held-out evaluation every {settings.eval_every} steps.")
    print(f"Escape: the held-out masked-LM loss {ESCAPE_NATS:g} nat below the masked "
          f"tokens' unigram entropy ({entropy:.2f} nats, the recipe's records). Steps "
          f"are the recipe's: a variant's step counts its FLOPs over the recipe's.\n")
    print("| variant | FLOPs a step (x recipe) | escape (recipe steps) | "
          + " | ".join(f"accuracy at {s} (%)" for s in reports)
          + " | last held-out loss | training minutes |")
    print("|---" * (len(reports) + 5) + "|")
    for name, cost, evaluations, seconds in rows:
        escape = escape_step(entropy, evaluations)
        cells = [f"{a:.1f}" if a is not None else "" for a in
                 (accuracy_at(evaluations, s / cost) for s in reports)]
        print(f"| {name} | {cost:.2f} | "
              f"{round(escape * cost) if escape else f'> {until}'} | " + " | ".join(cells)
              + f" | {evaluations[-1][1]['masked_lm_loss']:.2f} | {seconds / 60:.0f} |")


if __name__ == "__main__":
    harness.run(main, Settings)
