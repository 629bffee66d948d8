"""The one place that looks at the machine and the environment to choose what the loop level is built for.

`detect_target(device)` is called at the API and tool boundary (`cvmc.runtime.devices.cpu.lower_graph`, the `cuda`
device, `cvm-aot build`, `--dump`, `cvm-run`); the passes only ever see the `Target` it returns (`loops.target`).

For the CPU: the width of its float vector registers (`host_vector_bytes`, the cinn kernels' blocking), and the
highest ISA tier the host has (`host_isa`: "avx512-vnni" with AVX512-VNNI and AVX512-BW, "avx2"
with AVX2, else "generic"; "amx" above them where the CPU has AMX-INT8 and Linux grants the process its tiles),
then the documented overrides, in this order:
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

from cvmc.passes.loops.target import GPU, ISAS, Target

# The kind of the cache entry that keeps LLVM's answer about this machine (`host_target`).
HOST_KIND = "host"
_HOST_MAGIC = "cvmc-host-1"


def _machine_identity() -> bytes | None:
    """What LLVM's answer about this machine depends on, read without LLVM: the first CPU's block of
    /proc/cpuinfo (vendor, family, model, stepping, microcode, flags; not the clock, which moves), the kernel's
    release, and llvmlite's files as they are on disk (its version file and its library: their sizes and times,
    the rule Python keeps for its own compiled files). None where one of them cannot be read (not Linux)."""
    import importlib.util

    try:
        with open("/proc/cpuinfo", "rb") as f:
            block = f.read(1 << 16).split(b"\n\n", 1)[0]
        spec = importlib.util.find_spec("llvmlite")
        if spec is None or spec.origin is None or not block:
            return None
        here = os.path.dirname(spec.origin)
        files = [os.path.join(here, "_version.py"),
                 *sorted(os.path.join(here, "binding", n) for n in os.listdir(os.path.join(here, "binding"))
                         if n.startswith("libllvmlite"))]
        stats = [f"{p}\0{st.st_size}\0{st.st_mtime_ns}" for p, st in ((p, os.stat(p)) for p in files)]
    except (OSError, ImportError, ValueError):
        return None
    lines = [line for line in block.splitlines() if not line.startswith((b"cpu MHz", b"bogomips"))]
    return b"\n".join([_HOST_MAGIC.encode(), os.uname().release.encode(), *map(str.encode, stats), *lines])


def _llvm_host() -> tuple[str, str, str, str, str]:
    import llvmlite
    import llvmlite.binding as llvm

    return (llvm.get_process_triple(), llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten(),
            llvmlite.__version__, ".".join(map(str, llvm.llvm_version_info)))


@cache
def host_target() -> tuple[str, str, str, str, str]:
    """(triple, CPU name, CPU features, llvmlite's version, LLVM's version) as LLVM gives them on this machine.

    Asked of LLVM once a machine: the answer is kept in the cache (`cache.Cache`, sealed like every entry, kind
    "host") under a hash of `_machine_identity`, so that a warm process knows its CPU as LLVM names it (the
    tier, the cache's keys) without importing LLVM. An entry that fails its seal or its form is deleted
    or ignored, and LLVM asked again."""
    import hashlib
    import json

    identity = _machine_identity()
    store = None
    if identity is not None:
        from cvmc.runtime.engine.cache import open_cache

        store = open_cache()
    name = hashlib.sha256(identity).hexdigest() if identity is not None else ""
    if store is not None:
        entry = store.get(name, HOST_KIND)
        try:
            answer = json.loads(entry) if entry is not None else None
        except ValueError:
            answer = None
        if isinstance(answer, list) and len(answer) == 6 and answer[0] == _HOST_MAGIC and \
                all(isinstance(a, str) for a in answer[1:]):
            return tuple(answer[1:])  # type: ignore[return-value]
    answer = _llvm_host()
    if store is not None:
        store.put(name, HOST_KIND, json.dumps([_HOST_MAGIC, *answer]).encode())
    return answer


@cache
def host_features() -> frozenset[str]:
    """The host CPU's features as LLVM names them (those it has: `host_target`), empty where LLVM cannot say."""
    try:
        features = host_target()[2]
    except (ImportError, RuntimeError):
        return frozenset()
    return frozenset(f[1:] for f in features.split(",") if f.startswith("+"))


def host_isa() -> str:
    """The highest tier of `loops.target.ISAS` built for this CPU by default: "amx" where the CPU has AMX-INT8
    and Linux grants this process the tile state (measured bit-exact and faster than the VNNI tier on an Emerald
    Rapids, 2026-11-26; the known-answer check still runs first in every process)."""
    features = host_features()
    if {"avx512vnni", "avx512bw"} <= features:
        return "amx" if amx_permitted() else "avx512-vnni"
    return "avx2" if "avx2" in features else "generic"


def host_vector_bytes() -> int:
    """The width of this CPU's float vector registers that the cinn path's micro-kernels block for: 64 with
    AVX-512 (32 zmm registers), else 32 (16 ymm)."""
    return 64 if "avx512f" in host_features() else 32


def amx_permitted() -> bool:
    """Whether this process may use AMX tiles: the CPU has AMX-INT8 (`host_features`, asked anew each call, so
    that an answer about other features never stands for this one) and Linux grants the tile state
    (`amx_granted`)."""
    return {"amx-int8", "amx-tile"} <= host_features() and amx_granted()


@cache
def amx_granted() -> bool:
    """Whether Linux grants this process the AMX tile data state, asked once a process (arch_prctl
    ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18); call it only where the CPU has AMX."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syscall(158, 0x1023, 18) == 0  # SYS_arch_prctl on x86-64
    except (OSError, AttributeError):
        return False


def host_has(isa: str) -> bool:
    """Whether this CPU (and process, for AMX) runs tier `isa`'s instructions."""
    if isa == "amx":
        return host_has("avx512-vnni") and amx_permitted()
    return ISAS.index(host_isa()) >= ISAS.index(isa)


def detect_target(device: str = "cpu") -> Target:
    """What to build for `device` on this machine, with the environment's overrides (see the module docstring);
    a ValueError names a bad override."""
    if device == "cuda":
        return GPU
    target = Target(isa=host_isa(), vector_bytes=host_vector_bytes())
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
    its tier (its kernels would not run here) or an override is bad. The detected tier is not yet checked: the
    devices take it through `runtime.devices.known_answer.checked_jit_target`, which runs the tier's known-answer check
    (that check compiles and runs a model, so it lives above the target's choice, not here)."""
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
