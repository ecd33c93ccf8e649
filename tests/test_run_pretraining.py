"""run_pretraining.py as a user runs it (its own processes): train + eval + export, bad
input, a SIGTERM and then a kill, rerun to the same weights, mirrored over two logical CPUs
against one device, and multi_worker_mirrored with two local workers on loopback (stopped
by a SIGTERM to one of them, and resumed)."""

import json
import os
import signal
import socket
import sys
import time

import numpy as np
import pytest
import tensorflow as tf
from pretraining_data import write_config, write_records

from tests import warm_processes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pretrain")
    files = [write_records(folder / f"shard-{i}.tfrecord", 200, seed=i) for i in range(2)]
    return {"folder": folder, "files": files,
            "config": write_config(folder / "bert_config.json")}


def _command(data, output_dir, **overrides):
    flags = {"input_file": ",".join(data["files"]), "output_dir": str(output_dir),
             "bert_config_file": data["config"], "max_seq_length": 24,
             "max_predictions_per_seq": 4, "train_batch_size": 16, "num_train_steps": 40,
             "num_warmup_steps": 4, "learning_rate": 1e-3, "save_checkpoints_steps": 20,
             "log_steps": 10, "do_train": True}
    flags.update(overrides)
    argv = [sys.executable, os.path.join(ROOT, "run_pretraining.py")]
    for name, value in flags.items():
        if value is True:
            argv.append(f"--{name}")
        elif value is not False and value is not None:
            argv.append(f"--{name}={value}")
    return argv


def _run(argv, env=ENV, check=True):
    assert argv[0] == sys.executable
    result = warm_processes.run(argv[1:], env=env, timeout=600)
    if check and result.returncode != 0:
        raise AssertionError(result.stderr[-4000:])
    return result


def _checkpoint_arrays(prefix):
    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name.startswith("model/")}


def test_train_eval_export(data, tmp_path):
    out = tmp_path / "run"
    result = _run(_command(data, out, do_eval=True, max_eval_steps=5))
    log = result.stderr
    assert "step 40/40" in log and "sequences_per_second" in log and "tokens_per_second" in log
    results = dict(line.split(" = ") for line in
                   (out / "eval_results.txt").read_text().strip().splitlines())
    assert set(results) == {"eval_steps", "global_step", "loss", "masked_lm_accuracy",
                            "masked_lm_loss", "masked_lm_perplexity", "masked_lm_predictions",
                            "next_sentence_accuracy", "next_sentence_loss",
                            "next_sentence_majority_accuracy"}
    assert results["global_step"] == "40" and results["eval_steps"] == "5"
    # The export is a Google-format checkpoint + config that the fine-tuning path loads.
    from modeling import BertConfig, BertPretrainer, load_checkpoint
    config = BertConfig.from_json_file(str(out / "export" / "bert_config.json"))
    report = load_checkpoint(BertPretrainer(config), str(out / "export" / "bert_model.ckpt"),
                             strict=True)
    assert report.format == "google_tf1"
    assert not [n for n in os.listdir(out / "export") if ".tmp" in n]
    # Rerunning the finished command trains nothing more, and says nothing of flags.
    again = _run(_command(data, out))
    assert "training already finished" in again.stderr
    assert "flags that differ" not in again.stderr
    recorded = json.loads((out / "training_flags.json").read_text())
    assert recorded["train_batch_size"] == 16 and recorded["learning_rate"] == 1e-3
    # Evaluation alone restores the last training checkpoint (heads included): same figures.
    first = (out / "eval_results.txt").read_text()
    (out / "eval_results.txt").unlink()
    _run(_command(data, out, do_train=False, do_eval=True, max_eval_steps=5))
    assert (out / "eval_results.txt").read_text() == first
    # Resuming with other flags continues, but names every change.
    longer = _run(_command(data, out, num_train_steps=44, learning_rate=5e-4))
    assert "step 44/44" in longer.stderr
    warning = next(line for line in longer.stderr.splitlines() if "flags that differ" in line)
    assert "--learning_rate: 0.001 before, 0.0005 now" in warning
    assert "--num_train_steps: 40 before, 44 now" in warning and "at step 40" in warning


def test_bad_input_is_named(data, tmp_path):
    wrong = _run(_command(data, tmp_path, max_predictions_per_seq=20), check=False)
    assert wrong.returncode != 0
    assert "masked_lm_ids" in wrong.stderr and "--max_predictions_per_seq=4" in wrong.stderr
    missing = _run(_command(data, tmp_path, input_file=str(tmp_path / "nope*.tfrecord")),
                   check=False)
    assert missing.returncode != 0 and "no file matches" in missing.stderr
    too_long = _run(_command(data, tmp_path, max_seq_length=100), check=False)
    assert too_long.returncode != 0 and "max_position_embeddings" in too_long.stderr
    odd = _run(_command(data, tmp_path, train_batch_size=10, gradient_accumulation_steps=4),
               check=False)
    assert odd.returncode != 0 and "multiple of 4" in odd.stderr


def _signalled(argv, folder, signum, after="ckpt-20.index"):
    """Runs `argv`, sends `signum` once `folder/after` exists; returns (status, stderr)."""
    process = warm_processes.start(argv[1:], env=ENV)
    try:
        deadline = time.time() + 300
        while not (folder / after).exists():
            assert process.poll() is None and time.time() < deadline, "run ended early"
            time.sleep(0.01)
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, stderr


def test_preempted_then_killed_run_resumes_to_the_same_final_weights(data, tmp_path):
    # With dropout, so that the random generators' state must be restored too.
    config = write_config(tmp_path / "dropout_config.json", hidden_dropout_prob=0.1,
                          attention_probs_dropout_prob=0.1)
    last = 150  # the first signal comes at step 20
    flags = dict(num_train_steps=last, save_checkpoints_steps=10, steps_per_loop=50,
                 log_steps=0, bert_config_file=config)
    straight = tmp_path / "straight"
    _run(_command(data, straight, **flags))
    a = _checkpoint_arrays(str(straight / f"ckpt-{last}"))
    assert len(a) > 30
    # Preempted (SIGTERM, as a scheduler does): it saves the step it is at, says so in one
    # line and exits with 128 + 15; the rerun goes on from that step.
    out = tmp_path / "interrupted"
    command = _command(data, out, **flags)
    status, stderr = _signalled(command, out, signal.SIGTERM)
    assert status == 143, stderr[-3000:]
    step = int(tf.train.latest_checkpoint(str(out)).rsplit("-", 1)[1])
    assert 20 <= step < last - 20 and "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] == (
        f"Stopped by SIGTERM at step {step}; saved {out}/ckpt-{step}. Rerun the same "
        f"command to resume from there.")
    # The rerun, killed (-9, as a power cut) after a checkpoint of its own: the next rerun
    # resumes from its last checkpoint. Both interruptions leave the final weights unchanged.
    saved = (step // 10 + 2) * 10  # the second periodic checkpoint after `step`
    status, stderr = _signalled(command, out, signal.SIGKILL, after=f"ckpt-{saved}.index")
    assert status == -signal.SIGKILL and f"Resuming from {out}/ckpt-{step}" in stderr
    # The kill may land between ckpt-{saved}'s files and the `checkpoint` file naming
    # it: the newest complete one is then the one before, still one of its own.
    stopped_at = int(tf.train.latest_checkpoint(str(out)).rsplit("-", 1)[1])
    assert step < saved - 10 <= stopped_at < last, (step, stopped_at)
    _run(command)
    assert tf.train.latest_checkpoint(str(out)).endswith(f"ckpt-{last}")
    b = _checkpoint_arrays(str(out / f"ckpt-{last}"))
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_mirrored_on_two_cpus_matches_one_device(data, tmp_path):
    out = tmp_path / "step.npz"
    _run([sys.executable, os.path.join(ROOT, "tests", "mirrored_step.py"), data["files"][0],
          str(out)])
    d = np.load(out)
    np.testing.assert_allclose(d["loss"][1], d["loss"][0], rtol=1e-6)
    np.testing.assert_allclose(d["norm"][1], d["norm"][0], rtol=1e-5)
    assert d["norm"][0] > 1.0  # so the global-norm clipping was exercised too
    count = len([k for k in d.files if k.startswith("one_")])
    for i in range(count):
        np.testing.assert_allclose(d[f"two_{i}"], d[f"one_{i}"], rtol=1e-4, atol=1e-7)


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_multi_worker_mirrored_on_loopback_stops_together_on_sigterm(data, tmp_path):
    """Two workers on loopback. SIGTERM reaches one worker only (as when a scheduler
    preempts one machine): both stop after the same step, the chief saves it, both exit
    with 143; the same command on both resumes from that step to the end."""
    out = tmp_path / "mw"
    workers = [f"localhost:{port}" for port in _free_ports(2)]
    # --alsologtostderr: TensorFlow's INFO lines (the collective's group size) on the
    # console too, not only in log.txt.
    argv = _command(data, out, num_train_steps=200, save_checkpoints_steps=20,
                    steps_per_loop=200, log_steps=0, do_eval=True, max_eval_steps=3,
                    distribution_strategy="multi_worker_mirrored", alsologtostderr=True)

    def start():
        processes = []
        for index in range(2):
            config = {"cluster": {"worker": workers},
                      "task": {"type": "worker", "index": index}}
            processes.append(warm_processes.start(
                argv[1:], env=dict(ENV, TF_CONFIG=json.dumps(config))))
        return processes

    processes = start()
    try:
        deadline = time.time() + 300
        while not (out / "ckpt-20.index").exists():
            assert all(p.poll() is None for p in processes) and time.time() < deadline
            time.sleep(0.01)
        processes[1].send_signal(signal.SIGTERM)  # the non-chief worker only
        logs = [p.communicate(timeout=300)[1] for p in processes]
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in processes] == [143, 143], logs[0][-3000:] + logs[1][-3000:]
    assert "group_size = 2" in logs[0]
    step = int(tf.train.latest_checkpoint(str(out)).rsplit("-", 1)[1])
    assert 20 <= step < 200 and f"Stopped by SIGTERM at step {step}" in logs[0]
    assert f"Stopped by SIGTERM at step {step}" in logs[1]  # the same step on both
    processes = start()
    logs = [p.communicate(timeout=600)[1] for p in processes]
    for process, log in zip(processes, logs):
        assert process.returncode == 0, log[-4000:]
    assert f"Resuming from {out}/ckpt-{step}" in logs[0]
    assert tf.train.latest_checkpoint(str(out)).endswith("ckpt-200")
    assert (out / "export" / "bert_model.ckpt.index").exists()
    assert (out / "eval_results.txt").exists()
