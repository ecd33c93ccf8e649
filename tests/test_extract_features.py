"""extract_features.py end to end on a tiny model, against the NumPy reference."""

import json
import os

import numpy as np
import pytest

from tests import numpy_reference as ref
from tests import warm_processes
from tests.conftest import write_tf1_checkpoint
from text.packing import truncate_seq_pair

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "dog", "barked", "cat", "sat",
         "on", "mat", "##s", ".", "a"]


@pytest.fixture
def setup(tmp_path, tiny_config_dict):
    config = dict(tiny_config_dict, vocab_size=len(VOCAB))
    (tmp_path / "bert_config.json").write_text(json.dumps(config))
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    weights = ref.random_google_weights(config, np.random.default_rng(5))
    write_tf1_checkpoint(weights, str(tmp_path / "bert_model.ckpt"))
    return tmp_path, config, weights


def _run(tmp_path, input_text, *extra):
    (tmp_path / "input.txt").write_bytes(input_text if isinstance(input_text, bytes)
                                         else input_text.encode("utf-8"))
    cmd = [os.path.join(ROOT, "extract_features.py"),
           f"--input_file={tmp_path / 'input.txt'}", f"--output_file={tmp_path / 'out.jsonl'}",
           f"--vocab_file={tmp_path / 'vocab.txt'}",
           f"--bert_config_file={tmp_path / 'bert_config.json'}",
           f"--init_checkpoint={tmp_path / 'bert_model.ckpt'}", "--max_seq_length=12",
           "--batch_size=2", "--layers=-1,-2", *extra]
    return warm_processes.run(cmd, cwd=ROOT, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))


def test_end_to_end_matches_reference(setup):
    tmp_path, config, weights = setup
    result = _run(tmp_path, "The dog barked.\nthe cat sat ||| on the mats\n\n",
                  "--layers=-1,0,embeddings")
    assert result.returncode == 0, result.stderr[-2000:]
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    objs = [json.loads(line) for line in lines]
    assert [o["linex_index"] for o in objs] == [0, 1, 2]
    tokens = [[f["token"] for f in o["features"]] for o in objs]
    assert tokens == [["[CLS]", "the", "dog", "barked", ".", "[SEP]"],
                      ["[CLS]", "the", "cat", "sat", "[SEP]", "on", "the", "mat", "##s", "[SEP]"],
                      ["[CLS]", "[SEP]"]]
    # Example 1 against the NumPy forward pass (segments 0 then 1).
    ids = np.array([[VOCAB.index(t) for t in tokens[1]]], np.int32)
    seg = np.array([[0] * 5 + [1] * 5], np.int32)
    want = ref.encoder_forward(weights, config, ids, np.ones_like(ids), seg)
    feats = objs[1]["features"]
    assert [layer["index"] for layer in feats[0]["layers"]] == [-1, 0, "embeddings"]
    got_last = np.array([f["layers"][0]["values"] for f in feats])
    got_first = np.array([f["layers"][1]["values"] for f in feats])
    got_embeddings = np.array([f["layers"][2]["values"] for f in feats])
    assert np.max(np.abs(got_last - want["encoder_outputs"][-1][0])) < 2e-5
    assert np.max(np.abs(got_first - want["encoder_outputs"][0][0])) < 2e-5
    assert np.max(np.abs(got_embeddings - want["embedding_output"][0])) < 2e-5
    assert all(len(str(v).split(".")[-1]) <= 6 for v in feats[0]["layers"][0]["values"])


@pytest.mark.parametrize("text, flag, message", [
    ("", None, "input file is empty"),
    (b"ok\n\xff\xfe bad\n", None, "line 2: not UTF-8"),
    ("a b\n", "--layers=-1,5", "out of range"),
    ("a b\n", "--layers=-1,embedding", "or 'embeddings'"),
    ("a b\n", "--max_seq_length=64", "max_position_embeddings"),
])
def test_bad_input_is_a_clear_error(setup, text, flag, message):
    tmp_path, _, _ = setup
    result = _run(tmp_path, text, *([flag] if flag else []))
    assert result.returncode != 0
    assert message in result.stderr
    assert not (tmp_path / "out.jsonl").exists()  # nothing half-written


def test_truncate_seq_pair_pops_from_the_longer_back():
    a, b = [1, 2, 3, 4], [5, 6, 7]
    truncate_seq_pair(a, b, 5)
    assert (a, b) == ([1, 2, 3], [5, 6])
    a, b = [1, 2], [3, 4, 5, 6, 7, 8]
    truncate_seq_pair(a, b, 4)
    assert (a, b) == ([1, 2], [3, 4])
    a, b = [1, 2, 3], [4, 5, 6]  # tie: from b first
    truncate_seq_pair(a, b, 5)
    assert (a, b) == ([1, 2, 3], [4, 5])


def test_sentence_embeddings_are_the_pooled_per_token_values(setup):
    tmp_path, config, weights = setup
    text = "The dog barked.\nthe cat sat ||| on the mats\n"
    for pooling in ("mean", "cls", "pooled"):
        result = _run(tmp_path, text, f"--pooling={pooling}")
        assert result.returncode == 0, result.stderr[-2000:]
        objs = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
        for obj in objs:
            # Per token: the mean of the chosen layers (-1, -2), from the same output.
            per_token = np.array([np.mean([layer["values"] for layer in f["layers"]], axis=0)
                                  for f in obj["features"]])
            embedding = np.array(obj["embedding"])
            if pooling == "mean":
                np.testing.assert_allclose(embedding, per_token.mean(axis=0), atol=2e-6)
            elif pooling == "cls":
                np.testing.assert_allclose(embedding, per_token[0], atol=2e-6)
            else:  # the pooler: tanh(W [CLS of the last layer] + b), as the reference
                tokens = [f["token"] for f in obj["features"]]
                ids = np.array([[VOCAB.index(t) for t in tokens]], np.int32)
                seg = np.cumsum(ids == VOCAB.index("[SEP]"), axis=1) - (ids == VOCAB.index(
                    "[SEP]"))
                want = ref.encoder_forward(weights, config, ids, np.ones_like(ids),
                                           np.minimum(seg, 1).astype(np.int32))
                np.testing.assert_allclose(embedding, want["pooled_output"][0], atol=1e-5)
        # The same vectors as one float32 matrix, with the lines beside it.
        npy = _run(tmp_path, text, f"--pooling={pooling}", "--output_format=npy",
                   f"--output_file={tmp_path / 'emb.npy'}")
        assert npy.returncode == 0, npy.stderr[-2000:]
        matrix = np.load(tmp_path / "emb.npy")
        assert matrix.dtype == np.float32 and matrix.shape == (2, config["hidden_size"])
        np.testing.assert_allclose(matrix, [o["embedding"] for o in objs], atol=1e-6)
        assert (tmp_path / "emb.lines.txt").read_text() == text
    refused = _run(tmp_path, text, "--output_format=npy")
    assert refused.returncode == 1 and "set --pooling" in refused.stderr


def test_attention_probabilities_per_line_match_the_reference(setup):
    """--output_attentions: each line's "attentions" hold every layer's probabilities
    over that line's tokens (not the batch's padding), as the NumPy forward pass gives
    them; the features are those of a run without the flag."""
    tmp_path, config, weights = setup
    text = "The dog barked.\nthe cat sat ||| on the mats\n"
    plain = _run(tmp_path, text)
    assert plain.returncode == 0, plain.stderr[-2000:]
    without = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    result = _run(tmp_path, text, "--output_attentions")
    assert result.returncode == 0, result.stderr[-2000:]
    objs = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [{k: v for k, v in o.items() if k != "attentions"} for o in objs] == without
    segments = {0: [0] * 6, 1: [0] * 5 + [1] * 5}
    for obj in objs:
        tokens = [f["token"] for f in obj["features"]]
        ids = np.array([[VOCAB.index(t) for t in tokens]], np.int32)
        seg = np.array([segments[obj["linex_index"]]], np.int32)
        want = ref.encoder_forward(weights, config, ids, np.ones_like(ids), seg)
        assert [a["index"] for a in obj["attentions"]] == \
            list(range(config["num_hidden_layers"]))
        for got, expected in zip(obj["attentions"], want["attentions"]):
            values = np.array(got["values"])  # heads x tokens (queries) x tokens (keys)
            assert values.shape == (config["num_attention_heads"], len(tokens), len(tokens))
            np.testing.assert_allclose(values, expected[0], atol=1e-6)
    refused = _run(tmp_path, text, "--output_attentions", "--pooling=mean",
                   "--output_format=npy", f"--output_file={tmp_path / 'emb.npy'}")
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1] == (
        "error: --output_attentions writes the attention probabilities into each JSON "
        "line: use --output_format=jsonl (npy holds sentence vectors only) (see "
        "--helpfull).")
    assert not (tmp_path / "emb.npy").exists()
