"""The bi-encoder: one encoder reads each text alone and pools its vectors into one
sentence vector (Sentence-BERT, Reimers and Gurevych 2019; sentence-transformers'
Transformer + Pooling modules).

Pipeline position: built by the sentence-embedding task for training (from a Google,
Hugging Face or own encoder checkpoint); the task's loss compares the vectors of a pair's
two texts.
"""

import keras
from keras import ops

from modeling import EncoderModel
from modeling.encoder import masked_mean
from modeling.inputs import INPUT_NAMES

SENTENCE_POOLINGS = ("mean", "cls")


@keras.saving.register_keras_serializable(package="bert")
class BertSentenceEncoder(EncoderModel):
    """A sentence vector per text: the mean of its real tokens' last-layer vectors
    ([CLS] and [SEP] included, as sentence-transformers' mean pooling), or its [CLS]
    vector. No weights beyond the encoder's; not normalised (the losses and cosines
    normalise).

    Args:
        encoder: a `BertEncoder`, or a `BertConfig`.
        pooling: "mean" or "cls".

    Call arguments:
        inputs: dict of the encoder's int32 inputs, [batch, seq_length] (one text each) or
            [batch, group, seq_length] (a pair's two texts: group 2).

    Returns:
        dict with "embeddings", float32 [batch, hidden_size] or [batch, group,
        hidden_size].
    """
    hf_architecture = "BertModel"  # exported in sentence-transformers' layout around it
    hf_encoder_prefix = ""

    def __init__(self, encoder, *, pooling="mean", **kwargs):
        super().__init__(encoder, **kwargs)
        if pooling not in SENTENCE_POOLINGS:
            raise ValueError(f"pooling={pooling!r}: use one of {list(SENTENCE_POOLINGS)}.")
        self.pooling = pooling
        self.built = True  # no weights of its own: checkpoints can load

    def call(self, inputs, training=None, skip_padding=False):
        grouped = len(inputs["input_ids"].shape) == 3
        shape = ops.shape(inputs["input_ids"])
        flat = {name: ops.reshape(inputs[name], (-1, shape[-1])) for name in INPUT_NAMES} \
            if grouped else {name: inputs[name] for name in INPUT_NAMES}
        sequence = self._encode(flat, training, skip_padding)["sequence_output"]
        if self.pooling == "mean":  # summed in float32
            vectors = masked_mean(sequence, ops.cast(flat["input_mask"], "float32"))
        else:
            vectors = ops.cast(sequence[:, 0], "float32")
        if grouped:
            vectors = ops.reshape(vectors, (shape[0], shape[1], vectors.shape[-1]))
        return {"embeddings": vectors}

    @property
    def hf_has_pooler(self):
        """The tanh pooler goes with the weights where Hugging Face's BertModel has its
        shape (it reads [CLS]); sentence-transformers never reads it."""
        return self.encoder.bert_config().pooling == "cls"

    def hf_extra_files(self):
        """{path: JSON object}: the files that make the Hugging Face folder a
        sentence-transformers model (its modules: the transformer, this pooling, the L2
        normalisation; its settings: inputs up to the model's positions, cosine
        similarity), as sentence-transformers writes them."""
        modules = [("Transformer", ""), ("Pooling", "1_Pooling"), ("Normalize", "2_Normalize")]
        hidden = self.encoder.hidden_size
        return {
            "modules.json": [{"idx": i, "name": str(i), "path": path,
                              "type": f"sentence_transformers.models.{kind}"}
                             for i, (kind, path) in enumerate(modules)],
            "1_Pooling/config.json": {
                "word_embedding_dimension": hidden,
                "pooling_mode_cls_token": self.pooling == "cls",
                "pooling_mode_mean_tokens": self.pooling == "mean",
                "pooling_mode_max_tokens": False,
                "pooling_mode_mean_sqrt_len_tokens": False},
            "sentence_bert_config.json": {
                "max_seq_length": self.encoder.bert_config().max_position_embeddings,
                "do_lower_case": False},  # (the tokenizer's own casing applies)
            "config_sentence_transformers.json": {"similarity_fn_name": "cosine"}}

    def _head_config(self):
        return {"pooling": self.pooling}
