"""`--mode=fast` of `create_pretraining_data`: the original algorithm and distributions,
streamed, vectorised and spread over processes.

Pipeline position: text files -> **sharded pre-training TFRecords** -> run_pretraining.py.

How it differs from `--mode=original` (which reproduces the original's output exactly):
  * the input is cut into pieces of about `piece_mb` megabytes at document boundaries;
    each piece is read, tokenized (C++, tensorflow-text), turned into instances and
    written on its own, so memory stays bounded however large the corpus; random next
    sentences come from other documents of the same piece;
  * each piece has its own random streams, seeded from (`random_seed`, piece number), so
    the result is deterministic for a given seed, input and worker count, and pieces can
    be processed in any process or on any machine (`num_shards`/`shard_index`);
  * chunking follows the original's rules (`pretraining_instances`) with every
    (pass, document) walk advanced together, one NumPy step per chunk (`chunk_spans`);
  * masking (without whole-word masking) is done for all instances of a piece at once in
    NumPy: a uniform subset of `num_to_predict` candidates per row (Floyd's algorithm),
    and one uniform draw per position decides [MASK] (80%) / keep (10%) / random token
    (10%);
  * output files are divided among worker processes, each writing its own; then all
    records are shuffled together across the files (`record_shuffle`, bounded memory),
    as the original shuffles all its instances before writing: pieces come out in corpus
    order, and training, which shuffles within 100 records, would otherwise see one part
    of the corpus at a time.
"""

import ctypes
import dataclasses
import multiprocessing
import os
import random

import numpy as np

from common import file_io
from data_prep import corpus, record_shuffle
from data_prep import pretraining_instances as pi

DEFAULT_PIECE_MB = 1
# Texts read one per line are packed (`pack_documents`) into documents of this many
# sequences' tokens: the last chunk of each, shorter than the rest, is then about one
# sequence in 64.
PACK_SEQUENCES = 32


def pack_tokens(params):
    """The `Job.pack_tokens` that packs texts for sequences of `params.max_seq_length`."""
    return PACK_SEQUENCES * params.max_seq_length


@dataclasses.dataclass(frozen=True)
class Piece:
    index: int
    path: str
    start: int
    end: int
    line_by_line: bool = False  # every line of the file is a text (a document) of its own


def plan_pieces(files, piece_mb=DEFAULT_PIECE_MB, line_by_line=()):
    """Cuts every file into byte ranges of about `piece_mb` MB; `read_piece` moves each
    boundary to the next document break (in the files of `line_by_line`, read one text
    per line: the next line)."""
    step = max(1, int(piece_mb * 2 ** 20))
    texts = set(line_by_line)
    pieces = []
    for path in files:
        size = file_io.size(path)
        for start in range(0, max(size, 1), step):
            pieces.append(Piece(len(pieces), path, start, min(start + step, size),
                                path in texts))
    return pieces


def read_piece(piece, stats):
    """Yields the stripped lines of the documents that start inside the piece's range: a
    piece not at offset 0 skips to just after the first blank line at or after its start,
    and every piece reads on past its end to the next blank line. Read one text per line
    (`piece.line_by_line`), every line starts a document: a piece starts at its first
    whole line and ends with the line that holds its end."""
    if piece.line_by_line:
        yield from _read_lines(piece, stats)
        return
    with _open(piece) as f:
        f.seek(piece.start)
        if piece.start > 0:
            # The byte before the start decides whether we begin on a fresh line.
            f.seek(piece.start - 1)
            if f.read(1) != b"\n":
                f.readline()  # rest of a line that belongs to the previous piece
            while True:
                raw = f.readline()
                if not raw:
                    return
                if not corpus.clean_line(raw, corpus.CorpusStats()):
                    break
        at_document_start = True
        while True:
            if at_document_start and f.tell() >= piece.end:
                return
            raw = f.readline()
            if not raw:
                return
            line = corpus.clean_line(raw, stats)
            stats.lines += 1
            at_document_start = not line
            yield line


def _open(piece):
    try:
        return file_io.open_binary(piece.path)
    except OSError as e:
        raise corpus.CorpusError(f"{piece.path}: cannot read the input file ({e}).") from e


def _read_lines(piece, stats):
    """`read_piece` of a file read one text per line."""
    with _open(piece) as f:
        if piece.start > 0:
            f.seek(piece.start - 1)
            if f.read(1) != b"\n":
                f.readline()  # a line that belongs to the previous piece
        while f.tell() < piece.end:
            raw = f.readline()
            if not raw:
                return
            stats.lines += 1
            yield corpus.clean_line(raw, stats)


@dataclasses.dataclass
class PieceTokens:
    """A piece's documents as flat arrays: segment k of the piece is
    `flat[seg_start[k]:seg_end[k]]`; document d is segments
    `doc_first[d] .. doc_first[d] + doc_count[d] - 1` (contiguous in `flat`)."""
    flat: np.ndarray
    seg_start: np.ndarray
    seg_end: np.ndarray
    doc_first: np.ndarray
    doc_count: np.ndarray


def piece_tokens(values, splits, is_break, line_by_line=False):
    """From tokenized lines (ragged `values`/`splits`, one row per line, blank lines
    marked in `is_break`) to `PieceTokens`, as the original reads documents: a blank line
    starts a document, lines without tokens are skipped, empty documents dropped.
    `line_by_line`: every line is a document of its own."""
    splits = np.asarray(splits, np.int64)
    starts, ends = splits[:-1], splits[1:]
    doc_of_line = np.arange(len(starts)) if line_by_line else np.cumsum(is_break)
    keep = (~is_break) & (ends > starts)
    seg_start, seg_end, seg_doc = starts[keep], ends[keep], doc_of_line[keep]
    if not len(seg_start):
        empty = np.zeros(0, np.int64)
        return PieceTokens(np.asarray(values, np.int32), empty, empty, empty, empty)
    change = np.flatnonzero(np.diff(seg_doc)) + 1
    doc_first = np.concatenate([[0], change])
    doc_count = np.diff(np.concatenate([doc_first, [len(seg_start)]]))
    return PieceTokens(np.asarray(values, np.int32), seg_start, seg_end, doc_first, doc_count)


def pack_documents(tokens, pack_tokens):
    """Consecutive documents of `tokens` merged into documents of about `pack_tokens`
    tokens (those that end within the same stretch of `pack_tokens` tokens of the
    piece; a longer document stays alone): short texts (a review, a tweet) then fill whole
    sequences as a long document's sentences do, instead of one text (or two, with a
    random next) a sequence and the rest padding. For the masked LM alone: the texts of a
    sequence, and so the next-sentence labels, are not sentence pairs of one document."""
    if not pack_tokens or len(tokens.doc_first) < 2:
        return tokens
    last = tokens.doc_first + tokens.doc_count - 1
    end = tokens.seg_end[last] - tokens.seg_start[0]  # each document's end in the piece
    group = (end - 1) // pack_tokens
    starts = np.concatenate([[0], np.flatnonzero(np.diff(group)) + 1])
    counts = np.add.reduceat(tokens.doc_count, starts)
    return dataclasses.replace(tokens, doc_first=tokens.doc_first[starts], doc_count=counts)


def chunk_spans(tokens, params, dupe_factor, rng):
    """The original's segment-A/B construction, on token offsets: returns arrays
    (a_lo, a_hi, b_lo, b_hi, label) of spans of `tokens.flat`, before truncation,
    document by document and pass by pass (each document's instances in order).

    Same rules as `pretraining_instances.create_instances_from_document`: a target length
    drawn per document and pass (shorter with probability `short_seq_prob`), chunks of
    whole segments up to the first that reaches the target (or the document's end), a
    uniform split point, B the rest of the chunk or (always for a one-segment chunk, else
    with probability 1/2) segments of another random document from a random start, up to
    the target length, with the chunk's unused segments put back. With
    `params.sentence_order`, the coin instead swaps A and B of a longer chunk (label 1).

    Every (pass, document) walks its document as a chain; all chains take their next
    chunk together, one NumPy step per chunk, drawing from this piece's `rng`
    (a `np.random.Generator`). A document's segments are contiguous and `seg_end` is
    increasing, so a chunk's last segment is found by `searchsorted`. Random B segments
    depend only on the document and the length wanted, so they are drawn afterwards, all
    at once.
    """
    max_num_tokens = params.max_seq_length - 3
    seg_start, seg_end = tokens.seg_start, tokens.seg_end
    num_docs = len(tokens.doc_first)
    chain = np.arange(num_docs * dupe_factor)
    doc = chain % num_docs
    short = rng.random(len(chain)) < params.short_seq_prob
    target = np.where(short, 2 + _below(rng, max_num_tokens - 1, len(chain)), max_num_tokens)
    # State of the chains still walking: next unused segment, last segment, target.
    c, last = tokens.doc_first[doc], (tokens.doc_first + tokens.doc_count - 1)[doc]
    steps = []
    while len(chain):
        # The chunk: segments c..i, the first whose end reaches the target, or the last.
        i = np.minimum(np.searchsorted(seg_end, seg_start[c] + target), last)
        draws = rng.random((2, len(c)))
        # A: segments c..a_end-1, at least one; B gets at least one of a longer chunk.
        a_end = c + 1 + (draws[0] * (i - c)).astype(np.int64)
        coin = draws[1] < 0.5
        rand = (i == c) | (coin & (not params.sentence_order))
        swap = (i > c) & coin & params.sentence_order
        steps.append((chain, c, a_end, i, rand, swap, target))
        c = np.where(rand, a_end, i + 1)  # random next: the unused segments are put back
        walking = c <= last
        if not walking.all():
            chain, c, last, target = chain[walking], c[walking], last[walking], target[walking]
    chain, c, a_end, i, rand, swap, target = (np.concatenate(x) for x in zip(*steps))
    order = np.argsort(chain, kind="stable")
    chain, c, a_end, i, rand, swap, target = (
        x[order] for x in (chain, c, a_end, i, rand, swap, target))
    a_lo, a_hi = seg_start[c], seg_end[a_end - 1]
    b_lo, b_hi = seg_start[np.minimum(a_end, len(seg_start) - 1)], seg_end[i]
    r = np.flatnonzero(rand)
    b_lo[r], b_hi[r] = _random_segments(tokens, chain[r] % num_docs,
                                        target[r] - (a_hi[r] - a_lo[r]), rng)
    w = np.flatnonzero(swap)  # sentence order: the chunk's parts swapped
    a_lo[w], a_hi[w], b_lo[w], b_hi[w] = b_lo[w], b_hi[w], a_lo[w], a_hi[w]
    return a_lo, a_hi, b_lo, b_hi, rand | swap


def _below(rng, high, size=None):
    """Uniform integers in [0, high) (`high` an int or an array), as floor(uniform *
    high): for high < 2^53 the product of a double below 1 stays below high."""
    return (rng.random(size if size is not None else np.shape(high)) * high).astype(np.int64)


def _random_segments(tokens, not_doc, want, rng, tries=10):
    """For each row: a document drawn uniformly (up to `tries` draws to avoid `not_doc`),
    a uniform start segment in it, and the segments from there up to the first whose
    running length reaches `want` (at least one; at most the document's end). Returns the
    spans (lo, hi)."""
    num_docs = len(tokens.doc_first)
    r = _below(rng, num_docs, len(not_doc))
    for _ in range(tries - 1):
        again = np.flatnonzero(r == not_doc)
        if not len(again):
            break
        r[again] = _below(rng, num_docs, len(again))
    first, count = tokens.doc_first[r], tokens.doc_count[r]
    start = first + _below(rng, count)
    lo = tokens.seg_start[start]
    j = np.minimum(np.maximum(np.searchsorted(tokens.seg_end, lo + want), start),
                   first + count - 1)
    return lo, tokens.seg_end[j]


def truncate_spans(a_lo, a_hi, b_lo, b_hi, max_num_tokens, rng):
    """The original's random truncation in closed form. Tokens are removed from the longer
    side (B on a tie) until the pair fits, so the final lengths are fixed; each removal is
    from the front or the back with probability 1/2, so the number taken from the front
    is Binomial(removed, 1/2)."""
    la, lb = a_hi - a_lo, b_hi - b_lo
    over = la + lb > max_num_tokens
    la2 = np.where(over, np.minimum(la, np.maximum(max_num_tokens - lb,
                                                   (max_num_tokens + 1) // 2)), la)
    lb2 = np.where(over, max_num_tokens - la2, lb)
    a_front = rng.binomial(la - la2, 0.5)
    b_front = rng.binomial(lb - lb2, 0.5)
    return a_lo + a_front, la2, b_lo + b_front, lb2


def build_matrix(flat, a_lo, la, b_lo, lb, vocab_info, width):
    """[CLS] A [SEP] B [SEP] rows, zero-padded to `width`: (input_ids, segment_ids,
    lengths). `flat` ends with three extra entries: [PAD] (0), [CLS] and [SEP] ids
    (`with_special_ids`), which the rows' special columns gather from."""
    pad, cls, sep = len(flat) - 3, len(flat) - 2, len(flat) - 1
    j = np.arange(width, dtype=np.int32)[None, :]
    la_ = la.astype(np.int32)[:, None]
    last = la + lb + 2  # column of the final [SEP]
    # Column j of A is flat[a_lo + j - 1]; of B, flat[b_lo + j - la - 2].
    src = np.where(j <= la_, (a_lo.astype(np.int32) - 1)[:, None],
                   (b_lo.astype(np.int32) - 2)[:, None] - la_)
    src += j
    rows = np.arange(len(la))
    src[:, 0] = cls
    src[rows, la + 1] = sep
    src[rows, last] = sep
    after = j > last.astype(np.int32)[:, None]
    np.copyto(src, pad, where=after)
    segment_ids = (j > la_ + 1).view(np.uint8)
    segment_ids &= ~after
    return np.take(flat, src), segment_ids, la + lb + 3


def with_special_ids(flat, vocab_info):
    """`flat` followed by the ids `build_matrix` gathers for padding, [CLS] and [SEP]."""
    return np.concatenate([flat, np.array([0, vocab_info.cls_id, vocab_info.sep_id],
                                          flat.dtype)])


def mask_matrix(ids, la, lb, vocab_info, params, rng, word_ids=None):
    """Masks rows of `ids` (built by `build_matrix` from segments of lengths `la`, `lb`)
    in place, without whole-word masking: each row's `num_to_predict` positions are a
    uniform random subset of its tokens ([CLS] and the [SEP]s excepted; text never
    tokenizes to them), chosen by Floyd's algorithm (one step per prediction, all rows at
    once); one uniform draw per position picks [MASK] (80%: `params.mask_token_prob`),
    a random vocabulary entry (10%: `random_token_prob`) or the original (the rest).

    Returns:
        (positions [N, max_predictions] sorted and zero-padded, original ids there,
        number of predictions per row).
    """
    n, width = ids.shape
    k = params.max_predictions_per_seq
    candidates = la + lb
    # Python 3's round (ties to even) is numpy's.
    budget = np.round((candidates + 3) * params.masked_lm_prob).astype(np.int64)
    budget = np.minimum(np.minimum(k, np.maximum(1, budget)), candidates)
    # Floyd: for j = m-b .. m-1, take a uniform t in [0, j], or j if t is taken already;
    # candidate index t is position t + 1 in A, t + 2 in B.
    taken = np.zeros((n, width), bool)
    chosen = np.full((n, k), width, np.int64)  # width: no prediction (sorts last)
    for step in range(int(budget.max(initial=0))):
        rows = np.flatnonzero(budget > step)
        j = candidates[rows] - budget[rows] + step
        t = _below(rng, j + 1)
        a = la[rows]
        t += 1 + (t >= a)
        j += 1 + (j >= a)
        pick = np.where(taken[rows, t], j, t)
        taken[rows, pick] = True
        chosen[rows, step] = pick
    positions = np.sort(chosen, axis=1)
    valid = positions < width
    np.copyto(positions, 0, where=~valid)
    r = np.arange(n)[:, None]
    originals = ids[r, positions]
    coin = rng.random((n, k), dtype=np.float32)
    if word_ids is None:
        word_ids = np.asarray(vocab_info.word_ids)
    random_tokens = word_ids[_below(rng, len(word_ids), (n, k))]
    replaced = np.where(coin < params.mask_token_prob, vocab_info.mask_id,
                        np.where(coin < 1.0 - params.random_token_prob, originals,
                                 random_tokens))
    ids[r, positions] = np.where(valid, replaced, originals)
    np.copyto(originals, 0, where=~valid)
    return positions, originals, budget


def mask_matrix_whole_words(ids, lengths, vocab_info, params, rng):
    """Whole-word masking, row by row with the original's procedure (word groups make the
    choice sequential)."""
    k = params.max_predictions_per_seq
    positions = np.zeros((len(ids), k), np.int64)
    originals = np.zeros((len(ids), k), np.int64)
    budget = np.zeros(len(ids), np.int64)
    for row in range(len(ids)):
        n = int(lengths[row])
        out, pos, lab = pi.create_masked_lm_predictions(ids[row, :n].tolist(), vocab_info,
                                                        params, rng)
        ids[row, :n] = out
        positions[row, :len(pos)] = pos
        originals[row, :len(lab)] = lab
        budget[row] = len(pos)
    return positions, originals, budget


def encode_piece(tokens, piece_index, vocab_info, params, dupe_factor, seed,
                 batch_size=8192):
    """All instances of one piece, shuffled and masked, as serialized tf.train.Examples.

    Returns:
        (list of bytes, counts dict).
    """
    from data_prep.example_encoder import encode_batch

    py_rng = random.Random(seed * 1_000_003 + piece_index)
    np_rng = np.random.default_rng([seed, piece_index])
    counts = {"instances": 0, "tokens": 0, "masked": 0, "random_next": 0}
    if not len(tokens.doc_first):
        return [], counts
    a_lo, a_hi, b_lo, b_hi, rand = chunk_spans(tokens, params, dupe_factor, np_rng)
    perm = np_rng.permutation(len(a_lo))
    a_lo, a_hi, b_lo, b_hi, rand = a_lo[perm], a_hi[perm], b_lo[perm], b_hi[perm], rand[perm]
    a_lo, la, b_lo, lb = truncate_spans(a_lo, a_hi, b_lo, b_hi, params.max_seq_length - 3,
                                        np_rng)
    out = []
    word_ids = np.asarray(vocab_info.word_ids)
    flat = with_special_ids(tokens.flat, vocab_info)
    for start in range(0, len(a_lo), batch_size):
        sl = slice(start, start + batch_size)
        ids, segments, lengths = build_matrix(flat, a_lo[sl], la[sl], b_lo[sl],
                                              lb[sl], vocab_info, params.max_seq_length)
        if params.do_whole_word_mask:
            positions, originals, budget = mask_matrix_whole_words(
                ids, lengths, vocab_info, params, py_rng)
        else:
            positions, originals, budget = mask_matrix(ids, la[sl], lb[sl], vocab_info,
                                                       params, np_rng, word_ids)
        width = params.max_seq_length
        k = params.max_predictions_per_seq
        out.extend(encode_batch({
            "input_ids": ids,
            "input_mask": (np.arange(width)[None, :] < lengths[:, None]).astype(np.uint8),
            "segment_ids": segments,
            "masked_lm_positions": positions,
            "masked_lm_ids": originals,
            "masked_lm_weights": (np.arange(k)[None, :] < budget[:, None]).astype(np.float32),
            "next_sentence_labels": rand[sl].astype(np.int64)[:, None],
        }))
        counts["tokens"] += int(lengths.sum())
        counts["masked"] += int(budget.sum())
    counts["instances"] = len(a_lo)
    counts["random_next"] = int(rand.sum())
    return out, counts


@dataclasses.dataclass
class Job:
    """Everything one worker needs (picklable, for spawned processes)."""
    pieces: list
    output_files: list
    vocab_file: str
    do_lower_case: bool
    params: pi.InstanceParams
    dupe_factor: int
    seed: int
    # Documents merged into documents of this many tokens before chunking
    # (`pack_documents`); 0: the original's documents.
    pack_tokens: int = 0
    # With whole-word masking, the segmenter whose Chinese words are masked whole
    # (`text.chinese_words.SEGMENTERS`); "none": characters alone, as the original.
    word_segmenter: str = "none"


def run_job(job, report=None):
    """Processes `job.pieces`, writing instances round-robin over `job.output_files`.

    Args:
        report: callable(documents=..., instances=...) for progress, or None.

    Returns:
        dict of counts for the summary.
    """
    import tensorflow as tf

    from data_prep import pretraining_records as records
    from text.graph_tokenizer import GraphTokenizer

    _keep_freed_memory()
    from text import chinese_words
    from text.tokenization import load_vocab

    vocab = load_vocab(job.vocab_file)
    vocab_info = pi.VocabInfo.from_vocab(vocab)
    tokenizer = GraphTokenizer(job.vocab_file, job.do_lower_case)
    words = chinese_words.word_marks(vocab, job.do_lower_case,
                                     job.params.do_whole_word_mask, job.word_segmenter)
    totals = {"documents": 0, "instances": 0, "tokens": 0, "masked": 0, "random_next": 0,
              "lines": 0, "lines_with_invalid_utf8": 0, "long_one_line_documents": 0,
              "lines_not_segmented": 0, "invalid_by_file": {}}
    with records.open_writers(job.output_files) as writers:
        w = 0
        for piece in job.pieces:
            stats = corpus.CorpusStats()
            lines = list(read_piece(piece, stats))
            is_break = np.array([not line for line in lines], bool)
            values, splits = _tokenize_flat(tokenizer, lines, tf)
            if words is not None:
                values = words.mark_flat(lines, values, splits)
            tokens = piece_tokens(values, splits, is_break, piece.line_by_line)
            long_documents = long_one_line_documents(tokens, job.params.max_seq_length)
            serialized, counts = encode_piece(pack_documents(tokens, job.pack_tokens),
                                              piece.index, vocab_info, job.params,
                                              job.dupe_factor, job.seed)
            for record in serialized:
                writers[w].write(record)
                w = (w + 1) % len(writers)
            for key, value in counts.items():
                totals[key] += value
            totals["documents"] += len(tokens.doc_first)
            totals["long_one_line_documents"] += long_documents
            totals["lines"] += stats.lines
            totals["lines_with_invalid_utf8"] += stats.lines_with_invalid_utf8
            file_counts = totals["invalid_by_file"].setdefault(piece.path, [0, 0])
            file_counts[0] += stats.lines_with_invalid_utf8
            file_counts[1] += stats.lines
            if report is not None:
                report(lines=stats.lines, documents=len(tokens.doc_first),
                       instances=counts["instances"], pieces=1)
    if words is not None:
        totals["lines_not_segmented"] = words.unaligned_lines
    return totals


def _keep_freed_memory():
    """Asks glibc's malloc to keep freed memory for reuse instead of handing it back to
    the system: a piece's NumPy temporaries are large and short-lived, and by default
    every one of them is a fresh mapping whose pages fault in one by one (measured: 0.4 s
    of kernel time per 10 MB of text, half of it avoidable). Memory then stays at its peak
    (a few hundred MB per worker). A no-op where glibc is not the C library."""
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 32 << 20)  # glibc's largest allowed value
    mallopt(m_trim_threshold, 1 << 30)


def _tokenize_flat(tokenizer, lines, tf, batch=16384):
    """Lines (valid UTF-8 bytes from `corpus.clean_line`; blank ones give empty rows) ->
    (flat ids, row splits), in C++."""
    values, splits = [], [np.zeros(1, np.int64)]
    offset = 0
    for start in range(0, len(lines), batch):
        ragged = tokenizer.tokenize(tf.constant(lines[start:start + batch]), valid_utf8=True)
        v = ragged.flat_values.numpy()
        values.append(v)
        splits.append(ragged.row_splits.numpy()[1:] + offset)
        offset += len(v)
    if not values:
        return np.zeros(0, np.int64), np.zeros(1, np.int64)
    return np.concatenate(values).astype(np.int64, copy=False), np.concatenate(splits)


def tokenize_lines(tokenizer, lines, tf):
    """Lines (valid UTF-8 bytes) -> one list of ids per line (`--mode=original` with the
    graph tokenizer)."""
    values, splits = _tokenize_flat(tokenizer, lines, tf)
    values, splits = values.tolist(), splits.tolist()
    return [values[a:b] for a, b in zip(splits[:-1], splits[1:])]


def _worker_main(job, queue):
    from common import quiet
    tf = quiet.import_tensorflow()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    try:
        totals = run_job(job, report=lambda **k: queue.put(("progress", k)))
        queue.put(("done", totals))
    except BaseException as e:  # reported to the parent, which fails the run
        queue.put(("error", f"{type(e).__name__}: {e}"))
        return
    # The worker's files are closed and its report sent: skip TensorFlow's teardown
    # (about half a second), which the parent would otherwise wait for.
    queue.close()
    queue.join_thread()
    os._exit(0)


def split_jobs(pieces, output_files, num_workers, **job_kwargs):
    """Divides pieces and output files among at most `num_workers` workers (no more
    workers than output files, each file written by exactly one worker)."""
    workers = max(1, min(num_workers, len(output_files)))
    return [Job(pieces=pieces[w::workers], output_files=output_files[w::workers],
                **job_kwargs) for w in range(workers)]


def long_one_line_documents(tokens, max_seq_length):
    """Documents of a single line (segment) longer than an instance: the original makes
    them into instances of their first ~max_seq_length tokens only, so most of such a
    document is never seen (one sentence per line is the expected input)."""
    one_line = tokens.doc_count == 1
    lengths = (tokens.seg_end - tokens.seg_start)[tokens.doc_first]
    return int(np.sum(one_line & (lengths > max_seq_length - 3)))


def merge_totals(totals, more):
    """Adds one job's counts to `totals` (per-file counts summed file by file)."""
    for key, value in more.items():
        if isinstance(value, dict):
            merged = totals.setdefault(key, {})
            for path, counts in value.items():
                merged[path] = [a + b for a, b in zip(merged.get(path, [0, 0]), counts)]
        else:
            totals[key] = totals.get(key, 0) + value
    return totals


def run(jobs, progress=None, check=None):
    """Runs jobs in spawned processes (in this process if there is one), all writing to
    temporary files; when every job is done and `check(totals)` (if given) has not
    raised, the records of all files are shuffled together (`record_shuffle`: the
    pieces come out in corpus order) and the whole set of output files is published
    under the final names at once. Otherwise none is. Returns summed totals; raises
    `RuntimeError` with the worker's message if any worker failed."""
    outputs = [path for job in jobs for path in job.output_files]
    with file_io.atomic_paths(outputs) as temps:
        temporary = dict(zip(outputs, temps))
        totals = _run_jobs([dataclasses.replace(job, output_files=[
            temporary[path] for path in job.output_files]) for job in jobs], progress)
        if check:
            check(totals)
        record_shuffle.shuffle_files([temporary[path] for path in outputs], jobs[0].seed)
    return totals


def _run_jobs(jobs, progress):
    if len(jobs) == 1:
        return run_job(jobs[0], report=progress.update if progress else None)
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker_main, args=(job, queue), daemon=True) for job in jobs]
    for p in procs:
        p.start()
    totals, done, error = {}, 0, None
    while done < len(procs):
        kind, payload = queue.get()
        if kind == "progress":
            if progress:
                progress.update(**payload)
        elif kind == "done":
            done += 1
            merge_totals(totals, payload)
        else:
            error = payload
            done += 1
    for p in procs:
        p.join()
    if error:
        raise RuntimeError(f"A worker failed: {error}")
    return totals
