"""Float reductions in FLOAT_SPLIT lanes of a fixed order, the vectorizable f32 exp, and `exact_float`."""

import ctypes
import ctypes.util
import re

import numpy as np
import pytest

from cvmc import CinnBuilder, CVMLogicError
from cvmc.passes.convert_cinn_to_loops import FLOAT_SPLIT
from cvmc.passes.loops.cinn_conv import MAX_SLOT
from cvmc.passes.loops.cinn_scalar import ERF_SMALL, ERF_ULPS, EXP_ULPS, LOG_ULPS, TANH_SMALL, TANH_ULPS

pytest.importorskip("cvmc.runtime.engine.jit", reason="the LLVM JIT is not available")

RNG = np.random.default_rng(27)
EPS = float(np.finfo(np.float32).eps)


def run(build, x, *, exact_float=False, threads=1):
    b = CinnBuilder("k")
    v = b.create_input(x.dtype.name, x.shape, "x")
    return b.compile([build(b, v)], device="cpu", exact_float=exact_float, threads=threads)(x=x)[0]


def sequential(x: np.ndarray, kind: str) -> np.ndarray:
    """Reduce over the last axis in index order, one rounding per step (the element-wise form's order)."""
    op = np.add if kind == "sum" else np.multiply
    acc = np.full(x.shape[:-1], 0.0 if kind == "sum" else 1.0, x.dtype)
    for j in range(x.shape[-1]):
        acc = op(acc, x[..., j])
    return acc


def lanes(x: np.ndarray, kind: str) -> np.ndarray:
    """The documented order of FLOAT_SPLIT: lane j takes indices j mod FLOAT_SPLIT, the tail goes to lanes 0, 1,
    ..., then a halving tree."""
    op = np.add if kind == "sum" else np.multiply
    n = x.shape[-1]
    full = n - n % FLOAT_SPLIT
    acc = np.full((*x.shape[:-1], FLOAT_SPLIT), 0.0 if kind == "sum" else 1.0, x.dtype)
    for c in range(0, full, FLOAT_SPLIT):
        acc = op(acc, x[..., c : c + FLOAT_SPLIT])
    acc[..., : n - full] = op(acc[..., : n - full], x[..., full:])
    while acc.shape[-1] > 1:
        half = acc.shape[-1] // 2
        acc = op(acc[..., :half], acc[..., half:])
    return acc[..., 0]


# 2 * FLOAT_SPLIT - 1: sequential (too short to split); 2 * FLOAT_SPLIT: split, no tail; + 1 and larger: tails
@pytest.mark.parametrize("n", [2 * FLOAT_SPLIT - 1, 2 * FLOAT_SPLIT, 2 * FLOAT_SPLIT + 1, 1024, 4099])
@pytest.mark.parametrize("kind", ["sum", "prod"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_split_order_is_the_documented_one_and_exact_float_the_sequential_one(n, kind, dtype):
    scale = 1.0 if kind == "sum" else 0.05
    x = (1.0 + scale * RNG.standard_normal((7, n))).astype(dtype)

    def build(b, v):
        return b.reduce(v, kind, [-1], False)

    want = lanes(x, kind) if n >= 2 * FLOAT_SPLIT else sequential(x, kind)
    got = run(build, x)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(run(build, x, threads=2), got)  # the same bits on any thread count
    np.testing.assert_array_equal(run(build, x, exact_float=True), sequential(x, kind))
    np.testing.assert_array_equal(run(build, x, exact_float=True, threads=2), sequential(x, kind))


@pytest.mark.parametrize("n", [2 * FLOAT_SPLIT, 1000, 4099, 65536])
def test_split_sum_within_the_stated_bound_of_the_sequential_sum(n):
    """|split - sequential| <= (n / FLOAT_SPLIT + log2 FLOAT_SPLIT + 1 + n) * eps * sum |x| (FLOAT_SPLIT's
    comment), on values of mixed sign and magnitude, cancellation included."""
    x = (RNG.standard_normal((4, n)) * np.exp(RNG.uniform(-8, 8, (4, n)))).astype(np.float32)
    got = run(lambda b, v: b.reduce(v, "sum", [-1], False), x).astype(np.float64)
    seq = sequential(x, "sum").astype(np.float64)
    bound = (n / FLOAT_SPLIT + np.log2(FLOAT_SPLIT) + 1 + n) * EPS * np.abs(x.astype(np.float64)).sum(-1)
    assert np.all(np.abs(got - seq) <= bound)
    # and the split sum is no further from the exact (f64) sum than its own bound
    exact = x.astype(np.float64).sum(-1)
    assert np.all(np.abs(got - exact) <= (n / FLOAT_SPLIT + np.log2(FLOAT_SPLIT) + 1) * EPS * np.abs(x).sum(-1))


def test_multi_axis_and_keep_dim_split_sum_matches_the_order():
    """Reduced axes other than the last run outermost: lane j of (a, b) takes b = j mod FLOAT_SPLIT over all a."""
    x = RNG.standard_normal((3, 5, 40)).astype(np.float32)
    got = run(lambda b, v: b.reduce(v, "sum", [0, 2], True), x)
    flat = x.transpose(1, 0, 2)  # (5, 3, 40): lanes over a then b, in that order
    acc = np.zeros((5, FLOAT_SPLIT), np.float32)
    for a in range(3):
        for c in range(0, 32, FLOAT_SPLIT):
            acc += flat[:, a, c : c + FLOAT_SPLIT]
        acc[:, :8] += flat[:, a, 32:]
    while acc.shape[-1] > 1:
        acc = acc[:, : acc.shape[-1] // 2] + acc[:, acc.shape[-1] // 2 :]
    np.testing.assert_array_equal(got.reshape(5), acc[:, 0])


@pytest.mark.parametrize("kind", ["max", "min"])
def test_max_and_min_are_order_free(kind):
    x = RNG.standard_normal((6, 100)).astype(np.float32)
    x[1, 50], x[2, 0], x[3, 7] = np.nan, -0.0, np.inf
    got = run(lambda b, v: b.reduce(v, kind, [-1], False), x)
    np.testing.assert_array_equal(got, run(lambda b, v: b.reduce(v, kind, [-1], False), x, exact_float=True))
    assert np.isnan(got[1])


def _max_min_operands(dtype, n: int = 67) -> tuple[np.ndarray, np.ndarray]:
    """Every kind of pair both ways (signed zeros, NaNs of other payloads in either and both, infinities, ties,
    denormals), then random ones, `n` in all: vector iterations and a tail."""
    bits = {np.float32: np.uint32, np.float64: np.uint64}[dtype]
    nan1, nan2 = (np.array([w], bits).view(dtype)[0] for w in ((0x7FC00001, 0xFFC00002) if dtype == np.float32
                                                                 else (0x7FF8000000000001, 0xFFF8000000000002)))
    tiny = np.finfo(dtype).smallest_subnormal
    pairs = [(-0.0, 0.0), (0.0, -0.0), (nan1, 1.0), (1.0, nan2), (nan1, nan2), (nan2, nan1), (np.inf, -np.inf),
             (-np.inf, nan1), (2.0, 2.0), (-tiny, tiny), (tiny, -0.0), (-1.0, -2.0), (3.0, 3.5)]
    a, b = (np.array([p[k] for p in pairs], dtype) for k in (0, 1))
    rest = RNG.standard_normal((2, n - len(pairs))).astype(dtype)
    return np.concatenate([a, rest[0]]), np.concatenate([b, rest[1]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_element_wise_max_and_min_are_numpy_s_bit_for_bit(kind, dtype):
    """The default float mode's element-wise Max and Min are numpy's maximum and minimum, NaN payloads and signed
    zeros included (a if a is NaN, else a if a > b (a < b), else b); `exact_float` keeps IEEE 754-2019
    maximum and minimum (-0 < +0), the bits of earlier releases: the same values but for a zero's sign and which
    NaN."""
    a, b = _max_min_operands(dtype)
    unsigned = {np.float32: np.uint32, np.float64: np.uint64}[dtype]
    bld = CinnBuilder("k")
    u, v = bld.create_input(a.dtype.name, a.shape, "a"), bld.create_input(b.dtype.name, b.shape, "b")
    out = bld.max(u, v) if kind == "max" else bld.min(u, v)
    want = (np.maximum if kind == "max" else np.minimum)(a, b)
    for threads in (1, 2):
        got = bld.compile([out], device="cpu", threads=threads)(a=a, b=b)[0]
        np.testing.assert_array_equal(got.view(unsigned), want.view(unsigned))
    exact = bld.compile([out], device="cpu", exact_float=True)(a=a, b=b)[0]
    np.testing.assert_array_equal(exact, want)  # NaN where numpy has one, equal values elsewhere
    zero_ties = (a == 0) & (b == 0) & (np.signbit(a) != np.signbit(b))
    assert zero_ties.sum() == 2 and np.all(np.signbit(exact[zero_ties]) == (kind == "min"))


def _ordered(a: np.ndarray) -> np.ndarray:
    i = a.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def test_exp_f32_within_the_stated_ulps_over_the_whole_range():
    """Every 4093rd f32 bit pattern (both signs, subnormals, inf, NaN payloads), the overflow and underflow
    edges and a dense grid over [-104, 89], against exp in f64 rounded to f32."""
    x = np.arange(0, 1 << 32, 4093, dtype=np.uint64).astype(np.uint32).view(np.float32)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 88.72283, 88.72284, 89.0, 89.1, -87.33655, -103.27893, -103.972,
             -104.0, -104.1, 1e-45, -1e-45, 1.17549435e-38]  # fmt: skip
    x = np.concatenate([x, np.array(edges, np.float32), np.linspace(-104, 89, 1 << 18, dtype=np.float32)])
    got = run(lambda b, v: b.exp(v), x)
    with np.errstate(all="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    ulps = np.abs(_ordered(got[~nan]) - _ordered(want[~nan]))
    assert ulps.max() <= EXP_ULPS
    assert got[np.isposinf(x)].tolist() == [np.inf] and got[np.isneginf(x)].tolist() == [0.0]


def _f32_neighbours(*values: float) -> list[float]:
    """Each value and the f32 values one ulp either side."""
    a = np.array(values, np.float32)
    with np.errstate(over="ignore"):
        return [*a, *np.nextafter(a, np.float32(np.inf)), *np.nextafter(a, np.float32(-np.inf))]


def _erf(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return erf(x)


@pytest.mark.parametrize(
    ("name", "exact", "ulps", "edges"),
    [
        ("log", np.log, LOG_ULPS, _f32_neighbours(1.0, 2.0, 0.5, 1.17549435e-38, 1e-45, 3.4028235e38, 0.70710677,
                                                  1.4142135)),
        ("tanh", np.tanh, TANH_ULPS, _f32_neighbours(TANH_SMALL, 9.01, 44.5, 1e-45, 1.17549435e-38)),
        ("erf", _erf, ERF_ULPS, _f32_neighbours(ERF_SMALL, 3.832, 4.0, 1e-45, 1.17549435e-38)),
    ],
)
def test_vector_math_within_the_stated_ulps_over_the_whole_range(name, exact, ulps, edges):
    """Every 4093rd f32 bit pattern (both signs, subnormals, inf, NaN payloads), the edges of each method and
    its neighbours, and dense grids over [-5, 5] and the subnormals, against the f64 function rounded to f32;
    NaN exactly where libm gives NaN, and the signed zeros and infinities of libm."""
    if name == "erf":
        pytest.importorskip("scipy")
    x = np.arange(0, 1 << 32, 4093, dtype=np.uint64).astype(np.uint32).view(np.float32)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -1e-45]
    edges = np.array([*edges, *specials], np.float32)
    subnormals = np.arange(1, 1 << 23, 509, dtype=np.uint32).view(np.float32)
    x = np.concatenate([x, edges, -edges, np.linspace(-5, 5, 1 << 18, dtype=np.float32), subnormals, -subnormals])
    got = run(lambda b, v: getattr(b, name)(v), x)
    with np.errstate(all="ignore"):
        want = exact(x.astype(np.float64)).astype(np.float32)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    assert np.abs(_ordered(got[~nan]) - _ordered(want[~nan])).max() <= ulps
    zeros = np.array([0.0, -0.0, np.inf, -np.inf], np.float32)
    with np.errstate(all="ignore"):
        want_special = exact(zeros.astype(np.float64)).astype(np.float32)
    got_special = run(lambda b, v: getattr(b, name)(v), zeros)
    np.testing.assert_array_equal(got_special, want_special)
    signed = ~np.isnan(want_special)  # the sign of a NaN is no part of the result
    np.testing.assert_array_equal(np.signbit(got_special[signed]), np.signbit(want_special[signed]))


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "erf"])
def test_exact_float_math_is_libm(name):
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    fn = getattr(libm, name + "f")
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    x = np.concatenate([RNG.uniform(-100, 90, 2000), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 0.5, 3.9]])
    x = x.astype(np.float32)
    want = np.array([fn(float(v)) for v in x], np.float32)
    np.testing.assert_array_equal(run(lambda b, v: getattr(b, name)(v), x, exact_float=True), want)


def test_softmax_and_layer_norm_split_against_exact():
    x = RNG.standard_normal((16, 1000)).astype(np.float32)

    def softmax(b, v):
        e = b.exp(b.sub(v, b.reduce(v, "max", [-1], True)))
        return b.div(e, b.reduce(e, "sum", [-1], True))

    def layer_norm(b, v):
        inv = b.const_scalar(1.0 / 1000, "inv")
        c = b.sub(v, b.mul(b.reduce(v, "sum", [-1], True), inv))
        var = b.mul(b.reduce(b.mul(c, c), "sum", [-1], True), inv)
        return b.mul(c, b.rsqrt(b.add(var, b.const_scalar(1e-5, "eps"))))

    for build in (softmax, layer_norm):
        fast, exact = run(build, x), run(build, x, exact_float=True)
        np.testing.assert_allclose(fast, exact, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(run(build, x, threads=2), fast)


def test_a_sum_over_outer_axes_only_stays_in_order():
    """Reduce over axis 0 of (64, 40): vectorized across adjacent outputs, each output still summed in order."""
    x = RNG.standard_normal((64, 40)).astype(np.float32)
    got = run(lambda b, v: b.reduce(v, "sum", [0], False), x)
    np.testing.assert_array_equal(got, sequential(np.ascontiguousarray(x.T), "sum"))


def _conv(kind, layout, a, b, args, shape=None, exact_float=False):
    nb = CinnBuilder("k")
    u, v = nb.create_input(a.dtype.name, a.shape, "u"), nb.create_input(b.dtype.name, b.shape, "v")
    extra = [shape] if shape is not None else []
    y = nb.conv(u, v, *args, kind, layout, "EXPLICIT", *extra)
    return nb.compile([y], device="cpu", exact_float=exact_float)(u=a, v=b)[0]


def _nhwc(a):
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


def filter_lanes(x, dy, stride, pad, groups, fma=False):
    """backward_filter in the documented order of cinn_conv: lane j sums dy * x_padded over (n, i) ascending (one
    rounding per step: `fma`, the product exact in float64 and the sum rounded to float32 (double rounding could
    only differ from a true fma at a tie of float32 after the float64 rounding, which these seeded data never
    meet); else the product rounded, then the sum), then dw sums the lanes j ascending."""
    n, c, h, w = x.shape
    o, oh, ow = dy.shape[1], dy.shape[2], dy.shape[3]
    cg, og = c // groups, o // groups
    t = x.dtype.type
    xp = np.zeros((n, c, h + 2 * pad + stride * oh, w + 2 * pad + stride * ow), t)
    xp[:, :, pad : pad + h, pad : pad + w] = x
    dw = np.zeros((o, cg, 3, 3), t)
    for oo in range(o):
        for cc in range(cg):
            ch = oo // og * cg + cc
            for p in range(3):
                for q in range(3):
                    lanes = np.zeros(ow, t)
                    for nn in range(n):
                        for i in range(oh):
                            row = xp[nn, ch, i * stride + p, q : q + stride * ow : stride]
                            if fma:
                                lanes = (lanes + dy[nn, oo, i].astype(np.float64) * row.astype(np.float64)).astype(t)
                            else:
                                lanes = lanes + dy[nn, oo, i] * row
                    total = t(0)
                    for v in lanes:
                        total = t(total + v)
                    dw[oo, cc, p, q] = total
    return dw


@pytest.mark.parametrize("exact_float", [True, False])
@pytest.mark.parametrize(("c", "o", "groups", "stride", "h"), [
    (16, 16, 1, 1, 7), (6, 8, 2, 1, 7), (3, 6, 1, 2, 7), (8, 12, 1, 1, 7),  # oh odd: backward_filter a row a pass
    (16, 16, 1, 1, 8), (3, 6, 1, 2, 8), (6, 8, 2, 1, 6),  # oh even: two rows a pass (each lane still row by row)
])
def test_blocked_nchw_conv_orders(c, o, groups, stride, h, exact_float):
    """NCHW conv forward / backward_data compute blocks of output channels, each element summing the same products
    in the same order as the element-wise form (NHWC's with exact_float): the same bits with exact_float, within
    the sequential bound in the default order (one fma a step; it also adds the padded taps' zero products, the
    exact order skips them); backward_filter is bit-equal in the exact order and in the default one follows the
    documented lane order; in the default order NHWC runs the loops of NCHW (the same bits)."""
    x = RNG.standard_normal((2, c, h, 9)).astype(np.float32)
    w = RNG.standard_normal((o, c // groups, 3, 3)).astype(np.float32)
    args = ((stride, stride), (1, 1), (1, 1), groups)

    def conv(kind, layout, a, b, shape=None):
        return _conv(kind, layout, a, b, args, shape, exact_float)

    y = conv("forward", "NCHW", x, w)
    np.testing.assert_array_equal(_nhwc(y), conv("forward", "NHWC", _nhwc(x), w))
    dy = RNG.standard_normal(y.shape).astype(np.float32)
    if stride == 1:  # the blocked form of backward_data is the stride-1 one
        dx = conv("backward_data", "NCHW", w, dy, list(x.shape))
        np.testing.assert_array_equal(_nhwc(dx), conv("backward_data", "NHWC", w, _nhwc(dy), list(_nhwc(x).shape)))
    dw = conv("backward_filter", "NCHW", x, dy, list(w.shape))
    np.testing.assert_array_equal(dw, conv("backward_filter", "NHWC", _nhwc(x), _nhwc(dy), list(w.shape)))
    if not exact_float:
        # forward and backward_data (several output rows a pass) sum each element in the exact order's order, one
        # fma a step: within taps * eps * sum |products| of the exact sum (float64 stands for it)
        def within_bound(kind, a, b, got, shape=None):
            exact = _conv(kind, "NCHW", a.astype(np.float64), b.astype(np.float64), args, shape, True)
            magnitude = _conv(kind, "NCHW", np.abs(a).astype(np.float64), np.abs(b).astype(np.float64), args, shape,
                              True)
            taps = (c // groups if kind == "forward" else o // groups) * 9
            assert np.all(np.abs(got - exact) <= taps * EPS * magnitude)

        within_bound("forward", x, w, y)
        if stride == 1:
            within_bound("backward_data", w, dy, dx, list(x.shape))
        np.testing.assert_array_equal(dw, filter_lanes(x, dy, stride, 1, groups, fma=True))
        # within the stated bound of the exact sum: (n * oh + ow) * eps * sum |products|
        n, oh, ow = dy.shape[0], dy.shape[2], dy.shape[3]
        magnitude = filter_lanes(np.abs(x), np.abs(dy), stride, 1, groups).astype(np.float64)
        exact = filter_lanes(x.astype(np.float64), dy.astype(np.float64), stride, 1, groups)
        assert np.all(np.abs(dw - exact) <= (n * oh + ow) * EPS * magnitude * 1.01)


def test_padded_taps_add_zero_products_as_the_reference():
    """The default NCHW forms add 0 * w for taps outside the input (as the reference's zero padding): an infinite
    weight gives NaN at the border, as in the reference; the exact order skips those taps."""
    x = np.ones((1, 1, 3, 3), np.float32)
    w = np.zeros((1, 1, 3, 3), np.float32)
    w[0, 0, 0, 0] = np.inf  # the top-left tap: outside the input for the first row and column
    args = ((1, 1), (1, 1), (1, 1), 1)
    fast, exact = _conv("forward", "NCHW", x, w, args), _conv("forward", "NCHW", x, w, args, exact_float=True)
    b = CinnBuilder("k")
    u, v = b.create_input("float32", x.shape, "u"), b.create_input("float32", w.shape, "v")
    ref = b.compile([b.conv(u, v, *args, "forward", "NCHW", "EXPLICIT")], device="reference")(u=x, v=w)[0]
    np.testing.assert_array_equal(fast, ref)
    assert np.isnan(fast[0, 0, 0, 0]) and np.isinf(fast[0, 0, 1, 1]) and exact[0, 0, 0, 0] == 0.0


@pytest.mark.parametrize(("width", "padded"), [(MAX_SLOT // 2, True), (MAX_SLOT // 2 + 1, False)])
def test_padded_conv_up_to_the_stack_slot_bound(width, padded):
    """A 1 x 1 forward conv of one channel holds 2 * width floats in stack slots: the padded form up to MAX_SLOT,
    the row form one past it; both compute the same."""
    from xdsl.dialects import memref

    from cvmc.passes.convert_cinn_to_loops import lower_op

    x = RNG.standard_normal((1, 1, 1, width)).astype(np.float32)
    w = np.full((1, 1, 1, 1), 1.5, np.float32)
    args = ((1, 1), (0, 0), (1, 1), 1)
    b = CinnBuilder("k")
    u, v = b.create_input("float32", x.shape, "u"), b.create_input("float32", w.shape, "v")
    y = b.conv(u, v, *args, "forward", "NCHW", "EXPLICIT")
    kernel = lower_op(y.owner, "k")
    assert any(isinstance(op, memref.AllocaOp) for op in kernel.walk()) == padded
    np.testing.assert_array_equal(_conv("forward", "NCHW", x, w, args), x * np.float32(1.5))


def test_constant_kernels_run_once_and_return_copies():
    """A const_scalar kernel runs at compile time; returning its value gives a fresh copy each call."""
    b = CinnBuilder("k")
    v = b.create_input("float32", (3,), "x")
    c = b.const_scalar(2.5, "c")
    fn = b.compile([c, b.mul(v, c)], device="cpu")
    first, y = fn(x=np.ones(3, np.float32))
    assert first.shape == () and float(first) == 2.5 and y.tolist() == [2.5] * 3
    first[()] = 7.0
    again, y = fn(x=np.full(3, 2.0, np.float32))
    assert float(again) == 2.5 and y.tolist() == [5.0] * 3


def _dot(a: np.ndarray, b: np.ndarray, *, exact_float=False, threads=1, dot_block=None) -> np.ndarray:
    bld = CinnBuilder("k")
    va, vb = bld.create_input(a.dtype.name, a.shape, "a"), bld.create_input(b.dtype.name, b.shape, "b")
    fn = bld.compile([bld.dot(va, vb)], device="cpu", exact_float=exact_float, threads=threads, dot_block=dot_block)
    return fn(a=a, b=b)[0]


def fma_order(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The documented order of the Dot micro-kernel (passes/loops/cinn_dot.py; its bound and `exact_float` are in
    tests/runtime/test_cinn_dot.py): out[i, j] from +0.0, one fused
    multiply-add a step over k ascending (libm's fmaf: correctly rounded)."""
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    fmaf = libm.fmaf
    fmaf.restype, fmaf.argtypes = ctypes.c_float, [ctypes.c_float] * 3
    out = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            acc = 0.0
            for kk in range(a.shape[1]):
                acc = fmaf(float(a[i, kk]), float(b[kk, j]), acc)
            out[i, j] = acc
    return out


# Columns: one short of a block of NR (the column form), a block (16 on AVX2, 32 on AVX-512), one past it, two
# blocks and a tail; rows: the MR that divide them (8, 6, 4, 2, 1) and a prime.
@pytest.mark.parametrize(("m", "k", "n"), [(8, 7, 15), (6, 5, 16), (4, 9, 17), (5, 3, 31), (8, 33, 32), (7, 4, 33),
                                           (12, 2, 65), (1, 40, 64), (9, 1, 48)])
def test_float_dot_sums_in_the_documented_fma_order(m, k, n):
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    want = fma_order(a, b)
    for threads in (1, 2, 3):
        np.testing.assert_array_equal(_dot(a, b, threads=threads), want)


def test_float_dot_does_not_depend_on_the_register_width(host):
    """AVX2 blocks (16 columns, 6 rows) and AVX-512 ones (32, 8) sum each element alike."""
    a = RNG.standard_normal((24, 70)).astype(np.float32)
    b = RNG.standard_normal((70, 100)).astype(np.float32)
    got = []
    for width, name in ((32, "avx2"), (64, "avx512-vnni")):
        assert host.set(name).vector_bytes == width
        got.append(_dot(a, b))
    np.testing.assert_array_equal(got[0], got[1])


@pytest.mark.parametrize("block", [(1, 1, 1), (3, 1, 7), (5, 3, 16), (14, 2, 64), (32, 4, 1024)])
def test_float_dot_does_not_depend_on_the_block(block):
    """Any register block (MR rows, NR vector registers, KC depth: `dot_block`, its bounds among them) sums each
    element in the documented order: blocks decide which elements go together, not how."""
    a = RNG.standard_normal((13, 40)).astype(np.float32)
    b = RNG.standard_normal((40, 50)).astype(np.float32)
    np.testing.assert_array_equal(_dot(a, b, threads=2, dot_block=block), fma_order(a, b))


@pytest.mark.parametrize("block", [(33, 4, 1024), (32, 5, 1024), (32, 4, 1025), (0, 1, 1), (8, 2)])
def test_a_dot_block_past_its_bounds_is_refused(block):
    a = np.ones((2, 3), np.float32)
    with pytest.raises(CVMLogicError, match=r"expected dot_block as MR,NR,KC \(MR in 1..32, NR in 1..4 vector "
                       rf"registers, KC in 1..1024\), got {','.join(map(str, block))}$"):
        _dot(a, a.T, dot_block=block)


@pytest.mark.parametrize(("c", "o", "k", "oh"), [(16, 16, 3, 8), (3, 16, 3, 8), (4, 4, 5, 8), (8, 8, 1, 4)])
def test_backward_filter_column_steps_vectorize(c, o, k, oh):
    """The column step of backward_filter (FILTER_BODY multiply-adds at most) stays in LLVM's loop vectorizer's
    reach: its optimized kernel adds vectors of floats (8 input x 2 output channels x 4 rows came out scalar)."""
    from xdsl.dialects.builtin import ModuleOp

    from cvmc.codegen.llvm import emit_llvm
    from cvmc.passes.convert_cinn_to_loops import lower_op
    from cvmc.runtime.engine.jit import optimized_ir

    pad = k // 2
    b = CinnBuilder("k")
    u = b.create_input("float32", [2, c, oh, 32], "u")
    v = b.create_input("float32", [2, o, oh, 32], "v")
    dw = b.conv(u, v, (1, 1), (pad, pad), (1, 1), 1, "backward_filter", "NCHW", "EXPLICIT", [o, c, k, k])
    text = optimized_ir(emit_llvm(ModuleOp([lower_op(dw.owner, "k")])))
    assert re.search(r"fadd <\d+ x float>|@llvm\.fma\.v\d+f32", text)
