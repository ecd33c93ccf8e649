"""Writing documents (one sentence per line, a blank line between documents) spread over
several output files, each written under a temporary name and renamed when complete.

Pipeline position: the output of `extract_wikipedia` and `extract_bookcorpus`, the input
of `build_vocab` and `create_pretraining_data`.
"""

import os

import tensorflow as tf

from common import file_io


class DocumentWriter:
    """`with DocumentWriter(dir, prefix, n) as w: w.write(sentences)`; documents go to the
    file with the fewest bytes so far, so the files end up about the same size."""

    def __init__(self, output_dir, prefix, num_files, inputs=None):
        """`inputs`: {flag: paths} the run reads, which no output may overwrite."""
        self.paths = [os.path.join(output_dir, f"{prefix}-{i:05d}-of-{num_files:05d}.txt")
                      for i in range(num_files)]
        file_io.refuse_inputs_as_outputs({"output_dir": self.paths}, inputs or {})
        self.output_dir = output_dir
        self.sizes = [0] * num_files
        self.documents = 0
        self.sentences = 0

    def __enter__(self):
        self._files = []
        try:
            tf.io.gfile.makedirs(self.output_dir)
            self._publish = file_io.atomic_paths(self.paths)
            temps = self._publish.__enter__()
            self._files = [tf.io.gfile.GFile(tmp, "wb") for tmp in temps]
        except (tf.errors.OpError, OSError) as e:
            self.__exit__(type(e), e, None)
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
            if exc_type is None:
                f.write(b"")  # a file no document went to (fewer documents than files)
                f.flush()     # is published empty: GFile creates a file at its first flush
            f.close()
        publish = getattr(self, "_publish", None)
        if publish is not None:
            self._publish = None
            publish.__exit__(exc_type, exc, tb)  # all files published, or none
        return False
