"""Multiple choice (SWAG): the readers and their errors, the scoring against a NumPy
reference from TF1-named weights, the Hugging Face `BertForMultipleChoice` on the same
weights, and run_swag.py learning a rule-decided toy set end to end (accuracy, test
predictions, the SavedModel from text and from ids, the export script by registry name)."""

import json
import os
import random

import numpy as np
import pytest

import modeling
from tasks.multiple_choice import BertMultipleChoice, data
from tasks.multiple_choice.features import convert_examples
from tests import numpy_reference as ref
from tests import warm_processes
from tests.conftest import write_tf1_checkpoint
from text.tokenization import FullTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
SWAG_HEADER = ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1," \
              "ending2,ending3,label\n"


def test_swag_csv_reads_as_the_paper_pairs_it(tmp_path):
    (tmp_path / "val.csv").write_text(
        SWAG_HEADER +
        '0,v1,18313,She lowers. He,She lowers.,He,gold,"pats, then walks.",turns.,sits.,'
        'runs.,2\n'
        '1,v2,7,"A man\nwaits. It",A man waits.,It,gold,rains.,stops.,"goes ""on"".",ends.,0\n')
    (tmp_path / "test.csv").write_text(SWAG_HEADER.replace(",label\n", "\n") +
                                       "0,v3,1,x,Ctx.,Q,gold,a,b,c,d\n")
    fmt = data.data_format(str(tmp_path))
    assert fmt == "swag"
    dev = data.read_examples(data.find_split(str(tmp_path), "dev", fmt), fmt)
    assert [e.label for e in dev] == [2, 0] and dev[1].guid == "val.csv-1"
    assert dev[0].context == "She lowers." and dev[0].choices[0] == "pats, then walks."
    # The first segment is sent1, the second sent2 + " " + the ending.
    assert dev[0].second_segments() == ["He pats, then walks.", "He turns.", "He sits.",
                                        "He runs."]
    assert dev[1].choices[2] == 'goes "on".'
    test = data.read_examples(str(tmp_path / "test.csv"), fmt, labelled=False)
    assert test[0].label is None and test[0].choices == ["a", "b", "c", "d"]

    bad = tmp_path / "bad.csv"
    bad.write_text(SWAG_HEADER + "0,v,1,x,C.,Q,gold,a,b,c,d,4\n")
    with pytest.raises(data.DataError, match=r"bad.csv:2: label '4' is not a choice index"):
        data.read_examples(str(bad), "swag")
    bad.write_text("sent1,ending0\nx,y\n")
    with pytest.raises(data.DataError, match=r"bad.csv: no column\(s\) \['sent2', 'ending1'"):
        data.read_examples(str(bad), "swag")
    with pytest.raises(data.DataError, match=r"no train.csv \(the train data"):
        data.find_split(str(tmp_path), "train", "swag")


def test_jsonl_layout_and_its_errors(tmp_path):
    path = tmp_path / "dev.jsonl"
    path.write_text('{"context": "c", "choices": ["a", "b", "c"], "label": 1}\n\n'
                    '{"id": 7, "context": "d", "question": "q", "choices": ["x", "y", "z"],'
                    ' "label": 2}\n')
    assert data.data_format(str(tmp_path)) == "jsonl"
    examples = data.read_examples(str(path), "jsonl")
    assert [e.guid for e in examples] == ["dev.jsonl-1", "7"]
    assert examples[0].second_segments() == ["a", "b", "c"]  # no question: the choice
    assert examples[1].second_segments() == ["q x", "q y", "q z"]
    for text, message in (
            ('{"context": "c", "choices": ["a"], "label": 0}\n', r"x.jsonl:1: field 'choices'"),
            ('{"context": "c", "choices": ["a", "b"]}\n', r"x.jsonl:1: no label"),
            ('{"context": "c", "choices": ["a", "b"], "label": "b"}\n',
             r"x.jsonl:1: label 'b' is not a choice index \(0-1\)"),
            ('{"choices": ["a", "b"], "label": 0}\n', r"x.jsonl:1: field 'context'"),
            ('{"context": "c", "choices": ["a", "b"], "label": 0}\n{oops\n',
             r"x.jsonl:2: not JSON"),
            ('{"context": "c", "choices": ["a", "b"], "label": 0}\n'
             '{"context": "c", "choices": ["a", "b", "c"], "label": 0}\n',
             r"x.jsonl: example x.jsonl-2 has 3 choices, the first one 2"),
            ("", r"x.jsonl: no examples")):
        bad = tmp_path / "x.jsonl"
        bad.write_text(text)
        with pytest.raises(data.DataError, match=message):
            data.read_examples(str(bad), "jsonl")


def _choice_inputs(rng, batch=2, choices=3, seq=8, vocab=40):
    ids = rng.integers(5, vocab, (batch, choices, seq)).astype(np.int32)
    ids[..., 0], lengths = 2, rng.integers(4, seq + 1, (batch, choices))
    mask = (np.arange(seq)[None, None] < lengths[..., None]).astype(np.int32)
    ids *= mask
    segments = ((np.arange(seq)[None, None] >= 3) & (mask > 0)).astype(np.int32)
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def test_scores_match_a_numpy_reference_from_tf1_names(tmp_path, tiny_config_dict):
    rng = np.random.default_rng(3)
    weights = ref.random_google_weights(tiny_config_dict, rng, heads=())
    H = tiny_config_dict["hidden_size"]
    weights["cls/multiple_choice/output_weights"] = rng.standard_normal((1, H)).astype(
        np.float32)
    weights["cls/multiple_choice/output_bias"] = np.array([0.3], np.float32)
    prefix = write_tf1_checkpoint(weights, str(tmp_path / "model.ckpt"))
    model = BertMultipleChoice(modeling.BertConfig.from_dict(tiny_config_dict))
    modeling.load_checkpoint(model, prefix, strict=True)
    inputs = _choice_inputs(rng)
    ours = np.asarray(model(inputs, training=False)["logits"])
    # Each (context, choice) sequence on its own: [CLS] pooled . w + b, then [batch, choices].
    flat = {k: v.reshape(-1, v.shape[-1]) for k, v in inputs.items()}
    pooled = ref.encoder_forward(weights, tiny_config_dict, flat["input_ids"],
                                 flat["input_mask"], flat["segment_ids"])["pooled_output"]
    expected = (pooled @ weights["cls/multiple_choice/output_weights"].T.astype(np.float64)
                + 0.3).reshape(2, 3)
    np.testing.assert_allclose(ours, expected, atol=1e-5)


def test_hugging_face_multiple_choice_on_the_same_weights(tmp_path, tiny_config_dict):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = modeling.BertConfig.from_dict(tiny_config_dict)
    model = BertMultipleChoice(config)
    folder = modeling.save_huggingface(model, str(tmp_path / "hf"))
    theirs, info = transformers.BertForMultipleChoice.from_pretrained(
        folder, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    inputs = _choice_inputs(np.random.default_rng(4))
    with torch.no_grad():
        logits = theirs.eval()(
            input_ids=torch.tensor(inputs["input_ids"], dtype=torch.long),
            attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long)).logits
    ours = np.asarray(model(inputs, training=False)["logits"])
    assert float(np.max(np.abs(ours - logits.numpy()))) <= 1e-5
    # A file transformers wrote fills every weight of ours.
    theirs.save_pretrained(str(tmp_path / "back"), safe_serialization=True)
    again = BertMultipleChoice(config)
    modeling.load_checkpoint(again, str(tmp_path / "back" / "model.safetensors"), strict=True)
    np.testing.assert_allclose(np.asarray(again(inputs, training=False)["logits"]), ours,
                               atol=1e-6)


# A toy set whose answer a rule decides: the context asks for a warm or a cold colour,
# one choice has it, the other three are of the other kind (chance is 25%).
WARM = "red orange yellow gold pink brown".split()
COLD = "blue green cyan navy teal grey".split()


def _toy_example(rng, i, labelled):
    want = rng.choice(["warm", "cold"])
    right = rng.choice(WARM if want == "warm" else COLD)
    choices = rng.sample(COLD if want == "warm" else WARM, 3)
    label = rng.randrange(4)
    choices.insert(label, right)
    record = {"id": f"q{i}", "context": f"pick the {want} one",
              "question": rng.choice(["", "it is"]), "choices": choices}
    if labelled:
        record["label"] = label
    return record


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("swag")
    rng = random.Random(0)
    (folder / "data").mkdir()
    for split, n, labelled in (("train", 400, True), ("dev", 80, True), ("test", 40, False)):
        (folder / "data" / f"{split}.jsonl").write_text("".join(
            json.dumps(_toy_example(rng, i, labelled)) + "\n" for i in range(n)))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WARM + COLD + \
        "pick the warm cold one it is".split()
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    (folder / "bert_config.json").write_text(json.dumps({
        "vocab_size": len(vocab), "hidden_size": 32, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 32,
        "type_vocab_size": 2}))
    return folder


def _run(script, argv):
    result = warm_processes.run([os.path.join(ROOT, script)] + argv, env=ENV, timeout=600)
    if result.returncode != 0:
        raise AssertionError(result.stderr[-4000:])
    return result


def test_run_swag_learns_the_rule_predicts_and_serves(toy, tmp_path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the raw-text signature's ops)

    out, export_dir = tmp_path / "out", tmp_path / "model"
    common = [f"--vocab_file={toy / 'vocab.txt'}",
              f"--bert_config_file={toy / 'bert_config.json'}", "--max_seq_length=16"]
    _run("run_swag.py", common + [
        f"--data_dir={toy / 'data'}", "--do_train", "--do_eval", "--do_predict",
        "--train_batch_size=16", "--learning_rate=1e-3", "--num_train_epochs=16",
        f"--output_dir={out}", "--save_checkpoints_steps=1000", f"--export_dir={export_dir}"])
    results = dict(line.split(" = ", 1) for line in
                   (out / "eval_results.txt").read_text().splitlines())
    assert float(results["accuracy"]) >= 0.9 and results["eval_examples"] == "80", results

    test = [json.loads(line) for line in (toy / "data" / "test.jsonl").read_text().splitlines()]
    rows = [line.split("\t") for line in (out / "test_results.tsv").read_text().splitlines()]
    assert len(rows) == len(test) == 40
    probabilities = np.array([[float(p) for p in row[:4]] for row in rows])
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
    assert [int(row[4]) for row in rows] == list(probabilities.argmax(-1))
    assert [row[5] for row in rows] == [t["choices"][int(r[4])] for t, r in zip(test, rows)]
    # The same for people: a header, each example's id, context and question.
    table = [line.split("\t") for line in
             (out / "test_predictions.tsv").read_text(encoding="utf-8").splitlines()]
    assert table[0] == ["id", "context", "question", "answer", "answer_text", "p(0)", "p(1)",
                        "p(2)", "p(3)"]
    assert [r[1] for r in table[1:]] == [" ".join(t["context"].split()) for t in test]
    assert [r[3:5] for r in table[1:]] == [r[4:6] for r in rows]
    assert [r[5:] for r in table[1:]] == [r[:4] for r in rows]
    assert len({r[0] for r in table[1:]}) == 40  # an id each
    # The model learnt the rule on the unlabelled test set too.
    kind = [t["context"].split()[2] for t in test]
    chosen = [row[5] for row in rows]
    right = [(c in WARM) == (k == "warm") for c, k in zip(chosen, kind)]
    assert np.mean(right) >= 0.9

    # The SavedModel from text gives the run's probabilities; from ids too.
    served = tf.saved_model.load(str(export_dir))
    text = served.signatures["serving_default"](
        context=tf.constant([t["context"] for t in test]),
        question=tf.constant([t["question"] for t in test]),
        choices=tf.constant([t["choices"] for t in test]))
    np.testing.assert_allclose(text["probabilities"].numpy(), probabilities, atol=1e-5)
    assert list(text["label_id"].numpy()) == [int(row[4]) for row in rows]
    arrays = convert_examples(data.read_examples(str(toy / "data" / "test.jsonl"), "jsonl",
                                                 labelled=False),
                              FullTokenizer(str(toy / "vocab.txt")), 16)
    ids = served.signatures["serving_ids"](**{k: tf.constant(arrays[k]) for k in (
        "input_ids", "input_mask", "segment_ids")})
    np.testing.assert_allclose(ids["probabilities"].numpy(), probabilities, atol=1e-5)
    # serving.load: rows of (context, question, choices), in the signature's order.
    import serving
    predict = serving.load(str(export_dir))
    assert predict.text_inputs == ["context", "question", "choices"]
    loaded = predict([(t["context"], t["question"], t["choices"]) for t in test])
    np.testing.assert_allclose(loaded["probabilities"], probabilities, atol=1e-5)

    # The export script finds the task by its registered name (an alias here).
    again = tmp_path / "again"
    _run("export_saved_model.py", common + [
        "--task_type=swag", f"--init_checkpoint={out / 'best' / 'model.ckpt'}",
        f"--export_dir={again}"])
    reloaded = tf.saved_model.load(str(again)).signatures["serving_ids"](
        **{k: tf.constant(arrays[k]) for k in ("input_ids", "input_mask", "segment_ids")})
    np.testing.assert_allclose(reloaded["scores"].numpy(), ids["scores"].numpy(), atol=1e-6)
