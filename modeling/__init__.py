"""BERT in Keras 3: configuration, layers, encoder, heads, models and checkpoint I/O.

Pipeline position: the model every stage uses (text -> TFRecords -> pre-training ->
fine-tuning -> SavedModel). See docs/repository.md for how the pieces fit.

The names below are imported when first used (`modeling.BertConfig` imports
`modeling.config` then), so that a light module of this package (`modeling.inputs`, the
model's input contract) is read without Keras and TensorFlow, as a serving process needs.
"""

import importlib
from typing import TYPE_CHECKING

from common import quiet

if TYPE_CHECKING:  # for editors and type checkers; at run time, `__getattr__` below
    from modeling.checkpoint import (
        CheckpointError,
        CheckpointReadError,
        LoadReport,
        load_checkpoint,
        save_google_checkpoint,
        save_tf2_checkpoint,
    )
    from modeling.config import BertConfig, BertConfigError
    from modeling.encoder import BertEncoder
    from modeling.huggingface import save_huggingface
    from modeling.layers.initializers import deferred_draws
    from modeling.models import (
        BertClassifier,
        BertPretrainer,
        BertSpanLabeler,
        BertTokenClassifier,
        EncoderModel,
    )
    from modeling.pretrained import from_pretrained

quiet.quiet_tensorflow_start()  # when we import TensorFlow: no start-up lines

_HOMES = {
    "modeling.checkpoint": ("CheckpointError", "CheckpointReadError", "LoadReport",
                            "load_checkpoint", "save_google_checkpoint",
                            "save_tf2_checkpoint"),
    "modeling.config": ("BertConfig", "BertConfigError"),
    "modeling.encoder": ("BertEncoder",),
    "modeling.huggingface": ("save_huggingface",),
    "modeling.layers.initializers": ("deferred_draws",),
    "modeling.pretrained": ("from_pretrained",),
    "modeling.models": ("BertClassifier", "BertPretrainer", "BertSpanLabeler",
                        "BertTokenClassifier", "EncoderModel"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = ["BertClassifier", "BertConfig", "BertConfigError", "BertEncoder",
           "BertPretrainer", "BertSpanLabeler", "BertTokenClassifier", "CheckpointError",
           "CheckpointReadError", "EncoderModel", "LoadReport", "deferred_draws",
           "from_pretrained", "load_checkpoint", "save_google_checkpoint", "save_huggingface",
           "save_tf2_checkpoint"]
assert __all__ == sorted(_HOME_OF)


def __getattr__(name):
    module = _HOME_OF.get(name)
    if module is None:  # a submodule used as an attribute (`modeling.heads`)
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
