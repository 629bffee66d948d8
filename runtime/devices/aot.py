"""Ahead-of-time compilation for cvm-runtime's C API: verified models as shared objects in a store.

    entries = build_model(graph_json, params, "store")     # `cvm-aot build model.json params.bin --store DIR`
    build_model(graph_json, params, "store", target="all") # `... --target all`: one object for every x86-64 node
    write_library("libcvm.so")                             # `cvm-aot lib -o libcvm.so`

A C program linked with the library calls cvm-runtime's API (`capi/c_api.h`); `CVMAPILoadModel` hashes the two
files' bytes, finds the model's entry in the store named by `$CVMC_AOT_STORE` and loads it. No Python runs then.

Targets (`target_tiers`): an object holds one kernel set per tier it was built for, each compiled for a CPU level
with exactly the features it records (`--target` host: this machine's; x86-64-v3 and x86-64-v4: the avx2 kernels;
amx; all: amx, avx512-vnni, avx2 and generic). A store keeps one entry per model and target. At load the library
takes the first entry (host, all, amx, x86-64-v4, x86-64-v3) with a tier this CPU has whose known-answer check
passes: before a process first trusts a tier, that tier's kernels run the known-answer model of
`runtime.driver.target` (compiled into every object, per tier) and must give the heads the reference interpreter gave
at build time; a tier that fails is disabled for the process with one warning, and the next one runs.

One code path with the JIT: a model is loaded and verified by `load_graph`, lowered by `compile.lower_to_llvm` (the
loop level, the LLVM emitter) and optimized by the JIT's pipeline (`jit.shared_object_code`: the same IR, passes
and target options, emitted as position-independent code); the host program is the JIT's `HostProgram`, whose
calls are resolved and checked by the JIT's own runner (`cpu.CpuRunner` over `jit.check_arguments`) and written
as the tables of `capi/cvmc_model.h`, which the library walks as the runner does. The JIT and the AOT differ in
where the object lands: in memory through MCJIT, or in a shared object linked by the system's `cc`.

The store (`capi/store.h` has the format): one entry `<key>.cvmc` per model, where the key is a SHA-256 of the
two files' bytes, holding the model's shared object, or, for a model cvm-runtime rejects at load, the decision
(status and message), so that loading it gives the runtime's status; and one entry per graph for
`CVMAPIGetGasFromGraphFile`. Every entry is sealed as the JIT's cache seals its entries (`cvmc.runtime.engine.store`,
one format): HMAC-SHA256 tags of its length and of its payload, keyed by this user's secret, the key of cvmc's
compiled-code cache (`cvmc.runtime.engine.cache`): the library loads an object only when its entry's tags check for that
name and key, so a damaged, planted or renamed file is refused with status 2. The store's folder is the
operator's to name; what is in it is trusted only through the tags.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from cvmc.dialects.cvm_rules import MAX_MEMORY, precision_bound
from cvmc.errors import CVMError, CVMLogicError, CVMRuntimeError
from cvmc.runtime.engine import store
from cvmc.runtime.frontend import files

if TYPE_CHECKING:
    from cvmc.codegen.abi import KernelSpec
    from cvmc.passes.loops.target import Target
    from cvmc.runtime.driver.host import HostProgram
    from cvmc.runtime.frontend.graph import Graph

STORE_ENV = "CVMC_AOT_STORE"
ENTRY_SUFFIX = ".cvmc"
CAPI = Path(__file__).parent / "capi"
LIBRARY_SOURCES = ("capi.c", "store.c", "sha256.c", "cpu.c")
OBJECT_SYMBOL = "cvmc_object_v2"
MODEL_ABI = 2
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
    from cvmc.runtime.engine.cache import key_dir, user_secret

    keys = key_dir(folder)
    if keys == folder:  # no home: the cache would keep its key beside its entries; the library will not look there
        raise CVMRuntimeError("no folder for the store's secret key: set $XDG_STATE_HOME or $HOME")
    secret = user_secret(keys)
    if isinstance(secret, str):
        raise CVMRuntimeError(secret)
    return secret


def entry_path(folder: str | os.PathLike[str], key: str, target: str | None = "host") -> Path:
    """The entry of model `key` built for `target` (`<key>.<target>.cvmc`: each target has its own, so that a
    store holds a model for several at once), or, with `target` None, of a graph alone (`<key>.cvmc`)."""
    return Path(folder) / (f"{key}{ENTRY_SUFFIX}" if target is None else f"{key}.{target}{ENTRY_SUFFIX}")


def write_entry(folder: Path, key: str, payload: bytes, secret: bytes, target: str | None = "host") -> Path:
    """Write an entry (`store.seal`, `store.write_file`: atomically, through nothing another user planted),
    readable by all (the node may run as another user: the tag, not the file's mode, is what makes it trusted)."""
    name = entry_path(folder, key, target).name
    files.sweep_temporaries(folder)  # of builds that died mid-write, as the JIT's cache sweeps its own
    try:
        return store.Store(folder, secret, ENTRY_MAX, 0o644).put(name, payload)
    except OSError as e:
        raise files.write_error("the store entry", folder / name, e) from None


def read_entry(folder: str | os.PathLike[str], key: str, target: str | None = "host") -> bytes | None:
    """The payload of entry `key` (for `target`, see `entry_path`) when its head and tag check with this user's
    secret, else None (what the library does, in Python: for tests and tools)."""
    folder = Path(os.path.abspath(folder))
    try:
        payload = store.Store(folder, store_secret(folder), ENTRY_MAX).get(entry_path(folder, key, target).name)
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
    from cvmc.runtime.frontend.graph import parse_graph

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
    from cvmc.runtime.frontend.graph import estimate_gas

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
        from cvmc.runtime.engine.jit import check_arguments

        return check_arguments(self.spec, arrays)


class _Params:
    """The params of every host program of an object, in one blob: arrays with the same bytes are stored once
    (the tiers of `--target all` pack some weights alike, and share every bias)."""

    def __init__(self) -> None:
        self.blob = bytearray()
        self.at: dict[bytes, int] = {}

    def place(self, array: np.ndarray) -> int:
        data = np.ascontiguousarray(array).tobytes()
        digest = hashlib.sha256(data).digest()
        if digest not in self.at:
            self.blob.extend(b"\0" * (-len(self.blob) % _PARAMS_ALIGN))
            self.at[digest] = len(self.blob)
            self.blob.extend(data)
        return self.at[digest]


@dataclass
class _Tables:
    kernels: list[tuple[str, str]]  # (C name, symbol)
    calls: list[tuple[int, str, int, bool, int, int]]  # kernel index, name, trip, split, first arg, nargs
    args: list[tuple[int, int]]  # (root, byte shift)
    heads: list[tuple[int, int, int, tuple[int, ...], tuple[int, ...]]]  # root, shift, offset, shape, strides
    input_size: int


def host_tables(program: HostProgram, specs: list[KernelSpec], params: _Params, prefix: str = "") -> _Tables:
    """The C tables of a host program whose kernels' symbols take `prefix` in the object: the JIT's runner
    resolves every call's arguments and checks them against its kernel (layout, bounds, no overlap of a written
    argument), and each base pointer is written as a root and a byte shift, the same pointer the JIT passes. The
    program's globals go into `params`."""
    from cvmc.runtime.devices.cpu import CpuRunner, shared_calls

    runner = CpuRunner(program, _ArgumentChecker(specs), threads=1)
    offsets = {name: params.place(array) for name, array in program.globals.items()}
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
        symbol = prefix + by_spec[call.kernel].symbol
        if not _SYMBOL.fullmatch(symbol):
            raise CVMRuntimeError(f"kernel symbol {symbol!r} cannot be named in the model's object")
        if call.kernel not in kernel_index:
            kernel_index[call.kernel] = len(kernels)
            kernels.append((f"{prefix}k{len(kernels)}", symbol))
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
    return _Tables(kernels, calls, args, heads, input_size)


def _c_string(text: str) -> str:
    """A C string literal of `text`'s UTF-8 bytes (octal escapes for all but plain ASCII)."""
    out = []
    for b in text.encode("utf-8", "backslashreplace"):
        c = chr(b)
        out.append(c if (c.isalnum() or c in " _-.,:;+=/()[]{}<>#%&*!@^~|'") and b < 128 else f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _model_lines(name: str, facts: ApiFacts | None, tables: _Tables, arena_bytes: int, params: bool) -> list[str]:
    """A `struct cvmc_model` named `name` (static) and its tables; `facts` None: a host program the API does not
    report on (the known-answer model)."""
    lines = [f'extern void {cname}(void **, int64_t, int64_t) __asm__("{symbol}");' for cname, symbol in tables.kernels]
    dims: list[int] = []
    head_rows = []
    for root, shift, offset, shape, strides in tables.heads:
        head_rows.append(f"  {{{root}, {shift}u, {offset}, {len(shape)}, {name}_dims + {len(dims)}, "
                         f"{name}_dims + {len(dims) + len(shape)}, {prod(shape)}u}},")
        dims += [*shape, *strides]
    lines.append(f"static const int64_t {name}_dims[] = {{{', '.join(map(str, dims)) or '0'}}};")
    if tables.args:
        lines.append(f"static const struct cvmc_arg {name}_args[] = {{")
        lines += [f"  {{{root}, {shift}u}}," for root, shift in tables.args]
        lines.append("};")
    if tables.calls:
        lines.append(f"static const struct cvmc_call {name}_calls[] = {{")
        lines += [f"  {{{tables.kernels[k][0]}, {_c_string(call)}, {trip}, {int(split)}, {first}, {n}}},"
                  for k, call, trip, split, first, n in tables.calls]
        lines.append("};")
    lines.append(f"static const struct cvmc_head {name}_heads[] = {{")
    lines += head_rows
    lines.append("};")
    fields = []
    if facts is not None:
        f = facts
        fields = [
            ("version", _c_string(f.version)), ("postprocess", _c_string(f.postprocess)), ("post", str(f.post)),
            ("gas", f"{f.gas}u"), ("storage_size", f"{f.storage_size}u"), ("input_length", f"{f.input_length}u"),
            ("output_length", f"{f.output_length}u"), ("input_type_size", str(f.input_type_size)),
            ("output_type_size", str(f.output_type_size)), ("input_bound", str(f.input_bound)),
        ]
    fields += [
        ("input_size", f"{tables.input_size}u"), ("arena_bytes", f"{arena_bytes}u"),
        ("params", "cvmc_params" if params else "0"),
        ("ncalls", str(len(tables.calls))), ("calls", f"{name}_calls" if tables.calls else "0"),
        ("nargs", str(len(tables.args))), ("args", f"{name}_args" if tables.args else "0"),
        ("nheads", str(len(tables.heads))), ("heads", f"{name}_heads"),
    ]
    lines.append(f"static const struct cvmc_model {name} = {{")
    lines += [f"  .{field} = {value}," for field, value in fields]
    lines.append("};")
    return lines


@dataclass
class _TierTables:
    """One tier of an object, as its C tables: the model's host program and the known-answer model's."""

    tier: Tier
    model: _Tables
    model_arena: int
    check: _Tables
    check_arena: int


def object_source(key: str, target: str, facts: ApiFacts, tiers: list[_TierTables], params_bytes: int,
                  params_file: str | None, check_input: np.ndarray, check_output: np.ndarray) -> str:
    """The C source of a model object's tables (`capi/cvmc_model.h`): one `struct cvmc_model` per tier and its
    known-answer model's, the check's input and expected heads; the params are the bytes of `params_file`."""
    lines = [f"/* Generated by cvm-aot build --target {target}: the host programs of model {key} (cvmc_model.h). */",
             "#include <stdint.h>", "", '#include "cvmc_model.h"', ""]
    if params_file is not None:
        assert '"' not in params_file and "\\" not in params_file and "\n" not in params_file
        lines += ['__asm__(".section .rodata.cvmc_params, \\"a\\", @progbits\\n"',
                  '        ".balign 64\\n.globl cvmc_params\\n.hidden cvmc_params\\ncvmc_params:\\n"',
                  f'        ".incbin \\"{params_file}\\"\\n.previous\\n");',
                  'extern const unsigned char cvmc_params[] __attribute__((visibility("hidden")));', ""]
    for i, t in enumerate(tiers):
        lines += _model_lines(f"tier{i}_model", facts, t.model, t.model_arena, params_file is not None)
        lines += _model_lines(f"tier{i}_check", None, t.check, t.check_arena, params_file is not None)
    lines.append("static const struct cvmc_tier tiers[] = {")
    lines += [f"  {{{_c_string(t.tier.name)}, {_c_string(t.tier.cpu)}, {_c_string(t.tier.needs)}, &tier{i}_model, "
              f"&tier{i}_check}}," for i, t in enumerate(tiers)]
    lines.append("};")
    for name, values in (("check_input", check_input), ("check_output", check_output)):
        lines.append(f"static const int32_t {name}[] = {{{', '.join(map(str, values.tolist()))}}};")
    fields = [
        ("abi", str(MODEL_ABI)), ("key", _c_string(key)), ("target", _c_string(target)),
        ("ntiers", str(len(tiers))), ("tiers", "tiers"), ("params_bytes", f"{params_bytes}u"),
        ("check_input_size", f"{check_input.size}u"), ("check_input", "check_input"),
        ("check_output_size", f"{check_output.size}u"), ("check_output", "check_output"),
    ]
    lines.append(f'__attribute__((visibility("default"))) const struct cvmc_object {OBJECT_SYMBOL} = {{')
    lines += [f"  .{field} = {value}," for field, value in fields]
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
    from cvmc.runtime.engine.jit import host_target

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


def _cc(args: list[str], what: str, output: str | os.PathLike[str] | None = None) -> None:
    """Run the C compiler on `args` to build `what` (for the file `output`); a failure is one line naming the
    file and why: the compiler's first error line, not its whole text (a crash prints a bug-report notice)."""
    named = f"{what} {os.fspath(output)!r}" if output is not None else what
    try:
        done = subprocess.run([c_compiler(), *args], capture_output=True, text=True, errors="replace")
    except OSError as e:
        raise CVMRuntimeError(f"cannot run the C compiler for {named}: {e.strerror or e}") from None
    if done.returncode != 0:
        lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        first = next((line for line in lines if "error" in line.lower()), lines[0] if lines else "")
        first = first[:300] + ("..." if len(first) > 300 else "")
        if "File size limit exceeded" in done.stderr or "signal 25" in done.stderr or done.returncode == -25:
            raise CVMRuntimeError(f"cannot write {named}: File too large (the file size limit, `ulimit -f`, stopped "
                                  f"the C compiler: {first or f'status {done.returncode}'})")
        raise CVMRuntimeError(f"the C compiler failed on {named} (status {done.returncode}): "
                              f"{first or 'it printed nothing'}")


_LINK_FLAGS = ["-Wl,-z,noexecstack", "-Wl,-z,now", "-Wl,-z,relro", "-Wl,--no-undefined"]


def link_model(objects: list[bytes], source: str, params: bytes, work: Path) -> bytes:
    """A model's shared object: its kernels' objects and its tables (`source`), linked by `cc -shared`,
    exporting `cvmc_object_v2` alone."""
    names = []
    for i, code in enumerate(objects):
        names.append(files.write_file(work / f"kernels{i}.o", code, "the kernels' object"))
    files.write_file(work / "params.bin", params, "the model's params")
    files.write_file(work / "model.c", source, "the model's source")
    files.write_file(work / "exports.map", f"{{ global: {OBJECT_SYMBOL}; local: *; }};\n", "the export map")
    _cc(["-shared", "-fPIC", "-O1", "-std=gnu11", "-I", str(CAPI), "-o", str(work / "model.so"),
         str(work / "model.c"), *names, f"-Wl,--version-script={work / 'exports.map'}", *_LINK_FLAGS, "-lm"],
        "the model's object", work / "model.so")
    return (work / "model.so").read_bytes()


def write_output(path: Path, data: bytes, mode: int, what: str = "the file") -> None:
    """Write a file the operator named (the library, its header) through cvmc's one writer (`files.write_file`:
    atomically, synced, through nothing another user planted, never over a link, a FIFO or a device)."""
    files.write_file(path, data, what, mode=mode, fsync=True)


def library_inputs(folder: Path) -> list[str]:
    """What the C-API library is linked from: its C sources (capi/*.c) and the JIT's scheduler (program.ll)
    compiled for any x86-64 CPU into `folder`/program.o (only the C API is exported)."""
    from cvmc.passes.loops.target import Target
    from cvmc.runtime.engine.llvm_compile import shared_object_code
    from cvmc.runtime.engine.program import program_ir

    scheduler = folder / "program.o"
    hidden = program_ir().replace("define void @cvmc_", "define hidden void @cvmc_")
    files.write_file(scheduler, shared_object_code(hidden, Target("generic", cpu="x86-64")), "the scheduler's object")
    return [*(str(CAPI / s) for s in LIBRARY_SOURCES), str(scheduler)]


def write_library(path: str | os.PathLike[str]) -> Path:
    """`cvm-aot lib`: compile the C-API library (capi/*.c) into the shared object `path` (written atomically)."""
    out = Path(path)
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise CVMRuntimeError(f"cannot write the C-API library {str(out)!r}: the folder {str(folder)!r} does not "
                              "exist")
    try:
        files.check_target(out)  # refused before the compile, not after
    except OSError as e:
        raise files.write_error("the C-API library", out, e) from None
    with tempfile.TemporaryDirectory(prefix="cvmc-aot-lib-") as tmp:
        built = Path(tmp) / "libcvm.so"
        # its helper threads live in the library for good, so it is never unloaded (-z nodelete)
        _cc(["-shared", "-fPIC", "-O2", "-std=gnu11", "-fvisibility=hidden", "-pthread", "-Wall", "-Wextra",
             f"-Wl,-soname,{out.name}", "-o", str(built), *library_inputs(Path(tmp)),
             "-ldl", "-Wl,-z,nodelete", *_LINK_FLAGS], "the C-API library", out)
        write_output(out, built.read_bytes(), 0o755, "the C-API library")
    return out


# --------------------------------------------------------------------------------------------------------------
# Targets: what an object's kernels are compiled for, and the tiers it holds
# --------------------------------------------------------------------------------------------------------------

# The features each level guarantees (LLVM's names, those the library checks): x86-64, x86-64-v3 and x86-64-v4 as
# the x86-64 psABI defines them (what `cc -march=x86-64-vN` enables; a test compares).
_X86_64 = ("64bit", "cmov", "cx8", "fxsr", "mmx", "sse", "sse2")
_V3 = (*_X86_64, "avx", "avx2", "bmi", "bmi2", "crc32", "cx16", "f16c", "fma", "lzcnt", "movbe", "popcnt", "sahf",
       "sse3", "sse4.1", "sse4.2", "ssse3", "xsave")
_V4 = (*_V3, "avx512bw", "avx512cd", "avx512dq", "avx512f", "avx512vl")


@dataclass(frozen=True)
class Tier:
    """One kernel set of an object: its `target` (the loop level's, and the LLVM CPU and features its code is
    compiled for: `target.cpu`, `target.features`, LLVM's "+a,-b" list, "" for the CPU's own), and the features it
    needs (`needs`, "+a,+b": all it may use; the library runs the tier only on a CPU that has them)."""

    name: str
    target: Target
    needs: str

    @property
    def cpu(self) -> str:
        return self.target.cpu

    @property
    def features(self) -> str | None:
        return self.target.features or None


def _level(name: str, cpu: str, needs: tuple[str, ...]) -> Tier:
    """A tier compiled for `cpu` with exactly the features `needs` (every other feature the library checks is
    turned off, so LLVM may use none it does not record)."""
    from cvmc.passes.loops.target import Target

    off = sorted(checked_features() & set(_llvm_features()) - set(needs))
    plus = ",".join(f"+{n}" for n in sorted(needs))
    return Tier(name, Target(name, cpu=cpu, features=",".join([plus, *(f"-{n}" for n in off)])), plus)


def _llvm_features() -> list[str]:
    """Every feature name LLVM knows for this host's target (those it has and those it lacks)."""
    import llvmlite.binding as llvm

    from cvmc.runtime.engine.jit import host_target

    host_target()  # initializes LLVM's native target
    return list(llvm.get_host_cpu_features())


# `cvm-aot build --target NAME`: the tiers of its object, best first (see `target_tiers`).
TARGETS: dict[str, Callable[[], tuple[Tier, ...]]] = {
    "x86-64-v3": lambda: (_level("avx2", "x86-64-v3", _V3),),
    "x86-64-v4": lambda: (_level("avx2", "x86-64-v4", _V4),),
    "amx": lambda: (_level("amx", "x86-64-v4", (*_V4, "avx512vnni", "amx-tile", "amx-int8")),),
    "all": lambda: (*TARGETS["amx"](), _level("avx512-vnni", "x86-64-v4", (*_V4, "avx512vnni")),
                    *TARGETS["x86-64-v3"](), _level("generic", "x86-64", _X86_64)),
}
TARGET_NAMES = ("host", *TARGETS)
# The order in which the library looks a model up in the store (capi.c `targets`): an object built on (or for) this
# machine first, then the one that has every tier, then the single tiers, best first.
LOOKUP_ORDER = ("host", "all", "amx", "x86-64-v4", "x86-64-v3")


def target_tiers(target: str = "host", cpu: str | None = None) -> tuple[Tier, ...]:
    """The tiers of an object built for `target`, best first:
    - "host": this machine's CPU and features, and the tier the JIT would take here (`known_answer.checked_jit_target`:
      the host's best, after its known-answer check, with the `CVMC_ISA` ... overrides); with `cpu`, the named
      CPU (its features as the C compiler knows them) and the generic kernels;
    - "x86-64-v3": the avx2 tier for any x86-64-v3 CPU (AVX2, FMA, BMI2: Haswell, Zen 1 and later);
    - "x86-64-v4": the avx2 tier compiled for x86-64-v4 (AVX-512 F/BW/CD/DQ/VL): VNNI is not in that level (no
      Skylake-SP has it), and the object must run on every CPU the name promises; the VNNI kernels are `all`'s;
    - "amx": the amx tier, for x86-64-v4 with AVX512-VNNI, AMX-TILE and AMX-INT8 (Sapphire Rapids and later);
    - "all": amx, avx512-vnni (x86-64-v4 + VNNI), avx2 (x86-64-v3) and generic (x86-64): the library runs the
      best this CPU has (and, for amx, whose tiles Linux grants) whose known-answer check passes.
    A CVMRuntimeError names a target or CPU that cannot be built for."""
    from cvmc.runtime.devices.known_answer import checked_jit_target
    from cvmc.runtime.engine.jit import host_target, shared_target

    if target not in TARGET_NAMES:
        raise CVMRuntimeError(f"--target: expected one of {', '.join(TARGET_NAMES)}, got {target!r}")
    if cpu is not None and target != "host":
        raise CVMRuntimeError(f"--cpu {cpu} names the CPU of --target host, not of --target {target}")
    triple, host_cpu = host_target()[:2]
    if target != "host" and not triple.startswith("x86_64"):
        raise CVMRuntimeError(f"--target {target}: x86-64 targets are built on x86-64 hosts only (this one is "
                              f"{triple})")
    if target != "host":
        return TARGETS[target]()
    from dataclasses import replace

    from cvmc.passes.loops.target import Target

    if cpu is not None and cpu != host_cpu:  # the named CPU gets the generic kernels
        needs = named_cpu_features(cpu)  # before LLVM sees the name
        try:
            return (Tier("generic", Target("generic", mmk=False, cpu=cpu), needs),)
        except ValueError as e:
            raise CVMRuntimeError(f"--cpu {cpu}: {e}") from None
    kernels = checked_jit_target()
    tier = str(replace(kernels, vector_bytes=32)).removeprefix("x86:")  # the tier and its flags (the float width
    name, features = shared_target()                                     # is the cinn path's alone)
    return (Tier(tier, replace(kernels, cpu=name, features=features), features),)


# Tests only: rewrites the LLVM IR of a tier's kernels before they are compiled, (tier name, IR) -> IR (to plant a
# wrong kernel and see the known-answer check refuse the tier).
PLANT: Callable[[str, str], str] | None = None


def _prefixed(ir_text: str, prefix: str) -> str:
    """`ir_text` with `prefix` before the name of every function it exports (the tiers of an object each define
    the same kernels)."""
    import llvmlite.binding as llvm

    mod = llvm.parse_assembly(ir_text, llvm.create_context())
    for f in mod.functions:
        if not f.is_declaration and f.linkage not in (llvm.Linkage.internal, llvm.Linkage.private):
            f.name = prefix + f.name
    return str(mod)


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


def build_model(graph_json: bytes, params: bytes, store: str | os.PathLike[str], cpu: str | None = None,
                target: str = "host") -> list[Written]:
    """`cvm-aot build`: verify a model as `CVMAPILoadModel` does and write its entry for `target` into the store
    (`target_tiers`): its shared object, or the decision of a model the runtime rejects (the loader's, or a plan
    over the runtime's memory limit, as `load_model` decides; for several tiers, the largest plan decides, so that
    every node decides alike); and the entry of its graph for `CVMAPIGetGasFromGraphFile`. A failure of the
    compiler itself raises and stores nothing. Returns what was written."""
    from cvmc.runtime.driver.compile import lower_to_llvm
    from cvmc.runtime.frontend.graph import load_graph
    from cvmc.runtime.model import program_bytes

    tiers = target_tiers(target, cpu)
    folder = _store_folder(store)
    secret = store_secret(folder)
    key = model_key(graph_json, params)
    decision: CVMError | None = None
    try:
        graph = load_graph(graph_json, params)
    except CVMError as e:
        decision = e
    else:
        lowered = [lower_to_llvm(graph, t.target)[:3] for t in tiers]
        needed = max(program_bytes(program) for program, _, _ in lowered)
        if needed > MAX_MEMORY:  # Model._check_memory, with the default limit
            decision = CVMLogicError(f"the model needs {needed} bytes of working memory (the arena planned for "
                                     f"cpu, its input and its heads), more than the limit of {MAX_MEMORY} bytes")
        else:
            payload, summary = _shared_object(key, target, graph_json, graph, tiers, lowered)
    if decision is not None:
        payload, summary = decision_payload(decision), str(decision)
    status = decision.status if decision is not None else 0
    path = write_entry(folder, key, payload, secret, target)
    written = [Written(path, key, "model", status, summary, len(payload))]
    gkey = graph_key(graph_json)
    gas = graph_gas_decision(graph_json)
    if isinstance(gas, CVMError):
        payload, status, summary = decision_payload(gas), gas.status, str(gas)
    else:
        payload, status, summary = b"G" + struct.pack("<Q", gas), 0, f"gas {gas}"
    path = write_entry(folder, gkey, payload, secret, None)
    written.append(Written(path, gkey, "graph", status, summary, len(payload)))
    return written


@functools.cache
def _known_answer() -> tuple[Graph, np.ndarray, np.ndarray]:
    """The model of the known-answer check (`runtime.devices.known_answer.known_answer_graph`), its input, and its heads
    by the reference interpreter (the executable spec), one after another."""
    from cvmc.runtime.devices.known_answer import known_answer_graph, known_answer_input
    from cvmc.runtime.references.cvm import run_graph

    graph, x = known_answer_graph(), known_answer_input()
    heads = run_graph(graph, x)
    return graph, x.astype(np.int32).reshape(-1), np.concatenate([h.astype(np.int32).reshape(-1) for h in heads])


@functools.cache
def _known_answer_lowered(target: Target) -> tuple[HostProgram, str, list[KernelSpec]]:
    """The known-answer model lowered for `target` (once a process: every object holds it)."""
    from cvmc.runtime.driver.compile import lower_to_llvm

    return lower_to_llvm(_known_answer()[0], target)[:3]


@functools.lru_cache(maxsize=16)
def _known_answer_object(ir_text: str, target: Target) -> bytes:
    """The known-answer model's object file (the same for every object of a tier: compiled once a process)."""
    from cvmc.runtime.engine.jit import shared_object_code

    return shared_object_code(ir_text, target)


def _shared_object(key: str, target: str, graph_json: bytes, graph: Graph, tiers: tuple[Tier, ...],
                   lowered: list[tuple[HostProgram, str, list[KernelSpec]]]) -> tuple[bytes, str]:
    """The payload of a model's entry ('S' and its shared object) and a summary of it: per tier, the model's
    kernels and those of the known-answer model, compiled for the tier's CPU, and their host programs as tables;
    the object records the features each tier needs, which the library checks before any call."""
    from cvmc.runtime.engine.jit import shared_object_code
    from cvmc.runtime.engine.llvm_compile import compile_threads

    facts = api_facts(graph_json, graph)
    _, check_input, check_output = _known_answer()
    params = _Params()
    tables: list[_TierTables] = []
    units: list[tuple[str, str, Tier]] = []  # (prefix, IR, tier): one object file each
    for i, (tier, (program, ir_text, specs)) in enumerate(zip(tiers, lowered)):
        model = host_tables(program, specs, params, f"cvmc_t{i}m_")
        if program.input_shape is not None and model.input_size != facts.input_size:
            raise CVMRuntimeError(f"the host program's input has {model.input_size} values, the graph's "
                                  f"{facts.input_size}")
        check_program, check_ir, check_specs = _known_answer_lowered(tier.target)
        check = host_tables(check_program, check_specs, params, f"cvmc_t{i}c_")
        if check.input_size != check_input.size or sum(prod(h[3]) for h in check.heads) != check_output.size:
            raise CVMRuntimeError("the known-answer model's host program does not match its reference run")
        tables.append(_TierTables(tier, model, program.arena_bytes, check, check_program.arena_bytes))
        units += [(f"cvmc_t{i}m_", ir_text, tier), (f"cvmc_t{i}c_", check_ir, tier)]

    def compile_unit(unit: tuple[str, str, Tier]) -> bytes:
        prefix, ir_text, tier = unit
        planted = _prefixed(PLANT(tier.name, ir_text) if PLANT is not None else ir_text, prefix)
        if prefix.endswith("c_"):
            return _known_answer_object(planted, tier.target)
        return shared_object_code(planted, tier.target)

    with ThreadPoolExecutor(min(len(units), compile_threads())) as pool:
        objects = list(pool.map(compile_unit, units))
    blob = bytes(params.blob)
    with tempfile.TemporaryDirectory(prefix="cvmc-aot-") as tmp:
        work = Path(tmp)
        params_file = str(work / "params.bin") if blob else None
        source = object_source(key, target, facts, tables, len(blob), params_file, check_input, check_output)
        obj = link_model(objects, source, blob, work)
    where = (f"cpu {tiers[0].cpu}" if target == "host" else f"target {target}") + \
        f" (tier{'s' if len(tiers) > 1 else ''} {', '.join(t.name for t in tiers)})"
    summary = (f"a shared object of {len(obj)} bytes for {where}: "
               f"{', '.join(str(len(t.model.kernels)) for t in tables)} kernels, {len(lowered[0][0].calls)} calls, "
               f"arena {max(p.arena_bytes for p, _, _ in lowered)} bytes, params {len(blob)} bytes, gas {facts.gas}")
    return b"S" + obj, summary
