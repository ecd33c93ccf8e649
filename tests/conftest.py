"""Shared fixtures: tiny configs, tiny vocabularies, TF1 checkpoints written with
tf.compat.v1 (independently of `modeling`), and a quiet TensorFlow."""

import atexit
import os
import shutil
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# The same kernels on every x86 CPU (TensorFlow's default turns oneDNN on for some Intel
# CPUs only), and no once-per-machine measurement (`common.onednn`) inside the tests'
# subprocesses: the entry points leave a user's setting alone.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
# The suite runs two workers on CI's two cores (`-n 2`): one thread each for TensorFlow's
# kernels, its op scheduler and OpenMP, in the test processes and every process they
# start. With TensorFlow's default (a thread per core in each process) the two workers'
# thread pools fought over the cores: the suite took 845 s against 715 s with one thread
# (2 AVX2 cores, 2026-11-29). The entry points' own default is untouched.
for _name in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
# scikit-learn (which sentence-transformers needs) sets these two OpenMP variables when it is
# imported, and Keras imports it with TensorFlow wherever it is installed. Set from the
# start, a test process keeps the environment the warm server (`tests.warm_processes`)
# started with; otherwise its first import of TensorFlow changes it, and every later
# command of that process starts cold.
os.environ.setdefault("KMP_DUPLICATE_LIB_OK", "True")
os.environ.setdefault("KMP_INIT_AT_FORK", "FALSE")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The scripts' temporary files (the traceback log of a failed run that has no output
# folder, one per failing command) go to a folder of this test process, removed at its
# end, not into the machine's /tmp.
os.environ["TMPDIR"] = tempfile.mkdtemp(prefix="bert-tests-")
atexit.register(shutil.rmtree, os.environ["TMPDIR"], True)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

TINY_CONFIG = {
    "vocab_size": 40, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 24, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 32,
    "type_vocab_size": 2, "initializer_range": 0.02,
}


@pytest.fixture
def tiny_config_dict():
    return dict(TINY_CONFIG)


@pytest.fixture
def tiny_inputs():
    """Two sequences, the second padded; pair segments in the first."""
    ids = np.array([[2, 7, 9, 11, 3, 12, 13, 3], [2, 21, 22, 3, 0, 0, 0, 0]], np.int32)
    mask = (ids > 0).astype(np.int32)
    seg = np.array([[0, 0, 0, 0, 0, 1, 1, 1], [0] * 8], np.int32)
    return {"input_ids": ids, "input_mask": mask, "segment_ids": seg}


def write_tf1_checkpoint(weights, prefix, with_optimizer_slots=True):
    """Writes `weights` (TF1 name -> array) as a TF1 checkpoint the way the original code
    does: tf.compat.v1 variables in a graph, a v1 Saver, plus the original optimizer's
    `adam_m`/`adam_v` slots and `global_step`."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        tf1 = tf.compat.v1
        variables = []
        for name, value in weights.items():
            variables.append(tf1.get_variable(name, initializer=tf.constant(value)))
            if with_optimizer_slots:
                variables.append(tf1.get_variable(name + "/adam_m",
                                                  initializer=tf.zeros_like(value)))
                variables.append(tf1.get_variable(name + "/adam_v",
                                                  initializer=tf.ones_like(value)))
        if with_optimizer_slots:
            variables.append(tf1.get_variable("global_step", initializer=tf.constant(
                1000, tf.int64)))
        saver = tf1.train.Saver(variables)
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            saver.save(sess, prefix, write_meta_graph=False, write_state=False)
    return prefix


@pytest.fixture
def write_vocab(tmp_path):
    def _write(tokens, name="vocab.txt"):
        path = tmp_path / name
        path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
        return str(path)
    return _write


# The end-to-end files: whole scripts in subprocesses, trainings, exports, fresh venvs.
# `pytest -m "not slow" tests` runs the rest (the unit tier) in a few minutes; CI and the
# README's command run everything.
SLOW_FILES = {
    "test_adaptation.py", "test_configs.py", "test_demo_and_vocabulary.py",
    "test_docs_examples.py", "test_entry_points.py", "test_extract_features.py", "test_faults.py",
    "test_hub_and_tflite.py", "test_long_documents.py", "test_multiple_choice.py",
    "test_ner.py", "test_output_dir_conflicts.py", "test_paper_ablations.py",
    "test_pretrain_from_text.py", "test_quiet.py", "test_run_classifier.py",
    "test_run_pretraining.py", "test_runner.py", "test_serving_load.py",
    "test_serving_tasks.py", "test_serving_without_tensorflow.py", "test_squad.py",
    "test_training_parity.py", "test_without_tensorflow_text.py",
}


# The test files that take longest, with their seconds in one run of the suite (2 cores of
# an AMD EPYC with AVX-512, one thread per worker, 2026-12-04; 717 s over all files):
# handed to the two workers first, so that no long file starts last while the other
# worker sits idle (`--dist loadfile` otherwise orders the files by their number of
# tests). Stale figures only cost time; every other file follows in its usual order.
SLOWEST_FILES = {
    "test_faults.py": 67, "test_run_pretraining.py": 61, "test_pretrain_from_text.py": 32,
    "test_paper_ablations.py": 32, "test_run_classifier.py": 30,
    "test_graph_tokenizer.py": 30, "test_adaptation.py": 30, "test_hub_and_tflite.py": 27,
    "test_serving_load.py": 26, "test_serving_tasks.py": 25,
    "test_demo_and_vocabulary.py": 24, "test_pretraining.py": 24,
    "test_create_pretraining_data.py": 23, "test_training_parity.py": 23,
    "test_squad.py": 22, "test_docs_examples.py": 20, "test_long_documents.py": 18,
    "test_serving_without_tensorflow.py": 16, "test_quiet.py": 15, "test_pooling.py": 14,
}


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: the order set below
        config.option.loadscopereorder = False
    here = os.path.dirname(os.path.abspath(__file__))
    missing = [name for name in SLOW_FILES | set(SLOWEST_FILES)
               if not os.path.exists(os.path.join(here, name))]
    if missing:  # a renamed file would silently join the unit tier
        raise pytest.UsageError(f"tests/conftest.py SLOW_FILES, SLOWEST_FILES: no such "
                                f"file {missing}")
    config.addinivalue_line("markers", "slow: an end-to-end test (deselect with "
                            "-m 'not slow' for the unit tier)")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: -SLOWEST_FILES.get(item.path.name, 0))  # stable: per file
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
