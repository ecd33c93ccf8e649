"""What a benchmark table must say about the machine it ran on: the CPU model, its
vector ISA, the core count and TensorFlow's oneDNN state (TensorFlow's defaults differ
by CPU: oneDNN is off on AMD unless turned on)."""

import os

from common import cpu  # noqa: E402


def cpu_model():
    return cpu.identity()[0] or "unknown CPU"


def isa():
    """The widest vector extensions the CPU has (AVX-512 subsets, AMX, AVX2, FMA)."""
    flags = cpu.identity()[1].split()
    if not flags:
        return "unknown ISA"
    wanted = ("avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "avx_vnni", "avx2", "fma")
    have = [f for f in wanted if f in flags]
    return ", ".join(have) or "no AVX2"


def set_onednn(mode):
    """`auto` decides as the entry points do (`common.onednn`: measured once, cached);
    `on` / `off` force it. Call before TensorFlow is imported."""
    from common import onednn
    if mode == "auto":
        onednn.decide(log=print)
    else:
        os.environ[onednn.ENV] = "1" if mode == "on" else "0"


def describe(threads=None):
    """One line for a table's caption; imports TensorFlow (call after deciding oneDNN)."""
    import tensorflow as tf

    from common import onednn
    return (f"CPU: {cpu_model()} ({isa()}), {os.cpu_count()} cores"
            + (f", {threads} threads" if threads else "")
            + f"; TensorFlow {tf.__version__}, oneDNN {'on' if onednn.state() else 'off'}"
            f" ({onednn.ENV}={os.environ.get(onednn.ENV, 'unset')})")
