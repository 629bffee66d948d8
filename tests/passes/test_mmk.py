"""The register-blocked micro-kernels of conv2d (`cvmc.mmk_i16`, and `cvmc.mmk_u8s8` for data provably in
[0, 127] on AVX2): which convolutions take them, and bit-exact with the reference on every edge of the blocking (a
partial block of output channels, pixels past the last block of MMK_ROWS, channels read through im2col, strides,
dilation, batches, a fused residual add), at the u8 x s8 bound (127 x +-127 pairs: 32258, no saturation) and at
the int16 bound (sums that wrap int32), one bit past each taking the next wider kernel."""

import hosts
import numpy as np
import pytest
from scheduled import packed_params, scheduled

from cvmc import CvmBuilder
from cvmc.passes.loops.target import Target
from cvmc.runtime.devices.cpu import compile_graph, lower_graph
from cvmc.runtime.driver import target as runtime_target
from cvmc.runtime.frontend.cvm_ir import graph_to_module
from cvmc.runtime.references.cvm import run_graph

RNG = np.random.default_rng(23)


# The kernels follow the host's tier (`detect_target`, at most avx2 here): every test runs on the `host` fixture's
# host (`make test-hosts`: each simulated one); those that read the assembly of AVX2's kernels need the real CPU's.
pytestmark = pytest.mark.hosts
needs_avx2 = pytest.mark.skipif(not hosts.real_has("avx2"), reason="the host CPU has no AVX2")


@pytest.fixture(autouse=True)
def _int16(monkeypatch, host):
    monkeypatch.setenv("CVMC_VNNI", "0")  # no `vpdpbusd` path: these kernels on any host
    monkeypatch.delenv("CVMC_MMK", raising=False)
    monkeypatch.delenv("CVMC_AVX2", raising=False)


def _rand(shape, precision=8):
    bound = (1 << (precision - 1)) - 1
    return RNG.integers(-bound, bound + 1, size=shape).astype(np.int32)


def _conv(x_shape, oc, kernel=(3, 3), bits=8, bias=True, residual=False, relu=False, weight=None, **attrs):
    """A conv2d of an input of `bits` bits: past 8, through a `where` that declares its condition's precision
    (the conv's data must declare at most 8; `cvm_value_bits` bounds it by the values'); with `relu`, of
    its relu (values >= 0)."""
    b = CvmBuilder()
    x = data = b.create_input(list(x_shape), bits)
    if bits > 8:
        data = b.where(b.create_param(np.ones(x_shape, dtype=np.int32), 2), x, x)
    if relu:
        data = b.relu(data)
    shape = (oc, x_shape[1] // attrs.get("groups", 1), *kernel)
    w = b.create_param(_rand(shape, 8) if weight is None else np.broadcast_to(weight, shape).astype(np.int32), 8)
    args = [b.create_param(_rand((oc,), 8), 8)] if bias else []
    y = b.conv2d(data, w, *args, channels=oc, kernel_size=kernel, use_bias=bias, **attrs)
    if residual:
        y = b.relu(b.cvm_right_shift(b.elemwise_add(b.cvm_right_shift(y, precision=8, shift_bit=9), x),
                                     precision=8, shift_bit=1))
    return b.graph([y])


def _weights(graph, target="x86:avx2"):
    """(element, shape, packing) of the packed param weights (`cvm_sched.pack`s of params)."""
    return packed_params(scheduled(graph, target))


def _check(graph, x):
    want = run_graph(graph, x)
    got = compile_graph(graph, cache=False)(x)
    np.testing.assert_array_equal(got[0], want[0])


def test_an_int16_conv_with_a_param_weight_takes_the_blocked_weight():
    # 20 output channels: two blocks of 16 lanes (the second half zeros); 3 x 3 x 4 = 36 taps: pairs of int16
    assert _weights(_conv((1, 4, 6, 6), 20)) == [("i16", (2, 18, 32), "conv_weight_blocked")]
    assert _weights(_conv((1, 3, 6, 6), 4)) == [("i16", (1, 14, 32), "conv_weight_blocked")]  # 27 taps -> 28
    assert _weights(_conv((1, 4, 6, 6), 20), "x86:avx2,no-mmk") == [("i16", (20, 48), "conv_weight")]
    assert _weights(_conv((1, 4, 6, 6), 4, groups=2)) == [("i16", (4, 32), "conv_weight")]  # one group only
    assert "__cvmc_mmk_i16_r4_l16" in lower_graph(_conv((1, 4, 6, 6), 20), Target("generic"))[1]
    other = "x86:generic,no-mmk"  # another CPU's lowering (cvm-aot --cpu) has no micro-kernel
    assert _weights(_conv((1, 4, 6, 6), 20), other) == [("i16", (20, 48), "conv_weight")]
    assert _weights(_conv((1, 4, 6, 6), 20, relu=True), other) == [("i16", (20, 48), "conv_weight")]


def test_data_provably_in_0_127_takes_u8s8_with_avx2_and_one_past_int16():
    # 36 taps: quads of bytes; the relu's 8 bits and >= 0
    assert _weights(_conv((1, 4, 6, 6), 20, relu=True)) == [("i8", (2, 9, 64), "conv_weight_blocked")]
    assert _weights(_conv((1, 3, 6, 6), 4, relu=True)) == [("i8", (1, 7, 64), "conv_weight_blocked")]  # 27 -> 28
    assert _weights(_conv((1, 4, 6, 6), 20, relu=True, bits=9))[0][0] == "i16"  # 9 bits: [0, 255]
    assert _weights(_conv((1, 4, 6, 6), 20))[0][0] == "i16"  # may be negative
    assert _weights(_conv((1, 4, 6, 6), 20, relu=True), "x86:generic")[0][0] == "i16"


@pytest.mark.parametrize(("x_shape", "oc", "kernel", "attrs"), [
    ((1, 4, 6, 7), 20, (3, 3), {"padding": (1, 1)}),  # direct: 7 pixels = a block of 4, then 3 alone
    ((2, 3, 9, 10), 16, (3, 3), {"padding": (1, 2), "strides": (2, 2)}),  # odd channels: im2col; a batch of 2
    ((1, 6, 11, 13), 33, (3, 2), {"dilation": (2, 1), "strides": (1, 2)}),  # 3 blocks, the last one lane
    ((1, 2, 5, 5), 8, (1, 1), {}),  # one tap, half a block
])
@pytest.mark.parametrize("relu", [False, pytest.param(True, marks=needs_avx2)])
def test_bit_exact_on_the_edges_of_the_blocking(x_shape, oc, kernel, attrs, relu):
    graph = _conv(x_shape, oc, kernel, relu=relu, **attrs)
    assert _weights(graph)[0][:: 2] == ("i8" if relu else "i16", "conv_weight_blocked")
    _check(graph, _rand(x_shape))


@needs_avx2
@pytest.mark.parametrize(("bits", "element"), [(8, "i8"), (9, "i16")])
def test_the_u8s8_bound_and_one_past(bits, element):
    """x = 127 against w = +-127 everywhere: every pair of products is +-32258, the most `vpmaddubsw` sums
    without saturating; at 9 bits (x up to 255: pairs up to 64770) the int16 kernel."""
    signs = np.where(np.arange(16) % 3, 127, -127).reshape(16, 1, 1, 1)  # whole channels of +127 and of -127
    graph = _conv((1, 8, 4, 6), 16, padding=(1, 1), bits=bits, relu=True, bias=False, weight=signs)
    assert _weights(graph)[0][0] == element
    bound = (1 << (bits - 1)) - 1
    for x in (np.full((1, 8, 4, 6), bound, np.int32), _rand((1, 8, 4, 6), bits)):
        _check(graph, x)


@pytest.mark.parametrize("relu", [False, pytest.param(True, marks=needs_avx2)])
def test_bit_exact_with_a_fused_residual_add_and_no_bias(relu):
    graph = _conv((1, 8, 5, 9), 8, padding=(1, 1), bias=False, residual=True, relu=relu)
    assert _weights(graph)[0][2] == "conv_weight_blocked"
    _check(graph, _rand((1, 8, 5, 9)))


@pytest.mark.parametrize(("bits", "blocked"), [(16, True), (17, False)])
def test_the_int16_bound_and_one_past(bits, blocked):
    """Data of 16 bits (|x| <= 32767) against weights of 8: int16, the micro-kernel; a 3 x 3 x 64 sum of such
    products exceeds int32 (576 * 32767 * 127) and wraps as the reference's does. At 17 bits: int32, no
    micro-kernel."""
    graph = _conv((1, 64, 4, 5), 16, padding=(1, 1), bits=bits, bias=False)
    assert (_weights(graph)[0][2] == "conv_weight_blocked") == blocked
    bound = (1 << (bits - 1)) - 1
    for x in (np.full((1, 64, 4, 5), bound, np.int32), np.full((1, 64, 4, 5), -bound, np.int32),
              _rand((1, 64, 4, 5), bits)):
        _check(graph, x)


@pytest.mark.parametrize(("cpu", "madd", "kind"), [("znver3", "vpmaddwd", "i16"), ("x86-64-v3", "vpmaddwd", "i16"),
                                                   ("znver4", "vpdpwssd", "i16"), ("znver3", "vpmaddubsw", "u8s8")])
def test_the_micro_kernel_is_a_chain_of_multiply_adds_in_registers(monkeypatch, cpu, madd, kind):
    """The 4 x 16 micro-kernel's innermost loop, compiled for AVX2 (two 8-lane vectors per pixel) and AVX512-VNNI
    CPUs: 8 multiply-adds (u8 x s8: 8 `vpmaddubsw`, each widened by a `vpmaddwd`) on 2 weight loads and 4
    broadcasts, and no access to the stack (no spill)."""
    import re

    import llvmlite.binding as llvm

    from cvmc.runtime.engine import llvm_compile

    ir_text = lower_graph(_conv((1, 64, 6, 8), 64, padding=(1, 1), relu=kind == "u8s8"), Target("avx2"))[1]
    triple = llvm_compile.host_target()[0]
    tm = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features="", opt=3)
    asm = tm.emit_assembly(llvm_compile._optimized(ir_text, tm))
    body = asm[asm.index(f"__cvmc_mmk_{kind}_r4_l16:"):]
    body = body[:body.index(".Lfunc_end")]
    blocks = [b[:b.index("\n\tj")] for b in re.split(r"\n\.LBB\d+_\d+:", body) if "\n\tj" in b]
    inner = min((b for b in blocks if madd in b), key=len)  # the loop over pairs of channels, to its branch
    steps = inner.count(madd) // 8
    assert steps >= 1 and inner.count(madd) == 8 * steps
    assert inner.count("vpbroadcastd") == 4 * steps
    if kind == "u8s8":
        assert inner.count("vpmaddwd") == 8 * steps
    assert "rsp" not in inner and "rbp" not in inner


def test_forcing_avx2_on_a_cpu_without_it_is_refused(monkeypatch, host):
    from cvmc.errors import CVMLogicError

    monkeypatch.setenv("CVMC_AVX2", "1")
    host.set("generic")
    with pytest.raises(CVMLogicError, match="got x86:avx2 .*: this CPU has no avx2, its kernels would not run here"):
        compile_graph(_conv((1, 4, 6, 6), 20, relu=True), cache=False)
    monkeypatch.delenv("CVMC_AVX2")  # the host's tier: generic, int16
    assert str(runtime_target.detect_target()) == "x86:generic"
    assert _weights(_conv((1, 4, 6, 6), 20, relu=True), str(runtime_target.detect_target()))[0][0] == "i16"


@needs_avx2
@pytest.mark.parametrize(("x_shape", "padding", "tiled"), [((1, 16, 5, 16), (2, 1), True), ((2, 8, 3, 8), (0, 0), True),
                                                          ((1, 12, 4, 16), (1, 1), False)])  # 12 channels: the loop
def test_the_u8_input_is_packed_by_tiles_of_8_x_8(x_shape, padding, tiled):
    """The NHWC bytes of the u8 x s8 kernel's input: `cvmc.pack_tile` transposes 8 channels x 8 columns at once
    (rows of padding, columns of padding by the loop); bit-exact either way."""
    graph = _conv(x_shape, 16, padding=padding, relu=True)
    from cvmc.passes.pipelines import run_pipeline

    module = graph_to_module(graph)
    run_pipeline(module, "cvm-to-loops")
    assert ("cvmc.pack_tile" in str(module)) == tiled
    _check(graph, _rand(x_shape))
