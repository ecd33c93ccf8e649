"""training.run_flags: the flags kept beside the checkpoints, and the warning on resuming
with other ones."""

import dataclasses
import json
from unittest import mock

import pytest

from training import run_flags


def test_fresh_start_records_and_resume_reports_changes(tmp_path):
    values = {"train_batch_size": 32, "learning_rate": 1e-4, "input_file": "a/*.tfrecord"}
    assert run_flags.check_and_record(str(tmp_path), values, resumed_step=0) == {}
    assert json.loads((tmp_path / run_flags.FILE_NAME).read_text()) == values
    # Same flags: nothing to say.
    assert run_flags.check_and_record(str(tmp_path), values, resumed_step=100) == {}
    changed = dict(values, train_batch_size=64, input_file="b/*.tfrecord", seed=3)
    assert run_flags.check_and_record(str(tmp_path), changed, resumed_step=100) == {
        "train_batch_size": (32, 64), "input_file": ("a/*.tfrecord", "b/*.tfrecord")}
    # The record now holds the latest run's flags; no temporary file is left.
    assert json.loads((tmp_path / run_flags.FILE_NAME).read_text()) == changed
    assert [p.name for p in tmp_path.iterdir()] == [run_flags.FILE_NAME]


def test_unreadable_record_does_not_stop_training(tmp_path):
    (tmp_path / run_flags.FILE_NAME).write_text("{not json")
    assert run_flags.check_and_record(str(tmp_path), {"seed": 1}, resumed_step=5) == {}
    assert json.loads((tmp_path / run_flags.FILE_NAME).read_text()) == {"seed": 1}


def test_only_recorded_flags_of_the_run_configs_are_recorded():
    from absl import flags

    from cli.flags import config_from_flags
    from training.config import RuntimeConfig, TrainerConfig
    fv = flags.FlagValues()
    flags.DEFINE_integer("train_batch_size", 8, "", flag_values=fv)
    flags.DEFINE_string("output_dir", None, "", flag_values=fv)
    flags.DEFINE_string("unrelated", "x", "", flag_values=fv)
    fv(["prog", "--train_batch_size=16", "--output_dir=out"])
    trainer = config_from_flags(fv, TrainerConfig)
    assert trainer.train_batch_size == 16 and trainer.learning_rate == 5e-5  # default
    record = run_flags.recorded_values(trainer, RuntimeConfig(seed=3))
    assert record["train_batch_size"] == 16 and record["seed"] == 3
    assert "output_dir" not in record and "unrelated" not in record
    assert set(record) == {"train_batch_size", "gradient_accumulation_steps", "optimizer",
                           "learning_rate", "weight_decay_rate", "clip_norm", "adam_beta2",
                           "lr_stable_share", "dtype", "seed"}


# The settings that decide the input, the model or the optimisation: the list this
# project kept by hand before each setting declared it (a resume with others is told).
_RECORDED_BEFORE = {
    "input_file", "data_dir", "task_name", "train_file", "bert_config_file", "vocab_file",
    "do_lower_case", "init_checkpoint", "max_seq_length", "max_predictions_per_seq",
    "doc_stride", "long_document", "bucket_by_length", "max_query_length",
    "version_2_with_negative", "train_on_first_answer", "train_batch_size",
    "gradient_accumulation_steps", "optimizer", "learning_rate", "num_train_steps",
    "num_train_epochs", "num_warmup_steps", "warmup_proportion", "weight_decay_rate",
    "clip_norm", "dtype", "seed",
    # ... and those added since: multiple choice's file layout, the pre-training objective,
    # the output head (the paper's + BiLSTM and feature-based ablations), Adam's beta2, the
    # pre-training's own dropout, the learning rate's stable phase, multi-label data, the
    # class weights of the loss, the columns of the user's files, the sentence embeddings'
    # pooling, score scale and pair filter.
    "data_format", "objective", "head", "bilstm_layers", "bilstm_units", "feature_based",
    "adam_beta2", "pretraining_dropout", "lr_stable_share", "multi_label", "heads_only",
    "class_weights", "pooling", "text_a_column", "text_b_column", "score_column",
    "min_score", "max_score", "label_column", "positive_label", "similarity_scale"}


def test_each_task_records_the_settings_that_decide_its_run():
    import dataclasses

    from common import settings
    from tasks import registry
    from training.config import RuntimeConfig, TrainerConfig
    for entry in registry.load_all().values():
        if entry.config_class is None:  # a model another task trains (the masked LM)
            continue
        fields = {f.name for c in (entry.config_class, TrainerConfig, RuntimeConfig)
                  for f in dataclasses.fields(c)}
        assert set(settings.recorded_names(entry.config_class, TrainerConfig,
                                           RuntimeConfig)) == fields & _RECORDED_BEFORE


def test_flags_are_generated_from_the_settings_with_the_task_defaults():
    from absl import flags

    from cli.flags import define_settings
    from tasks.squad import SquadConfig
    from tasks.tagging import TaggingConfig
    for config_class, expected in ((SquadConfig, {"max_seq_length": 384,
                                                  "do_lower_case": True}),
                                   (TaggingConfig, {"max_seq_length": 128,
                                                    "do_lower_case": False,
                                                    "predict_batch_size": 32})):
        fv = flags.FlagValues()
        define_settings(config_class, flag_values=fv)
        fv(["prog"])
        for name, value in expected.items():
            assert fv[name].value == value, (config_class.__name__, name)
        assert all(fv[name].help for name in fv)
    fv = flags.FlagValues()
    define_settings(SquadConfig, flag_values=fv)
    fv(["prog", "--num_train_epochs=2,3", "--doc_stride=64"])  # a grid setting takes several
    assert fv["num_train_epochs"].value == (2.0, 3.0) and fv["doc_stride"].value == 64


def test_a_required_config_field_names_its_flag():
    import pytest
    from absl import app, flags

    from cli.flags import config_from_flags
    from training.config import TrainerConfig
    fv = flags.FlagValues()
    flags.DEFINE_string("output_dir", None, "", flag_values=fv)
    fv(["prog"])
    with pytest.raises(app.UsageError, match="--output_dir is required"):
        config_from_flags(fv, TrainerConfig)


def test_a_flag_given_without_its_value_is_named_not_the_flag_it_swallowed():
    """absl takes the argument after a string flag given bare as its value: the error
    names the bare flag, not the next one as missing."""
    from absl import app, flags

    from cli.flags import require_flags

    def parsed(*argv):
        fv = flags.FlagValues()
        flags.DEFINE_string("split_sentences", None, "", flag_values=fv)
        flags.DEFINE_string("output_dir", None, "", flag_values=fv)
        flags.DEFINE_bool("do_train", False, "", flag_values=fv)
        fv(["prog", *argv])
        return fv

    with pytest.raises(app.UsageError, match=r"^--split_sentences was given no value: it "
                       r"took the next argument, --output_dir=out, as its value\. Give it "
                       r"one, as --split_sentences=<value>\.$"):
        require_flags(parsed("--split_sentences", "--output_dir=out"), ["output_dir"])
    with pytest.raises(app.UsageError, match="--split_sentences was given no value"):
        require_flags(parsed("--split_sentences", "--nodo_train", "--output_dir=o"),
                      ["output_dir"])
    # A value that only starts with a dash is a value.
    require_flags(parsed("--split_sentences=-x", "--output_dir=o"), ["output_dir"])
    with pytest.raises(app.UsageError, match="^--output_dir is required"):
        require_flags(parsed("--split_sentences=en"), ["output_dir"])


def test_the_export_record_fills_the_flags_not_given(tmp_path):
    """export_settings.json of a run supplies the export flags left out; a flag given
    wins, and the difference is said."""
    from absl import flags

    from cli.flags import config_from_flags, define_settings, fill_from_record
    from tasks.classification.config import ClassificationExportOptions
    from training import export_record
    options = ClassificationExportOptions(labels=("neg", "pos"), pair=True,
                                          long_document="windows", doc_stride=32)
    run = tmp_path / "run"
    (run / "best").mkdir(parents=True)
    export_record.write(str(run), export_record.values_of(
        "classification", options, "vocab.txt", False, 64))
    # Found beside a training checkpoint and one folder up from best/'s.
    for checkpoint in (run / "ckpt-3", run / "best" / "model.ckpt"):
        path, values = export_record.read_for_checkpoint(str(checkpoint))
        assert path == str(run / export_record.FILE_NAME)
    assert export_record.read_for_checkpoint(str(tmp_path / "ckpt-1")) == (None, {})
    fv = flags.FlagValues()
    define_settings(ClassificationExportOptions, flag_values=fv)
    flags.DEFINE_integer("max_seq_length", 128, "", flag_values=fv)
    fv(["prog", "--doc_stride=16"])
    logged = []
    with mock.patch("absl.logging.warning", lambda *a: logged.append(a[0] % a[1:])):
        filled = fill_from_record(fv, values, path)
    assert "doc_stride" not in filled and "max_seq_length" in filled
    rebuilt = config_from_flags(fv, ClassificationExportOptions)
    assert rebuilt == dataclasses.replace(options, doc_stride=16)
    assert fv.max_seq_length == 64
    assert logged == [f"--doc_stride=16 given; the run recorded 32 in {path}: using the "
                      f"given value."]
    # A record that cannot be read is named, with the fix.
    (run / export_record.FILE_NAME).write_text("{not json")
    with pytest.raises(ValueError, match="export_settings.json: unreadable .* delete it"):
        export_record.read_for_checkpoint(str(run / "ckpt-3"))
