"""Compile LLVM IR to machine code for this CPU and call its kernels on numpy arrays.

    engine = compile_module(loop_level_module)        # or JitEngine(emit_llvm(m), kernel_specs(m).values())
    engine["add"](a, b, out)                          # checks the arrays, then runs
    run = engine["add"].prepare(a, b, out)            # checks once...
    run()                                             # ...then calls with no checks
    run.launch(threads=2)                             # the kernel's units split over 2 threads

Pipeline: parse the IR text, set the host triple and data layout, optimize at O3 with the new pass manager (loop
and SLP vectorization on), emit an object file for the host CPU and its features, and load that object into an
MCJIT engine. A large module is compiled in parts at once, one thread each (`split_module`, `object_code`), and
its object files are loaded into one engine. The object files are kept in the on-disk cache
(`cvmc.runtime.engine.cache`: a folder of this user's alone, entries authenticated with this user's secret key, a size
bound), as one entry named by a hash of the IR text, the cvmc / llvmlite / LLVM versions, this pipeline's version and
the target (triple, CPU, features): a second process that compiles the same IR only reads the entry and links it (no
optimizer, no code generator). Compiling and loading through the same object files on a miss and
on a hit keeps the two paths one.

Every engine owns its TargetMachine (MCJIT takes ownership; sharing one crashes when an engine is freed), and every
`Kernel` and `PreparedCall` keeps its engine alive, so a function pointer is never called after its code is freed.

Kernels follow the ABI of `cvmc.codegen.llvm`: `void name(ptr args, i64 begin, i64 end)`, where `args` is an
array of the base pointers of the kernel's memrefs (one argument whatever their number), runs the units
`[begin, end)` of `[0, trip)`. `PreparedCall.launch(n)` cuts `[0, trip)` into `n` contiguous ranges and runs them
on `n` threads (ctypes releases the GIL during the call). Units are independent by the loop-level contract, so the
result does not depend on the number of threads or their order.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import itertools
import os
import queue
import struct
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import llvmlite
import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from cvmc.codegen.abi import KernelSpec
from cvmc.errors import CVMRuntimeError
from cvmc.runtime.engine import llvm_compile
from cvmc.runtime.engine.cache import open_cache
from cvmc.runtime.engine.kernel_args import check_arguments
from cvmc.runtime.engine.llvm_compile import (
    _PIPELINE_VERSION,
    MAX_COMPILE_THREADS,
    PART_CHARS,
    _target_machine,
    assembly,
    compile_threads,
    env_count,
    host_target,
    object_code,
    optimized_ir,
    partition,
    shared_object_code,
    shared_target,
    split_module,
)
from cvmc.runtime.engine.program import Program, program_runner_available

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

# The names users import from here, whose homes are `llvm_compile` (LLVM's pipeline and the split compile),
# `program` (a whole program on several threads) and `kernel_args` (the arguments' checks).
__all__ = ["MAX_COMPILE_THREADS", "PART_CHARS", "JitEngine", "Kernel", "PreparedCall", "Program", "assembly",
           "cache_key", "check_arguments", "compile_module", "compile_threads", "env_count", "host_target",
           "object_code", "optimized_ir", "partition", "program_runner_available", "shared_object_code",
           "shared_target", "split_module", "split_range"]

_OBJECTS_MAGIC = b"cvmc-objects-1\n"


def _pack_objects(objects: Sequence[bytes]) -> bytes:
    """One cache entry for several object files: a magic line, their count and sizes (little-endian 32 and 64
    bits), their bytes."""
    return b"".join([_OBJECTS_MAGIC, struct.pack(f"<I{len(objects)}Q", len(objects), *map(len, objects)), *objects])


def _unpack_objects(entry: bytes) -> list[bytes] | None:
    """The object files of a `_pack_objects` entry, or None for one of another form (or with an empty file)."""
    head = len(_OBJECTS_MAGIC)
    if not entry.startswith(_OBJECTS_MAGIC) or len(entry) < head + 4:
        return None
    (count,) = struct.unpack_from("<I", entry, head)
    start = head + 4 + 8 * count
    if not 1 <= count <= MAX_COMPILE_THREADS or len(entry) < start:
        return None
    sizes = struct.unpack_from(f"<{count}Q", entry, head + 4)
    if start + sum(sizes) != len(entry) or not all(sizes):
        return None
    ends = list(itertools.accumulate(sizes, initial=start))
    return [entry[a:b] for a, b in zip(ends, ends[1:])]


@functools.cache
def version_key() -> str:
    """The compiler half of every cache name: cvmc's version and the sources of this engine and its pipeline,
    llvmlite's and LLVM's versions, the pipeline's version, and this CPU (triple, name, features)."""
    import cvmc

    triple, cpu, features = host_target()
    source = hashlib.sha256()  # this pipeline and this engine, as they are on disk
    for path in (llvm_compile.__file__, __file__):
        source.update(Path(path).read_bytes())
    parts = [cvmc.__version__, source.hexdigest(), llvmlite.__version__, ".".join(map(str, llvm.llvm_version_info)),
             _PIPELINE_VERSION, triple, cpu, features]  # fmt: skip
    return "\0".join(parts)


def cache_key(ir_text: str, optimize: bool = True) -> str:
    """The object cache key of `ir_text` for this machine and compiler: a SHA-256 over the IR, the versions of
    cvmc (and the sources of this file and `llvm_compile`), llvmlite, LLVM and the pipeline (and whether it
    optimizes), and the target triple, CPU and features."""
    digest = hashlib.sha256(version_key().encode())
    digest.update(b"\0" if optimize else b"\0codegen-only\0")
    digest.update(ir_text.encode())
    return digest.hexdigest()


# --------------------------------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------------------------------


class JitEngine:
    """Machine code for one LLVM module, and numpy callables for its kernels."""

    def __init__(
        self,
        llvm_ir: ir.Module | str,
        kernels: Iterable[KernelSpec] | Mapping[str, KernelSpec] = (),
        *,
        cache: bool = True,
        cache_dir: str | os.PathLike[str] | None = None,
        optimize: bool = True,
    ):
        start = time.perf_counter()
        self.ir_text: str | None = str(llvm_ir)
        self.key = cache_key(self.ir_text, optimize)
        self.timings: dict[str, float] = {}
        store = open_cache(cache_dir) if cache else None
        entry = store.get(self.key, "o") if store is not None else None
        objects = _unpack_objects(entry) if entry is not None else None
        self.cache_hit = objects is not None
        if objects is None:
            objects = object_code(self.ir_text, optimize=optimize)
            self.timings["compile"] = time.perf_counter() - start
            if store is not None:
                store.put(self.key, "o", _pack_objects(objects))
        self._link(objects, kernels)
        self.compile_seconds = time.perf_counter() - start

    @classmethod
    def from_cache(
        cls,
        key: str,
        kernels: Iterable[KernelSpec] | Mapping[str, KernelSpec],
        *,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> JitEngine | None:
        """The engine of the object files cached under `key` (a `cache_key` of IR compiled before), or None when
        there is no such entry (or it fails its check, and is deleted): no IR, no compile."""
        start = time.perf_counter()
        store = open_cache(cache_dir)
        entry = store.get(key, "o") if store is not None else None
        objects = _unpack_objects(entry) if entry is not None else None
        if objects is None:
            return None
        engine = cls.__new__(cls)
        engine.ir_text, engine.key, engine.timings, engine.cache_hit = None, key, {}, True
        engine._link(objects, kernels)
        engine.compile_seconds = time.perf_counter() - start
        return engine

    def _link(self, objects: list[bytes], kernels: Iterable[KernelSpec] | Mapping[str, KernelSpec]) -> None:
        """Load `objects` into an engine of their own and resolve the kernels of `kernels`."""
        self.parts = len(objects)
        loaded = time.perf_counter()
        self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _target_machine())
        for obj in objects:
            self._engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        self._engine.finalize_object()
        self.timings["load"] = time.perf_counter() - loaded
        specs = kernels.values() if isinstance(kernels, Mapping) else kernels
        self.kernels: dict[str, Kernel] = {s.name: Kernel(self, s) for s in specs}

    def address(self, name: str) -> int:
        """The address of the function `name` (0 if there is none)."""
        return self._engine.get_function_address(name)

    def __getitem__(self, name: str) -> Kernel:
        return self.kernels[name]


def compile_module(
    module: ModuleOp, *, cache: bool = True, cache_dir: str | os.PathLike[str] | None = None
) -> JitEngine:
    """Emit, optimize and load a loop-level `module`: the engine's `kernels` are ready to call."""
    from cvmc.runtime.driver.compile import llvm_module

    ir_text, specs = llvm_module(module)  # the one driver's printer (`runtime.driver.compile`)
    return JitEngine(ir_text, specs, cache=cache, cache_dir=cache_dir)


# Every kernel's C type: `void name(void **args, int64_t begin, int64_t end)` (see `cvmc.codegen.llvm`).
_KERNEL_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


class Kernel:
    """A compiled kernel: call it with numpy arrays, or `prepare` the arrays once and call that many times."""

    def __init__(self, engine: JitEngine, spec: KernelSpec):
        address = engine.address(spec.symbol)
        if not address:
            raise CVMRuntimeError(f"kernel '{spec.name}' is not in the compiled module")
        self.engine = engine  # keeps the code alive
        self.spec = spec
        self.name = spec.name
        self.trip = spec.trip
        self.address = address
        self._fn: Any = _KERNEL_TYPE(address)
        self._fn.argtypes = None  # arguments are prepared as ctypes objects: the fastest call

    def prepare(self, *arrays: np.ndarray) -> PreparedCall:
        """Check `arrays` against the kernel's arguments and fix their pointers for repeated calls."""
        return PreparedCall(self, arrays, check_arguments(self.spec, arrays))

    def __call__(self, *arrays: np.ndarray, threads: int = 1) -> None:
        prepared = self.prepare(*arrays)
        if threads > 1:
            prepared.launch(threads)
        else:
            prepared()


class PreparedCall:
    """A kernel bound to fixed arrays (kept alive here); calling it runs the whole kernel on this thread."""

    def __init__(self, kernel: Kernel, arrays: tuple[np.ndarray, ...], bases: list[int]):
        self.kernel = kernel
        self.arrays = arrays
        self._table = (ctypes.c_void_p * max(1, len(bases)))(*bases)  # the kernel's one pointer argument
        self._pointers = (ctypes.c_void_p(ctypes.addressof(self._table)),)
        self._whole = functools.partial(kernel._fn, *self._pointers, ctypes.c_int64(0), ctypes.c_int64(kernel.trip))
        self._splits: dict[int, list[Callable[[], None]]] = {}  # prepared calls per thread count

    def __call__(self) -> None:
        self._whole()

    def run_range(self, begin: int, end: int) -> None:
        """Run the units [begin, end) (clamped to [0, trip))."""
        self.kernel._fn(*self._pointers, ctypes.c_int64(begin), ctypes.c_int64(end))

    def launch(self, threads: int) -> None:
        """Run the whole kernel with its units split into `threads` contiguous ranges, one per thread."""
        calls = self._splits.get(threads)
        if calls is None:
            fn, pointers = self.kernel._fn, self._pointers
            ranges = split_range(self.kernel.trip, threads)
            calls = [functools.partial(fn, *pointers, ctypes.c_int64(b), ctypes.c_int64(e)) for b, e in ranges]
            self._splits[threads] = calls
        if len(calls) == 1:
            calls[0]()
        else:
            _WORKERS.run(calls)


def split_range(trip: int, parts: int) -> list[tuple[int, int]]:
    """[0, trip) cut into at most `parts` contiguous, non-empty ranges of sizes differing by at most one."""
    parts = max(1, min(parts, trip))
    size, extra = divmod(trip, parts)
    ranges: list[tuple[int, int]] = []
    begin = 0
    for i in range(parts):
        end = begin + size + (1 if i < extra else 0)
        ranges.append((begin, end))
        begin = end
    return ranges


class _Workers:
    """Daemon threads that run kernel ranges from one shared queue; each launch waits on its own queue.

    A `queue.SimpleQueue` hand-off costs about half of a `ThreadPoolExecutor` submit and wait, which matters for
    kernels of a few microseconds (figures: bench/results/2026-11-28-comment-figures.md)."""

    def __init__(self):
        self._tasks: queue.SimpleQueue[tuple[Callable[[], None], queue.SimpleQueue[BaseException | None]]]
        self._tasks = queue.SimpleQueue()
        self._count = 0
        self._lock = threading.Lock()

    def _work(self) -> None:
        while True:
            call, done = self._tasks.get()
            try:
                call()
            except BaseException as e:  # handed to the launching thread
                done.put(e)
            else:
                done.put(None)

    def _grow(self, count: int) -> None:
        if self._count < count:
            with self._lock:
                while self._count < count:
                    threading.Thread(target=self._work, name=f"cvmc-kernel-{self._count}", daemon=True).start()
                    self._count += 1

    def run(self, calls: list[Callable[[], None]]) -> None:
        """Run `calls[1:]` on worker threads and `calls[0]` on this one; return when all are done."""
        self._grow(len(calls) - 1)
        done: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()
        for call in calls[1:]:
            self._tasks.put((call, done))
        calls[0]()
        errors = [done.get() for _ in range(len(calls) - 1)]
        error = next((e for e in errors if e is not None), None)
        if error is not None:
            raise error


_WORKERS = _Workers()
