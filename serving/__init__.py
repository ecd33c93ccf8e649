"""Serving a trained model: the SavedModel plumbing every task's export shares
(`saved_model`: the serving module, its signatures, the TF Lite conversion), the TF
Hub-style encoder and preprocessor (`hub`), and `load(export_dir)` (`predictor`): an
export as a Python callable on its fastest backend.

Pipeline position: the last stage (fine-tuning -> SavedModel). Each task's own signatures
live in its folder (`tasks/*/export.py`), built on `saved_model.ServingModule`; the
Hugging Face export is model-level and lives in `modeling.huggingface`.

Importing `serving` before TensorFlow turns oneDNN on where it measured faster on this
CPU (`common.onednn`; `TF_ENABLE_ONEDNN_OPTS` overrides), as the entry points do.
"""

from common import onednn

onednn.decide()


def load(export_dir, **options):
    """An export as a callable, raw text in, NumPy out: see `serving.predictor.load`."""
    from serving.predictor import load as load_predictor
    return load_predictor(export_dir, **options)


__all__ = ["load"]
