"""One home per task: its reader, features, loss, metrics, post-processing and export.

Pipeline position: between the model (`modeling`) and the entry points. Each subpackage
holds a `Task` (`training.task`) that the shared runner (`training.runner`) drives, and the
frozen config of its settings, and declares itself in `tasks.registry` from its
`__init__.py` (`registry.load_all()` finds every folder here; the registry lists them).
A task that exports a SavedModel also has a `fast_path.py`: its answers from raw text in
NumPy, for `serving.load`.

Each task has one name, used by its folder, its `Task.name` and the export scripts'
`--task_type`; `registry.canonical_name` also accepts the names older command lines used.
"""

from common import quiet

quiet.quiet_tensorflow_start()  # when we import TensorFlow: no start-up lines
