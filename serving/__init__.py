"""Serving a trained model: the SavedModel plumbing every task's export shares
(`saved_model`: the serving module, its signatures, the TF Lite conversion) and the TF
Hub-style encoder and preprocessor (`hub`).

Pipeline position: the last stage (fine-tuning -> SavedModel). Each task's own signatures
live in its folder (`tasks/*/export.py`), built on `saved_model.ServingModule`; the
Hugging Face export is model-level and lives in `modeling.huggingface`.
"""
