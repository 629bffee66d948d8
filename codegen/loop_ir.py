"""What both printers read off loop-level IR the same way: an op's name, the view ops, a constant integer behind
an SSA value, and the static layout of a memref type. One home, so that the LLVM and the CUDA printers cannot
disagree on a layout.
"""

from __future__ import annotations

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import DYNAMIC_INDEX, IntegerAttr, MemRefType, NoneAttr, StridedLayoutAttr, UnregisteredOp
from xdsl.ir import Attribute, Operation, SSAValue

from cvmc.codegen.abi import row_major_strides
from cvmc.errors import CVMRuntimeError

# Views of a memref: the result keeps the base pointer, its type gives the static strides and offset.
VIEW_OPS = (memref.SubviewOp, memref.ReinterpretCastOp, memref.CastOp)


def op_name(op: Operation) -> str:
    """The op's name, also for ops parsed as unregistered (e.g. `math.isnan`, `arith.remf` in xDSL 0.74)."""
    if isinstance(op, UnregisteredOp):
        return op.op_name.data
    return op.name


def constant_int(value: SSAValue) -> int | None:
    """The value of an `arith.constant` integer, None for any other value."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def static_layout(t: Attribute, who: str = "") -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(shape, strides, offset) of a static memref type, strides and offset in elements; a CVMRuntimeError
    (its message starting with `who`) for anything else."""
    if not isinstance(t, MemRefType):
        raise CVMRuntimeError(f"{who}expected a memref, got {t}")
    shape = t.get_shape()
    if any(n == DYNAMIC_INDEX or n < 0 for n in shape):
        raise CVMRuntimeError(f"{who}expected a static memref shape, got {t}")
    layout = t.layout
    if isinstance(layout, NoneAttr):
        return shape, row_major_strides(shape), 0
    if isinstance(layout, StridedLayoutAttr):
        strides = layout.get_strides()
        offset = layout.get_offset()
        if offset is None or any(s is None for s in strides):
            raise CVMRuntimeError(f"{who}expected static strides and offset, got {t}")
        return shape, tuple(s for s in strides if s is not None), offset
    raise CVMRuntimeError(f"{who}expected an identity or strided memref layout, got {t}")
