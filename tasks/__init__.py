"""One home per task: its reader, features, loss, metrics, post-processing and export.

Pipeline position: between the model (`modeling`) and the entry points. Each subpackage
holds a `Task` (`training.task`) that the shared runner (`training.runner`) drives, and the
frozen config of its settings, and declares itself in `tasks.registry` from its
`__init__.py`:

  pretraining/     masked LM + next sentence on TFRecords     `run_pretraining.py`
  classification/  GLUE, XNLI, the user's own files           `run_classifier.py`
  squad/           SQuAD v1.1 / v2.0 question answering       `run_squad.py`
  tagging/         named-entity recognition (CoNLL)           `run_ner.py`

Each task has one name, used by its folder, its `Task.name` and the export scripts'
`--task_type`; `registry.canonical_name` also accepts the names older command lines used.
"""
