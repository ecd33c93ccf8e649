"""Every code example of README.md and docs/*.md runs: a moved module or a renamed flag
breaks this test, not a newcomer.

  * Python blocks are executed, each in a folder holding tiny stand-ins for the names
    the text uses (`mrpc_model`: a classification export; `uncased_L-12_H-768_A-12`: a
    Google-format release folder; `glue_data/MRPC`, `sst2_hf`, `bert_encoder`,
    `bert_preprocess`, `sst2_model`); a block that needs something else is skipped with
    the reason.
  * Shell commands that run this project's scripts are parsed by the script's own flags
    (absl): every flag named exists and takes the value given. `[...]` parts are options
    the text describes, left out.
"""

import glob
import json
import os
import re
import shlex

import keras
import numpy as np
import pytest

from tests import warm_processes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCUMENTS = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs",
                                                                                "*.md")))
# Names the examples use that the workspace provides.
PROVIDED = ("mrpc_model", "uncased_L-12_H-768_A-12", "glue_data/MRPC", "sst2_hf",
            "bert_encoder", "bert_preprocess", "sst2_model")
WORDS = ("he said so it yes no who was jim henson a puppeteer one text another gripping "
         "film the cat sat").split()


def _blocks(language):
    for path in DOCUMENTS:
        text = open(path, encoding="utf-8").read()
        for match in re.finditer(rf"```{language}\n(.*?)```", text, re.S):
            line = text[:match.start()].count("\n") + 1
            yield f"{os.path.relpath(path, ROOT)}:{line}", match.group(1)


PYTHON_BLOCKS = dict(_blocks("python"))
SHELL_BLOCKS = dict(_blocks("bash"))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """Tiny stand-ins for the examples' folders (made once for the module)."""
    import modeling
    from serving.hub import export_encoder, export_preprocessor
    from tasks.classification.export import export_classification
    from tests import numpy_reference as ref
    from tests.conftest import TINY_CONFIG, write_tf1_checkpoint
    folder = tmp_path_factory.mktemp("docs_examples")
    vocab = ["[PAD]"] + [f"[unused{i}]" for i in range(5)] + \
        ["[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "?", "!"] + list(WORDS)
    config = dict(TINY_CONFIG, vocab_size=len(vocab), max_position_embeddings=128)
    release = folder / "uncased_L-12_H-768_A-12"
    release.mkdir()
    (release / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    (release / "bert_config.json").write_text(json.dumps(config))
    write_tf1_checkpoint(ref.random_google_weights(config, np.random.default_rng(0)),
                         str(release / "bert_model.ckpt"))
    bert_config = modeling.BertConfig.from_dict(config)
    classifier = modeling.BertClassifier(bert_config, 2)
    modeling.load_checkpoint(classifier.encoder, str(release / "bert_model.ckpt"))
    vocab_file = str(release / "vocab.txt")
    export_classification(classifier, str(folder / "mrpc_model"), vocab_file, True, 32,
                          ["0", "1"], pair=True)
    export_classification(classifier, str(folder / "sst2_model"), vocab_file, True, 32,
                          ["0", "1"], pair=False)
    modeling.save_huggingface(classifier, str(folder / "sst2_hf"), vocab_file,
                              labels=["0", "1"])
    export_encoder(classifier.encoder, str(folder / "bert_encoder"))
    export_preprocessor(str(folder / "bert_preprocess"), vocab_file, True, 32)
    mrpc = folder / "glue_data" / "MRPC"
    mrpc.mkdir(parents=True)
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    rows = [f"{i % 2}\t{i}\t{i + 100}\the said so .\t{'he said so' if i % 2 else 'no'} .\n"
            for i in range(16)]
    for name in ("train.tsv", "dev.tsv"):
        (mrpc / name).write_text(header + "".join(rows), encoding="utf-8")
    return folder


@pytest.mark.parametrize("where", sorted(PYTHON_BLOCKS))
def test_python_example_runs(where, workspace, monkeypatch):
    code = PYTHON_BLOCKS[where]
    monkeypatch.chdir(workspace)
    # Names the text describes rather than defines ("int32 [batch, seq]").
    ids = np.array([[7, 20, 21, 8, 0]], np.int32)
    namespace = {"__name__": "__docs_example__", "ids": ids,
                 "mask": (ids > 0).astype(np.int32), "segments": np.zeros_like(ids)}
    exec(compile(code, where, "exec"), namespace)  # noqa: S102
    # What an example sets for itself (a run's --dtype) does not outlive it.
    assert keras.mixed_precision.dtype_policy().name == "float32"


def _commands():
    """(where, script, argv) of every command of the project's own scripts."""
    for where, block in SHELL_BLOCKS.items():
        text = re.sub(r"\\\n", " ", block)
        for line in text.splitlines():
            for part in line.split("&&"):
                part = re.sub(r"\[[^\]]*\]", "", part.split("  #")[0]).strip()
                words = shlex.split(part, comments=True) if part else []
                if not words or not re.match(r"^(\S*/)?python3?$", words[0]):
                    continue
                if words[1].endswith(".py") and not words[1].startswith("bench/"):
                    yield where, words[1], words[2:]


COMMANDS = list(_commands())
CHECK = """
import json, runpy, sys
from absl import flags
target, commands = sys.argv[1], json.loads(sys.argv[2])
runpy.run_path(target, run_name="docs_check")
failed = []
for where, argv in commands:
    flags.FLAGS.unparse_flags()
    try:
        flags.FLAGS(["prog"] + argv)
    except Exception as err:
        failed.append(f"{where}: {target} {' '.join(argv)}: {err}")
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


@pytest.mark.parametrize("target", sorted({target for _, target, _ in COMMANDS}))
def test_shell_commands_name_real_flags(target):
    """Each command's flags parse with the script's own definitions (one process per
    script, its commands in turn)."""
    commands = [(where, argv) for where, name, argv in COMMANDS if name == target]
    result = warm_processes.run(["-c", CHECK, target, json.dumps(commands)], cwd=ROOT,
                                timeout=300,
                                env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


def test_every_shell_command_was_checked_or_is_set_up():
    """No command of the docs escapes the check above but set-up and bench lines."""
    assert len(COMMANDS) >= 25
    scripts = {target for _, target, _ in COMMANDS}
    assert {"run_pretraining.py", "run_classifier.py", "create_pretraining_data.py",
            "export_saved_model.py"} <= scripts
