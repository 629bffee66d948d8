"""The params binary as cvm-runtime reads it (param_dict.cc: `load_param_dict`; ndarray.h: `NDArray::Load`), and
the writer of the same format. Checking the arrays against the graph (`LoadParams`) is `graph.load_params`.

    arrays = read_params(data)                        # name -> int32 array, as the file holds them
    data = write_params({"w": np.zeros(3, np.int32)})
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from math import prod
from typing import Any

import numpy as np

from cvmc.dialects import cvm_rules as rules
from cvmc.errors import CVMLogicError
from cvmc.runtime.frontend.graph_json import as_text, fail

LIST_MAGIC = 0xF7E58D4F05049CB7
ARRAY_MAGIC = 0xDD5E40F096B4A13F
ALLOC_FAILS = 1 << 34  # a deviation: an allocation above this size is taken to fail

_verify, _check, _undefined = rules.verify, rules.check, rules.undefined  # VERIFY, CHECK, a deviation




@dataclass
class _Array:
    code: int
    bits: int
    lanes: int
    device_type: int
    shape: tuple[int, ...]
    values: np.ndarray  # int32, sign-extended from the file's int8 or int32
    complete: bool  # False: the file ends inside the data


class _Stream:
    """utils::MemoryStringStream: a read returns what is left, up to the size asked."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def read(self, n: int) -> bytes:
        b = self.data[self.pos:self.pos + n]
        self.pos += len(b)
        return b

    def unpack(self, fmt: str) -> tuple[Any, ...] | None:
        """Arithmetic reads: None when the stream is short (the runtime's Read returns false)."""
        n = struct.calcsize(fmt)
        b = self.read(n)
        return struct.unpack(fmt, b) if len(b) == n else None


_VEC_STRING_MAX = ((1 << 63) - 1) // 32  # libstdc++ vector<string>::max_size()
_STRING_MAX = (1 << 62) - 1  # basic_string::max_size()


def _alloc(nbytes: int, what: str) -> None:
    _check(nbytes <= ALLOC_FAILS, f"invalid params file: std::bad_alloc allocating {nbytes} bytes for {what}")


def read_params(data: bytes) -> dict[str, np.ndarray]:
    """The int32 arrays of a params binary by name (int8 storage is sign-extended)."""
    return {name: arr.values for name, arr in read_param_arrays(data)}


def read_param_arrays(data: bytes) -> list[tuple[str, _Array]]:
    """load_param_dict and NDArray::Load: the arrays of a params binary, in file order, as the runtime reads them."""
    s = _Stream(data)
    header = s.unpack("<Q")
    _verify(header is not None, "invalid params file format: no list magic")  # param_dict.cc:20
    _verify(header == (LIST_MAGIC,), "invalid params file format: wrong list magic")  # param_dict.cc:22
    _verify(s.unpack("<Q") is not None, "invalid params file format: no reserved word")  # param_dict.cc:24
    count = s.unpack("<Q")
    if count is None:  # param_dict.cc:27
        fail(CVMLogicError, "invalid params file format: no name count")
    n_names = count[0]
    _verify(n_names <= _VEC_STRING_MAX, f"invalid params file: {n_names} names (std::length_error)")
    _alloc(32 * n_names, f"{n_names} names")
    names = []
    for i in range(n_names):
        length = s.unpack("<Q")
        if length is None:
            fail(CVMLogicError, f"invalid params file format: name {i} has no length")
        n = length[0]
        _verify(n <= _STRING_MAX, f"invalid params file: name {i} of {n} bytes (std::length_error)")
        _alloc(n + 1, f"name {i}")
        raw = s.read(n)
        _verify(len(raw) == n, f"invalid params file format: name {i} is cut short")
        names.append(as_text(raw))
    left = len(data) - s.pos
    _undefined(left >= 8, "the params file ends inside the array count, which the runtime reads uninitialised")
    n_arrays = s.unpack("<Q")[0]  # type: ignore[index]
    _verify(n_arrays == len(names), f"invalid params file format: {n_arrays} arrays for {len(names)} names")
    arrays = [(name, _read_array(s, name)) for name in names]
    for name, arr in arrays:  # only the last array can be cut short: any later one fails its header (a CHECK)
        _undefined(arr.complete, f"param {name!r} is cut short inside its data: the runtime keeps the rest "
                   "uninitialised")
    return arrays


def _read_array(s: _Stream, name: str) -> _Array:
    def need(v: tuple[Any, ...] | None, what: str) -> tuple[Any, ...]:
        _check(v is not None, f"invalid DLTensor file format: param {name!r} is cut short in its {what}")
        assert v is not None
        return v

    magic = need(s.unpack("<Q"), "magic")[0]  # ndarray.h:487
    need(s.unpack("<Q"), "reserved word")
    _check(magic == ARRAY_MAGIC, f"invalid DLTensor file format: param {name!r} has a wrong array magic")
    device_type, _device_id = need(s.unpack("<ii"), "context")
    ndim = need(s.unpack("<i"), "ndim")[0]
    code, bits, lanes = need(s.unpack("<BBH"), "dtype")
    _verify(ndim >= 0, f"param {name!r}: ndim {ndim} (std::length_error)")  # vector<int64_t>(ndim)
    _alloc(8 * ndim, f"the shape of {name!r}")
    shape = need(s.unpack(f"<{ndim}q"), "shape") if ndim else ()
    # NDArray::Empty: VerifyDataType (ndarray.cc:22), DeviceAPI::Get (device_api.cc), AllocDataSpace
    _check(lanes >= 1, f"param {name!r}: dtype lanes {lanes}, expected >= 1")
    if not (bits == 1 and code == 1):  # uint1 is allowed as a bool flag
        _check(bits % 8 == 0, f"param {name!r}: dtype bits {bits} are not a whole number of bytes")
        _check(bits & (bits - 1) == 0, f"param {name!r}: dtype bits {bits} are not a power of two")
    _undefined(0 <= device_type < 32 or device_type >= 128, f"param {name!r}: device type {device_type}")
    _check(device_type in (1, 3), f"param {name!r}: device type {device_type} is not enabled (1 cpu, 3 formal)")
    nbytes = 1
    for d in shape:
        nbytes = nbytes * (d % (1 << 64)) % (1 << 64)
    nbytes = nbytes * ((bits * lanes + 7) // 8) % (1 << 64)
    align = max(64, (bits // 8) * lanes)
    _check(align & (align - 1) == 0, f"param {name!r}: alignment {align} (std::bad_alloc)")
    _alloc(nbytes, f"param {name!r}")
    elems = 1
    for d in shape:
        elems = _wrap64(elems * d)
    size = need(s.unpack("<q"), "data size")[0]  # ndarray.h:526
    _check(size == _wrap64(elems * ((bits + 7) // 8)),
           f"invalid DLTensor file format: param {name!r} declares {size} data bytes for shape {list(shape)}")
    raw = s.read(size % (1 << 64))
    _check(len(raw) > 0, f"invalid DLTensor file format: param {name!r} has no data")  # ndarray.h:530
    values = np.zeros(0, np.int32)
    # a negative dim, or dims whose product (in elements or in bytes) the runtime's 64-bit sizes wrap, give no
    # array of that shape: the runtime holds the bytes it read, and its shape check against the graph's
    # (load_params; those dims are in [1, 2^24]) refuses it
    exact = all(d >= 0 for d in shape) and prod(shape) == elems and elems * ((bits + 7) // 8) == size
    if code == 0 and lanes == 1 and bits in (8, 32) and len(raw) == size and exact:
        values = np.frombuffer(raw, "<i1" if bits == 8 else "<i4").astype(np.int32).reshape(shape)
    return _Array(code, bits, lanes, device_type, tuple(shape), values, len(raw) == size)


def _wrap64(x: int) -> int:
    x %= 1 << 64
    return x - (1 << 64) if x >= 1 << 63 else x


def write_params(params: dict[str, np.ndarray]) -> bytes:
    """Encode int32 arrays as a params binary (int8 storage when every value fits, as cvm-runtime writes)."""
    parts = [struct.pack("<QQQ", LIST_MAGIC, 0, len(params))]
    for name in params:
        b = name.encode("utf-8", "surrogateescape")
        parts.append(struct.pack("<Q", len(b)) + b)
    parts.append(struct.pack("<Q", len(params)))
    for arr in params.values():
        a = np.asarray(arr)
        small = a.size > 0 and int(a.min()) >= -127 and int(a.max()) <= 127
        data = a.astype("<i1" if small else "<i4").tobytes()
        parts.append(struct.pack("<QQiiiBBH", ARRAY_MAGIC, 0, 1, 0, a.ndim, 0, 8 if small else 32, 1))
        parts.append(struct.pack(f"<{a.ndim}q", *a.shape) + struct.pack("<q", len(data)) + data)
    return b"".join(parts)
