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
    NumPy: candidates shuffled by random keys, the first `num_to_predict` taken, and one
    uniform draw per position deciding [MASK] (80%) / keep (10%) / random token (10%);
  * output files are divided among worker processes, each writing its own.
"""

import dataclasses
import multiprocessing
import os
import random

import numpy as np

from data_prep import corpus, pretraining_instances as pi

DEFAULT_PIECE_MB = 4


@dataclasses.dataclass(frozen=True)
class Piece:
    index: int
    path: str
    start: int
    end: int


def plan_pieces(files, piece_mb=DEFAULT_PIECE_MB):
    """Cuts every file into byte ranges of about `piece_mb` MB; `read_piece` moves each
    boundary to the next document break."""
    import tensorflow as tf

    step = max(1, int(piece_mb * 2 ** 20))
    pieces = []
    for path in files:
        size = tf.io.gfile.stat(path).length
        for start in range(0, max(size, 1), step):
            pieces.append(Piece(len(pieces), path, start, min(start + step, size)))
    return pieces


def read_piece(piece, stats):
    """Yields the stripped lines of the documents that start inside the piece's range: a
    piece not at offset 0 skips to just after the first blank line at or after its start,
    and every piece reads on past its end to the next blank line."""
    import tensorflow as tf

    try:
        f = tf.io.gfile.GFile(piece.path, "rb")
    except (tf.errors.OpError, OSError) as e:
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
                if not raw.strip():
                    break
        at_document_start = True
        while True:
            if at_document_start and f.tell() >= piece.end:
                return
            raw = f.readline()
            if not raw:
                return
            line = raw.strip()
            stats.lines += 1
            at_document_start = not line
            if line:
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError:
                    stats.lines_with_invalid_utf8 += 1
            yield line


def mask_batch(instances, vocab_info, params, rng):
    """Masks `instances` (unmasked `TrainingInstance`s with numpy `input_ids`) in place.

    Args:
        rng: `numpy.random.Generator`.
    """
    n = len(instances)
    if n == 0:
        return
    lengths = np.array([len(x.input_ids) for x in instances])
    width = int(lengths.max())
    ids = np.zeros((n, width), np.int64)
    for row, inst in enumerate(instances):
        ids[row, :lengths[row]] = inst.input_ids
    real = np.arange(width)[None, :] < lengths[:, None]
    candidate = real & (ids != vocab_info.cls_id) & (ids != vocab_info.sep_id)
    # Python 3 round (ties to even) = numpy's round.
    budget = np.minimum(params.max_predictions_per_seq,
                        np.maximum(1, np.round(lengths * params.masked_lm_prob).astype(int)))
    budget = np.minimum(budget, candidate.sum(axis=1))
    keys = rng.random((n, width))
    keys[~candidate] = 2.0  # non-candidates sort last
    order = np.argsort(keys, axis=1, kind="stable")
    k = params.max_predictions_per_seq
    chosen = order[:, :k] if width >= k else np.pad(order, ((0, 0), (0, k - width)))
    valid = np.arange(k)[None, :] < budget[:, None]
    # Sorted, the chosen positions stay in the first budget[i] columns (padding is larger).
    positions = np.sort(np.where(valid, chosen, width + 1), axis=1)
    safe = np.where(valid, positions, 0)
    rows = np.arange(n)[:, None]
    originals = ids[rows, safe]
    coin = rng.random((n, k))
    word_ids = np.asarray(vocab_info.word_ids)
    random_tokens = word_ids[rng.integers(0, len(word_ids), (n, k))]
    replaced = np.where(coin < 0.8, vocab_info.mask_id,
                        np.where(coin < 0.9, originals, random_tokens))
    ids[rows, safe] = np.where(valid, replaced, ids[rows, safe])
    for row, inst in enumerate(instances):
        m = int(budget[row])
        inst.input_ids = ids[row, :lengths[row]]
        inst.masked_lm_positions = positions[row, :m]
        inst.masked_lm_ids = originals[row, :m]


def instances_from_piece(documents, piece_index, vocab_info, params, dupe_factor, seed):
    """Shuffled, masked instances of one piece's documents."""
    py_rng = random.Random(seed * 1_000_003 + piece_index)
    np_rng = np.random.default_rng([seed, piece_index])
    py_rng.shuffle(documents)
    instances = []
    for _ in range(dupe_factor):
        for d in range(len(documents)):
            for inst in pi.create_instances_from_document(documents, d, vocab_info, params,
                                                          py_rng, mask=False):
                inst.input_ids = np.asarray(inst.input_ids, np.int32)
                instances.append(inst)
    instances = [instances[i] for i in np_rng.permutation(len(instances))]
    if params.do_whole_word_mask:  # word groups make it sequential: the original's code
        for inst in instances:
            inst.input_ids, inst.masked_lm_positions, inst.masked_lm_ids = \
                pi.create_masked_lm_predictions(inst.input_ids.tolist(), vocab_info,
                                                params, py_rng)
    else:
        mask_batch(instances, vocab_info, params, np_rng)
    return instances


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
            documents = [[]]
            lines = list(read_piece(piece, stats))
            texts = [line for line in lines if line]
            ids = _tokenize(tokenizer, texts, tf) if texts else []
            it = iter(ids)
            for line in lines:
                if not line:
                    documents.append([])
                    continue
                tokens = next(it)
                if tokens:
                    documents[-1].append(tokens)
            documents = [d for d in documents if d]
            instances = instances_from_piece(documents, piece.index, vocab_info, job.params,
                                             job.dupe_factor, job.seed)
            for inst in instances:
                writers[w].write(records.serialize_instance(
                    _as_lists(inst), job.params.max_seq_length,
                    job.params.max_predictions_per_seq))
                w = (w + 1) % len(writers)
                totals["tokens"] += len(inst.input_ids)
                totals["masked"] += len(inst.masked_lm_positions)
                totals["random_next"] += int(inst.is_random_next)
            totals["documents"] += len(documents)
            totals["instances"] += len(instances)
            totals["lines"] += stats.lines
            totals["lines_with_invalid_utf8"] += stats.lines_with_invalid_utf8
            if report is not None:
                report(lines=stats.lines, documents=len(documents), instances=len(instances))
    return totals


def _as_lists(inst):
    def to_list(x):
        return x.tolist() if isinstance(x, np.ndarray) else list(x)
    return pi.TrainingInstance(to_list(inst.input_ids), inst.segment_ids,
                               to_list(inst.masked_lm_positions), to_list(inst.masked_lm_ids),
                               inst.is_random_next)


def _tokenize(tokenizer, texts, tf, batch=8192):
    out = []
    for start in range(0, len(texts), batch):
        ragged = tokenizer.tokenize(tf.constant(texts[start:start + batch]))
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
