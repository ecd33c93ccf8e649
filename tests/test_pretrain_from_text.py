"""`pretrain_from_text.py`: plain text to a checkpoint in one command, resumable; and the
recipe's pieces (held-out documents, the plan the budget buys)."""

import json
import os
import random
import re
import shlex

import pytest

from common import cpu
from tasks.pretraining import from_text
from tests import warm_processes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ("the cat sat on a mat while dogs ran past old houses near green fields and "
         "people walked to markets with baskets of bread fish apples").split()


def _corpus(path, documents=40, seed=0):
    rng = random.Random(seed)
    docs = ["\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))) + "."
                      for _ in range(rng.randint(3, 8))) for _ in range(documents)]
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return str(path)


def _masked_share(path):
    """Masked positions over real tokens in the TFRecords at `path`."""
    import tensorflow as tf
    masked = real = 0
    for record in tf.data.TFRecordDataset(str(path)).as_numpy_iterator():
        features = tf.train.Example.FromString(record).features.feature
        masked += sum(features["masked_lm_weights"].float_list.value)
        real += sum(features["input_mask"].int64_list.value)
    return masked / real


def test_held_out_documents_are_one_drawn_from_each_run_of_the_text():
    """500 equal documents of a small text: 10% held out (its cap; the least is 4,000
    masked tokens' worth, ~115,000 characters), one drawn from each run of ten, in the
    text's order, never trained on; the seed draws them."""
    documents = [[f"doc {i:03d} line {j}" for j in range(3)] for i in range(500)]
    train, heldout = from_text.split_documents(documents, seed=1)
    numbers = [int(d[0][4:7]) for d in heldout]
    assert [n // 10 for n in numbers] == list(range(50))
    assert len(train) == 450 and not {d[0] for d in heldout} & {d[0] for d in train}
    assert [d[0] for d in train] == [d[0] for d in documents if d not in heldout]
    assert from_text.split_documents(documents, seed=1) == (train, heldout)
    assert from_text.split_documents(documents, seed=2)[1] != heldout
    with pytest.raises(ValueError, match=r"too few .* \(--line_by_line\)"):
        from_text.split_documents(documents[:3])


def test_held_out_texts_fill_the_least_and_follow_the_texts_mix():
    """67,000 texts one per line, 100 characters each (6.8 MB): 1% would be 68,000
    characters, under the least of 4,000 masked tokens at 15% (4,000 / 0.15 x 4.3 =
    114,667 characters): 1,135 texts (x 101 = 114,635), one from each run of 59 or 60."""
    texts = [[f"{i:05d} " + "x" * 94] for i in range(67000)]
    _, heldout = from_text.split_documents(texts)
    assert len(heldout) == 1135
    bounds = [k * 67000 // 1135 for k in range(1136)]
    assert all(bounds[k] <= int(d[0][:5]) < bounds[k + 1] for k, d in enumerate(heldout))
    # Short and long documents in turn (100 and 1,000 characters): the long ones hold
    # 1000 / 1100 = 90.9% of the text, and about as much of the held-out text (every
    # tenth held out, as every other document is long, would take one kind only; a
    # document as likely as its length, 99%).
    mixed = [["s" * 99] if i % 2 else ["L" * 999] for i in range(2000)]
    for seed in range(3):
        _, heldout = from_text.split_documents(mixed, seed=seed)
        long = sum(len(d[0]) + 1 for d in heldout if d[0][0] == "L")
        assert 0.85 < long / sum(len(d[0]) + 1 for d in heldout) < 0.95
        assert sum(len(d[0]) + 1 for d in heldout) <= 0.1 * 2000 * 550
    # One document of 40% of the text: never held out.
    giant = [["s" * 99]] * 300 + [["G" * 40_000]] + [["s" * 99]] * 300
    train, heldout = from_text.split_documents(giant)
    assert ["G" * 40_000] in train and len(heldout) == 100  # 10% of 100,100 over 100


def test_documents_are_read_as_create_pretraining_data_reads_them(tmp_path):
    """Blank lines (Unicode spaces too) end a document, carriage returns are dropped, each
    file starts a new document, and a few bytes that are not UTF-8 are dropped from their
    line (as the original does); a file mostly not in UTF-8 is refused, named."""
    first, second, latin = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "latin.txt"
    first.write_bytes(b"One.\r\nTwo caf\xe9.\r\n\r\nThree.\n\xe3\x80\x80\nFour.\n")
    second.write_bytes(b"Five.\n")
    assert from_text.read_documents([str(first), str(second)]) == [
        ["One.", "Two caf."], ["Three."], ["Four."], ["Five."]]
    latin.write_bytes("caf\xe9\n\nna\xefve\n".encode("latin-1"))
    with pytest.raises(ValueError, match="latin.txt: 2 of its 3 lines .* not UTF-8"):
        from_text.read_documents([str(first), str(latin)])
    # Text saved as UTF-16 (Windows' "Unicode"): its bytes pass as UTF-8, but each
    # character has a NUL beside it (the last line is the NUL after the last newline).
    utf16 = tmp_path / "utf16.txt"
    utf16.write_bytes("Great film.\nDull, too long.\nLoved it!\n".encode("utf-16"))
    with pytest.raises(ValueError, match="utf16.txt: 4 of its 4 lines hold NUL bytes.*"
                                         "iconv -f utf-16"):
        from_text.read_documents([str(utf16)])


def test_one_text_per_line_is_read_as_asked_or_by_the_files_layout(tmp_path):
    """A file without a blank line between two lines of text holds one text per line
    (each a document); blank lines before the first or after the last line, or a file of
    one line, decide nothing; a line of spaces between two lines is a break.
    --line_by_line=true reads every line of any file as a text (blank lines skipped);
    false reads such a file as one document, as the original does."""
    from data_prep import corpus
    reviews, documents, single, edges = (tmp_path / n for n in (
        "reviews.txt", "docs.txt", "single.txt", "edges.txt"))
    reviews.write_bytes(b"\xef\xbb\xbfGreat film.\r\nDull, too long.\nLoved it!\n")
    documents.write_text("One.\nTwo.\n \t\nThree.\n", encoding="utf-8")
    single.write_text("Only one line.\n", encoding="utf-8")
    edges.write_text("\n\nFirst.\nSecond.\n\n\n", encoding="utf-8")
    files = [str(p) for p in (reviews, documents, single, edges)]
    assert corpus.line_by_line_files(files) == [str(reviews), str(edges)]
    assert corpus.line_by_line_files(files, True) == files
    assert corpus.line_by_line_files(files, False) == []
    # (A byte-order mark stays in the text; the tokenizer drops it, as the original's.)
    assert from_text.read_documents(files, line_by_line=[str(reviews), str(edges)]) == [
        ["\ufeffGreat film."], ["Dull, too long."], ["Loved it!"], ["One.", "Two."],
        ["Three."], ["Only one line."], ["First."], ["Second."]]
    assert from_text.read_documents([str(documents)], line_by_line=[str(documents)]) == [
        ["One."], ["Two."], ["Three."]]
    assert from_text.read_documents([str(reviews)]) == [
        ["\ufeffGreat film.", "Dull, too long.", "Loved it!"]]
    said = corpus.describe_line_by_line([str(reviews)], files, None)
    assert said.startswith(f"{reviews}: no blank line between texts, so each line is read "
                           "as one text")
    assert corpus.describe_line_by_line([str(reviews)], files, True) is None


def test_paragraphs_per_line_and_one_line_documents_are_warned_about_and_split(tmp_path,
                                                                              monkeypatch):
    """A paragraph per line and a blank line after each (WikiText's layout): most of the
    text sits in lines longer than a sequence holds (600 characters > 128 x 4.3), and
    every document is one line; both are said, and neither of a text laid out right.
    --split_sentences splits the lines into sentences (then nothing is said); a resumed
    run that reads the lines otherwise is refused, naming the flag."""
    sentence = "The cat sat on the mat near the old house. "  # 43 characters
    paragraph = (sentence * 14).strip()  # 601 characters
    wikitext = tmp_path / "wiki.txt"
    wikitext.write_text("\n\n".join([paragraph] * 30) + "\n", encoding="utf-8")
    warnings = from_text.layout_warnings(from_text.read_documents([str(wikitext)]))
    assert len(warnings) == 2
    assert warnings[0].startswith("100% of the text is in lines longer than one training "
                                  "sequence holds (about 550 characters)")
    assert "--split_sentences=" in warnings[0]
    assert warnings[1].startswith("30 of the 30 documents (100%) are a single line")
    assert from_text.layout_warnings(from_text.read_documents([_corpus(
        tmp_path / "good.txt")])) == []

    split = from_text.read_documents([str(wikitext)], split_sentences="en")
    assert split == [[sentence.strip()] * 14] * 30
    assert from_text.layout_warnings(split) == []
    # Lines still too long once split (no sentence ends the rules know): the flag is not
    # suggested again.
    unsplittable = from_text.layout_warnings([["x" * 600]] * 30, split=True)
    assert "even split into sentences" in unsplittable[0]
    assert "--split_sentences" not in unsplittable[0]

    # The warnings stay with the run: a rerun (which reads nothing again) says them again.
    said = []
    monkeypatch.setattr(from_text.logging, "warning",
                        lambda text, *args: said.append(text % args))
    for _ in range(2):
        from_text.prepare_text([str(wikitext)], str(tmp_path / "as_is"))
    assert len(said) == 4, said
    for warning in warnings:
        assert said[:2].count(f"{wikitext}: {warning}") == 1
        assert said[2:].count(f"{wikitext} (as this run read it): {warning}") == 1

    out = tmp_path / "out"
    train, _ = from_text.prepare_text([str(wikitext)], str(out), "en")
    assert open(train).read().split("\n\n")[0] == "\n".join([sentence.strip()] * 14)
    assert from_text.prepare_text([str(wikitext)], str(out), "en")[0] == train
    with pytest.raises(ValueError, match="read with --split_sentences=en, not"):
        from_text.prepare_text([str(wikitext)], str(out))


def test_split_sentences_takes_a_language_code(tmp_path):
    """"--split_sentences=english" would split with sentencex's general rules and say
    nothing; it is refused before the text is read."""
    result = warm_processes.run(
        [os.path.join(ROOT, "pretrain_from_text.py"), f"--input_text={_corpus(tmp_path / 'c.txt')}",
         f"--output_dir={tmp_path / 'out'}", "--split_sentences=english"], cwd=str(tmp_path))
    assert result.returncode == 1
    assert "error: --split_sentences=english is not a language code" in result.stderr, \
        result.stderr[-2000:]
    assert not os.path.exists(tmp_path / "out" / "text")


def test_a_large_text_lends_the_vocabulary_every_kth_line(tmp_path):
    """Above the sample size, the vocabulary is learned from every k-th non-empty line
    (k the smallest that fits): words only on the other lines are not learned."""
    text = tmp_path / "train.txt"
    lines = [("alpha beta gamma" if i % 2 == 0 else "omega sigma kappa") + f" {i}"
             for i in range(400)]
    text.write_text("\n\n".join("\n".join(lines[i:i + 4]) for i in range(0, 400, 4)) + "\n")
    size = text.stat().st_size
    assert from_text.sample_lines(str(text), str(tmp_path / "s0.txt"), size) == str(text)
    sample = from_text.sample_lines(str(text), str(tmp_path / "s.txt"), (size + 1) // 2)
    assert open(sample).read().splitlines() == lines[::2]
    (tmp_path / "out" / "text").mkdir(parents=True)
    vocab = from_text.learn_vocabulary(str(text), str(tmp_path / "out"), 160, True,
                                       sample_bytes=(size + 1) // 2)
    tokens = set(open(vocab).read().split())
    assert {"alpha", "beta", "gamma"} <= tokens and not {"omega", "sigma", "kappa"} & tokens
    assert (tmp_path / "out" / "text" / "vocab_sample.txt").exists()


def test_the_held_out_evaluation_reads_the_recipes_whole_held_out_set():
    """The recipe's English corpus holds 829 held-out instances (bench/RESULTS.md); the
    figure the command prints covers them all, not 800 of them (the default batch of 8)."""
    task = from_text.pretraining_task(["train.tfrecord"], ["heldout.tfrecord"],
                                      "bert_config.json", 100, 10)
    assert task.config.eval_batch_size * task.config.max_eval_steps >= 829


def test_a_short_plan_warms_up_for_as_long_as_the_avx2_hour_does(tmp_path):
    """6% of a slow CPU's 1,200-step plan is 72 steps, too few: the masked LM collapsed
    (research/RESULTS-archive.md, "The warm-up of a short plan"). Every plan warms up for at
    least the AVX2 hour's 229 steps (int(0.06 x 3,829)); a longer plan for 6% of its
    steps; a tiny one for half."""
    def warmup(budget_minutes, seconds_per_step, name):
        return from_text.choose_plan(str(tmp_path / name), budget_minutes, 10_000_000,
                                     seconds_per_step).num_warmup_steps
    assert warmup(60, 3.0, "slow") == 229          # 1,200 steps: 72 without the floor
    assert warmup(60, 60 * 60 / 2731, "slower") == 229  # 2,731 steps: 163 before
    assert warmup(60, 0.94, "avx2_hour") == 229    # 3,829 steps: 6%, as measured
    assert warmup(60, 0.4, "fast") == 540          # 9,000 steps: 6%
    assert warmup(1, 0.6, "tiny") == 50            # 100 steps: half


def test_the_plan_fits_the_budget_and_is_kept(tmp_path):
    plan = from_text.choose_plan(str(tmp_path), 60, 10_000_000, seconds_per_step=0.4)
    assert plan.num_train_steps == 9000
    assert plan.num_warmup_steps == int(from_text.RECIPE["warmup_share"] * 9000)
    # 9,000 x 32 sequences from ~19,000 instances per masking of 10 MB: masked 10 times at
    # most; a larger corpus fewer times.
    assert plan.dupe_factor == 10
    assert from_text.choose_plan(str(tmp_path / "b"), 60, 10_000_000_000, 0.4).dupe_factor == 1
    assert from_text.kept_plan(str(tmp_path)) == plan  # a resumed run keeps its schedule
    assert plan.objective == from_text.RECIPE["objective"]
    nsp = from_text.choose_plan(str(tmp_path / "c"), 60, 10_000_000, 0.4, "mlm_nsp")
    assert from_text.kept_plan(str(tmp_path / "c")).objective == nsp.objective == "mlm_nsp"
    assert plan.dtype == "float32"  # the original's precision unless asked
    bf16 = from_text.choose_plan(str(tmp_path / "d"), 60, 10_000_000, 0.3, "mlm", "bfloat16")
    assert from_text.kept_plan(str(tmp_path / "d")) == bf16 and bf16.dtype == "bfloat16"
    # A recipe.json written before the precision was kept: float32, as it trained.
    recipe = json.loads((tmp_path / "recipe.json").read_text())
    del recipe["plan"]["dtype"]
    (tmp_path / "recipe.json").write_text(json.dumps(recipe))
    assert from_text.kept_plan(str(tmp_path)).dtype == "float32"


def test_the_steps_counted_in_training_are_the_plan_a_resumed_run_keeps(tmp_path):
    """Calibrated at 1.5 s a step (another process was busy), a 30-minute plan of 1,200
    steps; the training's own steps take 1.0 s: at step 229 (the end of warm-up), with
    1,611 s left, 229 + 1,611 steps; an adaptation's 50 new-head steps came first and
    count in the plan."""
    plan = from_text.choose_plan(str(tmp_path), 30, 10_000_000, seconds_per_step=1.5)
    assert (plan.num_train_steps, plan.num_warmup_steps) == (1200, 229)
    times = iter([60.0, 120.0, 189.0])
    budget = from_text.time_budget(str(tmp_path), plan, deadline=30 * 60.0, head_steps=50)
    budget.clock = lambda: next(times)
    budget.resize(100, 1150)
    budget.resize(160, 1150)  # 60 steps in 60 s
    assert budget.resize(229, 1840) == 229 + 1611
    kept = from_text.kept_plan(str(tmp_path))
    assert kept.num_train_steps == 50 + 229 + 1611 and kept.seconds_per_step == 1.0
    assert (kept.num_warmup_steps, kept.dupe_factor) == (229, plan.dupe_factor)
    record = json.loads((tmp_path / "recipe.json").read_text())
    assert record["calibrated"] == {"num_train_steps": 1200, "seconds_per_step": 1.5}


def test_a_budget_too_short_for_this_machine_is_warned_about(tmp_path):
    """On a CPU 3.4 times slower than 2 AVX2 cores, the hour buys 1,125 steps, under
    twice the recipe's escape from the plateau: said before the run, with the minutes
    the AVX2 hour's 3,800 steps take here (3,800 x 3.2 s = 202.7 minutes, rounded up to
    210)."""
    slow = from_text.choose_plan(str(tmp_path / "slow"), 60, 10_000_000, seconds_per_step=3.2)
    assert slow.num_train_steps == 1125
    warning = from_text.shortfall(slow)
    assert "60 minutes buy 1,125 steps" in warning and "--budget_minutes=210" in warning
    assert "after about 600 steps" in warning and "fewer than 1,200" in warning
    # 2 AVX2 cores (0.94 s a step) buy the hour's 3,800 steps: no warning.
    avx2 = from_text.choose_plan(str(tmp_path / "avx2"), 60, 10_000_000, seconds_per_step=0.94)
    assert from_text.shortfall(avx2) is None


def test_the_step_is_timed_on_records_masked_as_training_masks(tmp_path, monkeypatch):
    """A step costs more with more masked positions (the output layer computes those
    only): timed on the held-out records (15% masked), the plan overran a 60-minute budget
    by 8 minutes on 2 AVX2 cores. The calibration masks the held-out text as the recipe
    trains (40%) and turns the median logged rate after the first window into seconds."""
    from training import runner
    text = _corpus(tmp_path / "heldout.txt", documents=10)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "."] + WORDS)
                     + "\n", encoding="utf-8")
    timed = {}

    def fake_run(task, trainer, runtime, do_train, hooks=()):
        timed["records"] = task.config.input_file.split(",")
        for rate in (5.0, 30.0, 32.0, 40.0):  # the first window traces
            for hook in hooks:
                hook(0, {"sequences_per_second": rate})

    monkeypatch.setattr(runner, "run", fake_run)
    seconds = from_text.calibrate(text, str(vocab), True, "unused_config.json",
                                  str(tmp_path / "scratch"), runtime=None)
    assert seconds == from_text.RECIPE["train_batch_size"] / 32.0
    [records] = timed["records"]
    assert records.startswith(str(tmp_path / "scratch"))
    assert _masked_share(records) == pytest.approx(from_text.RECIPE["masked_lm_prob"],
                                                   abs=0.03)


def test_short_budgets_time_fewer_steps_and_small_texts_write_in_process(monkeypatch):
    # A minute's budget would otherwise spend half of itself on the measurement.
    assert from_text.calibration_steps(1) == 10 and from_text.calibration_steps(60) == 20
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    mb = 1 << 20
    # 40 kB of text (the end-to-end test's corpus): no worker process to start.
    assert from_text.record_workers(40_000, 1) == 1
    assert from_text.record_workers(15 * mb, 1) == 1
    # The recipe's 25 MB corpus masked 4 times: a worker per core.
    assert from_text.record_workers(25 * mb, 4) == 2
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert from_text.record_workers(25 * mb, 4) == 6


def test_text_to_checkpoint_and_resume(tmp_path):
    corpus = _corpus(tmp_path / "corpus.txt")
    out = tmp_path / "bert"
    command = [os.path.join(ROOT, "pretrain_from_text.py"),
               f"--input_text={corpus}", f"--output_dir={out}", "--budget_minutes=0.05",
               "--objective=mlm_nsp"]
    first = warm_processes.run(command, cwd=str(tmp_path),
                               env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    export = out / "pretraining" / "export"
    assert (export / "bert_model.ckpt.index").exists() and (export / "bert_config.json").exists()
    for name in ("vocab.txt", "bert_config.json", "recipe.json", "text/heldout.txt",
                 "records/heldout.tfrecord", "records/train-00.tfrecord"):
        assert (out / name).exists(), name
    recipe = json.loads((out / "recipe.json").read_text())
    assert recipe["plan"]["num_train_steps"] >= 10
    # Three seconds' budget: 10 steps timed, not 20.
    assert re.search(r"calibration-\w+/ckpt-10\n", (out / "log.txt").read_text())
    # The steps were timed, and the run trained, in the precision of the plan (float32
    # here: CPUs without AVX512_BF16 or AMX have no bfloat16 instructions to run it on).
    assert recipe["plan"]["dtype"] == "float32"
    flags_of_run = json.loads((out / "pretraining" / "training_flags.json").read_text())
    assert flags_of_run["dtype"] == "float32"
    # Pre-trained without dropout (Cramming's); the export keeps the config's for fine-tuning.
    assert flags_of_run["pretraining_dropout"] == from_text.RECIPE["pretraining_dropout"] == 0
    assert json.loads((export / "bert_config.json").read_text())["hidden_dropout_prob"] == 0.1
    assert "(mlm_nsp, float32)" in first.stderr
    # Where the CPU has native bfloat16 products, the command says --dtype=bfloat16 is faster.
    assert ("--dtype=bfloat16" in first.stderr) == bool(cpu.native_bfloat16())
    assert "Held-out masked-LM accuracy" in first.stderr
    assert "Held-out next-sentence accuracy" in first.stderr  # beside its floor:
    assert "always answering the more frequent label" in first.stderr
    # Three seconds buy too few steps for the recipe: said on the console, before training.
    assert "steps on this machine" in first.stderr and "--budget_minutes=" in first.stderr
    # 40 kB of text: from scratch, what a small corpus gives, and the better start.
    assert "MB of training text: from scratch, the recipe learns less" in first.stderr
    assert "--init_checkpoint=<its checkpoint or folder>" in first.stderr
    assert f"--init_checkpoint={export}/bert_model.ckpt" in first.stderr
    # The training records are masked as the recipe says; the held-out ones at the
    # original's 15% whatever it says (held-out accuracy reads the same across recipes).
    records = out / "records"
    assert _masked_share(records / "train-00.tfrecord") == pytest.approx(
        from_text.RECIPE["masked_lm_prob"], abs=0.03)
    assert _masked_share(records / "heldout.tfrecord") == pytest.approx(0.15, abs=0.03)
    # 40 documents of about 300 characters: a small text, so 10% of it (the least for
    # 4,000 masked tokens would be more), a few whole documents.
    heldout = (out / "text" / "heldout.txt").read_text().strip().split("\n\n")
    train = (out / "text" / "train.txt").read_text().strip().split("\n\n")
    assert len(heldout) + len(train) == 40 and 2 <= len(heldout) <= 6
    assert len("".join(heldout)) < 0.1 * len("".join(heldout + train)) + max(map(len, train))
    # The final line's figure is over every masked token of the held-out records.
    _, masked = _records_fill(out / "records" / "heldout.tfrecord")
    assert f"(over {masked:,.0f} masked tokens)" in first.stderr
    # The same command again: every stage is there, training finished; nothing redone.
    again = warm_processes.run(command, cwd=str(tmp_path),
                               env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "training already finished" in (out / "log.txt").read_text()
    steps = recipe["plan"]["num_train_steps"]
    assert re.search(rf"\n\nDone in [\d.]+ minutes: {steps:,} steps of pre-training in "
                     rf"[\d.]+ minutes\. Held-out", first.stderr), first.stderr[-800:]
    assert f"{steps:,} steps of pre-training (resumed)." in again.stderr
    assert json.loads((out / "recipe.json").read_text()) == recipe
    # Resumed with the other objective or precision: refused, naming the file and the fix.
    for changed in ("--objective=mlm", "--dtype=bfloat16"):
        refused = warm_processes.run(command[:-1] + [changed], cwd=str(tmp_path),
                                     env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
                                     timeout=900)
        assert refused.returncode == 1, changed
        assert "recipe.json" in refused.stderr and "another --output_dir" in refused.stderr
        assert changed.split("=")[0] in refused.stderr and "Traceback" not in refused.stderr
    # The fine-tuning command it suggests for the user's own labelled sentences runs as
    # printed, on files laid out as it says (my_data/train.tsv and dev.tsv, columns
    # text_a and label, and text_b for pairs with the flag it names), with the generic
    # task; the model pools as the recipe says, its pooler loaded from the checkpoint.
    exported = json.loads((export / "bert_config.json").read_text())
    assert exported["pooling"] == from_text.RECIPE["model"]["pooling"] == "pair_mean"
    text = first.stderr.replace("\\\n", " ")
    line = next(ln for ln in text.splitlines() if "run_classifier.py --task_name=generic" in ln)
    argv = shlex.split(line)
    assert argv[:2] == ["python", "run_classifier.py"], argv
    assert "--text_b_column=text_b" in text
    data = tmp_path / "my_data"
    data.mkdir()
    rng = random.Random(1)
    for split in ("train", "dev"):
        rows = [f"{' '.join(rng.choice(WORDS) for _ in range(6))}\t"
                f"{' '.join(rng.choice(WORDS) for _ in range(4))}\t{['no', 'yes'][i % 2]}"
                for i in range(16)]
        (data / f"{split}.tsv").write_text("text_a\ttext_b\tlabel\n" + "\n".join(rows) + "\n")
    tuned = warm_processes.run([os.path.join(ROOT, "run_classifier.py")] + argv[2:]
                               + ["--text_b_column=text_b"], cwd=str(tmp_path), timeout=900,
                               env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert tuned.returncode == 0, tuned.stderr[-3000:]
    assert "eval_examples = 16" in (tmp_path / "my_classifier" / "eval_results.txt").read_text()
    assert "No --init_checkpoint" not in tuned.stderr
    assert "pooler starts afresh" not in tuned.stderr


ORDINALS = "first second third fourth fifth sixth seventh eighth".split()


def _tagged_corpus(path, documents=40, seed=0):
    """Documents whose every sentence starts with the document's tag word and its place
    in the document (an ordinal): a record's segments say where they came from."""
    rng = random.Random(seed)
    letters = "abcdefghiklmnoprstuw"  # those of WORDS: a tag is never [UNK]
    tags = [f"tag{letters[i // 20]}{letters[i % 20]}" for i in range(documents)]
    docs = ["\n".join(f"{tag} {ORDINALS[j]} "
                      + " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 10))) + "."
                      for j in range(rng.randint(3, 8))) for tag in tags]
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return str(path)


def _segments_read_back(path, vocab_file):
    """(label, words of segment A, words of segment B) of each record at `path`, the
    masked positions restored and the WordPieces joined into words."""
    import tensorflow as tf
    vocab = open(vocab_file, encoding="utf-8").read().split("\n")
    read = []
    for record in tf.data.TFRecordDataset(str(path)).as_numpy_iterator():
        feature = tf.train.Example.FromString(record).features.feature
        ids = list(feature["input_ids"].int64_list.value)
        for position, original, weight in zip(feature["masked_lm_positions"].int64_list.value,
                                              feature["masked_lm_ids"].int64_list.value,
                                              feature["masked_lm_weights"].float_list.value):
            if weight:
                ids[position] = original
        segments = ([], [])
        for token, segment, real in zip(ids, feature["segment_ids"].int64_list.value,
                                        feature["input_mask"].int64_list.value):
            piece = vocab[token]
            if not real or piece in ("[CLS]", "[SEP]"):
                continue
            words = segments[segment]
            if piece.startswith("##") and words:
                words[-1] += piece[2:]
            else:
                words.append(piece)
        read.append((feature["next_sentence_labels"].int64_list.value[0], *segments))
    return read


def test_sentence_order_objective_trains_on_swapped_halves_of_one_document(tmp_path):
    """--objective=mlm_sop (ALBERT's sentence-order prediction): in the training and the
    held-out records, A and B of a chunk of several sentences come from one document, in
    its order for label 0 and swapped for label 1 (the next-sentence task draws B of
    label 1 from another document); only a one-sentence chunk takes B from another
    document, as ALBERT's create_pretraining_data.py does. The run trains the
    next-sentence head on them and reports the held-out sentence-order accuracy."""
    corpus = _tagged_corpus(tmp_path / "corpus.txt")
    out = tmp_path / "bert"
    run = warm_processes.run(
        [os.path.join(ROOT, "pretrain_from_text.py"), f"--input_text={corpus}",
         f"--output_dir={out}", "--budget_minutes=0.05", "--objective=mlm_sop"],
        cwd=str(tmp_path), env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "(mlm_sop, float32)" in run.stderr
    assert re.search(r"Held-out sentence-order accuracy \d+\.\d%", run.stderr)
    assert json.loads((out / "recipe.json").read_text())["plan"]["objective"] == "mlm_sop"
    flags_of_run = json.loads((out / "pretraining" / "training_flags.json").read_text())
    assert flags_of_run["objective"] == "mlm_nsp"  # the next-sentence head and loss
    assert (out / "pretraining" / "export" / "bert_model.ckpt.index").exists()
    for name in ("train-00.tfrecord", "heldout-sop.tfrecord"):
        labels, swapped = [], 0
        for label, a, b in _segments_read_back(out / "records" / name, out / "vocab.txt"):
            places_a = [ORDINALS.index(w) for w in a if w in ORDINALS]
            places_b = [ORDINALS.index(w) for w in b if w in ORDINALS]
            if len({word for word in a + b if word.startswith("tag")}) > 1:
                assert label == 1 and len(places_a) <= 1, (name, a, b)  # one sentence
            elif places_a and places_b:
                assert (min(places_a) > max(places_b) if label else
                        max(places_a) < min(places_b)), (name, label, a, b)
                swapped += label
            labels.append(label)
        if name.startswith("train"):  # (the held-out records: two documents' worth)
            assert 0.3 < sum(labels) / len(labels) < 0.7  # a coin for each chunk
            assert swapped > 0.6 * sum(labels)  # most of label 1: the order swapped


def _reviews(path, texts=600, seed=0):
    """Short texts one per line (5-14 words, one sentence each), no blank line."""
    rng = random.Random(seed)
    path.write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 14)))
                              + "." for _ in range(texts)) + "\n", encoding="utf-8")
    return str(path)


def _records_fill(path):
    """Real tokens over positions, and masked positions, in the TFRecords at `path`."""
    import tensorflow as tf
    real = positions = masked = 0
    for record in tf.data.TFRecordDataset(str(path)).as_numpy_iterator():
        features = tf.train.Example.FromString(record).features.feature
        mask = features["input_mask"].int64_list.value
        real, positions = real + sum(mask), positions + len(mask)
        masked += sum(features["masked_lm_weights"].float_list.value)
    return real / positions, masked


def test_one_text_per_line_trains_from_scratch_on_packed_sequences(tmp_path):
    """A file of short texts one per line, no blank line (reviews, tweets): read one
    text per line by default, said in one line; the held-out share taken in texts; the
    texts packed into full sequences (an unpacked one-sentence text fills about a sixth
    of a sequence of 128); the final line says how many masked tokens its accuracy is
    over: every masked token of the held-out records. The next-sentence and
    sentence-order objectives, which draw pairs within a text, are refused before
    anything is written."""
    reviews = _reviews(tmp_path / "reviews.txt")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    for objective in ("mlm_nsp", "mlm_sop"):
        with pytest.raises(ValueError, match=f"--objective={objective} draws sentence "
                                             "pairs within a text: give --split_sentences="):
            from_text.prepare_text([reviews], str(tmp_path / "nsp"), objective=objective)
    assert not (tmp_path / "nsp" / "text").exists()
    # Split into sentences, texts of one sentence each still give no pairs.
    with pytest.raises(ValueError, match="0 of the 600 texts hold two sentences or more"):
        from_text.prepare_text([reviews], str(tmp_path / "nsp"), "en", objective="mlm_nsp")
    out = tmp_path / "bert"
    run = warm_processes.run(
        [os.path.join(ROOT, "pretrain_from_text.py"), f"--input_text={reviews}",
         f"--output_dir={out}", "--budget_minutes=0.05"], cwd=str(tmp_path), env=env,
        timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "no blank line between texts, so each line is read as one text" in run.stderr
    reading = json.loads((out / "text" / "reading.json").read_text())
    assert reading["texts"] == [reviews] and reading["line_by_line"] is None
    heldout = (out / "text" / "heldout.txt").read_text().strip().split("\n\n")
    assert 2 <= len(heldout) <= 61 and all("\n" not in text for text in heldout)
    for name in ("train-00", "heldout"):
        fill, _ = _records_fill(out / "records" / f"{name}.tfrecord")
        assert fill > 0.6, (name, fill)
    _, masked = _records_fill(out / "records" / "heldout.tfrecord")
    assert f"(over {masked:,.0f} masked tokens)" in run.stderr
    assert (out / "pretraining" / "export" / "bert_model.ckpt.index").exists()
    # Resumed with the other reading: refused, naming the flag.
    with pytest.raises(ValueError, match="read with --line_by_line=.*not false"):
        from_text.prepare_text([reviews], str(out), line_by_line=False)
