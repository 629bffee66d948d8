"""`cvm-mark-views`: every cvm operator that is a view of its input's buffer becomes a `cvm_sched.view`.

A reshape, flatten, expand_dims, squeeze, transpose, positive-stride strided_slice, slice_like, or a sum/max that
reduces nothing, is a view when a strided layout over its input's buffer expresses it (a reshape of a transposed
tensor may not be: a kernel copies that one). It becomes

    %v = cvm_sched.view %base {layout = strided<[s0, ..., sk], offset: o>} : ...

where element (i0, ..., ik) of the result lives at `o + sum(i * s)` elements into `%base`, the nearest producer
that is no view (the input, a param, or a kernel's output: each holds its tensor contiguously): a view of a view
is composed into one layout over the base.

    %r = cvm.reshape %data {shape = array<i64: 2, 9>} : (tensor<1x2x3x3xi32, #cvm.prec<8>>) -> ...
    %t = cvm.transpose %r : (tensor<2x9xi32, #cvm.prec<8>>) -> tensor<9x2xi32, #cvm.prec<8>>

becomes

    %r = cvm_sched.view %data {layout = strided<[9, 1]>} : tensor<1x2x3x3xi32, #cvm.prec<8>> -> ...
    %t = cvm_sched.view %data {layout = strided<[1, 9]>} : tensor<1x2x3x3xi32, #cvm.prec<8>> -> ...

One pattern, one walk in order (a view's source is rewritten before the view).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from cvmc.dialects.cvm import CvmOperator, cvm_attrs, tensor_shape
from cvmc.dialects.cvm_sched import ViewOp
from cvmc.passes.loops.views import VIEW_OPERATORS, Layout, is_view_operator, operator_view

_CANDIDATES = frozenset({f"cvm.{op}" for op in (*VIEW_OPERATORS, "sum", "max")})


class ViewOperatorToView(RewritePattern):
    """A cvm view operator whose result strides express over its base: `cvm_sched.view` of the base."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if op.name not in _CANDIDATES or not isinstance(op, CvmOperator):
            return
        source = op.operands[0]
        in_shape, out_shape = tensor_shape(source.type), tensor_shape(op.results[0].type)
        if in_shape is None or out_shape is None:
            return  # not inferred yet
        attrs = cvm_attrs(op)
        if not is_view_operator(op.op_name, attrs, in_shape):
            return
        base = source
        src = Layout.contiguous(in_shape)
        if isinstance(source.owner, ViewOp):
            base = source.owner.source
            strides, offset = source.owner.strides_offset()
            src = Layout(in_shape, strides, offset)
        layout = operator_view(op.op_name, attrs, src, out_shape)
        if layout is None:
            return
        rewriter.replace(op, ViewOp(base, layout.strides, layout.offset, op.results[0].type))


@dataclass(frozen=True)
class CvmMarkViewsPass(ModulePass):
    """Rewrite the cvm operators that are views into `cvm_sched.view`s of their base tensor."""

    name = "cvm-mark-views"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier([ViewOperatorToView()], dce_enabled=False),
                             apply_recursively=False).rewrite_module(op)
