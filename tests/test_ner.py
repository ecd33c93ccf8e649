"""NER: CoNLL reading and its errors, IOB1 -> IOB2, first-piece labelling and windows,
conlleval's metric against hand counts, and run_ner.py learning a synthetic task."""

import json
import os
import random

import pytest

from tasks.tagging import conll
from tasks.tagging.features import convert_sentences, plan_windows, word_predictions
from tasks.tagging.metrics import chunks, evaluate
from tests import warm_processes
from text.tokenization import FullTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)


def test_iob1_to_iob2():
    iob1 = ["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-LOC", "I-ORG", "O", "I-MISC"]
    assert conll.iob1_to_iob2(iob1) == ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC",
                                        "B-ORG", "O", "B-MISC"]
    iob2 = ["B-PER", "I-PER", "B-PER", "O"]
    assert conll.iob1_to_iob2(iob2) == iob2


def test_read_conll_and_its_errors(tmp_path):
    good = tmp_path / "eng.train"
    good.write_text("-DOCSTART- -X- O O\n\nEU NNP I-NP I-ORG\nrejects VBZ I-VP O\n\n"
                    "Peter NNP I-NP I-PER\n\n-DOCSTART- -X- O O\n\nBlackburn NNP I-NP I-PER\n")
    sentences = conll.read_conll(str(good))
    assert [s.words for s in sentences] == [["EU", "rejects"], ["Peter"], ["Blackburn"]]
    assert [s.document for s in sentences] == [1, 1, 2] and sentences[1].line == 6
    assert conll.label_list(sentences) == ["O", "I-ORG", "I-PER"]
    for text, message in (("EU NNP I-NP I-ORG\nrejects\n", r"eng.x:2: one column"),
                          ("EU NNP I-NP I-ORG\nrejects VBZ O\n", r"eng.x:2: 3 columns where"),
                          ("EU NNP I-NP ORG-I\n", r"eng.x:1: tag 'ORG-I' is not O, B-TYPE")):
        bad = tmp_path / "eng.x"
        bad.write_text(text)
        with pytest.raises(conll.ConllError, match=message):
            conll.read_conll(str(bad))


def test_conlleval_counts_by_hand():
    gold = [["B-PER", "I-PER", "O", "B-LOC", "O", "B-ORG", "I-ORG"],
            ["B-MISC", "O", "B-PER"]]
    pred = [["B-PER", "I-PER", "O", "B-ORG", "O", "B-ORG", "O"],   # right, type, boundary
            ["B-MISC", "O", "B-PER"]]                              # right, right
    r = evaluate(gold, pred)
    # gold 5 entities, predicted 5, correct 3 (PER, MISC, PER).
    assert (r["gold_entities"], r["predicted_entities"], r["correct_entities"]) == (5, 5, 3)
    assert r["precision"] == pytest.approx(60.0) and r["recall"] == pytest.approx(60.0)
    assert r["f1"] == pytest.approx(60.0)
    assert r["accuracy"] == pytest.approx(100 * 8 / 10)
    assert r["per_type"]["PER"]["f1"] == pytest.approx(100.0)
    assert r["per_type"]["LOC"]["recall"] == 0.0 and r["per_type"]["LOC"]["predicted"] == 0
    assert r["per_type"]["ORG"]["precision"] == pytest.approx(0.0)
    # conlleval reads IOB1 as well: I- after O starts an entity; B- splits two.
    assert chunks(["I-LOC", "I-LOC", "B-LOC", "O", "I-PER"]) == {
        (0, 2, "LOC"), (2, 3, "LOC"), (4, 5, "PER")}


def _tokenizer(tmp_path, words):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words) + "\n")
    return FullTokenizer(str(vocab), do_lower_case=False)


def test_first_piece_labels_and_windows_predict_every_word_once(tmp_path):
    tokenizer = _tokenizer(tmp_path, ["John", "lives", "in", "New", "York", "Jack", "##son",
                                      "##ville", "."])
    words = ["John", "lives", "in", "Jacksonville", "."] * 12  # 60 words, 84 pieces
    tags = ["B-PER", "O", "O", "B-LOC", "O"] * 12
    sentence = conll.Sentence(words, tags)
    label_list = ["O", "B-LOC", "B-PER"]
    label_map = {t: i for i, t in enumerate(label_list)}
    arrays, windows = convert_sentences([sentence], tokenizer, label_map, 16)
    assert len(windows) > 1
    assert (arrays["input_mask"].sum(1) <= 16).all()
    predicted_by = {}
    for row, window in enumerate(windows):
        ids = arrays["input_ids"][row]
        for offset, (position, owned) in enumerate(zip(window.word_positions, window.owned)):
            word = window.first_word + offset
            # The first piece carries the word's label, with weight 1.
            assert arrays["label_ids"][row, position] == label_map[tags[word]]
            assert arrays["label_weights"][row, position] == 1.0
            first_piece = tokenizer.convert_ids_to_tokens([int(ids[position])])[0]
            assert words[word].startswith(first_piece)
            if owned:
                assert word not in predicted_by
                predicted_by[word] = row
        # Continuation pieces carry no weight.
        pieces = tokenizer.convert_ids_to_tokens([int(i) for i in ids if i])
        assert all(arrays["label_weights"][row, i] == 0 for i, p in enumerate(pieces)
                   if p.startswith("##"))
    assert sorted(predicted_by) == list(range(60))
    # Windows overlap: some word appears in two windows.
    assert sum(w.end_word - w.first_word for w in windows) > 60
    # Round trip: predicting the gold ids gives back the gold tags.
    tags_back = word_predictions(windows, arrays["label_ids"], [sentence], label_list)
    assert tags_back == [tags]


def test_plan_windows_covers_long_words():
    assert plan_windows([1] * 5, 10) == [(0, 5)]
    plan = plan_windows([3, 20, 2, 2], 6, stride=3)
    assert plan[0] == (0, 1) and plan[1] == (1, 2)  # a 20-piece word gets a window alone
    covered = sorted({w for a, b in plan for w in range(a, b)})
    assert covered == [0, 1, 2, 3]


NAMES = ["Anna", "Boris", "Chen", "Dmitri", "Elena", "Farid"]
SURNAMES = ["Smith", "Khan", "Ivanova"]
CITIES = ["Paris", "Oslo", "Lima", "Kyoto", "Cairo", "Quito"]
FILLER = ["met", "in", "visited", "yesterday", "and", "the", "friends", "from", "today"]


def _toy_sentences(rng, n):
    lines = []
    for _ in range(n):
        # IOB1 tags; entities (a name with an optional surname, or a city) are always
        # separated by a filler word.
        tokens = []
        for _ in range(rng.randint(2, 5)):
            r = rng.random()
            if r < 0.35:
                tokens.append((rng.choice(NAMES), "I-PER"))
                if rng.random() < 0.5:
                    tokens.append((rng.choice(SURNAMES), "I-PER"))
            elif r < 0.6:
                tokens.append((rng.choice(CITIES), "I-LOC"))
            tokens.append((rng.choice(FILLER), "O"))
        lines.extend(f"{w} X X {t}" for w, t in tokens)
        lines.append("")
    return "-DOCSTART- -X- O O\n\n" + "\n".join(lines) + "\n"


def write_toy_task(folder, files, seed=0):
    """A toy NER task in `folder`: data/<name> with n sentences for each (name, n) of
    `files`, vocab.txt covering every word, and a tiny bert_config.json."""
    rng = random.Random(seed)
    data = folder / "data"
    data.mkdir()
    for name, n in files:
        (data / name).write_text(_toy_sentences(rng, n))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + NAMES + SURNAMES + CITIES + \
        FILLER
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    (folder / "bert_config.json").write_text(json.dumps({
        "vocab_size": len(vocab), "hidden_size": 32, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 32,
        "type_vocab_size": 2}))
    return folder


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return write_toy_task(tmp_path_factory.mktemp("ner"),
                          (("eng.train", 300), ("eng.testa", 60), ("eng.testb", 60)))


SERVE = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
model = tf.saved_model.load(sys.argv[1])
out = model.signatures["serving_default"](text=tf.constant(json.loads(sys.argv[2])))
print(json.dumps({k: [[x.decode() if isinstance(x, bytes) else int(x) for x in row]
                      for row in v.numpy().tolist()] for k, v in out.items()}))
"""


def _run(argv, check=True):
    result = warm_processes.run([os.path.join(ROOT, "run_ner.py")] + argv, env=ENV,
                                timeout=600)
    if check and result.returncode != 0:
        raise AssertionError(result.stderr[-4000:])
    return result


def test_run_ner_learns_a_synthetic_task(toy, tmp_path):
    out = tmp_path / "out"
    _run([f"--data_dir={toy / 'data'}", f"--vocab_file={toy / 'vocab.txt'}",
          f"--bert_config_file={toy / 'bert_config.json'}", "--do_train", "--do_eval",
          "--do_predict", "--max_seq_length=16", "--train_batch_size=16",
          "--learning_rate=2e-3", "--num_train_epochs=6", f"--output_dir={out}",
          "--save_checkpoints_steps=1000", "--log_steps=25", f"--export_dir={tmp_path / 'm'}"])
    results = dict(line.split(" = ", 1) for line in
                   (out / "eval_results.txt").read_text().splitlines())
    assert float(results["f1"]) > 90.0, results
    assert "PER" in results and "LOC" in results
    predictions = (out / "test_predictions.txt").read_text().splitlines()
    rows = [line.split() for line in predictions if line and not line.startswith("-DOC")]
    assert all(len(row) == 3 for row in rows)
    assert {row[2] for row in rows} <= {"O", "B-PER", "I-PER", "B-LOC", "I-LOC"}
    # The predicted entities, for people: per sentence of the test file, each entity's
    # label, words and span, as conlleval reads the predicted column.
    sentences, words, tags = [], [], []
    for line in predictions + [""]:
        if line.startswith("-DOCSTART-"):
            continue
        if not line:
            if words:
                sentences.append((words, tags))
            words, tags = [], []
            continue
        word, _, tag = line.split()
        words.append(word)
        tags.append(tag)
    expected = [[str(number), kind, " ".join(w[first:end]), str(first), str(end)]
                for number, (w, t) in enumerate(sentences, 1)
                for first, end, kind in sorted(chunks(t))]
    table = [line.split("\t") for line in
             (out / "test_entities.tsv").read_text(encoding="utf-8").splitlines()]
    assert table[0] == ["sentence", "label", "text", "first_word", "end_word"]
    assert table[1:] == expected and len(expected) >= len(sentences)
    # The metric alone, from the written file, agrees with the run's test figures.
    alone = _run(["--do_eval_only", f"--predictions_file={out / 'test_predictions.txt'}"])
    metrics = json.loads(alone.stdout.strip().splitlines()[-1])
    test = dict(line.split(" = ", 1) for line in
                (out / "test_results.txt").read_text().splitlines())
    assert metrics["f1"] == pytest.approx(float(test["f1"]))
    assert set(metrics["per_type"]) == {"LOC", "PER"}

    # The SavedModel, in a process of its own importing only tensorflow and tensorflow_text
    # (forked from the warm interpreter, which has imported none of this project).
    texts = ["Anna Smith visited Paris today", "met \u2014 Farid Khan in Kyoto and Oslo", ""]
    result = warm_processes.run(["-c", SERVE, str(tmp_path / "m"), json.dumps(texts)], env=ENV)
    assert result.returncode == 0, result.stderr[-3000:]
    served = json.loads(result.stdout.strip().splitlines()[-1])
    entities = [[(t, x, a, b) for t, x, a, b in zip(*(served[k][row] for k in (
        "entity_type", "entity_text", "entity_start", "entity_end"))) if t]
        for row in range(3)]
    assert entities[0] == [("PER", "Anna Smith", 0, 10), ("LOC", "Paris", 19, 24)]
    assert ("PER", "Farid Khan", 6, 16) in entities[1]  # character (not byte) offsets
    assert ("LOC", "Kyoto", 20, 25) in entities[1] and entities[2] == []
    for row, text in enumerate(texts):
        for _, entity_text, start, end in entities[row]:
            assert text[start:end] == entity_text


def test_unknown_tag_in_dev_is_named(toy, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "eng.train").write_text((toy / "data" / "eng.train").read_text())
    (data / "eng.testa").write_text("Anna X X I-PER\nmet X X I-ORG\n")
    result = _run([f"--data_dir={data}", f"--vocab_file={toy / 'vocab.txt'}",
                   f"--bert_config_file={toy / 'bert_config.json'}", "--do_eval",
                   "--max_seq_length=16", f"--output_dir={tmp_path / 'out'}"], check=False)
    assert result.returncode != 0
    assert "eng.testa:2: tag 'B-ORG' does not occur in the training data" in result.stderr


def test_document_context_surrounds_the_sentence_and_is_not_predicted(tmp_path):
    tokenizer = _tokenizer(tmp_path, ["a", "b", "c", "d", "e", "f", "g", "x", "y"])
    doc = [conll.Sentence(["a", "b"], ["O", "O"], 1), conll.Sentence(["x", "y"],
           ["B-PER", "I-PER"], 1), conll.Sentence(["c", "d", "e"], ["O"] * 3, 1),
           conll.Sentence(["g"], ["O"], 2)]
    label_map = {"O": 0, "B-PER": 1, "I-PER": 2}
    arrays, windows = convert_sentences(doc, tokenizer, label_map, 8,
                                        document_context=True)
    # Sentence 1 ("x y") gets 4 context pieces, alternating left/right: b | x y | c d, a.
    row = 1
    tokens = tokenizer.convert_ids_to_tokens([int(i) for i in arrays["input_ids"][row] if i])
    assert tokens == ["[CLS]", "a", "b", "x", "y", "c", "d", "[SEP]"]
    assert arrays["label_weights"][row].tolist() == [0, 0, 0, 1, 1, 0, 0, 0]
    assert arrays["predict_weights"][row].tolist() == [0, 0, 0, 1, 1, 0, 0, 0]
    assert windows[row].word_positions == [3, 4]
    # Context never crosses a document boundary.
    last = tokenizer.convert_ids_to_tokens([int(i) for i in arrays["input_ids"][3] if i])
    assert last == ["[CLS]", "g", "[SEP]"]
    assert word_predictions(windows, arrays["label_ids"], doc, ["O", "B-PER", "I-PER"]) == \
        [s.tags for s in doc]
