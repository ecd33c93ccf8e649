"""`common.cpu`: the CPU's identity and whether it multiplies bfloat16 natively, checked
on flag lines as /proc/cpuinfo prints them (hand-copied from real CPUs)."""

from common import cpu

# AMD EPYC (Zen 4): AVX-512 with BF16; AMD EPYC (Zen 3): AVX2 only; Intel Sapphire
# Rapids: AMX (and AVX512_BF16); an Intel Skylake server: AVX-512 without BF16.
ZEN4 = "fpu sse2 avx2 fma avx512f avx512dq avx512_bf16 avx512_vnni avx512_bitalg"
ZEN3 = "fpu sse2 avx avx2 fma bmi2 sha_ni vaes"
SAPPHIRE_RAPIDS = "avx512f avx512_vnni avx512_fp16 amx_bf16 amx_tile amx_int8"
SKYLAKE = "avx2 fma avx512f avx512dq avx512cd avx512bw avx512vl"


def test_native_bfloat16_from_flags():
    assert cpu.native_bfloat16(ZEN4) == "avx512_bf16"
    assert cpu.native_bfloat16(SAPPHIRE_RAPIDS) == "amx_bf16"
    assert cpu.native_bfloat16(ZEN3) is None
    assert cpu.native_bfloat16(SKYLAKE) is None  # AVX-512 alone: no bfloat16 instructions
    assert cpu.native_bfloat16("") is None


def test_identity_of_this_machine():
    model, flags = cpu.identity()
    assert model  # a name on every platform
    assert cpu.native_bfloat16() == cpu.native_bfloat16(flags)
