"""What the pooled output summarises (`BertConfig.pooling`): the original's [CLS] vector,
or the mean of the real tokens, checked against the NumPy forward pass; a model's choice
carried by its bert_config.json from a checkpoint into fine-tuning and the exported
SavedModel; and the original's configs (Google's and Hugging Face's) pooling [CLS]."""

import json
import os
import random

import numpy as np
import pytest

import modeling
from modeling.checkpoint_mapping import TRANSPOSE, variable_map
from tests import numpy_reference as ref
from tests import warm_processes
from tests.conftest import write_tf1_checkpoint

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The original release's bert_config.json of BERT-Base, Uncased and of BERT-Base,
# Multilingual Cased (with its `pooler_*` and `directionality` keys), as downloaded.
GOOGLE_BASE = {
    "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
    "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 12,
    "type_vocab_size": 2, "vocab_size": 30522}
GOOGLE_MULTILINGUAL = dict(
    GOOGLE_BASE, vocab_size=119547, directionality="bidi", pooler_fc_size=768,
    pooler_num_attention_heads=12, pooler_num_fc_layers=3, pooler_size_per_head=128,
    pooler_type="first_token_transform")
HUGGING_FACE_BASE = {
    "architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768,
    "initializer_range": 0.02, "intermediate_size": 3072, "layer_norm_eps": 1e-12,
    "max_position_embeddings": 512, "model_type": "bert", "num_attention_heads": 12,
    "num_hidden_layers": 12, "pad_token_id": 0, "type_vocab_size": 2, "vocab_size": 30522}


@pytest.mark.parametrize("raw", [GOOGLE_BASE, GOOGLE_MULTILINGUAL, HUGGING_FACE_BASE],
                         ids=["google", "google_multilingual", "hugging_face"])
def test_the_originals_configs_pool_cls_and_write_back_unchanged(raw, tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(raw))
    config = modeling.BertConfig.from_json_file(str(path))
    assert config.pooling == "cls"
    assert config.encoder_kwargs()["pooling"] == "cls"
    if "model_type" not in raw:  # a Google config writes back key for key
        assert json.loads(config.to_json_string()) == raw


def test_a_mean_pooling_config_writes_its_choice_and_reads_it_back(tmp_path, tiny_config_dict):
    config = modeling.BertConfig(**tiny_config_dict, pooling="mean")
    config.to_json_file(str(tmp_path / "bert_config.json"))
    written = json.loads((tmp_path / "bert_config.json").read_text())
    assert written["pooling"] == "mean"
    assert modeling.BertConfig.from_json_file(str(tmp_path / "bert_config.json")) == config
    assert modeling.BertEncoder(config).bert_config().pooling == "mean"


@pytest.mark.parametrize("change, message", [
    ({"pooling": "max"}, "field 'pooling' is 'max'; use one of: cls, mean"),
    ({"pooling": "mean", "causal_attention": True}, "'causal_attention' is true"),
])
def test_a_bad_pooling_is_named(change, message, tiny_config_dict):
    with pytest.raises(modeling.BertConfigError, match=message):
        modeling.BertConfig.from_dict(dict(tiny_config_dict, **change), source="cfg.json")


@pytest.mark.parametrize("pooling", ["cls", "mean", "pair_mean"])
def test_pooled_output_against_the_numpy_forward(pooling, tiny_config_dict, tiny_inputs,
                                                 tmp_path):
    """The second sequence is padded: the mean covers its real tokens only, in the padded
    computation and in the one that skips the padding; more padding changes nothing. The
    first sequence is a pair, the second a single text (its segment B empty)."""
    cfg = dict(tiny_config_dict, pooling=pooling)
    weights = ref.random_google_weights(cfg, np.random.default_rng(3), heads=())
    prefix = write_tf1_checkpoint(weights, str(tmp_path / "bert_model.ckpt"))
    encoder = modeling.BertEncoder(modeling.BertConfig(**cfg))
    modeling.load_checkpoint(encoder, prefix)
    want = ref.encoder_forward(weights, cfg, **tiny_inputs)["pooled_output"]
    np.testing.assert_allclose(encoder(tiny_inputs)["pooled_output"], want, atol=1e-5)
    np.testing.assert_allclose(encoder(tiny_inputs, skip_padding=True)["pooled_output"],
                               want, atol=1e-5)
    longer = {name: np.pad(value, ((0, 0), (0, 5))) for name, value in tiny_inputs.items()}
    np.testing.assert_allclose(encoder(longer)["pooled_output"], want, atol=1e-5)
    if pooling == "pair_mean":  # the segments matter: all of it as A gives another vector
        one_segment = dict(tiny_inputs, segment_ids=np.zeros_like(tiny_inputs["segment_ids"]))
        elsewise = ref.encoder_forward(weights, cfg, **one_segment)
        assert np.abs(elsewise["pooled_output"][0] - want[0]).max() > 1e-2
        return
    other = "cls" if pooling == "mean" else "mean"
    elsewise = ref.encoder_forward(weights, dict(cfg, pooling=other), **tiny_inputs)
    assert np.abs(elsewise["pooled_output"] - want).max() > 1e-2  # the choice matters


def test_pair_mean_pools_the_two_segments_compared():
    """Checked by hand: the vectors below as the last block's output (no blocks), a pooler
    that passes its input through, and the summary is [u; v; |u - v|; u * v] of the two
    segments' real tokens' means (padding left out), v zero without a segment B."""
    import keras

    from modeling import encoder as encoder_module
    x = np.array([[[1., 0.], [3., 0.], [0., 2.], [0., 4.], [9., 9.]],
                  [[2., 2.], [4., 0.], [7., 7.], [7., 7.], [7., 7.]]], np.float32)
    mask = np.array([[1, 1, 1, 1, 0], [1, 1, 0, 0, 0]], np.int32)
    seg = np.array([[0, 0, 1, 1, 1], [0, 0, 0, 0, 0]], np.int32)
    identity = keras.layers.Dense(8, use_bias=False, kernel_initializer="identity")
    out = encoder_module._forward(
        lambda ids, segments, training=None: x, [], None, identity,
        {"input_ids": mask, "input_mask": mask, "segment_ids": seg}, pooling="pair_mean")
    want = [[2, 0, 0, 3, 2, 3, 0, 0],  # A (1,0),(3,0): u (2,0); B (0,2),(0,4): v (0,3)
            [3, 1, 0, 0, 3, 1, 0, 0]]  # A (2,2),(4,0): u (3,1); no B: v (0,0)
    np.testing.assert_allclose(np.asarray(out["pooled_output"]), want, atol=1e-6)


def test_the_hugging_face_export_refuses_mean_pooling(tiny_config_dict, tmp_path):
    from modeling import huggingface
    model = modeling.BertClassifier(modeling.BertEncoder(modeling.BertConfig(
        **tiny_config_dict, pooling="mean")), 2)
    with pytest.raises(ValueError, match="pooling is 'mean'.*pools the \\[CLS\\] vector"):
        huggingface.hf_tensors(model)


WORDS = ["good", "bad", "the", "movie", "was", "a", "plot", "very"]


def _toy_task(folder, pooling):
    """A two-label task in the SST-2 layout, its vocabulary and a config with `pooling`."""
    rng = random.Random(0)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    data = folder / "data"
    data.mkdir()
    for split, n in (("train", 64), ("dev", 16)):
        rows = ["sentence\tlabel"]
        for _ in range(n):
            label = int(rng.random() < 0.5)
            words = [rng.choice(WORDS[2:]) for _ in range(rng.randint(2, 6))]
            words.insert(rng.randint(0, len(words)), "good" if label else "bad")
            rows.append(f"{' '.join(words)}\t{label}")
        (data / f"{split}.tsv").write_text("\n".join(rows) + "\n")
    cfg = {"vocab_size": len(vocab), "hidden_size": 16, "num_hidden_layers": 2,
           "num_attention_heads": 4, "intermediate_size": 24, "hidden_act": "gelu",
           "max_position_embeddings": 32, "type_vocab_size": 2, "pooling": pooling}
    (folder / "bert_config.json").write_text(json.dumps(cfg))
    return cfg, data


@pytest.mark.parametrize("pooling", ["mean", "pair_mean"])
def test_a_checkpoints_pooling_reaches_fine_tuning_and_export(pooling, tmp_path):
    """A pre-trained checkpoint whose bert_config.json says "mean" (or "pair_mean"):
    run_classifier.py fine-tunes it and exports a SavedModel (and model.tflite) whose
    answers are the NumPy forward pass of the fine-tuned weights with that pooling (and
    not with [CLS], whose pooler has the same shape as the mean's)."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops of the export)

    from tasks.classification.data import InputExample
    from tasks.classification.features import convert_examples
    cfg, data = _toy_task(tmp_path, pooling)
    weights = ref.random_google_weights(cfg, np.random.default_rng(0))
    checkpoint = write_tf1_checkpoint(weights, str(tmp_path / "bert_model.ckpt"))
    out, export = tmp_path / "out", tmp_path / "export"
    flags = {"task_name": "SST-2", "data_dir": data, "vocab_file": tmp_path / "vocab.txt",
             "bert_config_file": tmp_path / "bert_config.json",
             "init_checkpoint": checkpoint, "max_seq_length": 12, "train_batch_size": 16,
             "learning_rate": 1e-3, "num_train_epochs": 1, "output_dir": out,
             "export_dir": export, "save_checkpoints_steps": 1000}
    argv = [os.path.join(ROOT, "run_classifier.py"), "--do_train", "--do_eval"] + [
        f"--{name}={value}" for name, value in flags.items()]
    result = warm_processes.run(argv, env=dict(os.environ, PYTHONPATH=ROOT), timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]

    # The fine-tuned weights (the export's: best/ holds the one evaluated checkpoint).
    model = modeling.BertClassifier(modeling.BertEncoder(modeling.BertConfig(**cfg)), 2)
    modeling.load_checkpoint(model, str(out / "best" / "model.ckpt"))
    tuned = {name: variable.numpy().T if rule == TRANSPOSE else variable.numpy()
             for name, (variable, rule) in variable_map(model).items()}
    assert not np.allclose(tuned["bert/pooler/dense/kernel"],
                           weights["bert/pooler/dense/kernel"])  # it was fine-tuned
    texts = ["the movie was good", "a very bad plot was the plot", "good"]
    features = convert_examples([InputExample(str(i), t) for i, t in enumerate(texts)],
                                str(tmp_path / "vocab.txt"), True, 12)
    inputs = {name: features[name] for name in ("input_ids", "input_mask", "segment_ids")}

    def probabilities(pooling, weights=tuned):
        pooled = ref.encoder_forward(weights, dict(cfg, pooling=pooling),
                                     **inputs)["pooled_output"]
        return ref.softmax(pooled @ tuned["output_weights"].T + tuned["output_bias"])

    served = tf.saved_model.load(str(export)).signatures["serving_default"]
    got = served(text_a=tf.constant(texts))["probabilities"].numpy()
    np.testing.assert_allclose(got, probabilities(pooling), atol=1e-5)
    if pooling == "pair_mean":  # not the plain mean read by the kernel's first rows
        hidden = cfg["hidden_size"]
        kernel = tuned["bert/pooler/dense/kernel"]
        assert kernel.shape == (4 * hidden, hidden)
        other = probabilities("mean", dict(tuned, **{
            "bert/pooler/dense/kernel": kernel[:hidden]}))
    else:
        other = probabilities("cls")
    assert np.abs(got - other).max() > 1e-3
    # serving.load, as a web service calls it: LiteRT's model.tflite, from raw text.
    import serving
    predictor = serving.load(str(export), backend="tflite")
    assert "serving_packed" not in predictor._lite.signatures  # [CLS] only: rows unpacked
    lite = predictor(texts)["probabilities"]
    np.testing.assert_allclose(np.asarray(lite), probabilities(pooling), atol=1e-5)


def test_a_pooler_of_another_pooling_starts_afresh_unless_strict(tiny_config_dict, tmp_path):
    """A [CLS] checkpoint's pooler (hidden_size rows) cannot read "pair_mean"'s 4 *
    hidden_size features: fine-tuning (strict="encoder") loads everything else and leaves
    the pooler at its initial values; an exact load (strict=True) is a shape mismatch."""
    weights = ref.random_google_weights(tiny_config_dict, np.random.default_rng(5), heads=())
    prefix = write_tf1_checkpoint(weights, str(tmp_path / "bert_model.ckpt"))
    encoder = modeling.BertEncoder(modeling.BertConfig(**tiny_config_dict, pooling="pair_mean"))
    initial = encoder.pooler.kernel.numpy().copy()
    report = modeling.load_checkpoint(encoder, prefix, strict="encoder")
    assert sorted(report.not_filled) == ["bert/pooler/dense/bias", "bert/pooler/dense/kernel"]
    np.testing.assert_array_equal(encoder.pooler.kernel.numpy(), initial)
    loaded = {name: variable.numpy() for name, (variable, _) in variable_map(encoder).items()}
    np.testing.assert_array_equal(loaded["bert/embeddings/word_embeddings"],
                                  weights["bert/embeddings/word_embeddings"])
    with pytest.raises(modeling.CheckpointError, match="pooler/dense/kernel.*shape"):
        modeling.load_checkpoint(modeling.BertEncoder(modeling.BertConfig(
            **tiny_config_dict, pooling="pair_mean")), prefix, strict=True)
