"""File access for every stage, and the one way anything a user keeps is written.

Pipeline position: at the bottom, under every package (data_prep readers and writers,
modeling's checkpoints and configs, training's records and exports, the tasks' results).
Local paths go through the standard library; remote ones (gs://, s3://, hdfs://) through
`tf.io.gfile`, imported only then: keeping TensorFlow out of the parent process of
`create_pretraining_data --mode=fast` lets its workers start at once (each imports
TensorFlow itself; importing it first in the parent would serialise that cost).

Nothing is ever left half-written under its final name: every writer (text results,
configs, checkpoints, SavedModels, cached features, flag records, TFRecord shards and
document files) writes to `temporary_name(path)` in the same folder and `publish`es it,
through `atomic_path` (one file or folder), `atomic_paths` (a set, published together
once all are complete) or `atomic_output` (an open file).
"""

import contextlib
import glob as _glob
import os
import shutil


def is_remote(path):
    return "://" in str(path)


def _gfile():
    import tensorflow as tf
    return tf.io.gfile, tf.errors.OpError


def glob(pattern):
    if is_remote(pattern):
        gfile, _ = _gfile()
        return sorted(gfile.glob(pattern))
    return sorted(_glob.glob(pattern))


def size(path):
    """Bytes in `path`; raises OSError if it cannot be read."""
    if is_remote(path):
        gfile, op_error = _gfile()
        try:
            return gfile.stat(path).length
        except op_error as e:
            raise OSError(str(e)) from e
    return os.path.getsize(path)


def open_binary(path):
    """A binary read handle with readline/seek/tell; raises OSError if unreadable."""
    if is_remote(path):
        gfile, op_error = _gfile()
        try:
            return gfile.GFile(path, "rb")
        except op_error as e:
            raise OSError(str(e)) from e
    return open(path, "rb")


def exists(path):
    if is_remote(path):
        gfile, _ = _gfile()
        return gfile.exists(path)
    return os.path.exists(path)


def read_json_state(path, consequence):
    """The JSON object a run keeps in `path` (local or remote), or {} when there is none;
    an unreadable one is {} too, logged as "<path>: unreadable (<why>); <consequence>."."""
    import json
    if not exists(path):
        return {}
    try:
        with open_binary(path) as f:
            return json.loads(f.read())
    except (ValueError, OSError) as e:
        from absl import logging
        logging.warning("%s: unreadable (%s); %s.", path, e, consequence)
        return {}


def remove(path):
    """Removes a file or a whole folder."""
    if is_remote(path):
        gfile, _ = _gfile()
        if gfile.isdir(path):
            gfile.rmtree(path)
        else:
            gfile.remove(path)
    elif os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.remove(path)


def makedirs(directory):
    """Creates `directory` and its parents; `ValueError` naming what is in the way."""
    if is_remote(directory):
        gfile, _ = _gfile()
        gfile.makedirs(directory)
        return
    try:
        os.makedirs(directory or ".", exist_ok=True)
    except (FileExistsError, NotADirectoryError) as e:
        raise ValueError(f"{directory}: cannot create this folder: {e.filename} is a file, "
                         f"not a folder.") from e
    except OSError as e:
        raise ValueError(f"{directory}: cannot create this folder ({e.strerror}).") from e


def _resolved(path):
    path = str(path).rstrip("/")
    return path if is_remote(path) else os.path.realpath(path)


def input_files(path):
    """The files an input path stands for: itself, or for a checkpoint prefix its index
    and data files, or for a folder the folder."""
    path = str(path)
    if exists(path):
        return [path]
    return glob(glob_escape(path) + ".*")


def glob_escape(path):
    return path if is_remote(path) else _glob.escape(str(path))


def refuse_inputs_as_outputs(outputs, inputs):
    """Raises `ValueError` when an output would overwrite an input: `outputs` and `inputs`
    map a flag name to a path (or a list of paths). An output is refused when it resolves
    to an input, or when it is a folder that holds one (folders are replaced whole)."""
    def each(paths):
        return [paths] if isinstance(paths, (str, os.PathLike)) else list(paths or [])

    resolved = {}
    for flag, paths in inputs.items():
        for path in each(paths):
            for name in input_files(path) or [path]:
                resolved.setdefault(_resolved(name), (flag, name))
    for out_flag, out_paths in outputs.items():
        for out_path in each(out_paths):
            target = _resolved(out_path)
            for found, (flag, name) in resolved.items():
                if found == target or found.startswith(target + "/"):
                    raise ValueError(
                        f"--{out_flag}={out_path} would overwrite the input {name} "
                        f"(--{flag}); write the output somewhere else.")


def temporary_name(path):
    """The name `path` is written under until it is complete: hidden, in the same folder
    (so the final rename stays on one file system), and tagged with this process."""
    directory, base = os.path.split(str(path).rstrip("/"))
    return os.path.join(directory, f".tmp-{os.getpid()}-{base}")


def process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def remove_leftovers(path):
    """Removes what killed runs left while writing `path` (or, for a checkpoint prefix,
    its files): temporaries `.tmp-PID-<name>...` of processes that no longer run. A
    folder set aside by a run killed in the middle of replacing it comes back under its
    name if nothing took its place. Local paths only; returns the paths removed."""
    path = str(path).rstrip("/")
    if is_remote(path):
        return []
    directory, base = os.path.split(path)
    removed = []
    for leftover in _glob.glob(os.path.join(_glob.escape(directory or "."),
                                            f".tmp-*-{_glob.escape(base)}*")):
        pid = os.path.basename(leftover)[len(".tmp-"):].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid() or process_alive(int(pid)):
            continue
        if os.path.basename(leftover) == f".tmp-{pid}-{base}.old" and \
                not os.path.exists(path):
            os.replace(leftover, path)  # killed mid-swap: the old folder comes back
            continue
        _discard(leftover)
        removed.append(leftover)
    return removed


def publish(tmp, path):
    """Renames the complete `tmp` to `path`, replacing what was there. A folder that
    exists is first renamed aside and deleted only after the new one is in place, so
    at every moment `path` is either the old complete folder or the new one."""
    path = str(path).rstrip("/")
    if is_remote(path):
        gfile, _ = _gfile()
        if gfile.isdir(tmp):
            if gfile.exists(path):
                gfile.rmtree(path)
            gfile.rename(tmp, path)
        else:
            gfile.rename(tmp, path, overwrite=True)
        return
    if os.path.isdir(tmp) and os.path.isdir(path):
        aside = temporary_name(path) + ".old"
        os.replace(path, aside)
        os.replace(tmp, path)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.replace(tmp, path)


def _discard(tmp):
    with contextlib.suppress(Exception):
        if exists(tmp):
            remove(tmp)


@contextlib.contextmanager
def atomic_paths(paths):
    """Yields a temporary name for each of `paths` (files or folders to be written there);
    once the block has finished, every one is published under its final name. If the
    block fails, every temporary is removed and no final name is touched."""
    paths = [str(p) for p in paths]
    temps = [temporary_name(p) for p in paths]
    try:
        for path, tmp in zip(paths, temps):
            makedirs(os.path.dirname(path))
            _discard(tmp)  # a leftover of an earlier process with the same id
            remove_leftovers(path)
        yield temps
        for tmp, path in zip(temps, paths):
            publish(tmp, path)
    except BaseException:
        for tmp in temps:
            _discard(tmp)
        raise


@contextlib.contextmanager
def atomic_path(path):
    """`atomic_paths` for one file or folder: yields the temporary name to write."""
    with atomic_paths([path]) as (tmp,):
        yield tmp


@contextlib.contextmanager
def atomic_output(path, mode="w", encoding="utf-8"):
    """Opens a temporary file beside `path`; it becomes `path` when the block ends
    without an exception, and is removed otherwise (`path` left as it was)."""
    with atomic_path(path) as tmp:
        if is_remote(tmp):
            gfile, _ = _gfile()
            handle = gfile.GFile(tmp, mode)
        else:
            handle = open(tmp, mode, encoding=None if "b" in mode else encoding)
        with handle as f:
            yield f


def atomic_write_text(path, text):
    with atomic_output(path, "w") as f:
        f.write(text)


def checkpoint_files(prefix):
    """The files of a TF checkpoint written at `prefix` (index last)."""
    return glob(glob_escape(prefix) + ".data-*") + [f"{prefix}.index"]


@contextlib.contextmanager
def atomic_checkpoint(prefix):
    """Yields a temporary prefix to write a TF checkpoint at; when the block ends, its
    files are renamed to `prefix`: the old index (if any) is removed, then the new data
    shards are renamed in and the index last. A reader finds a checkpoint by its index,
    so it finds the complete old one, then none, then the complete new one; never new data
    with an old index. (Where the whole folder is the writer's own, write the folder with
    `atomic_path` instead: then the old checkpoint stays readable until the swap.) On
    failure the temporary files are removed."""
    prefix = str(prefix)
    tmp_prefix = temporary_name(prefix)
    makedirs(os.path.dirname(prefix))
    remove_leftovers(prefix)
    try:
        yield tmp_prefix
        new_files = checkpoint_files(tmp_prefix)
        # An old index must not meet new data files: it goes first, so an interruption
        # between the renames leaves no checkpoint at `prefix` rather than a broken one.
        if exists(f"{prefix}.index"):
            remove(f"{prefix}.index")
        for src in new_files:
            publish(src, prefix + src[len(tmp_prefix):])
    except BaseException:
        for src in glob(glob_escape(tmp_prefix) + ".*"):
            _discard(src)
        raise


def first_lines(files, max_lines=20000):
    """Up to `max_lines` non-blank lines from the start of `files`, as text (bytes that are
    not UTF-8 dropped): a sample for checks of the whole input (`text.casing`)."""
    lines = []
    for path in files:
        with open_binary(path) as f:
            for raw in f:
                line = raw.decode("utf-8", "ignore").strip()
                if line:
                    lines.append(line)
                    if len(lines) >= max_lines:
                        return lines
    return lines
