"""The multiple-choice model: each (context, choice) sequence scored by one vector dotted
with its pooled [CLS] output, a softmax over the choices (the paper's SWAG model, Hugging
Face's `BertForMultipleChoice`).

Pipeline position: built by the multiple-choice task for fine-tuning (from a pre-trained
encoder checkpoint), by `export_saved_model.py` / `export_huggingface.py
--task_type=multiple_choice` to export one.
"""

import keras
from keras import ops

from modeling import EncoderModel
from modeling.checkpoint_mapping import IDENTITY, TRANSPOSE
from modeling.inputs import INPUT_NAMES


@keras.saving.register_keras_serializable(package="bert")
class BertMultipleChoice(EncoderModel):
    """A score per choice: dropout, then one dense unit, on each choice's pooled vector.

    Args:
        encoder: a `BertEncoder`, or a `BertConfig`.
        dropout_rate: float. Dropout on the pooled vector. Defaults to 0.1.

    Call arguments:
        inputs: dict of the encoder's int32 inputs, each [batch, num_choices, seq_length]
            (any number of choices).

    Returns:
        dict with "logits", float [batch, num_choices] (softmax over the choices gives
        their probabilities).
    """
    # The original has no multiple-choice head; these names follow its conventions.
    checkpoint_heads = (
        ("cls/multiple_choice/output_weights", "chooser.dense.kernel", TRANSPOSE),
        ("cls/multiple_choice/output_bias", "chooser.dense.bias", IDENTITY),
    )
    hf_architecture = "BertForMultipleChoice"
    hf_head_names = {"cls/multiple_choice/output_weights": "classifier.weight",
                     "cls/multiple_choice/output_bias": "classifier.bias"}

    def __init__(self, encoder, *, dropout_rate=0.1, **kwargs):
        super().__init__(encoder, **kwargs)
        self.dropout_rate = dropout_rate
        self.chooser = self._output_layer(1, dropout_rate, "chooser",
                                          (None, self.encoder.hidden_size))
        self.built = True  # every weight exists now: checkpoints can load

    def call(self, inputs, training=None, skip_padding=False):
        shape = ops.shape(inputs["input_ids"])  # [batch, num_choices, seq_length]
        flat = {name: ops.reshape(inputs[name], (-1, shape[2])) for name in INPUT_NAMES}
        pooled = self._encode(flat, training, skip_padding)["pooled_output"]
        scores = self.chooser(pooled, training=training)  # [batch * num_choices, 1]
        return {"logits": ops.reshape(scores, (-1, shape[1]))}

    @property
    def packable(self):
        """Whether `call_packed` can run this model (see `BertEncoder.packable`)."""
        return self.encoder.packable

    def call_packed(self, inputs):
        """Inference on rows that pack the choices' sequences (see `BertEncoder.packed`):
        "cls_positions" [batch, num_choices] says where each choice's [CLS] is; "logits"
        [batch, num_choices]."""
        pooled = self.encoder.packed(inputs)["pooled_output"]
        scores = self.chooser(pooled, training=False)
        return {"logits": ops.reshape(scores, ops.shape(inputs["cls_positions"]))}

    def _head_config(self):
        return {"dropout_rate": self.dropout_rate}
