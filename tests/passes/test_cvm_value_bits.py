"""`cvm_value_bits.ValueBits`: the bound and sign of every value, by SSA value, the same whether the operators stand
in `@main` or in the `cvm_sched.kernel`s of cvm-fuse (cvm-pack-operands may run after cvm-fuse, by hand): a
kernel's block arguments take the bounds of its inputs, its results those of what it yields, and its body's ops
are bounded as anywhere else. Understated precisions (`where`) and non-negative values (`relu`, then a rounding
shift) cross kernel boundaries both ways."""

import numpy as np
from scheduled import main_of
from xdsl.context import Context

from cvmc import CvmBuilder
from cvmc.dialects.cvm import CvmOperator
from cvmc.dialects.cvm_sched import KernelOp
from cvmc.passes.cvm_fuse import CvmFusePass
from cvmc.passes.cvm_value_bits import ValueBits
from cvmc.runtime.frontend.cvm_ir import graph_to_module


def _graph():
    """w = where(...) declares 2 bits and holds 9; a = relu(w) (>= 0); s = shift(a) (>= 0), t = a + w, u = |w|: w
    and a have two readers each, so each anchors a kernel that the next ones read."""
    b = CvmBuilder()
    x = b.create_input([2, 8], 8)
    wide = b.cvm_left_shift(x, precision=9, shift_bit=1)
    w = b.where(b.create_param(np.ones((2, 8), np.int32), 2), wide, x)
    a = b.relu(w)
    s = b.cvm_right_shift(a, precision=8, shift_bit=1)
    t = b.cvm_clip(b.elemwise_add(a, w), precision=8)
    u = b.abs(w)
    return b.graph([s, t, u])


def _by_name(main) -> dict[str, list[tuple[int, bool]]]:
    """The bound and sign of each cvm operator's results, by the operator's name (kernel bodies included)."""
    bits = ValueBits.of(main)
    return {op.properties["name"].data: [(bits.bits(r), bits.nonnegative(r)) for r in op.results]
            for op in main.walk() if isinstance(op, CvmOperator)}


def test_bounds_and_signs_cross_kernel_boundaries():
    plain = graph_to_module(_graph())
    fused = graph_to_module(_graph())
    CvmFusePass().apply(Context(), fused)
    kernels = [k for k in main_of(fused).body.block.ops if isinstance(k, KernelOp)]
    assert len(kernels) >= 4  # where, relu, and the kernels reading them
    want = _by_name(main_of(plain))
    assert {n: v for n, v in want.items() if n.startswith(("where", "relu", "cvm_right_shift"))} == {
        "where_3": [(9, False)], "relu_4": [(9, True)], "cvm_right_shift_5": [(8, True)]}
    assert _by_name(main_of(fused)) == want
    bits = ValueBits.of(main_of(fused))
    for k in kernels:  # a kernel's arguments and results: its inputs' and its yielded values' bounds
        for arg, v in zip(k.body.block.args, k.inputs):
            assert (bits.bits(arg), bits.nonnegative(arg)) == (bits.bits(v), bits.nonnegative(v))
        yielded = k.body.block.last_op
        assert yielded is not None
        for r, v in zip(k.outputs, yielded.operands):
            assert (bits.bits(r), bits.nonnegative(r)) == (bits.bits(v), bits.nonnegative(v))
