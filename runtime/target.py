"""The one place that looks at the machine and the environment to choose what the loop level is built for.

`detect_target(device)` is called at the API and tool boundary (`cvmc.runtime.cpu.lower_graph`, the `cuda` device,
`cvm-aot build`, `--dump`, `cvm-run`); the passes only ever see the `Target` it returns (`loops.target`).

For the CPU: the highest ISA tier the host has (`host_isa`: "avx512-vnni" with AVX512-VNNI and AVX512-BW, "avx2"
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
import threading
import warnings
from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING

from cvmc.passes.loops.target import GPU, ISAS, Target

if TYPE_CHECKING:
    import numpy as np

    from cvmc.runtime.graph import Graph


@cache
def host_features() -> frozenset[str]:
    """The host CPU's features as LLVM names them (those it has), empty where LLVM cannot say."""
    try:
        import llvmlite.binding as llvm

        return frozenset(name for name, on in llvm.get_host_cpu_features().items() if on)
    except (ImportError, RuntimeError):
        return frozenset()


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

    detected = target is None
    if target is None:
        try:
            target = detect_target()
        except ValueError as e:
            raise CVMLogicError(str(e)) from None
    missing = missing_tier(target)
    if missing is not None:
        raise CVMLogicError(f"expected a target this CPU runs, got {target} (from $CVMC_ISA, $CVMC_VNNI, $CVMC_AVX2 "
                            f"or the caller): this CPU has no {missing}, its kernels would not run here")
    return trusted_target(target) if detected else target


# ---- the known-answer check -----------------------------------------------------------------------------------
#
# A consensus engine must never give other bytes because of an instruction nobody ran on this CPU: the first time
# a process builds for a tier's kernels, `trusted_target` runs a small fixed model through them (compiled for
# that tier alone, afresh: nothing from the cache) and through the reference interpreter, the executable spec,
# and compares. A difference disables the tier for the process, with one warning naming it, and the model is
# built for the next tier down. Its cost: one compile of the model (4 kernels; 0.3 s on a loaded 2-core Zen 5)
# and a reference run, once a process.

_CHECKED: dict[str, bool] = {}  # tier -> whether its kernels gave the reference's bytes in this process
_CHECK_LOCK = threading.Lock()
_CHECKED_TIERS = ("amx", "avx512-vnni", "avx2")  # the tiers whose kernels use their own instructions


def known_answer_graph() -> Graph:
    """The fixed model of the check: it takes each u8 x s8 kernel of the tiers: relu'd data through a conv2d
    (the blocked micro-kernel; 8 channels x 8 columns: the tiled pack of its input) whose output the next conv2d
    reads packed (the epilogue pack; 20 output channels: a partial block), and the signed input through a dense
    (`cvmc.dot_u8s8` with AVX512-VNNI), its weights and data reaching +-127."""
    import numpy as np

    from cvmc.runtime.builder import CvmBuilder

    rng = np.random.default_rng(20261126)

    def values(shape: tuple[int, ...]) -> np.ndarray:
        a = rng.integers(-127, 128, size=shape).astype(np.int32)
        a.reshape(-1)[:2] = (127, -127)
        return a

    b = CvmBuilder()
    x = b.create_input([1, 8, 6, 8], 8)
    y = b.conv2d(b.relu(x), b.create_param(values((16, 8, 3, 3)), 8), b.create_param(values((16,)), 8),
                 channels=16, kernel_size=(3, 3), padding=(1, 1), use_bias=True)
    y = b.relu(b.cvm_right_shift(y, precision=8, shift_bit=7))
    y = b.conv2d(y, b.create_param(values((20, 16, 3, 3)), 8), channels=20, kernel_size=(3, 3), padding=(1, 1),
                 use_bias=False)
    y = b.cvm_right_shift(y, precision=8, shift_bit=9)
    d = b.dense(b.flatten(x), b.create_param(values((24, 384)), 8), units=24, use_bias=False)
    return b.graph([y, d])


def known_answer_input() -> np.ndarray:
    import numpy as np

    x = np.random.default_rng(11262026).integers(-127, 128, size=(1, 8, 6, 8)).astype(np.int32)
    x.reshape(-1)[:2] = (127, -127)
    return x


def check_tier(isa: str) -> bool:
    """Whether tier `isa`'s kernels give the reference's bytes on the known-answer model (run once a process per
    tier; later calls return the first answer)."""
    with _CHECK_LOCK:
        if isa not in _CHECKED:
            import numpy as np

            from cvmc.runtime.cpu import compile_graph
            from cvmc.runtime.reference import run_graph

            graph, x = known_answer_graph(), known_answer_input()
            got = compile_graph(graph, threads=1, cache=False, target=Target(isa))(x)  # compiled afresh
            want = run_graph(graph, x)
            _CHECKED[isa] = all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
            if not _CHECKED[isa]:
                warnings.warn(f"cvmc: the {isa} kernels gave other bytes than the reference on the known-answer "
                              f"model on this CPU ({host_target_name()}): {isa} is disabled for this process, models "
                              "are built for the next tier down", RuntimeWarning, stacklevel=2)
        return _CHECKED[isa]


def trusted_target(target: Target) -> Target:
    """`target` with its tier lowered until its kernels pass the known-answer check (`check_tier`); an emulated
    target (portable IR) and the generic tier use no instruction of their own."""
    while target.gpu is None and not target.emulated and target.isa in _CHECKED_TIERS:
        if check_tier(target.isa):
            return target
        target = replace(target, isa=ISAS[ISAS.index(target.isa) - 1])
    return target


def host_target_name() -> str:
    from cvmc.runtime.jit import host_target

    return host_target()[1]
