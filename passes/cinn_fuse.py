"""`cinn-fuse`: group cinn ops into kernels, so that fused intermediate values never reach memory.

A producer P whose result is not returned joins the group of its readers when they all belong to one group and
each reader C reads each element of P once, so that computing P inside the group costs nothing twice (a value read
several times in one kernel is computed once per loop body and shared by its readers, see `convert-cinn-to-loops`):
- P element-wise and C element-wise of P's shape (a chain: one loop computes them all);
- P element-wise and C a reduce or a bn op (the reduction's prologue: computed where the reduction loads it);
- P a reduce and C element-wise of P's shape (the epilogue: applied to each result before its store).
Dot, conv, concat and the bn ops are never fused into a reader (dot and NCHW conv keep their row-wise kernels,
which accumulate in the output buffer). Views
and recomputed ops (`cinn-mark-views`) need no group: every kernel reads through them. Every op that is no view gets

    cinn.group = N : i64

with groups numbered 0, 1, ... in execution order (a group runs where its last member is, and that member is
the one stored). `convert-cinn-to-loops` follows the numbers and checks them (a member other than the last must
have one result, read only by ops of its group, and must not be a dot, concat or bn op).

    %m = cinn.max %x, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %e = cinn.exp %m : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %s = cinn.reduce sum %e {dim = array<i64: 1>, keep_dim = false} : (tensor<4x8xf32>) -> tensor<4xf32>

becomes (with %zero in group 0)

    %m = cinn.max %x, %zero {cinn.group = 1 : i64} : ...
    %e = cinn.exp %m {cinn.group = 1 : i64} : ...
    %s = cinn.reduce sum %e {cinn.group = 1 : i64, dim = array<i64: 1>, keep_dim = false} : ...
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from cvmc.dialects import cinn
from cvmc.passes.convert_cinn_to_loops import GROUP, RECOMPUTE, VIEW, cinn_functions, is_elementwise


def fuses_into(producer: Operation, consumer: Operation) -> bool:
    """Whether `consumer` computes `producer` inside its own loop (the rules of the module docstring; that all
    readers share one group is checked by the caller)."""
    if any(mark in o.attributes for mark in (VIEW, RECOMPUTE) for o in (producer, consumer)):
        return False
    if len(producer.results) != 1:
        return False
    if is_elementwise(producer):
        if is_elementwise(consumer):
            return cinn.shape_of(producer.results[0]) == cinn.shape_of(consumer.results[0])
        return isinstance(consumer, cinn.ReduceOp | cinn.BnMeanVarianceOp | cinn.BnGradBiasScaleOp)
    if isinstance(producer, cinn.ReduceOp):
        return is_elementwise(consumer) and cinn.shape_of(producer.results[0]) == cinn.shape_of(consumer.results[0])
    return False


@dataclass(frozen=True)
class CinnFusePass(ModulePass):
    """Number the kernel groups of every function of cinn ops: `cinn.group` on each member."""

    name = "cinn-fuse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ops, returned in cinn_functions(op):
            root: dict[Operation, Operation] = {}  # op -> the op of its group that is stored
            for o in reversed(ops):
                o.attributes.pop(GROUP, None)
                if VIEW in o.attributes or RECOMPUTE in o.attributes:
                    continue
                root.setdefault(o, o)
                result = o.results[0] if len(o.results) == 1 else None
                readers: set[Operation] = {use.operation for use in result.uses} if result is not None else set()
                if result is None or result in returned or not readers or not all(r in root for r in readers):
                    continue
                stored = {root[r] for r in readers}
                if len(stored) == 1 and all(fuses_into(o, r) for r in readers):
                    root[o] = stored.pop()
            numbers: dict[Operation, int] = {}
            for o in ops:
                if o in root and root[o] is o:
                    numbers[o] = len(numbers)
            for o in ops:
                if o in root:
                    o.attributes[GROUP] = IntegerAttr(numbers[root[o]], 64)
