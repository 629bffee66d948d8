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

Caching: only the machine code is cached (the JIT's object file, named by the hash of the LLVM IR and
authenticated, see `cvmc.runtime.cache`). The host program (arena size, views, calls) and the params are rebuilt
from the verified graph on every load and never read from disk, so a cache entry cannot steer what a kernel is
given; a load of a model compiled before skips the optimizer and the code generator (most of a cold compile) but
runs the lowering.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from math import prod
from typing import TYPE_CHECKING, Any

import numpy as np

from cvmc.errors import CVMRuntimeError
from cvmc.runtime.compile import StageDump, lower_to_llvm
from cvmc.runtime.graph import Graph
from cvmc.runtime.host import DTYPES, KERNELS_MODULE, Call, HostProgram, View, read_host
from cvmc.runtime.threads import MAX_THREADS, default_threads

# `lower_graph` is the driver's `lower_to_llvm` (cvm-aot and tests import it from here)
lower_graph = lower_to_llvm
__all__ = ["KERNELS_MODULE", "MAX_THREADS", "Call", "CpuRunner", "HostProgram", "View", "compile_graph",
           "default_threads", "lower_graph", "read_host"]

if TYPE_CHECKING:
    from cvmc.passes.loops.target import Target

# A kernel call with at least this much work (gas) is split over the threads; in the native program
# (`jit.Program`), where a split costs a few atomic operations instead of a hand-off, from NATIVE_SPLIT_WORK,
# but only in a program whose split calls hold SPLIT_WORK in all: waking the helpers once a run costs more than
# a small model's whole run (the digits MLP: 60 us alone, 150-250 us with a helper on a loaded machine).
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
        from cvmc.runtime.jit import PreparedCall, Program, program_runner_available

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
                if v.identity:  # a slice: no stride tricks (7 us against 1.5 for a small head)
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


def compile_graph(graph: Graph, threads: int | None = None, cache: bool = True,
                  check_plan: Callable[[HostProgram], None] | None = None, target: Target | None = None,
                  dump: StageDump | None = None) -> CpuRunner:
    """Compile a verified graph for this CPU (`target` None: this host's, see `runtime.target.jit_target`):
    `runner(data) -> heads`, with `runner.stats`. `check_plan` sees the host program (the arena's size) before
    anything is allocated, and may raise to refuse it; `dump` sees every stage (`compile.StageDump`)."""
    from cvmc.passes.pipelines import gc_paused
    from cvmc.runtime.jit import JitEngine
    from cvmc.runtime.target import jit_target

    start = time.perf_counter()
    with gc_paused():
        program, ir_text, specs, lower_ms = lower_to_llvm(graph, jit_target(target), dump)
        if check_plan is not None:
            check_plan(program)
        engine = JitEngine(ir_text, specs, cache=cache)
        runner = CpuRunner(program, engine, threads or default_threads())
    runner.stats = {
        "compile_ms": round(1000 * (time.perf_counter() - start), 1),
        "lower_ms": round(lower_ms, 1),
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
