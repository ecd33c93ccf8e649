"""What this CPU is and what it can do: its model name and feature flags, and whether it
multiplies bfloat16 matrices natively (AVX512_BF16 or AMX).

Pipeline position: read before any computation, to choose how to compute (oneDNN on or
off, float32 or bfloat16); imports no TensorFlow.
"""

import platform

# Feature flags (Linux /proc/cpuinfo names) of native bfloat16 matrix products; without
# them the CPU has no bfloat16 instructions for TensorFlow to run bfloat16 products on.
BFLOAT16_FLAGS = ("avx512_bf16", "amx_bf16")


def identity(cpuinfo="/proc/cpuinfo"):
    """(model name, feature flags) of the first processor listed in `cpuinfo` (Linux);
    without that file, the platform's processor name and no flags."""
    fallback = platform.processor() or platform.machine()
    model, flags = fallback, ""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model == fallback:
                    model = value.strip()
                elif key == "flags" and not flags:
                    flags = value.strip()
    except OSError:
        pass
    return model, flags


def native_bfloat16(flags=None):
    """The flag that gives this CPU (or the given flags string) native bfloat16 matrix
    products, or None."""
    present = set((identity()[1] if flags is None else flags).split())
    return next((flag for flag in BFLOAT16_FLAGS if flag in present), None)
