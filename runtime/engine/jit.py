"""Compile LLVM IR to machine code for this CPU and call its kernels on numpy arrays.

    engine = compile_module(loop_level_module)        # or JitEngine(emit_llvm(m), kernel_specs(m).values())
    engine["add"](a, b, out)                          # checks the arrays, then runs
    run = engine["add"].prepare(a, b, out)            # checks once...
    run()                                             # ...then calls with no checks
    run.launch(threads=2)                             # the kernel's units split over 2 threads

Pipeline: parse the IR text, set the host triple and data layout, optimize at O3 with the new pass manager (loop
and SLP vectorization on), and emit object files for the host CPU and its features; a large module is compiled in
parts at once, one thread each (`split_module`, `object_code`). Where the system has a linker (`ld`, Linux), the
parts are position-independent and linked into one shared object (`llvm_compile.link_shared`), loaded with dlopen
from the bytes themselves (`SharedCode`: a sealed memfd, never a path another process could swap); elsewhere,
or when that fails, they are loaded into an MCJIT engine. Either is kept in the on-disk cache
(`cvmc.runtime.engine.cache`: a folder of this user's alone, entries authenticated with this user's secret key, a size
bound), the shared object as kind "so", the object files as kind "o", under one name: a hash of the IR text, the
cvmc / llvmlite / LLVM versions, the sources of this engine and its pipeline, and the target (triple, CPU,
features, as LLVM named them: `runtime.driver.target.host_target`). A second process that compiles the same IR
reads the entry, checks its seal and loads it: from a shared object, without importing LLVM at all. Compiling and
loading through the same bytes on a miss and on a hit keeps the two paths one.

Every engine owns its code: its TargetMachine (MCJIT takes ownership; sharing one crashes when an engine is
freed) or its shared object (unloaded when the engine is freed), and every `Kernel` and `PreparedCall` keeps its
engine alive, so a function pointer is never called after its code is freed.

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
import struct
import sys
import threading
import time
from _queue import SimpleQueue  # the queue module's own, without importing the module
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cvmc.codegen.abi import KernelSpec
from cvmc.errors import CVMRuntimeError
from cvmc.runtime.engine.cache import Cache, open_cache
from cvmc.runtime.engine.kernel_args import check_arguments
from cvmc.runtime.engine.program import Program, program_runner_available

if TYPE_CHECKING:
    from llvmlite import ir
    from xdsl.dialects.builtin import ModuleOp

    from cvmc.runtime.engine.llvm_compile import (
        MAX_COMPILE_THREADS,
        PART_CHARS,
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

# The names users import from here, whose homes are `llvm_compile` (LLVM's pipeline and the split compile: imported
# on first use, so that loading cached code imports no LLVM), `program` (a whole program on several threads) and
# `kernel_args` (the arguments' checks).
__all__ = ["MAX_COMPILE_THREADS", "PART_CHARS", "JitEngine", "Kernel", "PreparedCall", "Program", "SharedCode",
           "assembly", "cache_key", "check_arguments", "compile_module", "compile_threads", "env_count",
           "host_target", "object_code", "optimized_ir", "partition", "program_runner_available",
           "shared_object_code", "shared_target", "split_module", "split_range"]
_FROM_LLVM_COMPILE = frozenset({"MAX_COMPILE_THREADS", "PART_CHARS", "assembly", "compile_threads", "env_count",
                                "host_target", "object_code", "optimized_ir", "partition", "shared_object_code",
                                "shared_target", "split_module", "_target_machine", "_PIPELINE_VERSION"})


def __getattr__(name: str) -> Any:
    if name in _FROM_LLVM_COMPILE:
        from cvmc.runtime.engine import llvm_compile

        return getattr(llvm_compile, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _llvm_compile(name: str) -> Any:
    """`llvm_compile.name`, unless this module's own attribute of that name was set (tests replace `object_code`
    here to prove that a hit compiles nothing)."""
    here = globals()
    if name in here:
        return here[name]
    from cvmc.runtime.engine import llvm_compile

    return getattr(llvm_compile, name)


_OBJECTS_MAGIC = b"cvmc-objects-1\n"
_SHARED_MAGIC = b"cvmc-shared-1\n"
_ELF = b"\x7fELF"


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
    if not 1 <= count <= _llvm_compile("MAX_COMPILE_THREADS") or len(entry) < start:
        return None
    sizes = struct.unpack_from(f"<{count}Q", entry, head + 4)
    if start + sum(sizes) != len(entry) or not all(sizes):
        return None
    ends = list(itertools.accumulate(sizes, initial=start))
    return [entry[a:b] for a, b in zip(ends, ends[1:])]


def _pack_shared(library: bytes, parts: int) -> bytes:
    """One cache entry for a shared object: a magic line, the number of parts it was linked from (u32 LE), its
    bytes."""
    return _SHARED_MAGIC + struct.pack("<I", parts) + library


def _unpack_shared(entry: bytes) -> tuple[bytes, int] | None:
    """The shared object and part count of a `_pack_shared` entry, or None for one of another form."""
    head = len(_SHARED_MAGIC) + 4
    if not entry.startswith(_SHARED_MAGIC) or len(entry) <= head or entry[head:head + 4] != _ELF:
        return None
    (parts,) = struct.unpack_from("<I", entry, len(_SHARED_MAGIC))
    return (entry[head:], parts) if parts >= 1 else None


@functools.cache
def version_key() -> str:
    """The compiler half of every cache name: cvmc's version and the sources of this engine and its pipeline
    (`llvm_compile`, whose bytes hold its pipeline's version and options), llvmlite's and LLVM's versions, and this
    CPU (triple, name, features), all as LLVM gave them once on this machine (`runtime.driver.target.host_target`): no
    LLVM is imported to name a cached entry."""
    import cvmc
    from cvmc.runtime.driver.target import host_target

    triple, cpu, features, llvmlite_version, llvm_version = host_target()
    source = hashlib.sha256()  # this pipeline and this engine, as they are on disk
    for path in (Path(__file__).with_name("llvm_compile.py"), Path(__file__)):
        source.update(path.read_bytes())
    parts = [cvmc.__version__, source.hexdigest(), llvmlite_version, llvm_version, triple, cpu, features]
    return "\0".join(parts)


def cache_key(ir_text: str, optimize: bool = True) -> str:
    """The cache key of `ir_text`'s code for this machine and compiler: a SHA-256 over the IR, the versions of
    cvmc (and the sources of this file and `llvm_compile`), llvmlite and LLVM, whether it is optimized, and the
    target triple, CPU and features."""
    digest = hashlib.sha256(version_key().encode())
    digest.update(b"\0" if optimize else b"\0codegen-only\0")
    digest.update(ir_text.encode())
    return digest.hexdigest()


# --------------------------------------------------------------------------------------------------------------
# A shared object loaded from its bytes
# --------------------------------------------------------------------------------------------------------------

_KEPT_FDS: list[int] = []  # the memfds of shared objects that stayed loaded after dlclose (see `SharedCode.close`)


def shared_loading() -> bool:
    """Whether this system loads shared objects from memory (`SharedCode`): Linux, with memfd_create and /proc."""
    return sys.platform.startswith("linux") and hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd")


_MFD_EXEC = 0x10  # memfd_create's flag for a memfd that may be executed (Linux 6.3; before it, every memfd may)


class SharedCode:
    """A shared object loaded from `data` (bytes this process holds, checked by its caller) with dlopen: the bytes
    are written to a memfd that is then sealed (no write, no resize, ever), and dlopen opens it as
    /proc/self/fd/N, so nothing on a file system is loaded and nothing can change the code between the check and
    the load, or after. The memfd stays open while the object is loaded: dlopen knows an object by its path, and a
    path whose N a closed memfd freed would name the next object too (the C library keeps its models' memfds open
    for the same reason). OSError when it cannot be loaded (not an ELF file, a symbol the process lacks)."""

    def __init__(self, data: bytes, name: str = "code"):
        import _ctypes
        import fcntl

        if not data.startswith(_ELF):
            raise OSError("not a shared object")
        self.handle = 0
        flags = os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING
        try:  # executable said so: a system whose memfds are not executable by default still loads it
            self.fd = os.memfd_create(f"cvmc-{name[:16]}", flags | _MFD_EXEC)
        except OSError:  # EINVAL: a kernel before the flag, where every memfd may be executed
            self.fd = os.memfd_create(f"cvmc-{name[:16]}", flags)
        try:
            view, done = memoryview(data), 0
            while done < len(data):
                done += os.write(self.fd, view[done:])
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
                        | fcntl.F_SEAL_SEAL)
            self.path = f"/proc/self/fd/{self.fd}"
            if self._still_loaded():  # an object under this name already: never ours to take for this one
                raise OSError(f"a shared object is loaded as {self.path} already")
            self.handle = _ctypes.dlopen(self.path, os.RTLD_NOW | os.RTLD_LOCAL)
        except BaseException:
            os.close(self.fd)
            raise

    def _still_loaded(self) -> bool:
        import _ctypes

        try:
            handle = _ctypes.dlopen(self.path, os.RTLD_NOW | os.RTLD_LOCAL | os.RTLD_NOLOAD)
        except OSError:
            return False
        _ctypes.dlclose(handle)  # (the look-up took a reference)
        return True

    def address(self, name: str) -> int:
        """The address of the symbol `name` (0 if there is none)."""
        import _ctypes

        try:
            return int(_ctypes.dlsym(self.handle, name))
        except OSError:
            return 0

    def close(self) -> None:
        """Unload the object, then close its memfd; an object that stays loaded (dlclose may keep one) keeps its
        memfd open for the process, so that its name is never another's."""
        import _ctypes

        if self.handle:
            handle, self.handle = self.handle, 0
            _ctypes.dlclose(handle)
            if self._still_loaded():
                _KEPT_FDS.append(self.fd)
                return
            os.close(self.fd)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


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
        self._shared: SharedCode | None = None
        self._engine: Any = None
        store = open_cache(cache_dir) if cache else None
        self.cache_hit = store is not None and self._load_cached(store)
        if not self.cache_hit:
            self._compile(optimize, store)
            self.timings["compile"] = time.perf_counter() - start
        self._resolve(kernels)
        self.compile_seconds = time.perf_counter() - start

    @classmethod
    def from_cache(
        cls,
        key: str,
        kernels: Iterable[KernelSpec] | Mapping[str, KernelSpec],
        *,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> JitEngine | None:
        """The engine of the code cached under `key` (a `cache_key` of IR compiled before), or None when there is
        no such entry (or it fails its check, and is deleted): no IR, no compile."""
        start = time.perf_counter()
        store = open_cache(cache_dir)
        engine = cls.__new__(cls)
        engine.ir_text, engine.key, engine.timings, engine.cache_hit = None, key, {}, True
        engine._shared, engine._engine = None, None
        if store is None or not engine._load_cached(store):
            return None
        engine._resolve(kernels)
        engine.compile_seconds = time.perf_counter() - start
        return engine

    def _load_cached(self, store: Cache) -> bool:
        """Load the code cached under this engine's key: the shared object (kind "so"), else the object files
        (kind "o", MCJIT); False when neither is there in a sound form."""
        entry = store.get(self.key, "so") if shared_loading() else None
        shared = _unpack_shared(entry) if entry is not None else None
        if shared is not None:
            loaded = time.perf_counter()
            try:
                self._shared = SharedCode(shared[0], self.key)
            except OSError:  # sealed by this user, yet not loadable here (a library it needs is gone): compile
                self._shared = None
            else:
                self.parts = shared[1]
                self.timings["load"] = time.perf_counter() - loaded
                return True
        entry = store.get(self.key, "o")
        objects = _unpack_objects(entry) if entry is not None else None
        if objects is None:
            return False
        self._link(objects)
        return True

    def _compile(self, optimize: bool, store: Cache | None) -> None:
        """Compile the IR: into a shared object where the system links one and this process loads it (kept as
        kind "so"), else into object files for MCJIT (kept as kind "o")."""
        assert self.ir_text is not None
        object_code = _llvm_compile("object_code")
        if shared_loading() and _llvm_compile("linker")() is not None:
            objects = object_code(self.ir_text, optimize=optimize, shared=True)
            library = _llvm_compile("link_shared")(objects)
            if library is not None:
                loaded = time.perf_counter()
                try:
                    self._shared = SharedCode(library, self.key)
                except OSError:
                    self._shared = None
                else:
                    self.parts = len(objects)
                    self.timings["load"] = time.perf_counter() - loaded
                    if store is not None:
                        store.put(self.key, "so", _pack_shared(library, len(objects)))
                    return
        objects = object_code(self.ir_text, optimize=optimize)
        if store is not None:
            store.put(self.key, "o", _pack_objects(objects))
        self._link(objects)

    def _link(self, objects: list[bytes]) -> None:
        """Load `objects` into an MCJIT engine of their own."""
        import llvmlite.binding as llvm

        self.parts = len(objects)
        loaded = time.perf_counter()
        self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _llvm_compile("_target_machine")())
        for obj in objects:
            self._engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        self._engine.finalize_object()
        self.timings["load"] = time.perf_counter() - loaded

    def _resolve(self, kernels: Iterable[KernelSpec] | Mapping[str, KernelSpec]) -> None:
        specs = kernels.values() if isinstance(kernels, Mapping) else kernels
        self.kernels: dict[str, Kernel] = {s.name: Kernel(self, s) for s in specs}

    @property
    def kind(self) -> str:
        """The kind of the code's cache entry: "so" (a shared object, loaded with dlopen) or "o" (object files,
        loaded by MCJIT)."""
        return "so" if self._shared is not None else "o"

    def address(self, name: str) -> int:
        """The address of the function `name` (0 if there is none)."""
        if self._shared is not None:
            return self._shared.address(name)
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

    A `SimpleQueue` hand-off costs about half of a `ThreadPoolExecutor` submit and wait, which matters for
    kernels of a few microseconds (figures: bench/results/2026-11-28-comment-figures.md)."""

    def __init__(self):
        self._tasks: SimpleQueue[tuple[Callable[[], None], SimpleQueue[BaseException | None]]]
        self._tasks = SimpleQueue()
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
        done: SimpleQueue[BaseException | None] = SimpleQueue()
        for call in calls[1:]:
            self._tasks.put((call, done))
        calls[0]()
        errors = [done.get() for _ in range(len(calls) - 1)]
        error = next((e for e in errors if e is not None), None)
        if error is not None:
            raise error


_WORKERS = _Workers()
