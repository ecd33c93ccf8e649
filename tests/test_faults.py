"""The fault and bad-input suite: every entry point given broken configs, checkpoints,
vocabularies, corpora, task files, TFRecords and flags, outputs that would overwrite
inputs, odd serving requests, kills at the steps of its writers and a full disk.

Each case of the table below is one command line. A refused input must end with exit
status 1, a one-line `error: ...` naming the file, flag or field (and what to do), no
traceback on the console, and no file under a final name that is incomplete or missing
from its set (nor a temporary left behind). The cases that already behaved are kept here
so that they stay good. Commands run in parallel processes, to keep the suite short.
"""

import concurrent.futures
import json
import os
import random
import shutil

import numpy as np
import pytest

from tests import warm_processes
from tests.pretraining_data import write_config, write_records

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
WORDS = ["good", "great", "fine", "nice", "bad", "awful", "poor", "sad", "the", "movie",
         "was", "a", "plot", "and", "acting", "very", "really", "film", "anna", "boris",
         "paris", "oslo", "met", "in", "visited", "who", "where", "did", "go", "to",
         "lives", ".", "?", ",", "it"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS  # 40 tokens


def _sentence(rng, n=6):
    return " ".join(rng.choice(WORDS[:18]) for _ in range(n))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Good inputs of every kind (tiny), and broken copies of them."""
    w = tmp_path_factory.mktemp("faults")
    rng = random.Random(0)
    (w / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    write_config(w / "bert_config.json")
    # Classification (SST-2 layout).
    (w / "sst").mkdir()
    for split in ("train", "dev"):
        rows = ["sentence\tlabel"] + [f"{_sentence(rng)}\t{i % 2}" for i in range(24)]
        (w / "sst" / f"{split}.tsv").write_text("\n".join(rows) + "\n")
    (w / "sst" / "test.tsv").write_text("index\tsentence\n0\tgood movie\n")
    # CoNLL.
    (w / "ner").mkdir()
    conll = "".join(f"anna B-PER\nvisited O\n{city} B-LOC\n\n" for city in ("paris", "oslo")
                    for _ in range(8))
    for name in ("train.txt", "valid.txt", "test.txt"):
        (w / "ner" / name).write_text(conll)
    # SQuAD.
    context = "anna lives in paris . boris lives in oslo ."
    qas = [{"id": f"q{i}", "question": "where did anna go ?",
            "answers": [{"text": "paris", "answer_start": context.index("paris")}]}
           for i in range(8)]
    squad = {"data": [{"paragraphs": [{"context": context, "qas": qas}]}]}
    (w / "squad.json").write_text(json.dumps(squad))
    # Pre-training records and text.
    write_records(w / "a.tfrecord", 64, seed=0)
    write_records(w / "b.tfrecord", 64, seed=1)
    (w / "corpus.txt").write_text("\n".join(_sentence(rng) + " ." for _ in range(40)) + "\n")
    _write_classifier_checkpoint(w)
    return w


def _write_classifier_checkpoint(w):
    import modeling
    config = modeling.BertConfig.from_json_file(str(w / "bert_config.json"))
    (w / "ckpt").mkdir()
    modeling.save_google_checkpoint(modeling.BertClassifier(config, 2),
                                    str(w / "ckpt" / "model.ckpt"))


# ----------------------------------------------------------------------------- inputs
def _broken(w, name, text=None, data=None):
    """A broken input file in the world (written once)."""
    path = w / "broken" / name
    path.parent.mkdir(exist_ok=True)
    if not path.exists():
        path.write_bytes(data) if data is not None else path.write_text(text)
    return str(path)


def _config(w, name, **fields):
    config = json.loads((w / "bert_config.json").read_text())
    config.update(fields)
    return _broken(w, name, json.dumps({k: v for k, v in config.items() if v is not None}))


def _truncated(w, source, name, keep=0.6):
    data = open(source, "rb").read()
    return _broken(w, name, data=data[:int(len(data) * keep)])


def _sst_with(w, name, dev_rows=None, train_rows=None):
    folder = w / "broken" / name
    if not folder.exists():
        shutil.copytree(w / "sst", folder)
        for split, rows in (("dev", dev_rows), ("train", train_rows)):
            if rows is not None:
                (folder / f"{split}.tsv").write_text("sentence\tlabel\n" + rows)
    return str(folder)


def _ner_with(w, name, dev_text):
    folder = w / "broken" / name
    if not folder.exists():
        shutil.copytree(w / "ner", folder)
        (folder / "valid.txt").write_text(dev_text)
    return str(folder)


# ----------------------------------------------------------------------------- commands
def _flags(**flags):
    return [f"--{k}" if v is True else f"--no{k}" if v is False else f"--{k}={v}"
            for k, v in flags.items() if v is not None]


def classifier(w, out, **flags):
    base = dict(task_name="SST-2", data_dir=w / "sst", vocab_file=w / "vocab.txt",
                bert_config_file=w / "bert_config.json", output_dir=out, max_seq_length=16,
                train_batch_size=8, num_train_epochs=1, do_train=True)
    return ["run_classifier.py"] + _flags(**dict(base, **flags))


def from_text(w, out, **flags):
    base = dict(input_text=w / "corpus.txt", output_dir=out, budget_minutes=0.05)
    return ["pretrain_from_text.py"] + _flags(**dict(base, **flags))


def ner(w, out, **flags):
    base = dict(data_dir=w / "ner", vocab_file=w / "vocab.txt",
                bert_config_file=w / "bert_config.json", output_dir=out, max_seq_length=16,
                train_batch_size=8, num_train_epochs=1, do_train=True, do_eval=True)
    return ["run_ner.py"] + _flags(**dict(base, **flags))


def squad(w, out, **flags):
    base = dict(vocab_file=w / "vocab.txt", bert_config_file=w / "bert_config.json",
                output_dir=out, max_seq_length=32, doc_stride=16, max_query_length=8,
                train_batch_size=8, num_train_epochs=1, do_train=True,
                train_file=w / "squad.json")
    return ["run_squad.py"] + _flags(**dict(base, **flags))


def pretraining(w, out, **flags):
    base = dict(input_file=w / "a.tfrecord", bert_config_file=w / "bert_config.json",
                output_dir=out, max_seq_length=24, max_predictions_per_seq=4,
                train_batch_size=8, num_train_steps=4, num_warmup_steps=1, do_train=True)
    return ["run_pretraining.py"] + _flags(**dict(base, **flags))


def records(w, out, **flags):
    base = dict(input_file=w / "corpus.txt", output_file=f"{out}/a.tfrecord,{out}/b.tfrecord",
                vocab_file=w / "vocab.txt", max_seq_length=24, max_predictions_per_seq=4,
                num_workers=1)
    return ["create_pretraining_data.py"] + _flags(**dict(base, **flags))


def features(w, out, **flags):
    (w / "lines.txt").write_text("good movie\nbad film ||| very bad\n")
    base = dict(input_file=w / "lines.txt", output_file=f"{out}/features.jsonl",
                vocab_file=w / "vocab.txt", bert_config_file=w / "bert_config.json",
                init_checkpoint=w / "ckpt" / "model.ckpt", max_seq_length=16)
    return ["extract_features.py"] + _flags(**dict(base, **flags))


def exporter(w, out, **flags):
    base = dict(bert_config_file=w / "bert_config.json",
                init_checkpoint=w / "ckpt" / "model.ckpt", vocab_file=w / "vocab.txt",
                max_seq_length=16, labels="0,1", export_dir=f"{out}/export")
    return ["export_saved_model.py"] + _flags(**dict(base, **flags))


# (name, command(world, output folder), what the error says; paths (under the output
# folder) that must not exist afterwards)
ERROR_CASES = [
    # config
    ("config_missing_field", lambda w, o: classifier(
        w, o, bert_config_file=_config(w, "no_vocab.json", vocab_size=None)),
     ["no_vocab.json", "required field 'vocab_size'"], ["ckpt-1.index"]),
    ("config_not_json", lambda w, o: classifier(
        w, o, bert_config_file=_broken(w, "config.json", "{vocab_size: 40")),
     ["config.json"], []),
    ("config_vocab_size_1e12", lambda w, o: pretraining(
        w, o, bert_config_file=_config(w, "huge.json", vocab_size=10 ** 12)),
     ["huge.json", "'vocab_size'"], []),
    ("config_heads_do_not_divide", lambda w, o: classifier(
        w, o, bert_config_file=_config(w, "heads.json", num_attention_heads=5)),
     ["heads.json", "not a multiple"], []),
    ("config_too_short_for_length", lambda w, o: classifier(w, o, max_seq_length=128),
     ["--max_seq_length=128 exceeds max_position_embeddings=64"], []),
    # flags
    ("flag_negative_learning_rate", lambda w, o: classifier(w, o, learning_rate=-1e-3),
     ["--learning_rate=-0.001: must be a positive number"], ["train_flags.json"]),
    ("flag_zero_batch", lambda w, o: pretraining(w, o, train_batch_size=0),
     ["--train_batch_size=0: must be between 1 and 65,536"], []),
    ("flag_negative_epochs", lambda w, o: ner(w, o, num_train_epochs=-3),
     ["--num_train_epochs=-3.0: must be a positive number"], ["ckpt-1.index"]),
    ("flag_warmup_above_one", lambda w, o: squad(w, o, warmup_proportion=2),
     ["--warmup_proportion=2.0: must be between 0 and 1"], []),
    ("flag_missing_output_dir", lambda w, o: classifier(w, None),
     ["--output_dir is required"], []),
    ("flag_every_missing_one_named_at_once", lambda w, o: ["export_saved_model.py",
                                                           "--labels=0,1"],
     ["--vocab_file, --export_dir, --bert_config_file and --init_checkpoint are required"],
     []),
    ("flag_every_missing_training_one_named_at_once", lambda w, o: [
        "run_classifier.py", "--do_train", "--task_name=SST-2"],
     ["--bert_config_file, --vocab_file, --data_dir and --output_dir are required"], []),
    ("flag_batch_not_split", lambda w, o: pretraining(
        w, o, train_batch_size=7, gradient_accumulation_steps=2),
     ["--train_batch_size=7", "multiple of 2"], []),
    ("flag_max_seq_length_two", lambda w, o: classifier(w, o, max_seq_length=2),
     ["--max_seq_length=2: must be at least 3"], []),
    # Out of sane ranges: a typo, refused before anything runs (docs/errors.md).
    ("flag_learning_rate_lost_its_minus", lambda w, o: classifier(w, o, learning_rate=2e5),
     ["--learning_rate=200000.0: must be at most 0.1", "did you mean 2e-05?"],
     ["train_flags.json"]),
    ("flag_learning_rate_grid_value", lambda w, o: ner(w, o, learning_rate="2e-5,3e4"),
     ["--learning_rate=30000.0: must be at most 0.1", "did you mean 3e-04?"], []),
    ("flag_batch_beyond_any_bert_run", lambda w, o: classifier(w, o, train_batch_size=10 ** 6),
     ["--train_batch_size=1000000: must be between 1 and 65,536"], []),
    ("flag_eval_batch_beyond_any_bert_run", lambda w, o: squad(w, o, eval_batch_size=10 ** 6),
     ["--eval_batch_size=1000000: must be between 1 and 65,536"], []),
    ("flag_epochs_beyond_sense", lambda w, o: classifier(w, o, num_train_epochs=30000),
     ["--num_train_epochs=30000.0: must be a positive number, at most 1000"], []),
    ("flag_steps_beyond_sense", lambda w, o: pretraining(w, o, num_train_steps=10 ** 9),
     ["--num_train_steps=1000000000: must be between 1 and 100,000,000"], []),
    ("flag_warmup_longer_than_training", lambda w, o: pretraining(
        w, o, num_train_steps=4, num_warmup_steps=10),
     ["--num_warmup_steps=10 is more than --num_train_steps=4"], ["ckpt-4.index"]),
    # checkpoints
    ("checkpoint_missing", lambda w, o: classifier(w, o, init_checkpoint=w / "nope.ckpt"),
     ["nope.ckpt"], ["ckpt-3.index"]),
    ("checkpoint_truncated_data", lambda w, o: classifier(w, o, init_checkpoint=_truncated_ckpt(
        w)), ["cut.ckpt", "damaged or was cut short"], ["ckpt-3.index"]),
    ("checkpoint_config_has_fewer_layers", lambda w, o: classifier(
        w, o, init_checkpoint=w / "ckpt" / "model.ckpt",
        bert_config_file=_config(w, "one_layer.json", num_hidden_layers=1)),
     ["model.ckpt", "has 2 encoder layers but the config describes 1"], []),
    ("checkpoint_other_size", lambda w, o: classifier(
        w, o, init_checkpoint=w / "ckpt" / "model.ckpt",
        bert_config_file=_config(w, "wider.json", hidden_size=64, intermediate_size=64)),
     ["model.ckpt", "does not fit this model"], []),
    # vocabularies
    ("vocab_shorter_than_the_model", lambda w, o: classifier(
        w, o, vocab_file=_broken(w, "short_vocab.txt", "\n".join(VOCAB[:30]) + "\n")),
     ["short_vocab.txt: 30 tokens", "bert_config.json has vocab_size 40",
      "--vocab_smaller_than_model"], ["ckpt-1.index"]),
    ("vocab_longer_than_the_model", lambda w, o: ner(
        w, o, vocab_file=_broken(w, "long_vocab.txt", "\n".join(
            VOCAB + [f"extra{i}" for i in range(10)]) + "\n")),
     ["long_vocab.txt: 50 tokens", "vocab_size 40", "no embedding row"], ["ckpt-1.index"]),
    ("vocab_shorter_for_features", lambda w, o: features(
        w, o, layers=-1, vocab_file=_broken(w, "short_vocab.txt", "\n".join(VOCAB[:30]) + "\n")),
     ["short_vocab.txt: 30 tokens", "vocab_size 40"], ["features.jsonl"]),
    ("vocab_shorter_for_an_export", lambda w, o: exporter(
        w, o, vocab_file=_broken(w, "short_vocab.txt", "\n".join(VOCAB[:30]) + "\n")),
     ["short_vocab.txt: 30 tokens", "vocab_size 40"], ["export"]),
    ("checkpoint_of_another_vocab_size", lambda w, o: classifier(
        w, o, init_checkpoint=w / "ckpt" / "model.ckpt",
        bert_config_file=_config(w, "vocab50.json", vocab_size=50),
        vocab_file=_broken(w, "long_vocab.txt", "\n".join(
            VOCAB + [f"extra{i}" for i in range(10)]) + "\n")),
     ["model.ckpt", "word embeddings have 40 rows", "vocab_size is 50"], ["ckpt-1.index"]),
    ("vocab_blank_line", lambda w, o: classifier(
        w, o, vocab_file=_broken(w, "blank_vocab.txt", "\n".join(VOCAB[:7] + [""] + VOCAB[7:]))),
     ["blank_vocab.txt", "blank line(s) 8"], []),
    ("vocab_missing", lambda w, o: ner(w, o, vocab_file=w / "no_vocab.txt"),
     ["no_vocab.txt", "cannot read the vocabulary"], []),
    ("vocab_not_utf8", lambda w, o: records(
        w, o, vocab_file=_broken(w, "latin1_vocab.txt", data="[UNK]\ncaf\xe9\n".encode(
            "latin-1"))), ["latin1_vocab.txt", "not UTF-8"], ["a.tfrecord"]),
    ("vocab_without_unk", lambda w, o: records(
        w, o, vocab_file=_broken(w, "no_unk.txt", "[PAD]\ngood\n")),
     ["no_unk.txt", "[UNK]"], ["a.tfrecord", "b.tfrecord"]),
    # corpora and writers' inputs
    ("corpus_output_is_input", lambda w, o: records(
        w, o, input_file=_copy(w, "corpus.txt", o), output_file=f"{o}/corpus.txt"),
     ["--output_file", "would overwrite the input", "corpus.txt"], []),
    ("corpus_output_is_vocab", lambda w, o: records(
        w, o, vocab_file=_copy(w, "vocab.txt", o), output_file=f"{o}/vocab.txt"),
     ["would overwrite the input", "--vocab_file"], []),
    ("corpus_binary", lambda w, o: records(
        w, o, input_file=_broken(w, "random.bin", data=np.random.default_rng(0).bytes(20000))),
     ["random.bin", "not UTF-8", "--max_invalid_utf8_share"], ["a.tfrecord", "b.tfrecord"]),
    ("corpus_no_match", lambda w, o: records(w, o, input_file=w / "none*.txt"),
     ["none*.txt", "no input file matches"], ["a.tfrecord"]),
    ("corpus_empty", lambda w, o: records(w, o, input_file=_broken(w, "empty.txt", "")),
     ["empty.txt", "no text in the input files"], ["a.tfrecord", "b.tfrecord"]),
    ("from_text_not_utf8", lambda w, o: from_text(w, o, input_text=_broken(
        w, "latin1_corpus.txt", data=("\n\n".join(["caf\xe9 cr\xe8me br\xfbl\xe9e ."] * 8)
                                      ).encode("latin-1"))),
     ["latin1_corpus.txt", "not UTF-8", "iconv"], ["vocab.txt", "text/train.txt"]),
    # (a file without blank lines is one text per line by default; read as the original
    # reads it, it is one document)
    ("from_text_one_document", lambda w, o: from_text(w, o, line_by_line=False),
     ["1 document: too few to hold 2 out", "blank lines"], ["vocab.txt", "text/train.txt"]),
    ("from_text_budget_negative", lambda w, o: from_text(w, o, budget_minutes=-1),
     ["--budget_minutes=-1.0: must be a positive number"], ["text"]),
    ("from_text_output_dir_is_a_file", lambda w, o: from_text(w, w / "vocab.txt"),
     ["--output_dir=", "vocab.txt is a file"], []),
    ("vocab_output_is_input", lambda w, o: [
        "build_vocab.py", f"--input_file={_copy(w, 'corpus.txt', o)}",
        f"--output_file={o}/corpus.txt", "--vocab_size=50"],
     ["would overwrite the input"], []),
    ("features_output_is_input", lambda w, o: features(
        w, o, output_file=w / "lines.txt"), ["--output_file", "would overwrite the input"],
     []),
    ("export_into_checkpoint_folder", lambda w, o: exporter(
        w, o, export_dir=_copy_ckpt(w, o), init_checkpoint=f"{o}/ckpt/model.ckpt"),
     ["--export_dir", "would overwrite the input", "model.ckpt"], []),
    ("export_over_training_checkpoints", lambda w, o: classifier(w, o, export_dir=o),
     ["--export_dir", "would overwrite the input", "--output_dir"], ["ckpt-3.index"]),
    # task files
    ("glue_dev_missing", lambda w, o: classifier(w, o, data_dir=_sst_with(
        w, "no_dev", dev_rows=None) + "/missing"), ["missing/train.tsv", "not found"], []),
    ("glue_bad_label", lambda w, o: classifier(w, o, do_eval=True, data_dir=_sst_with(
        w, "bad_label", dev_rows="good movie\tmaybe\n")),
     ["bad_label/dev.tsv:2", "label 'maybe'"], ["ckpt-3.index"]),
    ("glue_unknown_task", lambda w, o: classifier(w, o, task_name="NOPE"),
     ["--task_name='NOPE' is not one of"], []),
    ("conll_dev_tag_unseen", lambda w, o: ner(w, o, data_dir=_ner_with(
        w, "unseen_tag", "anna B-ORG\n\n")),
     ["unseen_tag/valid.txt:1", "'B-ORG' does not occur in the training data"],
     ["ckpt-2.index", "best"]),
    ("conll_malformed", lambda w, o: ner(w, o, data_dir=_ner_with(
        w, "malformed", "anna\n\n")), ["malformed/valid.txt:1", "one column"], []),
    ("squad_not_json", lambda w, o: squad(w, o, train_file=_broken(w, "sq.json", "{\"data\": [")),
     ["sq.json", "not valid JSON (line 1"], []),
    ("squad_answer_start_not_a_number", lambda w, o: squad(w, o, train_file=_broken(
        w, "sq_start.json", (w / "squad.json").read_text().replace(
            '"answer_start": 14', '"answer_start": "x"'))),
     ["sq_start.json", "no usable question", "'skipped_malformed': 8"], []),
    ("squad_question_without_its_output_layer", lambda w, o: squad(
        w, None, do_train=False, question="where ?", context="anna lives in paris .",
        init_checkpoint=w / "ckpt" / "model.ckpt"),
     ["model.ckpt", "no weights for the squad task's output layer", "cls/squad", "--do_train"],
     []),
    ("predict_from_no_weights", lambda w, o: classifier(w, o, do_train=False, do_predict=True),
     ["No weights to evaluate or predict with", "holds no checkpoint", "--init_checkpoint"],
     ["test_results.tsv"]),
    ("squad_empty_context", lambda w, o: squad(
        w, None, do_train=False, question="where ?", context=""), ["--context is empty"], []),
    ("squad_eval_without_answers", lambda w, o: squad(
        w, o, do_train=False, do_eval=True, predict_file=_broken(
            w, "sq_noans.json", (w / "squad.json").read_text().replace('"answers"', '"x"'))),
     ["--do_eval", "sq_noans.json", "no answers"], []),
    # TFRecords
    ("tfrecord_wrong_predictions", lambda w, o: pretraining(w, o, max_predictions_per_seq=20),
     ["a.tfrecord", "masked_lm_ids", "--max_predictions_per_seq=4"], []),
    ("tfrecord_truncated", lambda w, o: pretraining(
        w, o, input_file=_truncated(w, w / "b.tfrecord", "cut.tfrecord"), num_train_steps=30),
     ["cut.tfrecord", "cannot be read to the end", "truncated record"], ["ckpt-30.index"]),
    ("tfrecord_mixed_lengths", lambda w, o: pretraining(
        w, o, input_file=_mixed(w), num_train_steps=30),
     ["mixed.tfrecord", "other lengths"], ["ckpt-30.index"]),
    ("tfrecord_is_text", lambda w, o: pretraining(w, o, input_file=w / "corpus.txt"),
     ["corpus.txt", "not a readable TFRecord"], []),
    ("tfrecord_inspect_text", lambda w, o: [
        "inspect_tfrecord.py", f"--input_file={w / 'corpus.txt'}",
        f"--vocab_file={w / 'vocab.txt'}"], ["corpus.txt", "not a readable TFRecord"], []),
    ("tfrecord_ids_beyond_vocab", lambda w, o: pretraining(
        w, o, bert_config_file=_config(w, "small_vocab.json", vocab_size=20),
        num_train_steps=30), ["a.tfrecord", "vocab_size=20"], ["ckpt-30.index"]),
    # outputs that cannot be written
    ("output_dir_is_a_file", lambda w, o: classifier(w, w / "vocab.txt"),
     ["vocab.txt"], []),
    ("records_into_a_file", lambda w, o: records(
        w, o, output_file=f"{w / 'vocab.txt'}/x.tfrecord"),
     ["vocab.txt", "is a file, not a folder"], []),
]


def _copy(w, name, folder):
    os.makedirs(folder, exist_ok=True)
    return shutil.copy(w / name, folder)


def _copy_ckpt(w, folder):
    shutil.copytree(w / "ckpt", f"{folder}/ckpt", dirs_exist_ok=True)
    return f"{folder}/ckpt"


def _truncated_ckpt(w):
    folder = w / "broken" / "cut_ckpt"
    if not folder.exists():
        shutil.copytree(w / "ckpt", folder)
        for name in os.listdir(folder):
            os.replace(folder / name, folder / name.replace("model.ckpt", "cut.ckpt"))
        data = folder / "cut.ckpt.data-00000-of-00001"
        data.write_bytes(data.read_bytes()[:1000])
    return str(folder / "cut.ckpt")


def _mixed(w):
    path = w / "broken" / "mixed.tfrecord"
    if not path.exists():
        path.parent.mkdir(exist_ok=True)
        write_records(w / "broken" / "long.tfrecord", 64, seed=3, seq_len=32)
        path.write_bytes((w / "a.tfrecord").read_bytes() +
                         (w / "broken" / "long.tfrecord").read_bytes())
    return str(path)


def _run(argv, cwd=ROOT):
    if not argv[0].startswith("-"):
        argv = [os.path.join(ROOT, argv[0])] + list(argv[1:])
    return warm_processes.run(argv, cwd=cwd, env=ENV)


@pytest.fixture(scope="module")
def error_results(world):
    """Every error case, run once, in parallel processes: {name: (result, folder)}."""
    jobs = {}
    for name, command, _, _ in ERROR_CASES:
        folder = world / "cases" / name
        folder.mkdir(parents=True)
        jobs[name] = (command(world, str(folder)), folder)
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(_run, argv) for name, (argv, _) in jobs.items()}
        return {name: (futures[name].result(), jobs[name][1]) for name in jobs}


def _leftovers(folder):
    return [os.path.join(d, n) for d, dirs, files in os.walk(folder)
            for n in dirs + files if n.startswith(".tmp-")]


@pytest.mark.parametrize("name, expected, absent",
                         [(c[0], c[2], c[3]) for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_refused_with_one_clear_line(error_results, name, expected, absent):
    result, folder = error_results[name]
    stderr = result.stderr
    assert result.returncode == 1, (result.returncode, stderr[-3000:])
    assert "Traceback" not in stderr and "This is a bug" not in stderr, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, stderr[-3000:]
    for text in expected:
        assert text in errors[0], (text, errors[0])
    for path in absent:
        assert not (folder / path).exists(), path
    assert not _leftovers(folder)


# ----------------------------------------------------------------------------- faults
def _inject(kind, target, nth, argv, cwd=ROOT):
    return _run([os.path.join(ROOT, "tests", "fault_injection.py"), kind, target, str(nth),
                 "--"] + [str(a) for a in argv[:1]] + [str(a) for a in argv[1:]]
                if argv[0] == "-m" else
                [os.path.join(ROOT, "tests", "fault_injection.py"), kind, target, str(nth),
                 "--", os.path.join(ROOT, argv[0])] + [str(a) for a in argv[1:]], cwd=cwd)


def _wait_for_orphans(folder, timeout=120):
    """Workers of a killed parent finish on their own; wait until their files are there
    and closed (no temporary grows any more)."""
    import time
    last, still = None, 0
    deadline = time.time() + timeout
    while time.time() < deadline and still < 3:
        sizes = {p: os.path.getsize(p) for p in _leftovers(folder) if os.path.isfile(p)}
        still = still + 1 if sizes and sizes == last else 0
        last = sizes
        time.sleep(1)


def test_killed_shard_run_publishes_nothing_and_the_rerun_cleans_up(world, tmp_path):
    out = tmp_path / "out"
    argv = records(world, out, num_workers=2)
    # The parent dies while its two workers write: no shard may appear under its name.
    killed = _inject("kill", "multiprocessing.queues.Queue.get", 1, argv)
    assert killed.returncode == -9
    _wait_for_orphans(out)
    assert not (out / "a.tfrecord").exists() and not (out / "b.tfrecord").exists()
    assert _leftovers(out)  # the workers' complete temporaries, never published
    rerun = _run(argv)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert (out / "a.tfrecord").exists() and (out / "b.tfrecord").exists()
    assert not _leftovers(out)  # what the killed run left is gone


def test_full_disk_while_writing_shards_leaves_nothing(world, tmp_path):
    out = tmp_path / "out"
    result = _inject("enospc", "tensorflow.io.TFRecordWriter.write", 20,
                     records(world, out, mode="original"))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "No space left on device" in result.stderr
    assert not os.path.exists(out) or os.listdir(out) == []


def test_export_replaced_while_killed_comes_back_whole(world, tmp_path):
    out = tmp_path / "out"
    argv = exporter(world, out)
    assert _run(argv).returncode == 0
    before = sorted(os.listdir(out / "export"))
    # Killed between moving the old export aside and moving the new one in.
    killed = _inject("kill", f"os.replace@{out}", 2, argv)
    assert killed.returncode == -9 and not (out / "export").exists()
    assert len(_leftovers(out)) == 2  # the old export set aside and the complete new one
    rerun = _run(argv)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert sorted(os.listdir(out / "export")) == before and not _leftovers(out)
    # Full disk while saving: the existing export stays, nothing is left beside it.
    full = _inject("enospc", "tensorflow.saved_model.save", 1, argv)
    assert full.returncode == 1 and "No space left on device" in full.stderr
    assert sorted(os.listdir(out / "export")) == before and not _leftovers(out)


SAVE = """
import sys
import modeling
config = modeling.BertConfig.from_json_file(sys.argv[1])
modeling.save_google_checkpoint(modeling.BertClassifier(config, 2), sys.argv[2])
"""
LOAD = """
import sys
import modeling
config = modeling.BertConfig.from_json_file(sys.argv[1])
modeling.load_checkpoint(modeling.BertClassifier(config, 2), sys.argv[2])
"""


def test_checkpoint_replaced_while_killed_is_absent_not_broken(world, tmp_path):
    script = tmp_path / "save.py"
    script.write_text(SAVE)
    prefix = tmp_path / "model.ckpt"
    argv = [str(script), world / "bert_config.json", prefix]
    assert _run(argv).returncode == 0
    # Killed after the old index went and before the new files came in: no index, so no
    # checkpoint at all (never new data with an old index).
    killed = _inject("kill", "common.file_io.publish", 1, argv)
    assert killed.returncode == -9 and not os.path.exists(f"{prefix}.index")
    (tmp_path / "load.py").write_text(LOAD)
    load = _run([str(tmp_path / "load.py"), world / "bert_config.json", prefix])
    assert load.returncode != 0 and "not a checkpoint" in load.stderr
    assert _run(argv).returncode == 0  # the rerun writes it whole and cleans up
    assert os.path.exists(f"{prefix}.index") and not _leftovers(tmp_path)


def test_killed_feature_cache_is_rebuilt(world, tmp_path):
    out = tmp_path / "out"
    argv = classifier(world, out, num_train_epochs=1, save_checkpoints_steps=1000)
    killed = _inject("kill", "tensorflow.io.TFRecordWriter.write", 5, argv)
    assert killed.returncode == -9

    def cached():
        return [n for n in os.listdir(out) if n.endswith(".tf_record") and
                not n.startswith(".tmp-")]

    assert not cached() and _leftovers(out)  # a half-written cache, under its temporary name
    rerun = _run(argv)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert cached() and not _leftovers(out)


def test_ctrl_c_while_pretrain_from_text_measures_its_speed_promises_no_resume(world,
                                                                              tmp_path):
    """Ctrl-C during stage 3's timing run (its first logged loop): the command exits 130
    saying the measurement is not kept, and promises no checkpoint to resume from (the
    timing run's folder is removed); stages 1-2 are kept for the rerun."""
    out, corpus = tmp_path / "out", tmp_path / "documents.txt"
    rng = random.Random(2)
    corpus.write_text("\n\n".join("\n".join(_sentence(rng) + " ." for _ in range(4))
                                  for _ in range(12)) + "\n")
    stopped = _inject("sigint", "training.loop.Trainer._log", 1,
                      from_text(world, out, input_text=corpus))
    assert stopped.returncode == 130, stopped.stderr[-3000:]
    assert "the speed measurement (stage 3) is not kept" in stopped.stderr
    assert "resume from there" not in stopped.stderr
    assert not [n for n in os.listdir(out) if n.startswith("calibration-")]
    assert (out / "vocab.txt").exists() and (out / "records" / "heldout.tfrecord").exists()
    assert not (out / "recipe.json").exists()


def test_damaged_newest_checkpoint_falls_back_to_the_one_before(world, tmp_path):
    out = tmp_path / "out"
    first = _run(pretraining(world, out, num_train_steps=4, save_checkpoints_steps=2))
    assert first.returncode == 0, first.stderr[-2000:]
    data = out / "ckpt-4.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:100])
    resumed = _run(pretraining(world, out, num_train_steps=6, save_checkpoints_steps=2))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "ckpt-4: cannot be read" in resumed.stderr and "Resuming from" in resumed.stderr
    assert "step 6/6" in resumed.stderr
    # Evaluation alone, with the newest checkpoint damaged: the previous one is used.
    (out / "ckpt-6.index").write_bytes(b"not an index")
    alone = _run(pretraining(world, out, do_train=False, do_eval=True, max_eval_steps=2))
    assert alone.returncode == 0, alone.stderr[-2000:]
    assert "Using the checkpoint before it" in alone.stderr
    assert "global_step = 4" in (out / "eval_results.txt").read_text()


def test_damaged_tokenizer_cache_is_rebuilt(world, tmp_path, monkeypatch):
    from text import graph_tokenizer
    monkeypatch.setenv("BERT_CACHE_DIR", str(tmp_path))
    graph_tokenizer._character_classes.cache_clear()
    expected = graph_tokenizer_ids(world)
    [cache] = [p for p in tmp_path.iterdir() if p.name.startswith("character-classes")]
    stored = json.loads(cache.read_text())
    stored["value"]["drop"] = "[a-z]"  # edited: would silently drop every letter
    cache.write_text(json.dumps(stored))
    graph_tokenizer._character_classes.cache_clear()
    assert graph_tokenizer_ids(world) == expected
    assert json.loads(cache.read_text())["value"]["drop"] != "[a-z]"  # rebuilt
    cache.write_text("{not json")
    graph_tokenizer._character_classes.cache_clear()
    assert graph_tokenizer_ids(world) == expected
    graph_tokenizer._character_classes.cache_clear()


def graph_tokenizer_ids(world):
    import tensorflow as tf

    from text.graph_tokenizer import GraphTokenizer
    tokenizer = GraphTokenizer(str(world / "vocab.txt"))
    return tokenizer.tokenize(tf.constant(["Good movie, very good."])).to_list()


SERVE = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
model = tf.saved_model.load(sys.argv[1])
ids = model.signatures["serving_ids"]
text = model.signatures["serving_default"]
I = lambda rows: tf.constant(rows, tf.int32)
good = dict(input_ids=[[2, 5, 3]], input_mask=[[1, 1, 1]], segment_ids=[[0, 0, 0]])
requests = {
    "good": good,
    "negative_id": dict(good, input_ids=[[2, -1, 3]]),
    "id_beyond_vocab": dict(good, input_ids=[[2, 40, 3]]),
    "mask_of_7": dict(good, input_mask=[[1, 7, 1]]),
    "mask_of_minus_3": dict(good, input_mask=[[1, -3, 1]]),
    "segment_2": dict(good, segment_ids=[[0, 2, 0]]),
    "mask_batch_of_1_for_2": dict(input_ids=[[2, 5, 3], [2, 6, 3]], input_mask=[[1, 1, 1]],
                                  segment_ids=[[0, 0, 0], [0, 0, 0]]),
    "zero_length": dict(input_ids=[[]], input_mask=[[]], segment_ids=[[]]),
}
out = {}
for name, request in requests.items():
    try:
        shapes = {k: tf.constant(v, tf.int32) if v != [[]] else tf.zeros([1, 0], tf.int32)
                  for k, v in request.items()}
        out[name] = ids(**shapes)["label_id"].numpy().tolist()
    except tf.errors.InvalidArgumentError as e:
        out[name] = "refused: " + " ".join(str(e).split())
for name, value in (("scalar_string", tf.constant("good movie")),
                    ("batch_of_strings", tf.constant(["good movie", "bad film"])),
                    ("nested_strings", tf.constant([["good movie"]]))):
    try:
        out[name] = text(text_a=value)["label"].numpy().tolist()
        out[name] = [x.decode() for x in out[name]]
    except tf.errors.InvalidArgumentError as e:
        out[name] = "refused: " + " ".join(str(e).split())
print(json.dumps(out))
"""

SERVING_CASES = [  # (request, what the answer must say)
    ("good", None), ("negative_id", "input_ids: negative id"),
    ("id_beyond_vocab", "ids must be below vocab_size=40"),
    ("mask_of_7", "input_mask: values must be 0 or 1"),
    ("mask_of_minus_3", "input_mask: values must be 0 or 1"),
    ("segment_2", "segments must be below type_vocab_size=2"),
    ("mask_batch_of_1_for_2", "input_mask must have the shape of input_ids"),
    ("zero_length", "at least one position"), ("scalar_string", None),
    ("batch_of_strings", None), ("nested_strings", "a string or a batch of strings"),
]


@pytest.fixture(scope="module")
def served(world):
    """Every serving request of SERVING_CASES, answered in a fresh process that has only
    tensorflow and tensorflow_text."""
    out = world / "served"
    assert _run(exporter(world, out)).returncode == 0
    (world / "serve.py").write_text(SERVE)
    result = _run([str(world / "serve.py"), out / "export"])
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("request_name, refusal", SERVING_CASES,
                         ids=[c[0] for c in SERVING_CASES])
def test_serving_answers_good_requests_and_refuses_wrong_ones(served, request_name, refusal):
    answer = served[request_name]
    if refusal is None:
        assert not isinstance(answer, str), answer
        assert len(answer) == (2 if request_name == "batch_of_strings" else 1)
    else:
        assert isinstance(answer, str) and answer.startswith("refused: ") and refusal in answer, \
            answer
