"""A model compiled for this CPU as one sealed cache entry: what a warm load needs, so that it lowers nothing.

    key = model_key(graph, target)                 # from what determines the code
    payload = encode(CompiledModel(...))           # sealed by `cache.Cache.put` (kind "model")
    compiled = decode(payload)                     # None for anything but a well-formed entry of this version

The key is a SHA-256 over the verified graph's canonical form (its two files as `graph_writer` writes them:
every node, attribute, shape, precision and parameter), the target (`Target`'s printed form: the tier and its
flags), this CPU as LLVM names it (triple, CPU, features: `target.host_target`, kept in the cache so that no
LLVM is imported to ask), and the versions of everything that turns a graph into code: cvmc's version and its
sources (`dialects/`, `passes/`, `codegen/`, `runtime/`: `source_digest`), llvmlite's and LLVM's versions and the
pipeline's (`llvm_compile.py`'s bytes, `jit.version_key`). Thread counts are not in it: they change how code is
run, not the code.

The entry holds the host program (`host.HostProgram`: the arena's size, every call's views, the heads, the
packed parameters), the kernels' specs (`abi.KernelSpec`) and the cache name of their code (the JIT's own entry,
a shared object, kind "so", or object files, kind "o", sealed on its own): a hit reads the two entries, checks
them, and loads the code (dlopen from a sealed memfd: `jit.SharedCode`). Nothing is
unpickled: the head is JSON whose every field is checked for its type, the parameters are raw bytes of a
declared element type and shape. The entry is trusted as the code is (sealed with this user's secret,
`cache`), and the runner checks every kernel's arrays against its spec before it runs (`kernel_args`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from math import prod
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cvmc.codegen.abi import KernelArg, KernelSpec
from cvmc.runtime.driver.host import DTYPES, Call, HostProgram, View

if TYPE_CHECKING:
    from cvmc.runtime.frontend.graph import Graph

KIND = "model"
_MAGIC = b"cvmc-model-1\n"
_ELEMENTS = ("i1", "i8", "i16", "i32", "i64", "f32", "f64")
_ROOT = Path(__file__).resolve().parents[2]  # the package's folders: dialects/, passes/, codegen/, runtime/


@dataclass
class CompiledModel:
    """What a warm load of a model needs: its host program, its kernels' specs, and the cache name of their
    object files; `extras`, arrays the caller keeps with them (the known-answer check: its input and heads)."""

    target: str
    program: HostProgram
    specs: list[KernelSpec]
    objects_key: str
    extras: dict[str, np.ndarray] = field(default_factory=dict)


@functools.cache
def source_digest() -> str:
    """A SHA-256 over cvmc's compiler and runtime sources (`dialects/`, `passes/`, `codegen/`, `runtime/`): each
    file's path, size and modification time, the rule by which Python itself decides that a module's compiled
    form is out of date (once a process: 100-odd `stat` calls, far cheaper than reading every file)."""
    digest = hashlib.sha256()
    for folder in ("dialects", "passes", "codegen", "runtime"):
        for top, dirs, files in os.walk(_ROOT / folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".ll", ".c", ".h")):
                    st = os.stat(os.path.join(top, name))
                    digest.update(f"{os.path.relpath(os.path.join(top, name), _ROOT)}\0{st.st_size}\0"
                                  f"{st.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def compiler_key(*parts: str) -> str:
    """A cache name from `parts` and the compiler (`jit.version_key`, cvmc's version, `source_digest`)."""
    import cvmc
    from cvmc.runtime.engine.jit import version_key

    digest = hashlib.sha256(b"cvmc-model\0")
    for part in (version_key(), cvmc.__version__, source_digest(), *parts):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def model_key(graph: Graph, target: object) -> str:
    """The cache name of `graph` compiled for `target` on this CPU by this cvmc (see the module docstring)."""
    from cvmc.runtime.frontend.graph import graph_to_json, write_params

    digest = hashlib.sha256(json.dumps(graph_to_json(graph), ensure_ascii=False, sort_keys=True).encode())
    digest.update(b"\0")
    digest.update(write_params(graph.params))
    return compiler_key(str(target), digest.hexdigest())


# ---------------------------------------------------------------------------------------------------------------
# The entry: magic, the head's length (u64 LE), the head (JSON), the globals' bytes in the head's order
# ---------------------------------------------------------------------------------------------------------------


def _view(v: View) -> list[Any]:
    return [v.root, v.shift, v.element, list(v.shape), list(v.strides), v.offset]


def encode(compiled: CompiledModel) -> bytes:
    """The entry of `compiled` (its payload; the cache seals it)."""
    p = compiled.program
    globals_ = [(name, np.ascontiguousarray(a)) for name, a in p.globals.items()]
    extras = [(name, np.ascontiguousarray(a)) for name, a in compiled.extras.items()]
    head = {
        "target": compiled.target,
        "objects": compiled.objects_key,
        "arena_bytes": p.arena_bytes,
        "input_shape": None if p.input_shape is None else list(p.input_shape),
        "intermediate_bytes": p.intermediate_bytes,
        "calls": [[c.kernel, [_view(v) for v in c.args], c.work] for c in p.calls],
        "heads": [_view(v) for v in p.heads],
        "globals": [[name, a.dtype.str, list(a.shape)] for name, a in globals_],
        "extras": [[name, a.dtype.str, list(a.shape)] for name, a in extras],
        "kernels": [[s.name, [[list(a.shape), a.element, list(a.strides), a.offset, a.written] for a in s.args],
                     s.trip, s.splittable] for s in compiled.specs],
    }
    text = json.dumps(head, separators=(",", ":")).encode()
    arrays = (a.tobytes() for _, a in globals_ + extras)
    return b"".join([_MAGIC, struct.pack("<Q", len(text)), text, *arrays])


class _Bad(ValueError):
    """The entry is not of this form (never raised to a caller: `decode` answers None)."""


def _int(x: object, lo: int = 0) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or x < lo:
        raise _Bad(f"expected an integer >= {lo}, got {x!r}")
    return x


def _str(x: object) -> str:
    if not isinstance(x, str):
        raise _Bad(f"expected a string, got {x!r}")
    return x


def _list(x: object, n: int | None = None) -> list[Any]:
    if not isinstance(x, list) or (n is not None and len(x) != n):
        raise _Bad(f"expected a list{'' if n is None else f' of {n}'}, got {x!r}")
    return x


def _ints(x: object, lo: int | None = 0) -> tuple[int, ...]:
    return tuple(_int(v, -(1 << 62) if lo is None else lo) for v in _list(x))


def _read_view(x: object) -> View:
    root, shift, element, shape, strides, offset = _list(x, 6)
    if element not in DTYPES:
        raise _Bad(f"expected a view's element in {sorted(DTYPES)}, got {element!r}")
    shape_, strides_ = _ints(shape), _ints(strides, None)
    if len(shape_) != len(strides_):
        raise _Bad("a view's shape and strides differ in rank")
    return View(_str(root), _int(shift), element, shape_, strides_, _int(offset, -(1 << 62)))


def _read_spec(x: object) -> KernelSpec:
    name, args, trip, splittable = _list(x, 4)
    out = []
    for a in _list(args):
        shape, element, strides, offset, written = _list(a, 5)
        if element not in _ELEMENTS or not isinstance(written, bool):
            raise _Bad(f"a kernel argument of element {element!r}")
        shape_, strides_ = _ints(shape), _ints(strides, None)
        if len(shape_) != len(strides_):
            raise _Bad("a kernel argument's shape and strides differ in rank")
        out.append(KernelArg(shape_, element, strides_, _int(offset, -(1 << 62)), written))
    if not isinstance(splittable, bool):
        raise _Bad("a kernel's splittable flag")
    return KernelSpec(_str(name), tuple(out), _int(trip, 1), splittable)


_ARRAY_DTYPES = frozenset(np.dtype(t).str for t in ("<i4", "<i2", "i1", "u1", "<i8"))


def _arrays(head: list[Any], data: memoryview) -> Iterator[tuple[str, np.ndarray]]:
    at = 0
    for g in head:
        name, dtype, shape = _list(g, 3)
        if dtype not in _ARRAY_DTYPES:
            raise _Bad(f"a global of dtype {dtype!r}")
        shape_ = _ints(shape)
        size = prod(shape_) * np.dtype(dtype).itemsize
        if at + size > len(data):
            raise _Bad("the globals' bytes end early")
        array = np.frombuffer(data[at:at + size], dtype=dtype).reshape(shape_).copy()  # aligned, its own
        array.flags.writeable = False
        yield _str(name), array
        at += size
    if at != len(data):
        raise _Bad("bytes after the globals")


def decode(payload: bytes) -> CompiledModel | None:
    """The compiled model of an `encode`d entry, or None for anything else (another version's form, a field of
    the wrong type, bytes missing or left over)."""
    head_at = len(_MAGIC) + 8
    if not payload.startswith(_MAGIC) or len(payload) < head_at:
        return None
    (n,) = struct.unpack_from("<Q", payload, len(_MAGIC))
    if head_at + n > len(payload):
        return None
    try:
        head = json.loads(payload[head_at:head_at + n])
        if not isinstance(head, dict):
            return None
        input_shape = head["input_shape"]
        calls = [Call(_str(k), tuple(_read_view(v) for v in _list(args)), _int(work))
                 for k, args, work in (_list(c, 3) for c in _list(head["calls"]))]
        program = HostProgram(
            arena_bytes=_int(head["arena_bytes"]),
            input_shape=None if input_shape is None else _ints(input_shape),
            calls=calls,
            heads=[_read_view(v) for v in _list(head["heads"])],
            intermediate_bytes=_int(head["intermediate_bytes"]),
            globals={},
        )
        listed = _list(head["globals"]) + _list(head["extras"])
        arrays = dict(_arrays(listed, memoryview(payload)[head_at + n:]))
        if len(arrays) != len(listed):
            return None  # two arrays of one name
        names = [_str(_list(g, 3)[0]) for g in head["globals"]]
        program.globals = {name: arrays.pop(name) for name in names}
        specs = [_read_spec(s) for s in _list(head["kernels"])]
        objects = _str(head["objects"])
        if len(objects) != 64 or any(c not in "0123456789abcdef" for c in objects):
            return None
        return CompiledModel(_str(head["target"]), program, specs, objects, arrays)
    except (_Bad, KeyError, ValueError, TypeError):
        return None
