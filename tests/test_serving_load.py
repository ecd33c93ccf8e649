"""`serving.load`: an export as a Python callable. The TF Lite fast path (Python
WordPiece and packing, `model.tflite`) answers as the SavedModel's raw-text signature
(in-graph tokenizer and packing): probabilities to 1e-5, labels equal, on English,
multilingual and long texts, single and pair tasks, truncation and windows, regression;
and every input form a user may pass."""

import os

import keras
import numpy as np
import pytest

import modeling
import serving
from serving.predictor import _columns
from tasks.classification.export import export_classification
from tests import text_generator
from tests.conftest import TINY_CONFIG
from text.tokenization import BasicTokenizer

pytest.importorskip("tensorflow_text")

ENGLISH = [
    "A gripping, beautifully shot film.", "The plot was dull and the acting worse!",
    "it 's a charming and often affecting journey .", "Not good. Not bad. Just... fine?",
    "unflinchingly bleak and desperate", "The movie's 2 hours felt like 20 minutes.",
]
MAX_SEQ = 24


@pytest.fixture(scope="module")
def texts():
    corpus = [t for t in text_generator.generate(100, seed=77) if isinstance(t, str)]
    return ENGLISH + corpus


@pytest.fixture(scope="module")
def exports(texts, tmp_path_factory):
    folder = tmp_path_factory.mktemp("serving_load")
    vocab = text_generator.covering_vocab(texts, [BasicTokenizer(True)])
    vocab_file = str(folder / "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    config = modeling.BertConfig(**dict(TINY_CONFIG, vocab_size=len(vocab),
                                        max_position_embeddings=64,
                                        initializer_range=0.5))  # outputs that vary
    keras.utils.set_random_seed(3)
    built = {}
    for name, labels, extra in (
            ("single", ["neg", "pos", "mixed"], dict(pair=False)),
            ("pair", ["entailment", "not_entailment"], dict(pair=True)),
            ("windows", ["neg", "pos"], dict(pair=False, long_document="windows",
                                             doc_stride=5)),
            ("regression", None, dict(pair=True, regression=True))):
        model = modeling.BertClassifier(config, 1 if labels is None else len(labels))
        # Larger output weights than the initializer's: probabilities far from uniform.
        for weight in model.classifier.weights:
            if len(weight.shape) == 2:
                weight.assign(np.random.default_rng(1).normal(0, 2, weight.shape))
        built[name] = export_classification(model, str(folder / name), vocab_file, True,
                                            MAX_SEQ, labels, **extra)
    return built


_LOADED = {}


def loaded(export_dir, backend):
    """One predictor per export and backend for the module (loading takes seconds)."""
    if (export_dir, backend) not in _LOADED:
        _LOADED[export_dir, backend] = serving.load(export_dir, backend=backend)
    return _LOADED[export_dir, backend]


def both(export_dir, inputs):
    return loaded(export_dir, "tflite")(inputs), loaded(export_dir, "saved_model")(inputs)


def assert_same(fast, saved):
    assert set(fast) == set(saved)
    for key in saved:
        if saved[key].dtype == object:
            assert list(fast[key]) == list(saved[key]), key
        elif saved[key].dtype.kind == "f":
            np.testing.assert_allclose(fast[key], saved[key], atol=1e-5, err_msg=key)
        else:
            np.testing.assert_array_equal(fast[key], saved[key], err_msg=key)
        assert fast[key].shape == saved[key].shape and fast[key].dtype == saved[key].dtype


def test_single_texts_answer_as_the_saved_model(exports, texts):
    fast, saved = both(exports["single"], texts)
    assert_same(fast, saved)
    assert len(set(saved["label"])) > 1  # the labels really vary
    # Each request on its own, as a server gets them (other shapes, other interpreters).
    for text in texts[:12]:
        assert_same(*both(exports["single"], [text]))


def test_pairs_answer_as_the_saved_model(exports, texts):
    pairs = list(zip(texts[:40], reversed(texts[:40]))) + [(texts[3], "")]
    assert_same(*both(exports["pair"], pairs))
    # A dict of columns, and a plain list (text_b empty: single sequences).
    columns = {"text_a": [a for a, _ in pairs], "text_b": [b for _, b in pairs]}
    assert_same(loaded(exports["pair"], "auto")(columns),
                loaded(exports["pair"], "saved_model")(pairs))
    assert_same(*both(exports["pair"], texts[:5]))


def test_long_texts_in_windows_and_regression(exports, texts):
    long_texts = [" ".join(texts[i:i + 6]) for i in range(0, 60, 6)] + ENGLISH[:2]
    fast, saved = both(exports["windows"], long_texts)
    assert_same(fast, saved)
    pairs = [(t, ENGLISH[i % len(ENGLISH)]) for i, t in enumerate(long_texts)]
    assert_same(*both(exports["regression"], pairs))


def test_auto_picks_tflite_for_small_requests(exports):
    predict = serving.load(exports["single"], tflite_max_batch=4)
    assert predict.backend_for(1) == "tflite" and predict.backend_for(5) == "saved_model"
    assert_same(predict(ENGLISH[:5]), predict(ENGLISH[:3] + ENGLISH[3:5]))
    assert predict._saved is not None  # the 5-row request loaded the SavedModel
    # A request of one string.
    assert predict(ENGLISH[0])["probabilities"].shape == (1, 3)


def test_saved_model_alone_without_a_fast_path(exports, tmp_path):
    import shutil
    folder = tmp_path / "no_tflite"
    shutil.copytree(exports["single"], folder)
    os.remove(folder / "model.tflite")
    predict = serving.load(str(folder))
    assert predict.backend_for(1) == "saved_model"
    assert_same(predict(ENGLISH), loaded(exports["single"], "tflite")(ENGLISH))
    with pytest.raises(ValueError, match="no TF Lite fast path"):
        serving.load(str(folder), backend="tflite")
    os.remove(folder / "serving.json")  # an export from before serving.json: still served
    assert serving.load(str(folder)).text_inputs == ["text_a"]


def test_clear_errors(exports, tmp_path):
    with pytest.raises(ValueError, match="not a SavedModel folder"):
        serving.load(str(tmp_path))
    with pytest.raises(ValueError, match="backend="):
        serving.load(exports["single"], backend="onnx")
    predict = loaded(exports["single"], "tflite")
    with pytest.raises(ValueError, match="takes 1"):
        predict([("a", "b")])
    with pytest.raises(ValueError, match="empty request"):
        predict([])
    with pytest.raises(ValueError, match="Unknown inputs"):
        predict({"text_c": ["x"]})


def test_request_forms():
    names = ["text_a", "text_b"]
    assert _columns("one", names) == {"text_a": ["one"], "text_b": [""]}
    assert _columns([("a", "b"), "c"], names) == {"text_a": ["a", "c"], "text_b": ["b", ""]}
    assert _columns({"text_a": ["x"]}, names) == {"text_a": ["x"], "text_b": [""]}
    with pytest.raises(ValueError, match="one value per request row"):
        _columns({"text_a": ["x", "y"], "text_b": ["z"]}, names)
