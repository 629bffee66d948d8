# pyright: basic
"""`cvm-fuse-packs`: where the register-blocked conv2d of a host target (`Target.blocked`) keeps its operands
packed between kernels, so that an int32 tensor that is only packed again need not be stored.

Two decisions on the scheduled level, one pattern each, in this order:

- `ReadPackedCopy`: an epilogue operand of a kernel (a residual add's shortcut) that has a lossless packed copy
  written before the kernel runs (`cvm_sched.pack {to = "nhwc"}` of a 4-D tensor to ui8 or i16 with no zero point:
  the values themselves, padded) reads a `cvm_sched.view` of that copy instead: the strided window of its
  interior, read back as the values it holds;
- `PackInEpilogue`: a `cvm_sched.pack {to = "nhwc"}` whose source is the one result of a conv2d kernel on the
  blocked micro-kernel (its weight packed `conv_weight_blocked`), and that pack is its source's one reader, moves
  into that kernel: the kernel's epilogue writes the padded NHWC copy (its accumulators are kept pixel by pixel,
  so a pixel's channels are contiguous, as NHWC has them) and yields it; the int32 result is never stored.

    %y = cvm_sched.kernel(%x, %w) : (...) -> tensor<1x8x8x8xi32, #cvm.prec<8>> { ... conv2d, shift, relu ... }
    %p = cvm_sched.pack %y {to = "nhwc", padding = array<i64: 1, 1>} : ... -> tensor<1x10x10x8xui8>

becomes

    %p = cvm_sched.kernel(%x, %w) : (...) -> tensor<1x10x10x8xui8> {
      ... conv2d, shift, relu ...
      %q = cvm_sched.pack %r {to = "nhwc", padding = array<i64: 1, 1>} : ... -> tensor<1x10x10x8xui8>
      cvm_sched.yield %q : tensor<1x10x10x8xui8>
    }

A GPU target packs in kernels of its own: the pass leaves its modules as they are. Each pattern is applied in one
walk of `@main`'s top level (a greedy walker's fixpoint over every nested op cost ten times as much, for nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, ModuleOp, StridedLayoutAttr, TensorType
from xdsl.ir import Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import PassFailedException

from cvmc.dialects.cvm import CvmOperator
from cvmc.dialects.cvm_sched import KernelOp, PackOp, ViewOp, YieldOp, ui8
from cvmc.passes.cvm_fuse import live_ops
from cvmc.passes.loops.target import module_target


def _shape(v: SSAValue) -> tuple[int, ...]:
    assert isinstance(v.type, TensorType)
    return tuple(v.type.get_shape())


def lossless_copy(p: PackOp) -> bool:
    """A packed copy holding its source's values themselves: NHWC of a 4-D tensor, ui8 or i16, no zero point."""
    t = p.result.type
    assert isinstance(t, TensorType) and isinstance(t.element_type, IntegerType)
    narrow = t.element_type == ui8 or t.element_type.bitwidth == 16
    return p.to.data == "nhwc" and p.zero_point is None and narrow and len(_shape(p.source)) == 4


def _contiguous(v: SSAValue) -> bool:
    """A value held in row-major order from the start of its buffer: no view, or a view of an identity layout."""
    if not isinstance(v.owner, ViewOp):
        return True
    strides, offset = v.owner.strides_offset()
    shape = _shape(v)
    expect = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        expect[i] = expect[i + 1] * shape[i + 1]
    return offset == 0 and list(strides) == expect


@dataclass
class ReadPackedCopy(RewritePattern):
    """An epilogue operand with an earlier lossless packed copy reads a view of the copy (see the module)."""

    position: dict[Operation, int]  # the live ops of @main in order, before the rewrite
    views: dict[PackOp, ViewOp] = field(default_factory=dict)  # one view of each copy, shared by its readers

    def copy_of(self, v: SSAValue, before: int) -> PackOp | None:
        """The first lossless packed copy of `v` (in the order @main runs), if it is written before `before`."""
        packs = [u.operation for u in v.uses if isinstance(u.operation, PackOp) and u.operation in self.position]
        packs = sorted((p for p in packs if lossless_copy(p)), key=self.position.__getitem__)
        if packs and self.position[packs[0]] < before and _contiguous(v):
            return packs[0]
        return None

    def view(self, p: PackOp, rewriter: PatternRewriter) -> ViewOp:
        """The interior of the copy `p` as the values of its source: (n, c, h, w) over (n, h + 2 ph, w + 2 pw, c)."""
        if p not in self.views:
            n, hp, wp, c = _shape(p.result)
            _, _, h, w = _shape(p.source)
            assert p.padding is not None
            ph, pw = p.padding.get_values()
            layout = StridedLayoutAttr([hp * wp * c, 1, wp * c, c], (ph * wp + pw) * c)
            view = ViewOp.create(operands=[p.result], result_types=[p.source.type], properties={"layout": layout})
            rewriter.insert(view, InsertPoint.after(p))
            self.views[p] = view
        return self.views[p]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: KernelOp, rewriter: PatternRewriter) -> None:
        if op not in self.position:
            return
        block = op.body.block
        members = [m for m in block.ops if isinstance(m, CvmOperator)]
        if len(members) < 2:
            return
        outside: dict[SSAValue, SSAValue] = dict(zip(block.args, op.inputs))
        running = members[0].results[0]
        for m in members[1:]:
            for k, v in enumerate(m.operands):
                if v is running or v not in outside:
                    continue
                copy = self.copy_of(outside[v], self.position[op])
                if copy is not None:
                    arg = block.insert_arg(v.type, len(block.args))
                    op.operands = [*op.operands, self.view(copy, rewriter).result]
                    m.operands = [arg if j == k else u for j, u in enumerate(m.operands)]
            running = m.results[0]
        for i in reversed(range(len(block.args))):  # inputs no op reads any more
            if not block.args[i].uses:
                block.erase_arg(block.args[i])
                op.operands = [u for j, u in enumerate(op.operands) if j != i]


@dataclass
class PackInEpilogue(RewritePattern):
    """A pack that is its source's one reader moves into the blocked conv2d kernel yielding it (see the module)."""

    live: set[Operation]
    heads: set[SSAValue]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: PackOp, rewriter: PatternRewriter) -> None:
        kernel = op.source.owner
        if op.to.data != "nhwc" or not isinstance(kernel, KernelOp) or len(kernel.outputs) != 1:
            return
        src = op.source
        if src in self.heads or [u.operation for u in src.uses if u.operation in self.live] != [op]:
            return
        block = kernel.body.block
        anchor = block.first_op
        if not isinstance(anchor, CvmOperator) or anchor.op_name != "conv2d":
            return
        weight = kernel.inputs[block.args.index(anchor.operands[1])] if anchor.operands[1] in block.args else None
        if weight is None or not isinstance(weight.owner, PackOp) or weight.owner.to.data != "conv_weight_blocked":
            return
        last = block.last_op
        assert isinstance(last, YieldOp)
        packed = PackOp.create(operands=[last.values[0]], result_types=[op.result.type],
                               properties=dict(op.properties))
        block.insert_op_before(packed, last)
        last.operands = [packed.result]
        body = kernel.body.detach_block(block)
        fused = KernelOp.create(operands=list(kernel.inputs), result_types=[op.result.type], regions=[Region(body)])
        fused.results[0].name_hint = op.result.name_hint
        rewriter.insert(fused, InsertPoint.before(kernel))
        op.result.replace_all_uses_with(fused.results[0])
        rewriter.erase(op)
        rewriter.erase(kernel)


@dataclass(frozen=True)
class CvmFusePacksPass(ModulePass):
    """Keep the blocked conv2d's operands packed between kernels: reads of packed copies, packs in epilogues."""

    name = "cvm-fuse-packs"

    target: str | None = None  # `loops.target.Target` printed; None: the module's `cvmc.target`, else DEFAULT

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not module_target(op, self.target).blocked:
            return
        mains = [f for f in op.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main"]
        if len(mains) != 1:
            raise PassFailedException("expected one function @main of cvm ops")
        main = mains[0]
        live = live_ops(main)
        position = {o: i for i, o in enumerate(main.body.block.ops) if o in live}
        last = main.body.block.last_op
        heads: set[SSAValue] = set(last.operands) if isinstance(last, func.ReturnOp) else set()
        # each pattern once over the ops of @main, in order (their rewrites make nothing the other matches again):
        # one walk of the top level, as the kernels' bodies hold no op either pattern matches
        patterns: tuple[tuple[RewritePattern, type[Operation]], ...] = (
            (ReadPackedCopy(position), KernelOp), (PackInEpilogue(live, heads), PackOp))
        for pattern, kind in patterns:
            for inner in [o for o in main.body.block.ops if isinstance(o, kind)]:
                if inner.parent is not None:
                    pattern.match_and_rewrite(inner, PatternRewriter(inner))
