"""What the serving tests share: an export's raw-text signature (`serving_default`) called
directly, the truth `serving.load`'s fast paths are held to, and the comparison."""

import numpy as np

from serving.predictor import _columns, read_config
from serving.runners import SavedModelRunner

_SIGNATURES = {}


def text_signature(export_dir):
    """`serving_default` of the export as a callable taking the request forms of
    `serving.load` (one load per export and test module)."""
    if export_dir not in _SIGNATURES:
        runner = SavedModelRunner(export_dir, "serving_default")
        names = read_config(export_dir).get("text_inputs") or runner.input_names
        _SIGNATURES[export_dir] = lambda inputs: runner(_columns(inputs, names))
    return _SIGNATURES[export_dir]


def assert_same(fast, saved):
    """The same keys, shapes and dtypes; strings and integers equal; probabilities to
    1e-5, logits and scores to 1e-4 (TF Lite's XNNPACK and TensorFlow's kernels round
    differently). A tagging fast path's `entities` (Python lists, which no signature can
    answer) are compared where both have them."""
    assert set(fast) - {"entities"} == set(saved) - {"entities"}
    if "entities" in saved:
        assert fast["entities"] == saved["entities"]
    for key in set(saved) - {"entities"}:
        assert fast[key].shape == saved[key].shape, key
        assert fast[key].dtype == saved[key].dtype, key
        if saved[key].dtype == object:
            assert list(fast[key].ravel()) == list(saved[key].ravel()), key
        elif saved[key].dtype.kind == "f":
            np.testing.assert_allclose(fast[key], saved[key], rtol=1e-5, err_msg=key,
                                       atol=1e-5 if "probabilit" in key else 1e-4)
        else:
            np.testing.assert_array_equal(fast[key], saved[key], err_msg=key)
