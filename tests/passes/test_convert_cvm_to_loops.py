"""convert-cvm-to-loops: strided views, fusion, buffer planning, the loop-level contract, and bit-exact kernels."""

from math import prod

import numpy as np
import pytest
from scheduled import Bufferized, bufferized, element, pack_elements, packed_params, scheduled
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp, UnregisteredOp

from cvmc import CvmBuilder
from cvmc.dialects.cvm_sched import CallOp, ViewOp
from cvmc.passes.loops.views import Layout, collapse
from cvmc.passes.pipelines import run_pipeline
from cvmc.runtime.devices.cpu import compile_graph
from cvmc.runtime.frontend.cvm_ir import graph_to_module
from cvmc.runtime.references.cvm import run_graph

# The kernels follow the host's tier (`detect_target`): every test here runs on the `host` fixture's host
# (`make test-hosts`: each simulated one; a native run of a tier this CPU lacks skips).
pytestmark = pytest.mark.hosts
RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _host(host):
    return host

# The ops a kernel may hold (the loop level of the contract).
LOOP_LEVEL = {
    "func.return", "scf.for", "scf.if", "scf.parallel", "scf.yield", "scf.reduce", "memref.load", "memref.store",
    "memref.alloca", "memref.subview", "memref.reinterpret_cast", "memref.copy", "arith.constant", "arith.addi",
    "arith.subi", "arith.muli", "arith.divsi", "arith.remsi", "arith.andi", "arith.ori", "arith.shli",
    "arith.shrsi", "arith.shrui", "arith.cmpi", "arith.select", "arith.extsi", "arith.extui", "arith.trunci",
    "arith.index_cast", "arith.minsi", "arith.maxsi", "math.absi",
    "cvmc.dot_u8s8",  # u8 x s8 dot products of conv2d and dense (an unregistered op: `vpdpbusd` in codegen)
    "cvmc.mmk_i16",  # the register-blocked int16 micro-kernel of conv2d (an unregistered op: a call in codegen)
}


def _name(op) -> str:
    return op.op_name.data if isinstance(op, UnregisteredOp) else op.name


def _bufferized(builder, outputs) -> Bufferized:
    """The bufferized module as the runtime lowers it here (`detect_target`: the host's tier and $CVMC_VNNI)."""
    return bufferized(builder.graph(outputs))


def _kernels(builder, outputs) -> list[list[str]]:
    """The ops of each call's kernel, in order."""
    return [k.ops for k in _bufferized(builder, outputs).kernels]


def _lowered(builder, outputs) -> ModuleOp:
    module = run_pipeline(graph_to_module(builder.graph(outputs)), "cvm-to-loops")
    module.verify()
    return module


def _check_bit_exact(builder, outputs, x):
    graph = builder.graph(outputs)
    want = run_graph(graph, x)
    got = compile_graph(graph, cache=False)(x)  # what this lowering makes now, never an earlier program
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == np.int32 and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def _rand(shape, precision=8):
    bound = (1 << (precision - 1)) - 1
    return RNG.integers(-bound, bound + 1, size=shape).astype(np.int32)


# ---- views -------------------------------------------------------------------------------------------------


def test_reshape_of_a_contiguous_view_keeps_the_buffer():
    layout = Layout.contiguous((2, 3, 4), offset=5)
    assert layout.reshape((6, 4)) == Layout((6, 4), (4, 1), 5)


def test_reshape_of_a_transpose_is_a_view_only_where_strides_express_it():
    t = Layout.contiguous((2, 3, 4)).permute((1, 0, 2))  # shape (3, 2, 4), strides (4, 12, 1)
    assert t.reshape((3, 2, 2, 2)) == Layout((3, 2, 2, 2), (4, 12, 2, 1))  # split the contiguous last dim
    assert t.reshape((6, 4)) is None  # merging dims 0 and 1 would need a copy
    assert t.reshape((3, 1, 2, 4)) == Layout((3, 1, 2, 4), (4, 8, 12, 1))


def test_slices_and_broadcasts_are_strided_layouts():
    base = Layout.contiguous((4, 6))
    assert base.slice([(1, 2, 2), (0, 3, 2)]) == Layout((2, 2), (12, 3), 6)
    assert base.slice([(3, -1, 2), (0, 1, 6)]) is None
    assert Layout.contiguous((3, 1)).broadcast_to((2, 3, 5)) == Layout((2, 3, 5), (0, 1, 0))


def test_collapse_merges_dims_every_operand_walks_contiguously():
    out = Layout.contiguous((2, 3, 4))
    bias = Layout.contiguous((3, 1)).broadcast_to((2, 3, 4))
    assert collapse([out, out]) == [Layout((24,), (1,))] * 2
    merged = collapse([out, bias])
    assert [l.shape for l in merged] == [(2, 3, 4)] * 2  # the broadcast dims stop the merge
    assert collapse([out.permute((0, 1, 2)), Layout.contiguous((2, 3, 4)).broadcast_to((2, 3, 4))])[0].shape == (24,)


# ---- scheduling and buffers -------------------------------------------------------------------------------


@pytest.mark.parametrize("vnni", ["0", "1"])
def test_requantization_chain_fuses_into_the_conv(monkeypatch, vnni):
    monkeypatch.setenv("CVMC_VNNI", vnni)
    b = CvmBuilder()
    x = b.create_input([1, 3, 8, 8], 8)
    w = b.create_param(_rand((4, 3, 3, 3)), 8)
    y = b.relu(b.cvm_right_shift(b.conv2d(x, w, channels=4, kernel_size=(3, 3), padding=(1, 1), use_bias=False),
                                 precision=8, shift_bit=5))
    low = _bufferized(b, [y])
    assert [k.ops for k in low.kernels] == [["pack"], ["conv2d", "cvm_right_shift", "relu"]]
    arena = [(element(t), prod(t.get_shape())) for k in low.kernels for t in k.stored_types]  # what each writes
    assert all(v.root == "arena" for k in low.kernels for v in k.written)
    weight = [(e, shape) for e, shape, _ in packed_params(scheduled(b.graph([y])))]  # packed when compiling
    if vnni == "1":  # u8 (x + 128) x s8 in the VNNI micro-kernel: 27 taps padded to 28 (quads), 16 lanes
        assert arena == [("u8", 10 * 10 * 3), ("i32", 4 * 8 * 8)]
        assert weight == [("i8", (1, 7, 64))]
    else:
        assert arena == [("i16", 10 * 10 * 3), ("i32", 4 * 8 * 8)]  # the padded NHWC input, the output
        # 27 taps, padded to 28 (pairs), in one block of 16 output channels (`cvmc.mmk_i16`)
        assert weight == [("i16", (1, 14, 32))]


def test_an_understated_precision_reaches_every_consumer():
    """Found by fuzz_cvm (seed 3, graph 1484): `take` of a `where` result declares the condition's precision
    too, so a dense two ops later must not narrow its data to int16."""
    b = CvmBuilder()
    x = b.create_input([6, 4], 31)
    w = b.where(b.create_param(np.ones((6, 4), dtype=np.int32), 2), x, x)
    t = b.take(w, b.create_param(np.array([[0, 5], [7, 23], [2, 2]]), 8))
    y = b.dense(b.broadcast_max(t, t), b.create_param(_rand((3, 2), 2), 2), units=3, use_bias=False)
    assert (w.precision, t.precision) == (2, 2)  # the values are up to 31 bits
    assert pack_elements(scheduled(b.graph([y]))) == []  # every packed operand int32
    assert {v.element for v in _bufferized(b, [y]).arena_views()} == {"i32"}
    _check_bit_exact(b, [y], RNG.integers(-(1 << 30), 1 << 30, size=(6, 4)).astype(np.int32))


@pytest.mark.parametrize(("vnni", "row_bytes"), [("0", 2 * 48 * 2), ("1", 2 * 64 * 1)])
def test_conv_whose_im2col_row_is_too_large_takes_the_direct_loop_nest(monkeypatch, host, vnni, row_bytes):
    """2 groups of 36 taps: padded to 48 int16 values, or to 64 bytes (u8 x s8)."""
    from cvmc.passes.loops import ops as cvm_loops_ops

    if vnni == "1" and not host.runs("avx512-vnni"):
        pytest.skip("the host CPU has no AVX512-VNNI")
    monkeypatch.setenv("CVMC_VNNI", vnni)
    b = CvmBuilder()
    x = b.create_input([1, 8, 6, 6], 8)
    y = b.conv2d(x, b.create_param(_rand((4, 4, 3, 3)), 8), channels=4, kernel_size=(3, 3), groups=2,
                 use_bias=False)
    x0 = _rand((1, 8, 6, 6))
    monkeypatch.setattr(cvm_loops_ops, "IM2COL_LIMIT", row_bytes - 1)
    assert _kernels(b, [y]) == [["conv2d"]]  # no pack: the direct loop nest reads the operands as they are
    (conv,) = _bufferized(b, [y]).kernels
    assert [element(a) for a in conv.fn.function_type.inputs.data] == ["i32"] * 3
    _check_bit_exact(b, [y], x0)
    monkeypatch.setattr(cvm_loops_ops, "IM2COL_LIMIT", row_bytes)
    assert _kernels(b, [y]) == [["pack"], ["conv2d"]]
    _check_bit_exact(b, [y], x0)


def test_conv_operands_wider_than_16_bits_stay_int32():
    """`where` takes the condition's precision, not its values': the conv's data may not fit int16."""
    b = CvmBuilder()
    x = b.create_input([1, 2, 5, 5], 8)
    wide = b.cvm_left_shift(x, precision=30, shift_bit=20)
    data = b.where(b.create_param(np.ones((1, 2, 5, 5), dtype=np.int32), 2), wide, x)
    assert data.precision == 2
    w = b.create_param(_rand((3, 2, 3, 3)), 8)
    y = b.conv2d(data, w, channels=3, kernel_size=(3, 3), use_bias=False)
    assert pack_elements(scheduled(b.graph([y]))) == []
    assert {v.element for v in _bufferized(b, [y]).arena_views()} == {"i32"}
    _check_bit_exact(b, [y], _rand((1, 2, 5, 5)))


def test_residual_add_fuses_with_its_other_operand_as_an_extra_input():
    b = CvmBuilder()
    x = b.create_input([1, 4, 6, 6], 8)
    w = b.create_param(_rand((4, 4, 3, 3)), 8)
    conv = b.conv2d(x, w, channels=4, kernel_size=(3, 3), padding=(1, 1), use_bias=False)
    y = b.relu(b.cvm_right_shift(b.elemwise_add(b.cvm_right_shift(conv, precision=8, shift_bit=8), x),
                                 precision=8, shift_bit=1))
    kernels = _bufferized(b, [y]).kernels
    assert len(kernels) == 2
    conv = kernels[1]
    assert conv.ops == ["conv2d", "cvm_right_shift", "elemwise_add", "cvm_right_shift", "relu"]
    add = conv.body[2]
    # add(the running value, an extra argument: the input, or its packed copy read through a view)
    assert add.operands[0].owner is conv.body[1] and conv.source(add.operands[0]) is None
    assert conv.source(add.operands[1]) is not None
    _check_bit_exact(b, [y], _rand((1, 4, 6, 6)))


def test_views_make_no_kernel_and_a_shared_tensor_is_not_fused():
    b = CvmBuilder()
    x = b.create_input([2, 3, 4], 8)
    a = b.relu(x)
    t = b.flatten(b.transpose(b.reshape(a, shape=(2, 3, 2, 2)), axes=(1, 0, 2, 3)))  # a copy only at flatten
    s = b.strided_slice(a, begin=(0, 1, 0), end=(2, 3, 4), stride=(1, 1, 2))
    u = b.abs(a)  # `a` has three consumers: it is materialized, abs is its own group
    module = scheduled(b.graph([t, s, u]))
    views = [op for op in module.walk() if isinstance(op, ViewOp)]
    assert len(views) == 3  # the reshape, the transpose (over a's buffer) and the slice
    kernels = _bufferized(b, [t, s, u]).kernels
    assert [k.ops for k in kernels] == [["relu"], ["flatten"], ["abs"]]
    copy = kernels[1]  # the flatten of a transposed view: a copy of its strided layout
    (read,) = [copy.source(v) for op in copy.body for v in op.operands]
    assert read is not None and not read[0].identity and read[0].root == kernels[0].written[0].root
    _check_bit_exact(b, [t, s, u], _rand((2, 3, 4)))


def test_a_head_is_materialized_before_its_consumers_run():
    b = CvmBuilder()
    x = b.create_input([8], 8)
    h = b.negative(x)
    y = b.relu(h)
    assert _kernels(b, [h, y]) == [["negative"], ["relu"]]
    _check_bit_exact(b, [h, y], _rand((8,)))


def test_buffers_are_reused_once_their_last_reader_has_run(monkeypatch):
    monkeypatch.setenv("CVMC_VNNI", "0")  # int16 packing (the sizes below)
    b = CvmBuilder()
    x = b.create_input([1, 4, 16, 16], 8)
    y = x
    for i in range(6):
        w = b.create_param(_rand((4, 4, 3, 3)), 8, name=f"w{i}")
        conv = b.conv2d(y, w, channels=4, kernel_size=(3, 3), padding=(1, 1), use_bias=False)
        y = b.cvm_right_shift(conv, precision=8, shift_bit=8)
    program = _bufferized(b, [y]).program
    one, packed = 4 * 16 * 16 * 4, 4 * 18 * 18 * 2  # an output; a padded int16 input
    assert program.intermediate_bytes == 12 * one
    # each output lives from its conv to the next pack, each packed input from its pack to its conv
    assert program.arena_bytes == one + -(-packed // 64) * 64


# ---- the lowered module ------------------------------------------------------------------------------------


def _every_op(b, outputs):
    module = _lowered(b, outputs)
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data != "main"]
    return module, kernels


def test_kernels_are_loop_level_and_identical_groups_share_one_kernel():
    b = CvmBuilder()
    x = b.create_input([1, 4, 8, 8], 8)
    ys = []
    for i in range(2):
        w = b.create_param(_rand((4, 4, 3, 3)), 8, name=f"w{i}")
        ys.append(b.cvm_right_shift(b.conv2d(x, w, channels=4, kernel_size=(3, 3), use_bias=False),
                                    precision=8, shift_bit=8))
    gvc = b.get_valid_counts(b.reshape(ys[0], shape=(1, 36, 4)), score_threshold=0)
    half = b.strided_slice(gvc[1], begin=(0, 0, 0), end=(1, 36, 3))
    nms = b.non_max_suppression(b.concatenate(half, half, axis=2), gvc[0])
    module, kernels = _every_op(b, [ys[1], nms])
    main = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
    calls = [op for op in main.body.block.ops if isinstance(op, CallOp)]
    # one pack of the input serves both convolutions, which share a kernel
    assert [c.callee.root_reference.data for c in calls] == [
        "pack", "conv2d_cvm_right_shift", "conv2d_cvm_right_shift", "get_valid_counts", "concatenate",
        "non_max_suppression"]
    assert len(kernels) == 5
    for k in kernels:
        assert all(isinstance(t, MemRefType) for t in k.function_type.inputs.data)
        assert not k.function_type.outputs.data
        for op in k.walk():
            assert op is k or _name(op) in LOOP_LEVEL, _name(op)


# ---- semantics the corpus touches lightly --------------------------------------------------------------------


@pytest.mark.parametrize("attrs", [
    {"axis": ()}, {"axis": (1,)}, {"axis": (0, 2), "keepdims": True}, {"axis": (1,), "exclude": True},
    {"axis": (), "exclude": True}, {"axis": (0, 1, 2), "exclude": True},
])
def test_reductions_start_where_the_runtime_starts(attrs):
    b = CvmBuilder()
    x = b.create_input([3, 4, 5], 8)
    neg = b.negative(b.abs(x))  # all <= 0: max with axis=() is 0, not the largest element
    _check_bit_exact(b, [b.max(neg, **attrs), b.sum(neg, **attrs)], _rand((3, 4, 5)))


def test_division_by_zero_clipped_indices_and_where():
    b = CvmBuilder()
    x = b.create_input([4, 5], 8)
    d = b.broadcast_div(x, b.create_param(np.array([0, 1, -1, 3, 0]), 3))
    idx = b.create_param(np.array([[-5, 0], [2, 99]]), 8)
    t0 = b.take(x, idx)
    t1 = b.take(x, idx, axis=1)
    lut = b.cvm_lut(x, b.create_param(np.arange(-10, 10), 5), in_dim=20)
    cond = b.create_param(np.array([[1, 0, 0, 2, 0]] * 4), 3)  # a condition per row is undefined in the runtime
    w = b.where(cond, x, d)
    g = b.broadcast_greater(x, b.create_param(np.array([[0], [5], [-5], [127]]), 8))
    _check_bit_exact(b, [d, t0, t1, lut, w, g], _rand((4, 5)))


def test_pooling_shifts_and_gathers():
    b = CvmBuilder()
    x = b.create_input([1, 2, 5, 7], 8)
    p = b.max_pool2d(b.negative(b.abs(x)), pool_size=(3, 3), strides=(2, 2), padding=(1,), ceil_mode=True)
    s = b.cvm_right_shift(b.cvm_left_shift(x, precision=16, shift_bit=7), precision=6, shift_bit=3)
    c = b.cvm_precision(b.clip(x, a_min=-100, a_max=3))
    u = b.upsampling(x, scale=2)
    r = b.repeat(x, repeats=3, axis=-1)
    t = b.tile(x, reps=(2, 1, 1, 1, 2))
    neg = b.strided_slice(x, begin=(0, 1, 4, 6), end=(1, 0, 0, 0), stride=(1, -1, -2, -3))
    _check_bit_exact(b, [p, s, c, u, r, t, neg], _rand((1, 2, 5, 7)))


def test_dilated_grouped_conv_and_dense_with_bias():
    b = CvmBuilder()
    x = b.create_input([2, 4, 9, 8], 8)
    w = b.create_param(_rand((6, 2, 3, 2)), 8)
    bias = b.create_param(_rand((6,), 20), 20)
    y = b.conv2d(x, w, bias, channels=6, kernel_size=(3, 2), strides=(2, 1), padding=(2, 1), dilation=(2, 3),
                 groups=2)
    f = b.flatten(b.cvm_right_shift(y, precision=8, shift_bit=12))
    dw = b.create_param(_rand((5, f.shape[1])), 8)
    z = b.dense(f, dw, b.create_param(_rand((5,), 8), 8), units=5)
    _check_bit_exact(b, [y, z], _rand((2, 4, 9, 8)))


def test_detection_ops():
    b = CvmBuilder()
    x = b.create_input([2, 12, 6], 8)
    count, boxes = b.get_valid_counts(x, score_threshold=10)
    kept = b.non_max_suppression(boxes, count, iou_threshold=30, top_k=9, max_output_size=6)
    forced = b.non_max_suppression(boxes, count, iou_threshold=1, force_suppress=True)
    data = _rand((2, 12, 6), 8)
    data[:, :, 0] = RNG.integers(-1, 3, size=(2, 12))  # class ids, some negative
    data[:, :, 2:4] = np.abs(data[:, :, 2:4]) // 2
    data[:, :, 4:6] = data[:, :, 2:4] + np.abs(data[:, :, 4:6]) // 2
    _check_bit_exact(b, [count, boxes, kept, forced], data)
