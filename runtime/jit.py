"""Compile LLVM IR to machine code for this CPU and call its kernels on numpy arrays.

    engine = compile_module(loop_level_module)        # or JitEngine(emit_llvm(m), kernel_specs(m).values())
    engine["add"](a, b, out)                          # checks the arrays, then runs (a few us)
    run = engine["add"].prepare(a, b, out)            # checks once...
    run()                                             # ...then about 0.5 us a call
    run.launch(threads=2)                             # the kernel's units split over 2 threads

Pipeline: parse the IR text, set the host triple and data layout, optimize at O3 with the new pass manager (loop
and SLP vectorization on), emit an object file for the host CPU and its features, and load that object into an
MCJIT engine. A large module is compiled in parts at once, one thread each (`split_module`, `object_code`), and
its object files are loaded into one engine. The object files are kept in the on-disk cache (`cvmc.runtime.cache`:
a folder of this user's alone, entries authenticated with this user's secret key, a size bound), as one entry
named by a hash of the IR text, the cvmc / llvmlite / LLVM versions, this pipeline's version and the target
(triple, CPU, features): a second process that compiles the same IR only reads the entry and links it (about 1 ms
instead of the optimizer and code generator). Compiling and loading through the same object files on a miss and
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
import re
import struct
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import llvmlite
import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from cvmc.codegen.abi import KernelArg, KernelSpec
from cvmc.errors import CVMLogicError, CVMRuntimeError
from cvmc.runtime.cache import open_cache

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

# Bump when the optimization pipeline or the target options change: it is part of the cache key.
_PIPELINE_VERSION = "o3-vec-slp-unroll50-parts-4"
# Let the loop vectorizer pick the widest vectors for narrow types: i16 dot products then become full-width
# `vpmaddwd` on AVX2 (30 -> 49 GMAC/s on the bench model) instead of half-width ones. A lower unroll threshold
# than O3's 300: LLVM unrolled the epilogue loops of small static tiles (16 x 16 outputs) in full, 0.28 s of O3
# each for no speed. The hot loops are the micro-kernels, unrolled by the lowering itself: from 150 to 50 the
# bench model's O3 + code generation on one thread went from 0.78 to 0.59 s, its run time stayed the same
# (2.149 / 2.168 ms, medians of 30, side by side; the digits models, the corpus chains and convolutions alike).
_LLVM_OPTIONS = ("-vectorizer-maximize-bandwidth", "-unroll-threshold=50")

_NUMPY_KINDS = {
    "i1": ("b", 1),
    "i8": ("iu", 1),
    "i16": ("iu", 2),
    "i32": ("iu", 4),
    "i64": ("iu", 8),
    "f32": ("f", 4),
    "f64": ("f", 8),
}
_NUMPY_NAMES = {"i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "f32": "float32",
                "f64": "float64"}  # fmt: skip


# --------------------------------------------------------------------------------------------------------------
# LLVM: target, optimization, object files
# --------------------------------------------------------------------------------------------------------------


@functools.cache
def host_target() -> tuple[str, str, str]:
    """(triple, CPU name, CPU features) of this machine; initializes LLVM's native target once."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    for option in _LLVM_OPTIONS:
        llvm.set_option("", option)
    return llvm.get_process_triple(), llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def _target_machine() -> llvm.TargetMachine:
    triple, cpu, features = host_target()
    target = llvm.Target.from_triple(triple)
    return target.create_target_machine(cpu=cpu, features=features, opt=3, jit=True)


def shared_target(cpu: str | None = None) -> tuple[str, str]:
    """(CPU name, CPU features) that `shared_object_code` compiles for: this machine's, or the named CPU with the
    features LLVM gives it (an empty string)."""
    _, host_cpu, host_features = host_target()
    return (host_cpu, host_features) if cpu is None or cpu == host_cpu else (cpu, "")


def shared_object_code(llvm_ir: ir.Module | str, cpu: str | None = None) -> bytes:
    """The object file of `llvm_ir` for a shared library (`cvm-aot`): the engine's O3 pipeline and options, for
    this machine's CPU or the named one, as position-independent code with the small code model (the JIT's objects
    use the large code model and static relocations, which MCJIT places anywhere in memory)."""
    triple = host_target()[0]
    name, features = shared_target(cpu)
    tm = llvm.Target.from_triple(triple).create_target_machine(cpu=name, features=features, opt=3, reloc="pic",
                                                                codemodel="default")
    return _object_file(str(llvm_ir), tm)


def _object_file(ir_text: str, tm: llvm.TargetMachine) -> bytes:
    """The object file of `ir_text` for `tm`, compiled in an LLVMContext of its own: without llvmlite's lock where
    it can be (`_unlocked_llvm`), so that other threads compile at the same time."""
    mod = _optimized(ir_text, tm, llvm.create_context())
    unlocked = _unlocked_llvm()
    return unlocked.object_file(tm, mod) if unlocked is not None else tm.emit_object(mod)


def _optimized(ir_text: str, tm: llvm.TargetMachine, context: Any = None) -> llvm.ModuleRef:
    """Parse, verify and optimize `ir_text` at O3 for `tm`. In a `context` of its own (not LLVM's global one), the
    optimizer runs without llvmlite's lock (see `_unlocked_llvm`)."""
    try:
        mod = llvm.parse_assembly(ir_text, context)
        mod.verify()
    except RuntimeError as e:
        raise CVMRuntimeError(f"invalid LLVM IR: {e}") from e
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    try:
        _run_passes(pb.getModulePassManager(), mod, pb, _unlocked_llvm() if context is not None else None)
    finally:
        pb.close()
    return mod


def _run_passes(mpm: Any, mod: llvm.ModuleRef, pb: Any, unlocked: _UnlockedLLVM | None) -> None:
    try:
        if unlocked is None:
            mpm.run(mod, pb)
        else:
            unlocked.run(mpm, mod, pb)
    finally:
        _close_pass_manager(mpm)


def _close_pass_manager(mpm: Any) -> None:
    """Free a module pass manager and its passes. llvmlite's `ModulePassManager.close()` does not: its `_dispose`
    resolves to `ObjectRef`'s no-op (the class lists `ObjectRef` before `NewPassManager`), so every O3 pipeline
    (its passes, and what they allocated while running: worklists, GlobalDCE's and JumpThreading's tables) stayed
    allocated, 50 to 130 KB a compile. What is left is the `PassInstrumentationCallbacks` that llvmlite's
    `LLVMPY_CreatePassBuilder` allocates and its dispose never frees: under 2 KB a compile."""
    from llvmlite.binding.newpassmanagers import NewPassManager

    if not mpm.closed:
        NewPassManager._dispose(mpm)  # pyright: ignore[reportAttributeAccessIssue]
        mpm.detach()


def optimized_ir(llvm_ir: ir.Module | str) -> str:
    """The IR after the engine's O3 pipeline (for tests and for reading what LLVM did)."""
    return str(_optimized(str(llvm_ir), _target_machine()))


def assembly(llvm_ir: ir.Module | str) -> str:
    """The host assembly of the optimized IR."""
    tm = _target_machine()
    return tm.emit_assembly(_optimized(str(llvm_ir), tm))


# --------------------------------------------------------------------------------------------------------------
# Compiling a large module in parts, on several threads at once
# --------------------------------------------------------------------------------------------------------------

# LLVM's optimizer and code generator take most of a cold compile (0.5 s of the bench model's 0.7). A module with
# at least PART_CHARS characters of IR per part is compiled in parts, one per compile thread: each part is a module
# of its own (`split_module`: a group of exported kernels, the internal functions they call, the declarations),
# compiled in an LLVMContext of its own, and the parts' object files are loaded into one engine. LLVM supports
# concurrent compiles in separate contexts (its ThinLTO backends run so); llvmlite's global lock would serialize
# them, so the two long calls (the pass pipeline, object emission) go to libllvmlite directly.
PART_CHARS = 16384
MAX_COMPILE_THREADS = 64
# A definition in llvmlite's printed IR: `define`, its linkage and return type, its name, quoted or not; its body
# ends at the first line that is `}`.
_DEFINE = re.compile(r'^define ([^@\n]*)@(?:"([^"\n]*)"|([-\w.$]+))\(', re.MULTILINE)
_REFERENCE = re.compile(r'@(?:"([^"\n]*)"|([-\w.$]+))')
_OBJECTS_MAGIC = b"cvmc-objects-1\n"


class _Definition(NamedTuple):
    exported: bool
    start: int  # its text: ir_text[start:end]
    end: int
    references: frozenset[str]  # the globals its body names


def _definitions(ir_text: str) -> dict[str, _Definition]:
    """The functions `ir_text` defines, by name, in the text's order."""
    found = {}
    for m in _DEFINE.finditer(ir_text):
        end = ir_text.find("\n}\n", m.end())
        end = len(ir_text) if end < 0 else end + 3
        words = m.group(1).split()
        references = frozenset(a or b for a, b in _REFERENCE.findall(ir_text, m.end(), end))
        found[m.group(2) if m.group(2) is not None else m.group(3)] = _Definition(
            "internal" not in words and "private" not in words, m.start(), end, references)
    return found


def env_count(variable: str, upper: int) -> int | None:
    """`$variable` as an integer in [1, upper], None when it is unset or empty; anything else is a CVMLogicError."""
    env = os.environ.get(variable)
    if not env:
        return None
    try:
        n = int(env)
    except ValueError:
        n = 0
    if not 1 <= n <= upper:
        raise CVMLogicError(f"expected ${variable} to be an integer in [1, {upper}], got {env!r}")
    return n


def compile_threads() -> int:
    """`$CVMC_COMPILE_THREADS`, else the CPUs this process may use, at most 8: how many parts of a large module
    LLVM compiles at once."""
    n = env_count("CVMC_COMPILE_THREADS", MAX_COMPILE_THREADS)
    return n if n is not None else max(1, min(8, len(os.sched_getaffinity(0))))


def _calls(definitions: dict[str, _Definition], name: str) -> frozenset[str]:
    """`name` and the functions defined in the module that it calls, directly or not."""
    seen, todo = {name}, [name]
    while todo:
        for callee in definitions[todo.pop()].references:
            if callee in definitions and callee not in seen:
                seen.add(callee)
                todo.append(callee)
    return frozenset(seen)


def partition(ir_text: str, parts: int) -> list[list[str]]:
    """The exported functions of `ir_text` (llvmlite's printed IR) in at most `parts` groups, one per PART_CHARS
    characters of IR at most, each compiled on its own with the functions it calls. Largest first, each function
    goes to the group whose code (its functions and their callees, each counted once) grows the least; groups
    left empty are dropped. The same text and `parts` give the same groups."""
    return _partition(_definitions(ir_text), len(ir_text), parts)


def _partition(definitions: dict[str, _Definition], chars_in_all: int, parts: int) -> list[list[str]]:
    exported = [name for name, d in definitions.items() if d.exported]
    n = min(parts, len(exported), chars_in_all // PART_CHARS)
    if n <= 1:
        return [exported]
    size = {name: d.end - d.start for name, d in definitions.items()}
    code = {name: _calls(definitions, name) for name in exported}
    groups: list[list[str]] = [[] for _ in range(n)]
    held: list[set[str]] = [set() for _ in range(n)]
    chars = [0] * n
    # a stable sort: ties keep the text's order
    for name in sorted(exported, key=lambda e: -sum(size[f] for f in code[e])):
        grown = [chars[i] + sum(size[f] for f in code[name] - held[i]) for i in range(n)]
        best = min(range(n), key=lambda i: (grown[i], i))
        groups[best].append(name)
        held[best] |= code[name]
        chars[best] = grown[best]
    return [g for g in groups if g]


def split_module(ir_text: str, parts: int) -> list[str]:
    """`ir_text` as the modules of `partition(ir_text, parts)`: each has a group's functions and the functions
    they call (internal there when another group exports them), and all of the rest of the text (the header,
    declarations), nothing else."""
    definitions = _definitions(ir_text)
    groups = _partition(definitions, len(ir_text), parts)
    if len(groups) == 1:
        return [ir_text]
    rest, at = [], 0
    for d in definitions.values():
        rest.append(ir_text[at:d.start])
        at = d.end
    rest.append(ir_text[at:])
    modules = []
    for group in groups:
        code = frozenset().union(*(_calls(definitions, name) for name in group))
        texts = []
        for f, d in definitions.items():
            if f not in code:
                continue
            if d.exported and f not in group:  # another group exports it, this one calls it: a private copy
                texts.append("define internal " + ir_text[d.start + len("define "):d.end])
            else:
                texts.append(ir_text[d.start:d.end])
        modules.append("".join(rest + texts))
    return modules


class _UnlockedLLVM:
    """libllvmlite's pass-pipeline run and object emission, called without llvmlite's global lock (ctypes lets
    go of the GIL too): for modules in LLVMContexts of their own, one thread each."""

    def __init__(self) -> None:
        ffi = llvm.ffi
        lib = ctypes.CDLL(ffi.lib._name)  # the library llvmlite loaded, a handle without its lock
        self.run = lib.LLVMPY_RunNewModulePassManager
        self.run.argtypes = [ffi.LLVMModulePassManagerRef, ffi.LLVMModuleRef, ffi.LLVMPassBuilderRef]
        self.run.restype = None
        self.emit = lib.LLVMPY_TargetMachineEmitToMemory
        self.emit.argtypes = [ffi.LLVMTargetMachineRef, ffi.LLVMModuleRef, ctypes.c_int,
                              ctypes.POINTER(ctypes.c_char_p)]
        self.emit.restype = ffi.LLVMMemoryBufferRef

    def object_file(self, tm: llvm.TargetMachine, mod: llvm.ModuleRef) -> bytes:
        ffi = llvm.ffi
        with ffi.OutputString() as error:
            buffer = self.emit(tm, mod, 1, error)
            if not buffer:
                raise CVMRuntimeError(f"LLVM could not emit the object file: {error}")
        try:
            return ctypes.string_at(ffi.lib.LLVMPY_GetBufferStart(buffer), ffi.lib.LLVMPY_GetBufferSize(buffer))
        finally:
            ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)


@functools.cache
def _unlocked_llvm() -> _UnlockedLLVM | None:
    """The unlocked calls, or None where this llvmlite does not have them (then parts compile one at a time)."""
    try:
        return _UnlockedLLVM()
    except (AttributeError, OSError):
        return None


def object_code(ir_text: str, threads: int | None = None) -> list[bytes]:
    """The JIT's object files of `ir_text`: one per module of `split_module(ir_text, threads)` (default
    `compile_threads()`), compiled at once, each on a thread of its own (this one included)."""
    modules = split_module(ir_text, compile_threads() if threads is None else threads)
    objects: list[bytes | BaseException] = [b""] * len(modules)

    def compile_part(i: int) -> None:
        try:
            objects[i] = _object_file(modules[i], _target_machine())
        except BaseException as e:  # raised on the calling thread below
            objects[i] = e

    helpers = [threading.Thread(target=compile_part, args=(i,), name=f"cvmc-llvm-{i}", daemon=True)
               for i in range(1, len(modules))]
    try:
        for i, helper in enumerate(helpers, 1):
            try:
                helper.start()
            except RuntimeError:  # no thread to be had: this one compiles the part
                compile_part(i)
        compile_part(0)
    finally:  # never leave a thread inside LLVM (an interrupt, then the interpreter's exit)
        for helper in helpers:
            if helper.ident is not None:
                helper.join()
    for result in objects:
        if isinstance(result, BaseException):
            raise result
    return [o for o in objects if isinstance(o, bytes)]


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
def _version_key() -> str:
    import cvmc

    triple, cpu, features = host_target()
    source = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()  # this pipeline, as it is on disk
    parts = [cvmc.__version__, source, llvmlite.__version__, ".".join(map(str, llvm.llvm_version_info)),
             _PIPELINE_VERSION, triple, cpu, features]  # fmt: skip
    return "\0".join(parts)


def cache_key(ir_text: str) -> str:
    """The object cache key of `ir_text` for this machine and compiler: a SHA-256 over the IR, the versions of
    cvmc (and this file), llvmlite, LLVM and the pipeline, and the target triple, CPU and features."""
    digest = hashlib.sha256(_version_key().encode())
    digest.update(b"\0")
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
    ):
        start = time.perf_counter()
        self.ir_text = str(llvm_ir)
        self.key = cache_key(self.ir_text)
        self.timings: dict[str, float] = {}
        store = open_cache(cache_dir) if cache else None
        entry = store.get(self.key, "o") if store is not None else None
        objects = _unpack_objects(entry) if entry is not None else None
        self.cache_hit = objects is not None
        if objects is None:
            objects = object_code(self.ir_text)
            self.timings["compile"] = time.perf_counter() - start
            if store is not None:
                store.put(self.key, "o", _pack_objects(objects))
        self.parts = len(objects)
        loaded = time.perf_counter()
        self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _target_machine())
        for obj in objects:
            self._engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        self._engine.finalize_object()
        self.timings["load"] = time.perf_counter() - loaded
        self.compile_seconds = time.perf_counter() - start
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
    from cvmc.codegen.llvm import emit_llvm, kernel_specs

    return JitEngine(emit_llvm(module), kernel_specs(module).values(), cache=cache, cache_dir=cache_dir)


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

    A `queue.SimpleQueue` hand-off costs about half of a `ThreadPoolExecutor` submit and wait (7 us against 13 us
    for a two-thread launch), which matters for kernels of a few microseconds."""

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


# --------------------------------------------------------------------------------------------------------------
# A whole program on several threads
# --------------------------------------------------------------------------------------------------------------

# A run of a whole program on several threads, without a barrier per kernel: the calling thread ("main") runs
# every call in order; the split ones (flag 1) are cut into chunks of units that main claims from the front and
# helper threads from the back (`claim`), and main goes on once the call's done-counter reaches its trip. A helper
# (another thread, `cvmc_program_helper`) claims chunks of each split call once the call before it is done, and leaves
# when the run has stopped. So a helper that the OS schedules late (the machine may be shared) never holds main
# up beyond the chunk it is running: main does whatever no helper has claimed, and 2 threads are never much
# slower than 1.
# prog, int64 words: [calls, stop, active helpers, sleepers, then per call: kernel entry, its argument table,
# trip, flags, chunk, next unit, units done]. A waiting thread spins a while, then sleeps on the counter it waits
# for (futex); whoever adds to a counter wakes its sleepers. `cvmc_program_begin` (main, before each run) waits
# for the helpers of the previous run to leave, then zeroes the counters and clears `stop`.
# Linux on x86-64 only (the futex system call's number, `pause`); elsewhere the split calls launch one by one.
_PROGRAM_WORDS, _CALL_WORDS = 4, 7
_PROGRAM_IR = r"""
declare i64 @syscall(i64, ...)
declare i32 @sched_yield()
declare void @llvm.x86.sse2.pause()
declare i64 @llvm.readcyclecounter()

define internal void @wake(ptr %word, ptr %sleepers) {
entry:
  %n = load atomic i64, ptr %sleepers seq_cst, align 8
  %any = icmp sgt i64 %n, 0
  br i1 %any, label %go, label %exit
go:
  %w = call i64 (i64, ...) @syscall(i64 202, ptr %word, i32 129, i32 2147483647)
  br label %exit
exit:
  ret void
}

; sleep on *word while it still holds `seen` (futex), counted in *sleepers for the wakers (`wake`); returns at
; once if it moved
define internal void @sleep_on(ptr %word, i64 %seen, ptr %sleepers) {
entry:
  %in = atomicrmw add ptr %sleepers, i64 1 seq_cst, align 8
  %again = load atomic i64, ptr %word seq_cst, align 8
  %moved = icmp ne i64 %again, %seen
  br i1 %moved, label %out, label %futex
futex:
  %low = trunc i64 %again to i32
  %z = call i64 (i64, ...) @syscall(i64 202, ptr %word, i32 128, i32 %low, ptr null)
  br label %out
out:
  %left = atomicrmw sub ptr %sleepers, i64 1 seq_cst, align 8
  ret void
}

; wait until *word >= target (true), or until *stop != 0 when stop is not null (false): spinning `spin_cycles`
; time-stamp counter cycles, then sleeping on the word (and again after each wake-up)
define internal i1 @wait_for(ptr %word, i64 %target, ptr %sleepers, ptr %stop, i64 %spin_cycles) {
entry:
  %check_stop = icmp ne ptr %stop, null
  %t0 = call i64 @llvm.readcyclecounter()
  br label %spin
spin:
  %start = phi i64 [%t0, %entry], [%start, %pause], [%t1, %sleep]
  %now = load atomic i64, ptr %word seq_cst, align 8
  %done = icmp sge i64 %now, %target
  br i1 %done, label %yes, label %stopped
stopped:
  br i1 %check_stop, label %read_stop, label %wait
read_stop:
  %s = load atomic i64, ptr %stop seq_cst, align 8
  %is_stopped = icmp ne i64 %s, 0
  br i1 %is_stopped, label %no, label %wait
wait:
  %t = call i64 @llvm.readcyclecounter()
  %spent = sub i64 %t, %start
  %long = icmp ugt i64 %spent, %spin_cycles
  br i1 %long, label %sleep, label %pause
pause:
  call void @llvm.x86.sse2.pause()
  br label %spin
sleep:
  call void @sleep_on(ptr %word, i64 %now, ptr %sleepers)
  %t1 = call i64 @llvm.readcyclecounter()
  br label %spin
yes:
  ret i1 true
no:
  ret i1 false
}

; claim chunks of call %c until none is left; returns after running its last claimed chunk. The main thread
; claims from the front (units 0, 1, ...), helpers (%back) from the back: each keeps to one end of the rows, so a
; convolution finds most of its input rows where its own thread wrote them (in its core's cache) and only the rows
; where the two ends met cross over. The word `next` holds both counts (front in the low 32 bits, back in the
; high ones), taken by compare-and-swap; a call of 2^32 units or more (its counts would not fit) is claimed from
; the front by every thread (fetch-and-add on the whole word).
define internal void @claim(ptr %call, ptr %sleepers, i1 %back) {
entry:
  %pfn = getelementptr i64, ptr %call, i64 0
  %fn_i = load i64, ptr %pfn, align 8
  %fn = inttoptr i64 %fn_i to ptr
  %ptab = getelementptr i64, ptr %call, i64 1
  %tab_i = load i64, ptr %ptab, align 8
  %tab = inttoptr i64 %tab_i to ptr
  %ptrip = getelementptr i64, ptr %call, i64 2
  %trip = load i64, ptr %ptrip, align 8
  %pchunk = getelementptr i64, ptr %call, i64 4
  %chunk = load i64, ptr %pchunk, align 8
  %pnext = getelementptr i64, ptr %call, i64 5
  %pdone = getelementptr i64, ptr %call, i64 6
  %huge = icmp sge i64 %trip, 4294967296
  br i1 %huge, label %front, label %paired
front:
  %u = atomicrmw add ptr %pnext, i64 %chunk seq_cst, align 8
  %left = icmp slt i64 %u, %trip
  br i1 %left, label %front_run, label %exit
front_run:
  %e0 = add i64 %u, %chunk
  %over = icmp sgt i64 %e0, %trip
  %e = select i1 %over, i64 %trip, i64 %e0
  br label %run
paired:
  %w = load atomic i64, ptr %pnext seq_cst, align 8
  %f = and i64 %w, 4294967295
  %b = lshr i64 %w, 32
  %used = add i64 %f, %b
  %rest = sub i64 %trip, %used
  %any = icmp sgt i64 %rest, 0
  br i1 %any, label %take, label %exit
take:
  %small = icmp slt i64 %rest, %chunk
  %n = select i1 %small, i64 %rest, i64 %chunk
  %n_hi = shl i64 %n, 32
  %inc = select i1 %back, i64 %n_hi, i64 %n
  %new = add i64 %w, %inc
  %pair = cmpxchg ptr %pnext, i64 %w, i64 %new seq_cst seq_cst, align 8
  %ok = extractvalue { i64, i1 } %pair, 1
  br i1 %ok, label %paired_run, label %paired
paired_run:
  %top = sub i64 %trip, %b
  %from_top = sub i64 %top, %n
  %pb = select i1 %back, i64 %from_top, i64 %f
  %pe = add i64 %pb, %n
  br label %run
run:
  %rb = phi i64 [%u, %front_run], [%pb, %paired_run]
  %re = phi i64 [%e, %front_run], [%pe, %paired_run]
  call void %fn(ptr %tab, i64 %rb, i64 %re)
  %cnt = sub i64 %re, %rb
  %d = atomicrmw add ptr %pdone, i64 %cnt seq_cst, align 8
  %d1 = add i64 %d, %cnt
  %all = icmp sge i64 %d1, %trip
  br i1 %all, label %wake, label %again
wake:
  call void @wake(ptr %pdone, ptr %sleepers)
  br label %again
again:
  br i1 %huge, label %front, label %paired
exit:
  ret void
}

; the helpers' pool (`_Pool`), int64 words: [generation, sleepers, program, tickets, inside, joined]. A helper
; thread lives in @cvmc_pool_worker: it waits for the generation to move (spinning POOL_SPIN_CYCLES time-stamp
; counter cycles, about a millisecond, so that back-to-back runs find it awake, then on a futex), takes a ticket if
; one is left, and runs the published program's helper, counted in `inside` (and in `joined`, for tests). A run
; publishes its program and tickets (@cvmc_pool_publish) and retires it when done (@cvmc_pool_retire: no program,
; no ticket, then it waits until no helper is inside, which takes microseconds: every chunk is done by then and
; `stop` is set), so no helper ever touches a program outside its run, and no helper ever needs Python's lock.
define void @cvmc_pool_worker(ptr %pool) {
entry:
  %pprog = getelementptr i64, ptr %pool, i64 2
  %ptickets = getelementptr i64, ptr %pool, i64 3
  %pinside = getelementptr i64, ptr %pool, i64 4
  %pjoined = getelementptr i64, ptr %pool, i64 5
  br label %loop
loop:
  %last = phi i64 [0, %entry], [%gen, %loop], [%gen, %skip], [%gen, %left]
  %next_gen = add i64 %last, 1
  %sleepers = getelementptr i64, ptr %pool, i64 1
  %woke = call i1 @wait_for(ptr %pool, i64 %next_gen, ptr %sleepers, ptr null, i64 POOL_SPIN_CYCLES)
  %gen = load atomic i64, ptr %pool seq_cst, align 8
  %t = atomicrmw sub ptr %ptickets, i64 1 seq_cst, align 8
  %got = icmp sgt i64 %t, 0
  br i1 %got, label %enter, label %loop
enter:
  %in = atomicrmw add ptr %pinside, i64 1 seq_cst, align 8
  %prog_i = load atomic i64, ptr %pprog seq_cst, align 8
  %none = icmp eq i64 %prog_i, 0
  br i1 %none, label %skip, label %help
help:
  %prog = inttoptr i64 %prog_i to ptr
  %j = atomicrmw add ptr %pjoined, i64 1 seq_cst, align 8
  call void @cvmc_program_helper(ptr %prog)
  br label %left
skip:
  %out0 = atomicrmw sub ptr %pinside, i64 1 seq_cst, align 8
  br label %loop
left:
  %out1 = atomicrmw sub ptr %pinside, i64 1 seq_cst, align 8
  br label %loop
}

define void @cvmc_pool_publish(ptr %pool, ptr %prog, i64 %tickets) {
entry:
  %sleepers = getelementptr i64, ptr %pool, i64 1
  %pprog = getelementptr i64, ptr %pool, i64 2
  %ptickets = getelementptr i64, ptr %pool, i64 3
  %prog_i = ptrtoint ptr %prog to i64
  store atomic i64 %prog_i, ptr %pprog seq_cst, align 8
  store atomic i64 %tickets, ptr %ptickets seq_cst, align 8
  %g = atomicrmw add ptr %pool, i64 1 seq_cst, align 8
  call void @wake(ptr %pool, ptr %sleepers)
  ret void
}

define void @cvmc_pool_retire(ptr %pool) {
entry:
  %pprog = getelementptr i64, ptr %pool, i64 2
  %ptickets = getelementptr i64, ptr %pool, i64 3
  %pinside = getelementptr i64, ptr %pool, i64 4
  store atomic i64 0, ptr %pprog seq_cst, align 8
  store atomic i64 0, ptr %ptickets seq_cst, align 8
  call void @drain(ptr %pinside)
  ret void
}

; wait, yielding the CPU, until no thread is counted in *count
define internal void @drain(ptr %count) {
entry:
  br label %check
check:
  %n = load atomic i64, ptr %count seq_cst, align 8
  %busy = icmp sgt i64 %n, 0
  br i1 %busy, label %yield, label %done
yield:
  %y = call i32 @sched_yield()
  br label %check
done:
  ret void
}

define void @cvmc_program_begin(ptr %prog) {
entry:
  %calls = load i64, ptr %prog, align 8
  %pactive = getelementptr i64, ptr %prog, i64 2
  call void @drain(ptr %pactive)
  br label %reset
reset:
  %c = phi i64 [0, %entry], [%c1, %zero]
  %more = icmp slt i64 %c, %calls
  br i1 %more, label %zero, label %go
zero:
  %base = mul i64 %c, CALL_WORDS
  %at = add i64 %base, PROGRAM_WORDS_PLUS_5
  %pnext = getelementptr i64, ptr %prog, i64 %at
  store i64 0, ptr %pnext, align 8
  %pdone = getelementptr i64, ptr %pnext, i64 1
  store i64 0, ptr %pdone, align 8
  %c1 = add i64 %c, 1
  br label %reset
go:
  %pstop = getelementptr i64, ptr %prog, i64 1
  store atomic i64 0, ptr %pstop seq_cst, align 8
  ret void
}

define void @cvmc_program_main(ptr %prog) {
entry:
  %calls = load i64, ptr %prog, align 8
  %sleepers = getelementptr i64, ptr %prog, i64 3
  br label %loop
loop:
  %c = phi i64 [0, %entry], [%c1, %next]
  %more = icmp slt i64 %c, %calls
  br i1 %more, label %body, label %exit
body:
  %base = mul i64 %c, CALL_WORDS
  %at = add i64 %base, PROGRAM_WORDS
  %call = getelementptr i64, ptr %prog, i64 %at
  %pflags = getelementptr i64, ptr %call, i64 3
  %flags = load i64, ptr %pflags, align 8
  %split = icmp ne i64 %flags, 0
  %ptrip = getelementptr i64, ptr %call, i64 2
  %trip = load i64, ptr %ptrip, align 8
  %pdone = getelementptr i64, ptr %call, i64 6
  br i1 %split, label %share, label %whole
share:
  call void @claim(ptr %call, ptr %sleepers, i1 false)
  %ok = call i1 @wait_for(ptr %pdone, i64 %trip, ptr %sleepers, ptr null, i64 WAIT_SPIN_CYCLES)
  br label %next
whole:
  %fn_i = load i64, ptr %call, align 8
  %fn = inttoptr i64 %fn_i to ptr
  %ptab = getelementptr i64, ptr %call, i64 1
  %tab_i = load i64, ptr %ptab, align 8
  %tab = inttoptr i64 %tab_i to ptr
  call void %fn(ptr %tab, i64 0, i64 %trip)
  store atomic i64 %trip, ptr %pdone seq_cst, align 8
  call void @wake(ptr %pdone, ptr %sleepers)
  br label %next
next:
  %c1 = add i64 %c, 1
  br label %loop
exit:
  %pstop = getelementptr i64, ptr %prog, i64 1
  store atomic i64 1, ptr %pstop seq_cst, align 8
  ret void
}

define void @cvmc_program_helper(ptr %prog) {
entry:
  %calls = load i64, ptr %prog, align 8
  %pstop = getelementptr i64, ptr %prog, i64 1
  %pactive = getelementptr i64, ptr %prog, i64 2
  %sleepers = getelementptr i64, ptr %prog, i64 3
  %in = atomicrmw add ptr %pactive, i64 1 seq_cst, align 8
  %s = load atomic i64, ptr %pstop seq_cst, align 8
  %stopped = icmp ne i64 %s, 0
  br i1 %stopped, label %exit, label %loop
loop:
  %c = phi i64 [0, %entry], [%c1, %next]
  %more = icmp slt i64 %c, %calls
  br i1 %more, label %body, label %exit
body:
  %base = mul i64 %c, CALL_WORDS
  %at = add i64 %base, PROGRAM_WORDS
  %call = getelementptr i64, ptr %prog, i64 %at
  %first = icmp eq i64 %c, 0
  br i1 %first, label %ready, label %wait_previous
wait_previous:
  %prev_at = sub i64 %at, CALL_WORDS
  %prev = getelementptr i64, ptr %prog, i64 %prev_at
  %pptrip = getelementptr i64, ptr %prev, i64 2
  %ptrip = load i64, ptr %pptrip, align 8
  %ppdone = getelementptr i64, ptr %prev, i64 6
  %ok = call i1 @wait_for(ptr %ppdone, i64 %ptrip, ptr %sleepers, ptr %pstop, i64 WAIT_SPIN_CYCLES)
  br i1 %ok, label %ready, label %exit
ready:
  %pflags = getelementptr i64, ptr %call, i64 3
  %flags = load i64, ptr %pflags, align 8
  %split = icmp ne i64 %flags, 0
  br i1 %split, label %share, label %next
share:
  call void @claim(ptr %call, ptr %sleepers, i1 true)
  br label %next
next:
  %c1 = add i64 %c, 1
  br label %loop
exit:
  %out = atomicrmw sub ptr %pactive, i64 1 seq_cst, align 8
  ret void
}
"""


_PROGRAM_RUNNER: list[Any] = []  # [engine, begin, main, helper]: compiled once per process, on first use
_PROGRAM_LOCK = threading.Lock()
# A waiting thread spins this many time-stamp counter cycles (about 0.3 ms) before it sleeps: a thread that sleeps
# is woken by the other one, and the scheduler often wakes it onto the waker's CPU, where the two then share one
# core while the other idles (the main thread waiting for a helper's last chunk did, between two calls).
_WAIT_SPIN_CYCLES = 1_000_000
_POOL_SPIN_CYCLES = 3_000_000  # about 1 ms: a helper between two runs (`cvmc_pool_worker`)


class _Pool:
    """The helper threads of `Program` runs, started once and kept, each in native code for good
    (`cvmc_pool_worker`: it never takes Python's lock, which the calling thread holds between runs). A run
    publishes its program and `threads - 1` tickets, and retires it when done. One run has the pool at a time; a
    run that finds it taken (another thread is running a program) runs without helpers: the same result, later."""

    def __init__(self) -> None:
        self.words = np.zeros(6, dtype=np.int64)  # [generation, sleepers, program, tickets, inside, joined]
        self.busy = threading.Lock()
        self._grow_lock = threading.Lock()
        self.tids: list[int] = []  # the helpers' thread ids
        self.cpu = -1  # the CPU the helpers are kept off: the publishing thread's at the last publish

    @property
    def joined(self) -> int:
        """How many times a helper has entered a program (for tests)."""
        return int(self.words[5])

    def _work(self) -> None:
        self.tids.append(threading.get_native_id())
        _program_runner()[4](self.words.ctypes.data)  # never returns

    def publish(self, program: Program, helpers: int) -> None:
        """Hand `program` to `helpers` helper threads (the caller holds `busy`, and calls `retire` after the run)."""
        if len(self.tids) < helpers:
            with self._grow_lock:
                while len(self.tids) < helpers:
                    started = len(self.tids)
                    threading.Thread(target=self._work, name=f"cvmc-helper-{started}", daemon=True).start()
                    while len(self.tids) == started:  # its id, before it is kept off the CPU below
                        time.sleep(0)
        self._keep_off(_sched_getcpu())
        _program_runner()[5](self.words.ctypes.data, program.words.ctypes.data, helpers)

    def retire(self) -> None:
        """No program, no ticket; returns once no helper is inside the last one."""
        _program_runner()[6](self.words.ctypes.data)

    def _keep_off(self, cpu: int) -> None:
        """Keep the helpers off `cpu`, the calling thread's: a helper woken by it is otherwise often put on its
        CPU (the scheduler's wake-affinity), where the two share one core for milliseconds while another idles
        (runs 2x slower, seen after the model sat idle for 0.1 s). One system call per helper when it moves."""
        if cpu == self.cpu or cpu < 0:
            return
        self.cpu = cpu
        allowed = os.sched_getaffinity(0)
        others = allowed - {cpu}
        for tid in list(self.tids):
            try:
                os.sched_setaffinity(tid, others or allowed)
            except OSError:  # a thread of another process's pool after a fork: not ours to move
                pass


def _sched_getcpu() -> int:
    """The CPU the calling thread runs on (-1 where unknown)."""
    fn = _LIBC_GETCPU[0] if _LIBC_GETCPU else None
    return int(fn()) if fn is not None else -1


def _libc_getcpu() -> Any:
    try:
        fn = ctypes.CDLL(None).sched_getcpu
    except (OSError, AttributeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_int, []
    return fn


_LIBC_GETCPU = [_libc_getcpu()]
_POOL = _Pool()


def _new_pool_after_fork() -> None:
    """A forked child has none of the parent's helper threads (and their thread ids may name other processes'
    threads there): it starts a pool of its own."""
    global _POOL
    _POOL = _Pool()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_pool_after_fork)


def _program_runner() -> list[Any]:
    with _PROGRAM_LOCK:
        if not _PROGRAM_RUNNER:
            ir_text = (_PROGRAM_IR.replace("POOL_SPIN_CYCLES", str(_POOL_SPIN_CYCLES))
                       .replace("WAIT_SPIN_CYCLES", str(_WAIT_SPIN_CYCLES))
                       .replace("PROGRAM_WORDS_PLUS_5", str(_PROGRAM_WORDS + 5))
                       .replace("PROGRAM_WORDS", str(_PROGRAM_WORDS)).replace("CALL_WORDS", str(_CALL_WORDS)))
            engine = llvm.create_mcjit_compiler(llvm.parse_assembly(ir_text), _target_machine())
            engine.finalize_object()
            one = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
            publish = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
            _PROGRAM_RUNNER.extend([engine, *(one(engine.get_function_address(f"cvmc_program_{name}"))
                                              for name in ("begin", "main", "helper")),
                                    one(engine.get_function_address("cvmc_pool_worker")),
                                    publish(engine.get_function_address("cvmc_pool_publish")),
                                    one(engine.get_function_address("cvmc_pool_retire"))])
        return _PROGRAM_RUNNER


def program_runner_available() -> bool:
    """Whether `Program` may run here: Linux on x86-64 (its futex system call and `pause`)."""
    import sys

    return sys.platform.startswith("linux") and llvm.get_process_triple().startswith("x86_64")


class Program:
    """Prepared calls run in order by this thread, the split ones shared with `threads - 1` helper threads that
    claim chunks of their units (`cvmc_program_main`, `cvmc_program_helper`): one hand-off to the helpers per
    run, none per kernel, and this thread never waits for a helper that has not started."""

    def __init__(self, calls: Sequence[tuple[PreparedCall, bool]], threads: int):
        self.calls = calls  # keeps the argument tables alive
        # no split call, nothing to share: no hand-off (waking a helper costs more than a small model's run)
        self.threads = threads if any(split for _, split in calls) else 1
        words = [len(calls), 1, 0, 0]
        for call, split in calls:
            trip = call.kernel.trip
            chunk = max(1, -(-trip // (16 * threads)))  # small chunks: the threads finish a call together
            words += [call.kernel.address, ctypes.addressof(call._table), trip, int(split), chunk, 0, 0]
        self.words = np.array(words, dtype=np.int64)
        _, self._begin, self._main, self._helper = _program_runner()[:4]
        self._pointer = self.words.ctypes.data

    def _help(self) -> None:
        """A helper's run from Python (tests: a helper that starts late, even after the runner is gone; a bound
        method keeps this program, its words and through its calls the compiled code, alive until it has left)."""
        self._helper(self._pointer)

    def __call__(self) -> None:
        self._begin(self._pointer)
        if self.threads > 1 and _POOL.busy.acquire(blocking=False):
            try:
                _POOL.publish(self, self.threads - 1)
                self._main(self._pointer)
            finally:
                _POOL.retire()
                _POOL.busy.release()
            return
        self._main(self._pointer)


# --------------------------------------------------------------------------------------------------------------
# Arrays to pointers
# --------------------------------------------------------------------------------------------------------------


def check_arguments(spec: KernelSpec, arrays: tuple[np.ndarray, ...]) -> list[int]:
    """The base pointers to pass for `arrays` as the arguments of kernel `spec`, after the checks every call gets
    (dtype, alignment, a layout whose span fits the array, no written argument overlapping another)."""
    if len(arrays) != len(spec.args):
        raise CVMLogicError(f"kernel '{spec.name}': expected {len(spec.args)} arrays, got {len(arrays)}")
    bases = [_base_pointer(spec.name, i, arg, a) for i, (arg, a) in enumerate(zip(spec.args, arrays))]
    _check_no_overlap(spec.name, spec.args, arrays, bases)
    return bases


def _describe(arg: KernelArg) -> str:
    layout = "" if arg.contiguous and arg.offset == 0 else f" (strides {arg.strides}, offset {arg.offset})"
    return f"a {_NUMPY_NAMES[arg.element]} array of shape {arg.shape}{layout}"


def _base_pointer(kernel: str, index: int, arg: KernelArg, array: np.ndarray) -> int:
    """The base pointer to pass for `array` as `arg`.

    `array` is either the view itself (its shape and strides are the argument's; the base is its data pointer
    minus the static offset), or, for a layout other than the identity, the whole underlying buffer, C-contiguous
    and large enough for every element the layout reaches (the base is its data pointer)."""

    def fail(why: str) -> CVMLogicError:
        return CVMLogicError(f"kernel '{kernel}' argument {index}: expected {_describe(arg)}, {why}")

    if not isinstance(array, np.ndarray):
        raise fail(f"got {type(array).__name__}")
    kinds, itemsize = _NUMPY_KINDS[arg.element]
    if array.dtype.kind not in kinds or array.dtype.itemsize != itemsize:
        if not (arg.element == "i1" and array.dtype.kind in "iu" and array.dtype.itemsize == 1):
            raise fail(f"got dtype {array.dtype}")
    if not array.flags.aligned:
        raise fail("got an unaligned array")
    if arg.written and not array.flags.writeable:
        raise fail("got a read-only array")
    same_strides = all(n == 1 or s == t * itemsize for n, s, t in zip(array.shape, array.strides, arg.strides))
    if array.shape == arg.shape and same_strides:
        return array.ctypes.data - arg.offset * itemsize
    identity = arg.contiguous and arg.offset == 0
    if identity:
        raise fail(f"got shape {array.shape} and strides {array.strides}")
    lo, hi = arg.element_span()
    if not array.flags.c_contiguous or lo < 0 or array.size < hi:
        raise fail(f"or its C-contiguous buffer of at least {hi} elements, got shape {array.shape}")
    return array.ctypes.data


def _shares(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays whose address ranges intersect really share an element (interleaved views do not)."""
    try:
        return bool(np.shares_memory(a, b, max_work=10_000))  # pyright: ignore[reportArgumentType]
    except np.exceptions.TooHardError:
        return True


def _check_no_overlap(kernel: str, args: tuple[KernelArg, ...], arrays: tuple[np.ndarray, ...], bases: list[int]):
    """Arguments are `noalias`: a written argument may share no byte with any other argument."""
    spans = []
    for arg, array, base in zip(args, arrays, bases):
        lo, hi = arg.element_span()
        spans.append((base + lo * array.dtype.itemsize, base + hi * array.dtype.itemsize))
    for w in (i for i, arg in enumerate(args) if arg.written):  # written x any: O(written * args), not O(args^2)
        lo_w, hi_w = spans[w]
        for j, (lo_j, hi_j) in enumerate(spans):
            once = j > w or not args[j].written  # a pair of written arguments is checked from its first
            if j != w and once and lo_w < hi_j and lo_j < hi_w and _shares(arrays[w], arrays[j]):
                i, k = min(w, j), max(w, j)
                raise CVMLogicError(
                    f"kernel '{kernel}': arguments {i} and {k} overlap in memory and one of them is written"
                )
