"""run_classifier.py --long_document: documents longer than one sequence, read truncated,
by head and tail, or as windows (logits averaged per document); the in-graph packing
equals the Python one; the SavedModel reads raw text as the model was trained."""

import json
import random

import numpy as np
import pytest

from modeling.inputs import INPUT_NAMES
from text import packing
from text.tokenization import FullTokenizer

FILLER = ["the", "movie", "was", "a", "plot", "and", "acting", "very", "really", "film",
          "it", "of", "to", "in", "for", "with"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad"] + FILLER


def _document(rng, label):
    """Filler words, then the word that decides the label at the very end."""
    words = [rng.choice(FILLER) for _ in range(rng.randint(24, 32))]
    return " ".join(words + ["good" if label else "bad"])


@pytest.fixture(scope="module")
def task_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("long")
    rng = random.Random(0)
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (folder / "bert_config.json").write_text(json.dumps({
        "vocab_size": len(VOCAB), "hidden_size": 32, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 64,
        "type_vocab_size": 2, "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0}))
    data = folder / "data"
    data.mkdir()
    for split, n in (("train", 192), ("dev", 48)):
        rows = [f"{_document(rng, i % 2)}\t{i % 2}" for i in range(n)]
        (data / f"{split}.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n")
    (data / "test.tsv").write_text("index\tsentence\n" + "".join(
        f"{i}\t{_document(rng, i % 2)}\n" for i in range(8)))
    return folder


def _run(task_files, out, long_document, **extra):
    from tasks.classification import ClassificationConfig, ClassificationTask
    from training import runner
    from training.config import TrainerConfig
    task = ClassificationTask(ClassificationConfig(
        task_name="SST-2", data_dir=str(task_files / "data"),
        vocab_file=str(task_files / "vocab.txt"),
        bert_config_file=str(task_files / "bert_config.json"), max_seq_length=16,
        num_train_epochs=12, long_document=long_document, doc_stride=7, **extra))
    # 12 epochs: with windows, three training windows in four do not hold the deciding
    # word (they are labelled with their document's label all the same), so it takes
    # longer to learn than a single sequence per document.
    return task, runner.run(task, TrainerConfig(output_dir=str(out), train_batch_size=16,
                                                learning_rate=5e-4, log_steps=0,
                                                save_checkpoints_steps=10000),
                            do_train=True, do_eval=True, do_predict=True)


def test_words_past_the_first_window_decide_the_label(task_files, tmp_path):
    accuracy = {mode: _run(task_files, tmp_path / mode, mode)[1].eval_results["accuracy"]
                for mode in ("truncate", "head_tail", "windows")}
    # 14 pieces fit; the deciding word is piece 25-33: truncation never sees it.
    assert accuracy["truncate"] <= 0.7, accuracy
    assert accuracy["head_tail"] >= 0.9 and accuracy["windows"] >= 0.9, accuracy
    # Metrics are per document (48), not per window.
    results = (tmp_path / "windows" / "eval_results.txt").read_text()
    assert "eval_examples = 48" in results
    assert len((tmp_path / "windows" / "test_results.tsv").read_text().splitlines()) == 8


def test_export_reads_raw_text_as_the_model_was_trained(task_files, tmp_path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    task, result = _run(task_files, tmp_path / "out", "windows")
    export = tmp_path / "export"
    task.export(result.model, str(export))
    rng = random.Random(7)
    texts = [_document(rng, i % 2) for i in range(5)] + ["good"]
    served = tf.saved_model.load(str(export)).signatures["serving_default"](
        text_a=tf.constant(texts))["probabilities"].numpy()
    # The same: the model on each Python window, logits averaged per text, softmax.
    tokenizer = FullTokenizer(str(task_files / "vocab.txt"))
    for text, probabilities in zip(texts, served):
        windows = packing.pack_document(tokenizer, text, None, 16, "windows", 7)
        inputs = {name: np.array([getattr(w, name) for w in windows], np.int32)
                  for name in INPUT_NAMES}
        logits = result.model(inputs, training=False)["logits"].numpy().mean(axis=0)
        expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
        np.testing.assert_allclose(probabilities, expected, atol=1e-5)


@pytest.mark.parametrize("long_document", ["truncate", "head_tail", "windows"])
def test_graph_packing_equals_python_packing(long_document, tmp_path):
    import tensorflow as tf

    from text.graph_packing import pack_document_ids
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(30)]
    (tmp_path / "v.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = FullTokenizer(str(tmp_path / "v.txt"))
    rng = random.Random(1)
    pairs = [(" ".join(f"w{rng.randrange(30)}" for _ in range(rng.randrange(0, 60))),
              " ".join(f"w{rng.randrange(30)}" for _ in range(rng.choice([0, 0, 3, 9, 40]))))
             for _ in range(120)]
    for max_seq_length, stride in ((16, None), (24, 5)):
        python, rows = [], []
        for i, (a, b) in enumerate(pairs):
            packed = packing.pack_document(tokenizer, a, b or None, max_seq_length,
                                           long_document, stride)
            python += packed
            rows += [i] * len(packed)

        def ids(texts):
            return tf.ragged.constant([tokenizer.convert_tokens_to_ids(tokenizer.tokenize(t))
                                       for t in texts], dtype=tf.int64, ragged_rank=1)

        graph, graph_rows = pack_document_ids(ids([a for a, _ in pairs]),
                                              ids([b for _, b in pairs]), max_seq_length,
                                              2, 3, long_document, stride)
        for name in INPUT_NAMES:
            np.testing.assert_array_equal(graph[name].numpy(),
                                          [getattr(p, name) for p in python])
        np.testing.assert_array_equal(graph_rows.numpy(), rows)


def test_window_rules_by_hand():
    assert packing.window_starts(40, 14, 7) == [0, 7, 14, 21, 26]
    assert packing.window_starts(10, 14, 7) == [0]
    assert packing.head_tail_lengths(510) == (128, 382)
    assert packing.budget_for_a(0, 16) == (14, 0)
    assert packing.budget_for_a(40, 16) == (7, 6)  # text_b up to half the room
    assert packing.budget_for_a(3, 16) == (10, 3)
