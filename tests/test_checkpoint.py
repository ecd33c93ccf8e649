"""Checkpoint loading and saving in every format, and its error messages."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import modeling
from modeling.checkpoint_mapping import variable_map
from tests import numpy_reference as ref
from tests.conftest import write_tf1_checkpoint


@pytest.fixture
def config(tiny_config_dict):
    return modeling.BertConfig.from_dict(tiny_config_dict)


def _to_hugging_face(weights, prefix="bert."):
    """TF1 names/layouts -> Hugging Face names/layouts, written out independently of
    modeling.checkpoint_mapping (PyTorch Linear weights are [out, in])."""
    out = {}
    for name, value in weights.items():
        if name.startswith("bert/embeddings/") and name.endswith("_embeddings"):
            key = name.replace("bert/", "").replace("/", ".") + ".weight"
        elif name.startswith("bert/"):
            key = name[len("bert/"):].replace("layer_", "layer.").replace("/", ".")
            key = key.replace("LayerNorm.gamma", "LayerNorm.weight")
            key = key.replace("LayerNorm.beta", "LayerNorm.bias")
            if key.endswith(".kernel"):
                key, value = key[:-len(".kernel")] + ".weight", value.T
        elif name == "cls/predictions/output_bias":
            key = "cls.predictions.bias"
        elif name == "cls/seq_relationship/output_weights":
            key = "cls.seq_relationship.weight"
        elif name == "cls/seq_relationship/output_bias":
            key = "cls.seq_relationship.bias"
        elif name.startswith("cls/predictions/transform/"):
            key = name.replace("/", ".").replace("LayerNorm.gamma", "LayerNorm.weight")
            key = key.replace("LayerNorm.beta", "LayerNorm.bias")
            if key.endswith(".kernel"):
                key, value = key[:-len(".kernel")] + ".weight", value.T
        else:
            continue
        out[(prefix if not key.startswith("cls.") else "") + key] = np.ascontiguousarray(value)
    return out


@pytest.mark.parametrize("prefix", ["bert.", ""])
def test_hugging_face_safetensors(tmp_path, tiny_config_dict, config, tiny_inputs, prefix):
    from safetensors.numpy import save_file

    weights = ref.random_google_weights(tiny_config_dict, np.random.default_rng(1))
    tensors = _to_hugging_face(weights, prefix)
    tensors["bert.embeddings.position_ids" if prefix else "embeddings.position_ids"] = \
        np.arange(32, dtype=np.int64)[None]
    tensors["cls.predictions.decoder.weight"] = weights["bert/embeddings/word_embeddings"]
    save_file(tensors, str(tmp_path / "model.safetensors"))
    model = modeling.BertPretrainer(config)
    report = modeling.load_checkpoint(model, str(tmp_path))  # folder with model.safetensors
    assert report.format == modeling.checkpoint.HUGGING_FACE
    assert not report.not_filled and not report.unused
    positions = np.array([[1, 2], [2, 1]], np.int32)
    out = model(dict(tiny_inputs, masked_lm_positions=positions))
    want = ref.pretrainer_forward(weights, tiny_config_dict, positions=positions, **tiny_inputs)
    assert np.max(np.abs(out["masked_lm_logits"] - want["masked_lm_logits"])) < 1e-5
    assert np.max(np.abs(out["pooled_output"] - want["pooled_output"])) < 1e-5


def test_google_round_trip_is_exact(tmp_path, config):
    model = modeling.BertPretrainer(config)
    for v in model.weights:  # make every weight distinctive, heads included
        v.assign(np.random.default_rng(abs(hash(v.path)) % 2**32).standard_normal(
            v.shape).astype("float32"))
    prefix = modeling.save_google_checkpoint(model, str(tmp_path / "out" / "bert_model.ckpt"))
    # The file holds exactly the original names and TF1 shapes, and nothing half-written.
    names = dict(tf.train.list_variables(prefix))
    assert names["cls/seq_relationship/output_weights"] == [2, 16]
    assert names["bert/encoder/layer_1/attention/self/query/kernel"] == [16, 16]
    assert len([n for n in names if n.startswith("bert/")]) == 5 + 2 * 16 + 2
    assert len([n for n in names if n.startswith("cls/")]) == 7
    assert not [p for p in (tmp_path / "out").iterdir() if ".tmp" in p.name]
    fresh = modeling.BertPretrainer(config)
    modeling.load_checkpoint(fresh, prefix, strict=True)
    for a, b in zip(model.weights, fresh.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_google_checkpoint_reads_like_tf1(tmp_path, config, tiny_inputs):
    """What save_google_checkpoint writes is read by tf.compat.v1's init_from_checkpoint
    (the original scripts' loader) into variables under the original names."""
    model = modeling.BertPretrainer(config)
    prefix = modeling.save_google_checkpoint(model, str(tmp_path / "bert_model.ckpt"))
    graph = tf.Graph()
    with graph.as_default():
        tf1 = tf.compat.v1
        v = tf1.get_variable("bert/encoder/layer_0/attention/self/key/kernel", shape=[16, 16])
        w = tf1.get_variable("cls/seq_relationship/output_weights", shape=[2, 16])
        tf1.train.init_from_checkpoint(prefix, {
            "bert/encoder/layer_0/attention/self/key/kernel":
                "bert/encoder/layer_0/attention/self/key/kernel",
            "cls/seq_relationship/output_weights": "cls/seq_relationship/output_weights"})
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            got_v, got_w = sess.run([v, w])
    np.testing.assert_array_equal(
        got_v, model.encoder.transformer_layers[0].self_attention.key.kernel.numpy())
    np.testing.assert_array_equal(got_w, model.next_sentence.dense.kernel.numpy().T)


def test_tf2_checkpoint_encoder_to_task_model(tmp_path, config, tiny_inputs):
    pretrainer = modeling.BertPretrainer(config)
    prefix = modeling.save_tf2_checkpoint(pretrainer, str(tmp_path / "ckpt-1"))
    classifier = modeling.BertClassifier(config, num_classes=2)
    report = modeling.load_checkpoint(classifier, prefix)
    assert report.format == modeling.checkpoint.TF2
    assert report.not_filled == ["output_weights", "output_bias"]
    assert "cls/predictions/output_bias" in report.unused
    a = pretrainer.encoder(tiny_inputs)["sequence_output"]
    b = classifier.encoder(tiny_inputs)["sequence_output"]
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("make", [
    lambda c: modeling.BertPretrainer(c),
    lambda c: modeling.BertClassifier(c, num_classes=3)])
def test_tf2_and_google_round_trips_restore_every_weight(tmp_path, config, make):
    # The heads' [2, H] / [num_classes, H] `output_weights` are stored transposed in the
    # Google format and as Keras kernels in TF2 checkpoints; both must come back as saved.
    source = make(config)
    want = {v.path.split("/", 1)[1]: v.numpy() for v in source.weights}
    for save in (modeling.save_tf2_checkpoint, modeling.save_google_checkpoint):
        prefix = save(source, str(tmp_path / save.__name__ / "ckpt"))
        target = make(config)
        modeling.load_checkpoint(target, prefix, strict=True)
        got = {v.path.split("/", 1)[1]: v.numpy() for v in target.weights}
        assert got.keys() == want.keys()
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_wrong_shape_names_both_variables(tmp_path, tiny_config_dict, config):
    bigger = dict(tiny_config_dict, vocab_size=50)
    weights = ref.random_google_weights(bigger, np.random.default_rng(2))
    prefix = write_tf1_checkpoint(weights, str(tmp_path / "bert_model.ckpt"))
    with pytest.raises(modeling.CheckpointError) as err:
        modeling.load_checkpoint(modeling.BertEncoder(config), prefix)
    msg = str(err.value)
    assert "bert/embeddings/word_embeddings" in msg and "[50, 16]" in msg
    assert "embeddings/word_embeddings" in msg and "[40, 16]" in msg
    assert "bert_config.json" in msg


def test_load_reports_missing_and_unused(tmp_path, tiny_config_dict, config):
    weights = ref.random_google_weights(tiny_config_dict, np.random.default_rng(3))
    del weights["bert/pooler/dense/bias"]
    weights["bert/something_new"] = np.zeros(3, np.float32)
    prefix = write_tf1_checkpoint(weights, str(tmp_path / "bert_model.ckpt"))
    encoder = modeling.BertEncoder(config)
    report = modeling.load_checkpoint(encoder, prefix)
    assert report.not_filled == ["bert/pooler/dense/bias"]
    assert "bert/something_new" in report.unused
    assert not any("adam" in n or n == "global_step" for n in report.unused)
    with pytest.raises(modeling.CheckpointError, match="pooler/dense/bias"):
        modeling.load_checkpoint(encoder, prefix, strict=True)


def test_deferred_draws_skip_what_the_checkpoint_fills(tmp_path, tiny_config_dict, config,
                                                      monkeypatch):
    # A model built in deferred_draws() and filled by load_checkpoint has exactly the
    # weights of one built and filled the usual way (same seed): the checkpoint's, and
    # the truncated normal's draws for what it lacks (here the pooler's kernel and the
    # new head); and only those are drawn.
    import keras

    weights = ref.random_google_weights(tiny_config_dict, np.random.default_rng(4))
    del weights["bert/pooler/dense/kernel"]
    prefix = write_tf1_checkpoint(weights, str(tmp_path / "bert_model.ckpt"))
    keras.utils.set_random_seed(7)
    usual = modeling.BertClassifier(config, num_classes=3)
    modeling.load_checkpoint(usual, prefix)
    drawn = []
    draw = keras.initializers.TruncatedNormal.__call__
    monkeypatch.setattr(keras.initializers.TruncatedNormal, "__call__",
                        lambda self, shape, dtype=None: drawn.append(tuple(shape)) or
                        draw(self, shape, dtype))
    keras.utils.set_random_seed(7)
    with modeling.deferred_draws() as deferred:
        model = modeling.BertClassifier(config, num_classes=3)
    assert drawn == []
    report = modeling.load_checkpoint(model, prefix, deferred=deferred)
    assert sorted(report.not_filled) == ["bert/pooler/dense/kernel", "output_bias",
                                         "output_weights"]
    hidden = tiny_config_dict["hidden_size"]
    assert sorted(drawn) == sorted([(hidden, hidden), (hidden, 3)])
    want = {v.path: v.numpy() for v in usual.weights}
    got = {v.path: v.numpy() for v in model.weights}
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    pooler = variable_map(model)["bert/pooler/dense/kernel"][0].numpy()
    assert 0 < np.abs(pooler).max() <= 2 * config.initializer_range  # drawn, truncated


def test_bad_paths_and_foreign_checkpoints(tmp_path, config):
    encoder = modeling.BertEncoder(config)
    with pytest.raises(modeling.CheckpointError, match="not a checkpoint"):
        modeling.load_checkpoint(encoder, str(tmp_path / "nope" / "bert_model.ckpt"))
    prefix = write_tf1_checkpoint({"foo/bar": np.zeros(2, np.float32)},
                                  str(tmp_path / "other.ckpt"), with_optimizer_slots=False)
    with pytest.raises(modeling.CheckpointError, match="no variable of the model"):
        modeling.load_checkpoint(encoder, prefix)
    bad = tmp_path / "model.safetensors"
    bad.write_bytes(b"not a safetensors file")
    with pytest.raises(modeling.CheckpointError, match="safetensors"):
        modeling.load_checkpoint(encoder, str(bad))


def test_every_weight_has_a_name(config):
    for model in (modeling.BertPretrainer(config), modeling.BertClassifier(config, 3),
                  modeling.BertSpanLabeler(config), modeling.BertTokenClassifier(config, 5)):
        names = variable_map(model)
        assert len(names) == len(model.weights)
        assert json.dumps(sorted(names))  # names are plain strings


def test_from_pretrained_reads_google_hugging_face_and_our_folders(tmp_path, tiny_config_dict,
                                                                  tiny_inputs):
    """One call for a Google release folder, a Hugging Face folder and
    pretrain_from_text.py's export: the encoder with the file's weights (against the NumPy
    forward pass) and the tokenizer with the folder's casing."""
    import json

    from tests.conftest import write_tf1_checkpoint
    weights = ref.random_google_weights(tiny_config_dict, np.random.default_rng(2))
    want = ref.encoder_forward(weights, tiny_config_dict, **tiny_inputs)["pooled_output"]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "##s"]
    vocab += [f"[unused{i}]" for i in range(tiny_config_dict["vocab_size"] - len(vocab))]
    google = tmp_path / "cased_L-2_H-16_A-4"  # a release name: cased
    google.mkdir()
    write_tf1_checkpoint(weights, str(google / "bert_model.ckpt"))
    (google / "bert_config.json").write_text(json.dumps(tiny_config_dict))
    (google / "vocab.txt").write_text("\n".join(vocab) + "\n")
    encoder, tokenizer = modeling.from_pretrained(str(google))
    np.testing.assert_allclose(encoder(tiny_inputs)["pooled_output"], want, atol=1e-5)
    assert tokenizer.do_lower_case is False
    assert tokenizer.tokenize("hello Worlds") == ["hello", "[UNK]"]
    with pytest.raises(ValueError, match="cased model"):
        modeling.from_pretrained(str(google), do_lower_case=True)
    hf = modeling.save_huggingface(encoder, str(tmp_path / "hf"), str(google / "vocab.txt"),
                                   do_lower_case=True)
    encoder, tokenizer = modeling.from_pretrained(hf)
    np.testing.assert_allclose(encoder(tiny_inputs)["pooled_output"], want, atol=1e-5)
    assert tokenizer.do_lower_case is True and tokenizer.tokenize("Worlds") == ["world", "##s"]
    ours = tmp_path / "run" / "pretraining" / "export"  # pretrain_from_text.py's layout
    ours.mkdir(parents=True)
    modeling.save_google_checkpoint(encoder, str(ours / "bert_model.ckpt"))
    (ours / "bert_config.json").write_text(json.dumps(tiny_config_dict))
    (tmp_path / "run" / "vocab.txt").write_text("\n".join(vocab) + "\n")
    encoder, tokenizer = modeling.from_pretrained(str(ours))
    np.testing.assert_allclose(encoder(tiny_inputs)["pooled_output"], want, atol=1e-5)
    with pytest.raises(ValueError, match="no model config"):
        modeling.from_pretrained(str(tmp_path / "run"))


def test_from_pretrained_refuses_a_vocabulary_of_another_length(tmp_path, tiny_config_dict):
    """vocab.txt must have the config's vocab_size lines: fewer is most often another
    model's vocabulary (refused unless the caller says the table is larger on purpose),
    more would give ids without an embedding row; and it is said before any weight is
    read, in one line naming both files. A session that calls it prints no TensorFlow
    start-up line."""
    import json
    import subprocess
    import sys
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "bert_config.json").write_text(json.dumps(tiny_config_dict))
    modeling.save_google_checkpoint(modeling.BertEncoder(modeling.BertConfig(
        **tiny_config_dict)), str(folder / "bert_model.ckpt"))
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(60)]
    for size, words in ((30, "30 tokens"), (45, "45 tokens")):
        (folder / "vocab.txt").write_text("\n".join(tokens[:size]) + "\n")
        with pytest.raises(ValueError, match=f"vocab.txt: {words}, but .*bert_config.json "
                                             f"has vocab_size 40"):
            modeling.from_pretrained(str(folder))
    (folder / "vocab.txt").write_text("\n".join(tokens[:30]) + "\n")
    with pytest.raises(ValueError, match="vocab_smaller_than_model=True"):
        modeling.from_pretrained(str(folder))
    encoder, tokenizer = modeling.from_pretrained(str(folder), vocab_smaller_than_model=True)
    assert encoder.vocab_size == 40 and len(tokenizer.vocab) == 30
    (folder / "vocab.txt").write_text("\n".join(tokens[:40]) + "\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_CPP")}
    session = subprocess.run(
        [sys.executable, "-c", "import sys, modeling; e, t = modeling.from_pretrained("
         "sys.argv[1]); print(e.vocab_size)", str(folder)], cwd=root, capture_output=True,
        text=True, env=dict(env, PYTHONPATH=root), timeout=300)
    assert session.returncode == 0 and session.stdout.strip() == "40", session.stderr
    assert session.stderr == ""
