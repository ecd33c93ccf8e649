"""Writing files so that nothing is ever left half-written under its final name.

Pipeline position: every stage that writes something a user keeps (configs, checkpoints,
feature files) writes to a temporary name in the same folder, then renames.
"""

import contextlib
import os
import tempfile

import tensorflow as tf


def _is_local(path):
    return "://" not in str(path)


@contextlib.contextmanager
def atomic_output(path, mode="w", encoding="utf-8"):
    """Opens a temporary file beside `path` and renames it to `path` on success.

    On an exception the temporary file is removed and `path` is left as it was. Remote
    paths (gs://, ...) go through `tf.io.gfile`, whose rename is the store's own.
    """
    path = str(path)
    directory = os.path.dirname(path) or "."
    if _is_local(path):
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-" + os.path.basename(path) + "-",
                                   dir=directory)
        os.close(fd)
        try:
            with open(tmp, mode, encoding=None if "b" in mode else encoding) as f:
                yield f
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.remove(tmp)
            raise
    else:
        tf.io.gfile.makedirs(directory)
        tmp = f"{path}.tmp-{os.getpid()}"
        try:
            with tf.io.gfile.GFile(tmp, mode) as f:
                yield f
            tf.io.gfile.rename(tmp, path, overwrite=True)
        except BaseException:
            with contextlib.suppress(Exception):
                tf.io.gfile.remove(tmp)
            raise


def atomic_write_text(path, text):
    with atomic_output(path, "w") as f:
        f.write(text)


def checkpoint_files(prefix):
    """The files of a TF checkpoint written at `prefix` (index last)."""
    data = tf.io.gfile.glob(f"{prefix}.data-*")
    return sorted(data) + [f"{prefix}.index"]


def publish_checkpoint(tmp_prefix, prefix):
    """Renames the files of a checkpoint written at `tmp_prefix` to `prefix`.

    The data shards move first and the index last: a reader looks a checkpoint up by its
    index, so until the last rename the old checkpoint (if any) is what it finds.
    """
    for src in checkpoint_files(tmp_prefix):
        dst = prefix + src[len(tmp_prefix):]
        tf.io.gfile.rename(src, dst, overwrite=True)
