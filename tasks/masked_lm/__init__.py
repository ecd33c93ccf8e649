"""The masked LM as a model that answers: fill-mask (the words a model predicts where a
text says `[MASK]`), from Python, `fill_mask.py` and an export that `serving.load`
answers. Trained by pre-training (`tasks.pretraining`); here it is read and served.

  config.py     the export's settings (how many words per [MASK])
  masks.py      texts with [MASK] -> ids and masked positions; top-k answers (NumPy)
  predict.py    `FillMask`, `fill_mask`: a checkpoint's masked-LM head on texts
  export.py     the SavedModel (texts in, each [MASK]'s top-k words out)
  fast_path.py  `serving.load`'s answers of the export without TensorFlow
"""

from typing import TYPE_CHECKING

from tasks import registry

if TYPE_CHECKING:  # for editors; at run time each name is imported when first used
    from tasks.masked_lm.predict import FillMask, fill_mask


def _config():
    from tasks.masked_lm import config
    return config


def _export():
    from tasks.masked_lm import export
    return export


ENTRY = registry.register(registry.TaskEntry(
    name="masked_lm", aliases=("fill_mask",), task_class=None, config_class=None,
    export=registry.ExportEntry(options=lambda: _config().MaskedLMExportOptions,
                                build_model=lambda: _export().model_for_export,
                                save=lambda: _export().save_for_export)))

__all__ = ["FillMask", "fill_mask"]
__getattr__ = registry.lazy_names(__name__, {"tasks.masked_lm.predict": ["FillMask",
                                                                         "fill_mask"]})
