"""The paper's ablations (Tables 5-8) as options: the causal (left-to-right) encoder against
a NumPy reference, its outputs blind to later tokens, and the config field that carries it
through files and Hugging Face; the pre-training objectives (masked LM alone, left to
right) end to end, with perplexity."""

import json
import math
import os

import keras
import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter  # LiteRT, as serving.load runs

import modeling
import modeling.huggingface
from tests import numpy_reference as ref
from tests import warm_processes
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
    result = warm_processes.run(
        [os.path.join(ROOT, "run_pretraining.py"),
         f"--input_file={records['file']}", f"--bert_config_file={records['config']}",
         f"--output_dir={out}", "--max_seq_length=24", "--max_predictions_per_seq=4",
         "--train_batch_size=16", "--num_train_steps=60", "--num_warmup_steps=4",
         "--learning_rate=2e-3", "--do_train", "--do_eval", "--max_eval_steps=4",
         f"--objective={objective}"], env=ENV, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    results = dict(line.split(" = ") for line in
                   (out / "eval_results.txt").read_text().strip().splitlines())
    name = "lm" if objective == "ltr" else "masked_lm"
    assert set(results) == {"eval_steps", "global_step", "loss", f"{name}_accuracy",
                            f"{name}_loss", f"{name}_perplexity", f"{name}_predictions"}
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


# ----------------------------------------------------------------------------- BiLSTM
def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _lstm(x, mask, kernel, recurrent, bias, backwards):
    """One direction over the real tokens of each row (Keras's gate order: i, f, c, o)."""
    batch, _, _ = x.shape
    units = recurrent.shape[0]
    out = np.zeros((batch, x.shape[1], units))
    for b in range(batch):
        h, c = np.zeros(units), np.zeros(units)
        steps = range(int(mask[b].sum()))
        for t in (reversed(steps) if backwards else steps):
            z = x[b, t] @ kernel + h @ recurrent + bias
            i, f, g, o = np.split(z, 4)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
            h = _sigmoid(o) * np.tanh(c)
            out[b, t] = h
    return out


def _bilstm_reference(model, x, mask):
    for i in range(model.bilstm.num_layers):
        layer = getattr(model.bilstm, f"layer_{i}")
        parts = []
        for direction, backwards in ((layer.forward_layer, False),
                                     (layer.backward_layer, True)):
            cell = direction.cell
            parts.append(_lstm(x, mask, *(np.asarray(w.numpy(), np.float64) for w in (
                cell.kernel, cell.recurrent_kernel, cell.bias)), backwards))
        x = np.concatenate(parts, -1)
    return x


def test_bilstm_heads_match_a_numpy_lstm(tmp_path, tiny_config_dict, tiny_inputs):
    cfg = dict(tiny_config_dict, num_hidden_layers=4)
    weights = ref.random_google_weights(cfg, np.random.default_rng(2), heads=())
    prefix = write_tf1_checkpoint(weights, str(tmp_path / "model.ckpt"))
    config = modeling.BertConfig.from_dict(cfg)
    mask = tiny_inputs["input_mask"]
    encoded = ref.encoder_forward(weights, cfg, **tiny_inputs)
    blocks = encoded["encoder_outputs"]
    for features, kind in ((encoded["sequence_output"], None),
                           (np.concatenate(blocks[-4:], -1), "concat_last_four"),
                           (sum(blocks), "sum_all")):
        tagger = modeling.BertTokenClassifier(config, 5, head="bilstm", bilstm_layers=2,
                                              bilstm_units=6, feature_based=kind)
        modeling.load_checkpoint(tagger, prefix, strict="encoder")
        sequence = _bilstm_reference(tagger, features, mask)
        kernel, bias = (np.asarray(w.numpy(), np.float64) for w in (
            tagger.tagger.dense.kernel, tagger.tagger.dense.bias))
        ours = np.asarray(tagger(tiny_inputs, training=False)["logits"])
        np.testing.assert_allclose(ours * mask[..., None],
                                   (sequence @ kernel + bias) * mask[..., None], atol=1e-5,
                                   err_msg=str(kind))
    # A classifier reads the forward state at the last real token and the backward state
    # at the first.
    classifier = modeling.BertClassifier(config, 3, head="bilstm", bilstm_units=6)
    modeling.load_checkpoint(classifier, prefix, strict="encoder")
    sequence = _bilstm_reference(classifier, encoded["sequence_output"], mask)
    last = mask.sum(1) - 1
    summary = np.concatenate([sequence[np.arange(2), last, :6], sequence[:, 0, 6:]], -1)
    kernel, bias = (np.asarray(w.numpy(), np.float64) for w in (
        classifier.classifier.dense.kernel, classifier.classifier.dense.bias))
    np.testing.assert_allclose(np.asarray(classifier(tiny_inputs, training=False)["logits"]),
                               summary @ kernel + bias, atol=1e-5)


def test_bilstm_checkpoints_round_trip_and_are_not_read_without_one(tmp_path,
                                                                    tiny_config_dict,
                                                                    tiny_inputs):
    config = modeling.BertConfig.from_dict(tiny_config_dict)
    model = modeling.BertSpanLabeler(config, head="bilstm")
    prefix = str(tmp_path / "squad.ckpt")
    modeling.save_google_checkpoint(model, prefix)
    again = modeling.BertSpanLabeler(config, head="bilstm")
    modeling.load_checkpoint(again, prefix, strict=True)
    for name, value in model(tiny_inputs, training=False).items():
        np.testing.assert_array_equal(np.asarray(again(tiny_inputs, training=False)[name]),
                                      np.asarray(value))
    # Same output-layer shapes without the BiLSTM: refused, not silently skipped.
    with pytest.raises(modeling.CheckpointError, match=r"has a BiLSTM .*--head=bilstm"):
        modeling.load_checkpoint(modeling.BertSpanLabeler(config), prefix, strict=True)
    with pytest.raises(ValueError, match=r"no Hugging Face architecture .*a BiLSTM head"):
        modeling.save_huggingface(model, str(tmp_path / "hf"))
    with pytest.raises(ValueError, match=r"needs at least 4 encoder layers"):
        modeling.BertTokenClassifier(config, 3, feature_based="sum_last_four")


@pytest.fixture(scope="module")
def ner_toy(tmp_path_factory):
    from tests.test_ner import write_toy_task
    folder = write_toy_task(tmp_path_factory.mktemp("ner_ablations"),
                            (("eng.train", 300), ("eng.testa", 60), ("eng.testb", 60)))
    config = modeling.BertConfig.from_json_file(str(folder / "bert_config.json"))
    # Its draw seeded: unseeded, it depended on the tests this process ran before (once
    # in a suite run an encoder the BiLSTM head fine-tuned to F1 71.8 only).
    keras.utils.set_random_seed(0)
    encoder = modeling.BertEncoder(config)  # a "pre-trained" encoder: random, but given
    modeling.save_google_checkpoint(encoder, str(folder / "bert_model.ckpt"))
    return folder


def _run_ner(toy, out, *extra):
    result = warm_processes.run(
        [os.path.join(ROOT, "run_ner.py"), f"--data_dir={toy / 'data'}",
         f"--vocab_file={toy / 'vocab.txt'}", f"--bert_config_file={toy / 'bert_config.json'}",
         f"--init_checkpoint={toy / 'bert_model.ckpt'}", "--do_train", "--do_eval",
         "--max_seq_length=16", "--train_batch_size=16", "--learning_rate=5e-3",
         "--num_train_epochs=6", f"--output_dir={out}", "--save_checkpoints_steps=1000",
         *extra], env=ENV, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(line.split(" = ", 1) for line in
                (out / "eval_results.txt").read_text().splitlines() if " = " in line)


def test_feature_based_ner_trains_a_bilstm_on_a_frozen_encoder(ner_toy, tmp_path):
    out = tmp_path / "features"
    results = _run_ner(ner_toy, out, "--feature_based=second_to_last", "--bilstm_units=32")
    assert float(results["f1"]) > 80.0, results
    # The encoder's weights are exactly the initial checkpoint's; the BiLSTM and tagger
    # are trained.
    config = modeling.BertConfig.from_json_file(str(ner_toy / "bert_config.json"))
    start = modeling.BertEncoder(config)
    modeling.load_checkpoint(start, str(ner_toy / "bert_model.ckpt"), strict=True)
    labels = (out / "label_list.txt").read_text().split()
    trained = modeling.BertTokenClassifier(config, len(labels),
                                           feature_based="second_to_last", bilstm_units=32)
    modeling.load_checkpoint(trained, str(out / "best" / "model.ckpt"), strict=True)
    for a, b in zip(start.weights, trained.encoder.weights):
        np.testing.assert_array_equal(np.asarray(a.numpy()), np.asarray(b.numpy()),
                                      err_msg=a.path)
    assert not trained.encoder.trainable
    assert len(trained.trainable_weights) == 6 * 2 + 2  # 2 BiLSTM layers x 2 directions x 3


def test_bilstm_head_fine_tunes(ner_toy, tmp_path):
    results = _run_ner(ner_toy, tmp_path / "bilstm", "--head=bilstm")
    assert float(results["f1"]) > 85.0, results


def test_bilstm_classifier_exports_as_a_saved_model(tmp_path, tiny_config_dict, tiny_inputs,
                                                    write_vocab):
    import tensorflow as tf

    from tasks.classification.export import export_classification
    vocab = write_vocab(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] +
                        [f"w{i}" for i in range(35)])
    model = modeling.BertClassifier(modeling.BertConfig.from_dict(tiny_config_dict), 2,
                                    head="bilstm", bilstm_layers=2)
    export_classification(model, str(tmp_path / "m"), vocab, True, 16, ["0", "1"],
                          pair=False)
    served = tf.saved_model.load(str(tmp_path / "m")).signatures["serving_ids"](
        **{k: tf.constant(v) for k, v in tiny_inputs.items()})
    logits = np.asarray(model(tiny_inputs, training=False)["logits"], np.float64)
    expected = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(served["probabilities"].numpy(), expected, atol=1e-5)
    # TF Lite: an LSTM converts in some processes and not in others (the converter needs
    # a static element shape for its tensor lists). Either its TF Lite answers as the
    # SavedModel, or the export went on without model.tflite and serving.load serves it
    # with the SavedModel.
    import serving
    predict = serving.load(str(tmp_path / "m"))
    if (tmp_path / "m" / "model.tflite").exists():
        lite = Interpreter(model_path=str(tmp_path / "m" / "model.tflite"))
        got = lite.get_signature_runner("serving_ids")(**tiny_inputs)["probabilities"]
        np.testing.assert_allclose(got, expected, atol=1e-5)
    else:  # and no empty file left behind by the failed conversion
        assert predict.backend_for(1) == "saved_model"
        assert not any(f.endswith(".tflite") for f in os.listdir(tmp_path / "m"))


def test_export_goes_on_without_tflite_when_the_model_does_not_convert(
        tmp_path, tiny_config_dict, write_vocab, monkeypatch):
    """By default an export whose model does not convert is written without
    model.tflite (one warning); asked for (`tflite=True`), the error stands and nothing
    is written."""
    from serving import saved_model
    from tasks.classification.export import export_classification

    def fails(*args, **kwargs):
        raise saved_model._CONVERTER_ERRORS[0]("tf.TensorListReserve: not lowered")

    monkeypatch.setattr(saved_model, "write_tflite", fails)
    vocab = write_vocab(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] +
                        [f"w{i}" for i in range(35)])
    model = modeling.BertClassifier(modeling.BertConfig.from_dict(tiny_config_dict), 2)
    export_classification(model, str(tmp_path / "m"), vocab, True, 16, ["0", "1"])
    assert (tmp_path / "m" / "saved_model.pb").exists()
    assert not (tmp_path / "m" / "model.tflite").exists()
    assert json.loads((tmp_path / "m" / "serving.json").read_text())["tflite"] is None
    with pytest.raises(saved_model._CONVERTER_ERRORS[0]):
        export_classification(model, str(tmp_path / "m2"), vocab, True, 16, ["0", "1"],
                              tflite=True)
    assert not (tmp_path / "m2").exists()
