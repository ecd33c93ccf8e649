"""How a new model's position table starts (`BertConfig.position_embedding_init`): the
original's truncated normal, or Vaswani et al.'s sinusoids checked against the formula
computed here term by term; the choice written to bert_config.json only when it is not
the original's; a checkpoint's table replacing it."""

import json
import math

import numpy as np
import pytest

import modeling


def _positions(config):
    return modeling.BertEncoder(config).embeddings.position_embeddings.numpy()


def test_the_sinusoidal_table_is_the_formula_at_the_configs_scale(tiny_config_dict):
    config = modeling.BertConfig(**dict(tiny_config_dict, initializer_range=0.05),
                                 position_embedding_init="sinusoidal")
    table = _positions(config)
    rows, width = table.shape
    scale = 0.05 * math.sqrt(2)  # a sine-cosine pair has a mean square of 1/2
    for p in (0, 1, 7, rows - 1):
        for i in range(width // 2):
            angle = p / 10000 ** (2 * i / width)
            assert table[p, 2 * i] == pytest.approx(scale * math.sin(angle), abs=1e-7)
            assert table[p, 2 * i + 1] == pytest.approx(scale * math.cos(angle), abs=1e-7)
    assert np.sqrt(np.mean(table ** 2)) == pytest.approx(0.05, rel=1e-5)
    # The dot product of two rows depends on their distance only.
    gram = table @ table.T
    for distance in (1, 3):
        diagonal = np.diagonal(gram, distance)
        np.testing.assert_allclose(diagonal, diagonal[0], rtol=1e-4)
    # The other tables start as the original's.
    words = modeling.BertEncoder(config).embeddings.word_embeddings.numpy()
    assert np.abs(words).max() <= 2 * 0.05 and 0.6 * 0.05 < words.std() < 0.05


def test_the_original_initialisation_by_default(tiny_config_dict):
    table = _positions(modeling.BertConfig(**tiny_config_dict))
    sigma = tiny_config_dict.get("initializer_range", 0.02)
    # A truncated normal: within two standard deviations, about 0.88 of sigma, and rows
    # at distance 1 no more alike than rows far apart.
    assert np.abs(table).max() <= 2 * sigma and 0.6 * sigma < table.std() < sigma
    gram = table @ table.T
    assert abs(np.diagonal(gram, 1).mean()) < 0.3 * np.diagonal(gram).mean()


def test_only_a_new_choice_is_written_and_it_reads_back(tmp_path, tiny_config_dict):
    original = modeling.BertConfig(**tiny_config_dict)
    assert "position_embedding_init" not in json.loads(original.to_json_string())
    assert original.position_embedding_init == "truncated_normal"
    config = modeling.BertConfig(**tiny_config_dict, position_embedding_init="sinusoidal")
    config.to_json_file(str(tmp_path / "bert_config.json"))
    written = json.loads((tmp_path / "bert_config.json").read_text())
    assert written["position_embedding_init"] == "sinusoidal"
    assert modeling.BertConfig.from_json_file(str(tmp_path / "bert_config.json")) == config
    assert modeling.BertEncoder(config).bert_config().position_embedding_init == "sinusoidal"


def test_a_bad_choice_is_named(tiny_config_dict):
    with pytest.raises(modeling.BertConfigError,
                       match="cfg.json: field 'position_embedding_init' is 'rope'; use one "
                             "of: truncated_normal, sinusoidal"):
        modeling.BertConfig.from_dict(dict(tiny_config_dict, position_embedding_init="rope"),
                                      source="cfg.json")


def test_a_checkpoints_table_replaces_the_sinusoids(tmp_path, tiny_config_dict):
    trained = modeling.BertPretrainer(modeling.BertConfig(**tiny_config_dict),
                                      next_sentence=False)
    prefix = str(tmp_path / "bert_model.ckpt")
    modeling.save_google_checkpoint(trained, prefix)
    config = modeling.BertConfig(**tiny_config_dict, position_embedding_init="sinusoidal")
    model = modeling.BertPretrainer(config, next_sentence=False)
    modeling.load_checkpoint(model, prefix)
    np.testing.assert_array_equal(model.encoder.embeddings.position_embeddings.numpy(),
                                  trained.encoder.embeddings.position_embeddings.numpy())
