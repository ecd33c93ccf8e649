"""GLUE / XNLI / generic readers on small files in the official layouts (written here),
their error messages, the in-graph packing against the original's truncation rule, and the
two tokenizers' features."""

import json
import os
import random

import numpy as np
import pytest
import tensorflow as tf

from tasks.classification import data as cd
from tasks.classification.features import convert_examples
from tests import warm_processes
from text.graph_packing import pack_ids
from text.packing import truncate_seq_pair
from text.tokenization import validate_case_matches_checkpoint

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_glue_layouts(tmp_path):
    write(tmp_path / "CoLA", "train.tsv", "gj04\t1\t\tThe boy ran.\ngj04\t0\t*\tRan boy the.\n")
    write(tmp_path / "SST-2", "train.tsv", "sentence\tlabel\nit 's \" fine \" . \t1\n")
    write(tmp_path / "SST-2", "test.tsv", "index\tsentence\n7\ta film .\n")
    write(tmp_path / "MRPC", "train.tsv", "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
          "1\t11\t12\tHe said .\tHe said so .\n")
    write(tmp_path / "STS-B", "dev.tsv", "index\tgenre\tfilename\tyear\told_index\tsource1\t"
          "source2\tsentence1\tsentence2\tscore\n0\tmain\tMSRvid\t2012\t0\tnone\tnone\tA man."
          "\tA guy.\t4.750\n")
    write(tmp_path / "QQP", "train.tsv", "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
          "1\t2\t3\tWhy?\tHow?\t0\n2\t4\tbroken row\n")
    mnli = "\t".join(["index", "promptID", "pairID", "genre", "s1bp", "s2bp", "s1p", "s2p",
                      "sentence1", "sentence2", "label1", "gold_label"]) + "\n"
    row = ["0", "1", "2", "fiction", "(", "(", "(", "(", "A cat sat.", "A cat.", "neutral",
           "entailment"]
    write(tmp_path / "MNLI", "dev_matched.tsv", mnli + "\t".join(row) + "\n")
    write(tmp_path / "MNLI", "dev_mismatched.tsv", mnli + "\t".join(
        row[:-1] + ["contradiction"]) + "\n")
    write(tmp_path / "RTE", "dev.tsv", "index\tsentence1\tsentence2\tlabel\n0\tA.\tB.\t"
          "not_entailment\n")
    write(tmp_path / "WNLI", "train.tsv", "index\tsentence1\tsentence2\tlabel\n0\tA.\tB.\t1\n")

    cola = cd.get_processor("CoLA", str(tmp_path / "CoLA")).get_examples("train")
    assert [(e.text_a, e.label) for e in cola] == [("The boy ran.", "1"), ("Ran boy the.", "0")]
    sst = cd.get_processor("SST-2", str(tmp_path / "SST-2"))
    assert sst.get_examples("train")[0].text_a == 'it \'s " fine " . '  # no quoting
    test = sst.get_examples("test")[0]
    assert (test.guid, test.text_a, test.label) == ("test-7", "a film .", None)
    mrpc = cd.get_processor("mrpc", str(tmp_path / "MRPC")).get_examples("train")[0]
    assert (mrpc.text_a, mrpc.text_b, mrpc.label) == ("He said .", "He said so .", "1")
    sts = cd.get_processor("STS-B", str(tmp_path / "STS-B")).get_examples("dev")[0]
    assert (sts.text_a, sts.text_b, sts.label) == ("A man.", "A guy.", 4.75)
    qqp = cd.get_processor("QQP", str(tmp_path / "QQP")).get_examples("train")
    assert len(qqp) == 1 and qqp[0].label == "0"  # the broken row is skipped and counted
    mnli_p = cd.get_processor("MNLI", str(tmp_path / "MNLI"))
    assert mnli_p.splits() == ["dev", "dev_mismatched"]
    assert mnli_p.get_examples("dev")[0].label == "entailment"  # gold_label, last column
    assert mnli_p.get_examples("dev_mismatched")[0].label == "contradiction"
    assert cd.get_processor("RTE", str(tmp_path / "RTE")).get_examples("dev")[0].label == \
        "not_entailment"
    assert cd.get_processor("WNLI", str(tmp_path / "WNLI")).get_examples("train")[0].text_b \
        == "B."


def test_xnli_layout(tmp_path):
    write(tmp_path, "multinli/multinli.train.de.tsv", "premise\thypo\tlabel\nEin Hund.\tEin "
          "Tier.\tentailment\nA.\tB.\tcontradictory\n")
    header = "\t".join(["language", "gold_label"] + [f"c{i}" for i in range(4)] +
                       ["sentence1", "sentence2"]) + "\n"
    write(tmp_path, "xnli.dev.tsv", header + "de\tneutral\t0\t1\t2\t3\tEin Satz.\tNoch.\n"
          "fr\tneutral\t0\t1\t2\t3\tUne.\tDeux.\n")
    p = cd.get_processor("XNLI", str(tmp_path), language="de")
    assert [e.label for e in p.get_examples("train")] == ["entailment", "contradiction"]
    dev = p.get_examples("dev")
    assert [(e.text_a, e.text_b) for e in dev] == [("Ein Satz.", "Noch.")]


def test_generic_csv_and_jsonl(tmp_path):
    write(tmp_path / "csv", "train.csv", 'text,other,label\n"Hello, world",x,spam\nHi,y,ham\n')
    p = cd.get_processor("generic", str(tmp_path / "csv"), text_a_column="text",
                         label_column="label")
    assert p.get_labels() == ["ham", "spam"]
    assert p.get_examples("train")[0].text_a == "Hello, world"
    write(tmp_path / "jl", "train.jsonl", json.dumps({"q": "a", "p": "b", "y": 2}) + "\n")
    p = cd.get_processor("generic", str(tmp_path / "jl"), text_a_column="q",
                         text_b_column="p", label_column="y")
    e = p.get_examples("train")[0]
    assert (e.text_a, e.text_b, e.label, p.get_labels()) == ("a", "b", "2", ["2"])
    with pytest.raises(cd.DataError,
                       match=r"train.jsonl:1: no value for column\(s\) \['z', 'label'\]"):
        cd.get_processor("generic", str(tmp_path / "jl"), text_a_column="z").get_examples(
            "train")


def test_generic_examples_are_named_by_the_files_own_ids(tmp_path):
    # A Kaggle-style CSV: id,review,sentiment. Its ids name the examples (the predictions
    # table's first column), not the line numbers 2, 3, 4.
    write(tmp_path / "csv", "test.csv", "id,review,sentiment\nr-17,Great!,\nr-4,Dull.,\n")
    p = cd.get_processor("generic", str(tmp_path / "csv"), text_a_column="review",
                         label_column="sentiment")
    assert [e.guid for e in p.get_examples("test")] == ["test-r-17", "test-r-4"]
    # --id_column names another column; a row without it is an error naming the line.
    write(tmp_path / "jl", "test.jsonl", json.dumps({"key": 9, "text": "a"}) + "\n" +
          json.dumps({"text": "b"}) + "\n")
    p = cd.get_processor("generic", str(tmp_path / "jl"), text_a_column="text",
                         id_column="key")
    with pytest.raises(cd.DataError, match=r"test.jsonl:2: no value for column\(s\) \['key'\]"):
        p.get_examples("test")
    # Without an id column, the line in the file.
    p = cd.get_processor("generic", str(tmp_path / "jl"), text_a_column="text")
    assert [e.guid for e in p.get_examples("test")] == ["test-1", "test-2"]


def test_errors_name_file_line_and_fix(tmp_path):
    write(tmp_path, "train.tsv", "sentence\tlabel\ngood\t1\nbad\t2\n")
    with pytest.raises(cd.DataError, match=r"train.tsv:3: label '2' is not one of \['0', '1'\]"):
        cd.get_processor("SST-2", str(tmp_path)).get_examples("train")
    write(tmp_path, "dev.tsv", "index\tsentence1\tsentence2\tlabel\n0\tonly two\n")
    with pytest.raises(cd.DataError, match=r"dev.tsv:2: 2 columns, expected at least 4"):
        cd.get_processor("RTE", str(tmp_path)).get_examples("dev")
    with pytest.raises(cd.DataError, match="test.tsv: file not found"):
        cd.get_processor("RTE", str(tmp_path)).get_examples("test")
    with pytest.raises(cd.DataError, match="--task_name='SQUAD' is not one of"):
        cd.get_processor("SQUAD", str(tmp_path))
    with pytest.raises(ValueError, match="set --do_lower_case=True"):
        validate_case_matches_checkpoint(False, "/m/uncased_L-12_H-768_A-12/bert_model.ckpt")
    validate_case_matches_checkpoint(False, "/m/cased_L-12_H-768_A-12/bert_model.ckpt")


def test_casing_is_checked_against_a_hugging_face_tokenizer_config(tmp_path):
    import json
    uncased, cased = tmp_path / "uncased", tmp_path / "cased"
    for folder, lower in ((uncased, True), (cased, False)):
        folder.mkdir()
        (folder / "tokenizer_config.json").write_text(json.dumps(
            {"tokenizer_class": "BertTokenizer", "do_lower_case": lower}))
        (folder / "model.safetensors").write_bytes(b"")
    with pytest.raises(ValueError, match=r"uncased/tokenizer_config.json: the model is an "
                       r"uncased one .* set --do_lower_case=True"):
        validate_case_matches_checkpoint(False, str(uncased / "model.safetensors"))
    with pytest.raises(ValueError, match=r"is a cased one .* set --do_lower_case=False"):
        validate_case_matches_checkpoint(True, str(cased))  # the folder itself
    validate_case_matches_checkpoint(True, str(uncased))
    validate_case_matches_checkpoint(False, str(cased / "model.safetensors"))
    validate_case_matches_checkpoint(True, str(tmp_path / "nothing_here" / "x.ckpt"))


def test_in_graph_packing_follows_the_original_truncation():
    rng = random.Random(0)
    # In a graph, as the input pipelines run it, traced once: the length is a tensor
    # (eagerly, the 200 batches took 24 s).
    packed = tf.function(pack_ids, reduce_retracing=True)
    for _ in range(200):
        m = rng.randint(5, 20)
        rows_a = [[rng.randint(5, 99) for _ in range(rng.randint(1, 25))] for _ in range(4)]
        rows_b = [[rng.randint(5, 99) for _ in range(rng.choice([0, rng.randint(1, 25)]))]
                  for _ in range(4)]
        ragged_b = tf.RaggedTensor.from_row_lengths(
            tf.constant([t for r in rows_b for t in r], tf.int64), [len(r) for r in rows_b])
        out = {name: value.numpy().tolist() for name, value in packed(
            tf.ragged.constant(rows_a, tf.int64), ragged_b, tf.constant(m), 2, 3).items()}
        for i, (a, b) in enumerate(zip(rows_a, rows_b)):
            a, b = list(a), list(b)
            if b:
                truncate_seq_pair(a, b, m - 3)  # the original's loop
            else:
                a = a[:m - 2]
            ids = [2] + a + [3] + (b + [3] if b else [])
            pad = [0] * (m - len(ids))
            assert out["input_ids"][i] == ids + pad
            assert out["segment_ids"][i] == \
                [0] * (len(a) + 2) + [1] * (len(ids) - len(a) - 2) + pad
            assert out["input_mask"][i] == [1] * len(ids) + pad


def test_python_and_graph_features_are_identical(tmp_path):
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat",
             "##s", "un", "##want", "##ed", ",", ".", "é", "café"]
    vocab = write(tmp_path, "vocab.txt", "\n".join(words) + "\n")
    examples = [cd.InputExample("1", "The cats sat on the mat.", "Unwanted, café!"),
                cd.InputExample("2", "CAFÉ " * 30, None),
                cd.InputExample("3", "the cat " * 20, "sat " * 3),
                cd.InputExample("4", "", "")]
    a = convert_examples(examples, str(vocab), True, 16, "python")
    b = convert_examples(examples, str(vocab), True, 16, "graph")
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.mark.parametrize("long_document", ["truncate", "head_tail", "windows"])
def test_features_are_the_python_tokenizers_packed_one_example_at_a_time(tmp_path,
                                                                         long_document):
    # The default conversion tokenizes in batches with the compiled WordPiece where it
    # agrees; the reference is the original's way: FullTokenizer and pack_document, one
    # example at a time. Texts where the compiled tokenizer differs (a vertical tab, a
    # private-use character, a capital sigma when lower-casing) are among them.
    from text import packing
    from text.tokenization import FullTokenizer

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat",
             "##s", "un", "##want", "##ed", ",", ".", "é", "cafe", "σ", "##σ", "ο", "##δ",
             "##ο", "!"]
    vocab = write(tmp_path, "vocab.txt", "\n".join(words) + "\n")
    texts = ["The cats sat on the mat.", "Unwanted, café!", "CAFÉ " * 30, "",
             "the\x0bcat", "the \ue000 mat", "ΟΔΟΣ the cat", "the cat " * 20, "   "]
    examples = [cd.InputExample(str(i), a, b) for i, (a, b) in enumerate(
        [(t, None) for t in texts] + list(zip(texts, reversed(texts))))]
    got = convert_examples(examples, str(vocab), True, 16, "python", batch_size=4,
                           long_document=long_document, doc_stride=3)
    tokenizer = FullTokenizer(str(vocab), do_lower_case=True)
    want, index = [], []
    for i, e in enumerate(examples):
        windows = packing.pack_document(tokenizer, e.text_a, e.text_b, 16, long_document, 3)
        want.extend(windows)
        index.extend([i] * len(windows))
    for name in ("input_ids", "input_mask", "segment_ids"):
        np.testing.assert_array_equal(got[name], [getattr(p, name) for p in want],
                                      err_msg=name)
    if long_document == "windows":
        assert got["example_index"].tolist() == index


def _mnli_folder(root, rows=6):
    """GLUE's layout: glue_data/MNLI with its five files, glue_data/diagnostic beside."""
    mnli, diagnostic = root / "MNLI", root / "diagnostic"
    mnli.mkdir()
    diagnostic.mkdir()
    head = "\t".join(["index", "promptID", "pairID", "genre", "s1_bp", "s2_bp", "s1_p",
                      "s2_p", "sentence1", "sentence2"])
    labels = ["entailment", "neutral", "contradiction"]
    for name in ("train.tsv", "dev_matched.tsv", "dev_mismatched.tsv"):
        body = "".join("\t".join([str(i)] + ["x"] * 7 + ["good movie", "a film",
                                                         labels[i % 3], labels[i % 3]]) + "\n"
                       for i in range(rows))
        (mnli / name).write_text(head + "\tlabel1\tgold_label\n" + body)
    for name in ("test_matched.tsv", "test_mismatched.tsv"):
        (mnli / name).write_text(head + "\n" + "".join(
            "\t".join([str(i)] + ["x"] * 7 + ["good movie", "a film"]) + "\n"
            for i in range(rows)))
    (diagnostic / "diagnostic.tsv").write_text("index\tsentence1\tsentence2\n" + "".join(
        f"{i}\tThe cat sat.\tA cat sat.\n" for i in range(4)))
    return mnli


def test_mnli_predicts_the_glue_diagnostic_set_and_the_submission_bundles_it(
        tmp_path, tiny_config_dict, write_vocab):
    import zipfile

    from modeling import BertConfig
    from tasks.classification import ClassificationConfig, ClassificationTask
    mnli = _mnli_folder(tmp_path)
    vocab = write_vocab(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "movie", "a",
                         "film", "the", "cat", "sat", "."])
    (tmp_path / "bert_config.json").write_text(json.dumps(tiny_config_dict))
    task = ClassificationTask(ClassificationConfig(
        task_name="MNLI", data_dir=str(mnli), vocab_file=vocab, max_seq_length=16,
        bert_config_file=str(tmp_path / "bert_config.json")))
    out = tmp_path / "mnli_out"
    out.mkdir()
    task.prepare(str(out), do_predict=True)
    model = task.build_model(BertConfig.from_json_file(str(tmp_path / "bert_config.json")))
    files, _ = task.predict(model)
    assert {"MNLI-m.tsv", "MNLI-mm.tsv", "AX.tsv", "test_results_ax.tsv"} <= set(files)
    ax = files["AX.tsv"].splitlines()
    assert ax[0] == "index\tprediction" and [r.split("\t")[0] for r in ax[1:]] == [
        "0", "1", "2", "3"]
    assert {r.split("\t")[1] for r in ax[1:]} <= {"entailment", "neutral", "contradiction"}
    for name, text in files.items():
        (out / name).write_text(text)
    # Another run's file, and the bundle: every file checked, the zip at the top level.
    other = tmp_path / "mrpc_out"
    other.mkdir()
    (other / "MRPC.tsv").write_text("index\tprediction\n0\t1\n1\t0\n")
    result = warm_processes.run(
        [os.path.join(ROOT, "glue_submission.py"),
         f"--run_dirs={out},{other}", f"--output_file={tmp_path / 'glue.zip'}"],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "AX.tsv: 4 predictions" in result.stdout
    assert "4 rows, the official test set has 1104" in result.stderr
    assert "No file for CoLA, SST-2, STS-B, QQP, QNLI, RTE, WNLI" in result.stderr
    with zipfile.ZipFile(tmp_path / "glue.zip") as archive:
        assert sorted(archive.namelist()) == ["AX.tsv", "MNLI-m.tsv", "MNLI-mm.tsv",
                                              "MRPC.tsv"]
    (other / "MRPC.tsv").write_text("index\tprediction\n0\tyes\n")
    bad = warm_processes.run(
        [os.path.join(ROOT, "glue_submission.py"), f"--run_dirs={other}",
         f"--output_file={tmp_path / 'bad.zip'}"], cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=ROOT))
    assert bad.returncode == 1 and "MRPC.tsv:2: 'yes' is not one of ['0', '1']" in bad.stderr
    assert not (tmp_path / "bad.zip").exists()


def test_every_file_a_run_writes_for_the_leaderboard_is_one_the_submission_checks():
    """One table of the leaderboard's names: each task's and split's file is a file
    glue_submission.py knows (its answers and row count)."""
    from tasks.classification import submission
    written = set(submission.FILE_OF_TASK.values()) | set(submission.FILE_OF_SPLIT.values())
    assert written == set(submission.TASKS)
    assert submission.leaderboard_file("MNLI", "_ax") == "AX"
    assert submission.leaderboard_file("sst-2") == "SST-2"
    assert submission.leaderboard_file("generic") is None
