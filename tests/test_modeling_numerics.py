"""The Keras model against the independent NumPy forward pass, with weights that reach the
model through a TF1 checkpoint written by tf.compat.v1 (so names, layouts and math are all
checked at once)."""

import numpy as np
import pytest

import modeling
from tests import numpy_reference as ref
from tests.conftest import write_tf1_checkpoint

TOL = 1e-5


def _masked_max_diff(a, b, mask):
    return float(np.max(np.abs((np.asarray(a) - np.asarray(b)) * mask[..., None])))


@pytest.fixture
def google_checkpoint(tmp_path, tiny_config_dict):
    rng = np.random.default_rng(0)
    weights = ref.random_google_weights(tiny_config_dict, rng,
                                        heads=("pretraining", "classifier", "squad"))
    prefix = write_tf1_checkpoint(weights, str(tmp_path / "bert_model.ckpt"))
    return weights, prefix


@pytest.mark.parametrize("act", ["gelu", "gelu_exact", "relu"])
def test_encoder_matches_numpy(google_checkpoint, tiny_config_dict, tiny_inputs, act):
    weights, prefix = google_checkpoint
    tiny_config_dict["hidden_act"] = act
    encoder = modeling.BertEncoder(modeling.BertConfig.from_dict(tiny_config_dict))
    report = modeling.load_checkpoint(encoder, prefix)
    assert not report.not_filled
    out = encoder(tiny_inputs, training=False)
    want = ref.encoder_forward(weights, tiny_config_dict, **tiny_inputs)
    mask = tiny_inputs["input_mask"]
    assert _masked_max_diff(out["sequence_output"], want["sequence_output"], mask) < TOL
    assert _masked_max_diff(out["embedding_output"], want["embedding_output"], mask) < TOL
    assert np.max(np.abs(out["pooled_output"] - want["pooled_output"])) < TOL
    assert len(out["encoder_outputs"]) == tiny_config_dict["num_hidden_layers"]
    for got, exp in zip(out["encoder_outputs"], want["encoder_outputs"]):
        assert _masked_max_diff(got, exp, mask) < TOL


def test_pretrainer_matches_numpy(google_checkpoint, tiny_config_dict, tiny_inputs):
    weights, prefix = google_checkpoint
    model = modeling.BertPretrainer(modeling.BertConfig.from_dict(tiny_config_dict))
    report = modeling.load_checkpoint(model, prefix, strict=True)
    # The classifier and squad heads in the file are reported unused; optimizer slots and
    # global_step are not reported at all.
    assert set(report.unused) == {"output_weights", "output_bias",
                                  "cls/squad/output_weights", "cls/squad/output_bias"}
    positions = np.array([[1, 2, 5], [1, 2, 0]], np.int32)
    out = model(dict(tiny_inputs, masked_lm_positions=positions), training=False)
    want = ref.pretrainer_forward(weights, tiny_config_dict, positions=positions, **tiny_inputs)
    assert out["masked_lm_logits"].shape == (2, 3, tiny_config_dict["vocab_size"])
    assert np.max(np.abs(out["masked_lm_logits"] - want["masked_lm_logits"])) < TOL
    assert np.max(np.abs(out["next_sentence_logits"] - want["next_sentence_logits"])) < TOL


def test_task_heads_match_numpy(google_checkpoint, tiny_config_dict, tiny_inputs):
    weights, prefix = google_checkpoint
    config = modeling.BertConfig.from_dict(tiny_config_dict)
    want = ref.encoder_forward(weights, tiny_config_dict, **tiny_inputs)

    classifier = modeling.BertClassifier(config, num_classes=3)
    modeling.load_checkpoint(classifier, prefix, strict=True)
    logits = classifier(tiny_inputs, training=False)["logits"]
    expected = want["pooled_output"] @ weights["output_weights"].T + weights["output_bias"]
    assert np.max(np.abs(logits - expected)) < TOL

    squad = modeling.BertSpanLabeler(config)
    modeling.load_checkpoint(squad, prefix, strict=True)
    out = squad(tiny_inputs, training=False)
    both = want["sequence_output"] @ weights["cls/squad/output_weights"].T + \
        weights["cls/squad/output_bias"]
    assert np.max(np.abs(out["start_logits"] - both[..., 0])) < TOL
    assert np.max(np.abs(out["end_logits"] - both[..., 1])) < TOL


def test_packed_rows_give_each_sequence_its_outputs_alone(google_checkpoint,
                                                          tiny_config_dict):
    """Three sequences packed into two rows (`BertEncoder.packed`: a block mask, positions
    counted from each sequence's start): the classifier's logits at each [CLS] and the
    sequence output at each token are the NumPy forward pass of that sequence alone."""
    weights, prefix = google_checkpoint
    config = modeling.BertConfig.from_dict(tiny_config_dict)
    alone = [([2, 7, 9, 11, 3, 12, 13, 3], [0, 0, 0, 0, 0, 1, 1, 1]),
             ([2, 21, 22, 3], [0, 0, 0, 0]), ([2, 5, 3, 6, 3], [0, 0, 0, 1, 1])]
    width, rows = 9, [[0], [1, 2]]  # row 1: sequences 1 and 2 side by side
    packed = {name: np.zeros((2, width), np.int32) for name in
              ("input_ids", "segment_ids", "position_ids", "sequence_ids")}
    where = {}
    for r, members in enumerate(rows):
        start = 0
        for number, i in enumerate(members, 1):
            ids, segments = alone[i]
            span = slice(start, start + len(ids))
            packed["input_ids"][r, span], packed["segment_ids"][r, span] = ids, segments
            packed["position_ids"][r, span] = np.arange(len(ids))
            packed["sequence_ids"][r, span] = number
            where[i], start = (r, start), start + len(ids)
    packed["cls_positions"] = np.array([r * width + c for r, c in map(where.get, range(3))],
                                       np.int32)
    classifier = modeling.BertClassifier(config, num_classes=3)
    modeling.load_checkpoint(classifier, prefix, strict=True)
    logits = np.asarray(classifier.call_packed(packed)["logits"])
    sequence = np.asarray(classifier.encoder.packed(packed)["sequence_output"])
    for i, (ids, segments) in enumerate(alone):
        want = ref.encoder_forward(weights, tiny_config_dict, np.array([ids], np.int32),
                                   np.ones((1, len(ids)), np.int32),
                                   np.array([segments], np.int32))
        expected = want["pooled_output"] @ weights["output_weights"].T + weights["output_bias"]
        assert np.max(np.abs(logits[i] - expected[0])) < TOL
        r, c = where[i]
        assert np.max(np.abs(sequence[r, c:c + len(ids)] - want["sequence_output"][0])) < TOL
    # One mask for the whole row instead (sequences attending to each other): not alone.
    mixed = dict(packed, sequence_ids=(packed["sequence_ids"] > 0).astype(np.int32))
    assert np.max(np.abs(classifier.call_packed(mixed)["logits"] - logits)) > 1e-3


def test_only_the_originals_heads_and_cls_pooling_run_packed(tiny_config_dict):
    """Mean pooling, causal attention and the BiLSTM head read more than [CLS] and
    per-row state: they refuse packed rows in one line."""
    for change, model_class in (({"pooling": "mean"}, modeling.BertClassifier),
                                ({"causal_attention": True}, modeling.BertClassifier)):
        model = model_class(modeling.BertConfig.from_dict(dict(tiny_config_dict, **change)), 2)
        assert not model.packable
        with pytest.raises(ValueError, match="packed rows"):
            model.call_packed({})
    bilstm = modeling.BertTokenClassifier(modeling.BertConfig.from_dict(tiny_config_dict), 3,
                                          head="bilstm")
    assert not bilstm.packable and modeling.BertTokenClassifier(
        modeling.BertConfig.from_dict(tiny_config_dict), 3).packable


def test_padding_does_not_change_real_tokens(google_checkpoint, tiny_config_dict):
    """Two paths agree: a sequence alone, and the same sequence padded in a batch."""
    _, prefix = google_checkpoint
    encoder = modeling.BertEncoder(modeling.BertConfig.from_dict(tiny_config_dict))
    modeling.load_checkpoint(encoder, prefix)
    ids = np.array([[2, 7, 9, 3]], np.int32)
    alone = encoder({"input_ids": ids, "input_mask": np.ones_like(ids),
                     "segment_ids": np.zeros_like(ids)})
    padded_ids = np.array([[2, 7, 9, 3, 0, 0, 0]], np.int32)
    padded = encoder({"input_ids": padded_ids, "input_mask": (padded_ids > 0).astype("int32"),
                      "segment_ids": np.zeros_like(padded_ids)})
    assert np.max(np.abs(alone["sequence_output"] - padded["sequence_output"][:, :4])) < TOL
    assert np.max(np.abs(alone["pooled_output"] - padded["pooled_output"])) < TOL


def test_dropout_only_in_training(tiny_config_dict, tiny_inputs):
    encoder = modeling.BertEncoder(modeling.BertConfig.from_dict(tiny_config_dict))
    a = encoder(tiny_inputs, training=False)["sequence_output"]
    b = encoder(tiny_inputs, training=False)["sequence_output"]
    c = encoder(tiny_inputs, training=True)["sequence_output"]
    np.testing.assert_array_equal(a, b)
    assert np.max(np.abs(a - c)) > 1e-3


def test_gelu_is_the_originals_tanh_approximation():
    from modeling.activations import gelu, gelu_exact
    # Hand-computed: 0.5*(1+tanh(sqrt(2/pi)*(1+0.044715))) = 0.8411919906082768 at x = 1;
    # the erf form gives 0.8413447460685429.
    assert abs(float(gelu(np.float32(1.0))) - 0.8411919906082768) < 1e-6
    assert abs(float(gelu_exact(np.float32(1.0))) - 0.8413447460685429) < 1e-6


def test_initialisers_follow_the_original(tiny_config_dict):
    config = dict(tiny_config_dict, hidden_size=64, num_attention_heads=4,
                  intermediate_size=256, vocab_size=500)
    model = modeling.BertPretrainer(modeling.BertConfig.from_dict(config))
    from modeling.checkpoint_mapping import variable_map
    for name, (var, _) in variable_map(model).items():
        value = var.numpy()
        if name.endswith("gamma"):
            np.testing.assert_array_equal(value, 1.0)
        elif name.endswith("beta") or name.endswith("bias"):
            np.testing.assert_array_equal(value, 0.0)
        else:  # truncated normal, stddev 0.02: nothing beyond 2 sigma
            assert np.max(np.abs(value)) <= 0.04 + 1e-7, name
            assert 0.01 < value.std() < 0.02, name


def test_pre_layer_norm_encoder_matches_numpy(tmp_path, tiny_config_dict, tiny_inputs):
    """The pre-LayerNorm option (not the original's): each branch's input normalised, a
    LayerNorm after the last block, stored as bert/encoder/LayerNorm; against the NumPy
    forward pass through a TF1 checkpoint, and through our own checkpoint and back."""
    config = dict(tiny_config_dict, pre_layer_norm=True)
    weights = ref.random_google_weights(config, np.random.default_rng(5))
    prefix = write_tf1_checkpoint(weights, str(tmp_path / "pre_ln.ckpt"))
    encoder = modeling.BertEncoder(modeling.BertConfig.from_dict(config))
    report = modeling.load_checkpoint(encoder, prefix, strict=True)
    assert not report.not_filled and "bert/encoder/LayerNorm/gamma" in report.loaded
    out = encoder(tiny_inputs, training=False)
    want = ref.encoder_forward(weights, config, **tiny_inputs)
    mask = tiny_inputs["input_mask"]
    assert _masked_max_diff(out["sequence_output"], want["sequence_output"], mask) < TOL
    for got, exp in zip(out["encoder_outputs"], want["encoder_outputs"]):
        assert _masked_max_diff(got, exp, mask) < TOL
    assert np.max(np.abs(out["pooled_output"] - want["pooled_output"])) < TOL
    # Post-LayerNorm weights give other outputs: the option really changes the blocks.
    post = modeling.BertEncoder(modeling.BertConfig.from_dict(tiny_config_dict))
    modeling.load_checkpoint(post, prefix)
    assert np.max(np.abs(post(tiny_inputs)["pooled_output"] - out["pooled_output"])) > 1e-2
    # The config says so in its file, and a Hugging Face export is refused by name.
    assert modeling.BertConfig.from_dict(config).to_dict()["pre_layer_norm"] is True
    assert "pre_layer_norm" not in modeling.BertConfig.from_dict(tiny_config_dict).to_dict()
    with pytest.raises(ValueError, match="pre_layer_norm"):
        modeling.save_huggingface(encoder, str(tmp_path / "hf"))
