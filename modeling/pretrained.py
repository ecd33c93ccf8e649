"""A released model in one call: `from_pretrained(folder)` -> (encoder, tokenizer).

Pipeline position: where a user starts from someone's checkpoint (feature extraction,
their own fine-tuning code, inspection); the scripts take the same folders' files as
flags (`--bert_config_file`, `--init_checkpoint`, `--vocab_file`).

A folder is any of:
  * a Google release (`bert_config.json`, `bert_model.ckpt.*`, `vocab.txt`), e.g.
    `uncased_L-12_H-768_A-12/`;
  * a Hugging Face model folder (`config.json`, `model.safetensors`, `vocab.txt`);
  * this project's outputs: `run_pretraining.py`'s `output_dir/export/`,
    `pretrain_from_text.py`'s `output_dir/pretraining/export/` (its vocabulary two folders
    up), an `export_huggingface.py` folder.
The casing comes from the folder: Hugging Face's `tokenizer_config.json`, else the
release's name (`uncased_...` / `cased_...`), else lower-casing (the English default);
pass `do_lower_case` to choose.
"""

import json
import os

CHECKPOINTS = ("bert_model.ckpt", "model.safetensors", "model.ckpt")
CONFIGS = ("bert_config.json", "config.json")


def model_file(folder, names, what, probe=os.path.exists):
    """The first of `names` in `folder` (a checkpoint prefix counts by its .index)."""
    for name in names:
        path = os.path.join(folder, name)
        if probe(path) or probe(path + ".index"):
            return path
    raise ValueError(f"{folder}: no {what} ({' or '.join(names)}); pass a Google release "
                     f"folder, a Hugging Face model folder or a run's export folder.")


def vocabulary_file(folder):
    """The folder's vocab.txt, or the one two folders up (pretrain_from_text.py's)."""
    for candidate in (folder, os.path.dirname(os.path.dirname(os.path.abspath(folder)))):
        path = os.path.join(candidate, "vocab.txt")
        if os.path.exists(path):
            return path
    raise ValueError(f"{folder}: no vocab.txt beside the checkpoint (or two folders up, "
                     f"as pretrain_from_text.py leaves it).")


def casing(folder):
    """True (uncased) or False (cased), as the folder says; None when it does not."""
    config = os.path.join(folder, "tokenizer_config.json")
    if os.path.exists(config):
        with open(config, encoding="utf-8") as f:
            value = json.load(f).get("do_lower_case")
        if isinstance(value, bool):
            return value
    name = os.path.basename(os.path.normpath(folder))
    if name.startswith(("uncased_", "multilingual_", "chinese_")):
        return True
    if name.startswith(("cased_", "multi_cased_")):
        return False
    return None


def from_pretrained(folder, do_lower_case=None, vocab_smaller_than_model=False):
    """The encoder of `folder` with its weights, and its tokenizer.

    Args:
        folder: str. See the module docstring.
        do_lower_case: bool or None. None: as the folder says (else True).
        vocab_smaller_than_model: bool. Accept a vocab.txt with fewer tokens than the
            config's `vocab_size` (a table padded on purpose); else it is refused, as is
            one with more.

    Returns:
        (`modeling.BertEncoder`, `text.tokenization.FullTokenizer`).

    Raises:
        ValueError: the folder lacks a config, checkpoint or vocabulary, or they do not fit.

    Example:
    ```python
    encoder, tokenizer = modeling.from_pretrained("uncased_L-12_H-768_A-12")
    ```
    """
    from modeling.checkpoint import load_checkpoint
    from modeling.config import BertConfig
    from modeling.encoder import BertEncoder
    from modeling.layers.initializers import deferred_draws
    from text.tokenization import (
        FullTokenizer,
        check_vocabulary_fits,
        validate_case_matches_checkpoint,
    )

    if not os.path.isdir(folder):
        raise ValueError(f"{folder}: not a folder.")
    config_file = model_file(folder, CONFIGS, "model config")
    config = BertConfig.from_json_file(config_file)
    vocab_file = vocabulary_file(folder)
    check_vocabulary_fits(vocab_file, config.vocab_size, config_file,
                          vocab_smaller_than_model, "vocab_smaller_than_model=True")
    checkpoint = model_file(folder, CHECKPOINTS, "checkpoint")
    said = casing(folder)
    if do_lower_case is None:
        do_lower_case = True if said is None else said
    elif said is not None and said != do_lower_case:
        raise ValueError(f"{folder}: a {'n un' if said else ' '}cased model, but "
                         f"do_lower_case={do_lower_case}; pass do_lower_case={said} (or "
                         f"leave it out).")
    validate_case_matches_checkpoint(do_lower_case, checkpoint)
    with deferred_draws() as deferred:  # what the checkpoint fills is not drawn first
        encoder = BertEncoder(config)
    report = load_checkpoint(encoder, checkpoint, deferred=deferred)
    if report.not_filled:
        raise ValueError(f"{checkpoint}: has no value for {len(report.not_filled)} of the "
                         f"encoder's weights ({', '.join(report.not_filled[:3])}...): it is "
                         f"not a BERT checkpoint of this config.")
    return encoder, FullTokenizer(vocab_file, do_lower_case=do_lower_case)
