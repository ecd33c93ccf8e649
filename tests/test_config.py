"""BertConfig: the original's fields and defaults, JSON round trip, Hugging Face configs,
and errors that name the file and the field."""

import json

import pytest

from modeling import BertConfig, BertConfigError

BASE = {"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
        "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
        "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 12,
        "type_vocab_size": 2, "vocab_size": 30522}


def _write(tmp_path, obj, name="bert_config.json"):
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj), encoding="utf-8")
    return str(path)


def test_defaults_are_the_originals():
    c = BertConfig(vocab_size=100)
    assert (c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.intermediate_size,
            c.hidden_act, c.hidden_dropout_prob, c.attention_probs_dropout_prob,
            c.max_position_embeddings, c.type_vocab_size, c.initializer_range) == \
        (768, 12, 12, 3072, "gelu", 0.1, 0.1, 512, 16, 0.02)


def test_released_config_round_trips(tmp_path):
    c = BertConfig.from_json_file(_write(tmp_path, BASE))
    # The original writes indent=2, sort_keys=True.
    assert c.to_json_string() == json.dumps(BASE, indent=2, sort_keys=True) + "\n"
    assert BertConfig.from_dict(json.loads(c.to_json_string())) == c


def test_chinese_config_extra_keys_are_ignored_and_kept(tmp_path):
    extra = dict(BASE, directionality="bidi", pooler_fc_size=768, pooler_type="first_token_transform",
                 vocab_size=21128)
    c = BertConfig.from_json_file(_write(tmp_path, extra))
    assert c.vocab_size == 21128 and c.extra["pooler_type"] == "first_token_transform"
    assert json.loads(c.to_json_string())["directionality"] == "bidi"


def test_hugging_face_config(tmp_path):
    hf = dict(BASE, model_type="bert", layer_norm_eps=1e-12, position_embedding_type="absolute",
              architectures=["BertModel"], hidden_act="gelu")
    c = BertConfig.from_json_file(_write(tmp_path, hf, "config.json"))
    assert c.hidden_act == "gelu_exact"  # Hugging Face's "gelu" is the erf form
    hf["hidden_act"] = "gelu_new"
    assert BertConfig.from_dict(hf).hidden_act == "gelu"
    with pytest.raises(BertConfigError, match="position_embedding_type"):
        BertConfig.from_dict(dict(hf, position_embedding_type="relative_key"))


@pytest.mark.parametrize("change, field", [
    ({"hidden_size": 100}, "hidden_size"),
    ({"hidden_act": "gelu_fancy"}, "hidden_act"),
    ({"num_hidden_layers": "twelve"}, "num_hidden_layers"),
    ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob"),
    ({"vocab_size": 0}, "vocab_size"),
])
def test_invalid_values_name_file_and_field(tmp_path, change, field):
    path = _write(tmp_path, dict(BASE, **change))
    with pytest.raises(BertConfigError) as err:
        BertConfig.from_json_file(path)
    assert path in str(err.value) and f"'{field}'" in str(err.value)


def test_missing_field(tmp_path):
    obj = dict(BASE)
    del obj["vocab_size"]
    path = _write(tmp_path, obj)
    with pytest.raises(BertConfigError, match=r"bert_config.json: required field 'vocab_size'"):
        BertConfig.from_json_file(path)


def test_not_json_and_not_utf8(tmp_path):
    path = _write(tmp_path, '{"vocab_size": 30522,')
    with pytest.raises(BertConfigError, match=r"bert_config.json: not valid JSON at line 1"):
        BertConfig.from_json_file(path)
    bad = tmp_path / "latin1.json"
    bad.write_bytes(b'{"vocab_size": 1, "hidden_act": "g\xe9lu"}')
    with pytest.raises(BertConfigError, match="not UTF-8"):
        BertConfig.from_json_file(str(bad))
    with pytest.raises(BertConfigError, match="cannot read"):
        BertConfig.from_json_file(str(tmp_path / "missing.json"))
    with pytest.raises(BertConfigError, match="JSON object"):
        BertConfig.from_json_file(_write(tmp_path, "[1, 2]"))
