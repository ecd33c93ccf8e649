"""Held-out masked-LM accuracy split by what the input showed at each predicted position:
[MASK], the original token kept, or a random token (Table 8's masking procedures).

A model pre-trained with one masking procedure is evaluated on records masked another way
(`--eval_input_file`, e.g. the original's 80/10/10 masking of the held-out documents).
Its overall accuracy mixes three tasks of unequal difficulty: guessing a hidden token
([MASK]), confirming a visible one (kept: the answer is the input) and correcting a wrong
one (random). This script scores each kind on its own, so that a difference between two
models can be placed: a model that never saw a kept token at a predicted position may
lose only on those.

A position counts as kept when its input token equals the label (a random draw of the
same token counts as kept too, as the model cannot tell them apart), as [MASK] when the
input is [MASK], and as random otherwise. Padding slots (weight 0) are skipped.

    python -m research.paper.masked_lm_by_kind --eval_input_file=HELDOUT.tfrecord \
      --vocab_file=VOCAB --models=NAME=EXPORT_DIR,NAME=EXPORT_DIR [--dtype=bfloat16]

EXPORT_DIR holds `bert_config.json` and `bert_model.ckpt` (a run's `export/` folder).
"""

import dataclasses
import os
import sys

import numpy as np

from bench import harness
from bench.harness import describe
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

KINDS = ("[MASK]", "kept", "random")


def mask_id(vocab_file):
    from text.tokenization import load_vocab
    vocab = load_vocab(vocab_file)
    if "[MASK]" not in vocab:
        sys.exit(f"{vocab_file}: no [MASK] line; give the vocabulary the model was trained "
                 f"with.")
    return vocab["[MASK]"]


def kinds_of(batch, mask):
    """0 ([MASK]), 1 (kept), 2 (random) for each predicted slot of `batch`; -1 for padding."""
    shown = np.take_along_axis(batch["input_ids"], batch["masked_lm_positions"], axis=1)
    kind = np.where(shown == mask, 0, np.where(shown == batch["masked_lm_ids"], 1, 2))
    return np.where(batch["masked_lm_weights"] > 0, kind, -1)


def score(export_dir, eval_file, mask, dtype, seq, predictions, batch_size=64):
    """{kind: (right, count, summed cross-entropy)} of the model in `export_dir`."""
    import keras
    import tensorflow as tf

    from modeling import BertConfig, BertPretrainer, load_checkpoint
    from tasks.pretraining.input import pretraining_dataset

    if dtype == "bfloat16":
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    config = BertConfig.from_json_file(os.path.join(export_dir, "bert_config.json"))
    model = BertPretrainer(config, next_sentence=False)
    load_checkpoint(model, os.path.join(export_dir, "bert_model.ckpt"), strict="encoder")
    totals = {k: [0, 0, 0.0] for k in range(3)}

    @tf.function
    def predict(batch):
        logits = tf.cast(model(batch, training=False)["masked_lm_logits"], tf.float32)
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=batch["masked_lm_ids"], logits=logits)
        return tf.argmax(logits, -1, output_type=tf.int32), xent

    for batch in pretraining_dataset([eval_file], batch_size, seq, predictions, False):
        guess, xent = (t.numpy() for t in predict(batch))
        batch = {k: v.numpy() for k, v in batch.items()}
        kind = kinds_of(batch, mask)
        for k in range(3):
            at = kind == k
            totals[k][0] += int((guess[at] == batch["masked_lm_ids"][at]).sum())
            totals[k][1] += int(at.sum())
            totals[k][2] += float(xent[at].sum())
    return totals


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """The flags of this bench (`python -m research.paper.masked_lm_by_kind --help`)."""
    eval_input_file: str = setting(help="Held-out pre-training TFRecords "
                                   "(create_pretraining_data.py's output).")
    vocab_file: str = setting(help="The model's vocab.txt.")
    models: str = setting(help='NAME=EXPORT_DIR,...: the models to score, in table order')
    max_seq_length: int = setting(128, help='Maximum sequence length, in WordPiece tokens.')
    max_predictions_per_seq: int = setting(20, help="Masked positions per sequence in the "
                                           "records.")
    dtype: str = setting('float32', help="Compute type of the models.",
                         choices=('float32', 'bfloat16'))


def main(settings):
    from common import quiet
    quiet.quiet_tensorflow_start()
    from tasks.pretraining.input import InputError, check_first_record
    try:
        check_first_record(settings.eval_input_file, settings.max_seq_length,
                           settings.max_predictions_per_seq)
    except InputError as err:
        sys.exit(str(err))
    models = []
    for item in settings.models.split(","):
        name, sep, folder = item.partition("=")
        if not sep or not os.path.exists(os.path.join(folder, "bert_config.json")):
            sys.exit(f"--models: {item!r} is not NAME=EXPORT_DIR with a bert_config.json.")
        models.append((name, folder))
    mask = mask_id(settings.vocab_file)
    print(describe(), flush=True)
    print(f"held-out records: {settings.eval_input_file}; dtype {settings.dtype}\n")
    print("| model | all | " + " | ".join(f"at {k}: accuracy / ppl" for k in KINDS) +
          " | positions ([MASK] / kept / random) |")
    print("|---|---|---|---|---|---|")
    for name, folder in models:
        totals = score(folder, settings.eval_input_file, mask, settings.dtype,
                       settings.max_seq_length, settings.max_predictions_per_seq)
        right = sum(t[0] for t in totals.values())
        count = sum(t[1] for t in totals.values())
        xent = sum(t[2] for t in totals.values())
        cells = [f"{100 * right / count:.1f}% / {np.exp(xent / count):.1f}"]
        for k in range(3):
            r, n, x = totals[k]
            cells.append(f"{100 * r / n:.1f}% / {np.exp(x / n):.1f}" if n else "-")
        counts = " / ".join(str(totals[k][1]) for k in range(3))
        print(f"| {name} | " + " | ".join(cells) + f" | {counts} |", flush=True)


if __name__ == "__main__":
    harness.run(main, Settings)
