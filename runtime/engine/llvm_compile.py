"""LLVM IR to object code for this CPU: the target, the O3 pipeline, object files, and a large module compiled in
parts on several threads at once (`object_code`). The JIT (`jit.JitEngine`) loads what this returns; `cvm-aot`
takes `shared_object_code` (the same pipeline, as position-independent code).

    objects = object_code(ir_text)          # one object file per part, in order
    text = optimized_ir(ir_text)            # the IR after O3 (dumps), `assembly(ir_text)` the machine code

Pipeline: parse the IR text, set the host triple and data layout, optimize at O3 with the new pass manager (loop
and SLP vectorization on), emit an object file for the host CPU and its features.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import threading
from typing import TYPE_CHECKING, Any, NamedTuple

import llvmlite.binding as llvm
from llvmlite import ir

from cvmc.errors import CVMRuntimeError
from cvmc.runtime.engine.threads import env_count

if TYPE_CHECKING:
    from cvmc.passes.loops.target import Target

# Bump when the optimization pipeline or the target options change: it is part of the cache key.
_PIPELINE_VERSION = "o3-vec-slp-unroll50-parts-4-zmm"
# Let the loop vectorizer pick the widest vectors for narrow types: i16 dot products then become full-width
# `vpmaddwd` on AVX2 instead of half-width ones. A lower unroll threshold than O3's 300: LLVM unrolled the epilogue
# loops of small static tiles (16 x 16 outputs) in full, for no speed; the hot loops are the micro-kernels, unrolled
# by the lowering itself (the compile and run times before and after: bench/results/cpu.md and the git log).
_LLVM_OPTIONS = ("-vectorizer-maximize-bandwidth", "-unroll-threshold=50")
# --------------------------------------------------------------------------------------------------------------
# LLVM: target, optimization, object files
# --------------------------------------------------------------------------------------------------------------


@functools.cache
def host_target() -> tuple[str, str, str]:
    """(triple, CPU name, CPU features) of this machine; initializes LLVM's native target once."""
    from cvmc.runtime.driver.target import host_target as machine

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    for option in _LLVM_OPTIONS:
        llvm.set_option("", option)
    return machine()[:3]  # LLVM's own answer, asked once a machine (`runtime.driver.target.host_target`)


def full_width(features: str) -> str:
    """`features` for a target machine: with AVX-512, LLVM's tuning flag `prefer-256-bit` (set for Intel's
    AVX-512 CPUs, Skylake-SP to Emerald Rapids, not for AMD's Zen 4 and 5) switched off, so the vectorizers use
    512-bit registers there too. Without it the float loops of the cinn path (element-wise chains, reductions, Dot
    and conv micro-kernels) ran in ymm halves on an Emerald Rapids. A tuning flag, not an instruction set: it
    changes no result (no loop is reassociated by width) and no instruction an object may use."""
    return f"{features},-prefer-256-bit" if "+avx512f" in features.split(",") else features


def _target_machine(shared: bool = False) -> llvm.TargetMachine:
    """This machine's target: for MCJIT (the large code model, static relocations), or, `shared`, for a shared
    object (position-independent code, the small code model: `link_shared`)."""
    triple, cpu, features = host_target()
    target = llvm.Target.from_triple(triple)
    if shared:
        return target.create_target_machine(cpu=cpu, features=full_width(features), opt=3, reloc="pic",
                                            codemodel="default")
    return target.create_target_machine(cpu=cpu, features=full_width(features), opt=3, jit=True)


def shared_target(cpu: str | None = None) -> tuple[str, str]:
    """(CPU name, CPU features) that `shared_object_code` compiles for: this machine's, or the named CPU with the
    features LLVM gives it (an empty string)."""
    _, host_cpu, host_features = host_target()
    return (host_cpu, host_features) if cpu is None or cpu == host_cpu else (cpu, "")


def shared_object_code(llvm_ir: ir.Module | str, target: Target | None = None) -> bytes:
    """The object file of `llvm_ir` for a shared library (`cvm-aot`): the engine's O3 pipeline and options, for
    the LLVM CPU and features `target` names (its `cpu` "": this machine's; its `features` "": the CPU's own;
    `target` None: this machine's CPU and features), as position-independent code with the small code model (the
    JIT's objects use the large code model and static relocations, which MCJIT places anywhere in memory)."""
    triple = host_target()[0]
    name, default = shared_target(target.cpu or None if target is not None else None)
    features = target.features if target is not None and target.features else default
    tm = llvm.Target.from_triple(triple).create_target_machine(cpu=name, features=full_width(features), opt=3,
                                                                reloc="pic", codemodel="default")
    return _object_file(str(llvm_ir), tm)


def _object_file(ir_text: str, tm: llvm.TargetMachine, optimize: bool = True) -> bytes:
    """The object file of `ir_text` for `tm`, compiled in an LLVMContext of its own: without llvmlite's lock where
    it can be (`_unlocked_llvm`), so that other threads compile at the same time. `optimize` False: the code
    generator alone (at O3), no IR pipeline (`_parsed`), for code whose speed is its own (the scheduler)."""
    mod = _optimized(ir_text, tm, llvm.create_context()) if optimize else _parsed(ir_text, tm, llvm.create_context())
    unlocked = _unlocked_llvm()
    return unlocked.object_file(tm, mod) if unlocked is not None else tm.emit_object(mod)


def _parsed(ir_text: str, tm: llvm.TargetMachine, context: Any = None) -> llvm.ModuleRef:
    """`ir_text` parsed and verified, for `tm`'s triple and data layout."""
    try:
        mod = llvm.parse_assembly(ir_text, context)
        mod.verify()
    except RuntimeError as e:
        raise CVMRuntimeError(f"invalid LLVM IR: {e}") from e
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    return mod


def _optimized(ir_text: str, tm: llvm.TargetMachine, context: Any = None) -> llvm.ModuleRef:
    """Parse, verify and optimize `ir_text` at O3 for `tm`. In a `context` of its own (not LLVM's global one), the
    optimizer runs without llvmlite's lock (see `_unlocked_llvm`)."""
    mod = _parsed(ir_text, tm, context)
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

# LLVM's optimizer and code generator take most of a cold compile (bench/results/cpu.md). A module with
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


def object_code(ir_text: str, threads: int | None = None, optimize: bool = True, shared: bool = False) -> list[bytes]:
    """The JIT's object files of `ir_text`: one per module of `split_module(ir_text, threads)` (default
    `compile_threads()`), compiled at once, each on a thread of its own (this one included); `optimize` False:
    without the O3 IR pipeline (`_object_file`); `shared`: position-independent, for `link_shared`."""
    modules = split_module(ir_text, compile_threads() if threads is None else threads)
    objects: list[bytes | BaseException] = [b""] * len(modules)

    def compile_part(i: int) -> None:
        try:
            objects[i] = _object_file(modules[i], _target_machine(shared), optimize)
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


# --------------------------------------------------------------------------------------------------------------
# Object files linked into one shared object (what a warm process loads with dlopen, without LLVM)
# --------------------------------------------------------------------------------------------------------------

# The system's linker, called directly (faster than through `cc`: bench/results/2026-11-28-comment-figures.md): the
# objects need nothing but libc's memset and memcpy, which the process has (a symbol the process lacks fails the
# test load of `jit`, and the code is loaded by MCJIT instead). -Bsymbolic: a kernel's calls within its object never
# go to a symbol of the same name elsewhere in the process.
_LINK_FLAGS = ("-shared", "-Bsymbolic", "-z", "noexecstack", "-z", "relro", "-z", "now", "--hash-style=gnu")


@functools.cache
def linker() -> str | None:
    """The linker `link_shared` calls: `ld` on the PATH (Linux), else None (then the JIT links in memory)."""
    import shutil
    import sys

    return shutil.which("ld") if sys.platform.startswith("linux") else None


def link_shared(objects: list[bytes]) -> bytes | None:
    """`objects` (`object_code(..., shared=True)`) linked by the system's linker into one shared object, written
    and read back in a folder of this process's own (0700, `tempfile.mkdtemp`); None when there is no linker or
    it fails (the caller compiles for MCJIT instead)."""
    import subprocess
    import tempfile

    ld = linker()
    if ld is None:
        return None
    with tempfile.TemporaryDirectory(prefix="cvmc-link-") as work:
        names = []
        for i, obj in enumerate(objects):
            names.append(os.path.join(work, f"part{i}.o"))
            with open(names[-1], "xb") as f:
                f.write(obj)
        out = os.path.join(work, "code.so")
        try:
            done = subprocess.run([ld, *_LINK_FLAGS, "-o", out, *names], capture_output=True, timeout=120)
            if done.returncode != 0:
                return None
            with open(out, "rb") as f:
                return f.read()
        except (OSError, subprocess.TimeoutExpired):
            return None
