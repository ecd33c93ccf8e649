"""`serving.load` of the tagging, multiple-choice and SQuAD exports: their fast paths
(Python WordPiece, packing and answers around `model.tflite` on LiteRT, or around the
SavedModel's `serving_ids`) answer as the export's raw-text signature does, on varied
text: English, other scripts, control characters, empty strings, texts longer than
`max_seq_length`."""

import keras
import numpy as np
import pytest

import modeling
import serving
from tests import text_generator
from tests.conftest import TINY_CONFIG
from tests.serving_checks import assert_same, text_signature
from text.tokenization import BasicTokenizer

pytest.importorskip("tensorflow_text")

ENGLISH = [
    "Angela Merkel met Emmanuel Macron in Paris on Tuesday.",
    "The U.S.A. and the E.U. signed it; Dr. Ng (of NASA) did not!",
    "naïve café owners in Zürich, Straße 5", "東京 and 서울 are cities", "",
    "   spaces   and\ttabs\nand a control\x07 character",
]
MAX_SEQ = 32
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]


@pytest.fixture(scope="module")
def texts():
    corpus = [t for t in text_generator.generate(80, seed=11) if isinstance(t, str)]
    return ENGLISH + corpus


@pytest.fixture(scope="module")
def setup(texts, tmp_path_factory):
    folder = tmp_path_factory.mktemp("serving_tasks")
    vocab = text_generator.covering_vocab(texts, [BasicTokenizer(True)])
    vocab_file = str(folder / "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    config = modeling.BertConfig(**dict(TINY_CONFIG, vocab_size=len(vocab),
                                        max_position_embeddings=64, initializer_range=0.5))
    return folder, vocab_file, config


def _large_heads(model):
    """Output weights far from the initializer's: answers that vary with the input."""
    rng = np.random.default_rng(1)
    for layer in model.layers:
        if layer is not model.encoder:
            for weight in layer.weights:
                if len(weight.shape) == 2:
                    weight.assign(rng.normal(0, 2, weight.shape))


_LOADED = {}


def answers(export_dir, inputs):
    """The fast path on TF Lite and on the SavedModel's ids signature (equal), and the
    first's answers."""
    for backend in ("tflite", "saved_model"):
        if (export_dir, backend) not in _LOADED:
            _LOADED[export_dir, backend] = serving.load(export_dir, backend=backend)
    lite = _LOADED[export_dir, "tflite"](inputs)
    assert_same(lite, _LOADED[export_dir, "saved_model"](inputs))
    return lite


def assert_same_two_rows_a_call(export_dir, inputs, got, packed=False):
    """With a budget of two of its widest rows' positions a TF Lite call (`max_positions`),
    the request runs in more calls, none over the budget, each row at the width its group
    (or its packed rows) had, with the answers `got`. `packed`: the rows packed
    (`serving_packed`), else in groups of similar length."""
    per_row = []
    runner, key = ("_lite_packed", "input_ids") if packed else ("_lite", "input_mask")

    def one_call(model_inputs):
        per_row.append(model_inputs[key][0].size)
        return whole(model_inputs)

    first = serving.load(export_dir, backend="tflite", pack_rows=packed)
    whole = getattr(first, runner)
    setattr(first, runner, one_call)
    first(inputs)
    budget = 2 * max(per_row)
    chunked = serving.load(export_dir, backend="tflite", max_positions=budget,
                           pack_rows=packed)
    whole, calls = getattr(chunked, runner), []
    setattr(chunked, runner, lambda model_inputs: calls.append(model_inputs[key].shape)
            or whole(model_inputs))
    assert_same(chunked(inputs), got)
    assert len(calls) > len(per_row) and all(np.prod(c) <= budget for c in calls), calls


def test_tagging_answers_as_its_raw_text_signature(setup, texts):
    from tasks.tagging.export import export_tagging
    folder, vocab_file, config = setup
    keras.utils.set_random_seed(4)
    model = modeling.BertTokenClassifier(config, len(TAGS))
    _large_heads(model)
    export_dir = export_tagging(model, str(folder / "tagging"), vocab_file, True, MAX_SEQ,
                                TAGS)
    long_texts = [" ".join(texts[i:i + 5]) for i in range(0, 40, 5)]  # past MAX_SEQ
    for batch in (texts, long_texts, ENGLISH[:1], [""], ["a"] * 3):
        got = answers(export_dir, batch)
        assert_same(got, text_signature(export_dir)(batch))
    for packed in (False, True):
        assert_same_two_rows_a_call(export_dir, long_texts, answers(export_dir, long_texts),
                                    packed)
    # The sentences above ran packed, several to a row (the answers checked above).
    packing = serving.load(export_dir, backend="tflite")
    rows, run = [], packing._lite_packed
    packing._lite_packed = lambda inputs: rows.append(len(inputs["input_ids"])) or run(inputs)
    assert_same(packing(texts), answers(export_dir, texts))
    assert 0 < sum(rows) < len(texts) / 2, rows
    assert (got := answers(export_dir, texts))["entity_type"].size  # entities were found
    assert set(got["entity_type"].ravel()) - {b""} <= {b"PER", b"LOC", b"ORG"}
    for row, text in enumerate(texts):  # offsets are character offsets into the text
        arrays = [(kind.decode(), entity.decode(), start, end) for kind, entity, start, end
                  in zip(*(got[k][row] for k in ("entity_type", "entity_text",
                                                   "entity_start", "entity_end"))) if kind]
        for kind, entity, start, end in arrays:
            assert text[start:end] == entity
        # For people: each text's entities, the same as the padded arrays' (BIO tags).
        assert [(e["label"], e["text"], e["start"], e["end"])
                for e in got["entities"][row]] == arrays


def test_tagging_entities_merge_words_as_conlleval_reads_the_tags():
    """Hand-checked: words tagged B-PER I-PER O B-LOC make two entities with their
    character offsets; I-LOC after O starts one (IOB1); B-PER after B-PER is a new one."""
    from tasks.tagging.fast_path import _entities
    text = "Jim  Henson met  Paris folk"
    words = [("Jim", 0, 3), ("Henson", 5, 11), ("met", 12, 15), ("Paris", 17, 22),
             ("folk", 23, 27)]
    assert _entities(text, words, ["B-PER", "I-PER", "O", "B-LOC", "O"]) == [
        {"label": "PER", "text": "Jim  Henson", "start": 0, "end": 11},
        {"label": "LOC", "text": "Paris", "start": 17, "end": 22}]
    assert _entities(text, words, ["O", "O", "O", "I-LOC", "I-LOC"]) == [
        {"label": "LOC", "text": "Paris folk", "start": 17, "end": 27}]
    assert [e["text"] for e in _entities(text, words, ["B-PER", "B-PER", "O", "O", "O"])] \
        == ["Jim", "Henson"]


def test_multiple_choice_answers_as_its_raw_text_signature(setup, texts):
    from tasks.multiple_choice.export import export_multiple_choice
    from tasks.multiple_choice.model import BertMultipleChoice
    folder, vocab_file, config = setup
    keras.utils.set_random_seed(5)
    model = BertMultipleChoice(config)
    model({"input_ids": np.zeros((1, 2, 4), np.int32),
           "input_mask": np.ones((1, 2, 4), np.int32),
           "segment_ids": np.zeros((1, 2, 4), np.int32)})
    _large_heads(model)
    export_dir = export_multiple_choice(model, str(folder / "mc"), vocab_file, True, MAX_SEQ)
    rows = [(texts[i], texts[i + 1] if i % 3 else "", texts[i + 2:i + 6])
            for i in range(0, 60, 4)]
    got = answers(export_dir, rows)
    assert_same(got, text_signature(export_dir)(rows))
    assert len(set(got["label_id"])) > 1
    assert_same_two_rows_a_call(export_dir, rows, got)
    # The answers above came from packed rows (every choice a sequence); with a budget of
    # four packed rows a call, whole contexts a call, each call within it.
    whole = serving.load(export_dir, backend="tflite", max_positions=None)
    widths, run = [], whole._lite_packed
    whole._lite_packed = lambda inputs: widths.append(inputs["input_ids"].shape) or run(inputs)
    whole(rows)
    assert len(widths) == 1 and widths[0][0] < 4 * len(rows)  # fewer rows than choices
    budget = 4 * widths[0][1]
    chunked = serving.load(export_dir, backend="tflite", max_positions=budget)
    calls, run = [], chunked._lite_packed
    chunked._lite_packed = lambda inputs: calls.append(
        (inputs["input_ids"].shape, inputs["cls_positions"].shape)) or run(inputs)
    assert_same(chunked(rows), got)
    assert len(calls) > 1 and sum(cls[0] for _, cls in calls) == len(rows)
    assert all(cls[1] == 4 and (np.prod(ids) <= budget or cls[0] == 1) for ids, cls in calls)
    with pytest.raises(ValueError, match="the same number"):
        answers(export_dir, [(texts[0], "", ["a", "b"]), (texts[1], "", ["c"])])


def test_squad_answers_in_windows_with_the_originals_post_processing(setup, texts):
    import tensorflow as tf

    from tasks.squad.export import export_squad
    from tasks.squad.fast_path import SquadFastPath
    folder, vocab_file, config = setup
    keras.utils.set_random_seed(6)
    model = modeling.BertSpanLabeler(config)
    _large_heads(model)
    export_dir = export_squad(model, str(folder / "squad"), vocab_file, True, MAX_SEQ,
                              max_query_length=8, doc_stride=6, max_answer_length=5)
    contexts = [" ".join(texts[i:i + 3]) for i in range(6, 46, 4)]
    rows = [(texts[i], context) for i, context in enumerate(contexts)]
    got = answers(export_dir, rows)
    assert set(got) == {"answer", "probability", "start_logit", "end_logit"}
    assert got["answer"].shape == (len(rows),) and got["answer"].dtype == object
    # The answers are spans of the contexts (as the original projects them back).
    for answer, (_, context) in zip(got["answer"], rows):
        text = answer.decode("utf-8")
        assert text == "empty" or BasicTokenizer(True).tokenize(text)
    assert_same_two_rows_a_call(export_dir, rows, got)
    # Where the question and context fit one window, the fast path's logits are the
    # raw-text signature's at every real position.
    predict = _LOADED[export_dir, "tflite"]
    short = [(q, c[:20]) for q, c in rows]
    _, (_, features) = predict.fast_path.prepare(
        {"question": [q for q, _ in short], "context": [c for _, c in short]})
    windows = np.bincount([f.example_index for f in features], minlength=len(short))
    short = [row for row, count in zip(short, windows) if count == 1]
    assert len(short) >= 5
    inputs, _ = predict.fast_path.prepare(
        {"question": [q for q, _ in short], "context": [c for _, c in short]})
    lite = predict._lite(inputs)
    saved = text_signature(export_dir)(short)
    mask = inputs["input_mask"].astype(bool)
    for key in ("start_logits", "end_logits"):
        np.testing.assert_allclose(lite[key][mask], saved[key][:, :mask.shape[1]][mask],
                                   atol=1e-4)
    assert isinstance(predict.fast_path, SquadFastPath) and tf is not None


def test_squad_v2_null_answers(setup, texts):
    from tasks.squad.export import export_squad
    folder, vocab_file, config = setup
    keras.utils.set_random_seed(7)
    model = modeling.BertSpanLabeler(config)
    _large_heads(model)
    rows = [(texts[i], " ".join(texts[i + 1:i + 3])) for i in range(0, 40, 2)]
    for threshold in (-1e9, 1e9):  # null answer always / never
        export_dir = export_squad(model, str(folder / f"squad2_{threshold}"), vocab_file,
                                  True, MAX_SEQ, max_query_length=8,
                                  version_2_with_negative=True,
                                  null_score_diff_threshold=threshold)
        got = answers(export_dir, rows)
        assert got["null_odds"].shape == (len(rows),)
        if threshold < 0:
            assert all(a == b"" for a in got["answer"])
        else:  # the best span, unless no span of the passage made the n-best (as the
            # original, null odds 0 then)
            assert sum(a != b"" for a in got["answer"]) >= len(rows) // 2
            assert all(a != b"" or odds == 0 for a, odds in zip(got["answer"],
                                                               got["null_odds"]))
