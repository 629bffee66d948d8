"""The known-answer check of a CPU tier: the devices call it once the target is chosen (`runtime.driver.target`), never
the other way round (choosing a target compiles nothing).

    target = checked_jit_target()     # this host's target (`target.jit_target`), its tier checked on this CPU

A consensus engine must never give other bytes because of an instruction nobody ran on this CPU: the first time
a process builds for a tier's kernels, `trusted_target` runs a small fixed model through them and through the
reference interpreter, the executable spec, and compares. A difference disables the tier for the process, with
one warning naming it, and the model is built for the next tier down.

The check model's code is cached like any model's (`cpu.compile_lowered`: one sealed entry, named by the tier and
the compiler, `known_answer_key`), with the check's input and the reference's heads beside it: a warm process
loads its kernels and runs them on this CPU, as the C library does with the check object it carries, and builds,
lowers and compiles nothing. The kernels still run in every process, once a tier. A cold check (an empty cache, a
new cvmc) with two or more compile threads compiles its kernels on a thread of its own while the device compiles
the model for the detected tier (`speculative_target`); the device builds again where the check refuses it.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from cvmc.passes.loops.target import ISAS, Target
from cvmc.runtime.driver.target import jit_target

if TYPE_CHECKING:
    import numpy as np

    from cvmc.runtime.frontend.graph import Graph

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


def known_answer_key(target: Target) -> str:
    """The cache name of the check model compiled for `target`: the model is fixed by this file, one of cvmc's
    sources (`compiled.source_digest`), so the name needs no graph, and a warm check builds none."""
    from cvmc.runtime.engine.compiled import compiler_key

    return compiler_key("known-answer", str(target))


Runs = tuple[list["np.ndarray"], list["np.ndarray"]]


def _start_check(isa: str, background: bool | None = False) -> tuple[Callable[[], Runs], bool]:
    """Start the check of tier `isa`; the function returned gives the heads of its kernels on the check input
    and the reference's. Warm: the kernels, the input and the reference's heads from the check model's sealed
    entry (written with them by a cold check), run here. Cold: the model built, the reference run and the model
    lowered here, then its kernels compiled, its entry written and its kernels run, on a thread of its own when
    `background` (that part is LLVM's, without Python's lock: it overlaps the caller's own compile; None: when
    there are two compile threads or more). The flag returned says whether a thread was started."""
    import numpy as np

    from cvmc.runtime.devices.cpu import compile_lowered, load_compiled

    target = Target(isa)
    key = known_answer_key(target)
    runner = load_compiled(key, target, threads=1)
    if runner is not None:
        x, shapes = runner.extras.get("input"), [tuple(v.shape) for v in runner.program.heads]
        names = [f"head{i}" for i in range(len(shapes))]
        if x is not None and runner.program.input_shape == x.shape and len(runner.extras) == len(shapes) + 1 \
                and all(n in runner.extras and runner.extras[n].shape == s for n, s in zip(names, shapes)):
            done = runner(np.asarray(x, np.int32)), [runner.extras[n] for n in names]
            return (lambda: done), False
    from cvmc.runtime.driver.compile import lower_to_llvm
    from cvmc.runtime.references.cvm import run_graph

    graph, x = known_answer_graph(), known_answer_input()
    want = run_graph(graph, x)
    extras = {"input": x.astype(np.int32), **{f"head{i}": h.astype(np.int32) for i, h in enumerate(want)}}
    program, ir_text, specs, _ = lower_to_llvm(graph, target)

    def finish() -> Runs:
        return compile_lowered(program, ir_text, specs, target, 1, key, extras)(x), want

    if background is None:
        from cvmc.runtime.engine.llvm_compile import compile_threads

        background = compile_threads() >= 2
    if not background:
        done = finish()
        return (lambda: done), False
    answer: list[Runs | BaseException] = []

    def work() -> None:
        try:
            answer.append(finish())
        except BaseException as e:  # raised on the caller's thread
            answer.append(e)

    thread = threading.Thread(target=work, name=f"cvmc-known-answer-{isa}", daemon=True)
    thread.start()

    def join() -> Runs:
        thread.join()
        if isinstance(answer[0], BaseException):
            raise answer[0]
        return answer[0]

    return join, True


def _settle(isa: str, runs: Callable[[], Runs]) -> bool:
    """Record tier `isa`'s answer (the caller holds `_CHECK_LOCK`), with one warning when its bytes differ."""
    import numpy as np

    got, want = runs()
    _CHECKED[isa] = all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    if not _CHECKED[isa]:
        warnings.warn(f"cvmc: the {isa} kernels gave other bytes than the reference on the known-answer model on "
                      f"this CPU ({host_cpu_name()}): {isa} is disabled for this process, models are built for the "
                      "next tier down", RuntimeWarning, stacklevel=3)
    return _CHECKED[isa]


def check_tier(isa: str) -> bool:
    """Whether tier `isa`'s kernels give the reference's bytes on the known-answer model (run once a process per
    tier; later calls return the first answer). The kernels come from the cache when a process compiled them
    before; either way they run here, on this CPU."""
    with _CHECK_LOCK:
        if isa not in _CHECKED:
            _settle(isa, _start_check(isa)[0])
        return _CHECKED[isa]


def speculative_target() -> tuple[Target, Callable[..., Target] | None]:
    """This host's target to build for now, and None when it is checked already (or its check is warm: a load
    and a run, done here). Else, with more than one compile thread, the detected target and `settle()`, which
    waits for the check started here (its LLVM part on a thread of its own, beside the caller's compile) and
    returns the checked target: the caller builds for the first, and again for the second where they differ (a
    tier refused: rare). `settle(quiet=True)` only waits (the caller is failing)."""
    target = jit_target()
    if target.gpu is not None or target.emulated or target.isa not in _CHECKED_TIERS:
        return trusted_target(target), None
    with _CHECK_LOCK:
        runs = None
        if target.isa not in _CHECKED:
            runs, background = _start_check(target.isa, background=None)
            if not background:  # warm, or one compile thread: done here
                _settle(target.isa, runs)
                runs = None
    if runs is None:
        return trusted_target(target), None

    def settle(quiet: bool = False) -> Target:
        try:
            done = runs()  # joins the thread, whatever else happened meanwhile
        except BaseException:
            if quiet:
                return target
            raise
        if quiet:
            return target
        with _CHECK_LOCK:
            if target.isa not in _CHECKED:  # (another thread may have checked the tier meanwhile)
                _settle(target.isa, lambda: done)
        return trusted_target(target)

    return target, settle


def trusted_target(target: Target) -> Target:
    """`target` with its tier lowered until its kernels pass the known-answer check (`check_tier`); an emulated
    target (portable IR) and the generic tier use no instruction of their own."""
    while target.gpu is None and not target.emulated and target.isa in _CHECKED_TIERS:
        if check_tier(target.isa):
            return target
        target = replace(target, isa=ISAS[ISAS.index(target.isa) - 1])
    return target


def checked_jit_target(target: Target | None = None) -> Target:
    """`target` as the caller gave it (not checked: the caller insists), else this host's (`target.jit_target`,
    with the environment's overrides) after its tier's known-answer check."""
    return jit_target(target) if target is not None else trusted_target(jit_target())


def host_cpu_name() -> str:
    from cvmc.runtime.driver.target import host_target

    return host_target()[1]
