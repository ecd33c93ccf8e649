"""SQuAD: reading and its counts, answer-span refinement, windows and max context,
get_final_text, the official metrics against hand-computed values, and run_squad.py
learning a synthetic extractive task."""

import json
import os
import random

import pytest

from tasks.squad import data as squad
from tasks.squad.metrics import evaluate_v1, evaluate_v2
from tasks.squad.predictions import get_final_text
from tests import warm_processes
from text.tokenization import FullTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)


def _tokenizer(tmp_path, words):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words) + "\n")
    return FullTokenizer(str(vocab), do_lower_case=True)


def _write(path, data):
    path.write_text(json.dumps({"version": "1.1", "data": data}))
    return str(path)


def test_reading_counts_what_it_skips(tmp_path):
    context = "Born in Ulm (1879-1955), Einstein   moved."
    data = [{"title": "t", "paragraphs": [
        {"context": context, "qas": [
            {"id": "1", "question": "Where?", "answers": [{"text": "Ulm", "answer_start": 8}]},
            {"id": "2", "question": "When?", "answers": [{"text": "1879", "answer_start": 12}]},
            {"id": "3", "question": "Bad?", "answers": [{"text": "Ulm", "answer_start": 30}]},
            {"id": "4", "answers": []}]},
        {"qas": [{"id": "5", "question": "no context"}]},
        {"context": "", "qas": [{"id": "6", "question": "empty", "answers": []}]}]}]
    path = _write(tmp_path / "train.json", data)
    examples, counts = squad.read_squad(path, is_training=True)
    assert [e.qas_id for e in examples] == ["1", "2"]
    assert examples[0].doc_tokens == ["Born", "in", "Ulm", "(1879-1955),", "Einstein",
                                      "moved."]
    assert (examples[0].start_position, examples[0].end_position) == (2, 2)
    assert (examples[1].start_position, examples[1].end_position) == (3, 3)
    assert counts == {"questions": 6, "skipped_malformed": 2, "skipped_answer_mismatch": 1,
                      "skipped_not_one_answer": 1, "empty_contexts": 1}
    bad = tmp_path / "bad.json"
    bad.write_text('{"data": [')
    with pytest.raises(squad.SquadError, match=r"bad.json: not valid JSON \(line 1"):
        squad.read_squad(str(bad), is_training=False)


def test_training_on_a_file_with_several_answers_per_question(tmp_path):
    """The original trains on questions with exactly one answer; a dev-style file (several
    per question) is refused with what to do, or trained on its first answers on request."""
    context = "Born in Ulm in 1879, Einstein moved to Bern."
    qas = [{"id": "1", "question": "Where?", "answers": [
               {"text": "Ulm", "answer_start": 8}, {"text": "in Ulm", "answer_start": 5}]},
           {"id": "2", "question": "To?", "answers": [
               {"text": "Bern", "answer_start": 39}, {"text": "Bern.", "answer_start": 39}]}]
    path = _write(tmp_path / "dev.json", [{"paragraphs": [{"context": context, "qas": qas}]}])
    with pytest.raises(squad.SquadError, match=r"dev.json: no usable question .*exactly one "
                       r"answer.*2 of the 2 have none or several.*--train_on_first_answer"):
        squad.read_squad(path, is_training=True)
    examples, counts = squad.read_squad(path, is_training=True, first_answer=True)
    assert [(e.orig_answer_text, e.start_position, e.end_position) for e in examples] == [
        ("Ulm", 2, 2), ("Bern", 8, 8)]  # words: Born in Ulm in 1879, Einstein moved to Bern.
    assert counts["skipped_not_one_answer"] == 0


def test_answer_span_is_refined_inside_the_word(tmp_path):
    tokenizer = _tokenizer(tmp_path, ["born", "in", "ulm", "(", ")", "-", ",", "1879",
                                      "1955", "when", "?"])
    example = squad.SquadExample("q", "when ?", ["Born", "in", "Ulm", "(1879-1955),"],
                                 "1879", 3, 3)
    feature = squad.convert_examples([example], tokenizer, 32, 8, 8, is_training=True)[0]
    # [CLS] when ? [SEP] born in ulm ( 1879 - 1955 ) , [SEP]: "1879" alone, not the word.
    assert feature.tokens[feature.start_position:feature.end_position + 1] == ["1879"]
    assert feature.token_to_orig_map[feature.start_position] == 3


def test_windows_and_max_context(tmp_path):
    words = [f"w{i}" for i in range(20)]
    tokenizer = _tokenizer(tmp_path, words + ["q"])
    example = squad.SquadExample("q", "q", words)
    features = squad.convert_examples([example], tokenizer, 12, 3, 4, is_training=False)
    # 12 - 1 query piece - 3 = 8 document pieces per window, windows start 3 apart.
    starts = [f.token_to_orig_map[3] for f in features]
    assert starts == [0, 3, 6, 9, 12]
    # Word 7 is in windows 0 (3 right context... positions 0-7), 1 (3-10) and 2 (6-13):
    # context min(7-0, 0)=0, min(4, 3)=3, min(1, 6)=1 -> window 1 owns it.
    owners = [i for i, f in enumerate(features) for pos, word in f.token_to_orig_map.items()
              if word == 7 and f.token_is_max_context[pos]]
    assert owners == [1]
    # Every document piece is owned by exactly one window.
    owned = sorted(word for f in features for pos, word in f.token_to_orig_map.items()
                   if f.token_is_max_context[pos])
    assert owned == list(range(20))


def test_get_final_text():
    assert get_final_text("steve smith", "Steve Smith's", True) == "Steve Smith"
    assert get_final_text("zurich", "Zürich,", True) == "Zürich"
    assert get_final_text("1879", "(1879-1955),", True) == "1879"
    assert get_final_text("bonn", "Zürich,", True) == "Zürich,"  # no alignment: original


def test_official_metrics_by_hand():
    dataset = [{"paragraphs": [{"qas": [
        {"id": "a", "answers": [{"text": "Eiffel Tower"}, {"text": "the tower"}]},
        {"id": "b", "answers": [{"text": "Paris, France"}]},
        {"id": "c", "answers": [{"text": "1889"}]}]}]}]
    predictions = {"a": "The Eiffel Tower!", "b": "France"}
    r = evaluate_v1(dataset, predictions)
    # a: exact after normalisation (article, punctuation) -> EM 1, F1 1.
    # b: F1 = 2 * (1/1 * 1/2) / (1 + 1/2) = 2/3, EM 0. c: unanswered -> 0.
    assert r["exact_match"] == pytest.approx(100 / 3)
    assert r["f1"] == pytest.approx(100 * (1 + 2 / 3) / 3)
    v2 = [{"paragraphs": [{"qas": [
        {"id": "a", "answers": [{"text": "Eiffel Tower"}]},
        {"id": "n1", "answers": []}, {"id": "n2", "answers": []}]}]}]
    r = evaluate_v2(v2, {"a": "tower", "n1": "", "n2": "Paris"})
    assert r["HasAns_f1"] == pytest.approx(100 * 2 / 3) and r["HasAns_exact"] == 0.0
    assert r["NoAns_exact"] == pytest.approx(50.0) and r["total"] == 3
    assert r["exact"] == pytest.approx(100 / 3)
    assert r["f1"] == pytest.approx(100 * (2 / 3 + 1) / 3)
    # With null odds above the threshold (1.0), n2 counts as "no answer": right.
    r = evaluate_v2(v2, {"a": "tower", "n1": "", "n2": "Paris"},
                    null_odds={"a": -3.0, "n1": 2.0, "n2": 1.5})
    assert r["NoAns_exact"] == pytest.approx(100.0)


ATTRIBUTES = {"color": ["red", "blue", "green", "black"], "city": ["paris", "oslo", "lima"],
              "animal": ["cat", "dog", "horse", "fox"], "number": ["seven", "nine", "four"]}


def _synthetic(rng, n, prefix):
    paragraphs = []
    for i in range(n):
        facts = {k: rng.choice(v) for k, v in ATTRIBUTES.items()}
        order = list(facts)
        rng.shuffle(order)
        context = " ".join(f"the {k} is {facts[k]} ." for k in order)
        asked = rng.choice(order)
        start = context.index(f"the {asked} is ") + len(f"the {asked} is ")
        paragraphs.append({"context": context, "qas": [{
            "id": f"{prefix}{i}", "question": f"what is the {asked} ?",
            "answers": [{"text": facts[asked], "answer_start": start}]}]})
    return [{"title": prefix, "paragraphs": paragraphs}]


def test_run_squad_learns_a_synthetic_task(tmp_path):
    rng = random.Random(0)
    words = ["the", "is", "what", ".", "?"] + list(ATTRIBUTES) + \
        [w for v in ATTRIBUTES.values() for w in v]
    (tmp_path / "vocab.txt").write_text("\n".join(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words) + "\n")
    (tmp_path / "bert_config.json").write_text(json.dumps({
        "vocab_size": len(words) + 5, "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 128, "max_position_embeddings": 64,
        "type_vocab_size": 2, "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0}))
    # Matching the asked attribute to its value takes a few hundred steps to click.
    train = _write(tmp_path / "train.json", _synthetic(rng, 1000, "t"))
    dev = _write(tmp_path / "dev.json", _synthetic(rng, 60, "d"))
    common = [f"--vocab_file={tmp_path / 'vocab.txt'}",
              f"--bert_config_file={tmp_path / 'bert_config.json'}"]
    out = tmp_path / "out"
    result = warm_processes.run(
        [os.path.join(ROOT, "run_squad.py")] + common + [
            "--do_train", f"--train_file={train}", "--do_predict", f"--predict_file={dev}",
            "--max_seq_length=40", "--doc_stride=16", "--max_query_length=8",
            "--train_batch_size=32", "--learning_rate=1e-3", "--num_train_epochs=30",
            f"--output_dir={out}", "--save_checkpoints_steps=1000", "--log_steps=50",
            f"--export_dir={tmp_path / 'model'}"],
        env=ENV, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads(result.stdout.strip().splitlines()[-1])
    assert metrics["exact_match"] >= 90.0, metrics
    predictions = json.loads((out / "predictions.json").read_text())
    nbest = json.loads((out / "nbest_predictions.json").read_text())
    assert len(predictions) == 60 and len(nbest["d0"]) >= 1
    assert abs(sum(e["probability"] for e in nbest["d0"]) - 1.0) < 1e-6
    alone = warm_processes.run(
        [os.path.join(ROOT, "run_squad.py"), "--do_eval_only",
         f"--predict_file={dev}", f"--predictions_file={out / 'predictions.json'}"],
        env=ENV, timeout=300)
    assert alone.returncode == 0, alone.stderr[-3000:]
    assert json.loads(alone.stdout.strip().splitlines()[-1]) == pytest.approx(metrics)
    asked = warm_processes.run(
        [os.path.join(ROOT, "run_squad.py")] + common + [
            f"--init_checkpoint={out}", "--max_seq_length=40", "--max_query_length=8",
            "--question=what is the city ?",
            # Four facts, as in training: a three-fact context is out of distribution, and
            # whether the model generalises to it changes with float rounding.
            "--context=the color is red . the city is oslo . the animal is fox . "
            "the number is nine ."],
        env=ENV, timeout=300)
    assert asked.returncode == 0, asked.stderr[-3000:]
    assert json.loads(asked.stdout.strip().splitlines()[-1])["answer"] == "oslo"

    # The SavedModel, in a fresh process with only tensorflow and tensorflow_text: the best
    # valid span, cut out of the context with the returned character offsets.
    context = "the color is red .  the city is  oslo . the animal is fox . the number is nine ."
    served = warm_processes.run(["-c", SERVE, str(tmp_path / "model"), "what is the city ?",
                                 context], env=ENV, timeout=300)
    assert served.returncode == 0, served.stderr[-3000:]
    assert served.stdout.strip().splitlines()[-1] == "oslo"


SERVE = """
import sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401
model = tf.saved_model.load(sys.argv[1])
out = model.signatures["serving_default"](question=tf.constant([sys.argv[2]]),
                                          context=tf.constant([sys.argv[3]]))
start, end = out["start_logits"].numpy()[0], out["end_logits"].numpy()[0]
ts, te = out["token_start"].numpy()[0], out["token_end"].numpy()[0]
valid = ts >= 0
best = max(((start[i] + end[j], i, j) for i in np.flatnonzero(valid)
            for j in np.flatnonzero(valid) if i <= j < i + 30))
print(sys.argv[3][ts[best[1]]:te[best[2]]])
"""


def test_predictions_from_logits_by_hand(tmp_path):
    from tasks.squad.predictions import compute_predictions

    tokenizer = _tokenizer(tmp_path, ["who", "?", "ann", "met", "bob", "in", "oslo", "."])
    example = squad.SquadExample("q1", "who ?", ["Ann", "met", "Bob", "in", "Oslo."])
    features = squad.convert_examples([example], tokenizer, 16, 8, 4, is_training=False)
    # [CLS] who ? [SEP] ann met bob in oslo . [SEP]
    assert features[0].tokens[4:10] == ["ann", "met", "bob", "in", "oslo", "."]
    start = [0.0] * 16
    end = [0.0] * 16
    start[6], end[6] = 3.0, 2.0      # "bob": score 5
    start[8], end[9] = 2.5, 2.0      # "oslo ." -> "Oslo.": score 4.5
    start[1], end[1] = 9.0, 9.0      # inside the question: never an answer
    predictions, nbest, _ = compute_predictions([example], features, [start], [end],
                                                n_best_size=3)
    assert predictions == {"q1": "Bob"}
    assert nbest["q1"][0]["text"] == "Bob"
    # v2.0: null score (position 0) 6.0 - best 5.0 = 1.0 > threshold 0 -> no answer.
    start[0], end[0] = 3.0, 3.0
    predictions, _, odds = compute_predictions([example], features, [start], [end],
                                               version_2_with_negative=True)
    assert predictions == {"q1": ""} and odds["q1"] == pytest.approx(1.0)
    predictions, _, _ = compute_predictions([example], features, [start], [end],
                                            version_2_with_negative=True,
                                            null_score_diff_threshold=1.5)
    assert predictions == {"q1": "Bob"}


def test_predictions_at_the_best_null_threshold_need_no_model():
    """SQuAD 2.0: the null threshold that is best on a dev file, and the answers at it,
    from the n-best lists and null odds alone (no second pass of the model). By hand."""
    from tasks.squad.metrics import best_null_threshold
    from tasks.squad.predictions import at_threshold
    nbest = {"a": [{"text": ""}, {"text": "Eiffel Tower"}],
             "n1": [{"text": "Paris"}, {"text": ""}],
             "n2": [{"text": ""}]}
    odds = {"a": -0.5, "n1": 1.0, "n2": 2.0}
    # Odds above the threshold answer nothing, the others their best non-empty answer.
    assert at_threshold(nbest, odds, 0.0) == {"a": "Eiffel Tower", "n1": "", "n2": ""}
    assert at_threshold(nbest, odds, 1.5) == {"a": "Eiffel Tower", "n1": "Paris", "n2": ""}
    assert at_threshold(nbest, odds, -1.0) == {"a": "", "n1": "", "n2": ""}
    v2 = [{"paragraphs": [{"qas": [{"id": "a", "answers": [{"text": "Eiffel Tower"}]},
                                   {"id": "n1", "answers": []}, {"id": "n2", "answers": []}]}]}]
    answers = at_threshold(nbest, odds, float("inf"))
    # Nothing answered: n1 and n2 right (2/3); then a answered (+1): 3/3 at its odds,
    # -0.5; then n1 answered "Paris" (-1): worse.
    assert best_null_threshold(v2, answers, odds) == (-0.5, pytest.approx(100.0))
    assert evaluate_v2(v2, at_threshold(nbest, odds, -0.5))["f1"] == pytest.approx(100.0)
    # When answering never helps, the threshold is below every odds: nothing answered.
    odds = {"a": 1.5, "n1": 1.0, "n2": 2.0}
    threshold, f1 = best_null_threshold(v2, answers, odds)
    assert threshold < 1.0 and f1 == pytest.approx(100 * 2 / 3)


def test_v2_prediction_writes_the_answers_at_the_best_threshold(tmp_path, tiny_config_dict):
    from tasks.squad import SquadConfig, SquadTask
    _tokenizer(tmp_path, ["eiffel", "tower", "paris", "where", "?"])
    (tmp_path / "bert_config.json").write_text(json.dumps(tiny_config_dict))
    context = "Eiffel Tower Paris"
    path = _write(tmp_path / "dev-v2.json", [{"paragraphs": [{"context": context, "qas": [
        {"id": "a", "question": "where ?", "answers": [{"text": "Eiffel Tower",
                                                       "answer_start": 0}]},
        {"id": "n1", "question": "where ?", "answers": [], "is_impossible": True}]}]}])
    task = SquadTask(SquadConfig(
        bert_config_file=str(tmp_path / "bert_config.json"), vocab_file=str(tmp_path / "vocab.txt"),
        predict_file=path, version_2_with_negative=True, max_seq_length=32, doc_stride=8))
    task.prepare(str(tmp_path), do_predict=True)
    nbest = {"a": [{"text": ""}, {"text": "Eiffel Tower"}], "n1": [{"text": "Paris"}]}
    odds = {"a": 0.7, "n1": 1.0}  # the default threshold (0.0) answers neither
    task.answers = lambda model, examples, features: (
        {"a": "", "n1": ""}, nbest, odds)
    files, results = task.predict(model=None)
    assert json.loads(files["predictions.json"]) == {"a": "", "n1": ""}
    assert results["f1"] == pytest.approx(50.0)
    # Answering a (odds 0.7) but not n1 (1.0) is right on both: threshold 0.7.
    assert json.loads(files["predictions_best_threshold.json"]) == {
        "a": "Eiffel Tower", "n1": ""}
    assert results["best_threshold"] == pytest.approx(0.7)
    assert results["best_threshold_f1"] == pytest.approx(100.0)
    assert "best_threshold_f1 = 100.0" in files["eval_results.txt"]


def test_cjk_and_accents_read_and_convert(tmp_path):
    data = [{"paragraphs": [{"context": "東京は日本の首都です。 Café  Zürich ok",
                             "qas": [{"id": "x", "question": "どこ?", "answers": [
                                 {"text": "Zürich", "answer_start": 18}]}]}]}]
    path = _write(tmp_path / "cjk.json", data)
    examples, counts = squad.read_squad(path, is_training=True)
    assert counts["skipped_answer_mismatch"] == 0
    tokenizer = _tokenizer(tmp_path, ["東", "京", "cafe", "zurich", "ok", "?"])
    features = squad.convert_examples(examples, tokenizer, 32, 8, 8, is_training=True)
    f = features[0]
    assert f.tokens[f.start_position:f.end_position + 1] == ["zurich"]


def test_export_logits_equal_the_model_on_python_features(tmp_path):
    import numpy as np
    import tensorflow as tf

    from modeling import BertConfig, BertSpanLabeler
    from tasks.squad.export import export_squad

    words = ["who", "met", "bob", "in", "oslo", "ann", "?", ".", ",", "caf", "##e"]
    tokenizer = _tokenizer(tmp_path, words)
    config = BertConfig(vocab_size=len(words) + 5, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32)
    model = BertSpanLabeler(config)
    export_squad(model, str(tmp_path / "m"), str(tmp_path / "vocab.txt"), True, 24, 4)
    question, context = "Who met Bob?", "Ann  met Bob, in Oslo. Café!"
    example = squad.SquadExample("q", question, context.split())
    feature = squad.convert_examples([example], tokenizer, 24, 8, 4, False)[0]
    arrays = squad.feature_arrays([feature], False)
    want = model(arrays)
    served = tf.saved_model.load(str(tmp_path / "m")).signatures["serving_default"](
        question=tf.constant([question]), context=tf.constant([context]))
    np.testing.assert_allclose(served["start_logits"].numpy(), want["start_logits"],
                               atol=1e-5)
    np.testing.assert_allclose(served["end_logits"].numpy(), want["end_logits"], atol=1e-5)
    # Offsets: every context piece maps into the word it came from.
    starts, ends = served["token_start"].numpy()[0], served["token_end"].numpy()[0]
    pieces = [(feature.tokens[i], context[starts[i]:ends[i]]) for i in range(len(
        feature.tokens)) if starts[i] >= 0]
    assert pieces[:3] == [("ann", "Ann"), ("met", "met"), ("bob", "Bob")]
    assert ("caf", "Café") in pieces and ("##e", "Café") in pieces
