"""`serving.load(export_dir)`: an export as a Python callable, raw text in, NumPy out, on
the fastest backend it has for each request; safe to call from any number of threads.

Pipeline position: the last stage (fine-tuning -> SavedModel -> answers), for Python
applications; TF Serving and TF Lite runtimes read the same export directly.

    import serving
    predict = serving.load("sst2_model")
    predict(["a gripping film", "a dull, lifeless affair"])
    # {'probabilities': array([[0.02, 0.98], [0.97, 0.03]], dtype=float32),
    #  'label_id': array([1, 0], dtype=int32), 'label': array([b'1', b'0'], dtype=object)}
    predict([("The cat sat.", "A cat was sitting.")])  # a pair task: (text_a, text_b)

Inputs: a string, a list of strings (the first text input; others empty), a list of
tuples (the raw-text signature's inputs in order: `(text_a, text_b)` for pair
classification, `(question, context)` for SQuAD, `(context, question, choices)` for
multiple choice), or a dict of lists by input name. Outputs: the answers of the export's
raw-text signature (`serving_default`), as NumPy arrays; SQuAD's are the original's
post-processed answers (see `tasks.squad.fast_path`).

How a request is answered:
  * An export whose task has a fast path (`serving.json` `fast`: its registry name; every
    task that exports a SavedModel) is answered by that path (`tasks/<task>/fast_path.py`:
    the WordPiece of `text.fast_tokenizer`, packing and answers in NumPy, the same
    answers as the raw-text signature) around a model that takes ids, chosen by
    `backend`:
      - `tflite`: `model.tflite` on LiteRT (XNNPACK). No TensorFlow is imported. A
        request's texts share packed rows (`serving.packed_rows`) where the file has
        the task's `serving_packed` signature (classification, tagging, multiple
        choice), else run in groups of similar length (`serving.length_groups`); at
        most `max_positions` positions a call.
      - `saved_model`: the SavedModel's `serving_ids` signature on TensorFlow (imported
        and loaded on first use; its graph skips the padding itself); faster than TF
        Lite's groups on large requests, slower than its packed rows.
      - `auto` (default): TF Lite for requests of up to `tflite_max_batch` rows, the
        SavedModel above; every request to TF Lite where its rows pack
        (`bench/serving_speed.py` measures the crossing).
  * An export from before `serving.json` named its task is answered by its raw-text
    signature itself. One whose fast path this Python cannot import is refused in one
    line (its answers would otherwise change format).

Thread safety: one predictor may be shared by any number of threads; each call's answer
is the answer of the same call made alone. Nothing that a request changes is shared: the
tokenizer and packing keep no state between calls, TF Lite interpreters are checked out
per call (`serving.runners`), and TensorFlow's signatures may run concurrently.

`import serving` and loading an export with a fast path have no side effects: nothing is
measured, TensorFlow is not imported, nothing is printed.
"""

import importlib
import json
import os

from serving import length_groups, packed_rows
from serving.export_files import (
    PACKED_SIGNATURE,
    SERVING_CONFIG_FILE,
    TFLITE_FILE,
    TFLITE_INT8_FILE,
)
from serving.fast_path import FastPath
from serving.runners import LiteRunner, SavedModelRunner

BACKENDS = ("auto", "tflite", "saved_model")
PRECISIONS = ("float32", "int8")
# Up to this many rows per request go to TF Lite under `auto` when its rows do not pack
# (groups of similar length); packed rows go to TF Lite at every size. Measured with
# bench/serving_speed.py (bench/RESULTS.md, the archive's "Packed rows").
TFLITE_MAX_BATCH = 32


def read_config(export_dir):
    """The export's `serving.json` ({} for an export from before it existed)."""
    path = os.path.join(export_dir, SERVING_CONFIG_FILE)
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable ({exc}); re-export the model "
                         f"(export_saved_model.py) to rewrite it.") from None


def fast_path_class(config, export_dir="."):
    """The fast path `serving.json` names (`fast_path`, "module:Class", written by the
    task's export); None when it names none (an export from before `serving.json`: its
    raw-text signature serves). An export written before `fast_path` was named its task
    only (`fast`): its fast path is looked up where every task keeps it, the `fast_path`
    module of the task's package. A fast path named but not importable here (a clone
    without that task, an installation without `tasks/`) is an error, not a quiet change
    of the answers' format."""
    spec = config.get("fast_path")
    if not spec and config.get("fast"):
        spec = f"tasks.{config['fast']}.fast_path"
    if not spec:
        return None
    module_name, _, name = spec.partition(":")
    where = os.path.join(export_dir, SERVING_CONFIG_FILE)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ValueError(
            f"{where}: its answers come from the fast path {spec}, which this Python "
            f"cannot import ({exc}); load the export from a clone of the project that has "
            f"that task (its root on sys.path), or call the SavedModel's raw-text "
            f"signature, tf.saved_model.load(...).signatures['serving_default'], whose "
            f"outputs are the raw model's.") from None
    if name:
        found = [getattr(module, name)] if hasattr(module, name) else []
    else:
        found = [value for value in vars(module).values() if isinstance(value, type) and
                 issubclass(value, FastPath) and value.__module__ == module.__name__]
    if len(found) != 1:
        raise ValueError(f"{where}: {spec} names no single fast path class in "
                         f"{module_name}; re-export the model with this clone "
                         f"(export_saved_model.py) to rewrite serving.json.")
    return found[0]


def _columns(inputs, names):
    """A request as {input name: list}, every list the same length."""
    if isinstance(inputs, (str, bytes)):
        inputs = [inputs]
    if isinstance(inputs, dict):
        unknown = set(inputs) - set(names)
        if unknown:
            raise ValueError(f"Unknown inputs {sorted(unknown)}: this model takes "
                             f"{names}.")
        columns = {name: list(values) for name, values in inputs.items()}
    else:
        rows = list(inputs)
        if not rows:
            raise ValueError("An empty request: pass at least one text.")
        width = max(1 if isinstance(r, (str, bytes)) else len(r) for r in rows)
        if width > len(names):
            raise ValueError(f"Rows of {width} texts, but this model takes {len(names)} "
                             f"({', '.join(names)}).")
        columns = {name: [] for name in names[:width]}
        for row in rows:
            row = (row,) if isinstance(row, (str, bytes)) else tuple(row)
            for name, value in zip(names, row + ("",) * (width - len(row))):
                columns[name].append(value)
    sizes = {len(v) for v in columns.values()}
    if len(sizes) != 1 or 0 in sizes:
        raise ValueError(f"Every input needs one value per request row; got "
                         f"{ {k: len(v) for k, v in columns.items()} }.")
    rows = sizes.pop()
    for name in names:  # absent text inputs are empty (text_b "": a single sequence)
        columns.setdefault(name, [""] * rows)
    return columns


class Predictor:
    """See the module docstring; made by `load`."""

    def __init__(self, export_dir, backend="auto", num_threads=None,
                 tflite_max_batch=None, seq_multiple=8, max_interpreters=None,
                 precision=None, group_overhead=length_groups.GROUP_OVERHEAD,
                 max_positions=length_groups.MAX_POSITIONS, pack_rows=True,
                 pack_width=packed_rows.PACK_WIDTH):
        if backend not in BACKENDS:
            raise ValueError(f"backend={backend!r} is not one of {list(BACKENDS)}.")
        if not os.path.exists(os.path.join(export_dir, "saved_model.pb")):
            raise ValueError(f"{export_dir}: not a SavedModel folder (no saved_model.pb); "
                             f"pass the folder run_*.py --export_dir or "
                             f"export_saved_model.py wrote.")
        self.export_dir = export_dir
        self.config = read_config(export_dir)
        self.backend = backend
        self.tflite_max_batch = tflite_max_batch
        self.group_overhead = group_overhead
        self.max_positions = max_positions
        self.precision = precision or self.config.get("precision") or "float32"
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision={self.precision!r} is not one of "
                             f"{list(PRECISIONS)}.")
        self.pack_rows, self.pack_width = pack_rows, pack_width
        fast = fast_path_class(self.config, export_dir)
        self.fast_path = None
        self._lite = self._ids_model = self._text_model = None
        if fast is not None:
            from text.fast_tokenizer import FastTokenizer
            tokenizer = FastTokenizer(os.path.join(export_dir, self.config["vocab_file"]),
                                      self.config["do_lower_case"])
            self.fast_path = fast(self.config, tokenizer, seq_multiple)
            self._ids_model = SavedModelRunner(export_dir, "serving_ids")
            tflite = self._tflite_file()
            if tflite and backend != "saved_model":
                self._lite = LiteRunner(tflite, num_threads=num_threads,
                                        max_interpreters=max_interpreters)
        if backend == "tflite" and self._lite is None:
            raise ValueError(
                f"{export_dir}: no TF Lite fast path for this export (it needs "
                f"{TFLITE_FILE} and a task with a fast path, named in "
                f"{SERVING_CONFIG_FILE}); use backend='saved_model' or 'auto'.")
        if self.fast_path is None:
            self._text_model = SavedModelRunner(export_dir, "serving_default")
        self.text_inputs = self.config.get("text_inputs") or self._text_model.input_names

    def _tflite_file(self):
        """The TF Lite file of the precision asked for, if the export has it."""
        name = self.config.get("tflite_int8" if self.precision == "int8" else "tflite")
        path = os.path.join(self.export_dir, name) if name else None
        if path and os.path.exists(path):
            return path
        if self.precision == "int8":
            raise ValueError(f"{self.export_dir}: no {TFLITE_INT8_FILE}; export with "
                             f"--tflite_quantize to write it, or use precision='float32'.")
        return None

    def backend_for(self, batch):
        """The backend a request of `batch` rows goes to."""
        if self._lite is None:
            return "saved_model"
        limit = self.tflite_max_batch
        if limit is None:
            # rows that pack (asked of a request of several rows) go to TF Lite at any size
            limit = float("inf") if self._packs(2) else TFLITE_MAX_BATCH
        return "tflite" if self.backend == "tflite" or batch <= limit else "saved_model"

    def __call__(self, inputs):
        columns = _columns(inputs, self.text_inputs)
        if self.fast_path is None:
            return self._text_model(columns)
        batch = len(next(iter(columns.values())))
        model_inputs, state = self.fast_path.prepare(columns)
        if self.backend_for(batch) != "tflite":
            return self.fast_path.answer(self._ids_model(model_inputs), state)
        if self._packs(batch):
            return self.fast_path.answer(packed_rows.run_packed(
                self._lite_packed, model_inputs, self.fast_path.seq_multiple,
                self.fast_path.sequence_outputs, self.pack_width, self.max_positions,
                cls_positions=self._packed_takes_cls), state)
        if not self.fast_path.group_by_length or self.group_overhead is None:
            return self.fast_path.answer(self._lite_in_chunks(model_inputs), state)
        return self.fast_path.answer(length_groups.run_in_groups(
            self._lite_in_chunks, model_inputs, self.fast_path.seq_multiple,
            self.fast_path.sequence_outputs, self.group_overhead), state)

    def _packs(self, batch):
        """Whether a TF Lite request of `batch` rows runs on packed rows: asked for, more
        than one row, answers that read no padded position (as for groups; not with
        `group_overhead=None`, one call per request), and the signature in the file."""
        return (self.pack_rows and batch > 1 and self.group_overhead is not None and
                self.fast_path.group_by_length and PACKED_SIGNATURE in self._lite.signatures)

    @property
    def _packed_takes_cls(self):
        return "cls_positions" in self._lite.input_names_of(PACKED_SIGNATURE)

    def _lite_packed(self, inputs):
        return self._lite(inputs, PACKED_SIGNATURE)

    def _lite_in_chunks(self, inputs):
        return length_groups.run_in_row_chunks(self._lite, inputs, self.max_positions)


def load(export_dir, backend="auto", num_threads=None, tflite_max_batch=None,
         seq_multiple=8, max_interpreters=None, precision=None,
         group_overhead=length_groups.GROUP_OVERHEAD,
         max_positions=length_groups.MAX_POSITIONS, pack_rows=True,
         pack_width=packed_rows.PACK_WIDTH):
    """An export (`run_*.py --export_dir`, `export_saved_model.py`) as a callable: see the
    module docstring.

    Args:
        export_dir: str. The SavedModel folder.
        backend: "auto", "tflite" or "saved_model".
        num_threads: TF Lite threads per request. Default: every core this process may
            use for a request that arrives alone, one each for requests in flight
            together (`serving.runners.LiteRunner`).
        tflite_max_batch: under "auto", requests of up to this many rows go to TF Lite;
            default every request where its rows pack, else `TFLITE_MAX_BATCH`.
        seq_multiple: requests are padded to a multiple of this many positions.
        max_interpreters: TF Lite interpreters kept, each serving one request at a time;
            with `num_threads`, default one per `num_threads` cores.
        precision: "float32" (`model.tflite`) or "int8" (`model_int8.tflite`, int8
            weights: see `bench/RESULTS.md` for its accuracy); default the export's choice
            in `serving.json`, else float32.
        group_overhead: on TF Lite, what one more model call costs, in positions, when a
            request's rows are split into groups of similar length
            (`serving.length_groups`); None: one call per request.
        max_positions: on TF Lite, the most positions (rows x padded length) one model
            call computes: a larger request's rows run in several calls, each row at the
            same padded length; None: no limit.
        pack_rows: on TF Lite, a request's texts share packed rows when the file has
            the task's `serving_packed` signature (`serving.packed_rows`); False: groups
            of similar length only.
        pack_width: positions of a packed row (longer for a longer text).
    """
    return Predictor(export_dir, backend, num_threads, tflite_max_batch, seq_multiple,
                     max_interpreters, precision, group_overhead, max_positions, pack_rows,
                     pack_width)
