"""`cvm-fuse`: assign every cvm op that runs in a kernel to a group, one kernel call per group.

A group is an anchor op (conv2d, dense, an elementwise op, a pooling, a concatenate, ...) plus the chain of
elementwise ops fused into its epilogue: an elementwise op (requantization: cvm_right_shift, clip, relu, ...)
joins the group that makes one of its inputs when that input is the group's current output, has no other
consumer, is no head and has the op's shape, so the intermediate values never reach memory; a group holds at most
`MAX_GROUP_OPS` (64) ops, as LLVM's time grows faster than a kernel's length. Every member gets

    cvm.group = N : i64

with groups numbered 0, 1, ... in execution order (a group runs where its last member is). Views
(`cvm-mark-views`) and ops no head depends on get no group; conv2d and dense also get pack kernels for their
operands, which are no cvm ops and so have no number.

    %c = cvm.conv2d %data, %w {channels = 4 : i64, kernel_size = array<i64: 3, 3>, padding = ...} : ...
    %s = cvm.cvm_right_shift %c {precision = 8 : i64, shift_bit = 5 : i64} : ...
    %r = cvm.relu %s : ...
    %p = cvm.max_pool2d %r {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : ...

becomes

    %c = cvm.conv2d %data, %w {cvm.group = 0 : i64, channels = 4 : i64, kernel_size = ...} : ...
    %s = cvm.cvm_right_shift %c {cvm.group = 0 : i64, precision = 8 : i64, shift_bit = 5 : i64} : ...
    %r = cvm.relu %s {cvm.group = 0 : i64} : ...
    %p = cvm.max_pool2d %r {cvm.group = 1 : i64, pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : ...

The numbers are a choice the later passes follow: ops with one number form one group (checked: each later
member must be elementwise and read the group's current output under the rule above); an op without a number
is grouped as this pass would. The order is always that of each group's last member.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from cvmc.passes.loops.ir import CvmFunction
from cvmc.passes.loops.plan import Hints
from cvmc.passes.loops.target import module_target

GROUP = "cvm.group"


def read_groups(fn: CvmFunction) -> dict[int, int]:
    """The recorded `cvm.group` numbers, by node index."""
    groups: dict[int, int] = {}
    for i, op in enumerate(fn.ops):
        attr = op.attributes.get(GROUP)
        if attr is None:
            continue
        if not isinstance(attr, IntegerAttr):
            raise PassFailedException(f"{fn.label(i)}: expected '{GROUP}' to be an integer, got {attr}")
        groups[i] = attr.value.data
    return groups


@dataclass(frozen=True)
class CvmFusePass(ModulePass):
    """Number the kernel groups of `@main` in execution order: `cvm.group` on each member."""

    name = "cvm-fuse"

    target: str | None = None  # `loops.target.Target` printed; None: the module's `cvmc.target`, else DEFAULT

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fn = CvmFunction.of_module(op)
        p = fn.plan(Hints(groups=read_groups(fn)), place=False,
                    target=module_target(op, self.target))
        fn.clear(GROUP)
        for number, group in enumerate(g for g in p.groups if g.members):
            for i in group.members:
                fn.ops[i].attributes[GROUP] = IntegerAttr(number, 64)
