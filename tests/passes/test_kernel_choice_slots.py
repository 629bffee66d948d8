"""The analyses that pick a conv2d's kernel tier (`nonnegative`: data >= 0 takes the u8 kernels without a zero
point; `value_bits`: int8 vs int16 vs int32 operands) tested with every operator of the set in the slot between
the producer and the kernel: for a producer of int8 data, >= 0 (a relu's) or signed, each operator below is placed
between it and a conv2d (narrowed back to a declared precision of 8 by a value-keeping `where` when it widens),
and the model runs bit-exact with the reference on every tier: generic, avx2 and avx512-vnni where the host has
them, avx512-vnni and amx emulated on every host. (Random graphs seldom build such a chain.)"""

import hosts
import numpy as np
import pytest

from cvmc import CvmBuilder
from cvmc.passes.loops.target import Target
from cvmc.runtime.devices.cpu import compile_graph
from cvmc.runtime.references.cvm import run_graph

SHAPE = (1, 8, 6, 8)  # 8 channels x 8 columns: the tiled pack applies where the data allows
RNG = np.random.default_rng(53)


def _param(b, shape, bits=8, nonzero=False):
    bound = (1 << (bits - 1)) - 1
    a = RNG.integers(-bound, bound + 1, size=shape).astype(np.int32)
    if nonzero:
        a[a == 0] = 1
    return b.create_param(a, bits)


SLOT = {  # name -> (builder, tensor) -> tensor: one operator of the set in the slot
    "relu": lambda b, t: b.relu(t),
    "abs": lambda b, t: b.abs(t),
    "negative": lambda b, t: b.negative(t),
    "cvm_precision": lambda b, t: b.cvm_precision(t),
    "clip": lambda b, t: b.clip(t, a_min=-5, a_max=100),
    "clip_positive": lambda b, t: b.clip(t, a_min=3, a_max=90),
    "cvm_clip": lambda b, t: b.cvm_clip(t, precision=6),
    "cvm_right_shift": lambda b, t: b.cvm_right_shift(t, precision=8, shift_bit=1),
    "cvm_left_shift": lambda b, t: b.cvm_left_shift(t, precision=9, shift_bit=1),
    "elemwise_add": lambda b, t: b.elemwise_add(t, _param(b, SHAPE)),
    "elemwise_sub": lambda b, t: b.elemwise_sub(t, _param(b, SHAPE)),
    "broadcast_add": lambda b, t: b.broadcast_add(t, _param(b, (1, 8, 1, 1))),
    "broadcast_sub": lambda b, t: b.broadcast_sub(_param(b, (1, 8, 1, 1)), t),
    "broadcast_mul": lambda b, t: b.broadcast_mul(t, _param(b, (1, 1, 1, 8), bits=2)),
    "broadcast_max": lambda b, t: b.broadcast_max(t, _param(b, (1, 8, 1, 1))),
    "broadcast_div": lambda b, t: b.broadcast_div(t, _param(b, (1, 8, 1, 1), bits=3, nonzero=True)),
    "broadcast_greater": lambda b, t: b.broadcast_greater(t, _param(b, (1, 8, 1, 1))),
    "max_pool2d": lambda b, t: b.max_pool2d(t, pool_size=(2, 2), strides=(1, 1), padding=(1, 1)),
    "upsampling": lambda b, t: b.upsampling(t, scale=2),
    "transpose": lambda b, t: b.transpose(t, axes=(0, 1, 3, 2)),
    "reshape": lambda b, t: b.reshape(t, shape=(1, 8, 8, 6)),
    "strided_slice": lambda b, t: b.strided_slice(t, begin=(0, 0, 1, 1), end=(1, 8, 6, 8)),
    "concatenate": lambda b, t: b.concatenate(t, b.negative(t), axis=1),
    "repeat": lambda b, t: b.repeat(t, repeats=2, axis=3),
    "tile": lambda b, t: b.tile(t, reps=(1, 1, 1, 2)),
    "where": lambda b, t: b.where(_param(b, SHAPE, bits=2), t, _param(b, SHAPE)),
    "take": lambda b, t: b.take(t, b.create_param(np.array([7, 0, 3, 3, 5, 1, 2, 6]), 4), axis=1),
    "sum": lambda b, t: b.sum(t, axis=(1,), keepdims=True),
    "max": lambda b, t: b.max(t, axis=(1,), keepdims=True),
    "slice_like": lambda b, t: b.slice_like(t, _param(b, (1, 8, 5, 5)), axis=(2, 3)),
    "expand_squeeze": lambda b, t: b.squeeze(b.expand_dims(t, axis=0), axis=(0,)),
}

TIERS = [pytest.param(Target(isa), id=isa, marks=pytest.mark.skipif(not hosts.real_has(isa),
                                                                      reason=f"the host CPU has no {isa}"))
         for isa in ("generic", "avx2", "avx512-vnni", "amx")] + [
    pytest.param(Target(isa, emulated=True), id=f"{isa}-emulated") for isa in ("avx512-vnni", "amx")]


def _model(producer, name):
    b = CvmBuilder()
    x = b.create_input(list(SHAPE), 8)
    t = SLOT[name](b, b.relu(x) if producer == "relu" else x)
    if t.precision > 8:  # declared 2 (the condition's), the values unchanged: the plan bounds them itself
        t = b.where(b.create_param(np.ones(t.shape, dtype=np.int32), 2), t, t)
    c = t.shape[1]
    w = _param(b, (20, c, 3, 3))
    y = b.conv2d(t, w, _param(b, (20,)), channels=20, kernel_size=(3, 3), padding=(1, 1), use_bias=True)
    return b.graph([b.cvm_right_shift(y, precision=8, shift_bit=9)])


@pytest.mark.parametrize("target", TIERS)
@pytest.mark.parametrize("producer", ["relu", "signed"])
@pytest.mark.parametrize("name", sorted(SLOT))
def test_every_operator_between_the_producer_and_the_kernel(target, producer, name):
    graph = _model(producer, name)
    for x in (RNG.integers(-127, 128, size=SHAPE).astype(np.int32), np.full(SHAPE, 127, np.int32),
              np.full(SHAPE, -127, np.int32)):
        want = run_graph(graph, x)
        got = compile_graph(graph, threads=1, target=target)(x)
        np.testing.assert_array_equal(got[0], want[0])
