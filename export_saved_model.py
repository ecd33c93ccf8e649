"""Export a fine-tuned checkpoint as a SavedModel for serving, outside of training.

Pipeline position: fine-tuning -> SavedModel. `run_classifier.py --export_dir` does the
same at the end of training; this script exports any checkpoint later (a training
checkpoint `output_dir/ckpt-N`, the best one `output_dir/best/model.ckpt`, or a Google
checkpoint with the task's output layer). Signatures: `serving_default` (raw strings,
in-graph tokenization) and `serving_ids` (token ids, core ops only); see
`serving/saved_model.py` and each task's `tasks/*/export.py`. `--task_type=encoder` and
`--task_type=preprocessor` write the TF Hub-style encoder and preprocessor instead
(`serving/hub.py`); `--tflite` / `--tflite_quantize` add `model.tflite` /
`model_int8.tflite` of the ids signature beside the SavedModel.

    python export_saved_model.py --task_type=classification \
      --bert_config_file=bert_config.json --init_checkpoint=mrpc_out/best/model.ckpt \
      --vocab_file=vocab.txt --do_lower_case --max_seq_length=128 --labels=0,1 --pair \
      --export_dir=mrpc_model
"""

from absl import app, flags, logging

import cli
from common import file_io
from cli.flags import require_flags

flags.DEFINE_enum("task_type", "classification",
                  ["classification", "squad", "tagging", "encoder", "preprocessor",
                   "classifier", "span", "tagger", "ner"],
                  "What to export: a task model with its head, classification "
                  "(run_classifier.py), tagging (run_ner.py) or squad (run_squad.py), "
                  "with raw-text and ids signatures; or, TF Hub style, the encoder (a "
                  "dict of input_word_ids/input_mask/input_type_ids in; pooled_output, "
                  "sequence_output, encoder_outputs out) or its preprocessor (strings "
                  "in, the encoder's inputs out; needs only --vocab_file). The older "
                  "names classifier, tagger/ner and span are accepted too.")
flags.DEFINE_integer("max_query_length", 64, "span: question pieces kept.")
flags.DEFINE_string("bert_config_file", None, "The model's bert_config.json.")
flags.DEFINE_string("init_checkpoint", None, "The fine-tuned checkpoint to export.")
flags.DEFINE_string("vocab_file", None, "The vocabulary the model was trained with.")
flags.DEFINE_bool("do_lower_case", True, "True for uncased models.")
flags.DEFINE_integer("max_seq_length", 128, "Inputs are truncated to this length.")
flags.DEFINE_list("labels", None, "The label list, in training order (e.g. 0,1 or "
                  "contradiction,entailment,neutral; for a tagger, run_ner.py's "
                  "label_list.txt, also accepted as --labels_file).")
flags.DEFINE_string("labels_file", None, "A file with one label per line "
                    "(run_ner.py writes output_dir/label_list.txt).")
flags.DEFINE_bool("regression", False, "Classifier: one score instead of labels.")
flags.DEFINE_bool("pair", False, "Classifier: the raw-text signature also takes text_b.")
flags.DEFINE_enum("long_document", "truncate", ["truncate", "head_tail", "windows"],
                  "Classifier: how the raw-text signature reads a long text, as the model "
                  "was fine-tuned (run_classifier.py --long_document).")
flags.DEFINE_integer("doc_stride", None, "Classifier, --long_document=windows: pieces "
                     "between window starts (default half a window).")
flags.DEFINE_string("export_dir", None, "Where to write the SavedModel.")
flags.DEFINE_bool("tflite", False, "Also write model.tflite: the ids signature converted "
                  "to TF Lite with builtin ops only (serving_ids; the encoder's "
                  "serving_default).")
flags.DEFINE_bool("tflite_quantize", False, "Also write model_int8.tflite, dynamic-range "
                  "quantized (int8 weights); implies --tflite.")
FLAGS = flags.FLAGS


def _labels():
    if FLAGS.labels_file:
        with open(FLAGS.labels_file, encoding="utf-8") as f:
            return [line.strip() for line in f if line.strip()]
    return FLAGS.labels


def main(_):
    require_flags(FLAGS, ("vocab_file", "export_dir") + (
        () if FLAGS.task_type == "preprocessor" else ("bert_config_file", "init_checkpoint")))
    import modeling
    from tasks import canonical_name

    file_io.refuse_inputs_as_outputs(
        {"export_dir": FLAGS.export_dir},
        {name: FLAGS[name].value for name in ("bert_config_file", "init_checkpoint",
                                               "vocab_file", "labels_file")})
    if FLAGS.task_type == "preprocessor":
        from serving.hub import export_preprocessor
        export_preprocessor(FLAGS.export_dir, FLAGS.vocab_file, FLAGS.do_lower_case,
                            FLAGS.max_seq_length)
        return logging.info("Exported a preprocessor to %s.", FLAGS.export_dir)
    config = modeling.BertConfig.from_json_file(FLAGS.bert_config_file)
    if FLAGS.task_type != "encoder" or FLAGS["max_seq_length"].present:
        config.check_max_seq_length(FLAGS.max_seq_length)  # the encoder takes any length
    tflite = dict(tflite=FLAGS.tflite or FLAGS.tflite_quantize,
                  tflite_quantize=FLAGS.tflite_quantize)
    if FLAGS.task_type == "encoder":
        from serving.hub import export_encoder
        encoder = modeling.BertEncoder(config)
        modeling.load_checkpoint(encoder, FLAGS.init_checkpoint, strict=True)
        export_encoder(encoder, FLAGS.export_dir, **tflite)
        return logging.info("Exported %s as an encoder to %s.", FLAGS.init_checkpoint,
                            FLAGS.export_dir)
    task_type, labels = canonical_name(FLAGS.task_type), _labels()
    if task_type != "squad" and not FLAGS.regression and not labels:
        raise app.UsageError("--labels or --labels_file is required (or --regression).")
    common = (FLAGS.vocab_file, FLAGS.do_lower_case, FLAGS.max_seq_length)
    if task_type == "squad":
        from tasks.squad.export import export_squad as export
        model, extra = modeling.BertSpanLabeler(config), (FLAGS.max_query_length,)
    elif task_type == "tagging":
        from tasks.tagging.export import export_tagging as export
        model, extra = modeling.BertTokenClassifier(config, len(labels)), (labels,)
    else:
        from tasks.classification.export import export_classification as export
        model = modeling.BertClassifier(config, 1 if FLAGS.regression else len(labels))
        extra = (labels, FLAGS.regression, FLAGS.pair, FLAGS.long_document, FLAGS.doc_stride)
    modeling.load_checkpoint(model, FLAGS.init_checkpoint, strict=True)
    export(model, FLAGS.export_dir, *common, *extra, **tflite)
    logging.info("Exported %s to %s.", FLAGS.init_checkpoint, FLAGS.export_dir)


if __name__ == "__main__":
    cli.run(main)
