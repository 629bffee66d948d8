"""The reference interpreter against cvm-runtime's FORMAL backend (the corpus), and its edge cases by hand."""

import itertools

import numpy as np
import pytest
from conftest import case_input, case_params, corpus_cases

from cvmc.dialects.cvm_rules import default_attrs, precision_bound
from cvmc.runtime.frontend.graph import load_graph
from cvmc.runtime.references.cvm import OPS, run_graph, run_op

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


def saturate(x: np.ndarray, precision: int) -> np.ndarray:
    bound = precision_bound(precision)
    return np.clip(x, -bound, bound).astype(np.int32)


@pytest.mark.parametrize("case", corpus_cases("op", "chain", "model"), ids=lambda d: d.name)
def test_corpus_case_is_bit_exact(case):
    graph = load_graph((case / "model.json").read_bytes(), case_params(case))
    nid = graph.input_id
    data = None if nid is None else saturate(case_input(case), graph.nodes[nid].precisions[0])
    outs = run_graph(graph, data)
    for out, shape in zip(outs, graph.head_shapes(), strict=True):
        assert out.dtype == np.int32 and out.shape == shape
    got = b"".join(np.ascontiguousarray(o, dtype="<i4").tobytes() for o in outs)
    assert got == (case / "expected.bin").read_bytes()


def test_every_operator_has_a_kernel_with_a_docstring():
    from cvmc.dialects.cvm_rules import OPS as RULE_OPS

    assert set(OPS) == set(RULE_OPS) and len(OPS) == 37
    assert all(fn.__doc__ for fn in OPS.values())


def op(name, inputs, **attrs):
    """Run one operator on int32 arrays; its only output, or the list when it has several."""
    outs = run_op(name, default_attrs(name, **attrs), [np.asarray(x, dtype=np.int32) for x in inputs])
    assert all(o.dtype == np.int32 for o in outs)
    return outs[0] if len(outs) == 1 else outs


# ---------------------------------------------------------------------------------------------------------
# Arithmetic: int32 wrapping, truncating division, rounding shifts
# ---------------------------------------------------------------------------------------------------------


def test_elemwise_and_broadcast_add_sub_mul_wrap():
    a, b = [INT_MAX, INT_MIN, 5], [1, -1, -7]
    assert op("elemwise_add", [a, b]).tolist() == [INT_MIN, INT_MAX, -2]
    assert op("elemwise_sub", [b, a]).tolist() == [INT_MIN + 2, INT_MAX, -12]
    assert op("broadcast_add", [a, [1]]).tolist() == [INT_MIN, INT_MIN + 1, 6]
    assert op("broadcast_mul", [[65536, INT_MIN, 3], [65536]]).tolist() == [0, 0, 196608]


def test_negative_and_abs_of_int_min_wrap():
    assert op("negative", [[INT_MIN, -3, 4]]).tolist() == [INT_MIN, 3, -4]
    assert op("abs", [[INT_MIN, -3, 4]]).tolist() == [INT_MIN, 3, 4]


def test_broadcast_div_truncates_gives_zero_for_zero_divisor_and_wraps():
    a = [7, -7, 7, -7, 5, INT_MIN, INT_MIN]
    b = [2, 2, -2, -2, 0, -1, 1]
    assert op("broadcast_div", [a, b]).tolist() == [3, -3, -3, 3, 0, INT_MIN, INT_MIN]
    assert op("broadcast_div", [[[9], [-9]], [0, 4, -4]]).tolist() == [[0, 2, -2], [0, -2, 2]]


def test_broadcast_max_and_greater_broadcast_right_aligned():
    a = np.array([[1, -5, 3], [0, 2, -1]])
    assert op("broadcast_max", [a, [0, 0, 2]]).tolist() == [[1, 0, 3], [0, 2, 2]]
    assert op("broadcast_greater", [a, [[0], [1]]]).tolist() == [[1, 0, 1], [0, 1, 0]]


def test_cvm_right_shift_rounds_half_toward_positive_infinity():
    x = [-7, -6, -5, -3, -1, 1, 3, 5, 6, 7]
    # x / 2: -3.5 -3 -2.5 -1.5 -0.5 0.5 1.5 2.5 3 3.5
    assert op("cvm_right_shift", [x], precision=32, shift_bit=1).tolist() == [-3, -3, -2, -1, 0, 1, 2, 3, 3, 4]
    # x / 4: -1.75 -1.5 -1.25 ...
    assert op("cvm_right_shift", [x[:3]], precision=32, shift_bit=2).tolist() == [-2, -1, -1]


def test_cvm_right_shift_clips_to_the_precision_and_handles_shift_32():
    assert op("cvm_right_shift", [[1000, -1000, 20]], precision=4, shift_bit=2).tolist() == [7, -7, 5]
    assert op("cvm_right_shift", [[INT_MIN, -1, INT_MAX]], precision=32, shift_bit=32).tolist() == [0, 0, 0]
    # (INT_MAX >> 0) + 1 wraps to INT_MIN before the final shift, as in the runtime's int32 arithmetic
    assert op("cvm_right_shift", [[INT_MAX]], precision=32, shift_bit=1).tolist() == [-(1 << 30)]


def test_cvm_left_shift_clips_and_wraps():
    assert op("cvm_left_shift", [[3, -3, 100]], precision=6, shift_bit=2).tolist() == [12, -12, 31]
    assert op("cvm_left_shift", [[1 << 30]], precision=32, shift_bit=1).tolist() == [-INT_MAX]  # wraps to INT_MIN


def test_clip_and_cvm_clip():
    assert op("clip", [[-200, -5, 0, 5, 200]], a_min=-10, a_max=7).tolist() == [-10, -5, 0, 5, 7]
    assert op("cvm_clip", [[-200, -127, 127, 200]], precision=8).tolist() == [-127, -127, 127, 127]
    assert op("cvm_clip", [[5, -5]], precision=1).tolist() == [0, 0]
    assert op("cvm_clip", [[INT_MIN, INT_MAX]], precision=32).tolist() == [-INT_MAX, INT_MAX]


def test_cvm_precision_counts_bits_with_zero_taking_one():
    x = [0, 1, -1, 2, 3, 4, -27, 127, -128, INT_MAX, INT_MIN]
    assert op("cvm_precision", [x]).tolist() == [1, 1, 1, 2, 2, 3, 5, 7, 8, 31, 32]


# ---------------------------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------------------------


def test_max_with_empty_axis_starts_at_zero():
    x = -np.arange(1, 13).reshape(3, 4)
    assert op("max", [x]).tolist() == [0]
    assert op("max", [x], keepdims=True).tolist() == [[0]]
    # exclude=true with axis=() reduces every axis too, but from the first element
    assert op("max", [x], exclude=True).tolist() == [-1]
    assert op("max", [x], axis=(0, 1)).tolist() == [-1]
    assert op("max", [x], axis=(1,)).tolist() == [-1, -5, -9]


def test_sum_wraps_and_exclude_listing_every_axis_is_the_identity():
    x = np.full((2, 3), INT_MAX)
    assert op("sum", [x], axis=(1,)).tolist() == [INT_MAX - 2, INT_MAX - 2]
    assert op("sum", [x], axis=(0, 1), exclude=True).tolist() == x.tolist()
    assert op("sum", [np.arange(24).reshape(2, 3, 4)], axis=(-1,), exclude=True, keepdims=True).tolist() == [
        [[60, 66, 72, 78]]]


# ---------------------------------------------------------------------------------------------------------
# Indexing and layout
# ---------------------------------------------------------------------------------------------------------


def test_take_clips_indices():
    x = np.arange(12).reshape(3, 4)
    assert op("take", [x, [-5, 0, 11, 12, 100]]).tolist() == [0, 0, 11, 11, 11]
    assert op("take", [x, [[-1, 3]]], axis=0).tolist() == [[[0, 1, 2, 3], [8, 9, 10, 11]]]
    assert op("take", [x, [9, -9]], axis=-1).tolist() == [[3, 0], [7, 4], [11, 8]]


def test_cvm_lut_clips_indices_into_the_table():
    assert op("cvm_lut", [[[-3, 1], [2, 9]], [10, 20, 30]], in_dim=3).tolist() == [[10, 20], [30, 30]]


def test_where_elementwise_and_with_a_row_condition():
    x, y = np.arange(6).reshape(3, 2), -np.arange(6).reshape(3, 2)
    assert op("where", [[[1, 0], [0, 7], [-1, 0]], x, y]).tolist() == [[0, -1], [-2, 3], [4, -5]]
    assert op("where", [[0, 5, 0], x, y]).tolist() == [[0, -1], [2, 3], [-4, -5]]


def test_strided_slice_with_negative_strides_and_clamping():
    x = np.arange(24).reshape(4, 6)
    got = op("strided_slice", [x], begin=(-1, 5), end=(-100, 0), stride=(-2, -2))
    assert got.tolist() == x[3::-2, 5:0:-2].tolist()
    assert op("strided_slice", [x], begin=(1,), end=(100,)).tolist() == x[1:].tolist()


def test_slice_like_upsampling_tile_repeat():
    x = np.arange(24).reshape(2, 3, 4)
    assert op("slice_like", [x, np.zeros((1, 2))], axis=(0, -2)).tolist() == x[:1, :2].tolist()
    up = op("upsampling", [np.arange(4).reshape(1, 1, 2, 2)], scale=2)
    assert up[0, 0].tolist() == [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3], [2, 2, 3, 3]]
    assert op("tile", [[1, 2]], reps=(2, 2)).tolist() == [[1, 2, 1, 2], [1, 2, 1, 2]]
    assert op("repeat", [[[1, 2], [3, 4]]], repeats=2, axis=-1).tolist() == [[1, 1, 2, 2], [3, 3, 4, 4]]


def test_reshape_family_keeps_row_major_order():
    x = np.arange(24).reshape(2, 3, 4)
    assert op("reshape", [x], shape=(-4, 1, 2, -3)).shape == (1, 2, 12)
    assert op("flatten", [x]).tolist() == x.reshape(2, 12).tolist()
    assert op("expand_dims", [x], axis=-1, num_newaxis=2).shape == (2, 3, 4, 1, 1)
    assert op("squeeze", [np.zeros((1, 3, 1))]).shape == (3,)
    assert op("squeeze", [np.zeros((1, 1))]).shape == (1,)
    assert op("transpose", [x]).tolist() == x.transpose().tolist()
    assert op("concatenate", [x, x[:, :1]], axis=1).tolist() == np.concatenate([x, x[:, :1]], 1).tolist()


# ---------------------------------------------------------------------------------------------------------
# Convolution, dense and pooling against direct loops
# ---------------------------------------------------------------------------------------------------------


def naive_conv2d(x, w, b, strides, padding, dilation, groups):
    """FORMAL's groupwise loop, in Python integers wrapped to int32 at the end."""
    n, c, h, wd = x.shape
    oc, icg, kh, kw = w.shape
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, oc, oh, ow), dtype=np.int64)
    for bi, o, p, q in itertools.product(range(n), range(oc), range(oh), range(ow)):
        acc = 0 if b is None else int(b[o])
        first = o // (oc // groups) * icg
        for ic, i, j in itertools.product(range(icg), range(kh), range(kw)):
            r = p * strides[0] + i * dilation[0] - padding[0]
            s = q * strides[1] + j * dilation[1] - padding[1]
            if 0 <= r < h and 0 <= s < wd:
                acc += int(x[bi, first + ic, r, s]) * int(w[o, ic, i, j])
        y[bi, o, p, q] = (acc + (1 << 31)) % (1 << 32) - (1 << 31)
    return y.astype(np.int32)


@pytest.mark.parametrize(("groups", "strides", "padding", "dilation", "bias", "big"), [
    (1, (1, 1), (0, 0), (1, 1), True, False),
    (2, (2, 1), (1, 2), (1, 2), True, False),
    (4, (1, 3), (2, 0), (2, 1), False, False),  # depthwise
    (2, (1, 1), (1, 1), (1, 1), True, True),  # values far beyond 8 bits: the int64 path, wrapping
])
def test_conv2d_matches_the_direct_loop(groups, strides, padding, dilation, bias, big):
    rng = np.random.default_rng(groups + 10 * big)
    hi = 1 << 30 if big else 128
    x = rng.integers(-hi, hi, (2, 4, 7, 8))
    w = rng.integers(-hi, hi, (6 if groups != 4 else 4, 4 // groups, 3, 2))
    b = rng.integers(-hi, hi, w.shape[0]) if bias else None
    attrs = dict(channels=w.shape[0], kernel_size=w.shape[2:], strides=strides, padding=padding,
                 dilation=dilation, groups=groups, use_bias=bias)
    got = op("conv2d", [x, w] + ([b] if bias else []), **attrs)
    assert got.tolist() == naive_conv2d(x, w, b, strides, padding, dilation, groups).tolist()


def test_dense_wraps_like_int32_accumulation():
    rng = np.random.default_rng(1)
    x, w, b = rng.integers(INT_MIN, INT_MAX, (3, 5)), rng.integers(INT_MIN, INT_MAX, (4, 5)), [INT_MAX] * 4
    want = [[((sum(int(x[m, k]) * int(w[u, k]) for k in range(5)) + INT_MAX + (1 << 31)) % (1 << 32)) - (1 << 31)
             for u in range(4)] for m in range(3)]
    assert op("dense", [x, w, b], units=4).tolist() == want


def naive_max_pool2d(x, pool, strides, padding, ceil):
    """Max pooling by its definition: a window at every stride step that fits the padded input (in ceil mode also
    the last partial one), the maximum of its cells inside the input."""
    n, c, h, w = x.shape

    def windows(size, k, s, pad):
        span = size + 2 * pad - k
        return (-(-span // s) if ceil else span // s) + 1

    oh, ow = windows(h, pool[0], strides[0], padding[0]), windows(w, pool[1], strides[1], padding[1])
    y = np.full((n, c, oh, ow), INT_MIN, dtype=np.int64)
    for b, ch, p, q, i, j in itertools.product(range(n), range(c), range(oh), range(ow), range(pool[0]),
                                               range(pool[1])):
        r, s = p * strides[0] + i - padding[0], q * strides[1] + j - padding[1]
        if 0 <= r < h and 0 <= s < w:
            y[b, ch, p, q] = max(y[b, ch, p, q], x[b, ch, r, s])
    return y


@pytest.mark.parametrize(("pool", "strides", "padding", "ceil"), [
    ((3, 3), (2, 2), (1, 1), False), ((3, 2), (2, 3), (1, 0), True), ((2, 4), (1, 2), (1, 3), True),
    ((3, 3), (2, 2), (0, 0), True), ((2, 3), (3, 2), (1, 1), False),
])
def test_max_pool2d_matches_the_direct_loop(pool, strides, padding, ceil):
    x = np.random.default_rng(7).integers(-1000, 1000, (2, 3, 7, 10))
    got = op("max_pool2d", [x], pool_size=pool, strides=strides, padding=padding, ceil_mode=ceil)
    assert got.tolist() == naive_max_pool2d(x, pool, strides, padding, ceil).tolist()


def test_max_pool2d_ceil_mode_windows_ignore_padding():
    x = -np.arange(1, 17).reshape(1, 1, 4, 4)
    got = op("max_pool2d", [x], pool_size=(2, 2), strides=(2, 2), padding=(1,), ceil_mode=True)
    # padded cells are INT32_MIN, so all-negative windows keep their real maximum; rows {0}, {1, 2}, {3}
    assert got[0, 0].tolist() == [[-1, -2, -4], [-5, -6, -8], [-13, -14, -16]]


# ---------------------------------------------------------------------------------------------------------
# Vision operators
# ---------------------------------------------------------------------------------------------------------


def test_get_valid_counts_compacts_rows_over_the_threshold():
    x = np.array([[[0, 5, 1], [1, 50, 2], [2, 10, 3], [3, 60, 4]]])
    count, boxes = op("get_valid_counts", [x], score_threshold=10)
    assert count.tolist() == [2]
    assert boxes.tolist() == [[[1, 50, 2], [3, 60, 4], [-1, -1, -1], [-1, -1, -1]]]


BOXES = np.array([[
    [0, 90, 0, 0, 10, 10],
    [1, 80, 1, 1, 11, 11],  # other class, overlaps row 0 (iou 68)
    [0, 70, 0, 0, 10, 9],  # same class as row 0, iou 90
    [0, 60, 50, 50, 60, 60],  # far away
    [-1, 95, 0, 0, 10, 10],  # negative id: skipped, but counts toward top_k
]])


def nms(valid=5, **attrs):
    return op("non_max_suppression", [BOXES, [valid]], **attrs)[0].tolist()


def test_nms_suppresses_by_class_unless_force_suppress():
    minus = [-1] * 6
    assert nms(iou_threshold=50) == [BOXES[0, i].tolist() for i in (0, 1, 3)] + [minus] * 2
    assert nms(iou_threshold=50, force_suppress=True) == [BOXES[0, i].tolist() for i in (0, 3)] + [minus] * 3
    assert nms(iou_threshold=95) == [BOXES[0, i].tolist() for i in (0, 1, 2, 3)] + [minus]


def test_nms_max_output_size_top_k_and_valid_count():
    minus = [-1] * 6
    assert nms(max_output_size=0) == [minus] * 5
    assert nms(max_output_size=1) == [BOXES[0, 0].tolist()] + [minus] * 4
    assert nms(top_k=2) == [BOXES[0, 0].tolist()] + [minus] * 4  # the skipped id -1 row is one of the two
    assert nms(valid=2) == [BOXES[0, 0].tolist(), BOXES[0, 1].tolist()] + [minus] * 3
    assert nms(valid=-3) == [minus] * 5


def test_nms_iou_overflow_branch_and_degenerate_boxes():
    # overlap 310000001 * 310000000 > INT64_MAX / 100, so iou = overlap / (union / 100) = 50, where the exact
    # ratio 100 * overlap / union is 49.99...; the empty box has area 0, so its iou is 0
    a, b = [0, 0, 310000001, 310000099], [0, 0, 619999903, 310000000]
    x = np.array([[[0, 9, *a], [0, 8, *b], [0, 7, 5, 5, 5, 5]]])
    out = op("non_max_suppression", [x, [3]], iou_threshold=50)[0].tolist()
    assert out == [x[0, 0].tolist(), x[0, 2].tolist(), [-1] * 6]
    out = op("non_max_suppression", [x, [3]], iou_threshold=51)[0].tolist()
    assert out == x[0].tolist()
