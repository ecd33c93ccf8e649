"""The model of an export, run on id arrays: `model.tflite` on LiteRT (`LiteRunner`), or
the SavedModel's signatures on TensorFlow (`SavedModelRunner`). Both may be called from
any number of threads at once.

Pipeline position: inside `serving.load` (`serving.predictor`), between a task's fast
path (raw text -> id arrays -> answers, in NumPy) and the model.

`LiteRunner` imports no TensorFlow: LiteRT (`ai-edge-litert`, the TF Lite interpreter as
a package of its own) runs the file with XNNPACK. An interpreter is not thread-safe, so
each call checks one out of a pool and returns it afterwards: no two requests ever share
one. The pool holds at most `max_interpreters` (each a copy of the weights repacked by
XNNPACK, about the size of `model.tflite`); a call that finds them all busy waits for
one. Resizing an interpreter to the request's shape costs little on LiteRT (re-planning
is cheap; measured: about 0.5 ms at batch 1), so one interpreter serves every shape.
"""

import contextlib
import os
import threading
import warnings

import numpy as np

from common.stderr import CapturedStderr


def _interpreter_class():
    """LiteRT's `Interpreter`; TensorFlow's own `tf.lite.Interpreter` where LiteRT has no
    wheel (it is the same interpreter, deprecated there)."""
    try:
        from ai_edge_litert.interpreter import Interpreter
        return Interpreter
    except ImportError:
        import tensorflow as tf
        return tf.lite.Interpreter


def cores():
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


class InterpreterPool:
    """Objects made by `make()` on demand, at most `size` of them, each lent to one
    caller at a time (`with pool.checkout() as item:`)."""

    def __init__(self, make, size):
        if size < 1:
            raise ValueError(f"max_interpreters must be at least 1, got {size}.")
        self._make, self.size = make, size
        self._idle, self._made = [], 0
        self._available = threading.Condition()

    @contextlib.contextmanager
    def checkout(self):
        item = self._take()
        try:
            yield item
        finally:
            with self._available:
                self._idle.append(item)
                self._available.notify()

    def _take(self):
        with self._available:
            while not self._idle and self._made >= self.size:
                self._available.wait()
            if self._idle:
                return self._idle.pop()
            self._made += 1
        try:
            return self._make()
        except BaseException:
            with self._available:
                self._made -= 1
                self._available.notify()
            raise

    @property
    def made(self):
        return self._made


class LiteRunner:
    """A TF Lite file's signature, called with NumPy arrays, from any thread; its other
    signatures by name (`signatures`).

    By default (neither `num_threads` nor `max_interpreters` given) the threads follow
    the traffic: a request that arrives alone runs on an interpreter with a thread per
    core, and requests in flight together each get a one-thread interpreter (up to one per
    core). One interpreter with every core, shared in turn, made two callers slower than
    one (their Python work fought XNNPACK's threads for the cores). Interpreters are made
    when first needed, so a process that serves one request at a time keeps one.

    Args:
        path: str. The `.tflite` file.
        signature: str. The signature to run (`serving_ids`).
        num_threads: int. Threads of each interpreter (XNNPACK), fixed.
        max_interpreters: int. Interpreters kept (see the module docstring); with
            `num_threads`, default one per `num_threads` cores, so that requests in
            flight together do not ask for more threads than there are cores.
    """

    def __init__(self, path, signature="serving_ids", num_threads=None,
                 max_interpreters=None):
        self.path, self.signature = path, signature
        self._interpreter = _interpreter_class()
        n = cores()
        if num_threads is None and max_interpreters is None and n > 1:
            self.num_threads = n
            self.pools = (InterpreterPool(lambda: self._make(n), 1),
                          InterpreterPool(lambda: self._make(1), n))
        else:
            self.num_threads = num_threads or n
            size = max_interpreters or max(1, n // self.num_threads)
            self.pools = (InterpreterPool(lambda: self._make(self.num_threads), size),)
        self._in_flight = 0
        self._count = threading.Lock()
        with self.pools[0].checkout() as runners:  # a bad file fails at load, not per request
            self.signatures = tuple(runners)
            self._inputs = {name: sorted(runner.get_input_details())
                            for name, runner in runners.items()}
            self.input_names = self._inputs[signature]
            self.output_names = sorted(runners[signature].get_output_details())

    def input_names_of(self, signature):
        """The inputs of one of the file's `signatures`."""
        return self._inputs[signature]

    @property
    def made(self):
        """Interpreters made so far."""
        return sum(pool.made for pool in self.pools)

    def _make(self, num_threads):
        """A new interpreter's signature runners ({name: runner}: `signature` and the
        file's others), each run once on a tiny input: TF Lite applies XNNPACK on the
        first run, and prints "INFO: Created TensorFlow Lite XNNPACK delegate for CPU."
        then (once per process), which is kept off the console; and a request does not
        pay for it."""
        with warnings.catch_warnings(), CapturedStderr():
            warnings.simplefilter("ignore")  # tf.lite.Interpreter's deprecation notice
            interpreter = self._interpreter(model_path=self.path, num_threads=num_threads)
            names = [self.signature] + sorted(set(interpreter.get_signature_list()) -
                                              {self.signature})
            runners = {name: interpreter.get_signature_runner(name) for name in names}
            for runner in runners.values():
                runner(**{name: np.zeros([1] * (len(detail["shape"]) - 1) + [2],
                                         detail["dtype"])
                          for name, detail in runner.get_input_details().items()})
        return runners

    def __call__(self, inputs, signature=None):
        """{input name: array} -> {output name: array} (copies: the interpreter goes
        back to its pool), by `signature` (default the runner's own)."""
        with self._count:
            alone = self._in_flight == 0
            self._in_flight += 1
        try:
            pool = self.pools[0] if alone or len(self.pools) == 1 else self.pools[1]
            with pool.checkout() as runners:
                outputs = runners[signature or self.signature](**inputs)
                return {name: np.array(value) for name, value in outputs.items()}
        finally:
            with self._count:
                self._in_flight -= 1


class SavedModelRunner:
    """A SavedModel's signature, loaded with TensorFlow on first use, from any thread.

    TensorFlow is imported then (oneDNN as decided before, from the cached answer only:
    no measurement), with `tensorflow_text` for the raw-text signatures' ops; the lines
    TensorFlow's C++ side prints while it starts and loads are kept off the console.
    """

    def __init__(self, export_dir, signature):
        self.export_dir, self.signature_name = export_dir, signature
        self._loaded = self._signature = None
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._signature is None:
                self._loaded = _load_saved_model(self.export_dir, self.signature_name)
                self._signature = self._loaded.signatures[self.signature_name]
        return self._signature

    @property
    def loaded(self):
        """True once the SavedModel is loaded."""
        return self._signature is not None

    @property
    def input_names(self):
        return sorted(self._load().structured_input_signature[1])

    def __call__(self, inputs):
        import tensorflow as tf
        signature = self._load()
        specs = signature.structured_input_signature[1]
        return {name: value.numpy() for name, value in signature(**{
            name: tf.constant(value, specs[name].dtype) for name, value in inputs.items()
        }).items()}


def _load_saved_model(export_dir, name):
    from common import onednn
    onednn.decide(measure_now=False)
    # TensorFlow's start-up and loader lines are written to file descriptor 2 by C++.
    with CapturedStderr():
        import tensorflow as tf
        try:
            import tensorflow_text  # noqa: F401  (the raw-text signatures' ops)
        except ImportError:
            if name == "serving_default":
                raise ValueError(f"{export_dir}: its raw-text signature needs "
                                 f"tensorflow-text (pip install -r requirements.txt)."
                                 ) from None
        loaded = tf.saved_model.load(export_dir)
    if name not in loaded.signatures:
        raise ValueError(f"{export_dir}: no {name} signature.")
    return loaded
