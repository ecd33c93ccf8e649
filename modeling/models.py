"""Trainable models: the encoder joined to its heads, for pre-training and each task.

Pipeline position: `BertPretrainer` is what `run_pretraining.py` trains; `BertClassifier`,
`BertSpanLabeler` and `BertTokenClassifier` are what the fine-tuning scripts train and
export. Each takes an encoder instance (or a `BertConfig` to build one), so a fine-tuning
model can reuse a pre-trained encoder object as it is.
"""

import keras

from modeling.config import BertConfig
from modeling.encoder import BertEncoder
from modeling.heads import (ClassificationHead, MaskedLMHead, SpanLabelingHead,
                            TokenClassificationHead)


def _as_encoder(encoder_or_config):
    if isinstance(encoder_or_config, BertConfig):
        return BertEncoder(encoder_or_config)
    if isinstance(encoder_or_config, BertEncoder):
        return encoder_or_config
    raise TypeError(f"Expected a BertEncoder or a BertConfig, got "
                    f"{type(encoder_or_config).__name__}.")


class _EncoderModel(keras.Model):
    """Shared plumbing: holds `self.encoder`, runs it, serialises it in `get_config`."""

    def __init__(self, encoder, **kwargs):
        super().__init__(**kwargs)
        self.encoder = _as_encoder(encoder)

    def _encode(self, inputs, training):
        return self.encoder(inputs, training=training)  # picks its inputs by name

    def _head_config(self):
        return {}

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable,
                  "encoder": keras.layers.serialize(self.encoder)}
        config.update(self._head_config())
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.layers.deserialize(config["encoder"])
        return cls(**config)


@keras.saving.register_keras_serializable(package="bert")
class BertPretrainer(_EncoderModel):
    """BERT with its two pre-training heads: masked LM (tied to the word embeddings) and
    next sentence prediction (2-way classifier on the pooled output, no dropout).

    Args:
        encoder: a `BertEncoder`, or a `BertConfig` to build one.

    Call arguments:
        inputs: dict with the encoder's int32 inputs ("input_ids", "input_mask",
            "segment_ids", each [batch_size, seq_length]) and optionally
            "masked_lm_positions" (int32 [batch_size, max_predictions_per_seq]).

    Returns:
        dict: the encoder's outputs, plus "next_sentence_logits" (float [batch_size, 2];
        class 0 = is next, 1 = random) and, when positions are given, "masked_lm_logits"
        (float [batch_size, max_predictions_per_seq, vocab_size]).
    """

    def __init__(self, encoder, **kwargs):
        super().__init__(encoder, **kwargs)
        enc = self.encoder
        self.masked_lm = MaskedLMHead(vocab_size=enc.vocab_size, hidden_size=enc.hidden_size,
                                      hidden_act=enc.hidden_act,
                                      initializer_range=enc.initializer_range,
                                      dtype=enc.dtype_policy, name="masked_lm")
        self.next_sentence = ClassificationHead(num_classes=2, dropout_rate=0.0,
                                                initializer_range=enc.initializer_range,
                                                dtype=enc.dtype_policy, name="next_sentence")
        self.masked_lm.build()
        self.next_sentence.build((None, enc.hidden_size))
        self.built = True  # every weight exists now: checkpoints can load

    def call(self, inputs, training=None):
        outputs = dict(self._encode(inputs, training))
        outputs["next_sentence_logits"] = self.next_sentence(outputs["pooled_output"],
                                                             training=training)
        if "masked_lm_positions" in inputs:
            outputs["masked_lm_logits"] = self.masked_lm(
                outputs["sequence_output"], inputs["masked_lm_positions"],
                self.encoder.word_embeddings)
        return outputs


@keras.saving.register_keras_serializable(package="bert")
class BertClassifier(_EncoderModel):
    """Sequence classification (or regression, `num_classes=1`) on the [CLS] vector.

    Args:
        encoder: a `BertEncoder`, or a `BertConfig`.
        num_classes: int. Number of labels (1 for regression such as STS-B).
        dropout_rate: float. Dropout on the pooled vector. Defaults to 0.1.

    Returns:
        dict with "logits" (float [batch_size, num_classes]) and "pooled_output".
    """

    def __init__(self, encoder, num_classes, *, dropout_rate=0.1, **kwargs):
        super().__init__(encoder, **kwargs)
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.classifier = ClassificationHead(
            num_classes=num_classes, dropout_rate=dropout_rate,
            initializer_range=self.encoder.initializer_range,
            dtype=self.encoder.dtype_policy, name="classifier")
        self.classifier.build((None, self.encoder.hidden_size))
        self.built = True  # every weight exists now: checkpoints can load

    def call(self, inputs, training=None):
        outputs = self._encode(inputs, training)
        return {"logits": self.classifier(outputs["pooled_output"], training=training),
                "pooled_output": outputs["pooled_output"]}

    def _head_config(self):
        return {"num_classes": self.num_classes, "dropout_rate": self.dropout_rate}


@keras.saving.register_keras_serializable(package="bert")
class BertSpanLabeler(_EncoderModel):
    """Extractive question answering: start and end logits over the sequence.

    Returns:
        dict with "start_logits" and "end_logits", each float [batch_size, seq_length].
    """

    def __init__(self, encoder, **kwargs):
        super().__init__(encoder, **kwargs)
        self.span_head = SpanLabelingHead(initializer_range=self.encoder.initializer_range,
                                          dtype=self.encoder.dtype_policy, name="span")
        self.span_head.build((None, None, self.encoder.hidden_size))
        self.built = True  # every weight exists now: checkpoints can load

    def call(self, inputs, training=None):
        outputs = self._encode(inputs, training)
        start, end = self.span_head(outputs["sequence_output"])
        return {"start_logits": start, "end_logits": end}


@keras.saving.register_keras_serializable(package="bert")
class BertTokenClassifier(_EncoderModel):
    """Per-token tagging (named-entity recognition).

    Args:
        encoder: a `BertEncoder`, or a `BertConfig`.
        num_labels: int. Number of tags.
        dropout_rate: float. Defaults to 0.1.

    Returns:
        dict with "logits", float [batch_size, seq_length, num_labels].
    """

    def __init__(self, encoder, num_labels, *, dropout_rate=0.1, **kwargs):
        super().__init__(encoder, **kwargs)
        self.num_labels = num_labels
        self.dropout_rate = dropout_rate
        self.tagger = TokenClassificationHead(
            num_labels=num_labels, dropout_rate=dropout_rate,
            initializer_range=self.encoder.initializer_range,
            dtype=self.encoder.dtype_policy, name="tagger")
        self.tagger.build((None, None, self.encoder.hidden_size))
        self.built = True  # every weight exists now: checkpoints can load

    def call(self, inputs, training=None):
        outputs = self._encode(inputs, training)
        return {"logits": self.tagger(outputs["sequence_output"], training=training)}

    def _head_config(self):
        return {"num_labels": self.num_labels, "dropout_rate": self.dropout_rate}
