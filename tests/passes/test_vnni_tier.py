"""The AVX512-VNNI and AMX-INT8 tiers of conv2d: `cvmc.mmk_u8s8` with `isa = "avx512-vnni"` (`vpdpbusd` on 512-bit
accumulators, blocks of up to 64 output channels) for int8 data against int8 param weights, on a target >=
avx512-vnni: data provably in [0, 127] as it is, other int8 data packed as x + 128 (128 * sum(w) subtracted).
The AMX tier is the same op with `isa = "amx"`, in tiles of 16 pixels x 16 channels (`tdpbusd`). Which
convolutions take them (the bounds that pick them, at the bound and one past), and bit-exact with the reference
on every edge of their blocking, through the instructions where the host has them and through the portable
lowering of the same op (`x86:avx512-vnni,emulated`, `x86:amx,emulated`: same packing and tiling) on every host."""

import re

import hosts
import numpy as np
import pytest
from scheduled import bufferized, element, packed_params, packs, scheduled

from cvmc import CvmBuilder
from cvmc.dialects.cvm import ParamOp
from cvmc.passes.loops.target import Target
from cvmc.runtime.devices.cpu import compile_graph, lower_graph
from cvmc.runtime.frontend.cvm_ir import graph_to_module
from cvmc.runtime.references.cvm import run_graph

RNG = np.random.default_rng(41)
VNNI, EMULATED = Target("avx512-vnni"), Target("avx512-vnni", emulated=True)
AMX, AMX_EMULATED = Target("amx"), Target("amx", emulated=True)
TIERS = [pytest.param(VNNI, id="vnni", marks=pytest.mark.skipif(not hosts.real_has("avx512-vnni"),
                                                               reason="the host CPU has no AVX512-VNNI")),
         pytest.param(EMULATED, id="vnni-emulated"),
         pytest.param(AMX, id="amx", marks=pytest.mark.skipif(not hosts.real_has("amx"),
                                                             reason="the host CPU (or process) has no AMX-INT8")),
         pytest.param(AMX_EMULATED, id="amx-emulated")]


def _rand(shape, bits=8):
    bound = (1 << (bits - 1)) - 1
    return RNG.integers(-bound, bound + 1, size=shape).astype(np.int32)


def _conv(x_shape, oc, kernel=(3, 3), bits=8, relu=True, bias=True, weight=None, then=None, **attrs):
    """conv2d -> requantize -> relu of an input of `bits` bits (past 8: through a `where`), of its relu with
    `relu`; `then`: a second conv2d of `then` output channels reading the first's output (the epilogue pack)."""
    b = CvmBuilder()
    x = data = b.create_input(list(x_shape), min(bits, 8))
    if bits > 8:
        wide = b.cvm_left_shift(x, precision=bits, shift_bit=bits - 8)
        data = b.where(b.create_param(np.ones(x_shape, dtype=np.int32), 2), wide, x)
    if relu:
        data = b.relu(data)
    shape = (oc, x_shape[1] // attrs.get("groups", 1), *kernel)
    w = _rand(shape) if weight is None else np.broadcast_to(weight, shape)
    args = [b.create_param(_rand((oc,)), 8)] if bias else []
    y = b.conv2d(data, b.create_param(np.asarray(w, np.int32), 8), *args, channels=oc, kernel_size=kernel,
                 use_bias=bias, **attrs)
    y = b.relu(b.cvm_right_shift(y, precision=8, shift_bit=9))
    if then:
        y = b.conv2d(y, b.create_param(_rand((then, oc, 3, 3)), 8), channels=then, kernel_size=(3, 3),
                     padding=(1, 1), use_bias=False)
        y = b.cvm_right_shift(y, precision=8, shift_bit=9)
    return b.graph([y])


def _weights(graph, target):
    """(element, shape, packing) of the packed param weights (`cvm_sched.pack`s of params)."""
    return packed_params(scheduled(graph, target))


@pytest.mark.parametrize(("oc", "blocks", "lanes"), [(16, 1, 16), (17, 1, 32), (64, 1, 64), (65, 2, 64)])
def test_a_block_is_the_channels_rounded_to_16_at_most_64(oc, blocks, lanes):
    # 3 x 3 x 4 = 36 reduction elements: 9 steps of 4 bytes per lane
    assert _weights(_conv((1, 4, 6, 6), oc), VNNI) == [("i8", (blocks, 9, 4 * lanes), "conv_weight_blocked")]
    assert _weights(_conv((1, 4, 6, 6), oc), Target("avx2"))[0][1][2] == 4 * 16  # AVX2: 16 lanes


def test_amx_takes_tiles_of_16_pixels_x_16_channels():
    assert _weights(_conv((1, 4, 6, 6), 20), AMX) == [("i8", (2, 9, 64), "conv_weight_blocked")]
    from cvmc.passes.pipelines import run_pipeline

    text = str(run_pipeline(graph_to_module(_conv((1, 4, 6, 20), 20)), "cvm-to-loops", target=AMX))
    assert re.search(r'"cvmc.mmk_u8s8".*rows = 16 : i64, lanes = 16 : i64, .*isa = "amx"}', text)


@pytest.mark.parametrize(("rows", "channels"), [(20, 64), (7, 200)])  # 200 channels: 13 chunks of 64 bytes
def test_the_amx_kernel_is_tile_loads_and_tdpbusd(rows, channels):
    """The AMX kernel compiled for Sapphire Rapids (on any host): per tap and chunk of 64 bytes, two tile loads
    and one `tdpbusd`, `ldtilecfg` before and `tilerelease` after, the tile stored once."""
    import llvmlite.binding as llvm

    from cvmc.runtime.engine import llvm_compile

    ir_text = lower_graph(_conv((1, channels, 4, rows), 16, padding=(1, 1)), AMX)[1]
    tm = llvm.Target.from_triple(llvm_compile.host_target()[0]).create_target_machine(cpu="sapphirerapids", features="",
                                                                           opt=3)
    asm = tm.emit_assembly(llvm_compile._optimized(ir_text, tm))
    steps, chunks = channels // 4, -(-channels // 64)
    body = asm[asm.index(f"__cvmc_mmk_amx_r{16 if rows >= 16 else 1}_s{steps}_k3x3:"):]  # 7: single pixels
    body = body[:body.index(".Lfunc_end")]
    assert body.count("tdpbusd") == 9 * chunks and body.count("tileloadd") == 2 * 9 * chunks
    assert body.count("ldtilecfg") == 1 and body.count("tilerelease") == 1 and body.count("tilestored") == 1


def test_the_bounds_that_pick_the_tier():
    """Int8 data, >= 0 or not: the VNNI micro-kernel; 9 bits: int16 (the micro-kernel of int16); without the
    micro-kernel or with groups: u8 = x + 128 rows and `cvmc.dot_u8s8`. The input's packing: x + 128 only for
    data that may be negative."""
    for relu in (True, False):
        assert _weights(_conv((1, 4, 6, 6), 20, relu=relu), VNNI) == [("i8", (1, 9, 128), "conv_weight_blocked")]
        assert _weights(_conv((1, 4, 6, 6), 20, relu=relu, bits=9), VNNI)[0][0] == "i16"
        (x,) = [p for p in packs(scheduled(_conv((1, 4, 6, 6), 20, relu=relu), VNNI))
                if not isinstance(p.source.owner, ParamOp)]
        zero_point = 0 if x.zero_point is None else x.zero_point.value.data
        assert (element(x.result.type), zero_point) == ("u8", 0 if relu else 128)
    assert _weights(_conv((1, 4, 6, 6), 20, relu=False), Target("avx2"))[0][0] == "i16"  # vpmaddubsw saturates
    grouped = _conv((1, 4, 6, 6), 20, groups=2)  # the micro-kernel takes one group only
    assert _weights(grouped, VNNI) == [("i8", (20, 64), "conv_weight")]  # one group only
    assert _weights(_conv((1, 4, 6, 6), 20), Target("avx512-vnni", mmk=False)) == [("i8", (20, 64), "conv_weight")]


def test_the_tier_is_visible_in_the_ir():
    module = graph_to_module(_conv((1, 4, 6, 6), 20))
    from cvmc.passes.pipelines import run_pipeline

    text = str(run_pipeline(module, "cvm-to-loops", target=VNNI))
    assert 'cvmc.target = #cvmc.target<x86, tier = "avx512-vnni", mmk = true, emulated = false' in text
    assert re.search(r'"cvmc.mmk_u8s8".*isa = "avx512-vnni"', text) and "emulated = 1" not in text
    text = str(run_pipeline(graph_to_module(_conv((1, 4, 6, 6), 20)), "cvm-to-loops", target=EMULATED))
    assert re.search(r'"cvmc.mmk_u8s8".*isa = "avx512-vnni", emulated = 1', text)
    ir = lower_graph(_conv((1, 4, 6, 6), 20), VNNI)[1]
    assert ir.startswith("; cvmc.target = x86:avx512-vnni\n") and "llvm.x86.avx512.vpdpbusd.512" in ir
    assert "__cvmc_mmk_vnni_r4_l32" in ir
    ir = lower_graph(_conv((1, 4, 6, 6), 20), EMULATED)[1]
    assert "vpdpbusd" not in ir and "__cvmc_mmk_vnni_r4_l32_emu" in ir


def _check(graph, target, x=None, threads=1):
    x = _rand(graph.nodes[graph.input_id].shapes[0]) if x is None else x
    want = run_graph(graph, x)
    got = compile_graph(graph, threads=threads, cache=False, target=target)(x)
    np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("target", TIERS)
@pytest.mark.parametrize("relu", [True, False])
@pytest.mark.parametrize(("x_shape", "oc", "kernel", "attrs"), [
    ((1, 4, 6, 7), 20, (3, 3), {"padding": (1, 1)}),  # 7 pixels: a block of 4, then 3 alone; 20 of 32 lanes
    ((2, 3, 9, 10), 16, (3, 3), {"padding": (1, 2), "strides": (2, 2)}),  # odd channels: im2col; a batch of 2
    ((1, 6, 11, 13), 65, (3, 2), {"dilation": (2, 1), "strides": (1, 2)}),  # 2 blocks of 64, the last one lane
    ((1, 64, 8, 8), 64, (3, 3), {"padding": (1, 1)}),  # the bench's layer, one full block
    ((1, 2, 5, 5), 8, (1, 1), {}),  # one tap, half a vector
])
def test_bit_exact_on_the_edges_of_the_blocking(target, relu, x_shape, oc, kernel, attrs):
    _check(_conv(x_shape, oc, kernel, relu=relu, **attrs), target)


@pytest.mark.parametrize("target", TIERS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("x_shape", "mid", "then", "relu"), [((1, 8, 7, 9), 20, 24, True),
                                                             ((2, 16, 6, 5), 64, 65, False),
                                                             ((1, 8, 16, 16), 16, 8, False)])  # 8x8 tiled pack
def test_bit_exact_writing_the_next_convs_packed_input(target, threads, x_shape, mid, then, relu):
    graph = _conv(x_shape, mid, padding=(1, 1), then=then, relu=relu)
    # the first conv's kernel writes the second's packed input
    assert any(k.ops[0] == "conv2d" and "pack" in k.stored for k in bufferized(graph, target).kernels)
    _check(graph, target, threads=threads)


@pytest.mark.parametrize("target", TIERS)
@pytest.mark.parametrize("relu", [True, False])
def test_the_int8_bound(target, relu):
    """x = +-127 against w = +-127 everywhere (sums of 4 products: +-64516 per lane step, and for x + 128 = 255
    up to +-129540: no saturation in `vpdpbusd`), and random values."""
    signs = np.where(np.arange(32) % 3, 127, -127).reshape(32, 1, 1, 1)
    graph = _conv((1, 8, 4, 6), 32, padding=(1, 1), bias=False, weight=signs, relu=relu)
    for x in (np.full((1, 8, 4, 6), 127, np.int32), np.full((1, 8, 4, 6), -127, np.int32), _rand((1, 8, 4, 6))):
        _check(graph, target, x)


@pytest.mark.parametrize(("cpu", "features"), [("znver4", ""), ("x86-64", "+avx512f,+avx512bw,+avx512vnni")])
def test_the_vnni_kernel_is_a_chain_of_vpdpbusd_in_registers(cpu, features):
    """The 4 x 64 kernel's innermost loop, compiled for a CPU with AVX512-VNNI (on any host): 16 `vpdpbusd` on
    zmm registers per step, 4 weight loads and 4 broadcasts, no access to the stack (no spill)."""
    import llvmlite.binding as llvm

    from cvmc.runtime.engine import llvm_compile

    ir_text = lower_graph(_conv((1, 64, 6, 8), 64, padding=(1, 1)), VNNI)[1]
    tm = llvm.Target.from_triple(llvm_compile.host_target()[0]).create_target_machine(cpu=cpu, features=features, opt=3)
    asm = tm.emit_assembly(llvm_compile._optimized(ir_text, tm))
    body = asm[asm.index("__cvmc_mmk_vnni_r4_l64:"):]
    body = body[:body.index(".Lfunc_end")]
    blocks = [b[:b.index("\n\tj")] for b in re.split(r"\n\.LBB\d+_\d+:", body) if "\n\tj" in b]
    inner = min((b for b in blocks if "vpdpbusd" in b), key=len)
    steps = inner.count("vpdpbusd") // 16
    assert steps >= 1 and inner.count("vpdpbusd") == 16 * steps
    assert len(re.findall(r"vpdpbusd\s+[^\n]*zmm", inner)) == 16 * steps
    assert inner.count("vpbroadcastd") == 4 * steps
    assert "rsp" not in inner and "rbp" not in inner


def test_the_emulated_kernel_runs_on_a_cpu_without_vnni():
    """The portable lowering compiled for an AVX2-only CPU: no AVX512 instruction at all."""
    import llvmlite.binding as llvm

    from cvmc.runtime.engine import llvm_compile

    ir_text = lower_graph(_conv((1, 64, 6, 8), 64, padding=(1, 1)), EMULATED)[1]
    tm = llvm.Target.from_triple(llvm_compile.host_target()[0]).create_target_machine(cpu="haswell", features="", opt=3)
    asm = tm.emit_assembly(llvm_compile._optimized(ir_text, tm))
    assert "zmm" not in asm and "vpdpbusd" not in asm and "__cvmc_mmk_vnni_r4_l64_emu" in asm
