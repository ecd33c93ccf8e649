"""Writing documents (one sentence per line, a blank line between documents) spread over
several output files, each written under a temporary name and renamed when complete.

Pipeline position: the output of `extract_wikipedia` and `extract_bookcorpus`, the input
of `build_vocab` and `create_pretraining_data`.
"""

import os

import tensorflow as tf

from data_prep.pretraining_records import temporary_name


class DocumentWriter:
    """`with DocumentWriter(dir, prefix, n) as w: w.write(sentences)`; documents go to the
    file with the fewest bytes so far, so the files end up about the same size."""

    def __init__(self, output_dir, prefix, num_files):
        self.paths = [os.path.join(output_dir, f"{prefix}-{i:05d}-of-{num_files:05d}.txt")
                      for i in range(num_files)]
        self.output_dir = output_dir
        self.sizes = [0] * num_files
        self.documents = 0
        self.sentences = 0

    def __enter__(self):
        try:
            tf.io.gfile.makedirs(self.output_dir)
            self._files = [tf.io.gfile.GFile(temporary_name(p), "wb") for p in self.paths]
        except (tf.errors.OpError, OSError) as e:
            raise ValueError(f"{self.output_dir}: cannot write the output folder ({e}).") \
                from e
        return self

    def write(self, sentences):
        if not sentences:
            return
        i = self.sizes.index(min(self.sizes))
        data = ("\n".join(sentences) + "\n\n").encode("utf-8")
        self._files[i].write(data)
        self.sizes[i] += len(data)
        self.documents += 1
        self.sentences += len(sentences)

    def __exit__(self, exc_type, exc, tb):
        for f in self._files:
            f.close()
        for path in self.paths:
            tmp = temporary_name(path)
            if exc_type is None:
                tf.io.gfile.rename(tmp, path, overwrite=True)
            elif tf.io.gfile.exists(tmp):
                tf.io.gfile.remove(tmp)
        return False
