"""`cinn-mark-views`: mark every cinn op that only moves elements as a view: no kernel, no copy.

Broadcast_to, identity, reshape, reverse, slice and transpose compute nothing: each element of the result is an
element of the input at an index the op's attributes give. Such an op whose result is not returned gets

    cinn.view

and `convert-cinn-to-loops` then emits no kernel for it: a kernel reading the result reads the op's input
through the index map instead (a chain of views composes). A returned value is stored, so it stays a kernel; so
does a transpose that an integer dot reads (the dot's inner loop runs along rows of its operands: through a
transposed view it would stride across memory, and copying the operand once costs less). A float 2-D dot reads a
transpose as a view: its micro-kernel (`cvmc.passes.loops.cinn_dot`) copies rhs by panels into a stack slot
anyway and broadcasts single elements of lhs, so the copy kernel would only add a pass over memory.

A cheap element-wise op (add, sub, mul, max, min, negative) of several readers, each of them element-wise or a
reduce (which read each element once), whose operands are function arguments, views, constants or smaller
tensors (a statistic broadcast along a row, which stays in cache) is marked

    cinn.recompute

and computed again inside each reader (one operation an element) instead of being stored and loaded: layer
norm's x - mean, read by the variance's reduce and by the output, costs no pass over memory. The values are
the same bits.

    %r = cinn.reshape %x {shape = array<i64: 0, 1, -1>} : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
    %y = cinn.exp %r : (tensor<4x1x8xf32>) -> tensor<4x1x8xf32>
    func.return %y : tensor<4x1x8xf32>

becomes

    %r = cinn.reshape %x {cinn.view, shape = array<i64: 0, 1, -1>} : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
    %y = cinn.exp %r : (tensor<4x1x8xf32>) -> tensor<4x1x8xf32>
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from cvmc.dialects import cinn
from cvmc.passes.convert_cinn_to_loops import RECOMPUTE, VIEW, VIEW_OPS, cinn_functions, is_elementwise
from cvmc.passes.loops import cinn_dot

CHEAP = (cinn.AddOp, cinn.SubOp, cinn.MulOp, cinn.MaxOp, cinn.MinOp, cinn.NegativeOp)


def _recomputes(op: Operation, returned: set[SSAValue]) -> bool:
    """Whether `op` is recomputed in its readers (the module docstring's rule)."""
    if not isinstance(op, CHEAP) or op.results[0] in returned:
        return False
    readers = {use.operation for use in op.results[0].uses}
    if len(readers) < 2 or not all(is_elementwise(r) or isinstance(r, cinn.ReduceOp) for r in readers):
        return False
    size = math.prod(cinn.shape_of(op.results[0]))
    return all(not isinstance(owner := v.owner, Operation) or VIEW in owner.attributes
               or isinstance(owner, cinn.ConstScalarOp) or math.prod(cinn.shape_of(v)) < size for v in op.operands)


def _copied_for(reader: Operation) -> bool:
    """Whether `reader` wants a transpose it reads stored: a dot other than a float 2-D one (see the module doc)."""
    return isinstance(reader, cinn.DotOp) and not cinn_dot.blocks(reader)


@dataclass(frozen=True)
class CinnMarkViewsPass(ModulePass):
    """Mark the element-moving cinn ops of every function whose result is not returned with `cinn.view`."""

    name = "cinn-mark-views"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ops, returned in cinn_functions(op):
            for o in ops:
                o.attributes.pop(VIEW, None)
                o.attributes.pop(RECOMPUTE, None)
                if _recomputes(o, returned):
                    o.attributes[RECOMPUTE] = UnitAttr()
                    continue
                if isinstance(o, cinn.TransposeOp) and any(_copied_for(use.operation) for use in o.results[0].uses):
                    continue
                if isinstance(o, VIEW_OPS) and o.results[0] not in returned:
                    o.attributes[VIEW] = UnitAttr()
