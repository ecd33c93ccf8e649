"""File access for the data stages: local paths through the standard library, remote ones
(gs://, s3://, hdfs://) through `tf.io.gfile`, imported only then.

Pipeline position: under every data_prep reader. Keeping TensorFlow out of the parent
process of `create_pretraining_data --mode=fast` lets its workers start at once (each
imports TensorFlow itself; importing it first in the parent would serialise that cost).
"""

import glob as _glob
import os


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


def remove(path):
    if is_remote(path):
        gfile, _ = _gfile()
        gfile.remove(path)
    else:
        os.remove(path)
