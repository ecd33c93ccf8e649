"""The paper's ablations (Tables 5-8) as options: the causal (left-to-right) encoder against
a NumPy reference, its outputs blind to later tokens, and the config field that carries it
through files and Hugging Face; the pre-training objectives (masked LM alone, left to
right) end to end, with perplexity."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import modeling
import modeling.huggingface
from tests import numpy_reference as ref
from tests.conftest import write_tf1_checkpoint

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)


def _causal_model(tmp_path, tiny_config_dict):
    cfg = dict(tiny_config_dict, causal_attention=True)
    weights = ref.random_google_weights(cfg, np.random.default_rng(7), heads=())
    prefix = write_tf1_checkpoint(weights, str(tmp_path / "model.ckpt"))
    encoder = modeling.BertEncoder(modeling.BertConfig.from_dict(cfg))
    modeling.load_checkpoint(encoder, prefix, strict=True)
    return cfg, weights, encoder


def test_causal_encoder_matches_numpy_and_ignores_later_tokens(tmp_path, tiny_config_dict,
                                                                tiny_inputs):
    cfg, weights, encoder = _causal_model(tmp_path, tiny_config_dict)
    ours = encoder(tiny_inputs, training=False)
    theirs = ref.encoder_forward(weights, cfg, **tiny_inputs)
    mask = tiny_inputs["input_mask"][..., None]
    np.testing.assert_allclose(np.asarray(ours["sequence_output"]) * mask,
                               theirs["sequence_output"] * mask, atol=1e-4)
    np.testing.assert_allclose(np.asarray(ours["pooled_output"]), theirs["pooled_output"],
                               atol=1e-4)
    # Changing token 5 leaves positions 0-4 exactly as they were, and moves 5 on.
    changed = dict(tiny_inputs, input_ids=tiny_inputs["input_ids"].copy())
    changed["input_ids"][0, 5] = 30
    after = np.asarray(encoder(changed, training=False)["sequence_output"])
    before = np.asarray(ours["sequence_output"])
    np.testing.assert_array_equal(after[0, :5], before[0, :5])
    assert np.abs(after[0, 5:] - before[0, 5:]).max() > 1e-3
    # Without the causal mask, every position sees the change.
    full = modeling.BertEncoder(modeling.BertConfig.from_dict(tiny_config_dict))
    a = np.asarray(full(tiny_inputs, training=False)["sequence_output"])
    b = np.asarray(full(changed, training=False)["sequence_output"])
    assert np.abs(a[0, :5] - b[0, :5]).max() > 1e-4


def test_causal_field_round_trips_and_stays_out_of_original_configs(tmp_path,
                                                                     tiny_config_dict):
    plain = modeling.BertConfig.from_dict(tiny_config_dict)
    assert "causal_attention" not in plain.to_dict()  # the original's file, unchanged
    causal = modeling.BertConfig.from_dict(dict(tiny_config_dict, causal_attention=True))
    path = tmp_path / "bert_config.json"
    causal.to_json_file(str(path))
    assert json.loads(path.read_text())["causal_attention"] is True
    assert modeling.BertConfig.from_json_file(str(path)).causal_attention is True
    # Hugging Face's decoder flag means the same.
    hf = dict(tiny_config_dict, model_type="bert", is_decoder=True)
    assert modeling.BertConfig.from_dict(hf).causal_attention is True
    encoder = modeling.BertEncoder(causal)
    assert modeling.BertEncoder.from_config(encoder.get_config()).bert_config() \
        .causal_attention is True


def test_left_to_right_view_puts_the_masked_tokens_back():
    import tensorflow as tf

    from tasks.pretraining.task import _left_to_right
    batch = {"input_ids": tf.constant([[2, 4, 7, 4, 3, 0], [2, 9, 4, 3, 0, 0]]),
             "input_mask": tf.constant([[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 0, 0]]),
             "segment_ids": tf.zeros([2, 6], tf.int32),
             "masked_lm_positions": tf.constant([[1, 3, 0], [2, 0, 0]]),
             "masked_lm_ids": tf.constant([[11, 12, 0], [13, 0, 0]]),
             "masked_lm_weights": tf.constant([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])}
    inputs, labels, weights = _left_to_right(batch)
    assert inputs["input_ids"].numpy().tolist() == [[2, 11, 7, 12, 3, 0], [2, 9, 13, 3, 0, 0]]
    assert inputs["masked_lm_positions"].numpy().tolist() == [[0, 1, 2, 3, 4]] * 2
    assert labels.numpy().tolist() == [[11, 7, 12, 3, 0], [9, 13, 3, 0, 0]]
    assert weights.numpy().tolist() == [[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]]


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    from tests.pretraining_data import write_config, write_records
    folder = tmp_path_factory.mktemp("objectives")
    return {"file": write_records(folder / "shard.tfrecord", 200),
            "config": write_config(folder / "bert_config.json")}


@pytest.mark.parametrize("objective, architecture", [("mlm", "BertForMaskedLM"),
                                                     ("ltr", "BertLMHeadModel")])
def test_pretraining_objectives_end_to_end(records, tmp_path, objective, architecture):
    out = tmp_path / objective
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "run_pretraining.py"),
         f"--input_file={records['file']}", f"--bert_config_file={records['config']}",
         f"--output_dir={out}", "--max_seq_length=24", "--max_predictions_per_seq=4",
         "--train_batch_size=16", "--num_train_steps=60", "--num_warmup_steps=4",
         "--learning_rate=2e-3", "--do_train", "--do_eval", "--max_eval_steps=4",
         f"--objective={objective}"], env=ENV, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    results = dict(line.split(" = ") for line in
                   (out / "eval_results.txt").read_text().strip().splitlines())
    name = "lm" if objective == "ltr" else "masked_lm"
    assert set(results) == {"eval_steps", "global_step", "loss", f"{name}_accuracy",
                            f"{name}_loss", f"{name}_perplexity"}
    loss = float(results[f"{name}_loss"])
    assert float(results[f"{name}_perplexity"]) == pytest.approx(math.exp(loss), rel=1e-6)
    assert loss < math.log(40) - 0.5  # learnt: the records repeat one token per segment
    # The exported config carries the causal mask; the checkpoint fills the objective's
    # model exactly, and its Hugging Face class is the matching one.
    config = modeling.BertConfig.from_json_file(str(out / "export" / "bert_config.json"))
    assert config.causal_attention is (objective == "ltr")
    from tasks.pretraining.task import pretraining_model
    model = pretraining_model(config, objective)
    modeling.load_checkpoint(model, str(out / "export" / "bert_model.ckpt"), strict=True)
    assert "next_sentence" not in " ".join(w.path for w in model.weights)
    assert modeling.huggingface.architecture(model) == architecture


def test_left_to_right_model_is_hugging_face_lm_head_model(tmp_path, tiny_config_dict,
                                                           tiny_inputs):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tasks.pretraining.task import pretraining_model
    config = modeling.BertConfig.from_dict(tiny_config_dict)
    model = pretraining_model(config, "ltr")
    folder = modeling.save_huggingface(model, str(tmp_path / "hf"))
    theirs, info = transformers.BertLMHeadModel.from_pretrained(folder,
                                                               output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert theirs.config.is_decoder
    positions = np.tile(np.arange(8, dtype=np.int32), (2, 1))
    ours = np.asarray(model(dict(tiny_inputs, masked_lm_positions=positions),
                            training=False)["masked_lm_logits"])
    with torch.no_grad():
        logits = theirs.eval()(
            input_ids=torch.tensor(tiny_inputs["input_ids"], dtype=torch.long),
            attention_mask=torch.tensor(tiny_inputs["input_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(tiny_inputs["segment_ids"], dtype=torch.long)).logits
    mask = tiny_inputs["input_mask"][..., None]
    assert float(np.max(np.abs((ours - logits.numpy()) * mask))) <= 1e-5
