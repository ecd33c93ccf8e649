"""From plain text to a pre-trained checkpoint in a time budget: held-out documents, a
WordPiece vocabulary, TFRecords, a model size and schedule that fit the budget, and the
pre-training itself, each stage resumable.

Pipeline position: text -> vocabulary -> TFRecords -> pre-training -> a checkpoint for
fine-tuning, for `pretrain_from_text.py`; every stage calls the tool that does it alone
(`text.vocabulary`, `data_prep.fast_pretraining`, `training.runner` with
`tasks.pretraining`).

`output_dir` receives:
  text/train.txt, text/heldout.txt   the documents, a share held out for evaluation
  text/reading.json                  how the input's lines were read (one text per
                                     line or documents; split into sentences or not)
  text/vocab_sample.txt              (a text over 32 MB) the lines the vocabulary learns from
  vocab.txt, bert_config.json        the vocabulary and the model
  records/                           the TFRecords (training, held-out)
  recipe.json                        what was chosen: sizes, steps, learning rate
  pretraining/                       the run (checkpoints, logs, metrics.jsonl)
  pretraining/export/                bert_model.ckpt + bert_config.json for fine-tuning
A stage whose output is there is not run again: rerunning the same command resumes.
"""

import dataclasses
import json
import math
import os
import time

from absl import logging

from common import file_io
from data_prep import corpus
from tasks.pretraining.recipe import (
    ENOUGH_STEPS,
    MIN_WARMUP_STEPS,
    PLATEAU_STEPS,
    RECIPE,
    REFERENCE_PLAN_STEPS,
    SMALL_CORPUS_BYTES,
)

# The objectives `pretrain_from_text.py` offers, and the `--objective` of run_pretraining.py
# each trains as: sentence-order prediction (ALBERT, Lan et al. 2019) is the next-sentence
# head and loss on records whose label 1 is segments A and B of one document swapped
# (`write_records(sentence_order=True)`), not B drawn from another document.
TRAINED_AS = {"mlm": "mlm", "mlm_nsp": "mlm_nsp", "mlm_sop": "mlm_nsp"}
OBJECTIVES = tuple(TRAINED_AS)
# The vocabulary is learned from at most this much of the training text, its lines
# spread evenly (`sample_lines`): the learner is pure Python, about 7 s a MB on 2 cores,
# and a sample learns about the same pieces as the whole text. The recipe's corpus (25 MB)
# is used whole.
VOCAB_SAMPLE_BYTES = 32 * 2**20
# The held-out documents (`split_documents`): HELDOUT_SHARE of the text's characters,
# but at least enough for MIN_HELDOUT_MASKED tokens masked at HELDOUT_MASKED_LM_PROB
# (the figure the command ends with is then read over thousands of predictions, whatever
# the size of the text), at most MAX_HELDOUT_SHARE of it; at least MIN_HELDOUT
# documents, drawn so that every document is as likely as any other to be held out.
HELDOUT_SHARE = 0.01
MIN_HELDOUT_MASKED = 4000
MAX_HELDOUT_SHARE = 0.1
MIN_HELDOUT = 2
HELDOUT_EVAL_BATCH = 64  # x run_pretraining's 100 evaluation batches
# The held-out records are masked at the original's share whatever the recipe trains
# with, so that held-out accuracy reads the same across recipes and beside published
# figures (up to the recipe's predictions a sequence: the same input layout).
HELDOUT_MASKED_LM_PROB = 0.15
# The next-sentence and sentence-order objectives draw their pairs within a document:
# texts read one per line need --split_sentences, and at least this share of them
# must hold two sentences or more.
MIN_PAIRED_TEXTS = 0.1
# Largest share of a file's lines that may hold bytes that are not UTF-8 (dropped); more
# is a binary file or another encoding: refused (create_pretraining_data.py's default).
MAX_INVALID_UTF8_SHARE = 0.5
# Steps timed to turn the budget into steps (`calibration_steps`): 20 (30 s with their
# tracing on 2 AVX2 cores, against 18 s for 10) are under 2% of a half-hour budget; a
# shorter budget times 10. The rate is the median of the logged windows after the first
# (which traces).
CALIBRATION_STEPS = 20
# A plan trains at least MIN_PLAN_STEPS, however short its budget.
MIN_PLAN_STEPS = 10
SHORT_CALIBRATION_STEPS = 10
SHORT_BUDGET_MINUTES = 30
LOG_EVERY_CALIBRATION = 5
# A records-writing worker process takes about 5 s to start (it imports TensorFlow), and
# one writes about 2.6 MB of text a second: a second worker pays for itself only on tens
# of megabytes of text times the duplicates (`record_workers`).
TEXT_BYTES_PER_WORKER = 16 << 20
CHARS_PER_TOKEN = 4.3  # English with an 8,192-piece vocabulary: to size the records
# The input's layout, judged once its documents are read (`layout_warnings`): a line of
# more than LONG_LINE_CHARS does not fit in one training sequence (the records keep one
# end of it); past LONG_LINE_SHARE of the text's characters in such lines, the lines are
# paragraphs. Past ONE_LINE_SHARE of the documents a single line, blank lines separate
# paragraphs or headings, not documents. (The recipe's corpus: 3.6% and none; WikiText-2
# as released: 77% and 65%.)
LONG_LINE_CHARS = round(RECIPE["max_seq_length"] * CHARS_PER_TOKEN)
LONG_LINE_SHARE = 0.2
ONE_LINE_SHARE = 0.5
MIN_DOCUMENTS_JUDGED = 20




@dataclasses.dataclass
class Plan:
    """What the budget buys, decided once and kept in `recipe.json`."""
    num_train_steps: int
    num_warmup_steps: int
    dupe_factor: int
    seconds_per_step: float
    objective: str = "mlm"  # one of OBJECTIVES
    dtype: str = "float32"  # --dtype: the compute precision the steps were timed in
    # How the training records mask (`InstanceParams.do_whole_word_mask`, and the segmenter
    # of `text.chinese_words` whose Chinese words are masked whole).
    do_whole_word_mask: bool = False
    word_segmenter: str = "none"


def read_documents(files, max_invalid_utf8_share=MAX_INVALID_UTF8_SHARE,
                   split_sentences=None, line_by_line=()):
    """Documents (lists of non-empty lines, str) of text files: one sentence per line, a
    blank line between documents, each file a new document; in the files of
    `line_by_line`, every non-empty line is a document (a text) of its own. Lines are
    read as `create_pretraining_data` reads them (`data_prep.corpus`: bytes that are not
    UTF-8 dropped); a file with more than `max_invalid_utf8_share` of such lines is
    refused (`corpus.CorpusError`), and a file without text is logged.
    `split_sentences`: a language code; each line is then split into its sentences
    (`data_prep.sentences`)."""
    return read_documents_by_kind(files, max_invalid_utf8_share, split_sentences,
                                  line_by_line)[0]


def read_documents_by_kind(files, max_invalid_utf8_share=MAX_INVALID_UTF8_SHARE,
                           split_sentences=None, line_by_line=()):
    """`read_documents`, and the same documents in two lists: those of the files read
    one text per line (`line_by_line`), and the others. (all, texts, documents)."""
    from data_prep import sentences

    def split(line):
        text = line.decode("utf-8")
        return sentences.split_sentences(text, split_sentences) if split_sentences else [text]

    texts = set(line_by_line)
    stats = corpus.CorpusStats()
    documents, kinds = [], ([], [])
    for path in files:
        read = []
        current = []
        with_nul = 0
        for line in corpus.iter_lines(path, stats):
            with_nul += b"\x00" in line
            if line and path in texts:
                read.append(split(line))
            elif line:
                current += split(line)
            elif current:
                read.append(current)
                current = []
        if current:
            read.append(current)
        lines = stats.invalid_by_file.get(path, [0, 0])[1]
        if lines and with_nul / lines > max_invalid_utf8_share:
            raise corpus.CorpusError(
                f"{path}: {with_nul:,} of its {lines:,} lines hold NUL bytes, which text in "
                f"UTF-8 never holds: is it UTF-16 (Windows' \"Unicode\")? Convert it (e.g. "
                f"iconv -f utf-16 -t utf-8) or leave it out.")
        read = [d for d in read if d]
        documents += read
        kinds[path not in texts].extend(read)
    corpus.check_text(stats.invalid_by_file, max_invalid_utf8_share, flag=None)
    for path in stats.empty_files if documents else ():  # (none at all: an error)
        logging.warning("%s: no text (every line is empty); nothing read from it.", path)
    return documents, kinds[0], kinds[1]


def layout_warnings(documents, split=False, texts=False):
    """What the documents say of an input that is not laid out as one sentence per line
    and a blank line between documents: most of the text in lines longer than a training
    sequence holds (paragraphs), or most documents a single line (blank lines between
    paragraphs or after headings, as in WikiText). A list of messages, empty when the
    layout looks right. `split`: the lines were split into sentences already; `texts`:
    the documents are texts read one per line (a single line each by design), where the
    long lines are counted.

    Read before the vocabulary exists, so in characters: earlier (and wider: long lines
    within longer documents too) than the count of long one-line documents that
    `data_prep.fast_pretraining` makes in tokens for create_pretraining_data.py."""
    warnings = []
    lines = [line for document in documents for line in document]
    chars = sum(map(len, lines))
    long_lines = [line for line in lines if len(line) > LONG_LINE_CHARS]
    long_chars = sum(map(len, long_lines))
    if texts and long_lines:
        warnings.append(
            f"{len(long_lines):,} of the {len(lines):,} "
            f"{'sentences' if split else 'texts'} ({long_chars / max(chars, 1):.0%} of the "
            f"characters) are longer than one training sequence holds (about "
            f"{LONG_LINE_CHARS} characters): the records keep one part of each" + (
                "." if split else "; --split_sentences=<language code, e.g. en> splits "
                "the texts into sentences, all of which are used (with a new "
                "--output_dir)."))
    elif chars and long_chars / chars > LONG_LINE_SHARE:
        warnings.append(
            f"{long_chars / chars:.0%} of the text is in lines longer than one training "
            f"sequence holds (about {LONG_LINE_CHARS} characters), and the records keep "
            f"one part of each such line" + (
                ", even split into sentences: does the text end its sentences with "
                "punctuation the language's rules know?" if split else
                ": is each line a paragraph? The input takes one sentence per line; "
                "--split_sentences=<language code, e.g. en> splits the lines (with a new "
                "--output_dir)."))
    single = sum(len(document) == 1 for document in documents)
    if not texts and len(documents) >= MIN_DOCUMENTS_JUDGED and \
            single / len(documents) > ONE_LINE_SHARE:
        warnings.append(
            f"{single:,} of the {len(documents):,} documents ({single / len(documents):.0%}) "
            f"are a single line. A blank line ends a document: blank lines between "
            f"paragraphs or after headings make each of them a document, and the sentence "
            f"pairs of pre-training are drawn within one: keep blank lines between "
            f"documents only (WikiText as released: python extract_wikitext.py "
            f"converts it).")
    return warnings


def _size(document):
    return sum(len(line) + 1 for line in document)


def heldout_chars(total_chars, share=HELDOUT_SHARE):
    """How many of `total_chars` characters of text to hold out (see HELDOUT_SHARE)."""
    least = MIN_HELDOUT_MASKED / HELDOUT_MASKED_LM_PROB * CHARS_PER_TOKEN
    return min(max(share * total_chars, least), MAX_HELDOUT_SHARE * total_chars)


def split_documents(documents, share=HELDOUT_SHARE, seed=0):
    """(training, held-out), each in the text's order. The held-out documents are drawn
    one from each of as many equal runs of documents as fill `heldout_chars` on average
    (at least MIN_HELDOUT documents; fewer runs while they hold more than
    MAX_HELDOUT_SHARE of the text, unless that leaves fewer; a document longer than that
    share is never held out), uniformly within its run (`seed`): every document is as
    likely to be held out as any other, so the held-out text is the text's own mix (a
    pattern in the documents' order, such as a list-like page every 100th, is not
    followed), and it spreads over the whole text, whatever the documents' sizes:
    thousands of one-line texts or a few long articles."""
    if len(documents) < 2 * MIN_HELDOUT:
        raise ValueError(
            f"{len(documents):,} document{'s' * (len(documents) != 1)}: too few to hold "
            f"{MIN_HELDOUT} out for evaluation (at least {2 * MIN_HELDOUT} are needed); "
            f"separate documents by blank lines, or give one text per line "
            f"(--line_by_line).")
    sizes = [_size(d) for d in documents]
    total = sum(sizes)
    limit = MAX_HELDOUT_SHARE * total
    eligible = [i for i, size in enumerate(sizes) if size <= limit]
    if len(eligible) < 2 * MIN_HELDOUT:  # a few documents, each a large share: the smallest
        chosen = sorted(sorted(range(len(sizes)), key=sizes.__getitem__)[:MIN_HELDOUT])
    else:
        mean = sum(sizes[i] for i in eligible) / len(eligible)
        runs = min(max(MIN_HELDOUT, round(heldout_chars(total, share) / mean)),
                   len(eligible) // 2)
        chosen = _one_per_run(eligible, runs, seed)
        while runs > MIN_HELDOUT and sum(sizes[i] for i in chosen) > limit:
            runs -= 1
            chosen = _one_per_run(eligible, runs, seed)
    held = set(chosen)
    return ([d for i, d in enumerate(documents) if i not in held],
            [documents[i] for i in chosen])


def _one_per_run(items, runs, seed):
    """One of `items` drawn uniformly from each of `runs` equal runs of them, in order."""
    import random
    rng = random.Random(seed)
    n = len(items)
    return [items[rng.randrange(k * n // runs, (k + 1) * n // runs)] for k in range(runs)]


def _write_documents(path, documents):
    file_io.atomic_write_text(path, "\n\n".join("\n".join(d) for d in documents) + "\n")


def pairs_objective(objective):
    """Whether `objective` (one of OBJECTIVES) draws sentence pairs within a document."""
    return TRAINED_AS[objective] == "mlm_nsp"


def _check_pairs(documents, objective, split_sentences, source):
    """Refuses texts read one per line for an objective of sentence pairs when there is
    no way to form them: the texts not split into sentences, or too few holding two."""
    if not split_sentences:
        raise ValueError(
            f"{source}: read one text per line, and --objective={objective} draws "
            f"sentence pairs within a text: give --split_sentences=<language code, e.g. "
            f"en> to split each text into its sentences, or --objective=mlm.")
    paired = sum(len(d) > 1 for d in documents)
    if paired < MIN_PAIRED_TEXTS * len(documents):
        raise ValueError(
            f"{source}: {paired:,} of the {len(documents):,} texts hold two sentences or "
            f"more, too few for --objective={objective}'s sentence pairs (at least "
            f"{MIN_PAIRED_TEXTS:.0%} are needed): use --objective=mlm.")


def prepare_text(files, output_dir, split_sentences=None, line_by_line=None,
                 objective=RECIPE["objective"], seed=12345):
    """text/train.txt and text/heldout.txt (once; warned about when the input's layout
    looks wrong: `layout_warnings`); returns their paths. `line_by_line`: read every
    file one text per line (True), none (False), or those without a blank line between
    two lines of text (None: `corpus.line_by_line_files`), said in one line. Texts read
    so for an objective of sentence pairs (`objective`) are refused without a way to
    form them (`_check_pairs`); `seed` draws the held-out documents. text/reading.json
    keeps how the lines were read (a resumed run that asks otherwise is refused) and the
    layout warnings, which every rerun of the run repeats."""
    split_sentences = split_sentences or None
    folder = os.path.join(output_dir, "text")
    train, heldout, reading = (os.path.join(folder, name) for name in (
        "train.txt", "heldout.txt", "reading.json"))
    source = ", ".join(files) if len(files) <= 3 else \
        f"{files[0]} and {len(files) - 1} more files"
    if os.path.exists(train) and os.path.exists(heldout):
        kept = {}
        if os.path.exists(reading):
            with open(reading, encoding="utf-8") as f:
                kept = json.load(f)
        for warning in kept.get("layout_warnings", ()):
            logging.warning("%s (as this run read it): %s", kept.get("source", source),
                            warning)
        for flag, given in (("split_sentences", split_sentences),
                            ("line_by_line", line_by_line)):
            if kept.get(flag) != given:
                raise ValueError(
                    f"{folder}: this run's documents were read with --{flag}="
                    f"{_flag_value(flag, kept.get(flag))}, not {_flag_value(flag, given)}: "
                    f"give another --output_dir, or resume with the same flag.")
        return train, heldout
    texts = corpus.line_by_line_files(files, line_by_line)
    said = corpus.describe_line_by_line(texts, files, line_by_line)
    if said:
        logging.warning("%s", said)
    documents, from_texts, in_documents = read_documents_by_kind(
        files, split_sentences=split_sentences, line_by_line=texts)
    if not documents:
        raise ValueError(f"{', '.join(files)}: no text (every line is empty).")
    if from_texts and pairs_objective(objective):
        _check_pairs(from_texts, objective, split_sentences, source)
    split = bool(split_sentences)
    warnings = layout_warnings(from_texts, split, texts=True) + \
        (layout_warnings(in_documents, split) if in_documents else [])
    for warning in warnings:
        logging.warning("%s: %s", source, warning)
    training, held = split_documents(documents, seed=seed)
    os.makedirs(folder, exist_ok=True)
    file_io.atomic_write_text(reading, json.dumps({
        "split_sentences": split_sentences, "line_by_line": line_by_line,
        "texts": texts, "source": source, "layout_warnings": warnings}))
    _write_documents(heldout, held)
    _write_documents(train, training)
    logging.info("%d %s: %d for training, %d held out for evaluation (%.1f%% of the "
                 "characters).", len(documents), "texts" if texts else "documents",
                 len(training), len(held),
                 100 * sum(map(_size, held)) / sum(map(_size, documents)))
    return train, heldout


def _flag_value(flag, value):
    if flag == "split_sentences":
        return value or "(none: a sentence per line)"
    return {None: "(the default: by the file's layout)", True: "true",
            False: "false"}[value]


def packs_texts(output_dir, objective):
    """Whether the run's records pack texts into full sequences: its input was read one
    text per line (text/reading.json) and `objective` trains the masked LM alone."""
    path = os.path.join(output_dir, "text", "reading.json")
    if pairs_objective(objective) or not os.path.exists(path):
        return False
    with open(path, encoding="utf-8") as f:
        return bool(json.load(f).get("texts"))


def sample_lines(text_file, sample_file, max_bytes):
    """The text to learn the vocabulary from: `text_file` itself when it holds at most
    `max_bytes`, else every k-th of its non-empty lines (k the smallest that keeps the
    sample within about `max_bytes`), written once to `sample_file`. Returns the path."""
    size = os.path.getsize(text_file)
    if size <= max_bytes:
        return text_file
    if not os.path.exists(sample_file):
        every = math.ceil(size / max_bytes)
        kept, index = [], 0
        with open(text_file, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    if index % every == 0:
                        kept.append(line)
                    index += 1
        file_io.atomic_write_text(sample_file, "".join(kept))
        logging.info("The vocabulary is learned from 1 line in %d of the training text: "
                     "%.1f of its %.1f MB (%s).", every,
                     os.path.getsize(sample_file) / 2**20, size / 2**20, sample_file)
    return sample_file


def learn_vocabulary(train_file, output_dir, vocab_size, do_lower_case,
                     sample_bytes=VOCAB_SAMPLE_BYTES):
    """vocab.txt (once), learned from the training text (at most `sample_bytes` of its
    lines, spread evenly: `sample_lines`)."""
    from text import vocabulary
    path = os.path.join(output_dir, "vocab.txt")
    if not os.path.exists(path):
        start = time.time()
        source = sample_lines(train_file, os.path.join(output_dir, "text", "vocab_sample.txt"),
                              sample_bytes)
        counts = vocabulary.count_words_in_files([source], do_lower_case)
        tokens = vocabulary.learn_from_counts(counts, vocab_size)
        vocabulary.write_vocabulary(tokens, path)
        logging.info("Learned %d WordPiece tokens in %.0f s: %s", len(tokens),
                     time.time() - start, path)
    return path


def write_records(text_file, output_files, vocab_file, do_lower_case, dupe_factor, seed,
                  masked_lm_prob=None, max_predictions_per_seq=None, sentence_order=False,
                  recipe=RECIPE, pack=False, do_whole_word_mask=False,
                  word_segmenter="none"):
    """The pre-training TFRecords of `text_file` (once: they appear complete or not at
    all), fast mode, masked LM as `recipe` says (or at `masked_lm_prob`, with up to
    `max_predictions_per_seq` predictions a sequence); `sentence_order`: label 1 is the
    two segments swapped (`InstanceParams.sentence_order`); `pack`: its documents (texts)
    packed into full sequences (`fast_pretraining.pack_documents`);
    `do_whole_word_mask`: words masked whole, Chinese ones as `word_segmenter` finds
    them (`text.chinese_words`)."""
    from data_prep import fast_pretraining
    from data_prep.pretraining_instances import InstanceParams
    if all(os.path.exists(path) for path in output_files):
        return
    params = InstanceParams(max_seq_length=recipe["max_seq_length"],
                            masked_lm_prob=masked_lm_prob or recipe["masked_lm_prob"],
                            max_predictions_per_seq=max_predictions_per_seq or
                            recipe["max_predictions_per_seq"],
                            sentence_order=sentence_order,
                            do_whole_word_mask=do_whole_word_mask)
    jobs = fast_pretraining.split_jobs(
        fast_pretraining.plan_pieces([text_file]), output_files,
        record_workers(os.path.getsize(text_file), dupe_factor),
        vocab_file=vocab_file, do_lower_case=do_lower_case, params=params,
        dupe_factor=dupe_factor, seed=seed, word_segmenter=word_segmenter,
        pack_tokens=fast_pretraining.pack_tokens(params) if pack else 0)
    totals = fast_pretraining.run(jobs)
    logging.info("Wrote %d instances (%d tokens) from %s to %s.", totals["instances"],
                 totals["tokens"], text_file, os.path.dirname(output_files[0]))


def heldout_records_name(objective):
    """The held-out records' file name: sentence-order pairs for mlm_sop (a held-out
    sentence-order accuracy), the original's pairs otherwise."""
    return "heldout-sop.tfrecord" if objective == "mlm_sop" else "heldout.tfrecord"


def record_workers(text_bytes, dupe_factor):
    """Worker processes for writing the records of `text_bytes` of text masked
    `dupe_factor` times: one per TEXT_BYTES_PER_WORKER, at most one per core; under that,
    one, which runs in this process."""
    return max(1, min(os.cpu_count() or 1, text_bytes * dupe_factor // TEXT_BYTES_PER_WORKER))


def bert_config(output_dir, vocab_file):
    """bert_config.json of the recipe's model, sized to the vocabulary (once)."""
    from modeling import BertConfig
    path = os.path.join(output_dir, "bert_config.json")
    if not os.path.exists(path):
        with open(vocab_file, encoding="utf-8") as f:
            vocab_size = sum(1 for _ in f)
        BertConfig(vocab_size=vocab_size, **RECIPE["model"]).to_json_file(path)
    return path


def kept_plan(output_dir):
    """The plan of an earlier start of this run (recipe.json), or None."""
    path = os.path.join(output_dir, "recipe.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return Plan(**json.load(f)["plan"])


def warmup_steps(steps, recipe=RECIPE):
    """The plan's warm-up: the recipe's share of `steps`, at least its
    `min_warmup_steps` (from scratch: MIN_WARMUP_STEPS), at most half the steps."""
    least = recipe.get("min_warmup_steps", MIN_WARMUP_STEPS)
    return min(max(int(recipe["warmup_share"] * steps), least), steps // 2)


def choose_plan(output_dir, budget_minutes, text_bytes, seconds_per_step,
                objective=RECIPE["objective"], dtype="float32", recipe=RECIPE,
                do_whole_word_mask=False, word_segmenter="none"):
    """The steps the budget buys at the measured speed, the warm-up, and how many times
    the corpus is masked (duplicates, as `--dupe_factor`) so that training sees each
    instance about once; written to recipe.json, so that a resumed run keeps its
    schedule."""
    steps = max(MIN_PLAN_STEPS, int(budget_minutes * 60 / seconds_per_step))
    sequences = steps * recipe["train_batch_size"]
    per_duplicate = max(1.0, text_bytes / CHARS_PER_TOKEN / (recipe["max_seq_length"] - 8))
    dupe = int(min(recipe["max_dupe_factor"], max(1, math.ceil(sequences / per_duplicate))))
    chosen = Plan(num_train_steps=steps,
                  num_warmup_steps=warmup_steps(steps, recipe),
                  dupe_factor=dupe, seconds_per_step=seconds_per_step,
                  objective=objective, dtype=dtype, do_whole_word_mask=do_whole_word_mask,
                  word_segmenter=word_segmenter)
    file_io.atomic_write_text(os.path.join(output_dir, "recipe.json"), json.dumps(
        {"recipe": dict(recipe, objective=objective), "budget_minutes": budget_minutes,
         "plan": dataclasses.asdict(chosen)}, indent=1))
    return chosen


def time_budget(output_dir, plan, deadline, head_steps=0):
    """The `training.time_budget.TimeBudget` that ends the pre-training at `deadline`
    (`time.time()` seconds): the plan's steps re-counted from the step time measured in
    training until its warm-up ends, each count written to recipe.json (`resize_plan`), so
    that a resumed run keeps it. `head_steps`: the plan's steps trained before this run
    (an adaptation's new head)."""
    from training.time_budget import TimeBudget
    return TimeBudget(deadline, plan.num_warmup_steps,
                      min_steps=MIN_PLAN_STEPS - head_steps,
                      on_resize=lambda steps, seconds:
                      resize_plan(output_dir, steps + head_steps, seconds))


def resize_plan(output_dir, num_train_steps, seconds_per_step):
    """recipe.json's plan with the steps counted in training and the rate they were
    counted at; the calibration's are kept beside it ("calibrated")."""
    path = os.path.join(output_dir, "recipe.json")
    with open(path, encoding="utf-8") as f:
        record = json.load(f)
    record.setdefault("calibrated", {name: record["plan"][name] for name in
                                     ("num_train_steps", "seconds_per_step")})
    record["plan"].update(num_train_steps=int(num_train_steps),
                          seconds_per_step=round(seconds_per_step, 4))
    file_io.atomic_write_text(path, json.dumps(record, indent=1))


def shortfall(plan):
    """A warning (text) if the plan's budget buys this machine fewer steps than the recipe
    was shown to need, with the budget that would buy its measured run; None otherwise."""
    if plan.num_train_steps >= ENOUGH_STEPS:
        return None
    minutes = plan.num_train_steps * plan.seconds_per_step / 60
    needed = math.ceil(REFERENCE_PLAN_STEPS * plan.seconds_per_step / 60 / 10) * 10
    return (f"{minutes:.{0 if minutes >= 10 else 1}f} minutes buy "
            f"{plan.num_train_steps:,} steps on this machine "
            f"({plan.seconds_per_step:.2f} s a step). The recipe's masked LM leaves the "
            f"frequent-token plateau after about {PLATEAU_STEPS:,} steps (docs/pretraining"
            f".md, \"Pre-training on a CPU\"): with fewer than {ENOUGH_STEPS:,} the model "
            f"may stay near random weights. For the {REFERENCE_PLAN_STEPS:,} steps an hour buys on "
            f"2 AVX2 cores give --budget_minutes={needed} (a new --output_dir; the plan of "
            f"this one is kept).")


def small_corpus(text_bytes):
    """A warning (text) when `text_bytes` of training text is a small corpus to pre-train
    from scratch on, with what such a corpus gave and the better start; None otherwise."""
    if text_bytes >= SMALL_CORPUS_BYTES:
        return None
    return (f"{text_bytes / 2**20:.1f} MB of training text: from scratch, the recipe "
            f"learns less from a small corpus (on 3.8 MB an AVX2 hour predicted 26.2% of "
            f"held-out masked tokens, against 37.8% on a 25 MB corpus; docs/pretraining.md"
            f"). Where a released BERT exists for your text's language, adapting it is the "
            f"better start: --init_checkpoint=<its checkpoint or folder> (with its "
            f"--bert_config_file and --vocab_file) continues its pre-training on this text "
            f"(a new --output_dir).")


def pretraining_task(records, heldout_records, config_file, steps, warmup,
                     objective=RECIPE["objective"], max_predictions_per_seq=None,
                     pretraining_dropout=RECIPE["pretraining_dropout"], recipe=RECIPE,
                     init_checkpoint=None, heads_only=False):
    """The pre-training task of `recipe` on these records (written for `objective`,
    one of OBJECTIVES), from `init_checkpoint` if given; `pretraining_dropout` None: the
    model config's."""
    from tasks.pretraining.config import PretrainingConfig
    from tasks.pretraining.task import PretrainingTask
    return PretrainingTask(PretrainingConfig(
        input_file=",".join(records), eval_input_file=",".join(heldout_records),
        bert_config_file=config_file, init_checkpoint=init_checkpoint,
        max_seq_length=recipe["max_seq_length"],
        max_predictions_per_seq=max_predictions_per_seq or recipe["max_predictions_per_seq"],
        num_train_steps=steps,
        num_warmup_steps=warmup, objective=TRAINED_AS[objective],
        pretraining_dropout=pretraining_dropout, heads_only=heads_only,
        # The held-out figure the command prints covers up to 100 x 64 instances (the
        # recipe's corpus holds 829), not 800 of them (the default batch of 8).
        eval_batch_size=HELDOUT_EVAL_BATCH))


def trainer_config(output_dir, steps, recipe=RECIPE, **overrides):
    from training.config import TrainerConfig
    settings = dict(output_dir=output_dir, train_batch_size=recipe["train_batch_size"],
                    learning_rate=recipe["learning_rate"], optimizer=recipe["optimizer"],
                    adam_beta2=recipe["adam_beta2"],
                    save_checkpoints_steps=max(100, steps // 10), log_steps=100,
                    iterations_per_loop=100)
    settings.update(overrides)
    return TrainerConfig(**settings)


def calibration_steps(budget_minutes):
    """Training steps `calibrate` times for a budget (see CALIBRATION_STEPS)."""
    return (CALIBRATION_STEPS if budget_minutes >= SHORT_BUDGET_MINUTES
            else SHORT_CALIBRATION_STEPS)


def calibrate(text_file, vocab_file, do_lower_case, config_file, scratch_dir, runtime,
              objective=RECIPE["objective"], steps=CALIBRATION_STEPS, seed=0,
              recipe=RECIPE, gradient_checkpointing=False, pack=False,
              do_whole_word_mask=False, word_segmenter="none"):
    """Seconds per training step of the recipe on this machine: a short run of `steps`
    steps of the real training (input pipeline, model, optimizer) on `text_file` masked as
    the training records are (records written to `scratch_dir`), timed after its first
    LOG_EVERY_CALIBRATION steps (which trace). A step costs more with more masked
    positions (the output layer computes those only), so the calibration masks as the
    training records do, not as the held-out ones (15%: about 0.9x the step)."""
    from training import runner
    records = [os.path.join(scratch_dir, "calibration.tfrecord")]
    write_records(text_file, records, vocab_file, do_lower_case, 1, seed,
                  sentence_order=objective == "mlm_sop", recipe=recipe, pack=pack,
                  do_whole_word_mask=do_whole_word_mask, word_segmenter=word_segmenter)
    task = pretraining_task(records, records, config_file, steps, 0, objective,
                            pretraining_dropout=recipe["pretraining_dropout"],
                            recipe=recipe)
    timings = []
    runner.run(task, trainer_config(scratch_dir, steps, recipe,
                                    gradient_checkpointing=gradient_checkpointing,
                                    log_steps=LOG_EVERY_CALIBRATION,
                                    iterations_per_loop=LOG_EVERY_CALIBRATION,
                                    save_checkpoints_steps=steps),
               runtime, do_train=True,
               hooks=[lambda step, logs: timings.append(logs["sequences_per_second"])])
    rate = sorted(timings[1:] or timings)[len(timings[1:] or timings) // 2]
    return recipe["train_batch_size"] / rate
