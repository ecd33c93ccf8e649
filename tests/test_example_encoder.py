"""The vectorised Example encoder writes exactly what protobuf writes."""

import numpy as np
import tensorflow as tf

from data_prep.example_encoder import encode_batch


def _protobuf(features, i):
    feats = {}
    for name, values in features.items():
        row = values[i]
        if name == "masked_lm_weights":
            feats[name] = tf.train.Feature(float_list=tf.train.FloatList(value=row))
        else:
            feats[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=row.tolist()))
    example = tf.train.Example(features=tf.train.Features(feature=feats))
    return example.SerializeToString(deterministic=True)


def test_bytes_equal_protobuf_for_all_value_sizes():
    rng = np.random.default_rng(0)
    n = 300
    # Ids spanning 1- to 4-byte varints, and rows of very different lengths.
    ids = rng.integers(0, 2 ** 22, (n, 64)) * (rng.random((n, 64)) < 0.7)
    ids[0] = 0
    ids[1] = 127
    ids[2] = 128
    features = {
        "input_ids": ids, "input_mask": (ids > 0).astype(int),
        "segment_ids": rng.integers(0, 2, (n, 64)),
        "masked_lm_positions": rng.integers(0, 64, (n, 10)),
        "masked_lm_ids": rng.integers(0, 200_000, (n, 10)),
        "masked_lm_weights": rng.choice([0.0, 1.0, 0.5, -2.25], (n, 10)).astype(np.float32),
        "next_sentence_labels": rng.integers(0, 2, (n, 1)),
    }
    got = encode_batch(features)
    assert len(got) == n
    for i in range(n):
        assert got[i] == _protobuf(features, i), i
    parsed = tf.train.Example.FromString(got[5])
    assert list(parsed.features.feature["input_ids"].int64_list.value) == ids[5].tolist()


def test_serialize_instances_equals_serialize_instance():
    from data_prep import pretraining_records as records
    from data_prep.pretraining_instances import TrainingInstance
    instances = [TrainingInstance([101, 7, 8, 102, 9, 102], [0, 0, 0, 0, 1, 1], [2, 4],
                                  [5000, 9], True),
                 TrainingInstance([101, 3, 102, 4, 102], [0, 0, 0, 1, 1], [1], [70000], False)]
    fast = records.serialize_instances(instances, 8, 3)
    assert fast == [records.serialize_instance(i, 8, 3) for i in instances]
