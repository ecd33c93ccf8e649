"""A serving-only install: a fresh virtual environment with `requirements-serving.txt`
alone (NumPy, tokenizers, LiteRT; no TensorFlow, Keras or absl) serves a classifier
export from this clone with `serving.load`, and answers as the export's raw-text
signature; `import serving` and the load print nothing and import no TensorFlow. The
application runs in a folder of its own, outside the clone, which it finds through a
`.pth` file in the environment, as docs/serving.md says."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import modeling
from tests.conftest import TINY_CONFIG
from tests.serving_checks import assert_same, text_signature

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXTS = ["A gripping, beautifully shot film.", "The plot was dull and the acting worse!",
         "naïve café owners in Zürich", "", "東京 and 서울", "it 's a charming journey ."]
SCRIPT = """
import json, sys, time
start = time.perf_counter()
import serving
predict = serving.load(sys.argv[1])
out = predict(json.loads(sys.argv[2]))
seconds = time.perf_counter() - start
try:
    import tensorflow
    importable = True
except ImportError:
    importable = False
print(json.dumps({"probabilities": out["probabilities"].tolist(),
                  "label": [x.decode() for x in out["label"]],
                  "tensorflow_imported": "tensorflow" in sys.modules,
                  "keras_imported": "keras" in sys.modules,
                  "tensorflow_installed": importable, "seconds": seconds}))
"""


@pytest.fixture(scope="module")
def serving_venv(tmp_path_factory):
    venv = tmp_path_factory.mktemp("serving_venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    installed = subprocess.run(
        [python, "-m", "pip", "install", "-q", "-r",
         os.path.join(ROOT, "requirements-serving.txt")], capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr[-3000:]
    # docs/serving.md, "From your application's own folder": the clone on the path.
    site = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(site, "bert_clone.pth"), "w", encoding="utf-8") as f:
        f.write(ROOT + "\n")
    return python


def test_a_venv_without_tensorflow_serves_a_classifier(serving_venv, tmp_path):
    from tasks.classification.export import export_classification
    from tests import text_generator
    from text.tokenization import BasicTokenizer
    vocab = text_generator.covering_vocab(TEXTS, [BasicTokenizer(True)])
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    config = modeling.BertConfig(**dict(TINY_CONFIG, vocab_size=len(vocab),
                                        initializer_range=0.5))
    keras.utils.set_random_seed(8)
    model = modeling.BertClassifier(config, 3)
    export_dir = export_classification(model, str(tmp_path / "export"), str(vocab_file),
                                       True, 24, ["neg", "pos", "mixed"], pair=False)
    app = tmp_path / "my_app"  # the application's own folder, outside the clone
    app.mkdir()
    assert not str(app).startswith(ROOT)
    result = subprocess.run([serving_venv, "-c", SCRIPT, export_dir, json.dumps(TEXTS)],
                            capture_output=True, text=True, cwd=str(app),
                            env={"PATH": os.environ.get("PATH", "")})
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""  # not a line on the console
    got = json.loads(result.stdout)
    assert not got["tensorflow_installed"]
    assert not got["tensorflow_imported"] and not got["keras_imported"]
    want = text_signature(export_dir)(TEXTS)
    assert_same({"probabilities": np.array(got["probabilities"], np.float32),
                 "label": np.array([x.encode() for x in got["label"]], object)},
                {"probabilities": want["probabilities"], "label": want["label"]})
