"""Benchmark: encoder inference, this project vs KerasHub vs Hugging Face, side by side.

The same architecture with random weights, the same random ids (no padding), on the same
number of threads, timed in alternating rounds in one process (median per point):

  ours        modeling.BertEncoder in a tf.function, as `training.loop.predict` runs it
              (extract_features.py, the fine-tuning scripts' prediction); the SavedModels
              run the same graph
  ours, XLA   the same with jit_compile=True
  keras_hub   keras_hub.models.BertBackbone in a tf.function, with and without XLA
  hf          transformers.BertModel (PyTorch, CPU) in torch.inference_mode()

and the model FLOPs utilisation against this machine's float32 matmul peak measured in the
same run. Prints a Markdown table of sequences/s and ratios to the best peer.

    pip install -r bench/requirements.txt
    python -m bench.inference_speed [--points=base:32x128,small:1x128,...] [--rounds=3]
"""

import dataclasses
import os
import statistics
import time

import numpy as np

from bench import harness
from bench.harness import forward_flops, matmul_peak
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CONFIGS = {  # layers, hidden, heads, intermediate
    "base": (12, 768, 12, 3072),
    "small": (4, 256, 4, 1024),
    "minilm": (6, 384, 12, 1536),
}
VOCAB = 30522
DEFAULT_POINTS = ("base:1x32,base:1x128,base:8x128,base:32x128,base:8x512,"
                  "small:1x32,small:32x128,small:8x512")


def build(name, cfg, jit=False):
    """A callable `fn(ids, mask, segments)` that returns the sequence output as NumPy."""
    layers, hidden, heads, intermediate = cfg
    if name == "ours":
        import tensorflow as tf

        from modeling import BertConfig, BertEncoder
        model = BertEncoder(BertConfig(
            vocab_size=VOCAB, hidden_size=hidden, num_hidden_layers=layers,
            num_attention_heads=heads, intermediate_size=intermediate))
        step = tf.function(lambda i, m, s: model(
            {"input_ids": i, "input_mask": m, "segment_ids": s},
            training=False)["sequence_output"], jit_compile=jit, reduce_retracing=True)
        return lambda i, m, s: step(i, m, s).numpy()
    if name == "keras_hub":
        import keras_hub
        import tensorflow as tf
        model = keras_hub.models.BertBackbone(
            vocabulary_size=VOCAB, num_layers=layers, num_heads=heads, hidden_dim=hidden,
            intermediate_dim=intermediate, max_sequence_length=512)
        step = tf.function(lambda i, m, s: model(
            {"token_ids": i, "padding_mask": m, "segment_ids": s},
            training=False)["sequence_output"], jit_compile=jit, reduce_retracing=True)
        return lambda i, m, s: step(i, m, s).numpy()
    import torch
    import transformers
    model = transformers.BertModel(transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=heads, intermediate_size=intermediate,
        hidden_act="gelu_new"), add_pooling_layer=True).eval()

    def run(i, m, s):
        with torch.inference_mode():
            return model(input_ids=torch.from_numpy(i.astype(np.int64)),
                         attention_mask=torch.from_numpy(m.astype(np.int64)),
                         token_type_ids=torch.from_numpy(s.astype(np.int64))
                         ).last_hidden_state.numpy()
    return run


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.Rounds, harness.Threads):
    """The flags of this bench (`python -m bench.inference_speed --help`)."""
    points: str = setting(DEFAULT_POINTS, help="Comma-separated config:batchxseq points "
                          "(configs: small, base).")
    peers: str = setting('ours,ours_xla,keras_hub,keras_hub_xla,hf', help="Comma-separated "
                         "implementations to time (the default lists them all).")
    seconds: float = setting(2.0, help='about this long per implementation, point and round')


def main(settings):
    from common import quiet
    quiet.quiet_tensorflow_start()
    import tensorflow as tf
    import torch
    tf.config.threading.set_intra_op_parallelism_threads(settings.threads)
    torch.set_num_threads(settings.threads)

    points = []
    for item in settings.points.split(","):
        config, shape = item.split(":")
        batch, seq = (int(v) for v in shape.split("x"))
        points.append((config, batch, seq))
    peers = settings.peers.split(",")
    peak = matmul_peak()
    rows = []
    for config in dict.fromkeys(c for c, _, _ in points):
        cfg = CONFIGS[config]
        fns = {}
        for peer in peers:
            base = peer.replace("_xla", "")
            fns[peer] = build(base, cfg, jit=peer.endswith("_xla"))
        for _, batch, seq in [p for p in points if p[0] == config]:
            rng = np.random.default_rng(0)
            ids = rng.integers(1000, VOCAB, (batch, seq)).astype(np.int32)
            mask = np.ones_like(ids)
            segments = np.zeros_like(ids)
            times = {peer: [] for peer in peers}
            calls = {}
            for peer in peers:  # warm-up (tracing, compilation) and the call count
                fns[peer](ids, mask, segments)
                start = time.perf_counter()
                fns[peer](ids, mask, segments)
                calls[peer] = max(1, int(settings.seconds / (time.perf_counter() - start)))
            for r in range(settings.rounds):
                for peer in (peers if r % 2 == 0 else peers[::-1]):
                    start = time.perf_counter()
                    for _ in range(calls[peer]):
                        fns[peer](ids, mask, segments)
                    times[peer].append((time.perf_counter() - start) / calls[peer])
            flops = forward_flops(cfg[0], cfg[1], cfg[3], batch, seq)
            rates = {peer: batch / statistics.median(times[peer]) for peer in peers}
            best_peer = max((p for p in peers if not p.startswith("ours")),
                            key=lambda p: rates[p], default=None)
            for peer in peers:
                ratio = f"{rates[peer] / rates[best_peer]:.2f}" if best_peer else "-"
                mfu = flops / statistics.median(times[peer]) / peak
                rows.append((config, f"{batch} x {seq}", peer, rates[peer], ratio, mfu))
                print(f"{config} {batch}x{seq} {peer}: {rates[peer]:.2f} seq/s "
                      f"({ratio} of the best peer, MFU {mfu:.0%})", flush=True)
    print(f"\nfloat32 matmul peak (TensorFlow, 2048^3): {peak / 1e9:.1f} GFLOP/s; "
          f"{settings.threads} threads; {settings.rounds} rounds\n")
    print("| config | batch x seq | implementation | sequences/s | vs best peer | MFU |")
    print("|---|---|---|---|---|---|")
    for config, shape, peer, rate, ratio, mfu in rows:
        print(f"| {config} | {shape} | {peer} | {rate:.2f} | {ratio} | {mfu:.0%} |")


if __name__ == "__main__":
    harness.run(main, Settings)
