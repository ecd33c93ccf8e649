"""training.run_flags: the flags kept beside the checkpoints, and the warning on resuming
with other ones."""

import json

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

    from training.config import RuntimeConfig, TrainerConfig
    from cli.flags import config_from_flags
    fv = flags.FlagValues()
    flags.DEFINE_integer("train_batch_size", 8, "", flag_values=fv)
    flags.DEFINE_string("output_dir", None, "", flag_values=fv)
    flags.DEFINE_string("unrelated", "x", "", flag_values=fv)
    fv(["prog", "--train_batch_size=16", "--output_dir=out"])
    trainer = config_from_flags(TrainerConfig, fv)
    assert trainer.train_batch_size == 16 and trainer.learning_rate == 5e-5  # default
    record = run_flags.recorded_values(trainer, RuntimeConfig(seed=3))
    assert record["train_batch_size"] == 16 and record["seed"] == 3
    assert "output_dir" not in record and "unrelated" not in record
    assert set(record) <= set(run_flags.RECORDED_FLAGS)


def test_a_required_config_field_names_its_flag():
    import pytest
    from absl import app, flags

    from training.config import TrainerConfig
    from cli.flags import config_from_flags
    fv = flags.FlagValues()
    flags.DEFINE_string("output_dir", None, "", flag_values=fv)
    fv(["prog"])
    with pytest.raises(app.UsageError, match="--output_dir is required"):
        config_from_flags(TrainerConfig, fv)
