"""export_saved_model.py --task_type=encoder|preprocessor (the TF Hub interface, used as
TensorFlow's "Classify text with BERT" tutorial uses it) and --tflite (TF Lite of the ids
signatures, builtin ops only), from a Google TF1 checkpoint."""

import json
import os

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter  # LiteRT, as serving.load runs

from modeling.inputs import INPUT_NAMES
from tests import numpy_reference as ref
from tests import warm_processes
from tests.conftest import write_tf1_checkpoint
from text import packing
from text.tokenization import FullTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "movie", "was", "good", "bad",
         "very", "plot", "a", ".", "##s", "film", "it", "not"]
TEXTS = ["The movie was very good.", "a bad plot", "It was not good", "films"]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory, tiny_config_module):
    """A TF1 encoder checkpoint and a TF1 classifier checkpoint (encoder + output layer),
    with random weights, and their exports."""
    folder = tmp_path_factory.mktemp("hub")
    config = dict(tiny_config_module, vocab_size=len(VOCAB), hidden_dropout_prob=0.1)
    (folder / "bert_config.json").write_text(json.dumps(config))
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    rng = np.random.default_rng(11)
    weights = ref.random_google_weights(config, rng)
    write_tf1_checkpoint(weights, str(folder / "encoder.ckpt"))
    weights = dict(weights, output_weights=rng.normal(0, 0.5, (2, config["hidden_size"])).astype(
        np.float32), output_bias=np.array([0.1, -0.1], np.float32))
    write_tf1_checkpoint(weights, str(folder / "classifier.ckpt"))
    common = [f"--bert_config_file={folder / 'bert_config.json'}",
              f"--vocab_file={folder / 'vocab.txt'}", "--max_seq_length=16"]
    exports = {
        "encoder": ["--task_type=encoder", f"--init_checkpoint={folder / 'encoder.ckpt'}",
                    "--tflite"],
        "preprocessor": ["--task_type=preprocessor"],
        "classifier": ["--task_type=classification", "--labels=neg,pos",
                       f"--init_checkpoint={folder / 'classifier.ckpt'}", "--tflite_quantize"],
    }
    for name, flags in exports.items():
        result = warm_processes.run([os.path.join(ROOT, "export_saved_model.py")] +
                                    common + flags + [f"--export_dir={folder / name}"],
                                    cwd=ROOT, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
        assert result.returncode == 0, result.stderr[-2000:]
    return folder, config


@pytest.fixture(scope="module")
def tiny_config_module():
    from tests.conftest import TINY_CONFIG
    return dict(TINY_CONFIG)


def _packed(folder, texts, pairs=None):
    tokenizer = FullTokenizer(str(folder / "vocab.txt"))
    rows = [packing.pack(tokenizer, a, b, 16) for a, b in zip(texts, pairs or [None] * len(texts))]
    return {name: np.array([getattr(r, name) for r in rows], np.int32)
            for name in INPUT_NAMES}


def test_the_tutorials_model_trains_on_the_hub_exports(checkpoints):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (the preprocessor's ops)
    hub = pytest.importorskip("tensorflow_hub")
    tf_keras = pytest.importorskip("tf_keras")

    import modeling
    folder, config = checkpoints
    preprocessor = hub.KerasLayer(str(folder / "preprocessor"))
    encoder = hub.KerasLayer(str(folder / "encoder"), trainable=True)
    # The preprocessor gives what the Python tokenizer and packing give.
    inputs = preprocessor(tf.constant(TEXTS))
    want = _packed(folder, TEXTS)
    for hub_name, name in zip(("input_word_ids", "input_mask", "input_type_ids"),
                              INPUT_NAMES):
        np.testing.assert_array_equal(inputs[hub_name].numpy()[:, :16], want[name])
    # The encoder computes what BertEncoder computes on the same weights.
    ours = modeling.BertEncoder(modeling.BertConfig.from_dict(config))
    modeling.load_checkpoint(ours, str(folder / "encoder.ckpt"), strict=True)
    expected = ours(want, training=False)
    got = encoder(inputs, training=False)
    mask = want["input_mask"][..., None]
    np.testing.assert_allclose(got["sequence_output"].numpy()[:, :16] * mask,
                               expected["sequence_output"].numpy() * mask, atol=1e-5)
    # Only the real tokens are computed: the padded positions hold zeros, in training too.
    padding = inputs["input_mask"].numpy() == 0
    assert padding.sum() > 10
    for training in (False, True):
        out = encoder(inputs, training=training)
        for tensor in [out["sequence_output"]] + list(out["encoder_outputs"]):
            assert not np.any(tensor.numpy()[padding])
    np.testing.assert_allclose(got["pooled_output"].numpy(),
                               expected["pooled_output"].numpy(), atol=1e-5)
    assert len(got["encoder_outputs"]) == config["num_hidden_layers"]
    np.testing.assert_allclose(got["default"].numpy(), got["pooled_output"].numpy())
    # Pairs: tokenize, then bert_pack_inputs with a length chosen at call time.
    loaded = tf.saved_model.load(str(folder / "preprocessor"))
    segments = [loaded.tokenize(tf.constant(TEXTS)), loaded.tokenize(tf.constant(TEXTS[::-1]))]
    assert segments[0].ragged_rank == 2  # [batch, (words), (pieces)]
    pair = loaded.bert_pack_inputs(segments, seq_length=tf.constant(12))
    want = _packed(folder, TEXTS, TEXTS[::-1])
    np.testing.assert_array_equal(pair["input_word_ids"].numpy(),
                                  _packed_length(folder, TEXTS, TEXTS[::-1], 12))
    # The tutorial's classifier: strings -> preprocessor -> encoder -> dropout -> dense.
    text = tf_keras.layers.Input(shape=(), dtype=tf.string)
    net = encoder(preprocessor(text))["pooled_output"]
    net = tf_keras.layers.Dense(1)(tf_keras.layers.Dropout(0.1)(net))
    model = tf_keras.Model(text, net)
    model.compile(tf_keras.optimizers.Adam(1e-3),
                  tf_keras.losses.BinaryCrossentropy(from_logits=True))
    before = [v.numpy().copy() for v in encoder.trainable_variables]
    assert len(before) == len(ours.trainable_variables)
    model.fit(tf.constant(TEXTS * 4), tf.constant([1.0, 0.0, 0.0, 1.0] * 4), batch_size=4,
              epochs=1, verbose=0)
    changed = sum(not np.allclose(a, v.numpy()) for a, v in zip(before,
                                                                 encoder.trainable_variables))
    assert changed > len(before) // 2  # the encoder was fine-tuned, not frozen


def _packed_length(folder, texts, pairs, length):
    tokenizer = FullTokenizer(str(folder / "vocab.txt"))
    return np.array([packing.pack(tokenizer, a, b, length).input_ids
                     for a, b in zip(texts, pairs)], np.int32)


def test_tflite_answers_as_the_saved_model(checkpoints):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    folder, config = checkpoints
    for name, signature, outputs in (("classifier", "serving_ids", ["probabilities"]),
                                     ("encoder", "serving_default",
                                      ["pooled_output", "sequence_output"])):
        saved = tf.saved_model.load(str(folder / name)).signatures[signature]
        interpreter = Interpreter(model_path=str(folder / name / "model.tflite"))
        runner = interpreter.get_signature_runner(signature)
        names = ["input_ids", "input_mask", "segment_ids"] if name == "classifier" else \
            ["input_word_ids", "input_mask", "input_type_ids"]
        for texts in (TEXTS, TEXTS[:1], TEXTS[1:3]):  # batch and length change per request
            inputs = _packed(folder, texts)
            length = int(inputs["input_mask"].sum(1).max())
            request = {n: inputs[k][:, :length] for n, k in zip(names, INPUT_NAMES)}
            want = saved(**{k: tf.constant(v) for k, v in request.items()})
            got = runner(**request)
            # TF Lite computes the padded positions too; the SavedModel (zeros) does not.
            mask = request[names[1]][..., None] if name == "encoder" else 1
            for output in outputs:
                real = mask if output == "sequence_output" else 1
                np.testing.assert_allclose(got[output] * real, want[output].numpy() * real,
                                           atol=1e-4)
    # The int8 variant answers nearly alike (its size is measured on real weights in
    # bench/RESULTS.md: the converter leaves tensors under 1,024 values, all of this tiny
    # model's, in float).
    runner = Interpreter(model_path=str(folder / "classifier" / "model_int8.tflite")
                                 ).get_signature_runner("serving_ids")
    inputs = _packed(folder, TEXTS)
    got = runner(input_ids=inputs["input_ids"], input_mask=inputs["input_mask"],
                 segment_ids=inputs["segment_ids"])
    want = tf.saved_model.load(str(folder / "classifier")).signatures["serving_ids"](
        **{k: tf.constant(v) for k, v in inputs.items()})
    np.testing.assert_allclose(got["probabilities"], want["probabilities"].numpy(), atol=0.05)


def test_each_export_stores_every_weight_once(checkpoints):
    """The saved variables hold the model's weights once: as many float values as the
    Google checkpoint they came from (a Keras 3 model saved as a child object writes its
    weights a second time)."""
    import tensorflow as tf

    folder, _ = checkpoints
    for name, source in (("encoder", "encoder.ckpt"), ("classifier", "classifier.ckpt")):
        # The checkpoint's weights, without its Adam slots and pre-training heads.
        want = sum(int(np.prod(shape)) for key, shape in
                   tf.train.list_variables(str(folder / source))
                   if key.startswith(("bert/", "output_")) and "adam_" not in key)
        reader = tf.train.load_checkpoint(str(folder / name / "variables" / "variables"))
        dtypes = reader.get_variable_to_dtype_map()
        got = sum(int(np.prod(shape)) for key, shape in
                  reader.get_variable_to_shape_map().items() if dtypes[key] == tf.float32)
        assert got == want, name


def test_tflite_of_the_squad_and_tagging_exports(checkpoints, tmp_path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    import modeling
    from tasks.squad.export import export_squad
    from tasks.tagging.export import export_tagging

    folder, config = checkpoints
    bert_config = modeling.BertConfig.from_dict(config)
    labels = ["O", "B-PER", "I-PER"]
    inputs = _packed(folder, TEXTS)
    for name, model, export, extra, outputs in (
            ("squad", modeling.BertSpanLabeler(bert_config), export_squad, (8,),
             ("start_logits", "end_logits")),
            ("tagging", modeling.BertTokenClassifier(bert_config, 3), export_tagging,
             (labels,), ("probabilities", "label_id"))):
        modeling.load_checkpoint(model, str(folder / "encoder.ckpt"))  # random heads
        export_dir = export(model, str(tmp_path / name), str(folder / "vocab.txt"), True, 16,
                            *extra, tflite=True)
        want = tf.saved_model.load(export_dir).signatures["serving_ids"](
            **{k: tf.constant(v) for k, v in inputs.items()})
        got = Interpreter(model_path=os.path.join(export_dir, "model.tflite")
                                  ).get_signature_runner("serving_ids")(**inputs)
        # At the real positions: the SavedModel's tagging graph skips the padding (its
        # padded positions' outputs are the head on zeros), TF Lite's computes it.
        real = inputs["input_mask"].astype(bool)
        for output in outputs:
            np.testing.assert_allclose(got[output][real], want[output].numpy()[real],
                                       atol=1e-4)


def test_encoder_and_tflite_from_a_safetensors_file(checkpoints, tmp_path):
    """Google TF1 -> Hugging Face safetensors -> the TF Hub-style encoder with TF Lite:
    the same outputs as BertEncoder on the TF1 weights."""
    import tensorflow as tf

    import modeling
    folder, config = checkpoints
    ours = modeling.BertEncoder(modeling.BertConfig.from_dict(config))
    modeling.load_checkpoint(ours, str(folder / "encoder.ckpt"), strict=True)
    hf_dir = modeling.save_huggingface(ours, str(tmp_path / "hf"), str(folder / "vocab.txt"))
    export_dir = tmp_path / "encoder"
    result = warm_processes.run(
        [os.path.join(ROOT, "export_saved_model.py"), "--task_type=encoder",
         f"--bert_config_file={folder / 'bert_config.json'}", "--tflite",
         f"--init_checkpoint={os.path.join(hf_dir, 'model.safetensors')}",
         f"--vocab_file={folder / 'vocab.txt'}", f"--export_dir={export_dir}"],
        cwd=ROOT, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, result.stderr[-2000:]
    inputs = _packed(folder, TEXTS)
    want = ours(inputs, training=False)
    hub_inputs = dict(zip(("input_word_ids", "input_mask", "input_type_ids"),
                          (inputs[name] for name in INPUT_NAMES)))
    got = tf.saved_model.load(str(export_dir))(hub_inputs, training=False)
    lite = Interpreter(model_path=str(export_dir / "model.tflite")).get_signature_runner(
        "serving_default")(**hub_inputs)
    mask = inputs["input_mask"][..., None]
    for outputs in (got, lite):
        np.testing.assert_allclose(np.asarray(outputs["pooled_output"]),
                                   want["pooled_output"].numpy(), atol=1e-4)
        np.testing.assert_allclose(np.asarray(outputs["sequence_output"]) * mask,
                                   want["sequence_output"].numpy() * mask, atol=1e-4)
