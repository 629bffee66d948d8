"""`cvm-fuse`: outline every cvm operator that runs in a kernel, with its elementwise epilogue, into a
`cvm_sched.kernel`: one kernel call each.

A kernel holds an anchor operator (conv2d, dense, an elementwise op, a pooling, a concatenate, ...) and the chain
of elementwise operators fused into its epilogue: an elementwise op (requantization: cvm_right_shift, clip, relu,
...) joins the kernel that yields one of its inputs when that value has no other reader, is no head and has the
op's shape, so the intermediate values never reach memory (of several such kernels, the one whose anchor came
last, so that every other input is ready when it runs); a kernel holds at most `MAX_GROUP_OPS` (64) ops, as
LLVM's time grows faster than a kernel's length. A kernel sits where its last member was: the calls run in that
order. Views (`cvm-mark-views`), params and ops no head depends on stay outside.

    %c = cvm.conv2d %data, %w {channels = 4 : i64, kernel_size = array<i64: 3, 3>, padding = ...} : ...
    %s = cvm.cvm_right_shift %c {precision = 8 : i64, shift_bit = 5 : i64} : ...
    %r = cvm.relu %s : ...
    %p = cvm.max_pool2d %r {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : ...

becomes

    %r = cvm_sched.kernel(%data, %w) : (...) -> tensor<1x4x8x8xi32, #cvm.prec<8>> {
    ^bb0(%0: ..., %1: ...):
      %c = cvm.conv2d %0, %1 {...} : ...
      %s = cvm.cvm_right_shift %c {...} : ...
      %r_1 = cvm.relu %s : ...
      cvm_sched.yield %r_1 : ...
    }
    %p = cvm_sched.kernel(%r) : (...) -> ... { ... cvm.max_pool2d ... }

An analysis (`kernel_members`: liveness and the fusion rule, one walk in order), then one pattern
(`OutlineKernel`, one walk), then one sweep that points the readers at the kernels' results.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.utils.exceptions import PassFailedException

from cvmc.dialects.cvm import CvmOperator, ParamOp, tensor_shape
from cvmc.dialects.cvm_sched import KernelOp, PackOp, ViewOp, YieldOp
from cvmc.passes.loops import ops

# The most operators one fused group holds: LLVM's O3 time grows faster than linearly in a kernel's length (a
# 4,000-op chain as one kernel: 35 s), so a longer chain is cut into groups of this many (equal groups share one
# kernel). Also bounds the kernel arguments an epilogue adds.
MAX_GROUP_OPS = 64
# The most inputs one concatenate kernel reads: a wider concatenate is cut into calls of this many inputs, each
# writing its slice of the one output buffer (`Group.part`), and takes no epilogue. O3 on one kernel of 1,000 copy
# loops takes seconds, parts of equal shapes share one kernel, and kernels stay far from ctypes' 1,024 arguments.
MAX_CONCAT_INPUTS = 64


def takes_epilogue(anchor: Operation) -> bool:
    """Whether a kernel anchored at `anchor` may take an elementwise epilogue: an elementwise op, a computed op, a
    conv2d, a dense, or a concatenate of at most `MAX_CONCAT_INPUTS` inputs (not a copy of a view that strides
    cannot express, get_valid_counts, non_max_suppression)."""
    assert isinstance(anchor, CvmOperator)
    op = anchor.op_name
    if op == "concatenate":
        return len(anchor.operands) <= MAX_CONCAT_INPUTS
    return op in ops.ELEMENTWISE or op in ("conv2d", "dense") or op in ops.COMPUTE


def read_operands(op: Operation) -> tuple[SSAValue, ...]:
    """The operands whose values `op` reads: a slice_like's second operand gives only its shape."""
    return tuple(op.operands[:1]) if op.name == "cvm.slice_like" else tuple(op.operands)


def live_ops(main: func.FuncOp) -> set[Operation]:
    """The ops of `main`'s block some head depends on."""
    block = main.body.block
    last = block.last_op
    needed: set[SSAValue] = set(last.operands) if isinstance(last, func.ReturnOp) else set()
    live: set[Operation] = set()
    for op in reversed(list(block.ops)):
        if any(r in needed for r in op.results):
            live.add(op)
            needed.update(read_operands(op))
    return live


def kernel_members(main: func.FuncOp) -> list[list[CvmOperator]]:
    """The analysis: the members of each kernel, in the order of their anchors (one walk in order)."""
    block = main.body.block
    live = live_ops(main)
    last = block.last_op
    heads: set[SSAValue] = set(last.operands) if isinstance(last, func.ReturnOp) else set()
    readers: dict[SSAValue, int] = {}
    for op in live:
        for v in set(read_operands(op)):
            readers[v] = readers.get(v, 0) + 1
    groups: list[list[CvmOperator]] = []
    open_group: dict[SSAValue, int] = {}  # a kernel's current result -> the kernel
    for op in block.ops:
        if not isinstance(op, CvmOperator) or op not in live:
            continue
        target: int | None = None
        if op.op_name in ops.ELEMENTWISE:
            out_shape = tensor_shape(op.results[0].type)
            for i, v in enumerate(op.operands):
                g = open_group.get(v)
                if g is None or len(groups[g]) >= MAX_GROUP_OPS or readers.get(v) != 1 or v in heads \
                        or tensor_shape(v.type) != out_shape:
                    continue
                if op.op_name == "where" and i == 0 and len(tensor_shape(v.type) or ()) != len(out_shape or ()):
                    continue  # a broadcast condition
                target = g if target is None else max(target, g)
        if target is None:
            groups.append([op])
            if len(op.results) == 1 and takes_epilogue(op):
                open_group[op.results[0]] = len(groups) - 1
        else:
            running = groups[target][-1].results[0]
            groups[target].append(op)
            del open_group[running]
            open_group[op.results[0]] = target
    return groups


@dataclass
class OutlineKernel(RewritePattern):
    """The last member of a kernel: the kernel's members cloned into a `cvm_sched.kernel` just before it (its
    results replace the last member's once the walk is over: `replaced`)."""

    members: dict[Operation, list[CvmOperator]]  # a kernel's last member -> its members
    replaced: dict[SSAValue, SSAValue] = field(default_factory=dict[SSAValue, SSAValue])

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        members = self.members.get(op)
        if members is None:
            return
        produced = {r for m in members for r in m.results}
        inputs = list(dict.fromkeys(v for m in members for v in m.operands if v not in produced))
        block = Block(arg_types=[v.type for v in inputs])
        mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args))
        for m in members:
            block.add_op(m.clone(mapping))
        last = block.last_op
        assert last is not None
        # `create` (what the builders would pass it): a model of 20,000 ops has as many kernels
        block.add_op(YieldOp.create(operands=last.results))
        kernel = KernelOp.create(operands=inputs, result_types=[r.type for r in op.results], regions=[Region(block)])
        for r, k in zip(op.results, kernel.results):
            k.name_hint = r.name_hint
            self.replaced[r] = k
        rewriter.insert(kernel)


@dataclass(frozen=True)
class CvmFusePass(ModulePass):
    """Outline the kernels of `@main`: each anchor and its elementwise epilogue into a `cvm_sched.kernel`."""

    name = "cvm-fuse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        mains = [f for f in op.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main"]
        if len(mains) != 1:
            raise PassFailedException("expected one function @main of cvm ops")
        main = mains[0]
        for inner in main.body.block.ops:
            if isinstance(inner, KernelOp):
                raise PassFailedException("expected @main without cvm_sched.kernel: cvm-fuse has run on it")
            if not isinstance(inner, CvmOperator | ViewOp | PackOp | ParamOp | func.ReturnOp):
                raise PassFailedException(f"unexpected op {inner.name} in @main: expected cvm ops")
        groups = kernel_members(main)
        pattern = OutlineKernel({g[-1]: g for g in groups})
        PatternRewriteWalker(GreedyRewritePatternApplier([pattern], dce_enabled=False),
                             apply_recursively=False).rewrite_region(main.body)
        # the kernels' results replace their last members' (one assignment per reader: a wide concatenate or
        # return is rewritten once, not once per operand), then the members go, and the ops no head depends on
        # that read a value now inside a kernel (none is ever lowered)
        replaced = pattern.replaced
        block = main.body.block
        for inner in block.ops:
            if any(v in replaced for v in inner.operands):
                inner.operands = [replaced.get(v, v) for v in inner.operands]
        fused = {m for g in groups for m in g}
        inside = {r for g in groups for m in g[:-1] for r in m.results}
        doomed: list[Operation] = []
        for inner in block.ops:
            if inner not in fused and any(v in inside for v in inner.operands):
                inside.update(inner.results)
                doomed.append(inner)
        for inner in [*reversed(doomed), *reversed([m for m in block.ops if m in fused])]:
            block.erase_op(inner)
