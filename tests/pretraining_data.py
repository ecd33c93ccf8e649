"""Synthetic pre-training TFRecords with learnable structure, for the training tests.

Each sequence is [CLS] a [SEP] b [SEP] where a repeats one random token (ids 5..34) and b
repeats the same token (label 0, "is next") or another one (label 1, "random"); about 15%
of positions are masked. Both objectives can be learnt by copying from the context, so a
small model gets well below the starting loss (ln 40 + ln 2) in a few hundred steps.
"""

import json

import numpy as np

from data_prep.pretraining_instances import TrainingInstance
from data_prep.pretraining_records import serialize_instance

CLS, SEP, MASK = 2, 3, 4
FIRST, SPAN = 5, 30
TINY_TRAINING_CONFIG = {
    "vocab_size": 40, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 64, "hidden_act": "gelu", "hidden_dropout_prob": 0.0,
    "attention_probs_dropout_prob": 0.0, "max_position_embeddings": 64,
    "type_vocab_size": 2, "initializer_range": 0.02,
}


def make_instance(rng, seq_len=24, max_pred=4):
    len_a = int(rng.integers(4, seq_len - 8))
    len_b = int(rng.integers(3, seq_len - 3 - len_a + 1))
    token = FIRST + int(rng.integers(0, SPAN))
    is_random = bool(rng.random() < 0.5)
    other = FIRST + (token - FIRST + int(rng.integers(1, SPAN))) % SPAN
    a = [token] * len_a
    b = [other if is_random else token] * len_b
    ids = [CLS] + a + [SEP] + b + [SEP]
    segments = [0] * (len_a + 2) + [1] * (len_b + 1)
    candidates = [i for i, t in enumerate(ids) if t not in (CLS, SEP)]
    k = min(max_pred, max(1, round(len(ids) * 0.15)))
    positions = sorted(rng.choice(candidates, size=k, replace=False).tolist())
    labels = [ids[p] for p in positions]
    masked = list(ids)
    for p in positions:
        masked[p] = MASK
    return TrainingInstance(masked, segments, positions, labels, is_random)


def write_records(path, count, seed=0, seq_len=24, max_pred=4):
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(count):
            writer.write(serialize_instance(make_instance(rng, seq_len, max_pred),
                                            seq_len, max_pred))
    return str(path)


def write_config(path, **overrides):
    config = dict(TINY_TRAINING_CONFIG, **overrides)
    with open(path, "w") as f:
        json.dump(config, f)
    return str(path)
