"""Serving a trained model: the SavedModel plumbing every task's export shares
(`saved_model`: the serving module, its signatures, the TF Lite conversion), the TF
Hub-style encoder and preprocessor (`hub`), and `load(export_dir)` (`predictor`): an
export as a Python callable on its fastest backend, thread-safe, with `runners` (TF Lite
on LiteRT, or the SavedModel on TensorFlow) and each task's `fast_path`.

Pipeline position: the last stage (fine-tuning -> SavedModel). Each task's own signatures
live in its folder (`tasks/*/export.py`), built on `saved_model.ServingModule`; the
Hugging Face export is model-level and lives in `modeling.huggingface`.

Importing `serving` imports no TensorFlow (nor does `load` of an export that TF Lite
serves), measures nothing and prints nothing; it only arranges for TensorFlow's start-up
lines, should a SavedModel backend import it, to stay off the console (`common.quiet`).
"""

from common import quiet

quiet.quiet_tensorflow_start()  # when we import TensorFlow: no start-up lines


def load(export_dir, **options):
    """An export as a callable, raw text in, NumPy out: see `serving.predictor.load`."""
    from serving.predictor import load as load_predictor
    return load_predictor(export_dir, **options)


__all__ = ["load"]
