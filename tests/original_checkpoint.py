"""A tiny BERT checkpoint written by the original release's own code (two pre-training
steps of its `run_pretraining.py` `model_fn`, saved with `tf.train.Saver`: masked-LM
and next-sentence heads, Adam slots, `global_step`), and the original's masked-LM head
run on a checkpoint (`get_masked_lm_output`'s log-probabilities): the truths the
fill-mask and adaptation tests compare with. Both run `tests/original_training.py` in a
process of its own.
"""

import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
WORDS = ("the cat sat on a mat while dogs ran past old houses near green fields and "
         "people walked to markets with baskets of bread fish apples ##s ##ed ##ing un "
         "##believ ##able tele ##scope micro ##wave").split()
SPECIALS = ["[PAD]", "[unused0]", "[unused1]", "[unused2]", "[UNK]", "[CLS]", "[SEP]",
            "[MASK]"]
VOCAB = SPECIALS + list(dict.fromkeys(WORDS)) + [".", ","]
CONFIG = {"vocab_size": len(VOCAB), "hidden_size": 32, "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 64, "hidden_act": "gelu",
          "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
          "max_position_embeddings": 64, "type_vocab_size": 2, "initializer_range": 0.02}
SEQ, BATCH, PREDICTIONS = 16, 4, 3


def _run(folder, spec):
    path = os.path.join(folder, f"spec-{spec['task']}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    result = subprocess.run([sys.executable, os.path.join(HERE, "original_training.py"),
                             path], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]


def model_files(folder):
    """Writes vocab.txt and bert_config.json to `folder`; returns their paths."""
    os.makedirs(folder, exist_ok=True)
    vocab, config = os.path.join(folder, "vocab.txt"), os.path.join(folder, "bert_config.json")
    with open(vocab, "w", encoding="utf-8") as f:
        f.write("\n".join(VOCAB) + "\n")
    with open(config, "w", encoding="utf-8") as f:
        json.dump(CONFIG, f)
    return vocab, config


def write_checkpoint(folder, steps=2, seed=0):
    """Two (`steps`) training steps of the original's pre-training from its random weights
    on random batches, saved as `folder/bert_model.ckpt`. Returns (vocab.txt,
    bert_config.json, the checkpoint prefix)."""
    vocab, config = model_files(folder)
    rng = np.random.default_rng(seed)
    ids = rng.integers(len(SPECIALS), CONFIG["vocab_size"], (steps, BATCH, SEQ)).astype(np.int32)
    ids[:, :, 0] = SPECIALS.index("[CLS]")
    positions = np.tile(np.arange(1, 1 + PREDICTIONS, dtype=np.int32), (steps, BATCH, 1))
    batches = {"input_ids": ids, "input_mask": np.ones_like(ids),
               "segment_ids": (np.arange(SEQ) >= SEQ // 2).astype(np.int32) + 0 * ids,
               "masked_lm_positions": positions,
               "masked_lm_ids": np.take_along_axis(ids, positions, axis=2),
               "masked_lm_weights": np.ones(positions.shape, np.float32),
               "next_sentence_labels": rng.integers(0, 2, (steps, BATCH, 1)).astype(np.int32)}
    np.savez(os.path.join(folder, "batches.npz"), **batches)
    prefix = os.path.join(folder, "bert_model.ckpt")
    _run(folder, dict(task="pretraining", bert_config_file=config, init_checkpoint=None,
                      batches=os.path.join(folder, "batches.npz"), learning_rate=1e-2,
                      num_train_steps=steps, num_warmup_steps=0,
                      output=os.path.join(folder, "trained.npz"), save_checkpoint=prefix))
    return vocab, config, prefix


def masked_lm_log_probs(folder, config, checkpoint, inputs):
    """The original's masked-LM log-probabilities [batch * positions, vocab] of
    `checkpoint` on `inputs` (input_ids, input_mask, segment_ids, masked_lm_positions:
    arrays [batch, ...])."""
    positions = inputs["masked_lm_positions"]
    batch = {name: np.asarray(value)[None] for name, value in inputs.items()}
    batch.update(masked_lm_ids=np.zeros((1,) + positions.shape, np.int32),
                 masked_lm_weights=np.ones((1,) + positions.shape, np.float32),
                 next_sentence_labels=np.zeros((1, positions.shape[0], 1), np.int32))
    path = os.path.join(folder, "masked_lm_inputs.npz")
    np.savez(path, **batch)
    output = os.path.join(folder, "masked_lm_out.npz")
    _run(folder, dict(task="masked_lm", bert_config_file=config,
                      init_checkpoint=checkpoint, batches=path, output=output))
    return np.load(output)["log_probs"]
