"""Ahead-of-time compilation for cvm-runtime's C API: verified models as shared objects in a store.

    entries = build_model(graph_json, params, "store")     # `cvm-aot build model.json params.bin --store DIR`
    write_library("libcvm.so")                             # `cvm-aot lib -o libcvm.so`

A C program linked with the library calls cvm-runtime's API (`capi/c_api.h`); `CVMAPILoadModel` hashes the two
files' bytes, finds the model's entry in the store named by `$CVMC_AOT_STORE` and loads it. No Python runs then.

One code path with the JIT: a model is loaded and verified by `load_graph`, lowered by `compile.lower_to_llvm` (the
loop level, the LLVM emitter) and optimized by the JIT's pipeline (`jit.shared_object_code`: the same IR, passes
and target options, emitted as position-independent code); the host program is the JIT's `HostProgram`, whose
calls are resolved and checked by the JIT's own runner (`cpu.CpuRunner` over `jit.check_arguments`) and written
as the tables of `capi/cvmc_model.h`, which the library walks as the runner does. The JIT and the AOT differ in
where the object lands: in memory through MCJIT, or in a shared object linked by the system's `cc`.

The store (`capi/store.h` has the format): one entry `<key>.cvmc` per model, where the key is a SHA-256 of the
two files' bytes, holding the model's shared object, or, for a model cvm-runtime rejects at load, the decision
(status and message), so that loading it gives the runtime's status; and one entry per graph for
`CVMAPIGetGasFromGraphFile`. Every entry is sealed as the JIT's cache seals its entries (`cvmc.runtime.store`,
one format): HMAC-SHA256 tags of its length and of its payload, keyed by this user's secret, the key of cvmc's
compiled-code cache (`cvmc.runtime.cache`): the library loads an object only when its entry's tags check for that
name and key, so a damaged, planted or renamed file is refused with status 2. The store's folder is the
operator's to name; what is in it is trusted only through the tags.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from cvmc.dialects.cvm_rules import MAX_MEMORY, precision_bound
from cvmc.errors import CVMError, CVMLogicError, CVMRuntimeError
from cvmc.runtime import store

if TYPE_CHECKING:
    from cvmc.codegen.abi import KernelSpec
    from cvmc.runtime.graph import Graph
    from cvmc.runtime.host import HostProgram

STORE_ENV = "CVMC_AOT_STORE"
ENTRY_SUFFIX = ".cvmc"
CAPI = Path(__file__).parent / "capi"
LIBRARY_SOURCES = ("capi.c", "store.c", "sha256.c", "cpu.c")
MODEL_SYMBOL = "cvmc_model_v1"
MODEL_ABI = 1
_ROOTS = {"arena": 0, "input": 1}  # any other root is a global, in the params (2)
_PARAMS_ROOT = 2
_POST = {None: 0, "argmax": 1, "detection": 2}
_PARAMS_ALIGN = 64
ENTRY_MAX = 1 << 33  # the largest payload (store.c's bound): a model's object holds its params, bounded by an int
_SYMBOL = re.compile(r"[A-Za-z_.$][A-Za-z0-9_.$]*")


# --------------------------------------------------------------------------------------------------------------
# Keys and entries
# --------------------------------------------------------------------------------------------------------------


def model_key(graph_json: bytes, params: bytes) -> str:
    """The store key of a model: SHA-256 of "cvmc-aot-model-1\\0", then each file's length (u64 LE) and bytes."""
    h = hashlib.sha256(b"cvmc-aot-model-1\0")
    for data in (graph_json, params):
        h.update(struct.pack("<Q", len(data)))
        h.update(data)
    return h.hexdigest()


def graph_text(graph_json: bytes) -> bytes:
    """What `CVMAPIGetGasFromGraphFile` reads of a graph: its text up to the first NUL (a C string)."""
    return graph_json.split(b"\0", 1)[0]


def graph_key(graph_json: bytes) -> str:
    """The store key of a graph alone (`CVMAPIGetGasFromGraphFile`): its C string's length (u64 LE) and bytes."""
    text = graph_text(graph_json)
    h = hashlib.sha256(b"cvmc-aot-graph-1\0")
    h.update(struct.pack("<Q", len(text)))
    h.update(text)
    return h.hexdigest()


def store_secret(folder: Path) -> bytes:
    """The key of the store's tags: this user's cache key (`$XDG_STATE_HOME/cvmc` or `~/.local/state/cvmc`)."""
    from cvmc.runtime.cache import key_dir, user_secret

    keys = key_dir(folder)
    if keys == folder:  # no home: the cache would keep its key beside its entries; the library will not look there
        raise CVMRuntimeError("no folder for the store's secret key: set $XDG_STATE_HOME or $HOME")
    secret = user_secret(keys)
    if isinstance(secret, str):
        raise CVMRuntimeError(secret)
    return secret


def entry_path(folder: str | os.PathLike[str], key: str) -> Path:
    return Path(folder) / f"{key}{ENTRY_SUFFIX}"


def write_entry(folder: Path, key: str, payload: bytes, secret: bytes) -> Path:
    """Write an entry (`store.seal`, `store.write_file`: atomically, through nothing another user planted),
    readable by all (the node may run as another user: the tag, not the file's mode, is what makes it trusted)."""
    name = entry_path(folder, key).name
    try:
        return store.Store(folder, secret, ENTRY_MAX, 0o644).put(name, payload)
    except OSError as e:
        raise CVMRuntimeError(f"cannot write the store entry {str(folder / name)!r}: {e.strerror or e}") from None


def read_entry(folder: str | os.PathLike[str], key: str) -> bytes | None:
    """The payload of entry `key` when its head and tag check with this user's secret, else None (what the
    library does, in Python: for tests and tools)."""
    folder = Path(os.path.abspath(folder))
    try:
        payload = store.Store(folder, store_secret(folder), ENTRY_MAX).get(entry_path(folder, key).name)
    except OSError:
        return None
    return None if isinstance(payload, store.Unsealed) else payload


def decision_payload(error: CVMError) -> bytes:
    return b"D" + str(error.status).encode() + str(error).encode("utf-8", "backslashreplace")


# --------------------------------------------------------------------------------------------------------------
# What the C API reports (CVMModel, model.cc)
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ApiFacts:
    """What `CVMAPIGet*` report for a loaded model, and how `CVMAPIInference` reads and packs."""

    version: str
    postprocess: str  # the graph's text ("" when none)
    post: int  # what SaveTensor does: 0, argmax 1, detection 2
    gas: int
    storage_size: int
    input_size: int
    input_bound: int
    input_type_size: int
    input_length: int
    output_type_size: int
    output_length: int


def api_facts(graph_json: bytes, graph: Graph) -> ApiFacts:
    """The C API's view of a verified `graph` read from `graph_json` (model.cc:24-110 and :285-330)."""
    from cvmc.runtime.graph import parse_graph

    _, _, prepared, _ = parse_graph(graph_json)
    pools: dict[int, int] = {}
    for sid, shape in zip(prepared.storage, prepared.shapes):  # graph_runtime.cc:565 GetStorageSize
        pools[sid] = max(pools.get(sid, 0), 4 * prod(shape))
    storage = sum((size + 3) // 4 * 4 for size in pools.values())
    nid = graph.input_id
    assert nid is not None, "the loader requires an input `data`"
    in_shape, in_prec = graph.nodes[nid].shapes[0], graph.nodes[nid].precisions[0]
    in_type = 1 if in_prec <= 8 else 4
    post = graph.postprocess
    out_type = 4 if post is not None or max(graph.head_precisions()) > 8 else 1  # model.cc:60, as pack_outputs
    shapes = graph.head_shapes()
    if post == "argmax":  # model.cc:291 GetOutputLength
        out = sum(prod(s) // s[-1] for s in shapes)
    elif post == "detection":
        out = (shapes[0][-2] if len(shapes[0]) >= 2 else 0) * sum(s[-1] for s in shapes)
    else:
        out = sum(prod(s) for s in shapes)
    return ApiFacts(prepared.raw.version, prepared.raw.postprocess, _POST[post], graph.gas, storage, prod(in_shape),
                    precision_bound(in_prec), in_type, prod(in_shape) * in_type, out_type, out * out_type)


def graph_gas_decision(graph_json: bytes) -> int | CVMError:
    """`CVMAPIGetGasFromGraphFile`: `CvmRuntime::EstimateOps` (graph_runtime.h:98) reads the graph (Load), prepares
    it (PrepareGraphWithVersion), infers shapes, types and precisions (CheckAttr) and counts its ops (GetOps): the
    loader's first steps, without the params and the model's checks."""
    from cvmc.runtime.graph import estimate_gas

    try:
        return estimate_gas(graph_text(graph_json))
    except CVMError as e:
        return e


# --------------------------------------------------------------------------------------------------------------
# The host program as C tables
# --------------------------------------------------------------------------------------------------------------


class _ArgumentChecker:
    """Stands in for the JIT engine when the JIT's runner resolves a host program: each kernel's `prepare`
    checks the call's arrays as the JIT does (`jit.check_arguments`) and hands back the base pointers."""

    def __init__(self, specs: list[KernelSpec]):
        self.kernels = {s.name: _CheckedKernel(s) for s in specs}

    def __getitem__(self, name: str) -> _CheckedKernel:
        return self.kernels[name]


class _CheckedKernel:
    def __init__(self, spec: KernelSpec):
        self.spec = spec
        self.trip = spec.trip

    def prepare(self, *arrays: np.ndarray) -> list[int]:
        from cvmc.runtime.jit import check_arguments

        return check_arguments(self.spec, arrays)


@dataclass
class _Tables:
    params: bytes
    kernels: list[tuple[str, str]]  # (C name, symbol)
    calls: list[tuple[int, str, int, bool, int, int]]  # kernel index, name, trip, split, first arg, nargs
    args: list[tuple[int, int]]  # (root, byte shift)
    heads: list[tuple[int, int, int, tuple[int, ...], tuple[int, ...]]]  # root, shift, offset, shape, strides
    input_size: int


def host_tables(program: HostProgram, specs: list[KernelSpec]) -> _Tables:
    """The C tables of a host program: the JIT's runner resolves every call's arguments and checks them against
    its kernel (layout, bounds, no overlap of a written argument), and each base pointer is written as a root and
    a byte shift, the same pointer the JIT passes."""
    from cvmc.runtime.cpu import CpuRunner, shared_calls

    runner = CpuRunner(program, _ArgumentChecker(specs), threads=1)
    offsets: dict[str, int] = {}
    blob = bytearray()
    for name, array in program.globals.items():
        blob.extend(b"\0" * (-len(blob) % _PARAMS_ALIGN))
        offsets[name] = len(blob)
        blob.extend(np.ascontiguousarray(array).tobytes())
    roots = runner._roots  # pyright: ignore[reportPrivateUsage]

    def place(root: str, shift: int, pointer: int) -> tuple[int, int]:
        assert pointer == roots[root].ctypes.data + shift, f"a pointer outside its root {root!r}"
        if root in _ROOTS:
            return _ROOTS[root], shift
        return _PARAMS_ROOT, offsets[root] + shift

    by_spec = {s.name: s for s in specs}
    kernel_index: dict[str, int] = {}
    kernels: list[tuple[str, str]] = []
    calls, args = [], []
    # the calls the library's native program shares with its helpers (the JIT's rule; none when it would not share)
    flags, share = shared_calls(program, [by_spec[c.kernel].splittable and by_spec[c.kernel].trip > 1
                                          for c in program.calls])
    for call, (bases, _), split in zip(program.calls, runner.calls, (f and share for f in flags)):
        symbol = by_spec[call.kernel].symbol
        if not _SYMBOL.fullmatch(symbol):
            raise CVMRuntimeError(f"kernel symbol {symbol!r} cannot be named in the model's object")
        if call.kernel not in kernel_index:
            kernel_index[call.kernel] = len(kernels)
            kernels.append((f"cvmc_kernel_{len(kernels)}", symbol))
        calls.append((kernel_index[call.kernel], call.kernel, by_spec[call.kernel].trip, split, len(args),
                      len(bases)))
        args.extend(place(v.root, v.shift, b) for v, b in zip(call.args, bases))
    heads = []
    for base, v in runner.heads:
        if v.element != "i32":
            raise CVMRuntimeError(f"a head of element type {v.element}, expected i32")
        root, shift = place(v.root, v.shift, base.ctypes.data)
        heads.append((root, shift, v.offset, v.shape, v.strides))
    input_size = prod(program.input_shape) if program.input_shape is not None else 0
    return _Tables(bytes(blob), kernels, calls, args, heads, input_size)


def _c_string(text: str) -> str:
    """A C string literal of `text`'s UTF-8 bytes (octal escapes for all but plain ASCII)."""
    out = []
    for b in text.encode("utf-8", "backslashreplace"):
        c = chr(b)
        out.append(c if (c.isalnum() or c in " _-.,:;+=/()[]{}<>#%&*!@^~|'") and b < 128 else f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def model_source(key: str, cpu: str, features: str, facts: ApiFacts, tables: _Tables, arena_bytes: int,
                 params_file: str | None) -> str:
    """The C source of a model's tables (`capi/cvmc_model.h`); the params are the bytes of `params_file`."""
    lines = [f"/* Generated by cvm-aot build: the host program of model {key} (see cvmc_model.h). */",
             "#include <stdint.h>", "", '#include "cvmc_model.h"', ""]
    if params_file is not None:
        assert '"' not in params_file and "\\" not in params_file and "\n" not in params_file
        lines += ['__asm__(".section .rodata.cvmc_params, \\"a\\", @progbits\\n"',
                  '        ".balign 64\\n.globl cvmc_params\\n.hidden cvmc_params\\ncvmc_params:\\n"',
                  f'        ".incbin \\"{params_file}\\"\\n.previous\\n");',
                  'extern const unsigned char cvmc_params[] __attribute__((visibility("hidden")));', ""]
    for cname, symbol in tables.kernels:
        lines.append(f'extern void {cname}(void **, int64_t, int64_t) __asm__("{symbol}");')
    dims: list[int] = []
    head_rows = []
    for root, shift, offset, shape, strides in tables.heads:
        head_rows.append(f"  {{{root}, {shift}u, {offset}, {len(shape)}, dims + {len(dims)}, "
                         f"dims + {len(dims) + len(shape)}, {prod(shape)}u}},")
        dims += [*shape, *strides]
    lines.append(f"static const int64_t dims[] = {{{', '.join(map(str, dims))}}};")
    if tables.args:
        lines.append("static const struct cvmc_arg args[] = {")
        lines += [f"  {{{root}, {shift}u}}," for root, shift in tables.args]
        lines.append("};")
    if tables.calls:
        lines.append("static const struct cvmc_call calls[] = {")
        lines += [f"  {{{tables.kernels[k][0]}, {_c_string(name)}, {trip}, {int(split)}, {first}, {n}}},"
                  for k, name, trip, split, first, n in tables.calls]
        lines.append("};")
    lines.append("static const struct cvmc_head heads[] = {")
    lines += head_rows
    lines.append("};")
    f = facts
    fields = [
        ("abi", str(MODEL_ABI)), ("key", _c_string(key)), ("cpu", _c_string(cpu)),
        ("features", _c_string(features)), ("version", _c_string(f.version)),
        ("postprocess", _c_string(f.postprocess)), ("post", str(f.post)), ("gas", f"{f.gas}u"),
        ("storage_size", f"{f.storage_size}u"), ("input_length", f"{f.input_length}u"),
        ("output_length", f"{f.output_length}u"), ("input_type_size", str(f.input_type_size)),
        ("output_type_size", str(f.output_type_size)), ("input_size", f"{f.input_size}u"),
        ("input_bound", str(f.input_bound)), ("arena_bytes", f"{arena_bytes}u"),
        ("params", "cvmc_params" if params_file is not None else "0"), ("params_bytes", f"{len(tables.params)}u"),
        ("ncalls", str(len(tables.calls))), ("calls", "calls" if tables.calls else "0"),
        ("nargs", str(len(tables.args))), ("args", "args" if tables.args else "0"),
        ("nheads", str(len(tables.heads))), ("heads", "heads"),
    ]
    lines.append(f'__attribute__((visibility("default"))) const struct cvmc_model {MODEL_SYMBOL} = {{')
    lines += [f"  .{name} = {value}," for name, value in fields]
    lines.append("};")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------------------
# Linking
# --------------------------------------------------------------------------------------------------------------


def checked_features() -> frozenset[str]:
    """The LLVM feature names the library checks against this CPU (the table of `capi/cpu.c`)."""
    return frozenset(re.findall(r'\{"([a-z0-9.\-]+)", ', (CAPI / "cpu.c").read_text()))


def named_cpu_features(cpu: str) -> str:
    """The features (LLVM's `+name,...`) an object compiled for the CPU `cpu` may use, as the system's C compiler
    knows that CPU (`cc -march=CPU`), among those the library checks; this machine's own for its own CPU. A CPU
    that is not an x86-64 one (`i686`, `pentium4`), or that the C compiler does not know, is refused with a
    CVMRuntimeError: no object is built that the library could not check (issue 30, F4)."""
    from cvmc.runtime.jit import host_target

    triple, host_cpu, host_features = host_target()
    if cpu == host_cpu:
        return host_features
    if not triple.startswith("x86_64"):
        raise CVMRuntimeError(f"--cpu {cpu}: naming another CPU is supported on x86-64 hosts only (this one is "
                              f"{triple})")
    try:
        done = subprocess.run([c_compiler(), f"-march={cpu}", "-m64", "-Q", "--help=target"], capture_output=True,
                              text=True, errors="replace", timeout=60, env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CVMRuntimeError(f"--cpu {cpu}: cannot ask the C compiler for its features: {e}") from None
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["unknown to it"])[0]
        raise CVMRuntimeError(f"--cpu {cpu}: not a CPU cvm-aot can compile for ({why.removeprefix('cc1: ')}): "
                              f"name an x86-64 CPU the C compiler knows, or build on the machine itself")
    enabled = {m[1] for m in re.finditer(r"^\s*-m([a-z0-9.\-]+)\s+\[enabled\]", done.stdout, re.MULTILINE)}
    if "abm" in enabled:
        enabled.add("lzcnt")  # GCC's name for LZCNT with POPCNT
    if "64" not in enabled:
        raise CVMRuntimeError(f"--cpu {cpu}: not a 64-bit x86 CPU")
    return ",".join(f"+{name}" for name in sorted(enabled & checked_features()))


def c_compiler() -> str:
    """`$CC`, else `cc`: the system's compiler driver, which links with the system linker."""
    cc = os.environ.get("CC") or "cc"
    found = shutil.which(cc)
    if found is None:
        raise CVMRuntimeError(f"no C compiler {cc!r}: cvm-aot links shared objects with the system's cc (set $CC)")
    return found


def _cc(args: list[str], what: str) -> None:
    try:
        done = subprocess.run([c_compiler(), *args], capture_output=True, text=True, errors="replace")
    except OSError as e:
        raise CVMRuntimeError(f"cannot run the C compiler for {what}: {e.strerror or e}") from None
    if done.returncode != 0:
        raise CVMRuntimeError(f"the C compiler failed on {what}: {(done.stderr or done.stdout).strip()[:2000]}")


_LINK_FLAGS = ["-Wl,-z,noexecstack", "-Wl,-z,now", "-Wl,-z,relro", "-Wl,--no-undefined"]


def link_model(kernels_object: bytes, source: str, params: bytes, work: Path) -> bytes:
    """A model's shared object: its kernels' object and its tables (`source`), linked by `cc -shared`, exporting
    `cvmc_model_v1` alone."""
    (work / "kernels.o").write_bytes(kernels_object)
    (work / "params.bin").write_bytes(params)
    (work / "model.c").write_text(source)
    (work / "exports.map").write_text(f"{{ global: {MODEL_SYMBOL}; local: *; }};\n")
    _cc(["-shared", "-fPIC", "-O1", "-std=gnu11", "-I", str(CAPI), "-o", str(work / "model.so"),
         str(work / "model.c"), str(work / "kernels.o"), f"-Wl,--version-script={work / 'exports.map'}",
         *_LINK_FLAGS, "-lm"], "the model's object")
    return (work / "model.so").read_bytes()


def write_output(path: Path, data: bytes, mode: int) -> None:
    """Write a file the operator named (the library, its header), atomically and through nothing another user
    planted in its folder (`store.write_file`)."""
    try:
        store.write_file(path.parent if str(path.parent) else Path("."), path.name, data, mode)
    except OSError as e:
        raise CVMRuntimeError(f"cannot write {str(path)!r}: {e.strerror or e}") from None


def library_inputs(folder: Path) -> list[str]:
    """What the C-API library is linked from: its C sources (capi/*.c) and the JIT's scheduler (program.ll)
    compiled for any x86-64 CPU into `folder`/program.o (only the C API is exported)."""
    from cvmc.runtime.llvm_compile import shared_object_code
    from cvmc.runtime.program import program_ir

    scheduler = folder / "program.o"
    hidden = program_ir().replace("define void @cvmc_", "define hidden void @cvmc_")
    scheduler.write_bytes(shared_object_code(hidden, cpu="x86-64"))
    return [*(str(CAPI / s) for s in LIBRARY_SOURCES), str(scheduler)]


def write_library(path: str | os.PathLike[str]) -> Path:
    """`cvm-aot lib`: compile the C-API library (capi/*.c) into the shared object `path` (written atomically)."""
    out = Path(path)
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise CVMRuntimeError(f"cannot write {str(out)!r}: the folder {str(folder)!r} does not exist")
    with tempfile.TemporaryDirectory(prefix="cvmc-aot-lib-") as tmp:
        built = Path(tmp) / "libcvm.so"
        # its helper threads live in the library for good, so it is never unloaded (-z nodelete)
        _cc(["-shared", "-fPIC", "-O2", "-std=gnu11", "-fvisibility=hidden", "-pthread", "-Wall", "-Wextra",
             f"-Wl,-soname,{out.name}", "-o", str(built), *library_inputs(Path(tmp)),
             "-ldl", "-Wl,-z,nodelete", *_LINK_FLAGS], "the C-API library")
        write_output(out, built.read_bytes(), 0o755)
    return out


# --------------------------------------------------------------------------------------------------------------
# Building a model
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Written:
    """One entry written into the store."""

    path: Path
    key: str
    what: str  # "model", "graph"
    status: int  # 0, or the status of the recorded decision
    message: str  # the decision's message, or a summary of what was built
    size: int


def _store_folder(store: str | os.PathLike[str]) -> Path:
    folder = Path(os.path.abspath(store))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CVMRuntimeError(f"cannot create the store {str(folder)!r}: {e.strerror or e}") from None
    if not folder.is_dir():
        raise CVMRuntimeError(f"the store {str(folder)!r} is not a folder")
    return folder


def build_model(graph_json: bytes, params: bytes, store: str | os.PathLike[str], cpu: str | None = None) -> list[
        Written]:
    """`cvm-aot build`: verify a model as `CVMAPILoadModel` does and write its entry into the store: its shared
    object compiled for this machine's CPU (or `cpu`), or the decision of a model the runtime rejects (the
    loader's, or a plan over the runtime's memory limit, as `load_model` decides); and the entry of its graph for
    `CVMAPIGetGasFromGraphFile`. A failure of the compiler itself raises and stores nothing. Returns what was
    written."""
    from cvmc.runtime.compile import lower_to_llvm
    from cvmc.runtime.graph import load_graph
    from cvmc.runtime.model import program_bytes

    features = None if cpu is None else named_cpu_features(cpu)  # before LLVM sees the name
    folder = _store_folder(store)
    secret = store_secret(folder)
    key = model_key(graph_json, params)
    decision: CVMError | None = None
    try:
        graph = load_graph(graph_json, params)
    except CVMError as e:
        decision = e
    else:
        from cvmc.passes.loops.target import Target
        from cvmc.runtime.jit import host_target
        from cvmc.runtime.target import jit_target

        # The kernels are chosen for the host's tier; a CPU named by `cpu` gets the generic ones.
        target = jit_target() if cpu is None or cpu == host_target()[1] else Target("generic", mmk=False)
        program, ir_text, specs, _ = lower_to_llvm(graph, target)
        needed = program_bytes(program)
        if needed > MAX_MEMORY:  # Model._check_memory, with the default limit
            decision = CVMLogicError(f"the model needs {needed} bytes of working memory (the arena planned for "
                                     f"cpu, its input and its heads), more than the limit of {MAX_MEMORY} bytes")
        else:
            payload, summary = _shared_object(key, graph_json, graph, program, ir_text, specs, cpu, features)
    if decision is not None:
        payload, summary = decision_payload(decision), str(decision)
    status = decision.status if decision is not None else 0
    written = [Written(write_entry(folder, key, payload, secret), key, "model", status, summary, len(payload))]
    gkey = graph_key(graph_json)
    gas = graph_gas_decision(graph_json)
    if isinstance(gas, CVMError):
        payload, status, summary = decision_payload(gas), gas.status, str(gas)
    else:
        payload, status, summary = b"G" + struct.pack("<Q", gas), 0, f"gas {gas}"
    written.append(Written(write_entry(folder, gkey, payload, secret), gkey, "graph", status, summary, len(payload)))
    return written


def _shared_object(key: str, graph_json: bytes, graph: Graph, program: HostProgram, ir_text: str,
                   specs: list[KernelSpec], cpu: str | None, cpu_features: str | None) -> tuple[bytes, str]:
    """The payload of a model's entry ('S' and its shared object) and a summary of it; the object records the
    features it needs (`cpu_features` for a named CPU), which the library checks before any call."""
    from cvmc.runtime.jit import shared_object_code, shared_target

    facts = api_facts(graph_json, graph)
    tables = host_tables(program, specs)
    if program.input_shape is not None and tables.input_size != facts.input_size:
        raise CVMRuntimeError(f"the host program's input has {tables.input_size} values, the graph's "
                              f"{facts.input_size}")
    name, features = shared_target(cpu)
    features = features or cpu_features or ""
    code = shared_object_code(ir_text, cpu)
    with tempfile.TemporaryDirectory(prefix="cvmc-aot-") as tmp:
        work = Path(tmp)
        params_file = str(work / "params.bin") if tables.params else None
        source = model_source(key, name, features, facts, tables, program.arena_bytes, params_file)
        obj = link_model(code, source, tables.params, work)
    summary = (f"a shared object of {len(obj)} bytes for cpu {name}: {len(tables.kernels)} kernels, "
               f"{len(tables.calls)} calls, arena {program.arena_bytes} bytes, params {len(tables.params)} bytes, "
               f"gas {facts.gas}")
    return b"S" + obj, summary
