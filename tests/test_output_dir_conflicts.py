"""One run per output folder, and no silent mix of runs: a second run on a locked folder
is refused naming the first; an --init_checkpoint with another run's checkpoints in the
folder is refused (or the old run moved aside with --overwrite_output_dir); resuming with
a model of another size is one line."""

import json
import os
import subprocess
import sys

from tests.test_faults import _config, _run, classifier, world  # noqa: F401 (a fixture)


def _one_error(result):
    """The single `error: ...` line of a refused run (no traceback)."""
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr[-3000:]
    return errors[0]


def test_another_run_in_the_output_dir_is_refused_or_moved_aside(world, tmp_path):  # noqa: F811
    out = tmp_path / "out"
    init = world / "ckpt" / "model.ckpt"
    first = classifier(world, out, init_checkpoint=init, learning_rate=1e-3)
    assert _run(first).returncode == 0
    # A grid point rerun in the same folder: it would resume the finished run and train
    # nothing, with its --init_checkpoint ignored.
    error = _one_error(_run(classifier(world, out, init_checkpoint=init, learning_rate=5e-4)))
    assert "holds the checkpoints of another run (up to step 3; --learning_rate: 0.001 " \
        "before, 0.0005 now)" in error and "--overwrite_output_dir" in error
    assert _run(first).returncode == 0  # the same command: that run, resumed (finished)
    moved = _run(classifier(world, out, init_checkpoint=init, learning_rate=5e-4,
                            overwrite_output_dir=True))
    assert moved.returncode == 0, moved.stderr[-2000:]
    aside = [p for p in os.listdir(tmp_path) if p.startswith("out.replaced-")]
    assert len(aside) == 1 and (tmp_path / aside[0] / "ckpt-3.index").exists()
    assert json.loads((tmp_path / aside[0] / "training_flags.json").read_text())[
        "learning_rate"] == 1e-3
    assert json.loads((out / "training_flags.json").read_text())["learning_rate"] == 5e-4
    assert not (tmp_path / aside[0] / ".run.lock").exists() and not (out / ".run.lock").exists()
    # Resuming with a model of another size: one line naming the checkpoint.
    wider = _config(world, "wider_resume.json", hidden_size=64, intermediate_size=64)
    error = _one_error(_run(classifier(world, out, bert_config_file=wider)))
    assert "ckpt-3" in error and "does not match the model" in error


def test_a_second_run_on_a_locked_output_dir_is_refused(world, tmp_path):  # noqa: F811
    import socket
    out = tmp_path / "out"
    out.mkdir()
    # A lock held by a live process of this host (this test's own): refused, untouched.
    (out / ".run.lock").write_text(f"{socket.gethostname()} {os.getpid()} 2026-11-24 10:00:00\n")
    error = _one_error(_run(classifier(world, out)))
    assert f"is in use by another run (process {os.getpid()} on this host, started " \
        "2026-11-24 10:00:00)" in error
    assert sorted(os.listdir(out)) == [".run.lock", "log.txt"]  # its log, nothing else
    assert str(os.getpid()) in (out / ".run.lock").read_text()
    # A stale lock (a process that no longer runs) is taken over with a warning.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    (out / ".run.lock").write_text(f"{socket.gethostname()} {dead} 2026-11-24 09:00:00\n")
    result = _run(classifier(world, out))
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"taking over the lock of process {dead}" in result.stderr
    assert (out / "ckpt-3.index").exists() and not (out / ".run.lock").exists()
