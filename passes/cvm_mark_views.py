"""`cvm-mark-views`: mark every cvm op that lowers to a view of its input's buffer: no kernel, no copy.

A reshape, flatten, expand_dims, squeeze, transpose, positive-stride strided_slice, slice_like, or a sum/max that
reduces nothing, is a view when a strided layout over its input's buffer expresses it (a reshape of a transposed
tensor may not be: a kernel copies that one). Such an op gets

    cvm.view = strided<[s0, ..., sk], offset: o>

saying where element (i0, ..., ik) of its result lives: at `o + sum(i * s)` elements into the base buffer, the
buffer of the nearest producer that is no view (the input, a param, or a kernel's output: each holds its tensor
contiguously). Ops no head depends on are left unmarked.

    %r = cvm.reshape %data {shape = array<i64: 2, 9>} : (tensor<1x2x3x3xi32, #cvm.prec<8>>) -> ...
    %t = cvm.transpose %r : (tensor<2x9xi32, #cvm.prec<8>>) -> tensor<9x2xi32, #cvm.prec<8>>

becomes

    %r = cvm.reshape %data {shape = array<i64: 2, 9>, cvm.view = strided<[9, 1]>} : ...
    %t = cvm.transpose %r {cvm.view = strided<[1, 9]>} : ...

Views are no choice: the later passes (`cvm-fuse`, `cvm-plan-buffers`, `convert-cvm-to-loops`) compute them too,
and fail on a recorded layout that is not the op's.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StridedLayoutAttr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from cvmc.dialects.cvm import tensor_shape
from cvmc.passes.loops.ir import CvmFunction
from cvmc.passes.loops.plan import view_layouts
from cvmc.passes.loops.views import Layout

VIEW = "cvm.view"


def read_views(fn: CvmFunction) -> dict[int, Layout]:
    """The recorded `cvm.view` layouts, by node index."""
    views: dict[int, Layout] = {}
    for i, op in enumerate(fn.ops):
        attr = op.attributes.get(VIEW)
        if attr is None:
            continue
        shape = tensor_shape(op.results[0].type) if len(op.results) == 1 else None
        if isinstance(attr, StridedLayoutAttr) and shape is not None:
            strides, offset = attr.get_strides(), attr.get_offset()
            ints = tuple(s for s in strides if s is not None)
            if len(ints) == len(strides) == len(shape) and offset is not None:
                views[i] = Layout(shape, ints, offset)
                continue
        raise PassFailedException(f"{fn.label(i)}: expected '{VIEW}' to be a static strided<[...], offset: o> of "
                                  f"the result's rank, got {attr}")
    return views


@dataclass(frozen=True)
class CvmMarkViewsPass(ModulePass):
    """Mark the cvm ops of `@main` that are views with `cvm.view`, their layout over the base buffer."""

    name = "cvm-mark-views"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fn = CvmFunction.of_module(op)
        views = fn.run(view_layouts, fn.net, read_views(fn))
        fn.clear(VIEW)
        for i, layout in views.items():
            fn.ops[i].attributes[VIEW] = StridedLayoutAttr(layout.strides, layout.offset)
