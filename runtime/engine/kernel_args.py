"""The checks every kernel call's arrays get before their pointers are passed (dtype, alignment, a layout whose
span fits the array, no written argument overlapping another): `check_arguments(spec, arrays) -> base pointers`.
"""

from __future__ import annotations

import numpy as np

from cvmc.codegen.abi import KernelArg, KernelSpec
from cvmc.errors import CVMLogicError

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
