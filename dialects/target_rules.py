"""The one rule of a target's fields (what the loop level and code generation build for), free of xDSL: the
attribute `#cvmc.target<...>` (`dialects.cvmc.TargetAttr`) verifies with it, and so does the plain-data
`passes.loops.target.Target`, which a warm `load_model` imports without xDSL."""

from __future__ import annotations

import re

TIERS = ("generic", "avx2", "avx512-vnni", "amx")  # the x86 ISA tiers, each implying those before it
VECTOR_BYTES = (16, 32, 64)  # float vector registers the cinn micro-kernels block for: SSE, AVX2, AVX-512
MIN_ARCH = 61  # the first GPU architecture with `__dp4a` (compute capability 6.1)
_ARCH = re.compile(r"sm_([0-9]{2,3})a?")
_CPU_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]*")  # LLVM's CPU names: x86-64-v3, znver3, sapphirerapids
_FEATURE = re.compile(r"[+-][a-z0-9][a-z0-9_.-]*")  # one of LLVM's features on or off: +avx2, -amx-int8, +sse4.1
_CPU_DEFAULTS = ("avx2", True, False, "", "", 32)  # (tier, mmk, emulated, cpu, features, vector_bytes)


def target_error(tier: str, gpu: str | None, mmk: bool, emulated: bool, cpu: str, features: str,
                 vector_bytes: int) -> str | None:
    """What is wrong with a target (`TargetAttr`, and `passes.loops.target.Target`, which call this one rule), or
    None: `gpu` None for an x86 CPU of ISA tier `tier` (in TIERS), `cpu` the LLVM CPU code generation compiles for
    ("": this machine's), `features` LLVM's "+a,-b" list ("": the CPU's own), `vector_bytes` in VECTOR_BYTES;
    `gpu` "any" or "sm_NN" (NN >= MIN_ARCH, two or three digits) for a CUDA GPU, which has no CPU field."""
    if gpu is not None:
        m = _ARCH.fullmatch(gpu)
        if gpu != "any" and (m is None or int(m[1]) < MIN_ARCH):
            return f"expected 'arch' any or sm_NN (NN >= {MIN_ARCH}, two or three digits), got {gpu!r}"
        if (tier, mmk, emulated, cpu, features, vector_bytes) != _CPU_DEFAULTS:
            return (f"expected no CPU field on a cuda target, got tier {tier!r}, mmk {mmk}, emulated {emulated}, "
                    f"cpu {cpu!r}, features {features!r}, vector_bytes {vector_bytes}")
        return None
    if tier not in TIERS:
        return f"expected 'tier' in {', '.join(TIERS)}, got {tier!r}"
    if cpu and not _CPU_NAME.fullmatch(cpu):
        return f"expected 'cpu' an LLVM CPU name (lowercase letters, digits, '_', '.', '-') or empty, got {cpu!r}"
    bad = [f for f in features.split(",") if not _FEATURE.fullmatch(f)] if features else []
    if bad:
        return f"expected 'features' a list of +name and -name joined by commas, got {bad[0]!r} in {features!r}"
    if vector_bytes not in VECTOR_BYTES:
        return f"expected 'vector_bytes' in {', '.join(map(str, VECTOR_BYTES))}, got {vector_bytes}"
    return None
