"""Fill-mask (`fill_mask.py`, `tasks.masked_lm`): each [MASK]'s top-k words and
probabilities against the original's masked-LM head (`get_masked_lm_output` of its
run_pretraining.py, under tf.compat.v1) on a checkpoint the original's code wrote; the
export answered by `serving.load` as `FillMask` answers; and the bad inputs, in one line.
"""

import json
import os

import numpy as np
import pytest

from tasks.masked_lm import masks
from tests import original_checkpoint, warm_processes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
TEXTS = ["the cat sat on a [MASK] .", "[MASK] walked to markets with baskets of [MASK] .",
         "dogs ran past old [MASK] near green fields and the [MASK] [MASK] ."]


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("original"))
    vocab, config, checkpoint = original_checkpoint.write_checkpoint(folder)
    return {"folder": folder, "vocab": vocab, "config": config, "checkpoint": checkpoint}


def test_texts_with_masks_become_ids_and_positions_by_hand():
    vocab = {"[CLS]": 1, "[SEP]": 2, "[MASK]": 3, "a": 4, "b": 5}
    tokenize = lambda texts: [[vocab[w] for w in t.split()] for t in texts]  # noqa: E731
    rows = masks.ids_with_masks(["a [MASK] b", "[MASK]a", "b"], tokenize, 3)
    assert rows == [[4, 3, 5], [3, 4], [5]]
    inputs, counts, given = masks.pack(rows, 1, 2, 3, max_seq_length=8, seq_multiple=4)
    assert inputs["input_ids"].tolist() == [[1, 4, 3, 5, 2, 0, 0, 0], [1, 3, 4, 2, 0, 0, 0, 0],
                                            [1, 5, 2, 0, 0, 0, 0, 0]]
    assert inputs["masked_lm_positions"].tolist() == [[2], [1], [0]]
    assert counts.tolist() == [1, 1, 0] and given.tolist() == [1, 1, 0]
    # A mask past the length the model reads is counted as given, not as fitting.
    _, counts, given = masks.pack([[4, 4, 4, 3]], 1, 2, 3, max_seq_length=5)
    assert (counts.tolist(), given.tolist()) == ([0], [1])
    ids, best = masks.top_k(np.array([[0.1, 0.5, 0.1, 0.3]]), 3)
    assert ids.tolist() == [[1, 3, 0]] and best.tolist() == [[0.5, 0.3, 0.1]]  # ties: lower id


def test_top_k_and_probabilities_are_the_originals(original):
    from tasks.masked_lm.predict import FillMask
    predictor = FillMask.from_files(original["config"], original["vocab"],
                                    original["checkpoint"], do_lower_case=True,
                                    max_seq_length=32)
    answers = predictor(TEXTS, top_k=5)
    assert [a["text"] for a in answers] == TEXTS
    assert [len(a["predictions"]) for a in answers] == [1, 2, 3]
    # The same ids and masked positions through the original's graph and checkpoint.
    rows = masks.ids_with_masks(TEXTS, masks.full_tokenizer_ids(predictor.tokenizer),
                                predictor.ids["[MASK]"])
    inputs, counts, _ = masks.pack(rows, predictor.ids["[CLS]"], predictor.ids["[SEP]"],
                                   predictor.ids["[MASK]"], 32)
    probabilities = np.exp(original_checkpoint.masked_lm_log_probs(
        original["folder"], original["config"], original["checkpoint"], inputs)).reshape(
        inputs["masked_lm_positions"].shape + (-1,))
    vocab = original_checkpoint.VOCAB
    for row, answer in enumerate(answers):
        for mask, predictions in enumerate(answer["predictions"]):
            truth = probabilities[row, mask]
            top = np.argsort(-truth, kind="stable")[:5]
            assert [p["id"] for p in predictions] == top.tolist()
            assert [p["token"] for p in predictions] == [vocab[i] for i in top]
            assert np.max(np.abs([p["probability"] for p in predictions] - truth[top])) <= 1e-5
    # Not the same answer everywhere: the checkpoint's head reads each context.
    assert len({tuple(p["id"] for p in m) for a in answers for m in a["predictions"]}) > 1


def test_fill_mask_script_export_and_serving_load_answer_alike(original, tmp_path):
    from tasks.masked_lm.predict import FillMask
    flags = [f"--vocab_file={original['vocab']}", f"--bert_config_file={original['config']}",
             f"--init_checkpoint={original['checkpoint']}", "--max_seq_length=32"]
    (tmp_path / "in.txt").write_text("\n".join(TEXTS) + "\n")
    done = warm_processes.run([os.path.join(ROOT, "fill_mask.py"),
                               f"--input_file={tmp_path / 'in.txt'}",
                               f"--output_file={tmp_path / 'out.jsonl'}", "--top_k=3"] + flags,
                              env=ENV, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    written = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    expected = FillMask.from_files(original["config"], original["vocab"],
                                   original["checkpoint"], max_seq_length=32)(TEXTS, top_k=3)
    assert [[[p["id"] for p in m] for m in a["predictions"]] for a in written] == \
        [[[p["id"] for p in m] for m in a["predictions"]] for a in expected]
    export = tmp_path / "export"
    done = warm_processes.run([os.path.join(ROOT, "export_saved_model.py"),
                               "--task_type=masked_lm", "--top_k=3",
                               f"--export_dir={export}"] + flags, env=ENV, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (export / "model.tflite").exists()
    import serving
    for backend in ("tflite", "saved_model"):
        answer = serving.load(str(export), backend=backend)(TEXTS + ["no mask here"])
        assert answer["mask_count"].tolist() == [1, 2, 3, 0]
        for row, truth in enumerate(expected):
            for mask, predictions in enumerate(truth["predictions"]):
                assert answer["id"][row, mask].tolist() == [p["id"] for p in predictions]
                assert [t.decode() for t in answer["token"][row, mask]] == \
                    [p["token"] for p in predictions]
                assert np.max(np.abs(answer["probability"][row, mask] -
                                     [p["probability"] for p in predictions])) <= 1e-5
        assert answer["id"][3].tolist() == [[-1] * 3] * 3  # padding of a text without one


def test_bad_inputs_are_one_line(original, tmp_path):
    from modeling import BertConfig, BertEncoder, save_google_checkpoint
    from tasks.masked_lm.predict import FillMask
    flags = [f"--vocab_file={original['vocab']}", f"--bert_config_file={original['config']}",
             f"--init_checkpoint={original['checkpoint']}", "--max_seq_length=32",
             f"--output_file={tmp_path / 'out.jsonl'}"]
    (tmp_path / "in.txt").write_text("the [MASK] sat .\nno mask on this line\n")
    done = warm_processes.run([os.path.join(ROOT, "fill_mask.py"),
                               f"--input_file={tmp_path / 'in.txt'}"] + flags, env=ENV,
                              timeout=600)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "in.txt:2: no [MASK] in this line" in done.stderr
    assert not (tmp_path / "out.jsonl").exists()
    # A checkpoint without the masked-LM head (an encoder alone): said so, and the rough
    # predictions of the word embeddings alone only when asked for.
    encoder = BertEncoder(BertConfig.from_json_file(original["config"]))
    headless = save_google_checkpoint(encoder, str(tmp_path / "encoder" / "bert_model.ckpt"))
    (tmp_path / "in.txt").write_text("the [MASK] sat .\n")
    done = warm_processes.run([os.path.join(ROOT, "fill_mask.py"),
                               f"--input_file={tmp_path / 'in.txt'}"] + flags[:2] + [
                                  f"--init_checkpoint={headless}"] + flags[3:], env=ENV,
                              timeout=600)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "no masked-LM head" in done.stderr and "--tied_embeddings_only" in done.stderr
    rough = FillMask.from_files(original["config"], original["vocab"], headless,
                                max_seq_length=32, tied_embeddings_only=True)
    answer = rough(["the [MASK] sat ."], top_k=2)[0]["predictions"][0]
    # The last layer's vector at the mask times each word's embedding, by hand.
    table = encoder.word_embeddings.numpy()
    inputs = {"input_ids": np.array([[rough.ids["[CLS]"], rough.tokenizer.vocab["the"],
                                      rough.ids["[MASK]"], rough.tokenizer.vocab["sat"],
                                      rough.tokenizer.vocab["."], rough.ids["[SEP]"]]],
                                    np.int32)}
    inputs.update(input_mask=np.ones_like(inputs["input_ids"]),
                  segment_ids=np.zeros_like(inputs["input_ids"]))
    vector = encoder(inputs)["sequence_output"].numpy()[0, 2]
    scores = table @ vector
    expected = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
    assert [p["id"] for p in answer] == np.argsort(-expected)[:2].tolist()
    assert answer[0]["probability"] == pytest.approx(expected.max(), abs=1e-5)
    with pytest.raises(masks.NoMaskError, match="text 1 .* no \\[MASK\\]"):
        rough(["a [MASK] .", "none"])
