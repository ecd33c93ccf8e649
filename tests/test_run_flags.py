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


def test_only_flags_a_script_defines_are_recorded():
    from absl import flags
    fv = flags.FlagValues()
    flags.DEFINE_integer("train_batch_size", 8, "", flag_values=fv)
    flags.DEFINE_string("unrelated", "x", "", flag_values=fv)
    fv(["prog", "--train_batch_size=16"])
    assert run_flags.flag_values(fv) == {"train_batch_size": 16}
