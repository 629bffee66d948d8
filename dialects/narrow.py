"""Typed isinstance for xDSL's generic builtin types.

`isinstance(t, TensorType)` narrows an `Attribute` to `TensorType[Unknown]` (pyright leaves a generic class's
parameters unknown on isinstance), which its strict mode rejects as soon as the element type is read; xDSL's
`isa(t, TensorType[...])` types it but builds and verifies a constraint on every call, too slow for a printer's or
verifier's inner loop. These guards are the isinstance with the type."""

from __future__ import annotations

from typing import TypeGuard

from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    TensorType,
)
from xdsl.ir import Attribute


def is_tensor(t: object) -> TypeGuard[TensorType[Attribute]]:
    return isinstance(t, TensorType)


def is_memref(t: object) -> TypeGuard[MemRefType[Attribute]]:
    return isinstance(t, MemRefType)


def is_shaped(t: object) -> TypeGuard[TensorType[Attribute] | MemRefType[Attribute]]:
    return isinstance(t, TensorType | MemRefType)


def is_integer_type(t: object) -> TypeGuard[IntegerType]:
    return isinstance(t, IntegerType)


def is_int_attr(t: object) -> TypeGuard[IntAttr[int]]:
    return isinstance(t, IntAttr)


def is_dense_elements(t: object) -> TypeGuard[DenseIntOrFPElementsAttr]:
    return isinstance(t, DenseIntOrFPElementsAttr)


def is_integer_attr(t: object) -> TypeGuard[IntegerAttr[IntegerType | IndexType]]:
    return isinstance(t, IntegerAttr)
