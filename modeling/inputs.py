"""The model's input contract: the names of its three inputs, and turning what a caller
passes into them.

Pipeline position: every producer of model inputs (the packers of `text`, the tasks'
features, the pre-training TFRecords, the exports' signatures) names its tensors with
`INPUT_NAMES`; every model of `modeling` reads them with `select_inputs`.
"""

import numpy as np

# The model's three inputs, named as the original's features (and the TFRecords' keys):
# int32 [batch_size, seq_length] each.
INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")


def select_inputs(inputs):
    """The three inputs from a dict, lists and arrays converted to int32.

    Raises:
        TypeError: `inputs` is not a dict.
        ValueError: one of `INPUT_NAMES` is missing.
    """
    if not isinstance(inputs, dict):
        raise TypeError(f"BertEncoder takes a dict with {list(INPUT_NAMES)}, got "
                        f"{type(inputs).__name__}.")
    missing = [name for name in INPUT_NAMES if name not in inputs]
    if missing:
        raise ValueError(f"BertEncoder inputs lack {missing}; expected a dict with "
                         f"{list(INPUT_NAMES)} (int32, [batch_size, seq_length]).")
    selected = {}
    for name in INPUT_NAMES:
        value = inputs[name]
        if isinstance(value, (list, tuple, np.ndarray)):
            value = np.asarray(value, dtype=np.int32)
        selected[name] = value
    return selected
