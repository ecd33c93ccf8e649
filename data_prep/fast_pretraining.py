"""`--mode=fast` of `create_pretraining_data`: the original algorithm and distributions,
streamed, vectorised and spread over processes.

Pipeline position: text files -> **sharded pre-training TFRecords** -> run_pretraining.py.

How it differs from `--mode=original` (which reproduces the original's output exactly):
  * the input is cut into pieces of about `piece_mb` megabytes at document boundaries;
    each piece is read, tokenized (C++, tensorflow-text), turned into instances (the same
    chunking code as the original, `pretraining_instances`) and written on its own, so
    memory stays bounded however large the corpus; random next sentences come from other
    documents of the same piece;
  * each piece has its own random streams, seeded from (`random_seed`, piece number), so
    the result is deterministic for a given seed, input and worker count, and pieces can
    be processed in any process or on any machine (`num_shards`/`shard_index`);
  * masking (without whole-word masking) is done for all instances of a piece at once in
    NumPy: the `num_to_predict` candidates with the smallest random keys are taken, and
    one uniform draw per position decides [MASK] (80%) / keep (10%) / random token (10%);
  * output files are divided among worker processes, each writing its own.
"""

import bisect
import dataclasses
import multiprocessing
import os
import random

import numpy as np

from data_prep import corpus, paths, pretraining_instances as pi

DEFAULT_PIECE_MB = 1


@dataclasses.dataclass(frozen=True)
class Piece:
    index: int
    path: str
    start: int
    end: int


def plan_pieces(files, piece_mb=DEFAULT_PIECE_MB):
    """Cuts every file into byte ranges of about `piece_mb` MB; `read_piece` moves each
    boundary to the next document break."""
    step = max(1, int(piece_mb * 2 ** 20))
    pieces = []
    for path in files:
        size = paths.size(path)
        for start in range(0, max(size, 1), step):
            pieces.append(Piece(len(pieces), path, start, min(start + step, size)))
    return pieces


def read_piece(piece, stats):
    """Yields the stripped lines of the documents that start inside the piece's range: a
    piece not at offset 0 skips to just after the first blank line at or after its start,
    and every piece reads on past its end to the next blank line."""
    try:
        f = paths.open_binary(piece.path)
    except OSError as e:
        raise corpus.CorpusError(f"{piece.path}: cannot read the input file ({e}).") from e
    with f:
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


def piece_tokens(values, splits, is_break):
    """From tokenized lines (ragged `values`/`splits`, one row per line, blank lines
    marked in `is_break`) to `PieceTokens`, as the original reads documents: a blank line
    starts a document, lines without tokens are skipped, empty documents dropped."""
    splits = np.asarray(splits, np.int64)
    starts, ends = splits[:-1], splits[1:]
    doc_of_line = np.cumsum(is_break)
    keep = (~is_break) & (ends > starts)
    seg_start, seg_end, seg_doc = starts[keep], ends[keep], doc_of_line[keep]
    if not len(seg_start):
        empty = np.zeros(0, np.int64)
        return PieceTokens(np.asarray(values, np.int64), empty, empty, empty, empty)
    change = np.flatnonzero(np.diff(seg_doc)) + 1
    doc_first = np.concatenate([[0], change])
    doc_count = np.diff(np.concatenate([doc_first, [len(seg_start)]]))
    return PieceTokens(np.asarray(values, np.int64), seg_start, seg_end, doc_first, doc_count)


def chunk_spans(tokens, params, dupe_factor, rng):
    """The original's segment-A/B construction, on token offsets: returns arrays
    (a_lo, a_hi, b_lo, b_hi, is_random_next) of spans of `tokens.flat`, before truncation.

    Same rules as `pretraining_instances.create_instances_from_document` (target length
    drawn per document and pass, chunks of whole segments reaching the target, split point,
    50% random next from another document with unused segments put back), with this
    piece's own random stream `rng`. A document's segments are contiguous in `flat`, so a
    chunk's end is found by bisection on the segment ends rather than segment by segment,
    and integers are drawn as floor(uniform * range).
    """
    max_num_tokens = params.max_seq_length - 3
    seg_start, seg_end = tokens.seg_start.tolist(), tokens.seg_end.tolist()
    doc_first, doc_count = tokens.doc_first.tolist(), tokens.doc_count.tolist()
    num_docs = len(doc_first)
    order = list(range(num_docs))
    rng.shuffle(order)
    uniform, bisect_left = rng.random, bisect.bisect_left
    short_prob = params.short_seq_prob
    a_lo, a_hi, b_lo, b_hi, rand = [], [], [], [], []
    for _ in range(dupe_factor):
        for d in order:
            first, n = doc_first[d], doc_count[d]
            last = first + n - 1
            target = max_num_tokens
            if uniform() < short_prob:
                target = 2 + int(uniform() * (max_num_tokens - 1))  # randint(2, max)
            c0 = first
            while c0 <= last:
                # The chunk: segments c0..i, the first whose end reaches the target, or
                # the document's last.
                i = min(bisect_left(seg_end, seg_start[c0] + target, c0, last + 1), last)
                chunk_n = i - c0 + 1
                a_end = 1 + int(uniform() * (chunk_n - 1)) if chunk_n >= 2 else 1
                lo, hi = seg_start[c0], seg_end[c0 + a_end - 1]
                if chunk_n == 1 or uniform() < 0.5:
                    for _ in range(10):
                        r = int(uniform() * num_docs)
                        if r != d:
                            break
                    r_first, r_n = doc_first[r], doc_count[r]
                    start_seg = r_first + int(uniform() * r_n)
                    want = seg_start[start_seg] + target - (hi - lo)
                    # First segment from start_seg whose end reaches the target B
                    # length (at least one segment; at most the document's end).
                    j = min(bisect_left(seg_end, want, start_seg, r_first + r_n),
                            r_first + r_n - 1)
                    b_lo.append(seg_start[start_seg])
                    b_hi.append(seg_end[j])
                    rand.append(True)
                    c0 += a_end  # the unused segments are put back
                else:
                    b_lo.append(seg_start[c0 + a_end])
                    b_hi.append(seg_end[i])
                    rand.append(False)
                    c0 = i + 1
                a_lo.append(lo)
                a_hi.append(hi)
    return tuple(np.asarray(x, np.int64) for x in (a_lo, a_hi, b_lo, b_hi)) + \
        (np.asarray(rand, bool),)


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
    lengths)."""
    j = np.arange(width, dtype=np.int32)[None, :]
    la_ = la.astype(np.int32)[:, None]
    last = la_ + lb.astype(np.int32)[:, None] + 2  # column of the final [SEP]
    # Column j of A is flat[a_lo + j - 1]; of B, flat[b_lo + j - la - 2].
    src = np.where(j <= la_, (a_lo.astype(np.int32) - 1)[:, None],
                   (b_lo.astype(np.int32) - 2)[:, None] - la_)
    src += j
    outside = (j >= last) | (j == la_ + 1) | (j == 0)
    np.copyto(src, 0, where=outside)
    ids = flat[src] if flat.dtype == np.int64 else flat[src].astype(np.int64)
    np.copyto(ids, 0, where=outside)
    rows = np.arange(len(la))
    ids[:, 0] = vocab_info.cls_id
    ids[rows, la + 1] = vocab_info.sep_id
    ids[rows, la + lb + 2] = vocab_info.sep_id
    segment_ids = ((j > la_ + 1) & (j <= last)).astype(np.uint8)
    return ids, segment_ids, la + lb + 3


def mask_matrix(ids, lengths, vocab_info, params, rng, word_ids=None):
    """Masks rows of `ids` in place (without whole-word masking): each row's
    `num_to_predict` positions are those of its candidates with the smallest random keys
    (a uniform random subset); one uniform draw per position picks [MASK] (80%), the
    original (10%) or a random vocabulary entry (10%).

    Returns:
        (positions [N, max_predictions] sorted and zero-padded, original ids there,
        number of predictions per row).
    """
    n, width = ids.shape
    k = params.max_predictions_per_seq
    candidate = np.arange(width)[None, :] < lengths[:, None]
    candidate &= ids != vocab_info.cls_id
    candidate &= ids != vocab_info.sep_id
    # Python 3's round (ties to even) is numpy's.
    budget = np.minimum(k, np.maximum(1, np.round(lengths * params.masked_lm_prob)
                                      .astype(np.int64)))
    budget = np.minimum(budget, candidate.sum(axis=1))
    keys = rng.random((n, width), dtype=np.float32)
    np.copyto(keys, np.float32(2.0), where=~candidate)  # non-candidates come last
    if k < width:  # the k smallest keys of each row, then in key order
        chosen = np.argpartition(keys, k - 1, axis=1)[:, :k]
    else:
        chosen = np.broadcast_to(np.arange(width), (n, width))
    chosen = np.take_along_axis(
        chosen, np.argsort(np.take_along_axis(keys, chosen, axis=1), axis=1), axis=1)
    if chosen.shape[1] < k:
        chosen = np.pad(chosen, ((0, 0), (0, k - chosen.shape[1])))
    valid = np.arange(k)[None, :] < budget[:, None]
    # Sorted, the chosen positions stay in the first budget[i] columns (padding is larger).
    positions = np.sort(np.where(valid, chosen, width + 1), axis=1)
    safe = np.where(valid, positions, 0)
    rows = np.arange(n)[:, None]
    originals = ids[rows, safe]
    coin = rng.random((n, k), dtype=np.float32)
    if word_ids is None:
        word_ids = np.asarray(vocab_info.word_ids)
    random_tokens = word_ids[rng.integers(0, len(word_ids), (n, k))]
    replaced = np.where(coin < 0.8, vocab_info.mask_id,
                        np.where(coin < 0.9, originals, random_tokens))
    ids[rows, safe] = np.where(valid, replaced, originals)
    return np.where(valid, positions, 0), np.where(valid, originals, 0), budget


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
                 batch_size=4096):
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
    a_lo, a_hi, b_lo, b_hi, rand = chunk_spans(tokens, params, dupe_factor, py_rng)
    perm = np_rng.permutation(len(a_lo))
    a_lo, a_hi, b_lo, b_hi, rand = a_lo[perm], a_hi[perm], b_lo[perm], b_hi[perm], rand[perm]
    a_lo, la, b_lo, lb = truncate_spans(a_lo, a_hi, b_lo, b_hi, params.max_seq_length - 3,
                                        np_rng)
    out = []
    word_ids = np.asarray(vocab_info.word_ids)
    for start in range(0, len(a_lo), batch_size):
        sl = slice(start, start + batch_size)
        ids, segments, lengths = build_matrix(tokens.flat, a_lo[sl], la[sl], b_lo[sl],
                                              lb[sl], vocab_info, params.max_seq_length)
        if params.do_whole_word_mask:
            positions, originals, budget = mask_matrix_whole_words(
                ids, lengths, vocab_info, params, py_rng)
        else:
            positions, originals, budget = mask_matrix(ids, lengths, vocab_info, params,
                                                       np_rng, word_ids)
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


def run_job(job, report=None):
    """Processes `job.pieces`, writing instances round-robin over `job.output_files`.

    Args:
        report: callable(documents=..., instances=...) for progress, or None.

    Returns:
        dict of counts for the summary.
    """
    import tensorflow as tf

    from data_prep import pretraining_records as records
    from data_prep.graph_tokenizer import GraphTokenizer
    from data_prep.tokenization import load_vocab

    vocab_info = pi.VocabInfo.from_vocab(load_vocab(job.vocab_file))
    tokenizer = GraphTokenizer(job.vocab_file, job.do_lower_case)
    totals = {"documents": 0, "instances": 0, "tokens": 0, "masked": 0, "random_next": 0,
              "lines": 0, "lines_with_invalid_utf8": 0}
    with records.shard_writers(job.output_files) as writers:
        w = 0
        for piece in job.pieces:
            stats = corpus.CorpusStats()
            lines = list(read_piece(piece, stats))
            is_break = np.array([not line for line in lines], bool)
            values, splits = _tokenize_flat(tokenizer, lines, tf)
            tokens = piece_tokens(values, splits, is_break)
            serialized, counts = encode_piece(tokens, piece.index, vocab_info, job.params,
                                              job.dupe_factor, job.seed)
            for record in serialized:
                writers[w].write(record)
                w = (w + 1) % len(writers)
            for key, value in counts.items():
                totals[key] += value
            totals["documents"] += len(tokens.doc_first)
            totals["lines"] += stats.lines
            totals["lines_with_invalid_utf8"] += stats.lines_with_invalid_utf8
            if report is not None:
                report(lines=stats.lines, documents=len(tokens.doc_first),
                       instances=counts["instances"])
    return totals


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


def _tokenize(tokenizer, texts, tf, batch=8192):
    out = []
    for start in range(0, len(texts), batch):
        ragged = tokenizer.tokenize(tf.constant(texts[start:start + batch]), valid_utf8=True)
        values = ragged.flat_values.numpy().tolist()
        splits = ragged.row_splits.numpy().tolist()
        out.extend(values[a:b] for a, b in zip(splits[:-1], splits[1:]))
    return out


def _worker_main(job, queue):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
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


def run(jobs, progress=None):
    """Runs jobs in spawned processes (in this process if there is one). Returns summed
    totals; raises `RuntimeError` with the worker's message if any worker failed."""
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
            for key, value in payload.items():
                totals[key] = totals.get(key, 0) + value
        else:
            error = payload
            done += 1
    for p in procs:
        p.join()
    if error:
        raise RuntimeError(f"A worker failed: {error}")
    return totals
