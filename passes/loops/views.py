"""Strided views of a base buffer: the index translations of `spec/tensor-views.md` as (shape, strides, offset).

A `Layout` says where element `(i0, ..., ik)` of a tensor lives in its base buffer: at
`offset + sum(i * strides)` elements. Reshape, transpose, positive-stride slices and broadcasting are new layouts
of the same buffer (no kernel, no copy); `reshape` answers None when no strided layout expresses the result (the
tensor must then be copied). `collapse` merges loop dimensions that every operand walks contiguously, so an
elementwise loop nest has as few (and as long) loops as possible.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

from xdsl.dialects.builtin import MemRefType, NoneAttr, StridedLayoutAttr
from xdsl.ir import Attribute

from cvmc.dialects import cvm_rules as rules


def row_major(shape: Sequence[int]) -> tuple[int, ...]:
    """The strides of a contiguous row-major tensor of `shape`."""
    strides: list[int] = []
    acc = 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


@dataclass(frozen=True)
class Layout:
    """Element `(i0, ..., ik)` is at `offset + sum(i * strides)` elements from the base buffer's start."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0

    @staticmethod
    def contiguous(shape: Sequence[int], offset: int = 0) -> Layout:
        return Layout(tuple(shape), row_major(shape), offset)

    def __str__(self) -> str:
        """As a memref's strided layout prints, the shape left out: `strided<[3, 1], offset: 2>`."""
        offset = f", offset: {self.offset}" if self.offset else ""
        return f"strided<[{', '.join(map(str, self.strides))}]{offset}>"

    @property
    def size(self) -> int:
        return prod(self.shape)

    @property
    def is_contiguous(self) -> bool:
        """Row-major without gaps (size-1 dims may have any stride)."""
        return all(s == r for n, s, r in zip(self.shape, self.strides, row_major(self.shape)) if n != 1)

    def canonical(self) -> Layout:
        """The same layout with the row-major stride on size-1 dims (they are never stepped)."""
        rm = row_major(self.shape)
        return Layout(self.shape, tuple(r if n == 1 else s for n, s, r in zip(self.shape, self.strides, rm)),
                      self.offset)

    def memref_type(self, element: Attribute) -> MemRefType:
        """`memref<shape x element>`, with the identity layout when it is one, else `strided<[...], offset: o>`."""
        return _memref_type(self, element)

    # ---- views -----------------------------------------------------------------------------------------

    def permute(self, perm: Sequence[int]) -> Layout:
        """Output dim d is input dim perm[d] (transpose)."""
        return Layout(tuple(self.shape[p] for p in perm), tuple(self.strides[p] for p in perm), self.offset)

    def slice(self, bounds: Sequence[tuple[int, int, int]]) -> Layout | None:
        """Per dim (begin, step, length); None for a negative step (not a view here)."""
        if any(st <= 0 for _, st, _ in bounds):
            return None
        offset = self.offset + sum(b * s for (b, _, _), s in zip(bounds, self.strides))
        return Layout(tuple(n for _, _, n in bounds), tuple(st * s for (_, st, _), s in zip(bounds, self.strides)),
                      offset)

    def broadcast_to(self, shape: Sequence[int]) -> Layout:
        """Right-aligned numpy broadcasting: new leading dims and size-1 dims that grow get stride 0."""
        shape = tuple(shape)
        lead = len(shape) - len(self.shape)
        strides = [0] * lead
        for n, s, want in zip(self.shape, self.strides, shape[lead:]):
            strides.append(s if n == want else 0)
        return Layout(shape, tuple(strides), self.offset)

    def reshape(self, shape: Sequence[int]) -> Layout | None:
        """The same elements in row-major order with a new shape, or None when strides cannot express it."""
        shape = tuple(shape)
        if self.is_contiguous:
            return Layout.contiguous(shape, self.offset)
        # Drop size-1 dims, then match groups of old dims to groups of new dims with equal products; a group
        # of old dims must be contiguous relative to itself (numpy's no-copy reshape).
        old = [(n, s) for n, s in zip(self.shape, self.strides) if n != 1]
        new_strides = [0] * len(shape)
        nonunit = [d for d, n in enumerate(shape) if n != 1]
        i = j = 0
        while i < len(old) and j < len(nonunit):
            i0, j0 = i, j
            po, pn = old[i][0], shape[nonunit[j]]
            while po != pn:
                if po < pn:
                    i += 1
                    po *= old[i][0]
                else:
                    j += 1
                    pn *= shape[nonunit[j]]
            for k in range(i0, i):
                if old[k][1] != old[k + 1][1] * old[k + 1][0]:
                    return None
            stride = old[i][1]
            for k in range(j, j0 - 1, -1):
                new_strides[nonunit[k]] = stride
                stride *= shape[nonunit[k]]
            i += 1
            j += 1
        rm = row_major(shape)
        for d, n in enumerate(shape):
            if n == 1:
                new_strides[d] = rm[d]
        return Layout(shape, tuple(new_strides), self.offset)


@functools.lru_cache(maxsize=4096)
def _memref_type(layout: Layout, element: Attribute) -> MemRefType:
    """`Layout.memref_type`, one (immutable) type per layout: building and verifying a type is not cheap."""
    c = layout.canonical()
    if c.offset == 0 and c.strides == row_major(c.shape):
        return MemRefType(element, c.shape)
    return MemRefType(element, c.shape, StridedLayoutAttr(c.strides, c.offset))


def collapse(layouts: Sequence[Layout]) -> list[Layout]:
    """The same index space over fewer dims: size-1 dims dropped, and dims d, d+1 merged wherever every layout
    has stride[d] == stride[d+1] * shape[d+1]. All layouts must have the same shape."""
    shape = layouts[0].shape
    keep = [d for d, n in enumerate(shape) if n != 1]
    dims: list[list[int]] = []  # groups of original dims
    for d in keep:
        if dims and all(l.strides[dims[-1][-1]] == l.strides[d] * shape[d] for l in layouts):
            dims[-1].append(d)
        else:
            dims.append([d])
    out: list[Layout] = []
    for l in layouts:
        if not dims:
            out.append(Layout((1,), (1,), l.offset))
            continue
        out.append(Layout(tuple(prod(shape[d] for d in g) for g in dims), tuple(l.strides[g[-1]] for g in dims),
                          l.offset))
    return out


def layout_of(t: MemRefType) -> Layout:
    """The Layout of a static memref type."""
    shape = t.get_shape()
    if isinstance(t.layout, NoneAttr):
        return Layout.contiguous(shape)
    assert isinstance(t.layout, StridedLayoutAttr)
    strides = tuple(s for s in t.layout.get_strides() if s is not None)
    offset = t.layout.get_offset()
    assert offset is not None and len(strides) == len(shape)
    return Layout(tuple(shape), strides, offset)


VIEW_OPERATORS = frozenset({"reshape", "flatten", "expand_dims", "squeeze", "transpose", "strided_slice",
                            "slice_like"})
"""The cvm operators that may be a view of their input (besides a sum or max that reduces nothing)."""


def is_view_operator(op: str, attrs: Mapping[str, Any], in_shape: Sequence[int]) -> bool:
    """A view operator, or a sum/max whose `exclude` lists every axis (the identity)."""
    if op in ("sum", "max"):
        return not rules.reduce_axes(in_shape, attrs["axis"], attrs["exclude"])
    return op in VIEW_OPERATORS


def operator_view(op: str, attrs: Mapping[str, Any], src: Layout, out_shape: Sequence[int]) -> Layout | None:
    """The layout of a view operator's output given its input's layout `src` over a base buffer, or None when
    strides cannot express it (a kernel copies it)."""
    if op == "transpose":
        return src.permute(rules.transpose_axes(attrs["axes"], len(src.shape)))
    if op == "strided_slice":
        return src.slice(rules.strided_slice_bounds(src.shape, attrs["begin"], attrs["end"], attrs["stride"]))
    if op == "slice_like":
        return src.slice([(0, 1, n) for n in out_shape])
    return src.reshape(out_shape)  # reshape, flatten, expand_dims, squeeze, and a sum/max reducing nothing
