"""Which sentence vector a model gives: the pooling a sentence-transformers folder records
(its `modules.json` and Pooling module's `config.json`), or the one asked for.

Pipeline position: the task's settings and `--init_checkpoint` -> here -> the
`BertSentenceEncoder` the task trains.
"""

import json
import os

# sentence-transformers' Pooling config: "pooling_mode" (a mode or a list of them), or in
# older files one flag per mode.
_MODE_FLAGS = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls",
               "pooling_mode_max_tokens": "max",
               "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
               "pooling_mode_weightedmean_tokens": "weightedmean",
               "pooling_mode_lasttoken": "lasttoken"}
SUPPORTED = ("mean", "cls")


def _model_folder(init_checkpoint):
    return init_checkpoint if os.path.isdir(init_checkpoint) else \
        os.path.dirname(os.path.abspath(init_checkpoint))


def recorded_pooling(init_checkpoint):
    """The pooling of the sentence-transformers folder holding `init_checkpoint` ("mean"
    or "cls"); None when it is not such a folder.

    Raises:
        ValueError: the folder pools otherwise (max, weighted...), or its files are not
            as sentence-transformers writes them.
    """
    folder = _model_folder(init_checkpoint)
    modules_file = os.path.join(folder, "modules.json")
    if not os.path.exists(modules_file):
        return None
    modules = _json(modules_file)
    pooling = [m for m in modules if isinstance(m, dict) and
               str(m.get("type", "")).endswith("models.Pooling")]
    if not pooling:
        return None
    config_file = os.path.join(folder, pooling[0].get("path", ""), "config.json")
    config = _json(config_file)
    modes = config.get("pooling_mode")
    if modes is None:  # the older files: a flag per mode, none set meaning the mean
        modes = [mode for key, mode in _MODE_FLAGS.items() if config.get(key)] or ["mean"]
    modes = [modes] if isinstance(modes, str) else list(modes)
    if len(modes) != 1 or modes[0] not in SUPPORTED:
        raise ValueError(f"{config_file}: pooling {modes or 'none'}; this task pools "
                         f"{' or '.join(SUPPORTED)} (set --pooling to train another).")
    return modes[0]


def _json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not readable as sentence-transformers writes it "
                         f"({err}).") from None


def sentence_pooling(pooling, init_checkpoint):
    """The pooling to train with: `pooling` itself unless "auto"; then the one recorded
    beside `init_checkpoint` (`recorded_pooling`), else "mean"."""
    if pooling != "auto":
        return pooling
    return (recorded_pooling(init_checkpoint) if init_checkpoint else None) or "mean"
