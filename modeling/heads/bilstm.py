"""A randomly initialised BiLSTM between the encoder and a task's output layer: the paper's
"+ BiLSTM" fine-tuning ablation (Table 5) and the feature-based tagger of Table 7.

Pipeline position: inside the task models of `modeling.models` (`head="bilstm"`), on the
encoder's sequence output (or a combination of its layers), before the output layer.
"""

import keras
from keras import ops

from modeling.checkpoint_mapping import IDENTITY

HEADS = ("linear", "bilstm")


@keras.saving.register_keras_serializable(package="bert")
class BiLSTM(keras.layers.Layer):
    """`num_layers` bidirectional LSTMs over the real tokens of a sequence.

    Args:
        units: int. Units per direction; the output has 2 * units features.
        num_layers: int. Stacked bidirectional layers. Defaults to 1.

    Call arguments:
        sequence: float Tensor [batch_size, seq_length, width].
        input_mask: int Tensor [batch_size, seq_length] (1 = real token, padding last).

    Returns:
        float Tensor [batch_size, seq_length, 2 * units], zeros at padding. The backward
        direction starts at each sequence's last real token.
    """

    def __init__(self, *, units, num_layers=1, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.num_layers = num_layers
        for i in range(num_layers):
            setattr(self, f"layer_{i}", keras.layers.Bidirectional(
                keras.layers.LSTM(units, return_sequences=True, dtype=self.dtype_policy),
                dtype=self.dtype_policy, name=f"layer_{i}"))

    def build(self, input_shape):
        width = input_shape[-1]
        for i in range(self.num_layers):
            getattr(self, f"layer_{i}").build((None, None, width))
            width = 2 * self.units
        self.built = True

    def call(self, sequence, input_mask):
        mask = ops.cast(input_mask, "bool")
        x = sequence
        for i in range(self.num_layers):
            x = getattr(self, f"layer_{i}")(x, mask=mask)
        return x * ops.cast(ops.expand_dims(mask, -1), x.dtype)

    def summary(self, outputs, input_mask):
        """One vector per sequence: the forward direction at the last real token and the
        backward one at the first (each has then read the whole sequence)."""
        last = ops.maximum(ops.sum(ops.cast(input_mask, "int32"), axis=1) - 1, 0)
        forward = ops.take_along_axis(outputs[..., :self.units], last[:, None, None], axis=1)
        return ops.concatenate([ops.squeeze(forward, 1), outputs[:, 0, self.units:]], -1)

    def checkpoint_names(self, scope, path):
        """(canonical name, attribute path, rule) of every weight: `scope/layer_i/
        {forward,backward}/{kernel,recurrent_kernel,bias}` under the model's `path`."""
        names = []
        for i in range(self.num_layers):
            for direction in ("forward", "backward"):
                for weight in ("kernel", "recurrent_kernel", "bias"):
                    names.append((f"{scope}/layer_{i}/{direction}/{weight}",
                                  f"{path}.layer_{i}.{direction}_layer.cell.{weight}",
                                  IDENTITY))
        return tuple(names)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (2 * self.units,)

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units, "num_layers": self.num_layers})
        return config
