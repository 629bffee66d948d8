"""The `cpu` device: a verified graph -> cvm IR -> loop-level kernels -> LLVM (JIT) -> a runner.

    run = compile_graph(graph)
    heads = run(data)          # every head as an int32 array; `data` already saturated to its precision
    run.stats                  # compile time, kernels, calls, copies, peak buffer bytes, cache hits

The lowering (`passes/pipelines.py`, `cvm-to-loops`: views, fusion, buffer planning, then the loops) produces
kernels plus a host `@main`: the arena's size, the views of it each kernel reads and writes, and the calls in
order. `read_host` turns that function into a `HostProgram` (plain data: roots, byte shifts, layouts); the runner
allocates the arena once, resolves every call's arguments to numpy views of the arena, the params and the input
buffer, and prepares the ctypes pointers once. A run copies the input in, makes the calls (a large kernel is
split over threads, each taking a contiguous range of its outermost parallel loop: the result never depends on
it), and copies the heads out.

Caching: a model compiled before is loaded from the cache (`runtime.engine.compiled`): one sealed entry named by the
graph, the target and the compiler holds the host program and the kernels' specs, and names the kernels' object
files (the JIT's own sealed entry). A warm load lowers nothing and imports no xDSL: it reads and checks the two
entries, links the objects and prepares the calls. The runner checks every kernel's arrays against its spec as
it prepares them (`kernel_args`), whichever way the program came.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from math import prod
from typing import TYPE_CHECKING, Any

import numpy as np

from cvmc.errors import CVMRuntimeError
from cvmc.runtime.driver.host import DTYPES, KERNELS_MODULE, Call, HostProgram, View, read_host
from cvmc.runtime.engine.threads import MAX_THREADS, default_threads
from cvmc.runtime.frontend.graph import Graph

__all__ = ["KERNELS_MODULE", "MAX_THREADS", "Call", "CpuRunner", "HostProgram", "View", "compile_graph",
           "default_threads", "lower_graph", "read_host"]

if TYPE_CHECKING:
    from cvmc.passes.loops.target import Target
    from cvmc.runtime.driver.compile import StageDump
    from cvmc.runtime.engine.compiled import CompiledModel


def lower_to_llvm(graph: Graph, target: Target | None = None, dump: StageDump | None = None
                  ) -> tuple[HostProgram, str, list[Any], float]:
    """The driver's `compile.lower_to_llvm`, imported on first use: a warm load lowers nothing and imports no
    compiler."""
    from cvmc.runtime.driver.compile import lower_to_llvm as lower

    return lower(graph, target, dump)


# `lower_graph` is the driver's `lower_to_llvm` (cvm-aot and tests import it from here)
lower_graph = lower_to_llvm

# A kernel call with at least this much work (gas) is split over the threads; in the native program
# (`jit.Program`), where a split costs a few atomic operations instead of a hand-off, from NATIVE_SPLIT_WORK,
# but only in a program whose split calls hold SPLIT_WORK in all: waking the helpers once a run costs more than
# a small model's whole run (the digits MLP: bench/results/2026-11-28-comment-figures.md).
SPLIT_WORK = 1 << 18
NATIVE_SPLIT_WORK = 1 << 13
_ALIGN = 64


# ---------------------------------------------------------------------------------------------------------
# The runner
# ---------------------------------------------------------------------------------------------------------


def shared_calls(program: HostProgram, splittable: list[bool]) -> tuple[list[bool], bool]:
    """Which calls a native program (`jit.Program`, and `cvm-aot`'s library, which runs the same scheduler) shares
    with helper threads: those of at least NATIVE_SPLIT_WORK whose kernel splits (`splittable`: its spec says so
    and it has more than one unit); and whether the program shares at all (its shared calls hold SPLIT_WORK in
    all: waking a helper costs more than a small model's whole run)."""
    flags = [call.work >= NATIVE_SPLIT_WORK and ok for call, ok in zip(program.calls, splittable)]
    return flags, sum(call.work for call, f in zip(program.calls, flags) if f) >= SPLIT_WORK


def _aligned_bytes(n: int) -> np.ndarray:
    """`n` zero bytes starting on a 64-byte boundary."""
    raw = np.zeros(n + _ALIGN, dtype=np.uint8)
    start = (-raw.ctypes.data) % _ALIGN
    return raw[start:start + n]


class CpuRunner:
    """Runs a compiled model: `runner(data) -> heads`. Holds the arena, the params and the prepared calls."""

    def __init__(self, program: HostProgram, engine: Any, threads: int):
        self.engine = engine
        self.program = program  # what a replica for another thread is built from (Model.run_batch)
        self.threads = threads
        self.arena = _aligned_bytes(program.arena_bytes)
        self.input = np.zeros(program.input_shape, np.int32) if program.input_shape is not None else None
        roots: dict[str, np.ndarray] = {"arena": self.arena}
        if self.input is not None:
            roots["input"] = self.input.reshape(-1).view(np.uint8)
        for name, array in program.globals.items():
            roots[name] = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        self._roots = roots  # keeps the params alive
        self.calls = []
        for call in program.calls:
            kernel = engine[call.kernel]
            prepared = kernel.prepare(*(self._array(v) for v in call.args))
            split = call.work >= SPLIT_WORK and kernel.spec.splittable and kernel.trip > 1
            self.calls.append((prepared, split))
        self.heads = [(self._base(v), v) for v in program.heads]
        from cvmc.runtime.engine.jit import PreparedCall, Program, program_runner_available

        # The calls run as one native program (`jit.Program`): two ctypes calls per run instead of one per
        # kernel, and with threads, one hand-off to the helpers per run (not for an engine of another kind:
        # `cvm-aot` resolves the arguments with a checker of its own)
        native = program_runner_available() and all(isinstance(c, PreparedCall) for c, _ in self.calls)
        self.native = None
        if native:
            splits = [c.kernel.spec.splittable and c.kernel.trip > 1 for c, _ in self.calls]
            flags, share = shared_calls(program, splits)
            self.native = Program(list(zip((c for c, _ in self.calls), flags)), threads if share else 1)
        self.stats: dict[str, object] = {}
        self.extras: dict[str, np.ndarray] = {}  # what a cached entry carried beside the model (`load_compiled`)
        self.model_key: str | None = None  # the name of its cache entry (`compile_graph`), None when uncached
        self._lock = threading.Lock()  # one run at a time: runs share the arena

    def _base(self, v: View) -> np.ndarray:
        """The 1-D array of `v`'s elements from its base pointer to the end of its root."""
        root = self._roots[v.root]
        dtype = DTYPES[v.element]
        end = v.shift + (root.size - v.shift) // dtype.itemsize * dtype.itemsize
        return root[v.shift:end].view(dtype)

    def _array(self, v: View) -> np.ndarray:
        """The array the JIT takes for a kernel argument: the view itself for the identity layout, else its
        whole buffer from the base pointer."""
        base = self._base(v)
        return base[:prod(v.shape)].reshape(v.shape) if v.identity else base

    def __call__(self, data: np.ndarray | None) -> list[np.ndarray]:
        if self.input is not None and data is None:
            raise CVMRuntimeError("the model takes an input 'data', none was given")
        with self._lock:
            if self.input is not None:
                np.copyto(self.input, np.asarray(data, dtype=np.int32).reshape(self.input.shape))
            if self.native is not None:
                self.native()
            else:
                for call, split in self.calls:
                    if split and self.threads > 1:
                        call.launch(self.threads)
                    else:
                        call()
            out = []
            for base, v in self.heads:
                if v.identity:  # a slice: no stride tricks (their overhead dominates a small head)
                    out.append(np.array(base[:prod(v.shape)].reshape(v.shape), dtype=np.int32))
                    continue
                item = base.itemsize
                strided = np.lib.stride_tricks.as_strided(base[v.offset:], v.shape, [s * item for s in v.strides])
                out.append(np.array(strided, dtype=np.int32))
        return out


Runner = Callable[[np.ndarray | None], list[np.ndarray]]


# ---------------------------------------------------------------------------------------------------------
# Compiling
# ---------------------------------------------------------------------------------------------------------


def _warm(key: str, target: Target) -> tuple[CompiledModel, Any] | None:
    """The compiled model cached under `key` for `target` and its engine, when both of its entries are in the
    cache and sound: a load that lowers nothing and compiles nothing."""
    from cvmc.runtime.engine.cache import open_cache
    from cvmc.runtime.engine.compiled import KIND, decode
    from cvmc.runtime.engine.jit import JitEngine

    store = open_cache()
    entry = store.get(key, KIND) if store is not None else None
    compiled = decode(entry) if entry is not None else None
    if compiled is None or compiled.target != str(target):
        return None
    p = compiled.program
    roots = {"arena", *p.globals} | ({"input"} if p.input_shape is not None else set())
    names = {s.name for s in compiled.specs}
    if any(c.kernel not in names or any(v.root not in roots for v in c.args) for c in p.calls) or \
            any(v.root not in roots for v in p.heads):
        return None
    try:
        engine = JitEngine.from_cache(compiled.objects_key, compiled.specs)
    except CVMRuntimeError:  # a kernel the objects lack
        return None
    return (compiled, engine) if engine is not None else None


def _fits(program: HostProgram, graph: Graph) -> bool:
    """Whether `program` takes the graph's input and gives its heads (shapes and count)."""
    nid = graph.input_id
    shape = tuple(graph.nodes[nid].shapes[0]) if nid is not None else None
    heads = [tuple(s) for s in graph.head_shapes()]
    return program.input_shape == shape and [tuple(v.shape) for v in program.heads] == heads


def load_compiled(key: str, target: Target, threads: int | None = None) -> CpuRunner | None:
    """The runner of the model cached under `key` for `target` (`compile_graph(..., key=key)` wrote it), with its
    entry's `extras` as `runner.extras`; None when the cache has no sound entry of that name."""
    warm = _warm(key, target)
    if warm is None:
        return None
    runner = CpuRunner(warm[0].program, warm[1], threads or default_threads())
    runner.extras = warm[0].extras
    runner.stats = {"cache_hit": True, "lowered": False, "kernels": len(warm[0].specs)}
    return runner


def compile_lowered(program: HostProgram, ir_text: str, specs: list[Any], target: Target, threads: int | None,
                    key: str | None = None, extras: dict[str, np.ndarray] | None = None,
                    cache: bool = True) -> CpuRunner:
    """The runner of a lowered model: its kernels compiled (their object files cached by IR, `jit.JitEngine`) and
    its entry (`runtime.engine.compiled`) written under `key`, with `extras`, for the next load."""
    from cvmc.runtime.engine.jit import JitEngine

    engine = JitEngine(ir_text, specs, cache=cache)
    runner = CpuRunner(program, engine, threads or default_threads())
    if key is not None and cache:
        from cvmc.runtime.engine.cache import open_cache
        from cvmc.runtime.engine.compiled import KIND, CompiledModel, encode

        store = open_cache()
        if store is not None:
            store.put(key, KIND, encode(CompiledModel(str(target), program, specs, engine.key, extras or {})))
    return runner


def compile_graph(graph: Graph, threads: int | None = None, cache: bool = True,
                  check_plan: Callable[[HostProgram], None] | None = None, target: Target | None = None,
                  dump: StageDump | None = None, key: str | None = None,
                  extras: dict[str, np.ndarray] | None = None) -> CpuRunner:
    """Compile a verified graph for this CPU (`target` None: this host's, see `runtime.driver.target.jit_target`, after
    its tier's known-answer check, `runtime.devices.known_answer`): `runner(data) -> heads`, with `runner.stats`.
    `check_plan` sees the host program (the arena's size) before anything is allocated, and may raise to refuse
    it; `dump` sees every stage (`compile.StageDump`).

    With the cache on, a model compiled before is loaded from its sealed entry (`runtime.engine.compiled`): no lowering,
    no xDSL, no LLVM optimizer (`stats["lowered"]` False). Otherwise the graph is lowered and its kernels compiled
    (their object files cached by IR, `jit.JitEngine`), and the entry written for the next load. `key` names the
    entry in place of `compiled.model_key` (a caller whose key covers the graph), `extras` go with it
    (`load_compiled`)."""
    from cvmc.runtime.devices.known_answer import checked_jit_target, speculative_target

    start = time.perf_counter()
    settle = None
    if target is None and cache and dump is None:  # a cold check compiles on a thread beside this compile
        target, settle = speculative_target()
    else:
        target = checked_jit_target(target)
    try:
        warm = None
        if cache and dump is None:
            from cvmc.runtime.engine.compiled import model_key

            key = key or model_key(graph, target)
            warm = _warm(key, target)
            if warm is not None and not _fits(warm[0].program, graph):
                warm = None  # the graph's name, another graph's program: never used (a miss, compiled again)
        else:
            key = None
        if warm is not None:
            compiled, engine = warm
            program, specs, lower_ms = compiled.program, compiled.specs, 0.0
            if check_plan is not None:
                check_plan(program)
            runner = CpuRunner(program, engine, threads or default_threads())
        else:
            from cvmc.passes.pipelines import gc_paused

            with gc_paused():
                program, ir_text, specs, lower_ms = lower_to_llvm(graph, target, dump)
                if check_plan is not None:
                    check_plan(program)
                runner = compile_lowered(program, ir_text, specs, target, threads, key, extras, cache)
                engine = runner.engine
    except BaseException:
        if settle is not None:
            settle(quiet=True)  # no thread left inside LLVM
        raise
    if settle is not None:
        checked = settle()
        if checked != target:  # the check refused the tier built for: build for the one it chose (rare)
            return compile_graph(graph, threads, cache, check_plan, checked, dump, extras=extras)
    runner.model_key = key
    runner.stats = {
        "compile_ms": round(1000 * (time.perf_counter() - start), 1),
        "lower_ms": round(lower_ms, 1),
        "lowered": warm is None,
        "kernels": len(specs),
        "calls": len(program.calls),
        "copies": sum(1 for c in program.calls if c.kernel.startswith("copy")),
        "packs": sum(1 for c in program.calls if c.kernel.startswith("pack")),
        "peak_buffer_bytes": program.arena_bytes,
        "intermediate_bytes": program.intermediate_bytes,
        "cache_hit": engine.cache_hit,
        "llvm_parts": engine.parts,
    }
    return runner
