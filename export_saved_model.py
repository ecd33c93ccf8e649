"""Export a fine-tuned checkpoint as a SavedModel for serving, outside of training.

Pipeline position: fine-tuning -> SavedModel. `run_classifier.py --export_dir` does the
same at the end of training; this script exports any checkpoint later (a training
checkpoint `output_dir/ckpt-N`, the best one `output_dir/best/model.ckpt`, or a Google
checkpoint with the task's output layer). Signatures: `serving_default` (raw strings,
in-graph tokenization) and `serving_ids` (token ids, core ops only); see
`serving/saved_model.py` and each task's `tasks/*/export.py`. `--task_type=encoder` and
`--task_type=preprocessor` write the TF Hub-style encoder and preprocessor instead
(`serving/hub.py`); `model.tflite` (`--notflite`: none) / `--tflite_quantize`
`model_int8.tflite` of the ids signature beside the SavedModel.

    python export_saved_model.py --task_type=classification \
      --bert_config_file=bert_config.json --init_checkpoint=mrpc_out/best/model.ckpt \
      --vocab_file=vocab.txt --do_lower_case --max_seq_length=128 --labels=0,1 --pair \
      --export_dir=mrpc_model

A checkpoint of a fine-tuning run (`output_dir/ckpt-N`, `output_dir/best/model.ckpt`) needs
only its files: the run recorded the rest (task, labels, pair, long-text reading,
vocabulary, casing, length) in `output_dir/export_settings.json`; a flag given wins.

    python export_saved_model.py --bert_config_file=bert_config.json \
      --init_checkpoint=mrpc_out/best/model.ckpt --export_dir=mrpc_model
"""

import dataclasses

from absl import flags, logging

import cli
from cli.flags import (
    config_from_flags,
    configs_from_flags,
    define_settings,
    fill_from_record,
)
from common import file_io
from common.settings import setting
from common.shared_settings import ModelVocabulary, SequenceLength, WeightedModelFiles
from tasks import registry
from training import export_record

# Built in, beside the tasks: the TF Hub-style encoder and its preprocessor.
HUB_TYPES = ("encoder", "preprocessor")
TASKS = registry.load_all()


def _has_saved_model(entry):
    return bool(entry.export and entry.export.declares("save"))  # nothing imported yet


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExportSettings(ModelVocabulary, SequenceLength):
    """What every export takes (the preprocessor needs no more); each task's own export
    settings are added below."""
    task_type: str = setting(
        "classification", choices=registry.names(where=_has_saved_model) + list(HUB_TYPES),
        help="What to export: a task model with its head (one of "
        f"{', '.join(registry.names(False, _has_saved_model))}; the name of the run_*.py "
        "script's task), with raw-text and ids signatures; or, TF Hub style, the encoder "
        "(a dict of input_word_ids/input_mask/input_type_ids in; pooled_output, "
        "sequence_output, encoder_outputs out) or its preprocessor (strings in, the "
        "encoder's inputs out; needs only --vocab_file). Older task names are accepted too.")
    export_dir: str = setting(help="Where to write the SavedModel.")
    tflite: bool = setting(True, help="Also write model.tflite: the ids signature "
                           "converted to TF Lite with builtin ops only (serving_ids; the "
                           "encoder's serving_default), the fast path of serving.load; "
                           "--notflite skips it.")
    tflite_quantize: bool = setting(False, help="Also write model_int8.tflite, "
                                    "dynamic-range quantized (int8 weights); implies --tflite.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelExportSettings(WeightedModelFiles, ExportSettings):
    """The export of a model (every --task_type but the preprocessor): its bert_config.json
    and checkpoint are required too."""


define_settings(ModelExportSettings)
for _entry in TASKS.values():  # each task's own export settings
    if _entry.export and _entry.export.options:
        define_settings(_entry.export.options)
FLAGS = flags.FLAGS


def main(_):
    if FLAGS.init_checkpoint:  # the settings its training run recorded, for flags not given
        source, record = export_record.read_for_checkpoint(FLAGS.init_checkpoint)
        fill_from_record(FLAGS, record, source)
    settings, = configs_from_flags(FLAGS, ExportSettings if FLAGS.task_type == "preprocessor"
                                   else ModelExportSettings)
    import modeling
    from text.tokenization import check_vocabulary_fits

    file_io.refuse_inputs_as_outputs(
        {"export_dir": settings.export_dir},
        {name: FLAGS[name].value for name in ("bert_config_file", "init_checkpoint",
                                               "vocab_file", "labels_file")
         if name in FLAGS})
    if settings.task_type == "preprocessor":
        from serving.hub import export_preprocessor
        export_preprocessor(settings.export_dir, settings.vocab_file, settings.do_lower_case,
                            settings.max_seq_length)
        return logging.info("Exported a preprocessor to %s.", settings.export_dir)
    config = modeling.BertConfig.from_json_file(settings.bert_config_file)
    check_vocabulary_fits(settings.vocab_file, config.vocab_size, settings.bert_config_file,
                          settings.vocab_smaller_than_model)
    if settings.task_type != "encoder" or FLAGS["max_seq_length"].present:
        config.check_max_seq_length(settings.max_seq_length)  # the encoder takes any length
    # --tflite asked for: required; by default: when the model converts; --notflite: none.
    tflite = dict(tflite=settings.tflite if FLAGS["tflite"].present else None,
                  tflite_quantize=settings.tflite_quantize)
    if settings.task_type == "encoder":
        from serving.hub import export_encoder
        with modeling.deferred_draws() as deferred:  # filled by the checkpoint, not drawn
            encoder = modeling.BertEncoder(config)
        modeling.load_checkpoint(encoder, settings.init_checkpoint, strict=True,
                                 deferred=deferred)
        export_encoder(encoder, settings.export_dir, **tflite)
        return logging.info("Exported %s as an encoder to %s.", settings.init_checkpoint,
                            settings.export_dir)
    export = registry.get(settings.task_type).export
    options = config_from_flags(FLAGS, export.options) if export.options else None
    with modeling.deferred_draws() as deferred:
        model = export.build_model(config, options)
    modeling.load_checkpoint(model, settings.init_checkpoint, strict=True, deferred=deferred)
    export.save(model, settings.export_dir, options, settings.vocab_file,
                settings.do_lower_case, settings.max_seq_length, **tflite)
    logging.info("Exported %s to %s.", settings.init_checkpoint, settings.export_dir)


if __name__ == "__main__":
    cli.run(main)
