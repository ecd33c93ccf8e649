"""Continuing a released model's pre-training on the user's text: its vocabulary, casing
and sizes kept, its masked-LM head kept where the checkpoint has one, optionally domain
words in the vocabulary's `[unusedK]` slots; and the schedule that suits continuing.

Pipeline position: `pretrain_from_text.py --init_checkpoint=...` (text -> the model's
vocabulary -> TFRecords -> continued masked LM -> a checkpoint in the original's layout),
in place of learning a vocabulary and a model size (`tasks.pretraining.from_text`); the
stages around it are the same.

The original README: "If your task has a large domain-specific corpus available ... it
will likely be beneficial to run additional steps of pre-training on your corpus,
starting from the BERT checkpoint". Domain-adaptive and task-adaptive pre-training
(Gururangan et al. 2020) continue the masked LM alone, as here.

`output_dir` receives, beside what `from_text` writes:
  vocab.txt, bert_config.json   the model's (its config in the original's layout), the
                                vocabulary with the domain words in their slots
  start/bert_model.ckpt         with domain words only: the checkpoint with their rows
                                set from their old pieces (`modeling.token_rows`)
  start.json                    what the run starts from; a rerun with another start is
                                refused
"""

import json
import os
import shutil

from absl import logging

from common import file_io

# The schedule of continued pre-training: the original's masking (15%, up to 20
# predictions a sequence of 128) and the model's own dropout; the masked LM alone (as
# RoBERTa and Gururangan et al. continue). The peak learning rate is the original's
# advice for additional steps, 2e-5: a higher one moves a released encoder away from
# what it knew within a CPU budget's thousand steps of 32, and costs the task's
# fine-tuning.
ADAPTATION = {
    "max_seq_length": 128,
    "masked_lm_prob": 0.15,
    "max_predictions_per_seq": 20,
    "objective": "mlm",
    "train_batch_size": 32,
    "learning_rate": 2e-5,
    "optimizer": "adamw_original",
    "adam_beta2": 0.999,
    "warmup_share": 0.06,
    "min_warmup_steps": 10,
    "pretraining_dropout": None,
    "max_dupe_factor": 10,
}
# A checkpoint without a masked-LM head: the new head first trains alone, the encoder
# frozen, for this share of the planned steps (at HEAD_LEARNING_RATE; cheaper steps: no
# backward pass through the encoder), so that the encoder's first updates come from a
# head that reads it, not from random weights: a better held-out masked LM and
# fine-tuning than training the random head with the encoder from the start.
NEW_HEAD_SHARE = 0.1
HEAD_LEARNING_RATE = 1e-3
START_FILE = "start.json"
START_DIR = "start"
# The masked-LM head's weights in the original's names (its output layer is the word
# embeddings).
MASKED_LM_HEAD = "cls/predictions/transform/dense/kernel"


def recipe_for(config):
    """`ADAPTATION` for the model of `config` (a `BertConfig`): sequences no longer than
    its position table (a model of 64 positions continues at 64, with as many
    predictions a sequence in proportion)."""
    length = min(ADAPTATION["max_seq_length"], config.max_position_embeddings)
    predictions = max(1, round(ADAPTATION["max_predictions_per_seq"] * length /
                               ADAPTATION["max_seq_length"]))
    return dict(ADAPTATION, max_seq_length=length, max_predictions_per_seq=predictions)


class AdaptationError(ValueError):
    """A start that cannot be adapted: files missing, or not of one model."""


def model_files(init_checkpoint, bert_config_file=None, vocab_file=None):
    """(config, vocabulary) of the model to adapt: as given, or found in
    `init_checkpoint` when it is a model folder (a Google release, a Hugging Face folder,
    an export; `modeling.pretrained`). Raises AdaptationError naming what is missing."""
    from modeling import pretrained
    folder = init_checkpoint if os.path.isdir(init_checkpoint) else None
    if folder and not bert_config_file:
        try:
            bert_config_file = pretrained.model_file(folder, pretrained.CONFIGS,
                                                     "model config")
        except ValueError:
            pass
    if folder and not vocab_file:
        try:
            vocab_file = pretrained.vocabulary_file(folder)
        except ValueError:
            pass
    missing = [flag for flag, value in (("--bert_config_file", bert_config_file),
                                        ("--vocab_file", vocab_file)) if not value]
    if missing:
        raise AdaptationError(
            f"--init_checkpoint={init_checkpoint}: adapting a model needs its "
            f"{' and '.join(missing)} too (the model's own: its vocabulary and sizes are "
            f"kept), or a model folder that holds them.")
    return bert_config_file, vocab_file


def casing_of(init_checkpoint, do_lower_case, given):
    """The casing to read the text with: `do_lower_case` when the user `given` it, else
    what the model's folder says (`modeling.pretrained.casing`), else `do_lower_case`."""
    from modeling import pretrained
    if given:
        return do_lower_case
    folder = init_checkpoint if os.path.isdir(init_checkpoint) else \
        os.path.dirname(init_checkpoint)
    said = pretrained.casing(folder)
    return do_lower_case if said is None else said


def kept_start(output_dir):
    """What an earlier start of this run began from (start.json), or None."""
    path = os.path.join(output_dir, START_FILE)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def check_same_start(output_dir, start):
    """Refuses to resume a run in `output_dir` from another start than `start` (a dict:
    the checkpoint, or None from scratch, and the domain words asked for)."""
    kept = kept_start(output_dir)
    if kept is None:
        if os.path.exists(os.path.join(output_dir, "vocab.txt")) and start["init_checkpoint"]:
            raise AdaptationError(
                f"{output_dir}: holds a run pre-trained from scratch (its vocab.txt was "
                f"learned): give another --output_dir to adapt {start['init_checkpoint']}.")
        return
    changed = [key for key in start if kept.get(key) != start[key]]
    if changed:
        def said(value):
            return "(none: from scratch)" if value is None else value
        raise AdaptationError(
            f"{os.path.join(output_dir, START_FILE)}: this run started from "
            + ", ".join(f"--{key}={said(kept.get(key))}" for key in changed)
            + ", not " + ", ".join(f"--{key}={said(start[key])}" for key in changed)
            + ": give another --output_dir, or resume with the same flags.")


def prepare_model(output_dir, init_checkpoint, config_file, vocab_file, do_lower_case,
                  train_text, domain_words=0, objective="mlm"):
    """The model to continue, in `output_dir` (once; a rerun keeps what it finds):
    bert_config.json (the model's, in the original's layout), vocab.txt (the model's,
    with up to `domain_words` domain words of `train_text` in its `[unusedK]` lines),
    and the checkpoint to start from (the given one, or start/bert_model.ckpt with the
    new words' rows). The checkpoint is checked against the config (a vocabulary or
    config of another model is refused before any training).

    Returns:
        (vocab path, config path, checkpoint path, notes): `notes`, lines for the user
        (the masked-LM head kept or new, the words placed).
    """
    from modeling import BertConfig
    from text.tokenization import check_vocabulary_fits

    start = {"init_checkpoint": init_checkpoint, "domain_words": domain_words}
    check_same_start(output_dir, start)
    config = BertConfig.from_json_file(config_file)
    check_vocabulary_fits(vocab_file, config.vocab_size, config_file)
    config_out = os.path.join(output_dir, "bert_config.json")
    vocab_out = os.path.join(output_dir, "vocab.txt")
    kept = kept_start(output_dir)
    if kept is not None and "notes" in kept and os.path.exists(vocab_out) and \
            os.path.exists(config_out):
        return vocab_out, config_out, kept["checkpoint"], kept["notes"]
    # The folder is an adaptation's from now on (a run stopped before the end of this
    # stage is not taken for a scratch run's by its rerun).
    start_file = os.path.join(output_dir, START_FILE)
    file_io.atomic_write_text(start_file, json.dumps(start))
    model, has_head = _load(config, init_checkpoint, objective)
    notes = [f"{init_checkpoint}: its masked-LM head continues." if has_head else
             f"{init_checkpoint}: no masked-LM head in the checkpoint; a new one (tied to "
             f"the word embeddings, as the original's) starts from random weights."]
    checkpoint = init_checkpoint
    if domain_words:
        lines, placed = _domain_vocabulary(vocab_file, train_text, do_lower_case,
                                           domain_words)
        if placed:
            from modeling import save_google_checkpoint
            from modeling.token_rows import initialise_rows
            initialise_rows(model, {w.id: w.piece_ids for w in placed})
            folder = os.path.join(output_dir, START_DIR)
            with file_io.atomic_path(folder) as tmp:
                save_google_checkpoint(model, os.path.join(tmp, "bert_model.ckpt"))
            checkpoint = os.path.join(folder, "bert_model.ckpt")
        from text import domain_words as words
        notes += words.describe(placed, len(words.unused_slots(lines)) + len(placed))
        file_io.atomic_write_text(vocab_out, "".join(line + "\n" for line in lines))
    else:
        with file_io.atomic_path(vocab_out) as tmp:
            shutil.copyfile(vocab_file, tmp)
    config.to_json_file(config_out)
    file_io.atomic_write_text(start_file, json.dumps(
        dict(start, config=config_file, vocab=vocab_file, do_lower_case=do_lower_case,
             checkpoint=checkpoint, notes=notes, has_head=has_head), indent=1))
    return vocab_out, config_out, checkpoint, notes


def _load(config, init_checkpoint, objective):
    """The pre-training model of `config` with the checkpoint's weights (every encoder
    weight required), and whether the checkpoint had a masked-LM head."""
    from modeling import deferred_draws, load_checkpoint
    from tasks.pretraining.task import pretraining_model
    with deferred_draws() as deferred:  # what the checkpoint fills is not drawn first
        model = pretraining_model(config, objective)
    report = load_checkpoint(model, init_checkpoint, strict="encoder", deferred=deferred)
    return model, MASKED_LM_HEAD in report.loaded


def _domain_vocabulary(vocab_file, train_text, do_lower_case, limit):
    """(the vocabulary's lines with the domain words, the words placed) of the training
    text."""
    from text import domain_words, vocabulary
    counts = vocabulary.count_words_in_files([train_text], do_lower_case)
    lines, placed = domain_words.extend_vocabulary(vocab_file, counts, limit)
    if len(placed) < limit:
        logging.info("%d of the %d domain words asked for: the other words of the text "
                     "are in the vocabulary, or seen fewer than %d times, or the slots "
                     "ran out.", len(placed), limit, domain_words.MIN_COUNT)
    return lines, placed


def new_head_steps(num_train_steps):
    """The steps of the new head's phase in a plan of `num_train_steps` (at least one,
    and at least one step left for the whole model)."""
    if not NEW_HEAD_SHARE:
        return 0
    return min(max(1, round(NEW_HEAD_SHARE * num_train_steps)), num_train_steps - 1)


def train_new_head(output_dir, records, heldout_records, config_file, init_checkpoint,
                   steps, runtime, recipe):
    """The new masked-LM head of `init_checkpoint` trained alone for `steps` steps (the
    encoder frozen), in `output_dir/new_head` (resumable, once); returns the checkpoint
    that holds it with the encoder, to continue from."""
    from tasks.pretraining import from_text
    from training import runner
    folder = os.path.join(output_dir, "new_head")
    export = os.path.join(folder, "export", "bert_model.ckpt")
    if not os.path.exists(export + ".index"):
        task = from_text.pretraining_task(
            records, heldout_records, config_file, steps, max(1, steps // 10),
            recipe["objective"], pretraining_dropout=recipe["pretraining_dropout"],
            recipe=recipe, init_checkpoint=init_checkpoint, heads_only=True)
        runner.run(task, from_text.trainer_config(
            folder, steps, dict(recipe, learning_rate=HEAD_LEARNING_RATE)), runtime,
            do_train=True)
    return export

