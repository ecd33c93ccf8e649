"""`serving.load`: an export as a Python callable. The TF Lite fast path (Python
WordPiece and packing, `model.tflite`) answers as the SavedModel's raw-text signature
(in-graph tokenizer and packing): probabilities to 1e-5, labels equal, on English,
multilingual and long texts, single and pair tasks, truncation and windows, regression;
and every input form a user may pass."""

import os
from pathlib import Path

import keras
import numpy as np
import pytest

import modeling
import serving
from serving.predictor import _columns
from tasks.classification.export import export_classification
from tests import text_generator
from tests.conftest import TINY_CONFIG
from tests.serving_checks import assert_same, text_signature
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
    """The fast path on TF Lite, and the raw-text signature; the fast path on the
    SavedModel's ids signature is checked against the second on the way."""
    saved = text_signature(export_dir)(inputs)
    assert_same(loaded(export_dir, "saved_model")(inputs), saved)
    return loaded(export_dir, "tflite")(inputs), saved


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
    assert_same(loaded(exports["pair"], "auto")(columns), text_signature(exports["pair"])(pairs))
    assert_same(*both(exports["pair"], texts[:5]))


def test_long_texts_in_windows_and_regression(exports, texts):
    long_texts = [" ".join(texts[i:i + 6]) for i in range(0, 60, 6)] + ENGLISH[:2]
    fast, saved = both(exports["windows"], long_texts)
    assert_same(fast, saved)
    pairs = [(t, ENGLISH[i % len(ENGLISH)]) for i, t in enumerate(long_texts)]
    assert_same(*both(exports["regression"], pairs))


def test_rows_of_a_request_run_in_groups_of_similar_length(exports, texts):
    """On TF Lite a request's rows are sorted by length and run in groups, each padded to
    its own longest; the answers are those of one call, and of the raw-text signature
    (rows not packed, as for an export whose model.tflite has no `serving_packed`)."""
    predict = serving.load(exports["windows"], backend="tflite", pack_rows=False)
    widths = []
    run = predict._lite

    def recording(inputs):
        widths.append(inputs["input_ids"].shape)
        return run(inputs)

    predict._lite = recording
    batch = ENGLISH + [" ".join(texts[i:i + 6]) for i in range(0, 30, 6)] + texts[6:30]
    got = predict(batch)
    assert len(widths) > 1 and len({w[1] for w in widths}) > 1
    assert sum(w[0] for w in widths) == len(predict.fast_path.prepare(
        {"text_a": batch})[1][0])  # every window of every row, once
    assert_same(got, serving.load(exports["windows"], backend="tflite",
                                  group_overhead=None)(batch))
    assert_same(got, text_signature(exports["windows"])(batch))


def test_short_texts_share_packed_rows_and_answer_as_alone(exports, texts):
    """On TF Lite a request's short texts are packed side by side into shared rows
    (`serving_packed`): fewer rows and positions than a row each, every call's rows as
    wide; the answers those of the raw-text signature, and of each text asked alone."""
    predict = serving.load(exports["pair"], backend="tflite")
    shapes = []
    run = predict._lite_packed

    def recording(inputs):
        shapes.append(inputs["input_ids"].shape)
        assert sorted(inputs) == ["cls_positions", "input_ids", "position_ids",
                                  "segment_ids", "sequence_ids"]
        return run(inputs)

    predict._lite_packed = recording
    pairs = list(zip(texts[:30], texts[30:60]))
    got = predict(pairs)
    inputs, _ = predict.fast_path.prepare(_columns(pairs, predict.text_inputs))
    assert shapes and sum(rows for rows, _ in shapes) < len(pairs)
    assert len({width for _, width in shapes}) == 1
    assert sum(r * w for r, w in shapes) < inputs["input_ids"].size
    assert_same(got, text_signature(exports["pair"])(pairs))
    calls = len(shapes)
    alone = [predict([pair]) for pair in pairs[:8]]
    assert len(shapes) == calls  # a one-row request runs unpacked
    for i, answer in enumerate(alone):
        assert_same({k: v[i:i + 1] for k, v in got.items()}, answer)


def test_int8_packed_rows_read_the_position_table_as_serving_ids_does(texts, tmp_path):
    """int8 (`model_int8.tflite`): a sequence alone in a packed row answers as through
    `serving_ids`, to float rounding (the position table, sliced to the row before its
    gather, stays out of the int8 quantization, as the slice alone does: gathered from
    the whole table it was quantized and answers moved by about 1e-2); packed several to
    a row, within int8's rounding of float sums taken in another order."""
    from ai_edge_litert.interpreter import Interpreter
    vocab = text_generator.covering_vocab(texts, [BasicTokenizer(True)])
    vocab_file = str(tmp_path / "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    # Tables and kernels of 2,048+ values: quantized (the converter leaves under 1,024).
    config = modeling.BertConfig(**dict(TINY_CONFIG, vocab_size=len(vocab), hidden_size=32,
                                        intermediate_size=64, max_position_embeddings=64,
                                        initializer_range=0.5))
    keras.utils.set_random_seed(5)
    export = export_classification(modeling.BertClassifier(config, 2), str(tmp_path / "m"),
                                   vocab_file, True, MAX_SEQ, ["a", "b"],
                                   tflite_quantize=True)
    interpreter = Interpreter(model_path=os.path.join(export, "model_int8.tflite"))
    ids = interpreter.get_signature_runner("serving_ids")
    packed = interpreter.get_signature_runner("serving_packed")
    predict = serving.load(export, precision="int8")
    inputs, _ = predict.fast_path.prepare(_columns(texts[:6], predict.text_inputs))
    for row, length in enumerate(inputs["input_mask"].sum(1)):
        one = {name: value[row:row + 1, :length] for name, value in inputs.items()}
        want = ids(**one)["probabilities"]
        got = packed(input_ids=one["input_ids"], segment_ids=one["segment_ids"],
                     position_ids=np.arange(length, dtype=np.int32)[None],
                     sequence_ids=one["input_mask"],
                     cls_positions=np.zeros([1], np.int32))["probabilities"]
        np.testing.assert_allclose(got, want, atol=1e-6)  # the quantized table: 0.017 off
    alone = np.concatenate([predict([t])["probabilities"] for t in texts[:12]])
    np.testing.assert_allclose(predict(texts[:12])["probabilities"], alone, atol=1e-3)


def test_the_saved_model_skips_padding_and_tflite_computes_it(exports):
    """The SavedModel's ids graph runs the dense layers on the real tokens (found by a
    `Where` over the mask, gathered back for attention); model.tflite, converted from a
    padded trace, has no `Where` (TF Lite cannot accelerate a data-dependent token
    count)."""
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter
    signature = tf.saved_model.load(exports["single"]).signatures["serving_ids"]
    graph = signature.graph.as_graph_def()
    ops = {node.op for node in graph.node} | {
        node.op for function in graph.library.function for node in function.node_def}
    assert "Where" in ops and "GatherV2" in ops
    lite = Interpreter(model_path=os.path.join(exports["single"], "model.tflite"))
    lite_ops = {op["op_name"] for op in lite._get_ops_details()}
    assert "FULLY_CONNECTED" in lite_ops and not any(
        "SCATTER" in op or "WHERE" in op for op in lite_ops)


def test_auto_picks_tflite_for_small_requests(exports):
    predict = serving.load(exports["single"], tflite_max_batch=4)
    assert predict.backend_for(1) == "tflite" and predict.backend_for(5) == "saved_model"
    assert not predict._ids_model.loaded
    assert_same(predict(ENGLISH[:5]), predict(ENGLISH[:3] + ENGLISH[3:5]))
    assert predict._ids_model.loaded  # the 5-row request loaded the SavedModel
    # A request of one string.
    assert predict(ENGLISH[0])["probabilities"].shape == (1, 3)
    # By default packed rows run on TF Lite at any size; groups up to 32 rows.
    assert serving.load(exports["single"]).backend_for(10_000) == "tflite"
    unpacked = serving.load(exports["single"], pack_rows=False)
    assert unpacked.backend_for(32) == "tflite" and unpacked.backend_for(33) == "saved_model"


def test_the_export_names_its_fast_path_and_older_exports_still_find_theirs(exports,
                                                                            tmp_path):
    """serving.json names the class that answers from raw text ("module:Class"): serving
    imports it by that name, knowing no task. An export from before that name was
    written (its task's name alone) finds it in its task's package."""
    import json
    import shutil

    from tasks.classification.fast_path import ClassificationFastPath
    config = json.loads((Path(exports["single"]) / "serving.json").read_text())
    assert config["fast_path"] == "tasks.classification.fast_path:ClassificationFastPath"
    folder = tmp_path / "older"
    shutil.copytree(exports["single"], folder)
    del config["fast_path"]
    (folder / "serving.json").write_text(json.dumps(config))
    older = serving.load(str(folder), backend="tflite")
    assert isinstance(older.fast_path, ClassificationFastPath)
    assert_same(older(ENGLISH), loaded(exports["single"], "tflite")(ENGLISH))
    # A fast path this Python cannot import (a clone without the task): refused in one
    # line naming the file and the class, never answered in the raw signature's format.
    for spec, match in (("tasks.sentiment.fast_path:SentimentFastPath", "cannot import"),
                        ("tasks.classification.fast_path:Gone", "no single fast path")):
        (folder / "serving.json").write_text(json.dumps(dict(config, fast_path=spec)))
        with pytest.raises(ValueError, match=match) as refused:
            serving.load(str(folder))
        assert "serving.json" in str(refused.value) and spec in str(refused.value)


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
    old = serving.load(str(folder))  # by its raw-text signature
    assert old.text_inputs == ["text_a"] and old.fast_path is None
    assert_same(old(ENGLISH), loaded(exports["single"], "tflite")(ENGLISH))


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


def _requests(texts, count, seed):
    """Requests of 1-8 texts of varied lengths (so, varied shapes)."""
    rng = np.random.default_rng(seed)
    return [[texts[i] for i in rng.choice(len(texts), rng.integers(1, 9))]
            for _ in range(count)]


def _shared_by_threads(predict, requests, threads):
    """Each request answered by `predict` from `threads` threads at once; returns the
    answers in request order and any exceptions."""
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(predict, request) for request in requests]
        answers, errors = [], []
        for future in futures:
            try:
                answers.append(future.result())
            except Exception as err:  # noqa: BLE001  (counted, then failed on)
                answers.append(None)
                errors.append(err)
    return answers, errors


@pytest.mark.parametrize("backend", ["tflite", "saved_model"])
def test_threads_sharing_one_predictor_get_their_own_answers(exports, texts, backend):
    """8 threads share one predictor; every answer equals the same request made alone:
    no exception, no other request's probabilities."""
    predict = serving.load(exports["windows"], backend=backend)
    requests = _requests(texts, 160, seed=5)
    alone = [predict(request) for request in requests]
    answers, errors = _shared_by_threads(predict, requests, threads=8)
    assert not errors, errors[:3]
    for got, want in zip(answers, alone):
        assert list(got["label"]) == list(want["label"])
        np.testing.assert_allclose(got["probabilities"], want["probabilities"], atol=1e-5)


def test_a_few_thousand_calls_from_threads(exports, texts):
    predict = serving.load(exports["pair"], backend="tflite", max_interpreters=3)
    requests = [[(a, b)] for a, b in zip(texts * 30, reversed(texts * 30))][:2400]
    singles = {}
    for request in requests:
        singles.setdefault(request[0], None)
    alone = {pair: predict([pair])["probabilities"] for pair in singles}
    answers, errors = _shared_by_threads(predict, requests, threads=8)
    assert not errors, errors[:3]
    for request, got in zip(requests, answers):
        np.testing.assert_allclose(got["probabilities"][0], alone[request[0]][0], atol=1e-5)
    assert predict._lite.made <= 3


def test_requests_in_flight_together_get_interpreters_of_their_own(exports, texts,
                                                                   monkeypatch):
    """By default a lone request runs on one interpreter with every core, and requests in
    flight together each on a one-thread interpreter (two callers on two cores must not
    be slower than one): the same answers either way."""
    from serving import runners
    monkeypatch.setattr(runners, "cores", lambda: 2)
    predict = serving.load(exports["pair"], backend="tflite")
    wide, narrow = predict._lite.pools
    requests = [[(a, b)] for a, b in zip(texts * 10, reversed(texts * 10))][:200]
    alone = [predict(r)["probabilities"] for r in requests[:20]]
    assert (wide.made, narrow.made) == (1, 0)  # one at a time: the wide one only
    answers, errors = _shared_by_threads(predict, requests, threads=4)
    assert not errors, errors[:3]
    assert 1 <= narrow.made <= 2 and wide.made == 1
    for got, want in zip(answers[:20], alone):
        np.testing.assert_allclose(got["probabilities"], want, atol=1e-5)


def test_interpreter_pool_lends_each_item_to_one_caller_at_a_time():
    import threading
    import time

    from serving.runners import InterpreterPool
    made, holders, overlap = [], {}, []
    lock = threading.Lock()
    pool = InterpreterPool(lambda: made.append(object()) or made[-1], size=2)

    def work():
        for _ in range(50):
            with pool.checkout() as item:
                with lock:
                    overlap.append(holders.get(id(item)))
                    holders[id(item)] = threading.get_ident()
                time.sleep(0.0005)
                with lock:
                    del holders[id(item)]

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 2 and all(holder is None for holder in overlap)
