"""modeling.huggingface (and export_huggingface.py): every model type loads in Hugging Face
`transformers` with no missing or unexpected weights and gives the same outputs; the
activation keeps its meaning; labels and the tokenizer come along; the command line takes
a Google TF1 checkpoint."""

import json
import os

import numpy as np
import pytest

import modeling
from modeling.huggingface import save_huggingface
from tests import numpy_reference as ref
from tests import warm_processes
from tests.conftest import write_tf1_checkpoint

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _torch_inputs(inputs):
    return {"input_ids": torch.tensor(inputs["input_ids"], dtype=torch.long),
            "attention_mask": torch.tensor(inputs["input_mask"], dtype=torch.long),
            "token_type_ids": torch.tensor(inputs["segment_ids"], dtype=torch.long)}


def _load(cls, folder):
    model, info = cls.from_pretrained(folder, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    return model.eval()


# (model builder, transformers class, (our output, theirs) pairs to compare)
CASES = {
    "encoder": (lambda c: modeling.BertEncoder(c), "AutoModel",
                [("sequence_output", "last_hidden_state"), ("pooled_output", "pooler_output")]),
    "pretraining": (lambda c: modeling.BertPretrainer(c), "BertForPreTraining",
                    [("next_sentence_logits", "seq_relationship_logits")]),
    "classification": (lambda c: modeling.BertClassifier(c, 3), "BertForSequenceClassification",
                       [("logits", "logits")]),
    "squad": (lambda c: modeling.BertSpanLabeler(c), "BertForQuestionAnswering",
              [("start_logits", "start_logits"), ("end_logits", "end_logits")]),
    "tagging": (lambda c: modeling.BertTokenClassifier(c, 5), "BertForTokenClassification",
                [("logits", "logits")]),
}


@pytest.mark.parametrize("kind", sorted(CASES))
@pytest.mark.parametrize("hidden_act", ["gelu", "gelu_exact"])
def test_transformers_loads_every_weight_and_agrees(kind, hidden_act, tiny_config_dict,
                                                    tiny_inputs, tmp_path):
    config = modeling.BertConfig.from_dict(dict(tiny_config_dict, hidden_act=hidden_act))
    build, class_name, pairs = CASES[kind]
    model = build(config)
    folder = save_huggingface(model, str(tmp_path / "hf"))
    written = json.loads((tmp_path / "hf" / "config.json").read_text())
    # The original's "gelu" is the tanh approximation: Hugging Face calls it "gelu_new".
    assert written["hidden_act"] == {"gelu": "gelu_new", "gelu_exact": "gelu"}[hidden_act]
    theirs_model = _load(getattr(transformers, class_name), folder)
    inputs = dict(tiny_inputs)
    if kind == "pretraining":
        inputs["masked_lm_positions"] = np.array([[1, 2], [1, 2]], np.int32)
    ours = model(inputs, training=False)
    with torch.no_grad():
        theirs = theirs_model(**_torch_inputs(tiny_inputs))
    mask = tiny_inputs["input_mask"]
    for mine, their in pairs:
        a, b = np.asarray(ours[mine]), getattr(theirs, their).numpy()
        if a.ndim == 3:  # per token: real tokens only
            a, b = a * mask[..., None], b * mask[..., None]
        elif a.ndim == 2 and a.shape == mask.shape:
            a, b = a * mask, b * mask
        assert float(np.max(np.abs(a - b))) <= 1e-5, (mine, float(np.max(np.abs(a - b))))
    if kind == "pretraining":  # the masked-LM head, tied to the word embeddings
        logits = theirs.prediction_logits.numpy()[:, 1:3]
        assert float(np.max(np.abs(np.asarray(ours["masked_lm_logits"]) - logits))) <= 1e-5
    # And back: the file transformers itself writes fills every weight of a fresh model
    # of the same kind (the heads found by the model's own Hugging Face names).
    theirs_model.save_pretrained(str(tmp_path / "back"), safe_serialization=True)
    again = build(config)
    modeling.load_checkpoint(again, str(tmp_path / "back" / "model.safetensors"),
                             strict=True)
    for name, value in model(inputs, training=False).items():
        np.testing.assert_allclose(np.asarray(again(inputs, training=False)[name]),
                                   np.asarray(value), atol=1e-6, err_msg=name)


def test_labels_and_tokenizer_come_along(tiny_config_dict, write_vocab, tmp_path):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "dog", "##s", "bark", "."]
    vocab_file = write_vocab(vocab)
    config = modeling.BertConfig.from_dict(dict(tiny_config_dict, vocab_size=len(vocab)))
    folder = save_huggingface(modeling.BertClassifier(config, 2), str(tmp_path / "hf"),
                              vocab_file, do_lower_case=True, labels=["negative", "positive"])
    model = _load(transformers.BertForSequenceClassification, folder)
    assert model.config.id2label == {0: "negative", 1: "positive"}
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    from text.tokenization import FullTokenizer
    ours = FullTokenizer(vocab_file, do_lower_case=True)
    text = "The DOGS bark."
    assert tokenizer(text)["input_ids"] == ours.convert_tokens_to_ids(
        ["[CLS]"] + ours.tokenize(text) + ["[SEP]"])
    # A regression head is Hugging Face's regression problem.
    save_huggingface(modeling.BertClassifier(config, 1), str(tmp_path / "reg"))
    assert json.loads((tmp_path / "reg" / "config.json").read_text())["problem_type"] == \
        "regression"


def test_cli_from_a_google_checkpoint(tiny_config_dict, tmp_path):
    """The original release's layout in, a Hugging Face BertModel out, equal to an
    independent NumPy forward pass of the same weights."""
    config = dict(tiny_config_dict)
    (tmp_path / "bert_config.json").write_text(json.dumps(config))
    weights = ref.random_google_weights(config, np.random.default_rng(3))
    write_tf1_checkpoint(weights, str(tmp_path / "bert_model.ckpt"))
    result = warm_processes.run(
        [os.path.join(ROOT, "export_huggingface.py"),
         f"--bert_config_file={tmp_path / 'bert_config.json'}",
         f"--init_checkpoint={tmp_path / 'bert_model.ckpt'}", f"--output_dir={tmp_path / 'hf'}"],
        cwd=ROOT, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "log.txt" not in os.listdir(tmp_path / "hf") and (tmp_path / "hf.log").exists()
    model = _load(transformers.AutoModel, str(tmp_path / "hf"))
    ids = np.array([[2, 7, 9, 11, 3, 12, 13, 3]], np.int32)
    inputs = {"input_ids": ids, "input_mask": np.ones_like(ids),
              "segment_ids": np.array([[0] * 5 + [1] * 3], np.int32)}
    with torch.no_grad():
        theirs = model(**_torch_inputs(inputs)).last_hidden_state.numpy()
    want = ref.encoder_forward(weights, config, ids, inputs["input_mask"],
                               inputs["segment_ids"])["sequence_output"]
    assert float(np.max(np.abs(theirs - want))) <= 1e-5
