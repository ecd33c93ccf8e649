"""What TensorFlow writes to stderr while it is imported, on this machine.

The lines differ by CPU and drivers: a oneDNN notice on Intel CPUs where TensorFlow turns
it on, none on AMD; a CUDA-driver notice on machines without a GPU; a CPU-features notice
only where the binary lacks some of the CPU's instructions. Tests that check the quiet
console ask a plain `import tensorflow` in a fresh process which lines to expect, with the
level `common.quiet` sets, instead of naming one of them.
"""

import functools
import os
import re
import subprocess
import sys

_ABSL_PREFIX = re.compile(r"^[IWEF]\d{4} [\d:.]+ +\d+ [\w.]+:\d+\] ")


@functools.lru_cache(maxsize=None)
def tensorflow_startup_messages():
    """The text of each line a plain `import tensorflow` writes to stderr (absl's time,
    thread and file prefix cut off, since they differ between processes)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", "import tensorflow"], env=env,
                            capture_output=True, text=True, timeout=300, check=True)
    messages = (_ABSL_PREFIX.sub("", line).strip() for line in result.stderr.splitlines())
    return tuple(m for m in messages if m)
