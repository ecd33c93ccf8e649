"""The vectorised Example encoder writes records that parse to exactly the values given,
with nothing else in them."""

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
        # Protobuf reads our bytes back to the very message it builds from the values
        # (entries in another order, so compared after its deterministic serialisation).
        parsed = tf.train.Example.FromString(got[i])
        assert parsed.SerializeToString(deterministic=True) == _protobuf(features, i), i
        assert parsed.ByteSize() == len(got[i])  # nothing unknown or repeated
    assert list(tf.train.Example.FromString(got[5]).features.feature["input_ids"]
                .int64_list.value) == ids[5].tolist()
    spec = {name: tf.io.FixedLenFeature([v.shape[1]], tf.float32 if v.dtype == np.float32
                                        else tf.int64) for name, v in features.items()}
    batch = tf.io.parse_example(tf.constant(got), spec)
    for name, values in features.items():
        np.testing.assert_array_equal(batch[name].numpy(), values)


def test_rows_of_uniform_and_mixed_widths():
    """Batches where every id takes the same number of bytes (one fixed-width block) and
    where widths vary only in some rows."""
    for ids in (np.full((3, 4), 300), np.array([[1, 2, 3, 4], [1, 2, 3, 200], [0, 0, 0, 0]])):
        features = {"input_ids": ids, "input_mask": np.ones_like(ids),
                    "masked_lm_weights": np.ones((3, 2), np.float32)}
        for i, record in enumerate(encode_batch(features)):
            parsed = tf.train.Example.FromString(record)
            assert parsed.SerializeToString(deterministic=True) == _protobuf(features, i)
            assert parsed.ByteSize() == len(record)


def test_serialize_instances_equals_serialize_instance():
    from data_prep import pretraining_records as records
    from data_prep.pretraining_instances import TrainingInstance
    instances = [TrainingInstance([101, 7, 8, 102, 9, 102], [0, 0, 0, 0, 1, 1], [2, 4],
                                  [5000, 9], True),
                 TrainingInstance([101, 3, 102, 4, 102], [0, 0, 0, 1, 1], [1], [70000], False)]
    fast = records.serialize_instances(instances, 8, 3)
    for got, want in zip(fast, [records.serialize_instance(i, 8, 3) for i in instances]):
        assert tf.train.Example.FromString(got) == tf.train.Example.FromString(want)
