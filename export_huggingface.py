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

A checkpoint of a fine-tuning run needs no --task_type, --labels or --vocab_file: the run
recorded them (`output_dir/export_settings.json`); a flag given wins (--task_type=encoder
writes its encoder alone).
"""

import dataclasses
from typing import Optional

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
from common.shared_settings import VOCAB_FILE_HELP, ModelVocabulary, WeightedModelFiles
from tasks import registry
from training import export_record

TASKS = registry.load_all()


@dataclasses.dataclass(frozen=True, kw_only=True)
class HuggingFaceExportSettings(WeightedModelFiles, ModelVocabulary):
    """This script's settings (the vocabulary, when given, is copied beside the model);
    each task's own settings that build its model (labels...) are added below."""
    output_dir: str = setting(help="The Hugging Face model folder to write.")
    vocab_file: Optional[str] = setting(None, help=VOCAB_FILE_HELP)  # copied beside it
    task_type: str = setting(
        "encoder", choices=["encoder"] + registry.names(where=lambda entry: entry.export),
        help="Which model the checkpoint holds: encoder (AutoModel), or a task's model "
        f"({', '.join(registry.names(False, lambda entry: entry.export))}; older task "
        "names are accepted too).")


define_settings(HuggingFaceExportSettings)
for _entry in TASKS.values():  # each task's settings that build its model (labels...)
    if _entry.export and _entry.export.options:
        define_settings(_entry.export.options)
FLAGS = flags.FLAGS


def main(_):
    if FLAGS.init_checkpoint:  # the settings its training run recorded, for flags not given
        source, record = export_record.read_for_checkpoint(FLAGS.init_checkpoint)
        fill_from_record(FLAGS, record, source)
    configs_from_flags(FLAGS, HuggingFaceExportSettings)  # required settings given, values checked
    import modeling
    from modeling.huggingface import architecture, save_huggingface
    from text.tokenization import check_vocabulary_fits

    file_io.refuse_inputs_as_outputs(
        {"output_dir": FLAGS.output_dir},
        {name: FLAGS[name].value for name in ("bert_config_file", "init_checkpoint",
                                               "vocab_file", "labels_file")
         if name in FLAGS})
    config = modeling.BertConfig.from_json_file(FLAGS.bert_config_file)
    if FLAGS.vocab_file:
        check_vocabulary_fits(FLAGS.vocab_file, config.vocab_size, FLAGS.bert_config_file,
                              FLAGS.vocab_smaller_than_model)
    labels, options = None, None
    with modeling.deferred_draws() as deferred:  # what the checkpoint fills is not drawn
        if FLAGS.task_type == "encoder":
            model = modeling.BertEncoder(config)
        else:
            export = registry.get(FLAGS.task_type).export
            options = config_from_flags(FLAGS, export.options) if export.options else None
            model = export.build_model(config, options)
            labels = registry.labels_of(options) if options else None
    modeling.load_checkpoint(model, FLAGS.init_checkpoint, deferred=deferred,
                             strict=True if FLAGS.task_type != "encoder" else "encoder")
    save_huggingface(model, FLAGS.output_dir, FLAGS.vocab_file, FLAGS.do_lower_case,
                     labels, multi_label=bool(getattr(options, "multi_label", False)))
    logging.info("Wrote a Hugging Face %s to %s.", architecture(model), FLAGS.output_dir)


if __name__ == "__main__":
    cli.run(main, log_beside_output=True)
