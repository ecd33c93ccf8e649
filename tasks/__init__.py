"""One home per task: its reader, features, loss, metrics, post-processing and export.

Pipeline position: between the model (`modeling`) and the entry points. Each subpackage
holds a `Task` (`training.task`) that the shared runner (`training.runner`) drives, and the
frozen config of its settings:

  pretraining/     masked LM + next sentence on TFRecords     `run_pretraining.py`
  classification/  GLUE, XNLI, the user's own files           `run_classifier.py`
  squad/           SQuAD v1.1 / v2.0 question answering       `run_squad.py`
  tagging/         named-entity recognition (CoNLL)           `run_ner.py`

Each task has one name, used by its folder, its `Task.name` and `export_saved_model.py
--task_type`; `canonical_name` also accepts the names older command lines used.
"""

NAMES = ("pretraining", "classification", "squad", "tagging")
ALIASES = {"classifier": "classification", "span": "squad", "tagger": "tagging",
           "ner": "tagging"}


def canonical_name(name):
    """A task's one name, from it or an alias (e.g. "classifier" -> "classification")."""
    key = (name or "").lower()
    key = ALIASES.get(key, key)
    if key not in NAMES:
        raise ValueError(f"Unknown task {name!r}: use one of {list(NAMES)} (or "
                         f"{sorted(ALIASES)}).")
    return key
