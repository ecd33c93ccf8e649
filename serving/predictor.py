"""`serving.load(export_dir)`: an export as a Python callable, raw text in, NumPy out,
on the fastest backend it has for each request.

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
multiple choice), or a dict of lists by input name. Outputs: the raw-text signature's
(`serving_default`) keys and values, as NumPy arrays.

Backends:
  * `tflite`: the export's `model.tflite` (XNNPACK, every core) with the WordPiece of
    `text.fast_tokenizer` and the task's packing and post-processing in Python, for task
    types with a fast path (`serving.json` `fast`: classification). Requests are padded to
    the next multiple of `seq_multiple` and interpreters kept per shape (up to
    `max_interpreters`, each with its own copy of the weights), so TF Lite does not
    re-plan on every call. Same answers as the SavedModel: the same ids, packing and
    graph (probabilities within 1e-5: `tests/test_serving_load.py`).
  * `saved_model`: `tf.saved_model.load` and its `serving_default` signature; every task
    type; faster than TF Lite on large batches.
  * `auto` (default): TF Lite for requests of up to `tflite_max_batch` texts, the
    SavedModel (loaded on first use) above, and the SavedModel alone when the export has
    no fast path. The crossing is measured by `bench/serving_speed.py`.
"""

import collections
import json
import os
import warnings

import numpy as np

from serving.saved_model import SERVING_CONFIG_FILE, TFLITE_FILE
from text import packing
from text.fast_tokenizer import FastTokenizer

BACKENDS = ("auto", "tflite", "saved_model")
# Up to this many texts per request go to TF Lite under `auto`. bench/serving_speed.py on
# an AMD EPYC (AVX2), oneDNN on: TF Lite (XNNPACK) 1.3x the SavedModel at batch 8, and
# even with it at 32 (0.99x and 1.07x in two runs); larger requests, unmeasured, go to
# the SavedModel.
TFLITE_MAX_BATCH = 32


def _read_config(export_dir):
    path = os.path.join(export_dir, SERVING_CONFIG_FILE)
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable ({exc}); re-export the model "
                         f"(export_saved_model.py) to rewrite it.") from None


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


class _SavedModelBackend:
    """`serving_default` of the SavedModel."""

    def __init__(self, export_dir):
        import tensorflow as tf
        try:
            import tensorflow_text  # noqa: F401  (the raw-text signature's ops)
        except ImportError:
            raise ValueError(f"{export_dir}: its raw-text signature needs tensorflow-text "
                             f"(pip install -r requirements.txt).") from None
        self._tf = tf
        self.loaded = tf.saved_model.load(export_dir)
        if "serving_default" not in self.loaded.signatures:
            raise ValueError(f"{export_dir}: no serving_default signature.")
        self.signature = self.loaded.signatures["serving_default"]

    def __call__(self, columns):
        tf = self._tf
        return {k: v.numpy() for k, v in self.signature(
            **{name: tf.constant(values, tf.string) for name, values in columns.items()}
        ).items()}


class _ClassificationLite:
    """A classifier's `model.tflite` behind the raw-text signature's contract."""

    def __init__(self, export_dir, config, num_threads, seq_multiple, max_interpreters):
        import tensorflow as tf
        self._interpreter_class = tf.lite.Interpreter
        self.path = os.path.join(export_dir, config.get("tflite") or TFLITE_FILE)
        self.tokenizer = FastTokenizer(os.path.join(export_dir, config["vocab_file"]),
                                       config["do_lower_case"])
        vocab = self.tokenizer.vocab
        self.cls_id, self.sep_id = vocab["[CLS]"], vocab["[SEP]"]
        self.max_seq_length = config["max_seq_length"]
        self.long_document = config.get("long_document", "truncate")
        self.doc_stride = config.get("doc_stride")
        self.regression = config.get("regression", False)
        self.labels = np.array([label.encode("utf-8") for label in config["labels"]],
                               dtype=object)
        self.text_inputs = config["text_inputs"]
        self.num_threads = num_threads
        self.seq_multiple = seq_multiple
        self.max_interpreters = max_interpreters
        self._runners = collections.OrderedDict()  # (batch, seq) -> signature runner

    def _runner(self, shape):
        runner = self._runners.pop(shape, None)
        if runner is None:
            with warnings.catch_warnings():  # "tf.lite.Interpreter is deprecated"
                warnings.simplefilter("ignore")
                interpreter = self._interpreter_class(model_path=self.path,
                                                      num_threads=self.num_threads)
            runner = interpreter.get_signature_runner("serving_ids")
            if len(self._runners) >= self.max_interpreters:
                self._runners.popitem(last=False)
        self._runners[shape] = runner
        return runner

    def _packed(self, columns):
        """Id rows [m, seq] of every sequence of the request, and each one's row."""
        ids_a = self.tokenizer.ids(columns[self.text_inputs[0]])
        ids_b = self.tokenizer.ids(columns[self.text_inputs[1]]) \
            if len(self.text_inputs) > 1 else [[]] * len(ids_a)
        sequences, rows = [], []
        for row, (a, b) in enumerate(zip(ids_a, ids_b)):
            for part_a, part_b in packing.document_segments(
                    a, b, self.max_seq_length, self.long_document, self.doc_stride):
                sequence = [self.cls_id] + part_a + [self.sep_id]
                segments = [0] * len(sequence)
                if part_b:
                    sequence += part_b + [self.sep_id]
                    segments += [1] * (len(part_b) + 1)
                sequences.append((sequence, segments))
                rows.append(row)
        longest = max(len(s) for s, _ in sequences)
        seq = min(self.max_seq_length, -(-longest // self.seq_multiple) * self.seq_multiple)
        ids = np.zeros((len(sequences), seq), np.int32)
        mask = np.zeros_like(ids)
        segment_ids = np.zeros_like(ids)
        for i, (sequence, segments) in enumerate(sequences):
            ids[i, :len(sequence)] = sequence
            mask[i, :len(sequence)] = 1
            segment_ids[i, :len(segments)] = segments
        return ids, mask, segment_ids, np.array(rows)

    def __call__(self, columns):
        ids, mask, segment_ids, rows = self._packed(columns)
        out = self._runner(ids.shape)(input_ids=ids, input_mask=mask,
                                      segment_ids=segment_ids)
        batch = len(columns[self.text_inputs[0]])
        if self.regression:
            return {"score": self._mean_over_windows(out["score"], rows, batch)}
        probabilities = out["probabilities"].astype(np.float32)
        if len(rows) != batch:  # windows: softmax of the windows' mean logits, which
            # equals that of their mean log-probabilities (a shift per window cancels)
            logits = self._mean_over_windows(np.log(np.maximum(probabilities, 1e-45)),
                                              rows, batch)
            logits = np.exp(logits - logits.max(-1, keepdims=True))
            probabilities = (logits / logits.sum(-1, keepdims=True)).astype(np.float32)
        label_id = probabilities.argmax(-1).astype(np.int32)
        return {"probabilities": probabilities, "label_id": label_id,
                "label": self.labels[label_id]}

    @staticmethod
    def _mean_over_windows(values, rows, batch):
        if len(rows) == batch:
            return values
        sums = np.zeros((batch,) + values.shape[1:], np.float64)
        np.add.at(sums, rows, values)
        return (sums / np.bincount(rows, minlength=batch).reshape(
            (-1,) + (1,) * (values.ndim - 1))).astype(np.float32)


_FAST_PATHS = {"classification": _ClassificationLite}


class Predictor:
    """See the module docstring; made by `load`."""

    def __init__(self, export_dir, backend="auto", num_threads=None,
                 tflite_max_batch=TFLITE_MAX_BATCH, seq_multiple=8, max_interpreters=8):
        if backend not in BACKENDS:
            raise ValueError(f"backend={backend!r} is not one of {list(BACKENDS)}.")
        if not os.path.exists(os.path.join(export_dir, "saved_model.pb")):
            raise ValueError(f"{export_dir}: not a SavedModel folder (no saved_model.pb); "
                             f"pass the folder run_*.py --export_dir or "
                             f"export_saved_model.py wrote.")
        self.export_dir = export_dir
        self.config = _read_config(export_dir)
        self.backend = backend
        self.tflite_max_batch = tflite_max_batch
        fast = _FAST_PATHS.get(self.config.get("fast"))
        has_tflite = bool(self.config.get("tflite")) and os.path.exists(
            os.path.join(export_dir, self.config["tflite"]))
        self._lite = None
        if fast and has_tflite and backend != "saved_model":
            self._lite = fast(export_dir, self.config, num_threads or _cores(),
                              seq_multiple, max_interpreters)
        elif backend == "tflite":
            raise ValueError(
                f"{export_dir}: no TF Lite fast path for this export (it needs "
                f"{TFLITE_FILE} and a task with one: "
                f"{', '.join(sorted(_FAST_PATHS))}); use backend='saved_model' or 'auto'.")
        self._saved = None
        self.text_inputs = self.config.get("text_inputs") or self._saved_model_inputs()

    def _saved_model_inputs(self):
        signature = self._saved_model().signature
        return sorted(signature.structured_input_signature[1])

    def _saved_model(self):
        if self._saved is None:
            self._saved = _SavedModelBackend(self.export_dir)
        return self._saved

    def backend_for(self, batch):
        """The backend a request of `batch` rows goes to."""
        if self._lite is not None and (self.backend == "tflite" or
                                       batch <= self.tflite_max_batch):
            return "tflite"
        return "saved_model"

    def __call__(self, inputs):
        columns = _columns(inputs, self.text_inputs)
        batch = len(next(iter(columns.values())))
        if self.backend_for(batch) == "tflite":
            return self._lite(columns)
        return self._saved_model()(columns)


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def load(export_dir, backend="auto", num_threads=None, tflite_max_batch=TFLITE_MAX_BATCH,
         seq_multiple=8, max_interpreters=8):
    """An export (`run_*.py --export_dir`, `export_saved_model.py`) as a callable: see the
    module docstring.

    Args:
        export_dir: str. The SavedModel folder.
        backend: "auto", "tflite" or "saved_model".
        num_threads: TF Lite threads; default every core this process may use.
        tflite_max_batch: under "auto", requests of up to this many rows go to TF Lite.
        seq_multiple: TF Lite requests are padded to a multiple of this many positions.
        max_interpreters: TF Lite interpreters kept, one per request shape.
    """
    return Predictor(export_dir, backend, num_threads, tflite_max_batch, seq_multiple,
                     max_interpreters)
