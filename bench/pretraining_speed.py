"""Benchmark: pre-training steps per second, this project vs KerasHub vs Hugging Face.

Times training steps (masked LM + next sentence, forward + backward + optimizer update)
on the same batch, side by side in one process, in alternating rounds: a synthetic batch of
full-length sequences, or with `--input_file` a batch of real pre-training records (the
sequences as long as the text made them; ours computes their real tokens only):

  ours       modeling.BertPretrainer + training.loop.Trainer (the original's optimizer,
             global-norm clipping, steps_per_loop on device, the real tokens only), with
             and without XLA (which computes every position), and computing every
             position without XLA (ours_padded), and with TensorFlow's default two
             iterations of its graph optimizer (ours_grappler; one on CPU)
  keras_hub  keras_hub.models.BertBackbone + keras_hub.layers.MaskedLMHead (tied) + a
             2-way NSP dense, Keras AdamW, a tf.function train step
  hf         transformers.BertForPreTraining (PyTorch, CPU), torch.optim.AdamW

and the model FLOPs utilisation (MFU) against this machine's measured float32 matmul peak.
Prints a Markdown table of sequences/s, ratios to ours and MFU.

    pip install -r bench/requirements.txt   # KerasHub; requirements-test.txt: torch
    python -m bench.pretraining_speed [--configs=small,base] [--rounds=2]
        [--input_file=records/train-00.tfrecord]   # e.g. pretrain_from_text.py's
"""

import dataclasses
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np

from bench import harness
from bench.harness import describe, matmul_peak, set_onednn
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CONFIGS = {
    # name: (layers, hidden, heads, intermediate, batch, steps per measure)
    "small": (4, 256, 4, 1024, 32, 10),
    "base": (12, 768, 12, 3072, 8, 3),
}
VOCAB, SEQ, PRED = 30522, 128, 20


def synthetic_batch(batch, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, VOCAB, size=(batch, SEQ)).astype(np.int32)
    ids[:, 0], ids[:, 64], ids[:, -1] = 101, 102, 102
    positions = np.sort(np.stack([rng.choice(np.arange(1, 127), PRED, replace=False)
                                  for _ in range(batch)]), 1).astype(np.int32)
    return {"input_ids": ids, "input_mask": np.ones_like(ids),
            "segment_ids": (np.arange(SEQ)[None] > 64).astype(np.int32).repeat(batch, 0),
            "masked_lm_positions": positions,
            "masked_lm_ids": np.take_along_axis(ids, positions, 1),
            "masked_lm_weights": np.ones((batch, PRED), np.float32),
            "next_sentence_labels": rng.integers(0, 2, size=(batch, 1)).astype(np.int32)}


def records_batch(files, batch, seed=0, candidates=21):
    """A batch of `batch` pre-training records from `files` (length SEQ, PRED masked
    positions) as training draws them (seeded): of the first `candidates` batches, the one
    with the median share of real tokens, so that one batch stands for the file. The
    next-sentence labels as synthetic_batch's: [batch, 1]."""
    from tasks.pretraining.input import pretraining_dataset
    data = pretraining_dataset(files.split(","), batch, SEQ, PRED, is_training=True,
                               seed=seed).take(candidates)
    batches = sorted(({name: value.numpy() for name, value in b.items()} for b in data),
                     key=lambda b: b["input_mask"].mean())
    got = batches[len(batches) // 2]
    got["next_sentence_labels"] = got["next_sentence_labels"].reshape(batch, 1)
    return got


def train_flops_per_sequence(layers, hidden, intermediate):
    """Matmul FLOPs of one training step per sequence (backward = 2x forward)."""
    per_token = layers * (2 * 4 * hidden * hidden + 2 * 2 * hidden * intermediate
                          + 2 * 2 * SEQ * hidden)  # QKVO, FFN, scores + context
    forward = SEQ * per_token + PRED * (2 * hidden * hidden + 2 * hidden * VOCAB) \
        + 2 * hidden * hidden  # MLM transform + tied output, pooler
    return 3 * forward


class Ours:
    def __init__(self, cfg, batch, jit, skip_padding=True, grappler=False):
        import tensorflow as tf

        from modeling import BertConfig, BertPretrainer
        from tasks.pretraining import PretrainingTask
        from training.loop import Trainer
        from training.optimizers import create_optimizer
        layers, hidden, heads, inter = cfg
        config = BertConfig(vocab_size=VOCAB, hidden_size=hidden, num_hidden_layers=layers,
                            num_attention_heads=heads, intermediate_size=inter)
        strategy = tf.distribute.get_strategy()
        model = BertPretrainer(config)
        task = PretrainingTask()
        task.skip_padding = skip_padding
        self.trainer = Trainer(strategy, model, task,
                               create_optimizer(model, 1e-4, 10000, 100), "/tmp/unused",
                               jit_compile=jit)
        # The options the training loop is called with (one iteration of Grappler on
        # CPU), unless `grappler`: the thread's own (two iterations), as before.
        self.options = None if grappler else self.trainer._call_options
        data = tf.data.Dataset.from_tensors({k: tf.constant(v) for k, v in batch.items()})
        self.iterator = iter(strategy.distribute_datasets_from_function(
            lambda ctx: data.repeat()))

    def run(self, steps):
        import tensorflow as tf

        from training.loop import function_call_options
        with function_call_options(self.options):
            out = self.trainer._train_loop(self.iterator, tf.constant(steps))
            return float(out["last_loss"])


class KerasHub:
    def __init__(self, cfg, batch):
        import keras
        import keras_hub
        import tensorflow as tf
        layers, hidden, heads, inter = cfg
        backbone = keras_hub.models.BertBackbone(
            vocabulary_size=VOCAB, num_layers=layers, num_heads=heads, hidden_dim=hidden,
            intermediate_dim=inter, max_sequence_length=512)
        mlm = keras_hub.layers.MaskedLMHead(vocabulary_size=VOCAB,
                                            token_embedding=backbone.token_embedding,
                                            activation="gelu")
        nsp = keras.layers.Dense(2)
        optimizer = keras.optimizers.AdamW(1e-4, weight_decay=0.01, global_clipnorm=1.0)
        inputs = {"token_ids": tf.constant(batch["input_ids"]),
                  "padding_mask": tf.constant(batch["input_mask"]),
                  "segment_ids": tf.constant(batch["segment_ids"])}
        positions = tf.constant(batch["masked_lm_positions"])
        labels = tf.constant(batch["masked_lm_ids"])
        weights = tf.constant(batch["masked_lm_weights"])
        nsp_labels = tf.constant(batch["next_sentence_labels"][:, 0])
        backbone(inputs)
        mlm(backbone(inputs)["sequence_output"], positions)
        nsp.build((None, hidden))
        variables = backbone.trainable_variables + mlm.trainable_variables + \
            nsp.trainable_variables
        optimizer.build(variables)

        @tf.function
        def loop(steps):
            loss = tf.constant(0.0)
            for _ in tf.range(steps):
                with tf.GradientTape() as tape:
                    out = backbone(inputs, training=True)
                    logits = mlm(out["sequence_output"], positions)
                    xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
                    loss = tf.reduce_sum(xent * weights) / (tf.reduce_sum(weights) + 1e-5)
                    loss += tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                        nsp_labels, nsp(out["pooled_output"])))
                grads = tape.gradient(loss, variables)
                optimizer.apply(grads, variables)
            return loss

        self.loop = loop

    def run(self, steps):
        import tensorflow as tf
        return float(self.loop(tf.constant(steps)))


class HuggingFace:
    def __init__(self, cfg, batch):
        import torch
        import transformers
        torch.set_num_threads(os.cpu_count())
        layers, hidden, heads, inter = cfg
        config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=hidden,
                                         num_hidden_layers=layers, num_attention_heads=heads,
                                         intermediate_size=inter)
        self.model = transformers.BertForPreTraining(config).train()
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4,
                                           weight_decay=0.01)
        labels = np.full(batch["input_ids"].shape, -100, np.int64)
        np.put_along_axis(labels, batch["masked_lm_positions"], batch["masked_lm_ids"], 1)
        self.inputs = {"input_ids": torch.tensor(batch["input_ids"], dtype=torch.long),
                       "attention_mask": torch.tensor(batch["input_mask"]),
                       "token_type_ids": torch.tensor(batch["segment_ids"], dtype=torch.long),
                       "labels": torch.tensor(labels),
                       "next_sentence_label": torch.tensor(
                           batch["next_sentence_labels"][:, 0], dtype=torch.long)}

    def run(self, steps):
        import torch
        for _ in range(steps):
            self.optimizer.zero_grad()
            loss = self.model(**self.inputs).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()
        return float(loss.detach())


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.Rounds, harness.OneDNN):
    """The flags of this bench (`python -m bench.pretraining_speed --help`)."""
    configs: str = setting('small,base', help="Comma-separated model configs to time: small, "
                           "base.")
    rounds: int = 4
    peers: str = setting('ours,ours_padded,ours_xla,keras_hub,hf', help="Comma-separated implementations "
                         "to time (the default lists them all).")
    input_file: str = setting('', help="Comma-separated pre-training TFRecords (length 128, "
                              "20 predictions) to take the batch from instead of the "
                              "synthetic full-length one.")


def main(settings):
    set_onednn(settings.onednn)
    peak = first = matmul_peak()
    print(f"float32 matmul peak (2048^3, TensorFlow): {peak / 1e9:.1f} GFLOP/s")
    rows = []
    for name in settings.configs.split(","):
        layers, hidden, heads, inter, batch_size, steps = CONFIGS[name]
        cfg = (layers, hidden, heads, inter)
        batch = (records_batch(settings.input_file, batch_size) if settings.input_file
                 else synthetic_batch(batch_size))
        print(f"{name}: {batch['input_mask'].mean():.1%} of the batch's positions are real "
              f"tokens")
        makers = {"ours": lambda: Ours(cfg, batch, jit=False),
                  "ours_xla": lambda: Ours(cfg, batch, jit=True),
                  "ours_padded": lambda: Ours(cfg, batch, jit=False, skip_padding=False),
                  "ours_grappler": lambda: Ours(cfg, batch, jit=False, grappler=True),
                  "keras_hub": lambda: KerasHub(cfg, batch),
                  "hf": lambda: HuggingFace(cfg, batch)}
        runners = {peer: makers[peer]() for peer in settings.peers.split(",")}
        for runner in runners.values():
            runner.run(1)  # trace / warm up
            runner.run(1)
        times = {peer: [] for peer in runners}
        order = list(runners)
        for r in range(settings.rounds):
            # Each round starts with the next peer, so no peer always follows the same
            # one (the ratios moved with the fixed order).
            for peer in order[r % len(order):] + order[:r % len(order)]:
                runner = runners[peer]
                start = time.perf_counter()
                runner.run(steps)
                times[peer].append((time.perf_counter() - start) / steps)
        flops = train_flops_per_sequence(layers, hidden, inter) * batch_size
        ours = statistics.median(times["ours"]) if "ours" in times else None
        for peer, values in times.items():
            step = statistics.median(values)
            rows.append((name, batch_size, peer, batch_size / step,
                         (ours / step) if ours else float("nan"), flops / step))
    # Measured again at the end: a shared host's neighbours can halve one measurement
    # (seen: 214 GFLOP/s at the start, 430 alone, on an AMD EPYC family 26); the MFU
    # uses the higher.
    last = matmul_peak()
    peak = max(peak, last)
    print(f"\n{describe()}; float32 matmul peak {peak / 1e9:.0f} GFLOP/s (start "
          f"{first / 1e9:.0f}, end {last / 1e9:.0f})")
    print("\n| config | batch | implementation | sequences/s | speed vs ours | MFU |")
    print("|---|---|---|---|---|---|")
    for name, batch, peer, sps, ratio, rate in rows:
        print(f"| {name} | {batch} | {peer} | {sps:.2f} | {ratio:.2f} | {rate / peak:.1%} |")


if __name__ == "__main__":
    harness.run(main, Settings)
