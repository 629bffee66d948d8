"""Every bound, at the bound and one past it (issue 16), on every compiled path.

A bound of the CVM rules (`cvm_rules`: kernel spans, precision limits, shape limits, shift ranges, clip bounds)
accepts the case at the bound, which then runs bit-exactly on the reference, the CPU JIT and the emulated CUDA
grid (`cuda_host`), and rejects the case one past it for that rule (its message). A fast path chosen by a bound
(the int16 dot products of conv2d and dense) is taken at the bound and not one past it, and both give the
reference's bits. NMS's iou is checked where its int64 product would overflow and where its union matters.
"""

from __future__ import annotations

import numpy as np
import pytest
from cuda_host import HostDevice, host_compiler
from scheduled import bufferized, element, main_of, packs, scheduled

import cvmc.runtime.devices.cuda as rc
from cvmc import CvmBuilder, CVMLogicError, CVMRuntimeError
from cvmc.dialects import cvm_rules as rules
from cvmc.passes.cvm_value_bits import ValueBits
from cvmc.passes.loops.target import DEFAULT
from cvmc.runtime.devices.cpu import compile_graph
from cvmc.runtime.frontend.cvm_ir import graph_to_module
from cvmc.runtime.references.cvm import run_graph

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
RNG = np.random.default_rng(16)


def three_ways(builder: CvmBuilder, outputs, inputs, capfd=None) -> list[list[np.ndarray]]:
    """The heads for each input on the reference, checked equal, bit for bit, on the CPU and the emulated CUDA
    grid (a UBSan report from the emulated kernels fails too)."""
    graph = builder.graph(outputs)
    runners = [("cpu", compile_graph(graph, cache=False))]
    if host_compiler() is not None:
        runners.append(("cuda", rc.compile_graph(graph, device=HostDevice())))
    results = []
    for x in inputs:
        want = run_graph(graph, x)
        for name, runner in runners:
            got = runner(x)
            for g, w in zip(got, want, strict=True):
                assert g.dtype == np.int32 and g.shape == w.shape, name
                np.testing.assert_array_equal(g, w, err_msg=name)
        results.append(want)
    if capfd is not None:
        assert "runtime error" not in capfd.readouterr().err
    return results


def extremes(shape, precision: int) -> list[np.ndarray]:
    """The input at +bound, at -bound, and random values within the precision."""
    bound = rules.precision_bound(precision)
    return [np.full(shape, bound, np.int32), np.full(shape, -bound, np.int32),
            RNG.integers(-bound, bound + 1, shape).astype(np.int32)]  # fmt: skip


def _infer(op: str, shapes, precisions, **attrs):
    return rules.infer(op, rules.default_attrs(op, **attrs), shapes, precisions)


# --------------------------------------------------------------------------------------------------------------
# conv2d: the dilated kernel fits the padded input
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.compiled
def test_conv2d_dilated_kernel_equal_to_the_padded_input_runs(capfd):
    """Dilated kernel 5 x 5 over a padded 5 x 5 input (3 x 3 padded by 1): one output; and an undilated 3 x 4
    kernel over an unpadded 3 x 4 input."""
    b = CvmBuilder()
    x = b.create_input([1, 2, 3, 4], 8)
    w = b.create_param(RNG.integers(-127, 128, (2, 2, 3, 2)), 8)
    y = b.conv2d(x, w, channels=2, kernel_size=(3, 2), padding=(1, 0), dilation=(2, 3), use_bias=False)
    w2 = b.create_param(RNG.integers(-127, 128, (3, 2, 3, 4)), 8)
    z = b.conv2d(x, w2, channels=3, kernel_size=(3, 4), use_bias=False)
    assert y.shape == (1, 2, 1, 1) and z.shape == (1, 3, 1, 1)
    three_ways(b, [y, z], extremes((1, 2, 3, 4), 8), capfd)


def test_conv2d_dilated_kernel_equal_to_the_padded_input_is_accepted():
    for shape, padding in (((1, 2, 3, 4), (1, 0)), ((1, 2, 5, 4), (0, 0)), ((1, 2, 1, 2), (2, 1))):
        sig = _infer("conv2d", [shape, (2, 2, 3, 2)], [8, 8], channels=2, kernel_size=(3, 2), padding=padding,
                     dilation=(2, 3), use_bias=False)  # fmt: skip
        assert sig.shapes == ((1, 2, 1, 1),)


@pytest.mark.parametrize(("shape", "padding", "dilation", "which"), [
    ((1, 2, 2, 4), (1, 0), (2, 3), "height 5 exceeds padded input height 4"),
    ((1, 2, 3, 3), (1, 0), (2, 3), "width 4 exceeds padded input width 3"),
    ((1, 2, 3, 4), (0, 0), (2, 3), "height 5 exceeds padded input height 3"),
    ((1, 2, 3, 1), (1, 1), (2, 3), "width 4 exceeds padded input width 3"),
])  # fmt: skip
def test_conv2d_dilated_kernel_one_past_the_padded_input_is_rejected(shape, padding, dilation, which):
    with pytest.raises(CVMLogicError, match=f"dilated kernel {which}"):
        _infer("conv2d", [shape, (2, 2, 3, 2)], [8, 8], channels=2, kernel_size=(3, 2), padding=padding,
               dilation=dilation, use_bias=False)  # fmt: skip


def test_conv2d_and_dense_precision_limits():
    for op, shapes, attrs in (("conv2d", [(1, 1, 3, 3), (1, 1, 3, 3)], {"channels": 1, "kernel_size": (3, 3)}),
                              ("dense", [(2, 4), (3, 4)], {"units": 3})):  # fmt: skip
        assert _infer(op, shapes, [8, 8], use_bias=False, **attrs).precisions == (8 + 8 + 4 if op == "conv2d"
                                                                                   else 8 + 8 + 3,)
        with pytest.raises(CVMLogicError, match="expected data precision <= 8, got 9"):
            _infer(op, shapes, [9, 8], use_bias=False, **attrs)
        with pytest.raises(CVMLogicError, match="expected weight precision <= 8, got 9"):
            _infer(op, shapes, [8, 9], use_bias=False, **attrs)


# --------------------------------------------------------------------------------------------------------------
# The int16 fast path of conv2d and dense: operands of 16 bits take it, of 17 bits do not
# --------------------------------------------------------------------------------------------------------------


def _int16_graph(bits: int, weight_side: bool = False):
    """conv2d and dense whose data (or dense's weight) declares precision 2 (`where` takes the condition's) and
    holds `bits`-bit values: saturated to exactly 2^(bits-1) - 1 in magnitude."""
    b = CvmBuilder()
    x = b.create_input([2, 3, 4, 4], 17)
    wide = x if bits == 17 else b.cvm_clip(x, precision=bits)
    cond = b.create_param(np.ones((2, 3, 4, 4), np.int32), 2)
    data = b.where(cond, wide, wide)
    assert data.precision == 2
    if weight_side:
        rows = b.create_param(RNG.integers(-127, 128, (5, 48)), 8)
        y = b.dense(rows, b.reshape(data, shape=(2, 48)), units=2, use_bias=False)
        return b, [y]
    w = b.create_param(RNG.integers(-127, 128, (4, 3, 3, 3)), 8)
    conv = b.conv2d(data, w, channels=4, kernel_size=(3, 3), padding=(1, 1), use_bias=False)
    wd = b.create_param(RNG.integers(-127, 128, (3, 48)), 8)
    dense = b.dense(b.flatten(data), wd, units=3, use_bias=False)
    return b, [conv, dense]


def _packed_elements(b: CvmBuilder, outputs) -> set[str]:
    """The element types of the operands conv2d and dense read packed (the `cvm_sched.pack`s, params packed at
    compile time and the pack kernels' outputs) and of the arena's buffers, for the default target."""
    graph = b.graph(outputs)
    main = main_of(graph_to_module(graph))
    bits = ValueBits.of(main)
    assert max(bits.bits(r) for op in main.walk() for r in op.results) >= 16
    packed = {element(p.result.type) for p in packs(scheduled(graph, DEFAULT))}
    return packed | {v.element for v in bufferized(graph, DEFAULT).arena_views()}


@pytest.mark.compiled
@pytest.mark.parametrize("weight_side", [False, True], ids=["data", "weight"])
def test_int16_path_at_16_bits_and_not_at_17(weight_side, capfd):
    b16, out16 = _int16_graph(16, weight_side)
    b17, out17 = _int16_graph(17, weight_side)
    assert "i16" in _packed_elements(b16, out16)
    assert "i16" not in _packed_elements(b17, out17)
    top = np.full((2, 3, 4, 4), (1 << 16) - 1, np.int32)  # 65535: 16 bits of magnitude, not an int16
    mixed = top.copy()
    mixed[0, ::2] = -((1 << 16) - 1)
    for b, outs in ((b16, out16), (b17, out17)):
        three_ways(b, outs, [top, -top, mixed], capfd)  # 65535 as an int16 would be -1


@pytest.mark.compiled
def test_dense_on_16_bit_values_matches_a_hand_computed_sum():
    """The probe of issue 16: 40001 is no int16; the 17-bit dense must not take the int16 path."""
    b = CvmBuilder()
    x = b.create_input([1, 2], 17)
    data = b.where(b.create_param(np.ones((1, 2), np.int32), 2), x, x)
    y = b.dense(data, b.create_param(np.array([[1, 1]]), 2), units=1, use_bias=False)
    (out,) = three_ways(b, [y], [np.array([[40000, 1]], np.int32)])[0]
    assert out.tolist() == [[40001]]


# --------------------------------------------------------------------------------------------------------------
# Precision, shift and clip bounds
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.compiled
def test_precision_limits_1_and_32_run(capfd):
    b = CvmBuilder()
    x = b.create_input([2, 5], 32)
    outs = [b.cvm_clip(x, precision=1), b.cvm_clip(x, precision=32), b.cvm_clip(x, precision=2),
            b.cvm_right_shift(x, precision=32, shift_bit=32), b.cvm_right_shift(x, precision=1, shift_bit=1),
            b.cvm_right_shift(x, precision=32, shift_bit=1)]  # fmt: skip
    row = [INT32_MIN + 1, INT32_MAX, 1 << 30, -(1 << 30) - 1, 0]
    results = three_ways(b, outs, [np.array([row, [-1, 1, 2, -2, 3]], np.int32)], capfd)[0]
    clip1, clip32, clip2, shift32, shift1, half = (r.tolist() for r in results)
    assert clip1 == [[0] * 5] * 2
    assert clip32 == [row, [-1, 1, 2, -2, 3]]
    assert clip2 == [[-1, 1, 1, -1, 0], [-1, 1, 1, -1, 1]]
    assert shift32 == [[0] * 5] * 2  # ((x >> 31) + 1) >> 1 is 0 for every int32
    assert shift1 == [[0] * 5] * 2
    assert half[0] == [-(1 << 30) + 1, -(1 << 30), 1 << 29, -(1 << 29), 0]  # INT32_MAX + 1 wraps in int32


@pytest.mark.parametrize("op", ["cvm_clip", "cvm_right_shift", "cvm_left_shift"])
@pytest.mark.parametrize("precision", [0, 33])
def test_precision_one_past_its_limits_is_rejected(op, precision):
    attrs = {} if op == "cvm_clip" else {"shift_bit": 1}
    with pytest.raises(CVMLogicError, match=rf"expected 'precision' in \[1, 32\], got {precision}"):
        _infer(op, [(3,)], [8], precision=precision, **attrs)


@pytest.mark.parametrize("op", ["cvm_right_shift", "cvm_left_shift"])
def test_shift_bit_limits(op):
    assert _infer(op, [(3,)], [1], precision=8, shift_bit=1).precisions == (8,)
    if op == "cvm_right_shift":
        assert _infer(op, [(3,)], [32], precision=8, shift_bit=32).precisions == (8,)
    for bad in (0, 33):
        with pytest.raises(CVMLogicError, match=rf"expected 'shift_bit' in \[1, 32\], got {bad}"):
            _infer(op, [(3,)], [8], precision=8, shift_bit=bad)


@pytest.mark.compiled
def test_left_shift_input_precision_plus_shift_at_32_runs(capfd):
    b = CvmBuilder()
    x = b.create_input([4], 8)
    y = b.cvm_left_shift(x, precision=32, shift_bit=24)  # 8 + 24 = 32
    z = b.cvm_left_shift(b.cvm_clip(x, precision=2), precision=32, shift_bit=30)  # 2 + 30 = 32
    (ys, zs) = three_ways(b, [y, z], [np.array([127, -127, 1, 0], np.int32)], capfd)[0]
    assert ys.tolist() == [127 << 24, -127 << 24, 1 << 24, 0]
    assert zs.tolist() == [1 << 30, -(1 << 30), 1 << 30, 0]


def test_left_shift_input_precision_plus_shift_limit():
    assert _infer("cvm_left_shift", [(4,)], [8], precision=32, shift_bit=24).precisions == (32,)
    with pytest.raises(CVMRuntimeError, match="input precision 8 plus 'shift_bit' 25 exceeds 32"):
        _infer("cvm_left_shift", [(4,)], [8], precision=32, shift_bit=25)


def test_slice_like_takes_no_more_than_the_data():
    assert _infer("slice_like", [(4, 3), (2, 3)], [8, 8], axis=(0,)).shapes == ((2, 3),)
    with pytest.raises(CVMLogicError, match="expected shape_like dim 1 <= 3, got 4"):
        _infer("slice_like", [(4, 3), (2, 4)], [8, 8], axis=(0, 1))


def test_unknown_attribute_classes():
    """An operator without a parameter parser refuses any attribute (a VERIFY: logic); one with a parser refuses an
    unknown key (dmlc's ParamError: runtime)."""
    assert rules.parse_attrs("relu", {}) == {}
    with pytest.raises(CVMLogicError, match=r"operator relu should not have attributes, got \['alpha'\]"):
        rules.parse_attrs("relu", {"alpha": "1"})
    with pytest.raises(CVMRuntimeError, match="Cannot find argument 'alpha'"):
        rules.parse_attrs("repeat", {"repeats": "2", "alpha": "1"})


def test_where_condition_shape():
    assert _infer("where", [(3, 4), (3, 4), (3, 4)], [2, 8, 8]).shapes == ((3, 4),)
    assert _infer("where", [(3,), (3,), (3,)], [2, 8, 8]).shapes == ((3,),)
    # a condition per row passes the runtime's shape check, but its kernel copies a quarter of each row (DEVIATIONS)
    with pytest.raises(CVMLogicError, match="undefined in cvm-runtime: a condition of shape"):
        _infer("where", [(3,), (3, 4), (3, 4)], [2, 8, 8])
    for cond in ((2,), (4,), (3, 1), (1, 4)):
        with pytest.raises(CVMLogicError, match="expected condition of shape"):
            _infer("where", [cond, (3, 4), (3, 4)], [2, 8, 8])


def test_concatenate_takes_at_least_one_input():
    with pytest.raises(CVMLogicError, match="expected at least one input"):
        rules.infer("concatenate", rules.default_attrs("concatenate"), [], [])


def test_concatenate_inputs_differ_only_on_the_axis():
    assert _infer("concatenate", [(2, 3), (2, 5)], [8, 8], axis=1).shapes == ((2, 8),)
    with pytest.raises(CVMLogicError, match="expected inputs equal except on axis 1"):
        _infer("concatenate", [(2, 3), (3, 5)], [8, 8], axis=1)
    for other in ((2, 3, 1), (2,)):
        with pytest.raises(CVMLogicError, match="expected inputs of rank 2"):
            _infer("concatenate", [(2, 3), other], [8, 8], axis=1)


def test_output_precision_limit():
    assert _infer("relu", [(2,)], [1]).precisions == (1,)
    with pytest.raises(CVMLogicError, match=r"output precision would be 0, expected in \[1, 32\]"):
        _infer("relu", [(2,)], [0])
    assert _infer("elemwise_add", [(2,), (2,)], [31, 31]).precisions == (32,)
    with pytest.raises(CVMLogicError, match="output precision would be 33, expected at most 32"):
        _infer("elemwise_add", [(2,), (2,)], [32, 31])


@pytest.mark.compiled
def test_output_precision_32_runs(capfd):
    b = CvmBuilder()
    x = b.create_input([3], 31)
    y = b.elemwise_add(x, x)
    assert y.precision == 32
    bound = (1 << 30) - 1
    (out,) = three_ways(b, [y], [np.array([bound, -bound, 1], np.int32)], capfd)[0]
    assert out.tolist() == [2 * bound, -2 * bound, 2]


def test_input_and_param_precision_limits():
    b = CvmBuilder()
    b.create_input([2], 32)
    b.create_param(np.array([INT32_MAX, -INT32_MAX]), 32)
    b.create_param(np.array([0, 0]), 1)
    for bad in (0, 33):
        with pytest.raises(CVMLogicError, match=f"{bad}"):
            b.create_param(np.array([0]), bad)
    with pytest.raises(CVMLogicError, match=r"expected values of precision 8 \(\|x\| <= 127\), got -128 at index 1"):
        b.create_param(np.array([127, -128]), 8)
    with pytest.raises(CVMLogicError, match=r"precision 1 \(\|x\| <= 0\), got 1 at index 0"):
        b.create_param(np.array([1]), 1)


def test_clip_bounds():
    top = (1 << 31) - 2  # next_precision(2^31 - 2) = 32; 2^31 - 1 would need 33
    assert _infer("clip", [(3,)], [32], a_min=-top, a_max=top).precisions == (32,)
    with pytest.raises(CVMLogicError, match="output precision would be 33"):
        _infer("clip", [(3,)], [32], a_min=-top, a_max=top + 1)
    assert _infer("clip", [(3,)], [8], a_min=4, a_max=5).precisions == (4,)
    with pytest.raises(CVMLogicError, match="expected 'a_min' < 'a_max', got 5 and 5"):
        _infer("clip", [(3,)], [8], a_min=5, a_max=5)


@pytest.mark.compiled
def test_clip_bounds_run(capfd):
    top = (1 << 31) - 2
    b = CvmBuilder()
    x = b.create_input([4], 32)
    wide, narrow = b.clip(x, a_min=-top, a_max=top), b.clip(x, a_min=4, a_max=5)
    got = three_ways(b, [wide, narrow], [np.array([INT32_MIN + 1, INT32_MAX, 4, 6], np.int32)], capfd)[0]
    assert [g.tolist() for g in got] == [[-top, top, 4, 6], [4, 5, 4, 5]]


# --------------------------------------------------------------------------------------------------------------
# Shape limits
# --------------------------------------------------------------------------------------------------------------


def test_shape_limits():
    assert rules.check_shape((1,) * rules.MAX_NDIM) == (1,) * 6
    with pytest.raises(CVMLogicError, match="expected shape to have 1 to 6 dims, got 7"):
        rules.check_shape((1,) * (rules.MAX_NDIM + 1))
    with pytest.raises(CVMLogicError, match="expected shape to have 1 to 6 dims, got 0"):
        rules.check_shape(())
    assert rules.check_shape((rules.MAX_DIM, 1)) == (1 << 24, 1)
    for bad in (rules.MAX_DIM + 1, 0):
        with pytest.raises(CVMLogicError, match=r"expected every dim of shape in \[1, 16777216\]"):
            rules.check_shape((2, bad))
    assert rules.check_shape((1 << 15, 1 << 15))
    with pytest.raises(CVMLogicError, match="expected shape to have at most 1073741824 elements, got 1073774592"):
        rules.check_shape((1 << 15, (1 << 15) + 1))
    with pytest.raises(CVMLogicError, match="at most 6 dims|1 to 6 dims"):
        _infer("expand_dims", [(1, 1, 1, 1, 1, 1)], [8], axis=0)
    assert _infer("expand_dims", [(1, 1, 1, 1, 1)], [8], axis=5).shapes == ((1,) * 6,)


@pytest.mark.compiled
def test_six_dims_and_a_dim_of_2_to_the_24_run(capfd):
    b = CvmBuilder()
    x = b.create_input([2, 1, 3, 1, 2, 2], 8)
    y = b.relu(b.elemwise_add(x, x))
    three_ways(b, [y, b.sum(x, axis=(5, 2))], extremes((2, 1, 3, 1, 2, 2), 8), capfd)
    b = CvmBuilder()
    x = b.create_input([rules.MAX_DIM], 8)
    y = b.cvm_right_shift(x, precision=4, shift_bit=2)
    x0 = (np.arange(rules.MAX_DIM, dtype=np.int32) % 255 - 127).astype(np.int32)
    (out,) = three_ways(b, [y], [x0], capfd)[0]
    assert out.shape == (1 << 24,)
    np.testing.assert_array_equal(out, np.clip(((x0 >> 1) + 1) >> 1, -7, 7))


# --------------------------------------------------------------------------------------------------------------
# Attribute bounds of the other rules
# --------------------------------------------------------------------------------------------------------------

A = rules.MAX_ATTR
CONV = {"channels": 1, "kernel_size": (1, 1), "use_bias": False}
RULE_BOUNDS = [
    # (op, shapes, precisions, attrs at the bound, attrs one past, message one past)
    ("conv2d", [(1, 1, 3, 3), (1, 1, 1, 1)], [8, 8], {**CONV, "strides": (A, 1)}, {**CONV, "strides": (A + 1, 1)},
     r"'strides' in \[1, 4096\], got 4097"),
    ("conv2d", [(1, 1, 3, 3), (1, 1, 1, 1)], [8, 8], {**CONV, "strides": (1, 1)}, {**CONV, "strides": (1, 0)},
     r"'strides' in \[1, 4096\], got 0"),
    ("conv2d", [(1, 1, 3, 3), (1, 1, 1, 1)], [8, 8], {**CONV, "dilation": (1, A)}, {**CONV, "dilation": (1, A + 1)},
     r"'dilation' in \[1, 4096\], got 4097"),
    ("conv2d", [(1, 1, 3, 3), (1, 1, 1, 1)], [8, 8], {**CONV, "padding": (0, A)}, {**CONV, "padding": (0, A + 1)},
     r"'padding' in \[0, 4096\], got 4097"),
    ("conv2d", [(1, 1, 3, 3), (1, 1, 1, 1)], [8, 8], {**CONV, "padding": (0, 0)}, {**CONV, "padding": (-1, 0)},
     r"'padding' in \[0, 4096\], got -1"),
    ("conv2d", [(1, 2, 3, 3), (2, 1, 1, 1)], [8, 8], {**CONV, "channels": 2, "groups": 2},
     {**CONV, "channels": 2, "groups": 0}, r"'groups' 0 > 0 dividing the input channels"),
    ("conv2d", [(1, 1, 3, 3), (1, 1, 1, 1)], [8, 8], CONV, {**CONV, "channels": 0},
     r"every dim of output 0 in \[1, 16777216\], got \[1, 0, 3, 3\]"),
    ("max_pool2d", [(1, 1, 4, 4)], [8], {"pool_size": (3, 3), "padding": (2, 2)},
     {"pool_size": (3, 3), "padding": (3, 2)}, r"expected 'padding' \[3, 2\] smaller than 'pool_size' \[3, 3\]"),
    ("max_pool2d", [(1, 1, 4, 5)], [8], {"pool_size": (4, 5)}, {"pool_size": (5, 5)},
     r"'pool_size' in \[0, 4\], got 5"),
    ("max_pool2d", [(1, 1, 4, 3)], [8], {"pool_size": (6, 5), "padding": (1, 1)},
     {"pool_size": (6, 6), "padding": (1, 1)}, r"'pool_size' in \[0, 5\], got 6"),
    ("max_pool2d", [(1, 1, 4, 3)], [8], {"pool_size": (6, 5), "padding": (1, 1)},
     {"pool_size": (7, 5), "padding": (1, 1)}, r"'pool_size' in \[0, 6\], got 7"),
    ("max_pool2d", [(1, 1, 5, 5)], [8], {"pool_size": (2, 2), "strides": (1, 2), "ceil_mode": True, "padding": (0, 0)},
     {"pool_size": (2, 2), "strides": (1, 2), "ceil_mode": True, "padding": (0, 1)},
     "in ceil mode the last pooling window starts inside the padding"),
    ("max_pool2d", [(1, 1, 4, 5)], [8], {"pool_size": (1, 1), "strides": (A, 1)},
     {"pool_size": (1, 1), "strides": (A + 1, 1)}, r"'strides' in \[1, 4096\], got 4097"),
    ("max_pool2d", [(1, 1, 5, 5)], [8], {"pool_size": (2, 2), "strides": (2, 2), "ceil_mode": True, "padding": (0,)},
     {"pool_size": (2, 2), "strides": (2, 2), "ceil_mode": True, "padding": (1, 0)},
     "in ceil mode the last pooling window starts inside the padding"),
    ("max_pool2d", [(1, 1, 4, 4)], [8], {"pool_size": (3, 3), "padding": (2, 2)},
     {"pool_size": (3, 3), "padding": (2, 3)}, r"expected 'padding' \[2, 3\] smaller than 'pool_size' \[3, 3\]"),
    ("max_pool2d", [(1, 1, 4, 4)], [8], {"pool_size": (3, 3), "padding": (0, 0)},
     {"pool_size": (3, 3), "padding": (0, -1)}, r"'padding' in \[0, 4096\], got -1"),
    ("where", [(3, 4), (3, 4), (3, 4)], [2, 8, 8], {}, {}, None),
    ("non_max_suppression", [(1, 4, 6), (1,)], [8, 8], {"coord_start": 2}, {"coord_start": 3},
     "expected 'coord_start' == 2, got 3"),
    ("non_max_suppression", [(1, 4, 6), (1,)], [8, 8], {"score_index": 1}, {"score_index": 0},
     "expected 'score_index' == 1, got 0"),
    ("non_max_suppression", [(1, 4, 6), (1,)], [8, 8], {"id_index": 0}, {"id_index": 1},
     "expected 'id_index' == 0, got 1"),
    ("squeeze", [(2, 1, 3)], [8], {"axis": (1,)}, {"axis": (2,)}, "expected dim 2 of size 1 to squeeze, got 3"),
    ("squeeze", [(2, 1, 3)], [8], {"axis": (-2,)}, {"axis": (1, 0)}, "expected dim 0 of size 1 to squeeze, got 2"),
    ("slice_like", [(4, 3), (4, 3)], [8, 8], {"axis": (0, 1)}, {"axis": (0,)}, None),
    ("slice_like", [(4, 3, 2), (4, 3)], [8, 8], {"axis": (1,)}, {"axis": (2,)}, r"'axis' in \[0, 1\], got 2"),
    ("slice_like", [(4, 3), (4, 3)], [8, 8], {"axis": (1,)}, {"axis": (1,)}, None),
    ("upsampling", [(1, 1, 2, 2)], [8], {"scale": A}, {"scale": A + 1}, r"'scale' in \[1, 4096\], got 4097"),
    ("upsampling", [(1, 1, 2, 2)], [8], {"scale": 1}, {"scale": 0}, r"'scale' in \[1, 4096\], got 0"),
    ("get_valid_counts", [(1, 4, 2)], [8], {}, {}, None),
    ("get_valid_counts", [(1, 4, 31)], [8], {}, {}, None),
    ("non_max_suppression", [(1, 4, 6), (1,)], [8, 8], {"iou_threshold": 1}, {"iou_threshold": 0},
     "expected 'iou_threshold' > 0, got 0"),
    ("repeat", [(2, 3)], [8], {"repeats": 1, "axis": -2}, {"repeats": 0, "axis": -2}, "expected 'repeats' > 0, got 0"),
    ("repeat", [(2, 3)], [8], {"repeats": 1, "axis": 1}, {"repeats": 1, "axis": 2}, r"'axis' in \[-2, 1\], got 2"),
    ("repeat", [(2, 3)], [8], {"repeats": 1, "axis": -2}, {"repeats": 1, "axis": -3}, r"'axis' in \[-2, 1\], got -3"),
    ("tile", [(2,)], [8], {"reps": (A,)}, {"reps": (A + 1,)}, r"'reps' in \[1, 4096\], got 4097"),
    ("tile", [(2,)], [8], {"reps": (1,)}, {"reps": (0,)}, r"'reps' in \[1, 4096\], got 0"),
    ("expand_dims", [(2, 3)], [8], {"axis": 2}, {"axis": 3}, r"'axis' in \[-3, 2\], got 3"),
    ("expand_dims", [(2, 3)], [8], {"axis": -3}, {"axis": -4}, r"'axis' in \[-3, 2\], got -4"),
    ("concatenate", [(2, 3), (2, 1)], [8, 8], {"axis": -1}, {"axis": -3}, r"'axis' in \[-2, 1\], got -3"),
    ("concatenate", [(2, 3)], [8], {"axis": 0}, {"axis": 2}, r"'axis' in \[-2, 1\], got 2"),
    ("sum", [(2, 3, 4)], [8], {"axis": (0, 1, 2)}, {"axis": (0, 1, 1)}, "expected distinct 'axis' values"),
    ("max", [(2, 3, 4)], [8], {"axis": (2, 0)}, {"axis": (2, -1)}, "expected distinct 'axis' values"),
    ("slice_like", [(4, 3), (4, 2)], [8, 8], {"axis": (1,)}, {"axis": (2,)}, r"'axis' in \[0, 1\], got 2"),
    ("take", [(4, 3), (2,)], [8, 8], {"axis": 1}, {"axis": 2}, r"'axis' in \[-2, 1\], got 2"),
    ("sum", [(4, 3)], [8], {"axis": (-2,)}, {"axis": (-3,)}, r"'axis' in \[0, 1\], got -1"),  # -3 + rank
    ("transpose", [(4, 3)], [8], {"axes": (1, 0)}, {"axes": (2, 0)}, r"'axes' in \[-2, 1\], got 2"),
    ("strided_slice", [(4, 3)], [8], {"begin": (3,), "end": (4,)}, {"begin": (4,), "end": (4,)},
     "expected a non-empty range on axis 0, got begin 4, end 4"),
    ("strided_slice", [(4, 3)], [8], {"begin": (2,), "end": (1,), "stride": (-1,)},
     {"begin": (2,), "end": (2,), "stride": (-1,)}, "expected a non-empty range on axis 0, got begin 2, end 2"),
    ("strided_slice", [(4, 3)], [8], {"begin": (0, 0), "end": (4, 3)}, {"begin": (0, 0, 0), "end": (4, 3)},
     "expected at most 2 values in 'begin', got 3"),
]  # fmt: skip


@pytest.mark.parametrize(("op", "shapes", "precisions", "ok", "past", "message"), RULE_BOUNDS,
                         ids=[f"{r[0]}-{i}" for i, r in enumerate(RULE_BOUNDS)])  # fmt: skip
def test_rule_bound(op, shapes, precisions, ok, past, message):
    _infer(op, shapes, precisions, **ok)
    if message is not None:
        with pytest.raises(CVMLogicError, match=message):
            _infer(op, shapes, precisions, **past)


@pytest.mark.parametrize(("k", "ok"), [(1, False), (2, True), (31, True), (32, False)])
def test_get_valid_counts_box_width(k, ok):
    if ok:
        assert _infer("get_valid_counts", [(2, 3, k)], [8]).shapes == ((2,), (2, 3, k))
    else:
        with pytest.raises(CVMLogicError, match=rf"expected data.shape\[2\] in \[2, 31\], got {k}"):
            _infer("get_valid_counts", [(2, 3, k)], [8])


def test_reshape_code_bounds():
    assert rules.reshape_shape((2, 3), (-3,)) == (6,)
    with pytest.raises(CVMLogicError, match="reshape code -3 at position 1 needs two input dims"):
        rules.reshape_shape((2, 3), (0, -3))
    assert rules.reshape_shape((6,), (-4, 2, 3)) == (2, 3)
    assert rules.reshape_shape((6,), (-4, 2, -1)) == rules.reshape_shape((6,), (-4, -1, 3)) == (2, 3)
    with pytest.raises(CVMLogicError, match="reshape code -4 at position 1 has no input dim to split"):
        rules.reshape_shape((6,), (0, -4, 2, 3))
    with pytest.raises(CVMLogicError, match="reshape code -4 at position 0 needs two values"):
        rules.reshape_shape((6,), (-4, 2))
    assert rules.reshape_shape((5, 6, 7), (0, -4, 2, 3, 0)) == (5, 2, 3, 7)
    for codes, message in (((-4, -1, 0), "undefined in cvm-runtime: reshape code -4 splits by 0"),
                           ((-4, -1, 4), "Split dims 1, 4 do not divide original dim 6"),
                           ((-4, 0, -1), "undefined in cvm-runtime: reshape code -4 splits by 0"),
                           ((-4, 4, -1), "Split dims 4, 1 do not divide original dim 6")):
        with pytest.raises(CVMLogicError, match=message):
            rules.reshape_shape((6,), codes)
    assert rules.reshape_shape((6,), (-1, 3)) == (2, 3)
    assert rules.reshape_shape((6,), (-4, 1, -1)) == (1, 6) and rules.reshape_shape((6,), (-4, -1, 1)) == (6, 1)
    assert rules.reshape_shape((2, 3), (0, 0)) == (2, 3)
    with pytest.raises(CVMLogicError, match="reshape code 0 at position 1 has no input dim to copy"):
        rules.reshape_shape((6,), (0, 0))
    with pytest.raises(CVMLogicError, match="One and only one dim can be inferred"):
        rules.reshape_shape((6,), (-1, -1))
    with pytest.raises(CVMLogicError, match=r"'shape' \[-1, 4\] gives \[1, 4\]: 4 elements, expected 6"):
        rules.reshape_shape((6,), (-1, 4))
    for a, b, message in ((-1, -1, "Split dims cannot both be -1"), (-2, 3, "Split dims -2, 3 do not divide"),
                          (3, -2, "Split dims 3, -2 do not divide")):
        with pytest.raises(CVMLogicError, match=message):
            rules.reshape_shape((6,), (-4, a, b))


def test_strided_slice_clamps_to_the_dims():
    """begin and end are clamped to [0, dim] for a positive stride and to [-1, dim - 1] for a negative one."""
    assert _infer("strided_slice", [(4,)], [8], begin=(10,), end=(-5,), stride=(-1,)).shapes == ((4,),)
    assert _infer("strided_slice", [(4,)], [8], begin=(-10,), end=(10,), stride=(1,)).shapes == ((4,),)
    assert rules.strided_slice_bounds((4, 3), (10, 0), (-5, 3), (-2, 1)) == [(3, -2, 2), (0, 1, 3)]
    # defaults past the given values: begin 0 or dim - 1, end dim or (below) 0, by the stride's sign
    # axis 1 of (4, 3) from 2 with stride -1 and the default end: cvm-runtime refuses it (Begin=2, End=3)
    with pytest.raises(CVMLogicError, match="non-empty range on axis 1"):
        _infer("strided_slice", [(4, 3)], [8], begin=(3, 2), end=(0,), stride=(-1, -1))
    assert _infer("strided_slice", [(4, 3)], [8], begin=(1,), end=(4,), stride=(1, 1)).shapes == ((3, 3),)
    assert _infer("strided_slice", [(4,)], [8], begin=(0,), end=(-1,)).shapes == ((3,),)  # end -1 is dim - 1


def test_graph_memory_limit():
    """GetOps (infer_attr.cc:139): 5 x every tensor's size <= 2^40, counted apart from the ops. 204 tensors of 2^30
    values (the input and 203 relus) cost 1020 x 2^30 <= 2^40; one relu more, 1025 x 2^30, does not fit."""
    for relus, ok in ((203, True), (204, False)):
        b = CvmBuilder()
        t = b.create_input([1 << 15, 1 << 15], 8)
        for _ in range(relus):
            t = b.relu(t)
        if ok:
            assert b.graph([t]).gas == 1020 * (1 << 30) + 203 * (1 << 30)
        else:
            with pytest.raises(CVMLogicError, match=f"graph memory cost exceeds {1 << 40}"):
                b.graph([t])


def test_graph_ops_limit():
    """GetOps (infer_attr.cc:130): the ops alone <= 2^40. A sum over 2^15 values per output of 2^15 outputs is
    2^30 ops; 1024 of them reach 2^40, 1025 do not fit (their memory stays small)."""
    for sums, ok in ((1024, True), (1025, False)):
        b = CvmBuilder()
        x = b.create_input([1 << 15, 1 << 15], 1)
        heads = [b.sum(x, axis=(1,)) for _ in range(sums)]
        if ok:
            assert b.graph(heads).gas == (1 << 40) + 5 * ((1 << 30) + sums * (1 << 15))
        else:
            with pytest.raises(CVMLogicError, match=f"graph ops exceed {1 << 40}"):
                b.graph(heads)


def test_parser_int32_and_lower_bounds():
    assert rules.parse_attrs("clip", {"a_min": "-2147483648", "a_max": "2147483647"}) == {
        "a_min": INT32_MIN, "a_max": INT32_MAX}  # fmt: skip
    for text in ("2147483648", "-2147483649"):
        with pytest.raises(CVMRuntimeError, match="Invalid Parameter format for 'a_min' of clip: .*out of range"):
            rules.parse_attrs("clip", {"a_min": text, "a_max": "1"})
    assert rules.parse_attrs("dense", {"units": "1"})["units"] == 1
    with pytest.raises(CVMRuntimeError, match="value 0 for Parameter 'units' of dense should be greater equal to 1"):
        rules.parse_attrs("dense", {"units": "0"})
    assert rules.parse_attrs("expand_dims", {"axis": "0", "num_newaxis": "1"})["num_newaxis"] == 1
    with pytest.raises(CVMRuntimeError, match="'num_newaxis' of expand_dims should be greater equal to 1"):
        rules.parse_attrs("expand_dims", {"axis": "0", "num_newaxis": "0"})
    assert rules.parse_attrs("tile", {"reps": f"({(1 << 63) - 1},)"})["reps"] == ((1 << 63) - 1,)
    assert rules.parse_attrs("tile", {"reps": "[1, 2)"})["reps"] == (1, 2)  # dmlc's tuple takes either bracket
    for text in ("", "  ", "(1, 2"):
        with pytest.raises(CVMRuntimeError, match="Invalid Parameter format for 'reps' of tile"):
            rules.parse_attrs("tile", {"reps": text})
    assert rules.parse_attrs("tile", {"reps": f"({-(1 << 63)}, 1)"})["reps"] == (-(1 << 63), 1)
    for big in (1 << 63, -(1 << 63) - 1):
        with pytest.raises(CVMRuntimeError, match="out of range"):
            rules.parse_attrs("tile", {"reps": f"({big},)"})


def test_base_ops_limit():
    """sum's ops per element is the reduced count: 2^30 is the limit (a 2^30-element sum), one past rejected."""
    assert _infer("sum", [(1 << 15, 1 << 15)], [1], axis=(0, 1)).base_ops == 1 << 30
    with pytest.raises(CVMLogicError, match="single ops foreach output should not greater than 1G"):
        _infer("conv2d", [(1, 1 << 7, 1 << 11, 1 << 11), (1, 1 << 7, 1 << 11, 1 << 11)], [1, 1], channels=1,
               kernel_size=(1 << 11, 1 << 11), use_bias=False)  # fmt: skip  3 * 2^29 ops, precision 32


# --------------------------------------------------------------------------------------------------------------
# NMS: iou's int64 overflow branch and its union, on every path
# --------------------------------------------------------------------------------------------------------------


def _nms_model(thresholds, force=False):
    b = CvmBuilder()
    x = b.create_input([1, 3, 6], 31)
    count, boxes = b.get_valid_counts(x, score_threshold=0)
    return b, [b.non_max_suppression(boxes, count, iou_threshold=t, force_suppress=force) for t in thresholds]


@pytest.mark.compiled
def test_nms_iou_overflow_branch_on_every_path(capfd):
    """overlap = 310000001 * 310000000 > INT64_MAX / 100: iou = overlap / (union / 100) = 50 where the exact
    100 * overlap / union is 49.99...; without the branch, 100 * overlap wraps negative and nothing is suppressed."""
    a, c = [0, 0, 310000001, 310000099], [0, 0, 619999903, 310000000]
    x = np.array([[[0, 9, *a], [0, 8, *c], [0, 7, 5, 5, 5, 5]]], np.int32)
    b, outs = _nms_model([50, 51])
    at50, at51 = three_ways(b, outs, [x], capfd)[0]
    assert at50[0].tolist() == [x[0, 0].tolist(), x[0, 2].tolist(), [-1] * 6]
    assert at51[0].tolist() == x[0].tolist()


@pytest.mark.compiled
def test_nms_iou_at_the_threshold_and_its_union(capfd):
    """iou = 100 * overlap / (area_a + area_b - overlap): a box and its half have iou 50 (33 if the overlap were
    not subtracted); equal boxes 100. Suppressed at iou >= threshold, kept one past."""
    x = np.array([[[0, 9, 0, 0, 10, 10], [0, 8, 0, 0, 10, 5], [1, 7, 0, 0, 10, 10]]], np.int32)
    b, outs = _nms_model([50, 51, 100], force=True)
    at50, at51, at100 = (o[0].tolist() for o in three_ways(b, outs, [x], capfd)[0])
    rows = x[0].tolist()
    assert at50 == [rows[0], [-1] * 6, [-1] * 6]
    assert at51 == [rows[0], rows[1], [-1] * 6]  # the half box stays; the equal box of class 1 goes (iou 100)
    assert at100 == [rows[0], rows[1], [-1] * 6]


@pytest.mark.compiled
def test_nms_iou_at_the_bound_of_the_int64_branch(capfd):
    """overlap = 303014943 x 304386706 = (2^63 - 1) // 100 exactly: 100 x overlap still fits int64, so the exact
    formula applies: union = 2 x overlap + 1 gives iou 49 (the other branch would give 50)."""
    a, c = [0, 0, 303014943, 319002233], [0, 0, 591480226, 304386706]
    x = np.array([[[0, 9, *a], [0, 8, *c], [0, 7, 5, 5, 5, 5]]], np.int32)
    b, outs = _nms_model([49, 50])
    at49, at50 = three_ways(b, outs, [x], capfd)[0]
    assert at49[0].tolist() == [x[0, 0].tolist(), x[0, 2].tolist(), [-1] * 6]
    assert at50[0].tolist() == x[0].tolist()


@pytest.mark.compiled
def test_nms_iou_just_past_the_bound_of_the_int64_branch(capfd):
    """overlap = 303016943 x 304386706, just above (2^63 - 1) // 100: the runtime's branch overlap // (union // 100)
    gives 50 where the exact ratio for union = 2 x overlap + 1 is 49."""
    a, c = [0, 0, 303016943, 489562065], [0, 0, 421691830, 304386706]
    x = np.array([[[0, 9, *a], [0, 8, *c]]], np.int32)
    b = CvmBuilder()
    data = b.create_input([1, 2, 6], 31)
    count, boxes = b.get_valid_counts(data, score_threshold=0)
    outs = [b.non_max_suppression(boxes, count, iou_threshold=t) for t in (50, 51)]
    at50, at51 = three_ways(b, outs, [x], capfd)[0]
    assert at50[0].tolist() == [x[0, 0].tolist(), [-1] * 6]
    assert at51[0].tolist() == x[0].tolist()


@pytest.mark.compiled
def test_nms_top_k_and_max_output_size_bounds(capfd):
    """top_k and max_output_size: -1 is no limit, 0 keeps nothing, 1 keeps the best box only."""
    x = np.array([[[0, 9, 0, 0, 4, 4], [1, 8, 10, 10, 14, 14], [0, 7, 20, 20, 24, 24]]], np.int32)
    b = CvmBuilder()
    data = b.create_input([1, 3, 6], 8)
    count, boxes = b.get_valid_counts(data, score_threshold=0)
    outs = [b.non_max_suppression(boxes, count, top_k=k, max_output_size=m)
            for k, m in ((-1, -1), (0, -1), (1, -1), (-1, 0), (-1, 1), (2, 3))]  # fmt: skip
    got = [o[0].tolist() for o in three_ways(b, outs, [x], capfd)[0]]
    rows, none = x[0].tolist(), [-1] * 6
    assert got == [rows, [none] * 3, [rows[0], none, none], [none] * 3, [rows[0], none, none],
                   [rows[0], rows[1], none]]  # fmt: skip


def test_reference_conv_sums_past_2_to_53_are_exact():
    """Wide values (31 bits, as `where` lets through) over 2^17 taps: partial sums pass 2^53, where float64 is no
    longer exact, so the reference must accumulate in int64 (wrapping to int32 at the end)."""
    from cvmc.runtime.references.cvm import run_op

    rng = np.random.default_rng(53)
    x = rng.integers(1 << 29, 1 << 30, (1, 2048, 8, 8)).astype(np.int32)  # all positive: the sum grows to ~2^53.6
    w = rng.integers(64, 128, (1, 2048, 8, 8)).astype(np.int32)
    (y,) = run_op("conv2d", rules.default_attrs("conv2d", channels=1, kernel_size=(8, 8), use_bias=False), [x, w])
    exact = int(np.dot(x.reshape(-1).astype(object), w.reshape(-1).astype(object)))
    assert y.reshape(-1).tolist() == [(exact + (1 << 31)) % (1 << 32) - (1 << 31)]


def test_reference_division_by_zero_gives_0_without_dividing_by_zero():
    import warnings

    from cvmc.runtime.references.cvm import run_op

    x = np.array([7, -7, INT32_MIN, INT32_MIN, 5], np.int32)
    y = np.array([0, 0, -1, 0, 2], np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy warns on an integer division by zero
        (q,) = run_op("broadcast_div", {}, [x, y])
    assert q.tolist() == [0, 0, INT32_MIN, 0, 2]


@pytest.mark.compiled
def test_nms_iou_of_boxes_whose_union_is_below_100(capfd):
    """Boxes 3 x 3 and 3 x 2: iou = 100 x 6 / 9 = 66 (the overflow branch's 6 / max(9 / 100, 1) would be 6)."""
    x = np.array([[[0, 9, 0, 0, 3, 3], [0, 8, 0, 0, 3, 2], [0, 7, 5, 5, 5, 5]]], np.int32)
    b, outs = _nms_model([66, 67])
    at66, at67 = (o[0].tolist() for o in three_ways(b, outs, [x], capfd)[0])
    rows = x[0].tolist()
    assert at66 == [rows[0], rows[2], [-1] * 6]
    assert at67 == rows


def test_reference_nms_of_two_unit_boxes_and_pooling_below_minus_2_to_30():
    """Equal 1 x 1 boxes: union 1, iou 100. Max pooling pads with INT32_MIN, below every value."""
    from cvmc.runtime.references.cvm import run_op

    x = np.array([[[0, 9, 3, 3, 4, 4], [0, 8, 3, 3, 4, 4]]], np.int32)
    (y,) = run_op("non_max_suppression", rules.default_attrs("non_max_suppression", iou_threshold=100),
                  [x, np.array([2], np.int32)])  # fmt: skip
    assert y.tolist() == [[x[0, 0].tolist(), [-1] * 6]]
    low = np.full((1, 1, 2, 2), INT32_MIN + 1, np.int32)
    (p,) = run_op("max_pool2d", rules.default_attrs("max_pool2d", pool_size=(2, 2), padding=(1, 1)), [low])
    assert p.tolist() == [[[[INT32_MIN + 1] * 3] * 3]]
