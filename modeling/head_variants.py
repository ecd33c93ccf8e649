"""The paper's variants of a task model's head, apart from BERT's own: a BiLSTM between
the encoder and the output layer (Table 5's "+ BiLSTM"), and the feature-based approach
(Table 7: the encoder frozen, a combination of its layers read by a BiLSTM). With the
defaults (`head="linear"`, no `feature_based`) a model is the original's.

Pipeline position: modeling, between `modeling.encoder` and a task model's output layer:
a mixin of the task models whose output layer reads the sequence (`BertClassifier`,
`BertSpanLabeler`, `BertTokenClassifier`), before `modeling.models.EncoderModel` in their
bases; the BiLSTM stays the model's `bilstm` attribute, so checkpoints name it as before.
"""

from modeling.feature_extraction import FEATURE_COMBINATIONS, combine_layers, combined_width
from modeling.heads import HEADS, BiLSTM


class HeadVariants:
    """`_make_bilstm` in the model's constructor, `_sequence_features` in its call,
    `_bilstm_config` in its config; the BiLSTM's weights join the checkpoint's heads, and
    a model with one has no Hugging Face class."""

    bilstm = None
    feature_based = None

    def _make_bilstm(self, head, bilstm_layers, bilstm_units, feature_based=None):
        """For models with a head choice: the BiLSTM between the encoder and the output
        layer (`head="bilstm"`: `bilstm_layers` (default 1) of `bilstm_units` per
        direction (default half the hidden size)); or, `feature_based` (one of
        `FEATURE_COMBINATIONS`, the paper's Table 7), the encoder frozen and that
        combination of its layers read by a BiLSTM (default 2 layers of 768 units, the
        paper's). Returns the width the output layer reads."""
        if head not in HEADS:
            raise ValueError(f"head={head!r}: must be one of {list(HEADS)}.")
        if feature_based is not None and feature_based not in FEATURE_COMBINATIONS:
            raise ValueError(f"feature_based={feature_based!r}: must be one of "
                             f"{list(FEATURE_COMBINATIONS)}.")
        self.head, self.feature_based = head, feature_based
        self.bilstm_layers, self.bilstm_units = bilstm_layers, bilstm_units
        width = self.encoder.hidden_size
        if feature_based:
            needed = {"second_to_last": 2, "sum_last_four": 4, "concat_last_four": 4}.get(
                feature_based, 1)
            if self.encoder.num_layers < needed:
                raise ValueError(f"feature_based={feature_based!r} needs at least {needed} "
                                 f"encoder layers; the model has {self.encoder.num_layers}.")
            self.encoder.trainable = False  # features of the pre-trained model, as they are
            width = combined_width(feature_based, width)
        elif head != "bilstm":
            return width
        layers = bilstm_layers or (2 if feature_based else 1)
        units = bilstm_units or (768 if feature_based else self.encoder.hidden_size // 2)
        if layers < 1 or units < 1:
            raise ValueError(f"bilstm_layers={layers}, bilstm_units={units}: both must be "
                             f"at least 1.")
        self.bilstm = BiLSTM(units=units, num_layers=layers, dtype=self.encoder.dtype_policy,
                             name="bilstm")
        self.bilstm.build((None, None, width))
        return 2 * units

    def _sequence_features(self, inputs, training, skip_padding=False):
        """(encoder outputs, what the output layer reads per token): the sequence output,
        or the chosen combination of a frozen encoder's layers (run without dropout),
        through the BiLSTM when there is one."""
        if self.feature_based:
            outputs = self._encode(inputs, False, skip_padding)
            sequence = combine_layers(outputs, self.feature_based)
        else:
            outputs = self._encode(inputs, training, skip_padding)
            sequence = outputs["sequence_output"]
        if self.bilstm:
            sequence = self.bilstm(sequence, inputs["input_mask"])
        return outputs, sequence

    @property
    def packable(self):
        """Whether `call_packed` can run this model: the original's head (no BiLSTM, not
        feature-based) on a `BertEncoder.packable` encoder."""
        return not self.bilstm and not self.feature_based and self.encoder.packable

    def _packed_encoder_outputs(self, inputs):
        """`BertEncoder.packed`'s outputs, for a `packable` model only."""
        if not self.packable:
            raise ValueError(f"{type(self).__name__} with head={self.head!r}, feature_based="
                             f"{self.feature_based!r} cannot run on packed rows: only the "
                             f"original's head on a bidirectional [CLS]-pooling encoder.")
        return self.encoder.packed(inputs)

    def _bilstm_config(self):
        return {"head": self.head, "bilstm_layers": self.bilstm_layers,
                "bilstm_units": self.bilstm_units, "feature_based": self.feature_based}

    @property
    def checkpoint_heads(self):
        """The output layer's names, and the BiLSTM's (`cls/bilstm/...`) when it has one."""
        bilstm = self.bilstm.checkpoint_names("cls/bilstm", "bilstm") if self.bilstm else ()
        return self._OUTPUT_NAMES + bilstm

    @property
    def hf_architecture(self):  # transformers has no BiLSTM head
        return None if self.bilstm else self._HF_ARCHITECTURE
