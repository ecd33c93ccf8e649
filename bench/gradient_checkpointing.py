"""Gradient checkpointing's memory and time: peak resident memory and step time of a
fine-tuning step (BertClassifier, the project's optimizer, full-length sequences) with
and without `--gradient_checkpointing`, at BERT-Base and BERT-Large sizes and lengths
128, 384 and 512, each in a fresh process; and from the peaks at two batch sizes, the
bytes a sequence costs (activations) and the fixed bytes (weights, gradients, Adam's
moments), hence the largest batch that fits a memory size.

    python -m bench.gradient_checkpointing [--sizes=base,large --lengths=128,384,512
      --batches=1,2 --goal_batch=8 --steps=3]

On a CPU the peak RSS is the measurement; a GPU holds the same tensors (without the
framework's own ~0.5 GB here), so the batches that fit are an estimate for it.
"""

import dataclasses
import json
import os
import resource
import subprocess
import sys
import time

from bench import harness
from common.settings import setting

SIZES = {"base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                      intermediate_size=3072),
         "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                       intermediate_size=4096)}
MEMORY_GB = (12, 16, 24, 80)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    sizes: str = setting("base,large", help="Model sizes: base, large.")
    lengths: str = setting("128,384,512", help="Sequence lengths.")
    batches: str = setting("1,2", help="Two batch sizes: the peak's slope between them is "
                           "a sequence's bytes.")
    goal_batch: int = setting(8, help="Also BERT-Base at length 512 with this batch (the "
                              "issue's goal: checkpointed peak <= 0.6x, step <= 1.4x); 0: "
                              "none.")
    steps: int = setting(3, help="Training steps per process (the first traces).")
    child: str = setting("", help="(internal) one measurement: size,length,batch,on|off.")


def measure(size, length, batch, checkpointing, steps):
    """One process's measurement: {"peak_bytes", "step_seconds"} (median of the steps
    after the first)."""
    import numpy as np
    import tensorflow as tf

    from modeling import BertClassifier, BertConfig
    from training.optimizers import create_optimizer
    config = BertConfig(vocab_size=30522, max_position_embeddings=512, type_vocab_size=2,
                        **SIZES[size])
    model = BertClassifier(config, 2)
    if checkpointing:
        model.encoder.enable_gradient_checkpointing(seed=1)
    optimizer = create_optimizer(model, 2e-5, 100, 10)
    rng = np.random.default_rng(0)
    inputs = {"input_ids": tf.constant(rng.integers(1000, 30000, (batch, length)), tf.int32),
              "input_mask": tf.ones((batch, length), tf.int32),
              "segment_ids": tf.zeros((batch, length), tf.int32)}
    labels = tf.constant(rng.integers(0, 2, batch), tf.int32)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            logits = model(inputs, training=True, skip_padding=True)["logits"]
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=logits))
        grads = tape.gradient(loss, model.trainable_variables)
        grads = [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)  # as the loop
                 for g, v in zip(grads, model.trainable_variables)]
        grads, _ = tf.clip_by_global_norm(grads, 1.0)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step().numpy()
        times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    later = sorted(times[1:] or times)
    return {"peak_bytes": peak, "step_seconds": later[len(later) // 2]}


def run_child(size, length, batch, checkpointing, steps):
    argv = [sys.executable, "-m", "bench.gradient_checkpointing",
            f"--child={size},{length},{batch},{'on' if checkpointing else 'off'}",
            f"--steps={steps}"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run(argv, capture_output=True, text=True, cwd=root,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{size} length {length} batch {batch} checkpointing "
          f"{'on' if checkpointing else 'off'}: {result['peak_bytes'] / 2**30:.2f} GiB, "
          f"{result['step_seconds']:.2f} s a step", flush=True)
    return result


def largest_batch(fixed, per_sequence, gigabytes):
    return max(0, int((gigabytes * 2**30 - fixed) // per_sequence))


def main(settings):
    if settings.child:
        size, length, batch, mode = settings.child.split(",")
        print(json.dumps(measure(size, int(length), int(batch), mode == "on",
                                 settings.steps)))
        return
    print(harness.describe())
    small, big = (int(b) for b in settings.batches.split(","))
    rows = []
    for size in settings.sizes.split(","):
        for length in (int(n) for n in settings.lengths.split(",")):
            row = [size, length]
            cells = []
            for checkpointing in (False, True):
                low = run_child(size, length, small, checkpointing, settings.steps)
                high = run_child(size, length, big, checkpointing, settings.steps)
                per_sequence = (high["peak_bytes"] - low["peak_bytes"]) / (big - small)
                fixed = low["peak_bytes"] - small * per_sequence
                layers = SIZES[size]["num_hidden_layers"]
                cells.append((per_sequence, fixed, layers, high))
                row += [f"{per_sequence / layers / 2**20:.0f}",
                        " / ".join(str(largest_batch(fixed, per_sequence, gb))
                                   for gb in MEMORY_GB)]
            row.append(f"{cells[1][3]['step_seconds'] / cells[0][3]['step_seconds']:.2f}x")
            rows.append(row)
    print(harness.table(["size", "length", "MiB a sequence a layer", "largest batch in "
                         + " / ".join(f"{gb} GB" for gb in MEMORY_GB),
                         "checkpointed: MiB a sequence a layer", "checkpointed: largest "
                         "batch", f"checkpointed step time (batch {big})"], rows))
    if settings.goal_batch:
        off = run_child("base", 512, settings.goal_batch, False, settings.steps)
        on = run_child("base", 512, settings.goal_batch, True, settings.steps)
        print(f"\nBERT-Base, length 512, batch {settings.goal_batch}: peak "
              f"{off['peak_bytes'] / 2**30:.2f} GiB without, {on['peak_bytes'] / 2**30:.2f} "
              f"GiB with ({on['peak_bytes'] / off['peak_bytes']:.2f}x); step "
              f"{off['step_seconds']:.1f} s without, {on['step_seconds']:.1f} s with "
              f"({on['step_seconds'] / off['step_seconds']:.2f}x).")


if __name__ == "__main__":
    harness.run(main, Settings)
