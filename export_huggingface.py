"""Export a checkpoint as a Hugging Face `transformers` model folder: `model.safetensors`,
`config.json` and the tokenizer files.

Pipeline position: after pre-training or fine-tuning, for users who continue in PyTorch or
publish on the Hugging Face Hub. Any checkpoint this project reads goes in (Google TF1,
this project's TF2 checkpoints and training runs, Hugging Face safetensors); the writing
is `modeling.huggingface.save_huggingface`. The log goes beside the folder
(`<output_dir>.log`), which holds only the model's files.

    python export_huggingface.py --bert_config_file=bert_config.json \
      --init_checkpoint=mrpc_out/best/model.ckpt --vocab_file=vocab.txt --do_lower_case \
      --task_type=classification --labels=0,1 --output_dir=mrpc_hf
"""

from absl import flags, logging

import cli
from common import file_io

flags.DEFINE_string("bert_config_file", None, "The model's bert_config.json (or a Hugging "
                    "Face config.json).")
flags.DEFINE_string("init_checkpoint", None, "The checkpoint: Google TF1, this project's "
                    "(e.g. output_dir/best/model.ckpt) or model.safetensors.")
flags.DEFINE_string("vocab_file", None, "The vocabulary, copied beside the model.")
flags.DEFINE_bool("do_lower_case", True, "True for uncased models.")
flags.DEFINE_string("output_dir", None, "The Hugging Face model folder to write.")
flags.DEFINE_enum("task_type", "encoder",
                  ["encoder", "pretraining", "classification", "squad", "tagging",
                   "classifier", "span", "tagger", "ner"],
                  "Which model the checkpoint holds: encoder (AutoModel), pretraining "
                  "(BertForPreTraining), classification, squad (question answering) "
                  "or tagging (token classification).")
flags.DEFINE_list("labels", None, "classification/tagging: the labels, in the head's "
                  "order (id2label).")
flags.DEFINE_string("labels_file", None, "A file with one label per line (run_ner.py's "
                    "label_list.txt).")
flags.DEFINE_bool("regression", False, "classification: one score (STS-B).")
flags.mark_flags_as_required(["bert_config_file", "init_checkpoint", "output_dir"])
FLAGS = flags.FLAGS


def model_for(task_type, config, num_labels=None):
    """The model class of a `--task_type`, built from a `BertConfig`."""
    import modeling
    if task_type == "encoder":
        return modeling.BertEncoder(config)
    if task_type == "pretraining":
        return modeling.BertPretrainer(config)
    if task_type == "classification":
        return modeling.BertClassifier(config, num_labels)
    if task_type == "squad":
        return modeling.BertSpanLabeler(config)
    if task_type == "tagging":
        return modeling.BertTokenClassifier(config, num_labels)
    raise ValueError(f"--task_type={task_type!r} is not one of encoder, pretraining, "
                     f"classification, squad, tagging.")


def main(_):
    import modeling
    from modeling.huggingface import save_huggingface
    from tasks import canonical_name

    task_type = FLAGS.task_type if FLAGS.task_type in ("encoder", "pretraining") else \
        canonical_name(FLAGS.task_type)
    labels = FLAGS.labels
    if FLAGS.labels_file:
        with open(FLAGS.labels_file, encoding="utf-8") as f:
            labels = [line.strip() for line in f if line.strip()]
    file_io.refuse_inputs_as_outputs(
        {"output_dir": FLAGS.output_dir},
        {name: FLAGS[name].value for name in ("bert_config_file", "init_checkpoint",
                                               "vocab_file", "labels_file")})
    config = modeling.BertConfig.from_json_file(FLAGS.bert_config_file)
    if task_type in ("classification", "tagging") and not (labels or FLAGS.regression):
        raise ValueError(f"--task_type={task_type} needs --labels or --labels_file (or "
                         f"--regression).")
    num_labels = 1 if FLAGS.regression else (len(labels) if labels else None)
    model = model_for(task_type, config, num_labels)
    modeling.load_checkpoint(model, FLAGS.init_checkpoint,
                             strict=True if task_type != "encoder" else "encoder")
    save_huggingface(model, FLAGS.output_dir, FLAGS.vocab_file, FLAGS.do_lower_case,
                     labels)
    logging.info("Wrote a Hugging Face model to %s.", FLAGS.output_dir)


if __name__ == "__main__":
    cli.run(main, log_beside_output=True)
