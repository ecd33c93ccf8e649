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


# The head of a two-processor /proc/cpuinfo as Linux prints it (tabs before the colons).
CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9454 48-Core Processor
flags\t\t: {zen4}
bugs\t\t: sysret_ss_attrs

processor\t: 1
vendor_id\t: AuthenticAMD
model name\t: Another Name
flags\t\t: {zen3}
""".format(zen4=ZEN4, zen3=ZEN3)


def test_identity_reads_the_first_processor(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    assert cpu.identity(str(path)) == ("AMD EPYC 9454 48-Core Processor", ZEN4)


def test_identity_without_cpuinfo_names_the_platform(tmp_path):
    model, flags = cpu.identity(str(tmp_path / "missing"))
    assert model and flags == ""  # a name on every platform, no flags to read


def test_identity_of_this_machine():
    model, _ = cpu.identity()
    assert model  # a name on every platform
