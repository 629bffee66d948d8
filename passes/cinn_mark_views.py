"""`cinn-mark-views`: mark every cinn op that only moves elements as a view: no kernel, no copy.

Broadcast_to, identity, reshape, reverse, slice and transpose compute nothing: each element of the result is an
element of the input at an index the op's attributes give. Such an op whose result is not returned gets

    cinn.view

and `convert-cinn-to-loops` then emits no kernel for it: a kernel reading the result reads the op's input
through the index map instead (a chain of views composes). A returned value is stored, so it stays a kernel; so
does a transpose that a dot reads (the dot's inner loop runs along rows of its operands: through a transposed view
it would stride across memory, and copying the operand once costs less).

    %r = cinn.reshape %x {shape = array<i64: 0, 1, -1>} : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
    %y = cinn.exp %r : (tensor<4x1x8xf32>) -> tensor<4x1x8xf32>
    func.return %y : tensor<4x1x8xf32>

becomes

    %r = cinn.reshape %x {cinn.view, shape = array<i64: 0, 1, -1>} : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
    %y = cinn.exp %r : (tensor<4x1x8xf32>) -> tensor<4x1x8xf32>
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.passes import ModulePass

from cvmc.dialects import cinn
from cvmc.passes.convert_cinn_to_loops import VIEW, VIEW_OPS, cinn_functions


@dataclass(frozen=True)
class CinnMarkViewsPass(ModulePass):
    """Mark the element-moving cinn ops of every function whose result is not returned with `cinn.view`."""

    name = "cinn-mark-views"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ops, returned in cinn_functions(op):
            for o in ops:
                o.attributes.pop(VIEW, None)
                read_by_dot = any(isinstance(use.operation, cinn.DotOp) for use in o.results[0].uses)
                if isinstance(o, cinn.TransposeOp) and read_by_dot:
                    continue
                if isinstance(o, VIEW_OPS) and o.results[0] not in returned:
                    o.attributes[VIEW] = UnitAttr()
