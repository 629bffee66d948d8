"""`cvm_sched.footprint`: the bytes of every operator output of the scheduled `@main`, with no reuse; a view that
reads a packed copy back (`cvm-fuse-packs`) is no output of its own."""

from __future__ import annotations

import numpy as np
from xdsl.context import Context

from cvmc import CvmBuilder
from cvmc.dialects.cvm_sched import FootprintOp, ViewOp
from cvmc.passes.cvm_bufferize import CvmBufferizePass
from cvmc.passes.cvm_fuse import CvmFusePass
from cvmc.passes.cvm_fuse_packs import CvmFusePacksPass
from cvmc.passes.cvm_mark_views import CvmMarkViewsPass
from cvmc.passes.cvm_pack_operands import CvmPackOperandsPass
from cvmc.runtime.frontend.cvm_ir import graph_to_module

TENSOR_BYTES = 1 * 4 * 4 * 4 * 4  # each operator's output: 1x4x4x4 int32


def _residual():
    """Three 3x3 conv2d layers and a residual add of the second one's output (as in cvm-fuse-packs.mlir): ten
    operators, every output 1x4x4x4."""
    rng = np.random.default_rng(7)
    b = CvmBuilder()
    x = b.create_input([1, 4, 4, 4], 8)

    def conv(v):
        w = b.create_param(rng.integers(-20, 20, (4, 4, 3, 3)), 8)
        return b.conv2d(v, w, channels=4, kernel_size=(3, 3), padding=(1, 1), use_bias=False)

    r = b.relu(b.cvm_right_shift(conv(x), precision=8, shift_bit=6))
    s = b.cvm_right_shift(conv(r), precision=8, shift_bit=6)
    y = b.relu(b.cvm_right_shift(conv(s), precision=8, shift_bit=6))
    return b.graph([b.cvm_clip(b.elemwise_add(y, s), precision=8)])


def _footprint(target: str) -> tuple[int, bool]:
    """The footprint of the residual net bufferized for `target`, and whether a view read a packed copy."""
    module = graph_to_module(_residual())
    for p in (CvmMarkViewsPass(), CvmPackOperandsPass(target=target), CvmFusePass(),
              CvmFusePacksPass(target=target)):
        p.apply(Context(), module)
    read_copy = any(isinstance(op, ViewOp) for op in module.walk())
    CvmBufferizePass().apply(Context(), module)
    (footprint,) = [op for op in module.walk() if isinstance(op, FootprintOp)]
    return footprint.intermediate_bytes.value.data, read_copy


def test_a_read_of_a_packed_copy_adds_no_output_bytes():
    blocked, read_copy = _footprint("x86:avx2")
    assert read_copy  # the add reads conv2's packed copy through a view
    unblocked, read_copy = _footprint("x86:avx2,no-mmk")
    assert not read_copy
    assert blocked == unblocked == 10 * TENSOR_BYTES
