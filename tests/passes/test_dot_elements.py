"""conv2d and dense at the int8 bound and one past it: u8 x s8 (`vpdpbusd`) when both operands provably fit int8
and the host has AVX512-VNNI, int16 one bit past, and bit-exact with the reference either way."""

import hosts
import numpy as np
import pytest
from scheduled import pack_elements, scheduled

from cvmc import CvmBuilder
from cvmc.runtime.devices.cpu import compile_graph
from cvmc.runtime.frontend.cvm_ir import graph_to_module
from cvmc.runtime.references.cvm import run_graph

RNG = np.random.default_rng(11)
# Runs the kernels of the real CPU's tier (its default target): skipped where it has no AVX512-VNNI.
needs_vnni = pytest.mark.skipif(not hosts.real_has("avx512-vnni"), reason="the host CPU has no AVX512-VNNI")


def _extremes(shape, bound):
    """Values in [-bound, bound], the bounds themselves included in every row."""
    a = RNG.integers(-bound, bound + 1, size=shape).astype(np.int32)
    flat = a.reshape(a.shape[0], -1)
    flat[:, 0], flat[:, -1] = bound, -bound
    return a


def _data(b, shape, bits):
    """An input whose values reach `bits` bits (|x| <= 2^(bits-1) - 1) and whose declared precision is 8: for
    bits 9 a `where` that takes its condition's precision (the values stay within 9 bits: a sound bound
    `cvm_value_bits` finds). Returns the tensor and the input it reads."""
    x = b.create_input(list(shape), 8)
    if bits == 8:
        return x, x
    wide = b.cvm_left_shift(x, precision=bits, shift_bit=1)  # 2 * 127 = 254 <= 255
    return b.where(b.create_param(np.ones(shape, dtype=np.int32), 2), wide, x), x


def _conv(bits):
    b = CvmBuilder()
    data, _ = _data(b, (1, 5, 7, 13), bits)  # rows of 13 pixels: one block of 8 (`DOT_ROWS`), then 5 alone
    w = b.create_param(_extremes((6, 5, 3, 3), 127), 8)
    y = b.conv2d(data, w, b.create_param(_extremes((6,), 127), 8), channels=6, kernel_size=(3, 3),
                 padding=(1, 1), use_bias=True)
    return b, y


def _dense(bits):
    b = CvmBuilder()
    data, _ = _data(b, (3, 150), bits)  # 150 -> rows of 192 bytes: three vpdpbusd steps, padded
    y = b.dense(data, b.create_param(_extremes((4, 150), 127), 8), units=4, use_bias=False)
    return b, y


def _elements(b, y, target):
    """The element types of the operands cvm-pack-operands packs, i32 left out."""
    return pack_elements(scheduled(b.graph([y]), target))


CASES = [(_conv, 8, ["i8", "u8"]), (_conv, 9, ["i16"]), (_dense, 8, ["i8", "u8"]), (_dense, 9, ["i16"])]


@pytest.mark.parametrize(("make", "bits", "elements"), CASES)
def test_the_int8_bound_picks_u8s8_and_one_past_int16(make, bits, elements):
    assert _elements(*make(bits), "x86:avx512-vnni") == elements
    assert _elements(*make(bits), "x86:avx2") == ["i16"]  # no VNNI: int16 at the int8 bound too


@needs_vnni
@pytest.mark.parametrize(("make", "bits"), [(_conv, 8), (_conv, 9), (_dense, 8), (_dense, 9)])
@pytest.mark.parametrize("vnni", ["1", "0"])
def test_bit_exact_at_the_int8_bound_and_one_past(monkeypatch, make, bits, vnni):
    monkeypatch.setenv("CVMC_VNNI", vnni)
    b, y = make(bits)
    graph = b.graph([y])
    shape = graph_to_module(graph).body.block.first_op.function_type.inputs.data[0].get_shape()
    for x in (_extremes(shape, 127), np.full(shape, 127, np.int32), np.full(shape, -127, np.int32)):
        want = run_graph(graph, x)
        got = compile_graph(graph, cache=False)(x)
        np.testing.assert_array_equal(got[0], want[0])


def test_forcing_vnni_on_a_cpu_without_it_is_refused(monkeypatch, host):
    """`CVMC_VNNI=1` makes u8 x s8 IR on any host (for IR tests); compiling it for a CPU without AVX512-VNNI
    is a logic error, not an illegal instruction at run time."""
    from cvmc.errors import CVMLogicError

    monkeypatch.setenv("CVMC_VNNI", "1")
    host.set("avx2")
    b, y = _dense(8)
    with pytest.raises(CVMLogicError, match="got x86:avx512-vnni .*: this CPU has no avx512-vnni"):
        compile_graph(b.graph([y]), cache=False)
    monkeypatch.setenv("CVMC_VNNI", "0")
    b, y = _dense(8)
    compile_graph(b.graph([y]), cache=False)  # int16
