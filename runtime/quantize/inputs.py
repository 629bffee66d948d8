"""What the quantizer reads from a stranger, bounded as the model loader bounds its files: the ONNX model (its
bytes, its initializers and their external data) and the calibration, test and label arrays (.npy, .npz).

    budget = Budget(max_memory)                                 # bytes; every allocation it foresees is checked
    proto, base, name = read_model("m.onnx", budget)            # base: the model's folder (None for bytes)
    w = tensor_array(proto.graph.initializer[0], "initializer 'w'", base, budget, {})
    x = read_array("calib.npz", "the calibration data", budget, key="x")

Every file goes through `cvmc.runtime.frontend.files.read_bounded` (a FIFO refused instead of blocking, sizes capped by
the budget, `/dev/zero` refused). An initializer's external data is read by its `location`, `offset` and `length`
from the model file's folder only (never the working directory): refused when the model comes as bytes or a
ModelProto, and for a location that is absolute, climbs out with `..`, or passes through a link; its bytes are
bounds-checked against the file's size. A tensor's declared dims are checked against its data and the budget
before anything is allocated; a `.npy` header (shape, dtype) against the file's size before its data is read.
Pickles never load (no object dtype is read).
"""

from __future__ import annotations

import io
import math
import os
import zipfile
import zlib
from typing import Any

import numpy as np

from cvmc.errors import CVMLogicError, CVMRuntimeError
from cvmc.runtime.frontend.files import read_bounded

# The quantizer's default memory budget (bytes): declared shapes, constant folding and the float model's values
# on the calibration data are checked against it before they are allocated (`max_memory` / --max-memory).
DEFAULT_MAX_MEMORY = 8 << 30
# protobuf refuses a message of 2 GiB or more
PROTOBUF_LIMIT = (2 << 30) - 1
INSTALL_HINT = "pip install '.[quantize]' in the clone of cvmc (or pip install 'cvmc[quantize]')"


def check_max_memory(max_memory: object) -> int:
    if isinstance(max_memory, bool) or not isinstance(max_memory, int | np.integer) or max_memory <= 0:
        raise CVMLogicError(f"expected 'max_memory' to be a positive number of bytes, got {max_memory!r}")
    return int(max_memory)


class Budget:
    """The bytes the quantizer may allocate (`limit`); `check` refuses a need past it before the allocation."""

    def __init__(self, limit: int = DEFAULT_MAX_MEMORY):
        self.limit = check_max_memory(limit)

    def check_shape(self, shape: Any, what: str) -> None:
        """An empty array (a 0 among its sizes) whose other axes multiply past the budget is refused too: its byte
        count passes, but numpy cannot hold its shape (a nonempty array is held by its byte count, `check`)."""
        if 0 in shape and 8 * math.prod(d for d in shape if d) > self.limit:
            raise CVMLogicError(f"{what}: shape {list(shape)}: its axes hold more than the memory budget of "
                                f"{self.limit} bytes (max_memory, cvm-quantize --max-memory)")

    def check(self, nbytes: int, what: str) -> None:
        if nbytes > self.limit:
            raise CVMLogicError(f"{what} needs {nbytes} bytes, more than the memory budget of {self.limit} bytes "
                                f"(max_memory, cvm-quantize --max-memory)")


def require_onnx() -> Any:
    """The onnx module, or a CVMRuntimeError naming what to install."""
    try:
        import onnx
    except ImportError:
        raise CVMRuntimeError(f"the quantizer reads ONNX models with the onnx package, which is not installed: "
                              f"{INSTALL_HINT}") from None
    return onnx


def read_model(model: Any, budget: Budget) -> tuple[Any, str | None, str]:
    """(the ModelProto, the folder its external data may be read from (None unless `model` is a path), its name
    in messages)."""
    onnx = require_onnx()
    if isinstance(model, str | os.PathLike):
        name = os.fspath(model)
        data = read_bounded(model, "the ONNX model", min(budget.limit, PROTOBUF_LIMIT),
                            "the memory budget, or protobuf's 2 GiB")
        base = os.path.dirname(os.path.abspath(name))
    elif isinstance(model, bytes | bytearray | memoryview):
        data, base, name = bytes(model), None, "(bytes)"
    elif isinstance(model, onnx.ModelProto):
        return model, None, "(ModelProto)"
    else:
        raise CVMLogicError(f"expected the model as a path, bytes or an onnx.ModelProto, got {type(model).__name__}")
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception as e:  # protobuf's DecodeError, or a RuntimeWarning-turned-error: bytes that are not ONNX
        raise CVMRuntimeError(f"cannot read the ONNX model {name if base is None else repr(name)}: not an ONNX "
                              f"ModelProto ({e})") from None
    return proto, base, name


def check_names(proto: Any) -> None:
    """Every name the importer reads is text: protobuf hands a string field that is not UTF-8 over as bytes."""
    g = proto.graph
    fields: list[tuple[str, Any]] = [("an opset domain", o.domain) for o in proto.opset_import]
    fields += [("an input's name", v.name) for v in g.input] + [("an output's name", v.name) for v in g.output]
    tensors = list(g.initializer)
    fields += [("an initializer's name", t.name) for t in g.initializer]
    for k, n in enumerate(g.node):
        where = f"node {k}"
        fields += [(f"{where}: its name", n.name), (f"{where}: its op_type", n.op_type), (f"{where}: its domain",
                                                                                           n.domain)]
        fields += [(f"{where}: an input", v) for v in n.input] + [(f"{where}: an output", v) for v in n.output]
        for a in n.attribute:
            fields += [(f"{where}: an attribute's name", a.name), (f"{where}: an attribute's reference",
                                                                   a.ref_attr_name)]
            if a.HasField("t"):
                tensors.append(a.t)
    for t in tensors:
        fields += [(f"tensor {t.name!r}: its external data", v) for e in t.external_data for v in (e.key, e.value)]
    for what, v in fields:
        if not isinstance(v, str):
            raise CVMRuntimeError(f"cannot read the ONNX model: {what} is not UTF-8 text ({v!r:.80})")


# ONNX element types the quantizer reads, as little-endian numpy dtypes (TensorProto.DataType values)
_DTYPES = {1: "<f4", 2: "u1", 3: "i1", 4: "<u2", 5: "<i2", 6: "<i4", 7: "<i8", 9: "?", 10: "<f2", 11: "<f8",
           12: "<u4", 13: "<u8"}
_STRING = 8


def _type_name(elem: int) -> str:
    onnx = require_onnx()
    try:
        return onnx.TensorProto.DataType.Name(elem)
    except ValueError:
        return str(elem)


def _external(t: Any, what: str, base: str | None, nbytes: int, budget: Budget, cache: dict[str, bytes]) -> bytes:
    """The `nbytes` bytes of a tensor stored outside the model (its `external_data` fields)."""
    fields: dict[str, str] = {}
    for e in t.external_data:
        fields[e.key] = e.value
    loc = fields.get("location", "")
    if base is None:
        raise CVMLogicError(f"{what}: its data is stored outside the model (location {loc!r}); the model came as "
                            f"bytes or a ModelProto: pass its path, so that the data is read from its folder")
    parts = loc.replace("\\", "/").split("/")
    if not loc or "\0" in loc or os.path.isabs(loc) or loc.startswith(("/", "\\")) or ".." in parts:
        raise CVMLogicError(f"{what}: the external data location {loc!r}: expected a relative path inside the "
                            f"model's folder (no '..', not absolute)")
    folder = os.path.realpath(base)
    path = os.path.normpath(os.path.join(folder, loc))
    if os.path.commonpath([folder, path]) != folder or path == folder:
        raise CVMLogicError(f"{what}: the external data location {loc!r} is outside the model's folder {folder!r}")
    if os.path.realpath(path) != path:
        raise CVMLogicError(f"{what}: the external data location {loc!r} passes through a link; expected a file "
                            f"in the model's folder {folder!r}")
    try:
        offset = int(fields.get("offset", "0"), 10)
        length = int(fields["length"], 10) if "length" in fields else None
    except ValueError:
        raise CVMLogicError(f"{what}: expected decimal 'offset' and 'length' in its external data, got "
                            f"{fields.get('offset')!r}, {fields.get('length')!r}") from None
    if offset < 0 or (length is not None and length != nbytes):
        raise CVMLogicError(f"{what}: external data of offset {offset} and length {length}; its dims give "
                            f"{nbytes} bytes from an offset >= 0")
    if path not in cache:
        cache[path] = read_bounded(path, f"the external data of {what}", budget.limit, "the memory budget")
    data = cache[path]
    if offset + nbytes > len(data):
        raise CVMLogicError(f"{what}: its external data {loc!r} holds {len(data)} bytes; the tensor needs "
                            f"{nbytes} from offset {offset}")
    return data[offset:offset + nbytes]


def tensor_array(t: Any, what: str, base: str | None, budget: Budget, cache: dict[str, bytes]) -> np.ndarray:
    """A TensorProto as a numpy array: its dims checked against its data and the budget before reading it."""
    elem = int(t.data_type)
    if elem == _STRING:
        raise CVMLogicError(f"{what}: a tensor of strings has no CVM form")
    if elem not in _DTYPES:
        raise CVMLogicError(f"{what}: the element type {_type_name(elem)} has no CVM form (expected a float or "
                            f"integer type)")
    if t.HasField("segment"):
        raise CVMLogicError(f"{what}: a segmented tensor is not read")
    dims = [int(d) for d in t.dims]
    if any(d < 0 for d in dims):
        raise CVMLogicError(f"{what}: dims {dims}: expected sizes >= 0")
    dtype = np.dtype(_DTYPES[elem])
    count = math.prod(dims)
    nbytes = count * dtype.itemsize
    budget.check(nbytes, what)
    budget.check_shape(dims, what)
    if t.data_location == 1:  # EXTERNAL
        raw = _external(t, what, base, nbytes, budget, cache)
    elif t.HasField("raw_data"):
        raw = t.raw_data
        if len(raw) != nbytes:
            raise CVMLogicError(f"{what}: dims {dims} of {_type_name(elem)} give {nbytes} bytes, its data holds "
                                f"{len(raw)}")
    else:
        field, kind = {1: ("float_data", "<f4"), 11: ("double_data", "<f8"), 7: ("int64_data", "<i8"),
                       12: ("uint64_data", "<u8"), 13: ("uint64_data", "<u8")}.get(elem, ("int32_data", "<i4"))
        values = getattr(t, field)
        if len(values) != count:
            raise CVMLogicError(f"{what}: dims {dims} give {count} values, its {field} holds {len(values)}")
        a = np.array(values, dtype=kind)
        if elem == 10:  # float16 as the bits of each value in int32_data
            return a.astype("<u2").view("<f2").reshape(dims)
        return a.astype(dtype).reshape(dims)
    return np.frombuffer(raw, dtype, count).reshape(dims).copy()


# --- arrays: .npy and .npz ------------------------------------------------------------------------------------


def _npy(data: bytes, what: str, budget: Budget) -> np.ndarray:
    f = io.BytesIO(data)
    fmt = np.lib.format
    try:
        version = fmt.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(f)
        else:
            raise ValueError(f"version {version[0]}.{version[1]} is not read (1.0 and 2.0 are)")
    except Exception as e:  # numpy's header parser raises what its tokenizer and literal_eval raise
        raise CVMRuntimeError(f"cannot read {what}: not a .npy array ({e})") from None
    if dtype.hasobject or dtype.kind not in "biuf" or dtype.fields is not None or dtype.subdtype is not None:
        raise CVMLogicError(f"{what}: expected an array of numbers, got dtype {dtype.str!r}")
    nbytes = math.prod(shape) * dtype.itemsize
    budget.check(nbytes, what)
    budget.check_shape(shape, what)
    offset = f.tell()
    if len(data) - offset != nbytes:
        raise CVMRuntimeError(f"cannot read {what}: its header gives shape {list(shape)} of dtype {dtype.str!r} "
                              f"({nbytes} bytes), the file holds {len(data) - offset} bytes after the header")
    a = np.frombuffer(data, dtype, math.prod(shape), offset)
    return a.reshape(shape, order="F" if fortran else "C")


def _npz(data: bytes, what: str, budget: Budget, key: str | None) -> tuple[np.ndarray, str]:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            members = {i.filename[:-4]: i for i in z.infolist() if i.filename.endswith(".npy")}
            if key is not None and key in members:
                name = key
            elif len(members) == 1:
                name = next(iter(members))
            else:
                raise CVMLogicError(f"{what}: expected one array, or one named {key!r}, got the keys "
                                    f"{sorted(members)}")
            info = members[name]
            budget.check(info.file_size, f"{what} (key {name!r})")
            with z.open(info) as member:
                body = member.read(info.file_size + 1)
            if len(body) != info.file_size:
                raise CVMRuntimeError(f"cannot read {what} (key {name!r}): it holds {len(body)} bytes, its entry "
                                      f"says {info.file_size}")
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, ValueError, OSError,
            RuntimeError) as e:  # a damaged or encrypted archive
        raise CVMRuntimeError(f"cannot read {what}: not a readable .npz archive ({type(e).__name__}: {e})") from None
    return _npy(body, f"{what} (key {name!r})", budget), name


def read_array(source: Any, what: str, budget: Budget, key: str | None = None) -> tuple[np.ndarray, str]:
    """(an array, its name in messages) from a .npy or .npz path (an .npz: the array named `key`, or its only one)
    or from an array-like."""
    if isinstance(source, str | os.PathLike):
        name = os.fspath(source)
        label = f"{what} {name!r}"
        data = read_bounded(source, what, budget.limit, "the memory budget")
        if data.startswith(b"\x93NUMPY"):
            return _npy(data, label, budget), label
        if data.startswith((b"PK\x03\x04", b"PK\x05\x06")):
            a, k = _npz(data, label, budget, key)
            return a, f"{label} (key {k!r})"
        raise CVMRuntimeError(f"cannot read {label}: not a .npy or .npz file")
    if isinstance(source, np.lib.npyio.NpzFile):
        raise CVMLogicError(f"{what}: pass the .npz path or one of its arrays, not the open archive")
    try:
        a = np.asarray(source)
    except Exception as e:  # ragged lists and the like
        raise CVMLogicError(f"{what}: expected an array of numbers ({type(e).__name__}: {e})") from None
    if a.dtype.hasobject or a.dtype.kind not in "biuf":
        raise CVMLogicError(f"{what}: expected an array of numbers, got dtype {a.dtype.str!r}")
    return a, what
