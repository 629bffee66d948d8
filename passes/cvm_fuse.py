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

One pattern, one walk in order; liveness (which ops some head depends on) is computed once, before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
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
from cvmc.passes.loops.plan import MAX_CONCAT_INPUTS, MAX_GROUP_OPS


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


@dataclass
class FuseIntoKernels(RewritePattern):
    """A live cvm operator of `@main` joins the kernel whose yielded value it may take, or starts a kernel."""

    live: set[Operation]
    order: dict[KernelOp, int] = field(default_factory=dict[KernelOp, int])  # a kernel -> when its anchor came

    def _readers(self, v: SSAValue) -> int:
        return len({u.operation for u in v.uses if (u.operation in self.live or isinstance(u.operation, KernelOp))
                    and not (u.operation.name == "cvm.slice_like" and u.index == 1)})

    def _target(self, op: CvmOperator) -> KernelOp | None:
        """The kernel `op` joins: the latest one yielding an input of `op` that it may take, if any."""
        out_shape = tensor_shape(op.results[0].type)
        best: KernelOp | None = None
        for i, v in enumerate(op.operands):
            kernel = v.owner
            if not isinstance(kernel, KernelOp) or len(kernel.outputs) != 1 or kernel not in self.order:
                continue
            body = list(kernel.body.block.ops)
            if not takes_epilogue(body[0]) or len(body) - 1 >= MAX_GROUP_OPS or self._readers(v) != 1 \
                    or any(isinstance(u.operation, func.ReturnOp) for u in v.uses) or tensor_shape(v.type) != out_shape:
                continue
            if op.op_name == "where" and i == 0 and len(tensor_shape(v.type) or ()) != len(out_shape or ()):
                continue  # a broadcast condition
            if best is None or self.order[kernel] > self.order[best]:
                best = kernel
        return best

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, CvmOperator) or op not in self.live:
            return
        target = self._target(op) if op.op_name in ops.ELEMENTWISE else None
        inputs = list(dict.fromkeys(op.operands))
        if target is None:
            block = Block(arg_types=[v.type for v in inputs])
            mapping = dict(zip(inputs, block.args))
            inner = op.clone(mapping)
            block.add_ops([inner, YieldOp(*inner.results)])
            kernel = KernelOp(inputs, [r.type for r in op.results], block)
            self.order[kernel] = len(self.order)
        else:
            running = target.outputs[0]
            block = target.body.block
            yield_op = block.last_op
            assert isinstance(yield_op, YieldOp)
            mapping: dict[SSAValue, SSAValue] = dict(zip(target.inputs, block.args))
            mapping[running] = yield_op.values[0]
            kernel_inputs = list(target.inputs)
            for v in inputs:
                if v not in mapping:
                    mapping[v] = block.insert_arg(v.type, len(block.args))
                    kernel_inputs.append(v)
            inner = op.clone(mapping)
            block.insert_op_before(inner, yield_op)
            yield_op.operands = inner.results
            kernel = KernelOp.create(operands=kernel_inputs, result_types=[r.type for r in op.results],
                                     regions=[target.detach_region(0)])
            self.order[kernel] = self.order.pop(target)
        for r, k in zip(op.results, kernel.results):
            k.name_hint = r.name_hint
        rewriter.replace(op, kernel)
        if target is not None:
            self._erase_dead_readers(target.outputs[0], rewriter)  # they would read a value now in the kernel
            rewriter.erase(target)

    def _erase_dead_readers(self, v: SSAValue, rewriter: PatternRewriter) -> None:
        """Erase the ops no head depends on that read `v`, and theirs (none is ever lowered)."""
        for use in list(v.uses):
            reader = use.operation
            if reader.parent is None:
                continue  # erased already (it read `v` twice)
            for r in reader.results:
                self._erase_dead_readers(r, rewriter)
            rewriter.erase(reader)


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
        pattern = FuseIntoKernels(live_ops(main))
        PatternRewriteWalker(GreedyRewritePatternApplier([pattern], dce_enabled=False),
                             apply_recursively=False).rewrite_region(main.body)
