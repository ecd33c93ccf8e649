"""Trainable models: the encoder joined to its heads, for pre-training and each task.

Pipeline position: `BertPretrainer` is what `run_pretraining.py` trains; `BertClassifier`,
`BertSpanLabeler` and `BertTokenClassifier` are what the fine-tuning scripts train and
export. Each takes an encoder instance (or a `BertConfig` to build one), so a fine-tuning
model can reuse a pre-trained encoder object as it is.
"""

import keras

from modeling.checkpoint_mapping import IDENTITY, TRANSPOSE
from modeling.config import BertConfig
from modeling.encoder import BertEncoder
from modeling.head_variants import HeadVariants
from modeling.heads import ClassificationHead, MaskedLMHead, SpanLabelingHead


def _as_encoder(encoder_or_config):
    if isinstance(encoder_or_config, BertConfig):
        return BertEncoder(encoder_or_config)
    if isinstance(encoder_or_config, BertEncoder):
        return encoder_or_config
    raise TypeError(f"Expected a BertEncoder or a BertConfig, got "
                    f"{type(encoder_or_config).__name__}.")


class EncoderModel(keras.Model):
    """The base of every task model: holds `self.encoder`, runs it, serialises it in
    `get_config`. A task with a model of its own subclasses it in its folder (as
    `tasks.multiple_choice.model`), with the names below; checkpoints, Hugging Face export
    and the SavedModel then work with no other edit.

    Each subclass names its heads' weights in the checkpoint formats:
        checkpoint_heads: ((canonical TF1 name, attribute path from the model, rule), ...):
            read by `modeling.checkpoint_mapping.variable_map` (here: `_OUTPUT_NAMES`; a
            subclass may set it whole).
        hf_architecture, hf_encoder_prefix, hf_has_pooler, hf_head_names: the Hugging
            Face class (here: `_HF_ARCHITECTURE`), the prefix of the encoder's weights in
            it, whether it has the pooler, and {canonical name: Hugging Face name} of the
            heads' weights (see `modeling.huggingface`); `hf_num_labels` for heads with
            labels.

    The paper's head variants (a BiLSTM, frozen features) are a mixin of their own,
    `modeling.head_variants.HeadVariants`, for the models whose output layer reads the
    sequence.
    """
    _OUTPUT_NAMES = ()  # the output layer's checkpoint names
    _HF_ARCHITECTURE = None  # the Hugging Face class
    hf_encoder_prefix = "bert."
    hf_has_pooler = True
    hf_head_names = {}
    hf_num_labels = None

    def __init__(self, encoder, **kwargs):
        super().__init__(**kwargs)
        self.encoder = _as_encoder(encoder)

    def _output_layer(self, num_classes, dropout_rate, name, input_shape):
        """A dropout + dense output layer of `num_classes`, built for `input_shape`."""
        layer = ClassificationHead(num_classes=num_classes, dropout_rate=dropout_rate,
                                   initializer_range=self.encoder.initializer_range,
                                   dtype=self.encoder.dtype_policy, name=name)
        layer.build(input_shape)
        return layer

    @property
    def checkpoint_heads(self):
        """The output layer's names (a model with more heads sets its own)."""
        return self._OUTPUT_NAMES

    @property
    def hf_architecture(self):
        return self._HF_ARCHITECTURE

    def _encode(self, inputs, training, skip_padding=False):
        # the encoder picks its inputs by name
        return self.encoder(inputs, training=training, skip_padding=skip_padding)

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
class BertPretrainer(EncoderModel):
    """BERT with its pre-training heads: masked LM (tied to the word embeddings) and,
    unless `next_sentence=False`, next sentence prediction (2-way classifier on the pooled
    output, no dropout).

    Args:
        encoder: a `BertEncoder`, or a `BertConfig` to build one.
        next_sentence: bool. With the next-sentence head (the original); False for the
            paper's "No NSP" and left-to-right models. Defaults to True.

    Call arguments:
        inputs: dict with the encoder's int32 inputs ("input_ids", "input_mask",
            "segment_ids", each [batch_size, seq_length]) and optionally
            "masked_lm_positions" (int32 [batch_size, num_positions]: the masked positions,
            or for a left-to-right model every position whose next token is predicted).

    Returns:
        dict: the encoder's outputs, plus "next_sentence_logits" (float [batch_size, 2];
        class 0 = is next, 1 = random) with that head and, when positions are given,
        "masked_lm_logits" (float [batch_size, num_positions, vocab_size]).
    """
    _MASKED_LM = (
        ("cls/predictions/transform/dense/kernel", "masked_lm.transform.kernel", IDENTITY),
        ("cls/predictions/transform/dense/bias", "masked_lm.transform.bias", IDENTITY),
        ("cls/predictions/transform/LayerNorm/gamma",
         "masked_lm.transform_layer_norm.gamma", IDENTITY),
        ("cls/predictions/transform/LayerNorm/beta",
         "masked_lm.transform_layer_norm.beta", IDENTITY),
        ("cls/predictions/output_bias", "masked_lm.output_bias", IDENTITY),
    )
    _NEXT_SENTENCE = (
        ("cls/seq_relationship/output_weights", "next_sentence.dense.kernel", TRANSPOSE),
        ("cls/seq_relationship/output_bias", "next_sentence.dense.bias", IDENTITY),
    )
    _HF_NAMES = {
        "cls/predictions/transform/dense/kernel": "cls.predictions.transform.dense.weight",
        "cls/predictions/transform/dense/bias": "cls.predictions.transform.dense.bias",
        "cls/predictions/transform/LayerNorm/gamma":
            "cls.predictions.transform.LayerNorm.weight",
        "cls/predictions/transform/LayerNorm/beta": "cls.predictions.transform.LayerNorm.bias",
        "cls/predictions/output_bias": "cls.predictions.bias",
        "cls/seq_relationship/output_weights": "cls.seq_relationship.weight",
        "cls/seq_relationship/output_bias": "cls.seq_relationship.bias",
    }

    def __init__(self, encoder, *, next_sentence=True, **kwargs):
        super().__init__(encoder, **kwargs)
        enc = self.encoder
        self.has_next_sentence = next_sentence
        self.masked_lm = MaskedLMHead(vocab_size=enc.vocab_size, hidden_size=enc.hidden_size,
                                      hidden_act=enc.hidden_act,
                                      initializer_range=enc.initializer_range,
                                      dtype=enc.dtype_policy, name="masked_lm")
        self.masked_lm.build()
        if next_sentence:
            self.next_sentence = self._output_layer(2, 0.0, "next_sentence",
                                                    (None, enc.hidden_size))
        self.built = True  # every weight exists now: checkpoints can load

    @property
    def checkpoint_heads(self):
        return self._MASKED_LM + (self._NEXT_SENTENCE if self.has_next_sentence else ())

    @property
    def hf_architecture(self):
        """Hugging Face's class of this model: with both heads `BertForPreTraining`, a
        masked LM alone `BertForMaskedLM`, a left-to-right LM `BertLMHeadModel`."""
        if self.encoder.causal_attention:
            return "BertLMHeadModel"
        return "BertForPreTraining" if self.has_next_sentence else "BertForMaskedLM"

    @property
    def hf_has_pooler(self):
        return self.has_next_sentence  # the masked-LM-only classes have none

    @property
    def hf_head_names(self):
        return {name: self._HF_NAMES[name] for name, _, _ in self.checkpoint_heads}

    def call(self, inputs, training=None, skip_padding=False):
        outputs = dict(self._encode(inputs, training, skip_padding))
        if self.has_next_sentence:
            outputs["next_sentence_logits"] = self.next_sentence(outputs["pooled_output"],
                                                                 training=training)
        if "masked_lm_positions" in inputs:
            outputs["masked_lm_logits"] = self.masked_lm(
                outputs["sequence_output"], inputs["masked_lm_positions"],
                self.encoder.word_embeddings, training=training)
        return outputs

    def _head_config(self):
        return {"next_sentence": self.has_next_sentence}


@keras.saving.register_keras_serializable(package="bert")
class BertClassifier(HeadVariants, EncoderModel):
    """Sequence classification (or regression, `num_classes=1`) on the [CLS] vector.

    Args:
        encoder: a `BertEncoder`, or a `BertConfig`.
        num_classes: int. Number of labels (1 for regression such as STS-B).
        dropout_rate: float. Dropout on the pooled vector. Defaults to 0.1.
        head: "linear" (the original: the pooled [CLS] vector) or "bilstm" (the paper's
            "+ BiLSTM": a BiLSTM over the sequence output, its final states classified).
        bilstm_layers, bilstm_units: the BiLSTM's layers (default 1) and units per
            direction (default half the hidden size).
        feature_based: None (fine-tuning), or a combination of a frozen encoder's layers
            (`modeling.feature_extraction.FEATURE_COMBINATIONS`) read by a BiLSTM (default
            2 layers of 768 units), the paper's Table 7.

    Returns:
        dict with "logits" (float [batch_size, num_classes]) and "pooled_output".
    """
    # run_classifier.py creates these at the root variable scope.
    _OUTPUT_NAMES = (
        ("output_weights", "classifier.dense.kernel", TRANSPOSE),
        ("output_bias", "classifier.dense.bias", IDENTITY),
    )
    _HF_ARCHITECTURE = "BertForSequenceClassification"
    hf_head_names = {"output_weights": "classifier.weight", "output_bias": "classifier.bias"}

    def __init__(self, encoder, num_classes, *, dropout_rate=0.1, head="linear",
                 bilstm_layers=None, bilstm_units=None, feature_based=None, **kwargs):
        super().__init__(encoder, **kwargs)
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        width = self._make_bilstm(head, bilstm_layers, bilstm_units, feature_based)
        self.classifier = self._output_layer(num_classes, dropout_rate, "classifier",
                                             (None, width))
        self.built = True  # every weight exists now: checkpoints can load

    def call(self, inputs, training=None, skip_padding=False):
        outputs, sequence = self._sequence_features(inputs, training, skip_padding)
        features = outputs["pooled_output"]
        if self.bilstm:
            features = self.bilstm.summary(sequence, inputs["input_mask"])
        return {"logits": self.classifier(features, training=training),
                "pooled_output": outputs["pooled_output"]}

    def call_packed(self, inputs):
        """Inference on rows that pack several sequences (see `BertEncoder.packed`; needs
        "cls_positions"): "logits" [sequences, num_classes], in cls_positions' order."""
        pooled = self._packed_encoder_outputs(inputs)["pooled_output"]
        return {"logits": self.classifier(pooled, training=False), "pooled_output": pooled}

    @property
    def hf_num_labels(self):
        return self.num_classes

    def _head_config(self):
        return dict(self._bilstm_config(), num_classes=self.num_classes,
                    dropout_rate=self.dropout_rate)


@keras.saving.register_keras_serializable(package="bert")
class BertSpanLabeler(HeadVariants, EncoderModel):
    """Extractive question answering: start and end logits over the sequence.

    Args:
        encoder: a `BertEncoder`, or a `BertConfig`.
        head, bilstm_layers, bilstm_units, feature_based: "linear" (the original) or
            "bilstm" (a BiLSTM between the sequence output and the span layer), or a frozen
            encoder's features (see `BertClassifier`).

    Returns:
        dict with "start_logits" and "end_logits", each float [batch_size, seq_length].
    """
    _OUTPUT_NAMES = (
        ("cls/squad/output_weights", "span_head.dense.kernel", TRANSPOSE),
        ("cls/squad/output_bias", "span_head.dense.bias", IDENTITY),
    )
    _HF_ARCHITECTURE = "BertForQuestionAnswering"
    hf_has_pooler = False
    hf_head_names = {"cls/squad/output_weights": "qa_outputs.weight",
                     "cls/squad/output_bias": "qa_outputs.bias"}

    def __init__(self, encoder, *, head="linear", bilstm_layers=None, bilstm_units=None,
                 feature_based=None, **kwargs):
        super().__init__(encoder, **kwargs)
        width = self._make_bilstm(head, bilstm_layers, bilstm_units, feature_based)
        self.span_head = SpanLabelingHead(initializer_range=self.encoder.initializer_range,
                                          dtype=self.encoder.dtype_policy, name="span")
        self.span_head.build((None, None, width))
        self.built = True  # every weight exists now: checkpoints can load

    def call(self, inputs, training=None, skip_padding=False):
        _, sequence = self._sequence_features(inputs, training, skip_padding)
        start, end = self.span_head(sequence)
        return {"start_logits": start, "end_logits": end}

    def _head_config(self):
        return self._bilstm_config()


@keras.saving.register_keras_serializable(package="bert")
class BertTokenClassifier(HeadVariants, EncoderModel):
    """Per-token tagging (named-entity recognition).

    Args:
        encoder: a `BertEncoder`, or a `BertConfig`.
        num_labels: int. Number of tags.
        dropout_rate: float. Defaults to 0.1.
        head, bilstm_layers, bilstm_units, feature_based: "linear" (the original) or
            "bilstm" (a BiLSTM between the sequence output and the tagger), or a frozen
            encoder's features read by a BiLSTM, the paper's Table 7 (see
            `BertClassifier`).

    Returns:
        dict with "logits", float [batch_size, seq_length, num_labels].
    """
    # The original has no tagging head; these names follow its conventions.
    _OUTPUT_NAMES = (
        ("cls/token_classification/output_weights", "tagger.dense.kernel", TRANSPOSE),
        ("cls/token_classification/output_bias", "tagger.dense.bias", IDENTITY),
    )
    _HF_ARCHITECTURE = "BertForTokenClassification"
    hf_has_pooler = False
    hf_head_names = {"cls/token_classification/output_weights": "classifier.weight",
                     "cls/token_classification/output_bias": "classifier.bias"}

    def __init__(self, encoder, num_labels, *, dropout_rate=0.1, head="linear",
                 bilstm_layers=None, bilstm_units=None, feature_based=None, **kwargs):
        super().__init__(encoder, **kwargs)
        self.num_labels = num_labels
        self.dropout_rate = dropout_rate
        width = self._make_bilstm(head, bilstm_layers, bilstm_units, feature_based)
        self.tagger = self._output_layer(num_labels, dropout_rate, "tagger",
                                         (None, None, width))
        self.built = True  # every weight exists now: checkpoints can load

    def call(self, inputs, training=None, skip_padding=False):
        _, sequence = self._sequence_features(inputs, training, skip_padding)
        return {"logits": self.tagger(sequence, training=training)}

    def call_packed(self, inputs):
        """Inference on rows that pack several sequences (see `BertEncoder.packed`):
        "logits" [rows, width, num_labels] at the packed positions."""
        sequence = self._packed_encoder_outputs(inputs)["sequence_output"]
        return {"logits": self.tagger(sequence, training=False)}

    @property
    def hf_num_labels(self):
        return self.num_labels

    def _head_config(self):
        return dict(self._bilstm_config(), num_labels=self.num_labels,
                    dropout_rate=self.dropout_rate)
