"""The GPU schedule of conv2d and dense (`cvmc.passes.loops.gpu`) on the emulated grid (tests/cuda_host.py):
int8 operands on `__dp4a` (whole words, and words gathered byte by byte), int16 and int32 operands, reductions
split over the threads of a block through shared memory and barriers (a split that does not divide the
reduction, a last block with spare threads, tap by tap where the split divides a tap's steps), bit-exact with the
reference interpreter at the bounds of each element type and one past; without either barrier the result is
wrong; the split rule at its bounds."""

from __future__ import annotations

from math import prod

import numpy as np
import pytest
from cuda_host import HostDevice, host_compiler
from scheduled import pack_elements, scheduled

from cvmc import CvmBuilder
from cvmc.codegen.cuda import emit_cuda
from cvmc.codegen.cuda_launch import kernel_specs
from cvmc.errors import CVMRuntimeError
from cvmc.passes.loops.gpu import BLOCK, split, tile
from cvmc.passes.loops.target import GPU
from cvmc.runtime.devices import cuda as rc
from cvmc.runtime.frontend.cvm_ir import graph_to_module
from cvmc.runtime.references.cvm import run_graph

needs_host_compiler = pytest.mark.skipif(host_compiler() is None, reason="no host C++ compiler to emulate CUDA")


def real_gpu() -> rc.CudaDevice | None:
    try:
        return rc.default_device()
    except CVMRuntimeError:
        return None


needs_gpu = pytest.mark.skipif(real_gpu() is None, reason="no CUDA device (a GPU, its driver and cuda-python) here")
RNG = np.random.default_rng(15)


def test_split_at_its_bounds():
    assert split(10, 16, 4) == 1  # 64 multiply-adds a thread: the bound
    assert split(10, 17, 4) == 2  # 68: two threads of 9 and 8 words
    assert split(10, 64, 1) == 1 and split(10, 65, 1) == 2
    assert split(10, 1000, 1) == 16  # ceil(1000 / 16) = 63 <= 64 < ceil(1000 / 8)
    assert split(65536, 1000, 4) == 1  # the launch has 65,536 threads already
    assert split(65535, 1000, 4) == 2
    assert split(1, 10**6, 4) == BLOCK  # at most a block's threads


def test_a_thread_computes_up_to_four_channels_that_divide_the_axis():
    assert [tile(n) for n in (1, 2, 3, 4, 6, 7, 8, 12, 64)] == [1, 2, 1, 4, 2, 1, 4, 4, 4]


def _values(shape, bits):
    bound = (1 << (bits - 1)) - 1
    a = RNG.integers(-bound, bound + 1, size=shape).astype(np.int32)
    flat = a.reshape(-1)
    flat[:4] = [bound, -bound, bound, -bound][:flat.size]
    return a


def _data(b, shape, bits):
    """An input of precision 8 whose values, for `bits` > 8, are shifted left into `bits` bits (|x| <= 2^(bits-1)
    - 1) by a `where` that takes its condition's precision: a sound bound `cvm_value_bits` finds."""
    x = b.create_input(list(shape), 8)
    if bits == 8:
        return x
    wide = b.cvm_left_shift(x, precision=bits, shift_bit=bits - 8)  # 127 * 2^(bits - 8) < 2^(bits - 1)
    return b.where(b.create_param(np.ones(shape, dtype=np.int32), 2), wide, x)


# (channels of the input, output channels, groups, strides, dilation, data bits): the packed element type is
# int8 up to 8 bits, int16 up to 16, else int32
CONVS = {
    "int8_words_masked_spare": (12, 7, 1, (1, 1), (1, 1), 8),  # 27 words over 2 threads; 245 outputs, 2 blocks
    "int8_by_taps": (16, 6, 1, (1, 1), (1, 1), 8),  # 4 words a tap, 4 threads an output: one word a tap each
    "int8_gathered_masked": (11, 6, 1, (1, 1), (1, 1), 8),  # 11 channels: words cross taps
    "int8_groups_strides_dilation": (24, 4, 2, (2, 2), (2, 2), 8),
    "int8_one_thread": (4, 5, 1, (1, 1), (1, 1), 8),  # 9 words: one thread an output
    "int16_masked": (13, 6, 1, (1, 1), (1, 1), 9),  # one bit past int8
    "int16_by_taps": (16, 6, 1, (1, 1), (1, 1), 9),  # 16 channels a tap over 4 threads
    "int16_at_the_bound": (13, 6, 1, (1, 1), (1, 1), 16),
    "int32": (13, 6, 1, (1, 1), (1, 1), 17),  # one bit past int16
}


def conv(name):
    c, oc, groups, strides, dilation, bits = CONVS[name]
    b = CvmBuilder()
    x = _data(b, [1, c, 5 + 4 * (strides[0] - 1), 7 + 4 * (strides[1] - 1)], bits)
    w = b.create_param(_values((oc, c // groups, 3, 3), 8), 8)
    y = b.conv2d(x, w, b.create_param(_values((oc,), 8), 8), channels=oc, kernel_size=(3, 3), padding=(1, 1),
                 strides=strides, dilation=dilation, groups=groups, use_bias=True)
    if bits == 8:
        y = b.cvm_right_shift(b.relu(y), precision=8, shift_bit=5)  # the fused requantization epilogue
    return b.graph([y]), bits


DENSES = {"int8_masked": (7, 150, 5, 8), "int16": (3, 150, 4, 9), "int32": (3, 70, 4, 17), "int8_short": (2, 12, 3, 8)}


def dense(name):
    rows, depth, units, bits = DENSES[name]
    b = CvmBuilder()
    x = _data(b, [rows, depth], bits)
    y = b.dense(x, b.create_param(_values((units, depth), 8), 8), b.create_param(_values((units,), 8), 8),
                units=units)
    return b.graph([y]), bits


def source_of(graph):
    _, kernels, _ = rc.lower_graph(graph)
    return emit_cuda(kernels), kernel_specs(kernels)


def check(graph, grids=((2, 3), (1, 5), (3, 256))):
    shape = graph_to_module(graph).body.block.first_op.function_type.inputs.data[0].get_shape()
    runners = [rc.compile_graph(graph, device=HostDevice(grid=g)) for g in grids]
    for x in (_values(shape, 8), np.full(shape, 127, np.int32), np.full(shape, -127, np.int32)):
        want = run_graph(graph, x)
        for runner in runners:
            np.testing.assert_array_equal(runner(x)[0], want[0])


@pytest.mark.parametrize(("make", "name"), [(conv, n) for n in CONVS] + [(dense, n) for n in DENSES])
def test_packed_elements_on_the_gpu(make, name):
    graph, bits = make(name)
    assert pack_elements(scheduled(graph, GPU)) == (["i8"] if bits <= 8 else ["i16"] if bits <= 16 else [])


@needs_host_compiler
@pytest.mark.parametrize("name", list(CONVS))
def test_conv2d_is_bit_exact_on_the_emulated_grid(name, capfd):
    graph, bits = conv(name)
    source, specs = source_of(graph)
    assert ("__dp4a(" in source) == (bits <= 8)
    body = source[source.index("void b_conv2d"):]
    assert ("<< 24" in body) == (name == "int8_gathered_masked")  # the byte-gathered word (byte 3)
    assert ("__syncthreads();" in source) == (name != "int8_one_thread")
    check(graph)
    assert "runtime error" not in capfd.readouterr().err


@needs_host_compiler
@pytest.mark.parametrize("name", list(DENSES))
def test_dense_is_bit_exact_on_the_emulated_grid(name, capfd):
    graph, bits = dense(name)
    source, _ = source_of(graph)
    assert ("__dp4a(" in source) == (bits <= 8)
    assert ("__syncthreads();" in source) == (name != "int8_short")
    check(graph)
    assert "runtime error" not in capfd.readouterr().err


class WithoutBarrier(HostDevice):
    """Runs the generated CUDA with its `which`-th `__syncthreads()` taken out."""

    def __init__(self, which: int, barriers: int, grid: tuple[int, int]):
        super().__init__(grid=grid)
        self.which, self.barriers = which, barriers

    def compile(self, source):
        parts = source.split("__syncthreads();")
        assert len(parts) == self.barriers + 1  # one block kernel: its barriers
        kept = ["__syncthreads();"] * self.barriers
        kept[self.which] = "/* barrier taken out */"
        return super().compile(parts[0] + "".join(b + p for b, p in zip(kept, parts[1:])))


@needs_host_compiler
@pytest.mark.parametrize(("name", "which", "barriers", "grid"), [
    ("int8_words_masked_spare", 0, 2, (2, 3)), ("int8_words_masked_spare", 1, 2, (1, 3)),
    ("int8_by_taps", 0, 2, (2, 3)), ("int8_by_taps", 0, 2, (1, 3)), ("int8_by_taps", 1, 2, (2, 3))])  # fmt: skip
def test_without_a_barrier_the_block_kernel_is_wrong(name, which, barriers, grid):
    """The barrier before the partial sums are added orders them after they are written (read after write); the
    last one keeps the next block from overwriting them before they are read (write after read: a launch of one
    block runs every block). With the weight rows staged in shared memory (`int8_by_taps`), the barrier after the
    staging orders it before the reads (read after write), and the next block's partial sums after the reads of
    this one's (write after read): no third barrier."""
    graph, bits = conv(name)
    spec = next(s for n, s in kernel_specs(rc.lower_graph(graph)[1]).items() if n.startswith("conv2d"))
    assert spec.blocks >= 2
    shape = graph_to_module(graph).body.block.first_op.function_type.inputs.data[0].get_shape()
    x = _values(shape, bits)
    want = run_graph(graph, x)[0]
    assert want.any()
    np.testing.assert_array_equal(rc.compile_graph(graph, device=HostDevice(grid=grid))(x)[0], want)
    got = rc.compile_graph(graph, device=WithoutBarrier(which, barriers, grid))(x)[0]
    assert (got != want).any()


@needs_host_compiler
def test_computed_weights_are_packed_on_the_gpu(capfd):
    """Weights that are no params are packed by kernels (conv weight rows, dense rows), one thread per byte."""
    b = CvmBuilder()
    x = b.create_input([1, 5, 6, 6], 8)
    w = b.relu(b.create_param(_values((6, 5, 3, 3), 8), 8))
    y = b.conv2d(x, w, channels=6, kernel_size=(3, 3), padding=(1, 1))
    z = b.dense(b.flatten(b.cvm_clip(y, precision=8)), b.relu(b.create_param(_values((4, 216), 8), 8)), units=4)
    graph = b.graph([y, z])
    source, specs = source_of(graph)
    assert sum(name.startswith("pack") for name in specs) == 4  # input and weight of each
    assert all(spec.work == prod(spec.args[0].shape) for name, spec in specs.items() if name.startswith("pack"))
    x = _values((1, 5, 6, 6), 8)
    want = run_graph(graph, x)
    for grid in ((2, 3), (1, 256)):
        got = rc.compile_graph(graph, device=HostDevice(grid=grid))(x)
        for g, w_ in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w_)
    assert "runtime error" not in capfd.readouterr().err


@needs_gpu
@pytest.mark.parametrize(("make", "name"), [(conv, n) for n in CONVS] + [(dense, n) for n in DENSES])
def test_the_schedule_is_bit_exact_on_the_gpu(make, name):
    graph, _ = make(name)
    shape = graph_to_module(graph).body.block.first_op.function_type.inputs.data[0].get_shape()
    runner = rc.compile_graph(graph)
    for x in (_values(shape, 8), np.full(shape, 127, np.int32), np.full(shape, -127, np.int32)):
        np.testing.assert_array_equal(runner(x)[0], run_graph(graph, x)[0])


@needs_host_compiler
@pytest.mark.parametrize("n", [3, 130])  # 130: more than MAX_CONCAT_INPUTS = 64, calls writing parts of the output
def test_concatenate_has_a_thread_per_output_element(n, capfd):
    b = CvmBuilder()
    x = b.create_input([2, 3, 4], 8)
    sources = [x, b.relu(x), b.transpose(b.negative(b.transpose(x, axes=[0, 2, 1])), axes=[0, 2, 1])]
    y = b.relu(b.concatenate(*(sources[i % 3] for i in range(n)), axis=1))  # a view input, an epilogue
    graph = b.graph([y])
    _, specs = source_of(graph)
    concats = [spec for name, spec in specs.items() if name.startswith("concatenate")]
    assert concats and all(spec.parallel and spec.work == prod(spec.args[0].shape) for spec in concats)
    x = _values((2, 3, 4), 8)
    want = run_graph(graph, x)[0]
    for grid in ((2, 3), (1, 256)):
        np.testing.assert_array_equal(rc.compile_graph(graph, device=HostDevice(grid=grid))(x)[0], want)
    assert "runtime error" not in capfd.readouterr().err
