"""create_pretraining_data on generated corpora: the written features, the statistics of
both modes, whole-word masking, determinism, and bad input."""

import os
import random

import numpy as np
import pytest
from absl import flags

import create_pretraining_data as cli
from data_prep import pretraining_records as records
from tests import warm_processes

SYLLABLES = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "de", "fu", "ga", "hi", "jo",
             "bu", "ze", "wa", "yo", "ch", "sh", "th"]


def make_vocab(path):
    tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(5)] + \
        ["[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ","] + SYLLABLES + \
        ["##" + s for s in SYLLABLES]
    path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return str(path), {t: i for i, t in enumerate(tokens)}


def make_corpus(path, n_docs=150, seed=0):
    """Documents of 3-15 sentences of 3-12 words of 1-3 syllables (so words are 1-3
    WordPieces), a blank line between documents."""
    rng = random.Random(seed)
    docs = []
    for _ in range(n_docs):
        sents = []
        for _ in range(rng.randint(3, 15)):
            words = ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3)))
                     for _ in range(rng.randint(3, 12))]
            sents.append(" ".join(words) + ".")
        docs.append("\n".join(sents))
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return str(path)


def run_cli(**kwargs):
    """Runs the script's main() in this process with the given flags."""
    fl = flags.FLAGS
    fl.unparse_flags()
    argv = ["create_pretraining_data"] + [f"--{k}={v}" for k, v in kwargs.items()]
    fl(argv)
    try:
        cli.main(None)
    finally:
        fl.unparse_flags()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ptdata")
    vocab_file, vocab = make_vocab(tmp / "vocab.txt")
    corpus = make_corpus(tmp / "corpus.txt")
    return tmp, vocab_file, vocab, corpus


def read_all(paths):
    out = []
    for p in paths:
        out.extend(records.read_examples(p))
    return out


def statistics(examples, vocab, max_seq_length=128):
    mask_id = vocab["[MASK]"]
    lengths = np.array([sum(e["input_mask"]) for e in examples])
    masked = kept = random_tok = 0
    n_masked = 0
    for e in examples:
        k = int(sum(e["masked_lm_weights"]))
        n_masked += k
        for p, label in zip(e["masked_lm_positions"][:k], e["masked_lm_ids"][:k]):
            token = e["input_ids"][p]
            if token == mask_id:
                masked += 1
            elif token == label:
                kept += 1
            else:
                random_tok += 1
    return {
        "mean_length": lengths.mean(),
        "short_share": float(np.mean(lengths < max_seq_length * 0.75)),
        "masked_share": n_masked / lengths.sum(),
        "mask_80": masked / n_masked, "keep_10": kept / n_masked,
        "random_10": random_tok / n_masked,
        "random_next": float(np.mean([e["next_sentence_labels"][0] for e in examples])),
        "instances": len(examples),
    }


@pytest.fixture(scope="module")
def original_and_fast(data):
    tmp, vocab_file, vocab, corpus = data
    common = dict(input_file=corpus, vocab_file=vocab_file, dupe_factor=5,
                  max_seq_length=128, max_predictions_per_seq=20, random_seed=7)
    orig = [str(tmp / f"orig-{i}.tfrecord") for i in range(2)]
    fast = [str(tmp / f"fast-{i}.tfrecord") for i in range(2)]
    run_cli(mode="original", output_file=",".join(orig), **common)
    run_cli(mode="fast", num_workers=1, output_file=",".join(fast), **common)
    return read_all(orig), read_all(fast), vocab


def test_written_features_are_the_originals(data, original_and_fast):
    import tensorflow as tf
    tmp, *_ = data
    raw = next(iter(tf.data.TFRecordDataset(str(tmp / "orig-0.tfrecord"))))
    example = tf.train.Example.FromString(raw.numpy())
    feats = example.features.feature
    assert set(feats) == set(records.FEATURE_NAMES)
    for name in records.FEATURE_NAMES:
        kind = feats[name].WhichOneof("kind")
        assert kind == ("float_list" if name == "masked_lm_weights" else "int64_list"), name
    parsed = tf.io.parse_single_example(raw, records.feature_spec(128, 20))
    assert parsed["input_ids"].shape == (128,) and parsed["masked_lm_ids"].shape == (20,)
    for e in original_and_fast[0][:200]:  # zero padding, weights 1.0 then 0.0
        n, k = sum(e["input_mask"]), int(sum(e["masked_lm_weights"]))
        assert e["input_mask"] == [1] * n + [0] * (128 - n)
        assert e["input_ids"][n:] == [0] * (128 - n) and e["segment_ids"][n:] == [0] * (128 - n)
        assert e["masked_lm_weights"] == [1.0] * k + [0.0] * (20 - k)
        assert e["masked_lm_positions"][k:] == [0] * (20 - k)
        assert e["masked_lm_positions"][:k] == sorted(e["masked_lm_positions"][:k])
        assert e["input_ids"][0] == 7 and e["input_ids"][n - 1] == 8  # [CLS] ... [SEP]


def test_original_mode_statistics(original_and_fast):
    stats = statistics(original_and_fast[0], original_and_fast[2])
    assert 0.14 < stats["masked_share"] < 0.16
    assert abs(stats["mask_80"] - 0.8) < 0.02
    assert abs(stats["keep_10"] - 0.1) < 0.015 and abs(stats["random_10"] - 0.1) < 0.015
    assert 0.45 < stats["random_next"] < 0.62


def test_fast_mode_matches_original_statistics(original_and_fast):
    orig = statistics(original_and_fast[0], original_and_fast[2])
    fast = statistics(original_and_fast[1], original_and_fast[2])
    assert abs(fast["instances"] - orig["instances"]) / orig["instances"] < 0.05
    assert abs(fast["mean_length"] - orig["mean_length"]) / orig["mean_length"] < 0.03
    assert abs(fast["short_share"] - orig["short_share"]) < 0.03
    for key, tol in (("masked_share", 0.005), ("mask_80", 0.02), ("keep_10", 0.015),
                     ("random_10", 0.015), ("random_next", 0.04)):
        assert abs(fast[key] - orig[key]) < tol, (key, fast[key], orig[key])


def test_short_seq_prob_shapes_the_length_distribution(data):
    tmp, vocab_file, vocab, corpus = data
    shares = []
    for prob in (0.0, 0.5):
        out = str(tmp / f"short-{prob}.tfrecord")
        run_cli(mode="original", input_file=corpus, output_file=out, vocab_file=vocab_file,
                dupe_factor=2, short_seq_prob=prob)
        shares.append(statistics(read_all([out]), vocab)["short_share"])
    assert shares[1] > shares[0] + 0.15


@pytest.mark.parametrize("mode", ["original", "fast"])
def test_whole_word_masking_never_splits_a_word(data, mode):
    tmp, vocab_file, vocab, corpus = data
    out = str(tmp / f"wwm-{mode}.tfrecord")
    run_cli(mode=mode, num_workers=1, input_file=corpus, output_file=out,
            vocab_file=vocab_file, dupe_factor=1, do_whole_word_mask=True)
    continuation = {i for t, i in vocab.items() if t.startswith("##")}
    special = {vocab["[CLS]"], vocab["[SEP]"]}
    n_groups = 0
    for e in records.read_examples(out):
        n, k = sum(e["input_mask"]), int(sum(e["masked_lm_weights"]))
        original = list(e["input_ids"][:n])
        for p, label in zip(e["masked_lm_positions"][:k], e["masked_lm_ids"][:k]):
            original[p] = label
        masked = set(e["masked_lm_positions"][:k])
        groups = []
        for i, t in enumerate(original):
            if t in special:
                continue
            if t in continuation and groups:
                groups[-1].append(i)
            else:
                groups.append([i])
        for g in groups:
            hit = [i in masked for i in g]
            assert all(hit) or not any(hit), (g, sorted(masked))
            n_groups += len(g) > 1 and all(hit)
    assert n_groups > 100  # multi-piece words really were masked whole


@pytest.mark.parametrize("mode", ["original", "fast"])
def test_sentence_order_records_swap_a_documents_two_parts(data, mode):
    """--sentence_order: with sequences longer than any document (no truncation, no
    short targets) every instance is one whole document cut in two: A then B (label 0),
    or B then A (label 1), about half each."""
    from text.tokenization import FullTokenizer
    tmp, vocab_file, vocab, corpus = data
    tokenizer = FullTokenizer(vocab_file, do_lower_case=True)
    documents = set()
    for text in open(corpus, encoding="utf-8").read().split("\n\n"):
        documents.add(tuple(i for line in text.splitlines() for i in
                            tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line))))
    out = str(tmp / f"sop-{mode}.tfrecord")
    run_cli(mode=mode, num_workers=1, input_file=corpus, output_file=out,
            vocab_file=vocab_file, dupe_factor=1, max_seq_length=1024, short_seq_prob=0,
            sentence_order=True)
    labels = []
    for e in records.read_examples(out):
        n, k = sum(e["input_mask"]), int(sum(e["masked_lm_weights"]))
        ids = list(e["input_ids"][:n])
        for p, label in zip(e["masked_lm_positions"][:k], e["masked_lm_ids"][:k]):
            ids[p] = label
        a_len = list(e["segment_ids"][:n]).index(1) - 2  # [CLS] A [SEP]
        a, b = tuple(ids[1:1 + a_len]), tuple(ids[2 + a_len:n - 1])
        label = e["next_sentence_labels"][0]
        assert (b + a if label else a + b) in documents
        labels.append(label)
    assert len(labels) == len(documents) and 0.35 < np.mean(labels) < 0.65


def test_fast_mode_is_deterministic_and_reads_every_document_once(data):
    tmp, vocab_file, vocab, corpus = data
    outs = []
    for run in range(2):
        paths = [str(tmp / f"det{run}-{i}.tfrecord") for i in range(2)]
        # Tiny pieces: the corpus is cut at many document boundaries; 2 worker processes.
        run_cli(mode="fast", num_workers=2, piece_mb=0.005, input_file=corpus,
                output_file=",".join(paths), vocab_file=vocab_file, dupe_factor=1,
                short_seq_prob=0.0)
        outs.append([open(p, "rb").read() for p in paths])
    assert outs[0] == outs[1] and all(outs[0])
    # Every sentence of the corpus appears, as segment A of some instance, about once:
    # with dupe_factor 1 the instances' A+B spans cover each document's text.
    text_docs = open(corpus, encoding="utf-8").read().strip().split("\n\n")
    instances = read_all([str(tmp / f"det0-{i}.tfrecord") for i in range(2)])
    actual_next = [e for e in instances if e["next_sentence_labels"] == [0]]
    assert len(instances) >= len(text_docs)
    assert len(actual_next) > 0.3 * len(instances)


def test_fast_mode_output_is_in_random_order_not_corpus_order(data, tmp_path):
    """A corpus whose first half uses some syllables and second half others: the records
    of every file mix both halves from the first record on, as the original's globally
    shuffled output does (fast mode streams pieces in corpus order; training shuffles
    only within 100 records)."""
    tmp, vocab_file, vocab, _ = data
    first, second = set(SYLLABLES[:10]), set(SYLLABLES[10:])
    rng = random.Random(4)
    docs = []
    for half in (sorted(first), sorted(second)):
        for _ in range(120):
            docs.append("\n".join(" ".join(rng.choice(half) + rng.choice(half)
                                            for _ in range(8)) + "." for _ in range(6)))
    corpus = tmp_path / "halves.txt"
    corpus.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    paths = [str(tmp_path / f"mixed-{i}.tfrecord") for i in range(2)]
    run_cli(mode="fast", num_workers=2, piece_mb=0.002, input_file=str(corpus),
            output_file=",".join(paths), vocab_file=vocab_file, dupe_factor=2)
    ids_first = {vocab[s] for s in first}
    for path in paths:
        examples = records.read_examples(path)
        from_first = [any(i in ids_first for i in e["input_ids"] if i > 10)
                      for e in examples]
        assert len(from_first) > 200
        overall = np.mean(from_first)  # in corpus order: all first half, then none
        for start in (0, len(from_first) // 2):  # the first and the middle 100 records
            share = np.mean(from_first[start:start + 100])
            assert abs(share - overall) < 0.2, (path, start, share, overall)


def test_record_shuffle_keeps_every_record_in_bounded_memory(tmp_path):
    """Records dealt back over the files, each exactly once, in a seeded random order;
    with buckets smaller than the set (the bounded-memory path) too."""
    import tensorflow as tf

    from data_prep import record_shuffle
    paths = [str(tmp_path / f"r{i}.tfrecord") for i in range(3)]
    for i, path in enumerate(paths):
        with tf.io.TFRecordWriter(path) as writer:
            for j in range(200):
                writer.write(f"{i}-{j}".encode() * (1 + j % 7))
    originals = sorted(f for p in paths for f in record_shuffle.read_frames(p))
    orders = []
    for bucket_bytes in (1 << 30, 4096, 1 << 30):
        for i, path in enumerate(paths):  # the same input each time
            with tf.io.TFRecordWriter(path) as writer:
                for j in range(200):
                    writer.write(f"{i}-{j}".encode() * (1 + j % 7))
        assert record_shuffle.shuffle_files(paths, seed=3, bucket_bytes=bucket_bytes) == 600
        frames = [f for p in paths for f in record_shuffle.read_frames(p)]
        assert sorted(frames) == originals
        # TensorFlow reads them (checksums intact); about a third in each file.
        assert sum(1 for _ in tf.data.TFRecordDataset(paths)) == 600
        assert all(190 <= sum(1 for _ in record_shuffle.read_frames(p)) <= 210
                   for p in paths)
        orders.append([f for p in paths for f in record_shuffle.read_frames(p)])
    assert orders[0] == orders[2] != orders[1]  # seeded; the bucketed path differs
    first = [int(f[12:].split(b"-")[0]) for f in orders[0][:60]]
    assert len(set(first)) == 3  # the start of the set mixes all three files


def test_pieces_cover_each_document_exactly_once(data):
    from data_prep import corpus as corpus_lib
    from data_prep import fast_pretraining
    _, _, _, corpus = data
    lines = []
    for piece in fast_pretraining.plan_pieces([corpus], piece_mb=0.003):
        lines.extend(fast_pretraining.read_piece(piece, corpus_lib.CorpusStats()))
    with open(corpus, "rb") as f:
        want = [line.strip() for line in f]
    assert [x for x in lines if x] == [x for x in want if x]


def test_bad_input(data, tmp_path):
    _, vocab_file, _, corpus = data
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n\n")
    for mode, source in (("original", empty), ("fast", empty), ("fast", blank)):
        with pytest.raises(ValueError, match="no text in the input files"):
            run_cli(mode=mode, num_workers=1, input_file=str(source),
                    output_file=str(tmp_path / "x.tfrecord"), vocab_file=vocab_file)
    assert not (tmp_path / "x.tfrecord").exists()
    with pytest.raises(ValueError, match="no input file matches"):
        run_cli(input_file=str(tmp_path / "nope*.txt"), output_file=str(tmp_path / "y"),
                vocab_file=vocab_file)
    with pytest.raises(ValueError, match="cannot read the vocabulary"):
        run_cli(input_file=corpus, output_file=str(tmp_path / "y"),
                vocab_file=str(tmp_path / "missing-vocab.txt"))
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match="cannot write the output file"):
        run_cli(mode="original", input_file=corpus, dupe_factor=1,
                output_file=str(blocker / "sub" / "out.tfrecord"), vocab_file=vocab_file)


def test_non_utf8_and_no_document_breaks_are_handled(data, tmp_path, capsys):
    _, vocab_file, _, _ = data
    text = tmp_path / "odd.txt"
    text.write_bytes(b"kalo mine su.\nta\xff\xfe ri po.\nde fu ga.\nhi jo bu.\n")
    out = tmp_path / "odd.tfrecord"
    run_cli(mode="original", input_file=str(text), output_file=str(out),
            vocab_file=vocab_file, dupe_factor=2)
    err = capsys.readouterr().err
    assert "1 lines with invalid UTF-8" in err
    assert len(list(records.read_examples(str(out)))) > 0


def test_interrupted_write_leaves_nothing_under_final_names(tmp_path):
    paths = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    with pytest.raises(KeyboardInterrupt):
        with records.shard_writers(paths) as writers:
            writers[0].write(b"partial")
            raise KeyboardInterrupt
    assert os.listdir(tmp_path) == []


def test_wrong_features_are_named(tmp_path):
    import tensorflow as tf
    path = str(tmp_path / "other.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        w.write(tf.train.Example(features=tf.train.Features(feature={
            "input_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=[1]))}))
            .SerializeToString())
    with pytest.raises(ValueError, match="not a pre-training TFRecord"):
        list(records.read_examples(path))


def _original_script_instances(tmp, corpus, vocab_file, outputs, **flags_):
    """Runs Google's own create_pretraining_data.py (the `bert-tensorflow` package, a test
    requirement) in a subprocess and reads back what it wrote."""
    args = ["-m", "bert.create_pretraining_data", f"--input_file={corpus}",
            f"--output_file={','.join(outputs)}", f"--vocab_file={vocab_file}"]
    args += [f"--{k}={v}" for k, v in flags_.items()]
    result = warm_processes.run(args, cwd=str(tmp),
                                env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, result.stderr[-3000:]
    return read_all(outputs)


def _varied_corpus(path, seed=3):
    """Documents mixing the syllable sentences with varied Unicode text (accents, CJK,
    Korean, control and format characters, odd whitespace, very long words, lines that
    tokenize to nothing), and a vocabulary covering most of it."""
    from tests import text_generator
    from text.tokenization import BasicTokenizer
    rng = random.Random(seed)
    varied = [t.replace("\n", " ") for t in text_generator.generate(400, seed=seed)]
    docs = []
    for d in range(60):
        sents = []
        for _ in range(rng.randint(1, 12)):
            if rng.random() < 0.5:
                sents.append(rng.choice(varied))
            else:
                sents.append(" ".join("".join(rng.choice(SYLLABLES)
                                              for _ in range(rng.randint(1, 3)))
                                      for _ in range(rng.randint(3, 12))) + ".")
        docs.append("\n".join(sents))
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    vocab = text_generator.covering_vocab(varied, [BasicTokenizer(True)])
    vocab += SYLLABLES + ["##" + s for s in SYLLABLES]
    vocab_path = path.parent / "varied-vocab.txt"
    vocab_path.write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")
    return str(path), str(vocab_path)


def test_original_mode_equals_googles_script(tmp_path):
    """--mode=original, with either tokenizer, writes the same instances, in the same order,
    as the original script itself on the same input, seed and flags. (The PyPI release of
    the original predates whole-word masking, which hand-worked examples pin instead, in
    test_pretraining_instances.py.)"""
    corpus, vocab_file = _varied_corpus(tmp_path / "varied.txt")
    common = dict(do_lower_case=True, dupe_factor=3,
                  max_seq_length=64, max_predictions_per_seq=10, random_seed=99,
                  masked_lm_prob=0.15, short_seq_prob=0.1)
    theirs = _original_script_instances(
        tmp_path, corpus, vocab_file, [str(tmp_path / f"g{i}.tfrecord") for i in range(2)],
        **common)
    assert len(theirs) > 300
    for tokenizer in ("python", "graph"):
        ours = [str(tmp_path / f"{tokenizer}{i}.tfrecord") for i in range(2)]
        run_cli(mode="original", tokenizer=tokenizer, input_file=corpus,
                output_file=",".join(ours), vocab_file=vocab_file, **common)
        mine = read_all(ours)
        assert len(mine) == len(theirs), tokenizer
        for i, (a, b) in enumerate(zip(mine, theirs)):
            assert a == b, (tokenizer, i)


def test_lines_are_read_as_the_original_reads_them(tmp_path):
    """TensorFlow's GFile.readline drops every carriage return (checked by hand against
    TF 2.21: b"a\\rb c\\r\\n" reads as "ab c\\n"), and the original strips lines as Python
    strings, so a line of Unicode spaces or of invalid bytes is a document break."""
    from data_prep import corpus as corpus_lib
    from data_prep import fast_pretraining
    stats = corpus_lib.CorpusStats()
    clean = lambda raw: corpus_lib.clean_line(raw, stats)  # noqa: E731
    assert clean(b"ka\rlo su\r\n") == b"kalo su"
    assert clean("\u3000\u00a0\u2003 \n".encode()) == b""
    assert clean(b"\x1c\x1f\n") == b""
    assert clean(b"\xff\xfe\n") == b"" and stats.lines_with_invalid_utf8 == 1
    assert clean(" ka lo\u3000\n".encode()) == " ka lo\u3000".lstrip().encode()
    text = tmp_path / "docs.txt"
    text.write_bytes("ka lo\nmi\u3000ne\n\u3000\nsu ta\n\xa0\n\nri po\n".encode())
    lines = list(fast_pretraining.read_piece(
        fast_pretraining.Piece(0, str(text), 0, text.stat().st_size), stats))
    assert [bool(x) for x in lines] == [True, True, False, True, False, False, True]


def _short_texts(path, n=600, seed=5, blank_between=False):
    """Texts of 3-8 words, each ending with a full stop, one per line (or a blank line
    between them: each text a document of one line)."""
    rng = random.Random(seed)
    texts = [" ".join("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 2)))
                      for _ in range(rng.randint(3, 8))) + "." for _ in range(n)]
    path.write_text(("\n\n" if blank_between else "\n").join(texts) + "\n", encoding="utf-8")
    return str(path)


def test_texts_one_per_line_are_packed_into_full_sequences(data, tmp_path, capsys):
    """A file without blank lines holds a text per line (said in one line): the texts
    are packed, several whole texts a sequence and almost no padding; the same texts as
    one-line documents (a blank line between them) give the original's pairs, a text
    and a random other text a sequence, mostly padding."""
    _, vocab_file, vocab, _ = data
    stop = vocab["."]
    shares = {}
    for name, blank in (("texts", False), ("documents", True)):
        out = str(tmp_path / f"{name}.tfrecord")
        run_cli(mode="fast", num_workers=1, input_file=_short_texts(
            tmp_path / f"{name}.txt", blank_between=blank), output_file=out,
                vocab_file=vocab_file, dupe_factor=2, max_seq_length=64)
        err = capsys.readouterr().err
        said = "no blank line between texts, so each line is read as one text" in err
        assert said == (not blank), err
        assert ("train with --objective=mlm" in err) == (not blank)
        examples = read_all([out])
        real = sum(sum(e["input_mask"]) for e in examples)
        shares[name] = (real / (64 * len(examples)),
                        sum(e["input_ids"].count(stop) for e in examples) / len(examples))
    padding, texts_a_sequence = 1 - shares["texts"][0], shares["texts"][1]
    assert padding < 0.15 and texts_a_sequence > 5
    assert 1 - shares["documents"][0] > 0.5 and shares["documents"][1] <= 2


def test_line_by_line_pieces_cover_each_line_once_and_the_original_mode_refuses(
        data, tmp_path, caplog):
    """Read one text per line, pieces start at any line: tiny pieces read every line of
    the file exactly once. --mode=original reproduces the original, which has no such
    reading: --line_by_line is refused there, and a file without blank lines is one
    document, said so."""
    from data_prep import corpus as corpus_lib
    from data_prep import fast_pretraining
    _, vocab_file, _, _ = data
    texts = _short_texts(tmp_path / "texts.txt")
    lines = []
    for piece in fast_pretraining.plan_pieces([texts], 0.0005, line_by_line=[texts]):
        assert piece.line_by_line
        lines.extend(fast_pretraining.read_piece(piece, corpus_lib.CorpusStats()))
    assert len(fast_pretraining.plan_pieces([texts], 0.0005)) > 20
    with open(texts, "rb") as f:
        assert lines == [line.strip() for line in f]
    with pytest.raises(ValueError, match="--mode=original reproduces the original's"):
        run_cli(mode="original", line_by_line=True, input_file=texts,
                output_file=str(tmp_path / "x.tfrecord"), vocab_file=vocab_file)
    run_cli(mode="original", input_file=texts, output_file=str(tmp_path / "o.tfrecord"),
            vocab_file=vocab_file, dupe_factor=1)
    assert "no blank lines, so the whole file is one document, as the original" in \
        caplog.text
    assert "read as one text" not in caplog.text
