"""configs/: each flag file is read by its script (`--flagfile`) without an unknown flag,
and holds the paper's hyper-parameters."""

import concurrent.futures
import os

import pytest

from tests import warm_processes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = {  # flag file -> (script, values it must set)
    "glue_bert_base.cfg": ("run_classifier.py", {"learning_rate": "2e-5",
                                                 "train_batch_size": "32",
                                                 "num_train_epochs": "3.0"}),
    "squad_v1_bert_base.cfg": ("run_squad.py", {"learning_rate": "5e-5",
                                                "max_seq_length": "384", "doc_stride": "128"}),
    "conll2003_bert_base.cfg": ("run_ner.py", {"learning_rate": "5e-5",
                                               "train_batch_size": "32"}),
    "pretraining_phase1_128.cfg": ("run_pretraining.py", {
        "max_seq_length": "128", "max_predictions_per_seq": "20", "train_batch_size": "256",
        "learning_rate": "1e-4", "num_train_steps": "900000", "num_warmup_steps": "10000"}),
    "pretraining_cpu_1h.cfg": ("run_pretraining.py", {
        "objective": "mlm", "max_seq_length": "128", "max_predictions_per_seq": "52",
        "train_batch_size": "32", "learning_rate": "7e-4", "optimizer": "adamw_original"}),
    "pretraining_phase2_512.cfg": ("run_pretraining.py", {
        "max_seq_length": "512", "max_predictions_per_seq": "80",
        "num_train_steps": "100000"}),
}


def _parse(script, flagfile):
    """The script reads the flag file: with no paths given, it stops at the first required
    flag (after absl accepted every flag in the file)."""
    return warm_processes.run([os.path.join(ROOT, script),
                               f"--flagfile={os.path.join(ROOT, 'configs', flagfile)}"],
                              timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))


@pytest.fixture(scope="module")
def parsed():
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        futures = {name: pool.submit(_parse, script, name)
                   for name, (script, _) in CONFIGS.items()}
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_flag_file_is_read_by_its_script(parsed, name):
    result = parsed[name]
    assert "unknown flag" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 1 and "required (see --helpfull)" in result.stderr, \
        result.stderr[-2000:]
    lines = open(os.path.join(ROOT, "configs", name)).read().splitlines()
    for flag, value in CONFIGS[name][1].items():
        assert f"--{flag}={value}" in lines, (flag, value)
    assert set(os.listdir(os.path.join(ROOT, "configs"))) == set(CONFIGS)


def test_the_cpu_flag_file_is_pretrain_from_texts_recipe():
    """configs/pretraining_cpu_1h.cfg holds the values `pretrain_from_text.py` uses."""
    from tasks.pretraining.from_text import RECIPE
    from training.config import TrainerConfig
    flags = dict(line.lstrip("-").split("=", 1) for line in open(
        os.path.join(ROOT, "configs", "pretraining_cpu_1h.cfg"), encoding="utf-8")
        if line.startswith("--") and "=" in line)
    for key in ("objective", "max_seq_length", "max_predictions_per_seq", "train_batch_size",
                "optimizer"):
        assert flags[key].strip() == str(RECIPE[key]), key
    assert float(flags["learning_rate"]) == RECIPE["learning_rate"]
    assert float(flags["pretraining_dropout"]) == RECIPE["pretraining_dropout"]
    default_beta2 = TrainerConfig.__dataclass_fields__["adam_beta2"].default
    assert float(flags.get("adam_beta2", default_beta2)) == RECIPE["adam_beta2"]
    steps, warmup = int(flags["num_train_steps"]), int(flags["num_warmup_steps"])
    assert warmup == int(RECIPE["warmup_share"] * steps)
    # What the flags cannot hold, its comment says: the records' masking and the
    # bert_config.json fields that are not the original's defaults.
    text = open(os.path.join(ROOT, "configs", "pretraining_cpu_1h.cfg"),
                encoding="utf-8").read()
    assert f"--masked_lm_prob={RECIPE['masked_lm_prob']:g}" in text
    assert f"initializer_range {RECIPE['model']['initializer_range']:g}" in text
    assert f'"position_embedding_init": "{RECIPE["model"]["position_embedding_init"]}"' in text
    assert f'"pooling": "{RECIPE["model"]["pooling"]}"' in text
