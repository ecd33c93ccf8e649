"""Fill-mask: the words a model's masked-LM head predicts where a text says `[MASK]`.

Pipeline position: a pre-trained checkpoint (a Google release, a Hugging Face
BertForMaskedLM / BertForPreTraining, a run of `run_pretraining.py` or
`pretrain_from_text.py`) -> here -> the top-k words of each `[MASK]`, with their
probabilities (`fill_mask.py`; from Python, `FillMask` or `fill_mask`).

    from tasks.masked_lm import fill_mask
    fill_mask(["The capital of France is [MASK]."], "uncased_L-12_H-768_A-12")
    # [{"text": ..., "predictions": [[{"token": "paris", "id": 3000,
    #                                  "probability": 0.91}, ...]]}]

The head is the original's `cls/predictions` (`get_masked_lm_output` of its
run_pretraining.py): a dense layer, its activation and LayerNorm, then the word
embeddings (tied) and a bias; the probabilities its softmax. A checkpoint without that
head (a sentence-embedding model, a fine-tuned classifier) is refused, unless
`tied_embeddings_only`: the last layer's vectors scored against the word embeddings
alone (no transform, no bias): rough predictions, for a model that never had the head.
"""

import os

import numpy as np

from common.scores import softmax
from tasks.masked_lm import masks
from tasks.masked_lm.config import DEFAULT_TOP_K

# The masked-LM head's weights, by their names in the original's checkpoints.
HEAD_WEIGHTS = ("cls/predictions/transform/dense/kernel",
                "cls/predictions/transform/dense/bias",
                "cls/predictions/transform/LayerNorm/gamma",
                "cls/predictions/transform/LayerNorm/beta", "cls/predictions/output_bias")


class NoHeadError(ValueError):
    """A checkpoint without a masked-LM head."""


def load_model(bert_config, init_checkpoint, tied_embeddings_only=False):
    """A `modeling.BertPretrainer` (masked LM alone) of `bert_config` with the
    checkpoint's weights: every encoder weight, and the masked-LM head's unless
    `tied_embeddings_only`. Raises NoHeadError for a checkpoint without the head."""
    from modeling import BertPretrainer, deferred_draws, load_checkpoint
    with deferred_draws() as deferred:  # what the checkpoint fills is not drawn first
        model = BertPretrainer(bert_config, next_sentence=False)
    report = load_checkpoint(model, init_checkpoint, strict="encoder", deferred=deferred)
    missing = [name for name in HEAD_WEIGHTS if name in report.not_filled]
    if missing and not tied_embeddings_only:
        raise NoHeadError(
            f"{init_checkpoint}: no masked-LM head ({', '.join(missing[:2])}, ...): the "
            f"checkpoint cannot predict masked words (a sentence-embedding model such as "
            f"all-MiniLM-L6-v2, or a fine-tuned task model, drops it). Use a pre-trained "
            f"checkpoint with its head (a Google release, Hugging Face BertForMaskedLM or "
            f"BertForPreTraining, pretrain_from_text.py's), or ask for rough predictions "
            f"from the word embeddings alone (--tied_embeddings_only).")
    return model


def masked_lm_probabilities(model, inputs, tied_embeddings_only=False):
    """Probabilities [batch, masks, vocab] (float32) at `inputs["masked_lm_positions"]`:
    the masked-LM head's softmax, or with `tied_embeddings_only` the softmax of the last
    layer's vectors times the word embeddings."""
    import tensorflow as tf
    if not tied_embeddings_only:
        logits = model(inputs, training=False)["masked_lm_logits"]
    else:
        from modeling.heads.masked_lm import gather_positions
        sequence = model.encoder(inputs, training=False)["sequence_output"]
        vectors = gather_positions(sequence, inputs["masked_lm_positions"])
        logits = tf.einsum("bph,vh->bpv", tf.cast(vectors, tf.float32),
                           tf.cast(model.encoder.word_embeddings, tf.float32))
    return softmax(np.asarray(tf.cast(logits, tf.float32)))


class FillMask:
    """A model and its tokenizer, answering texts with `[MASK]` (see the module
    docstring). Build it with `from_files` or `from_pretrained`; call it with a list of
    texts.

    Args:
        model: a `modeling.BertPretrainer` with its weights (`load_model`).
        tokenizer: the model's `text.tokenization.FullTokenizer`.
        max_seq_length: int. Texts longer than this many pieces ([CLS] and [SEP]
            included) are cut; a `[MASK]` past the cut is an error.
        batch_size: int. Texts run together.
        tied_embeddings_only: bool. See `masked_lm_probabilities`.
    """

    def __init__(self, model, tokenizer, max_seq_length=128, batch_size=32,
                 tied_embeddings_only=False):
        self.model, self.tokenizer = model, tokenizer
        self.max_seq_length, self.batch_size = max_seq_length, batch_size
        self.tied_embeddings_only = tied_embeddings_only
        vocab = tokenizer.vocab
        if masks.MASK not in vocab:
            raise ValueError(f"The vocabulary has no {masks.MASK} token to predict.")
        self.ids = {name: vocab[name] for name in ("[CLS]", "[SEP]", masks.MASK)}
        self.tokens = [None] * (max(vocab.values()) + 1)
        for token, index in vocab.items():
            self.tokens[index] = token

    @classmethod
    def from_files(cls, bert_config_file, vocab_file, init_checkpoint, do_lower_case=True,
                   max_seq_length=128, tied_embeddings_only=False, **kwargs):
        """The model of these files (the flags of `fill_mask.py`)."""
        from modeling import BertConfig
        from text.tokenization import FullTokenizer, check_vocabulary_fits
        config = BertConfig.from_json_file(bert_config_file)
        config.check_max_seq_length(max_seq_length)
        check_vocabulary_fits(vocab_file, config.vocab_size, bert_config_file)
        model = load_model(config, init_checkpoint, tied_embeddings_only)
        return cls(model, FullTokenizer(vocab_file, do_lower_case=do_lower_case),
                   max_seq_length, tied_embeddings_only=tied_embeddings_only, **kwargs)

    @classmethod
    def from_pretrained(cls, folder, do_lower_case=None, **kwargs):
        """The model of a folder, as `modeling.from_pretrained` finds its files."""
        from modeling import pretrained
        config = pretrained.model_file(folder, pretrained.CONFIGS, "model config")
        checkpoint = pretrained.model_file(folder, pretrained.CHECKPOINTS, "checkpoint")
        if do_lower_case is None:
            said = pretrained.casing(folder)
            do_lower_case = True if said is None else said
        return cls.from_files(config, pretrained.vocabulary_file(folder), checkpoint,
                              do_lower_case, **kwargs)

    def __call__(self, texts, top_k=DEFAULT_TOP_K):
        """Per text, {"text", "predictions"}: one list per `[MASK]`, in order, of its
        `top_k` tokens ({"token", "id", "probability"}, most probable first).

        Raises:
            masks.NoMaskError: a text without `[MASK]`, or with one past
                `max_seq_length` (the message names the text by its index).
        """
        texts = [texts] if isinstance(texts, str) else list(texts)
        rows = masks.ids_with_masks(texts, masks.full_tokenizer_ids(self.tokenizer),
                                    self.ids[masks.MASK])
        for index, ids in enumerate(rows):
            if self.ids[masks.MASK] not in ids:
                raise masks.NoMaskError(index, texts[index], f"no {masks.MASK}; write it "
                                        f"where a word is missing.")
        out = []
        for start in range(0, len(rows), self.batch_size):
            out += self._batch(texts[start:start + self.batch_size],
                               rows[start:start + self.batch_size], top_k, start)
        return out

    def _batch(self, texts, rows, top_k, first):
        inputs, counts, given = masks.pack(rows, self.ids["[CLS]"], self.ids["[SEP]"],
                                           self.ids[masks.MASK], self.max_seq_length)
        cut = np.flatnonzero(counts < given)
        if len(cut):
            row = int(cut[0])
            raise masks.NoMaskError(
                first + row, texts[row], f"{masks.MASK} number {counts[row] + 1} is past "
                f"--max_seq_length={self.max_seq_length} pieces; shorten the text or raise "
                f"--max_seq_length.")
        probabilities = masked_lm_probabilities(self.model, inputs,
                                                self.tied_embeddings_only)
        ids, best = masks.top_k(probabilities, top_k)
        return masks.predictions(texts, ids, best, counts, self.tokens)


def fill_mask(texts, folder, top_k=DEFAULT_TOP_K, **kwargs):
    """`FillMask.from_pretrained(folder, **kwargs)(texts, top_k)` in one call (loads the
    model each time: keep a `FillMask` for many calls, or serve an export)."""
    if not os.path.isdir(folder):
        raise ValueError(f"{folder}: not a folder (a Google release, a Hugging Face model "
                         f"folder or a run's export).")
    return FillMask.from_pretrained(folder, **kwargs)(texts, top_k)
