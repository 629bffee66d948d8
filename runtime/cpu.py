"""The `cpu` device: a verified graph -> cvm IR -> loop-level kernels -> LLVM (JIT) -> a runner.

    run = compile_graph(graph)
    heads = run(data)          # every head as an int32 array; `data` already saturated to its precision
    run.stats                  # compile time, kernels, calls, copies, peak buffer bytes

The lowering (`passes/pipelines.py`, `cvm-to-loops`) produces kernels plus a host `@main`: the arena's size, the
views of it each kernel reads and writes, and the calls in order. The runner reads that host function once:
it allocates the arena, resolves every call's arguments to numpy views of the arena, the params and the input
buffer, and prepares the ctypes pointers. A run then copies the input in, makes the calls (large kernels split
over threads, each thread a contiguous range of the outermost parallel loop: the result never depends on it),
and copies the heads out.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from math import prod

import numpy as np
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, IntegerType, MemRefType, ModuleOp
from xdsl.ir import Attribute, SSAValue

from cvmc.errors import CVMRuntimeError
from cvmc.passes.cvm_loops_views import Layout, layout_of
from cvmc.passes.pipelines import run_pipeline
from cvmc.runtime.cvm_ir import graph_to_module
from cvmc.runtime.graph import Graph
from cvmc.runtime.jit import JitEngine, PreparedCall, compile_module

# A kernel call with at least this much work (gas ops) is split over the threads.
SPLIT_WORK = 1 << 18
_ALIGN = 64


def default_threads() -> int:
    """`$CVMC_THREADS`, else the number of CPUs this process may use (at most 2 is what the kernels split into
    well on this class of machine, and what the tests assume)."""
    env = os.environ.get("CVMC_THREADS")
    if env:
        return max(1, int(env))
    return max(1, min(2, len(os.sched_getaffinity(0))))


def split_host(module: ModuleOp) -> tuple[func.FuncOp, dict[str, memref.GlobalOp], ModuleOp]:
    """The host `@main`, the globals, and a module of the kernels alone (moved out of `module`)."""
    main: func.FuncOp | None = None
    globals_: dict[str, memref.GlobalOp] = {}
    kernels = []
    for op in list(module.ops):
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            main = op
        elif isinstance(op, memref.GlobalOp):
            globals_[op.sym_name.data] = op
        elif isinstance(op, func.FuncOp):
            op.detach()
            kernels.append(op)
    if main is None:
        raise CVMRuntimeError("the lowered module has no host function @main")
    return main, globals_, ModuleOp(kernels)


def _dtype(t: Attribute) -> np.dtype:
    """The numpy dtype of a memref's elements (int32 tensors, int16 packed operands)."""
    assert isinstance(t, MemRefType) and isinstance(t.element_type, IntegerType)
    return np.dtype({32: "<i4", 16: "<i2"}[t.element_type.width.data])


def _aligned_bytes(n: int) -> np.ndarray:
    """`n` zero bytes starting on a 64-byte boundary."""
    raw = np.zeros(n + _ALIGN, dtype=np.uint8)
    start = (-raw.ctypes.data) % _ALIGN
    return raw[start:start + n]


def _as_arg(base: np.ndarray, t: MemRefType) -> np.ndarray:
    """The array to pass for a kernel argument of type `t` over the 1-D buffer `base` (the jit's convention:
    the view itself for the identity layout, else the whole buffer)."""
    layout = layout_of(t)
    if layout.offset == 0 and layout.is_contiguous:
        return base[:layout.size].reshape(layout.shape)
    return base


def _read(base: np.ndarray, layout: Layout) -> np.ndarray:
    """A copy of the tensor a layout describes over `base`."""
    item = base.itemsize
    view = np.lib.stride_tricks.as_strided(base[layout.offset:], layout.shape, [s * item for s in layout.strides])
    return np.array(view, dtype=np.int32)


class CpuRunner:
    """Runs a compiled model: `runner(data) -> heads`. Holds the arena, the params and the prepared calls."""

    def __init__(self, main: func.FuncOp, globals_: dict[str, memref.GlobalOp], engine: JitEngine,
                 threads: int):
        self.engine = engine
        self.threads = threads
        block = main.body.block
        arena_arg = block.args[-1]
        assert isinstance(arena_arg.type, MemRefType)
        self.arena = _aligned_bytes(arena_arg.type.get_shape()[0])
        self.input: np.ndarray | None = None
        bases: dict[SSAValue, np.ndarray] = {arena_arg: self.arena}
        if len(block.args) == 2:
            t = block.args[0].type
            assert isinstance(t, MemRefType)
            self.input = np.zeros(t.get_shape(), dtype=np.int32)
            bases[block.args[0]] = self.input.reshape(-1)
        consts: dict[SSAValue, int] = {}
        self.calls: list[tuple[PreparedCall, bool]] = []
        self.heads: list[tuple[np.ndarray, Layout]] = []
        for op in block.ops:
            if isinstance(op, arith.ConstantOp):
                assert isinstance(op.value, IntegerAttr)
                consts[op.result] = op.value.value.data
            elif isinstance(op, memref.GetGlobalOp):
                g = globals_[op.name_.root_reference.data]
                assert isinstance(g.initial_value, DenseIntOrFPElementsAttr)
                dtype = _dtype(op.memref.type)
                bases[op.memref] = np.frombuffer(g.initial_value.data.data, dtype=dtype).copy()
            elif isinstance(op, memref.ViewOp):
                t = op.result.type
                assert isinstance(t, MemRefType)
                shift, dtype = consts[op.byte_shift], _dtype(t)
                bases[op.result] = self.arena[shift:shift + dtype.itemsize * prod(t.get_shape())].view(dtype)
            elif isinstance(op, memref.ReinterpretCastOp):
                bases[op.result] = bases[op.source]
            elif isinstance(op, func.CallOp):
                kernel = engine[op.callee.root_reference.data]
                arrays = [_as_arg(bases[v], v.type) for v in op.arguments]  # type: ignore[arg-type]
                work = op.attributes.get("cvm.work")
                big = isinstance(work, IntegerAttr) and work.value.data >= SPLIT_WORK
                self.calls.append((kernel.prepare(*arrays), big and kernel.spec.splittable and kernel.trip > 1))
            elif isinstance(op, func.ReturnOp):
                for v in op.arguments:
                    assert isinstance(v.type, MemRefType)
                    self.heads.append((bases[v], layout_of(v.type)))
        self.stats: dict[str, object] = {}

    def __call__(self, data: np.ndarray | None) -> list[np.ndarray]:
        if self.input is not None:
            if data is None:
                raise CVMRuntimeError("the model takes an input 'data', none was given")
            np.copyto(self.input, np.asarray(data, dtype=np.int32).reshape(self.input.shape))
        threads = self.threads
        for call, split in self.calls:
            if split and threads > 1:
                call.launch(threads)
            else:
                call()
        return [_read(base, layout) for base, layout in self.heads]


Runner = Callable[[np.ndarray | None], list[np.ndarray]]


def compile_module_to_runner(module: ModuleOp, threads: int | None = None) -> CpuRunner:
    """A runner for a lowered module (host `@main` + kernels), as `convert-cvm-to-loops` produces."""
    main, globals_, kernels = split_host(module)
    n_kernels = len(list(kernels.ops))
    engine = compile_module(kernels)
    runner = CpuRunner(main, globals_, engine, threads or default_threads())
    inter = main.attributes.get("cvm.intermediate_bytes")
    runner.stats.update({
        "kernels": n_kernels,
        "calls": len(runner.calls),
        "peak_buffer_bytes": int(runner.arena.size),
        "intermediate_bytes": inter.value.data if isinstance(inter, IntegerAttr) else None,
        "jit_cache_hit": engine.cache_hit,
    })
    return runner


def compile_graph(graph: Graph, threads: int | None = None) -> CpuRunner:
    """Compile a verified graph for this CPU: `runner(data) -> heads`, with `runner.stats`."""
    start = time.perf_counter()
    module = graph_to_module(graph)
    run_pipeline(module, "cvm-to-loops")
    lowered = time.perf_counter()
    runner = compile_module_to_runner(module, threads)
    runner.stats = {"compile_ms": round(1000 * (time.perf_counter() - start), 1),
                    "lower_ms": round(1000 * (lowered - start), 1), **runner.stats}
    return runner
