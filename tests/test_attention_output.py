"""The encoder's attention probabilities on request (`output_attentions=True`), against the
independent NumPy forward pass (weights through a TF1 checkpoint): the original's blocks,
causal attention and pre-LayerNorm, with and without `skip_padding`; the same outputs
as without the request; refused where they cannot be given (a block recomputed for
gradient checkpointing). Real weights against Hugging Face: tests/test_real_weights.py."""

import numpy as np
import pytest

import modeling
from tests import numpy_reference as ref
from tests.conftest import write_tf1_checkpoint

TOL = 1e-5


def _encoder(tmp_path, config):
    weights = ref.random_google_weights(config, np.random.default_rng(11))
    prefix = write_tf1_checkpoint(weights, str(tmp_path / "bert_model.ckpt"))
    encoder = modeling.BertEncoder(modeling.BertConfig.from_dict(config))
    modeling.load_checkpoint(encoder, prefix, strict=True)
    return encoder, weights


@pytest.mark.parametrize("options", [{}, {"causal_attention": True},
                                     {"pre_layer_norm": True}])
def test_attention_probabilities_match_numpy(tmp_path, tiny_config_dict, tiny_inputs,
                                             options):
    config = dict(tiny_config_dict, **options)
    encoder, weights = _encoder(tmp_path, config)
    want = ref.encoder_forward(weights, config, **tiny_inputs)
    plain = encoder(tiny_inputs, training=False)
    assert "attentions" not in plain
    mask = tiny_inputs["input_mask"].astype(bool)
    heads, length = config["num_attention_heads"], mask.shape[1]
    for skip_padding in (False, True):
        out = encoder(tiny_inputs, training=False, output_attentions=True,
                      skip_padding=skip_padding)
        assert len(out["attentions"]) == config["num_hidden_layers"]
        for got, expected in zip(out["attentions"], want["attentions"]):
            got = np.asarray(got)
            assert got.shape == (2, heads, length, length)
            for row in range(2):  # the real queries' rows (padded queries mean nothing)
                real = mask[row]
                np.testing.assert_allclose(got[row][:, real], expected[row][:, real],
                                           atol=TOL)
                # Each real query's row: a distribution over the real keys only.
                np.testing.assert_allclose(got[row][:, real].sum(-1), 1.0, atol=1e-6)
                assert np.all(got[row][:, real][..., ~real] < 1e-30)
        # Asking for them changes none of the other outputs.
        for name in ("sequence_output", "pooled_output"):
            np.testing.assert_allclose(np.asarray(out[name]) * (
                mask[..., None] if name == "sequence_output" else 1),
                np.asarray(plain[name]) * (mask[..., None] if name == "sequence_output"
                                           else 1), atol=TOL)
    if options.get("causal_attention"):  # no query sees a later key
        upper = np.triu(np.ones((length, length), bool), k=1)
        assert np.all(np.asarray(out["attentions"][0])[..., upper] < 1e-30)


def test_attention_probabilities_are_refused_under_gradient_checkpointing(
        tmp_path, tiny_config_dict, tiny_inputs):
    encoder, _ = _encoder(tmp_path, tiny_config_dict)
    encoder.enable_gradient_checkpointing(seed=1)
    with pytest.raises(ValueError, match="gradient checkpointing"):
        encoder(tiny_inputs, training=True, output_attentions=True)
    # In inference the blocks are not recomputed: the probabilities are given.
    out = encoder(tiny_inputs, training=False, output_attentions=True)
    assert len(out["attentions"]) == tiny_config_dict["num_hidden_layers"]
