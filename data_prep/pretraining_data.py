"""Document files -> masked-LM / next-sentence TFRecords, in the two modes of
`create_pretraining_data.py` (the root script holds the flags):

  run_original  the original's instances, in its order (one process);
  run_fast      the same algorithm and distributions, streamed in pieces over worker
                processes (`fast_pretraining`); deterministic for a seed, input and
                worker count.

Pipeline position: documents -> **TFRecords** -> run_pretraining.py.
"""

import random

from absl import logging


def tokenize_batch_fn(kind, vocab_file, do_lower_case):
    """lines (bytes) -> lists of ids, with the Python or the in-graph tokenizer."""
    if kind == "python":
        from text.tokenization import FullTokenizer
        tok = FullTokenizer(vocab_file, do_lower_case)
        return lambda lines: [tok.convert_tokens_to_ids(tok.tokenize(x)) for x in lines]
    import tensorflow as tf

    from data_prep import fast_pretraining
    from text.graph_tokenizer import GraphTokenizer, require_text
    require_text("--tokenizer=graph (without it: --tokenizer=python)")
    graph = GraphTokenizer(vocab_file, do_lower_case)
    return lambda lines: fast_pretraining.tokenize_lines(graph, lines, tf)


def run_original(files, outputs, vocab, params, progress, *, vocab_file, do_lower_case,
                 dupe_factor, random_seed, tokenizer="graph", max_invalid_utf8_share=1.0,
                 word_segmenter="none"):
    """--mode=original: the original's instances, in its order, written round-robin to
    `outputs`. With whole-word masking, `word_segmenter`'s Chinese words are masked
    whole. Returns the summary counts."""
    from data_prep import corpus
    from data_prep import pretraining_records as records
    from data_prep.pretraining_instances import VocabInfo, create_training_instances
    from text import chinese_words

    stats = corpus.CorpusStats()
    token_ids = tokenize_batch_fn(tokenizer, vocab_file, do_lower_case)
    words = chinese_words.word_marks(vocab, do_lower_case, params.do_whole_word_mask,
                                     word_segmenter)

    def tokenize(lines):  # with the tokens that continue a Chinese word marked
        ids = token_ids(lines)
        return ids if words is None else words.mark_lists(lines, ids)

    documents = corpus.read_documents(files, tokenize, stats, progress=progress)
    corpus.check_text(stats.invalid_by_file, max_invalid_utf8_share)
    warn_about_input(stats)
    if not documents:
        raise ValueError(f"{', '.join(files)}: no text in the input files (every line is "
                         f"empty or tokenizes to nothing).")
    rng = random.Random(random_seed)
    instances = create_training_instances(documents, VocabInfo.from_vocab(vocab), params,
                                          dupe_factor, rng)
    progress.update(documents=len(documents))
    totals = {"documents": len(documents), "instances": len(instances), "tokens": 0,
              "masked": 0, "random_next": 0, "lines": stats.lines,
              "lines_with_invalid_utf8": stats.lines_with_invalid_utf8,
              "lines_not_segmented": words.unaligned_lines if words else 0,
              "long_one_line_documents": sum(
                  len(d) == 1 and len(d[0]) > params.max_seq_length - 3 for d in documents)}
    with records.shard_writers(outputs) as writers:
        for start in range(0, len(instances), 4096):
            batch = instances[start:start + 4096]
            for offset, data in enumerate(records.serialize_instances(
                    batch, params.max_seq_length, params.max_predictions_per_seq)):
                writers[(start + offset) % len(writers)].write(data)
            for inst in batch:
                totals["tokens"] += len(inst.input_ids)
                totals["masked"] += len(inst.masked_lm_positions)
                totals["random_next"] += int(inst.is_random_next)
            progress.update(instances=len(batch))
    return totals


def run_fast(files, outputs, params, progress, *, vocab_file, do_lower_case, dupe_factor,
             random_seed, num_workers=1, piece_mb=1.0, num_shards=1, shard_index=0,
             max_invalid_utf8_share=1.0, line_by_line=(), word_segmenter="none"):
    """--mode=fast: pieces of about `piece_mb` MB (this machine's share of `num_shards`),
    spread over `num_workers` processes; the shard set is published only when all of it
    is written and the input passed its checks. The files of `line_by_line` are read one
    text per line, and then the documents are packed into full sequences for the masked
    LM (`fast_pretraining.pack_documents`). With whole-word masking, `word_segmenter`'s
    Chinese words are masked whole. Returns the summary counts."""
    from common import file_io
    from data_prep import corpus, fast_pretraining
    from text.graph_tokenizer import require_text
    require_text("--mode=fast (without it: --mode=original --tokenizer=python)")
    if all(file_io.size(f) == 0 for f in files):
        raise ValueError(f"{', '.join(files)}: no text in the input files (all empty).")
    pieces = fast_pretraining.plan_pieces(files, piece_mb, line_by_line)
    pieces = pieces[shard_index::num_shards]
    progress.total = ("pieces", len(pieces))
    jobs = fast_pretraining.split_jobs(
        pieces, outputs, num_workers, vocab_file=vocab_file, do_lower_case=do_lower_case,
        params=params, dupe_factor=dupe_factor, seed=random_seed,
        word_segmenter=word_segmenter,
        pack_tokens=fast_pretraining.pack_tokens(params) if line_by_line else 0)
    if len(jobs) < num_workers:
        logging.info("Using %d worker(s): one per output file at most. Give more "
                     "--output_file names to use more cores.", len(jobs))
    def check(totals):  # before any shard is published
        corpus.check_text(totals["invalid_by_file"], max_invalid_utf8_share)
        if totals["documents"] == 0:
            raise ValueError(f"{', '.join(files)}: no text in the input files (every line "
                             f"is empty or tokenizes to nothing).")

    return fast_pretraining.run(jobs, progress, check=check)


def warn_about_input(stats):
    for path in stats.empty_files:
        logging.warning("%s: empty input file (no text).", path)
    for path in stats.files_without_breaks:
        logging.warning("%s: no blank lines, so the whole file is one document, as the "
                        "original reads it (--mode=fast reads such a file one text per "
                        "line).", path)
    if stats.lines_with_invalid_utf8:
        logging.warning("%d lines had bytes that are not UTF-8; those bytes were dropped, "
                        "as the original does.", stats.lines_with_invalid_utf8)
