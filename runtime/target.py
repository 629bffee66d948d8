"""The one place that looks at the machine and the environment to choose what the loop level is built for.

`detect_target(device)` is called at the API and tool boundary (`cvmc.runtime.cpu.lower_graph`, the `cuda` device,
`cvm-aot build`, `--dump`, `cvm-run`); the passes only ever see the `Target` it returns (`cvm_loops_target`).

For the CPU: the highest ISA tier the host has (`host_isa`: "avx512-vnni" with AVX512-VNNI and AVX512-BW, "avx2"
with AVX2, else "generic"; AMX is not built yet), then the documented overrides, in this order:
- `CVMC_ISA` = generic | avx2 | avx512-vnni | amx, optionally with `-emulated` (e.g. `avx512-vnni-emulated`: the
  tier's kernels lowered in portable IR, same packing and tiling, so they run on any CPU): the tier itself;
- `CVMC_VNNI` = 0: at most avx2; 1: at least avx512-vnni (IR tests on any host; the JIT refuses to run it on a
  CPU without it);
- `CVMC_AVX2` = 0: at most generic; 1: at least avx2 (as CVMC_VNNI);
- `CVMC_MMK` = 0: no register-blocked micro-kernels (A/B comparisons).
"""

from __future__ import annotations

import os
from dataclasses import replace
from functools import cache

from cvmc.passes.cvm_loops_target import GPU, ISAS, Target


@cache
def host_features() -> frozenset[str]:
    """The host CPU's features as LLVM names them (those it has), empty where LLVM cannot say."""
    try:
        import llvmlite.binding as llvm

        return frozenset(name for name, on in llvm.get_host_cpu_features().items() if on)
    except (ImportError, RuntimeError):
        return frozenset()


def host_isa() -> str:
    """The highest tier of `cvm_loops_target.ISAS` whose kernels this CPU runs."""
    features = host_features()
    if {"avx512vnni", "avx512bw"} <= features:
        return "avx512-vnni"
    return "avx2" if "avx2" in features else "generic"


def host_has(isa: str) -> bool:
    """Whether this CPU runs tier `isa`'s instructions."""
    return ISAS.index(host_isa()) >= ISAS.index(isa)


def detect_target(device: str = "cpu") -> Target:
    """What to build for `device` on this machine, with the environment's overrides (see the module docstring);
    a ValueError names a bad override."""
    if device == "cuda":
        return GPU
    target = Target(isa=host_isa())
    isa = os.environ.get("CVMC_ISA", "").strip()
    if isa:
        emulated = isa.endswith("-emulated")
        name = isa.removesuffix("-emulated")
        if name not in ISAS:
            raise ValueError(f"expected $CVMC_ISA in {', '.join(ISAS)} (optionally -emulated), got {isa!r}")
        target = replace(target, isa=name, emulated=emulated)
    for variable, tier, below in (("CVMC_VNNI", "avx512-vnni", "avx2"), ("CVMC_AVX2", "avx2", "generic")):
        value = os.environ.get(variable)
        if value == "0":
            target = target.capped(below)
        elif value == "1" and not target.has(tier):
            target = replace(target, isa=tier)
    if os.environ.get("CVMC_MMK") == "0":
        target = replace(target, mmk=False)
    return target


def missing_tier(target: Target) -> str | None:
    """The tier of `target` this CPU lacks (its kernels would not run here), or None. An emulated tier runs on
    any CPU."""
    if target.gpu is not None or target.emulated or host_has(target.isa):
        return None
    return target.isa


def jit_target(target: Target | None = None) -> Target:
    """The target of code this process runs: `target`, else `detect_target()`; a CVMLogicError when this CPU lacks
    its tier (its kernels would not run here) or an override is bad."""
    from cvmc.errors import CVMLogicError

    if target is None:
        try:
            target = detect_target()
        except ValueError as e:
            raise CVMLogicError(str(e)) from None
    missing = missing_tier(target)
    if missing is not None:
        raise CVMLogicError(f"expected a target this CPU runs, got {target} (from $CVMC_ISA, $CVMC_VNNI, $CVMC_AVX2 "
                            f"or the caller): this CPU has no {missing}, its kernels would not run here")
    return target
