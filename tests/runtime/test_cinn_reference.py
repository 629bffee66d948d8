"""The numpy reference of the cinn primitives against hand-computed values and independent definitions."""

import itertools
import math

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.parser import Parser

from cvmc import CinnBuilder
from cvmc.dialects import cinn
from cvmc.runtime.references import cinn as ref

SIGNED = [np.int8, np.int16, np.int32, np.int64]
INTS = [*SIGNED, np.uint8]


def a(values, dtype) -> np.ndarray:
    return np.array(values, dtype=dtype)


# ---------------------------------------------------------------------------------------------------------------
# Integer edge cases
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", SIGNED)
def test_division_family_signs(dtype):
    x, y = a([7, -7, 7, -7, 6, 0], dtype), a([2, 2, -2, -2, 3, 5], dtype)
    np.testing.assert_array_equal(ref.div(x, y), a([3, -3, -3, 3, 2, 0], dtype))
    np.testing.assert_array_equal(ref.mod(x, y), a([1, -1, 1, -1, 0, 0], dtype))
    np.testing.assert_array_equal(ref.floor_div(x, y), a([3, -4, -4, 3, 2, 0], dtype))
    np.testing.assert_array_equal(ref.floor_mod(x, y), a([1, 1, -1, -1, 0, 0], dtype))


@pytest.mark.parametrize("dtype", INTS)
def test_division_by_zero_gives_zero(dtype):
    info = np.iinfo(dtype)
    x, zero = a([1, 0, info.max, info.min], dtype), a([0, 0, 0, 0], dtype)
    for f in (ref.div, ref.mod, ref.floor_div, ref.floor_mod):
        np.testing.assert_array_equal(f(x, zero), zero, err_msg=f.__name__)


@pytest.mark.parametrize("dtype", SIGNED)
def test_int_min_by_minus_one(dtype):
    low = np.iinfo(dtype).min
    x, y = a([low], dtype), a([-1], dtype)
    assert ref.div(x, y)[0] == low and ref.floor_div(x, y)[0] == low
    assert ref.mod(x, y)[0] == 0 and ref.floor_mod(x, y)[0] == 0


@pytest.mark.parametrize("dtype", INTS)
def test_division_family_matches_python(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(0)
    x = rng.integers(info.min, int(info.max) + 1, 300, dtype=dtype)
    y = rng.integers(info.min, int(info.max) + 1, 300, dtype=dtype)
    y[::7] = rng.integers(-3, 4, len(y[::7])).astype(dtype)

    def wrap(v: int) -> int:
        return int(np.array(v).astype(np.int64).astype(dtype)) if info.min <= v <= info.max else int(x.dtype.type(v))

    for xi, yi, d, m, fd, fm in zip(
        x.tolist(), y.tolist(), ref.div(x, y), ref.mod(x, y), ref.floor_div(x, y), ref.floor_mod(x, y), strict=True
    ):
        if yi == 0:
            assert d == m == fd == fm == 0
            continue
        if xi == info.min and yi == -1:
            continue
        trunc = abs(xi) // abs(yi) * (1 if (xi < 0) == (yi < 0) else -1)
        assert (d, m, fd, fm) == (trunc, xi - trunc * yi, xi // yi, xi % yi), (xi, yi)


@pytest.mark.parametrize("dtype", SIGNED)
def test_shifts_out_of_range(dtype):
    bits = np.dtype(dtype).itemsize * 8
    x = a([1, -1, 5, -128, 64], dtype)
    for amount in (bits, bits + 3, -1, np.iinfo(dtype).max, np.iinfo(dtype).min):
        y = np.full(5, amount, dtype)
        np.testing.assert_array_equal(ref.left_shift(x, y), np.zeros(5, dtype))
        np.testing.assert_array_equal(ref.right_shift(x, y), a([0, -1, 0, -1, 0], dtype))


def test_shifts_unsigned_and_in_range():
    x = a([200, 1, 255], np.uint8)
    np.testing.assert_array_equal(ref.right_shift(x, a([8, 0, 200], np.uint8)), a([0, 1, 0], np.uint8))
    np.testing.assert_array_equal(ref.right_shift(x, a([1, 0, 7], np.uint8)), a([100, 1, 1], np.uint8))
    np.testing.assert_array_equal(ref.left_shift(x, a([1, 7, 8], np.uint8)), a([144, 128, 0], np.uint8))
    s = a([-128, -7, 100], np.int8)
    np.testing.assert_array_equal(ref.right_shift(s, a([7, 1, 2], np.int8)), a([-1, -4, 25], np.int8))
    np.testing.assert_array_equal(ref.left_shift(s, a([0, 1, 1], np.int8)), a([-128, -14, -56], np.int8))


@pytest.mark.parametrize("dtype", SIGNED)
def test_wrapping_arithmetic(dtype):
    """Add, Abs and Negative wrap in two's complement on the reference device (the project's, not numpy's)."""
    from cvmc import CinnBuilder

    info = np.iinfo(dtype)
    name = np.dtype(dtype).name
    b = CinnBuilder("wrap")
    x, y = b.create_input(name, [3], "x"), b.create_input(name, [3], "y")
    fn = b.compile(outputs=[b.add(x, y), b.abs(x), b.negative(x)], device="reference")
    added, absolute, negated = fn(x=a([info.max, info.min, info.min], dtype), y=a([1, -1, 0], dtype))
    for got in (added, absolute, negated):
        assert got.dtype == dtype
    np.testing.assert_array_equal(added, a([info.min, info.max, info.min], dtype))
    np.testing.assert_array_equal(absolute, a([info.max, info.min, info.min], dtype))
    np.testing.assert_array_equal(negated, a([-info.max, info.min, info.min], dtype))


def test_integer_power():
    x = a([3, 2, -1, -1, 1, 2, 0, -3, 5], np.int32)
    y = a([4, 31, -3, -2, -5, -1, 0, 3, 0], np.int32)
    np.testing.assert_array_equal(ref.power(x, y), a([81, -(2**31), -1, 1, 1, 0, 1, -27, 1], np.int32))
    rng = np.random.default_rng(1)
    for dtype in INTS:
        bits = np.dtype(dtype).itemsize * 8
        info = np.iinfo(dtype)
        bx = rng.integers(info.min, int(info.max) + 1, 200, dtype=dtype)
        by = rng.integers(0, min(int(info.max), 70) + 1, 200).astype(dtype)
        got = ref.power(bx, by)
        for xi, yi, g in zip(bx.tolist(), by.tolist(), got.tolist(), strict=True):
            want = pow(xi, yi, 2**bits)
            if np.issubdtype(dtype, np.signedinteger) and want >= 2 ** (bits - 1):
                want -= 2**bits
            assert g == want, (dtype, xi, yi)


# ---------------------------------------------------------------------------------------------------------------
# Floats
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_round_half_away_from_zero(dtype):
    below_half = np.nextafter(dtype(0.5), dtype(0))  # floor(x + 0.5) would give 1
    x = a([0.5, 1.5, 2.5, -0.5, -2.5, below_half, -1.2, 3.7, np.nan, np.inf, -np.inf], dtype)
    want = a([1, 2, 3, -1, -3, 0, -1, 4, np.nan, np.inf, -np.inf], dtype)
    np.testing.assert_array_equal(ref.round_half_away(x), want)


def test_float_division_family():
    x, y = a([7.5, -7.5, 7.5, -7.5, 1.0], np.float64), a([2.0, 2.0, -2.0, -2.0, 0.0], np.float64)
    np.testing.assert_array_equal(ref.div(x, y), x / y)
    np.testing.assert_array_equal(ref.mod(x, y)[:4], [1.5, -1.5, 1.5, -1.5])
    np.testing.assert_array_equal(ref.floor_mod(x, y)[:4], [1.5, 0.5, -0.5, -1.5])
    np.testing.assert_array_equal(ref.floor_div(x, y)[:4], [3.0, -4.0, -4.0, 3.0])
    assert np.isnan(ref.mod(x, y)[4]) and np.isnan(ref.floor_mod(x, y)[4])


def test_nan_and_inf_through_the_interpreter():
    f = run_text(
        """
        func.func @f(%x: tensor<5xf32>, %y: tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>, tensor<5xi1>,
            tensor<5xi1>, tensor<5xi1>, tensor<5xi1>, tensor<5xf32>) {
          %0 = cinn.max %x, %y : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
          %1 = cinn.min %x, %y : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
          %2 = cinn.is_nan %x : (tensor<5xf32>) -> tensor<5xi1>
          %3 = cinn.is_inf %x : (tensor<5xf32>) -> tensor<5xi1>
          %4 = cinn.is_finite %x : (tensor<5xf32>) -> tensor<5xi1>
          %5 = cinn.compare ne %x, %x : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xi1>
          %6 = cinn.sign %x : (tensor<5xf32>) -> tensor<5xf32>
          func.return %0, %1, %2, %3, %4, %5, %6 : tensor<5xf32>, tensor<5xf32>, tensor<5xi1>, tensor<5xi1>,
            tensor<5xi1>, tensor<5xi1>, tensor<5xf32>
        }
        """,
        a([np.nan, np.inf, -np.inf, 1.0, -0.0], np.float32),
        a([1.0, 2.0, 2.0, np.nan, 0.0], np.float32),
    )
    mx, mn, isnan, isinf, isfinite, ne, sign = f
    assert np.isnan(mx[0]) and np.isnan(mx[3]) and mx[1] == np.inf and mx[2] == 2.0
    assert np.isnan(mn[0]) and np.isnan(mn[3]) and mn[1] == 2.0 and mn[2] == -np.inf
    assert isnan.tolist() == [True, False, False, False, False]
    assert isinf.tolist() == [False, True, True, False, False]
    assert isfinite.tolist() == [False, False, False, True, True]
    assert ne.tolist() == [True, False, False, False, False]
    assert np.isnan(sign[0]) and sign[1:].tolist() == [1.0, -1.0, 1.0, 0.0]


def test_erf_and_rsqrt():
    x = a([-1.0, 0.0, 0.5, 2.0], np.float64)
    np.testing.assert_allclose(ref.erf(x), [math.erf(v) for v in x], rtol=1e-15)
    np.testing.assert_allclose(ref.UNARY[cinn.RsqrtOp](a([4.0, 0.25], np.float64)), [0.5, 2.0])


# ---------------------------------------------------------------------------------------------------------------
# Complex primitives
# ---------------------------------------------------------------------------------------------------------------


def test_reduce_wraps_and_reduces_all_for_empty_dim():
    x = a([[100, 100], [100, 100]], np.int8)
    assert ref.reduce(x, cinn.ReduceKind.SUM, [], False).tolist() == np.int8(400 - 512)
    assert ref.reduce(x, cinn.ReduceKind.SUM, [1], True).tolist() == [[-56], [-56]]
    y = a([[1.0, np.nan], [3.0, 2.0]], np.float32)
    assert np.isnan(ref.reduce(y, cinn.ReduceKind.MAX, [1], False)[0])
    assert ref.reduce(y, cinn.ReduceKind.MIN, [0], False)[0] == 1.0
    assert ref.reduce(a([[2, 3], [4, 5]], np.int32), cinn.ReduceKind.PROD, [0, 1], False) == 120


def test_broadcast_to_maps_axes():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    y = ref.broadcast_to(x.T, [2, 4, 3], [2, 0])  # x.T's axis 0 goes to axis 2, its axis 1 to axis 0
    for i, j, k in itertools.product(range(2), range(4), range(3)):
        assert y[i, j, k] == x[i, k]
    z = ref.broadcast_to(a([[5], [6]], np.int32), [2, 3], [0, 1])
    assert z.tolist() == [[5, 5, 5], [6, 6, 6]]


def test_slice_bounds_negative_and_clamped():
    assert cinn.slice_bounds((4, 8), [1], [-3], [100]) == [(0, 4), (5, 8)]
    assert cinn.slice_bounds((4, 8), [0, 1], [-100, 2], [-1, 3]) == [(0, 3), (2, 3)]


def test_bn_primitives():
    rng = np.random.default_rng(2)
    x, dy = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((2, 3, 4, 5))
    mean = rng.standard_normal(3)
    s, s2 = ref.bn_mean_variance(x)
    for c in range(3):
        np.testing.assert_allclose(s[c], x[:, c].sum())
        np.testing.assert_allclose(s2[c], (x[:, c] ** 2).sum())
    db, ds = ref.bn_grad_bias_scale(x, dy, mean)
    for c in range(3):
        np.testing.assert_allclose(db[c], dy[:, c].sum())
        np.testing.assert_allclose(ds[c], (dy[:, c] * (x[:, c] - mean[c])).sum())


def naive_conv(x, w, g: cinn.ConvGeometry) -> np.ndarray:
    """y[n, o, i, j] straight from the definition, NCHW."""
    y = np.zeros((g.n, g.o, g.oh, g.ow))
    cg, og = g.c // g.groups, g.o // g.groups
    for n, o, i, j in itertools.product(range(g.n), range(g.o), range(g.oh), range(g.ow)):
        for c, p, q in itertools.product(range(cg), range(g.kh), range(g.kw)):
            r = i * g.stride_h + p * g.dilation_h - g.pad_top
            s = j * g.stride_w + q * g.dilation_w - g.pad_left
            if 0 <= r < g.h and 0 <= s < g.w:
                y[n, o, i, j] += x[n, (o // og) * cg + c, r, s] * w[o, c, p, q]
    return y


CONV_CASES = [
    # x shape (NCHW), w shape, strides, paddings, dilations, groups, padding algorithm
    ((1, 3, 6, 7), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1, "EXPLICIT"),
    ((2, 4, 7, 6), (6, 2, 3, 2), (2, 3), (1, 0), (1, 1), 2, "EXPLICIT"),
    ((1, 2, 9, 9), (2, 2, 3, 3), (1, 1), (0, 2), (2, 3), 1, "EXPLICIT"),
    ((1, 2, 7, 8), (3, 2, 3, 4), (2, 2), (0, 0), (1, 1), 1, "SAME"),
    ((1, 2, 7, 8), (3, 2, 3, 4), (1, 1), (5, 5), (1, 1), 1, "VALID"),
    ((1, 1, 5, 5), (1, 1, 3, 3), (1, 1), (1, 1), (3, 3), 1, "EXPLICIT"),  # the last tap reads the bottom padding
]


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_forward_and_adjoints(case, layout):
    xs, ws, strides, paddings, dilations, groups, algorithm = case
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    to_layout = (lambda t: t) if layout == "NCHW" else (lambda t: np.transpose(t, (0, 2, 3, 1)))
    xl = to_layout(x)
    fwd = cinn.ConvType.FORWARD
    g = cinn.conv_geometry(
        xl.shape, ws, strides, paddings, dilations, groups, fwd, cinn.DataFormat(layout),
        cinn.PaddingAlgorithm(algorithm), (),
    )  # fmt: skip
    y = ref.conv(xl, w, g, fwd)
    np.testing.assert_allclose(y, to_layout(naive_conv(x, w, g)), rtol=1e-12, atol=1e-12)
    dy = rng.standard_normal(y.shape)
    dx = ref.conv(w, dy, g, cinn.ConvType.BACKWARD_DATA)
    dw = ref.conv(xl, dy, g, cinn.ConvType.BACKWARD_FILTER)
    assert dx.shape == xl.shape and dw.shape == w.shape
    inner = np.vdot(y, dy)
    np.testing.assert_allclose(np.vdot(xl, dx), inner, rtol=1e-10)
    np.testing.assert_allclose(np.vdot(w, dw), inner, rtol=1e-10)


# ---------------------------------------------------------------------------------------------------------------
# The interpreter
# ---------------------------------------------------------------------------------------------------------------


def run_text(text: str, *inputs: np.ndarray) -> list[np.ndarray]:
    ctx = Context()
    for d in (builtin.Builtin, func.Func, cinn.Cinn):
        ctx.load_dialect(d)
    module = Parser(ctx, text).parse_module()
    module.verify()
    function = module.body.block.first_op
    assert isinstance(function, func.FuncOp)
    return ref.run_function(function, list(inputs))


def test_run_function_walks_ops_in_order():
    (out, total) = run_text(
        """
        func.func @f(%x: tensor<2x3xi32>) -> (tensor<3x2xi32>, tensor<i32>) {
          %c = cinn.const_scalar 10 : i32
          %0 = cinn.mul %x, %c : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>
          %1 = cinn.transpose %0 {axis = array<i64: 1, 0>} : (tensor<2x3xi32>) -> tensor<3x2xi32>
          %2 = cinn.reduce sum %1 {dim = array<i64>, keep_dim = false} : (tensor<3x2xi32>) -> tensor<i32>
          func.return %1, %2 : tensor<3x2xi32>, tensor<i32>
        }
        """,
        np.arange(6, dtype=np.int32).reshape(2, 3),
    )
    assert out.dtype == np.int32 and out.tolist() == [[0, 30], [10, 40], [20, 50]]
    assert total.shape == () and total == 150


def test_every_op_has_reference_semantics():
    covered = set(ref.UNARY) | set(ref.BINARY)
    assert covered == set(cinn.UNARY_OPS) | set(cinn.BINARY_OPS)


# ---------------------------------------------------------------------------------------------------------------
# The decisions the seed leaves open (README, "CINN primitives")
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_floor_div_and_mod_are_one_pair(dtype):
    # 1 // 0.1: floor(1 / 0.1) would be 10 and leave a negative remainder; the pair gives 9 and ~0.1
    x, y = a([1.0], dtype), a([0.1], dtype)
    q, r = ref.floor_div(x, y), ref.floor_mod(x, y)
    assert q[0] == 9 and 0 < r[0] < y[0]
    assert y[0] * q[0] + r[0] == x[0]
    rng = np.random.default_rng(5)
    x, y = rng.uniform(-50, 50, 2000).astype(dtype), rng.uniform(-3, 3, 2000).astype(dtype)
    q, r = ref.floor_div(x, y), ref.floor_mod(x, y)
    np.testing.assert_array_equal(q, np.floor(q))  # an integer
    assert np.all((r == 0) | (np.sign(r) == np.sign(y))) and np.all(np.abs(r) < np.abs(y))
    np.testing.assert_allclose(y * q + r, x, rtol=0, atol=4 * float(np.finfo(dtype).eps) * 50)
    # where every step is exact (small integers as floats), the identity is exact
    xi, yi = rng.integers(-100, 100, 500).astype(dtype), rng.choice([-7, -2, -1, 1, 3, 8], 500).astype(dtype)
    np.testing.assert_array_equal(yi * ref.floor_div(xi, yi) + ref.floor_mod(xi, yi), xi)
    np.testing.assert_array_equal(ref.floor_div(xi, yi), np.floor(xi / yi))


def test_negative_axes_count_from_the_end():
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    for neg, pos in ((-1, 2), (-3, 0)):
        b = CinnBuilder("k")
        v = b.create_input("int32", [2, 3, 4], "x")
        outs = [b.concat([v, v], neg), b.reverse(v, [neg]), b.reduce(v, "sum", [neg, 1], True)]
        got = b.compile(outs)(x=x)
        np.testing.assert_array_equal(got[0], np.concatenate([x, x], pos))
        np.testing.assert_array_equal(got[1], np.flip(x, pos))
        np.testing.assert_array_equal(got[2], x.sum(axis=(pos, 1), keepdims=True))


def test_reshape_zero_copies_the_input_dim():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    b = CinnBuilder("k")
    v = b.create_input("float32", [2, 3, 4], "x")
    outs = [b.reshape(v, [0, -1]), b.reshape(v, [0, 0, 2, 2]), b.reshape(v, [4, 0, 2])]
    got = b.compile(outs)(x=x)
    assert [g.shape for g in got] == [(2, 12), (2, 3, 2, 2), (4, 3, 2)]
    for g in got:
        np.testing.assert_array_equal(g.ravel(), x.ravel())


def test_conv_same_with_dilation_pads_for_the_dilated_filter():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((1, 2, 9, 8)), rng.standard_normal((3, 2, 3, 3))
    b = CinnBuilder("k")
    u, v = b.create_input("float64", x.shape, "x"), b.create_input("float64", w.shape, "w")
    same = b.conv(u, v, dilations=(2, 3), padding_algorithm="SAME")
    explicit = b.conv(u, v, paddings=(2, 3), dilations=(2, 3))  # total (3 - 1) * d, split evenly
    got = b.compile([same, explicit])(x=x, w=w)
    assert got[0].shape == (1, 3, 9, 8)  # SAME keeps the input's size at stride 1
    np.testing.assert_array_equal(got[0], got[1])


@pytest.mark.parametrize("dtype", INTS)
def test_integer_division_family_never_divides_by_zero_or_overflows(dtype):
    """x / 0, x % 0 and INT_MIN / -1 are answered without numpy dividing by zero or overflowing (numpy warns)."""
    import warnings

    info = np.iinfo(dtype)
    x = a([7, info.min, info.min, 0, info.max], dtype)
    y = a([0, -1 if info.min < 0 else 1, 0, 0, 1], dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [f(x, y).tolist() for f in (ref.div, ref.mod, ref.floor_div, ref.floor_mod)]
    assert got[0] == got[2] == [0, info.min, 0, 0, info.max]
    assert got[1] == got[3] == [0, 0, 0, 0, 0]


def test_float_floor_mod_takes_the_divisors_sign():
    x = a([4.0, 0.7, 0.5, -0.5, 3.0, 0.7], np.float64)
    y = a([-2.0, -0.5, 2.0, 2.0, 2.0, 0.5], np.float64)
    np.testing.assert_allclose(ref.floor_mod(x, y), [0.0, -0.3, 0.5, 1.5, 1.0, 0.2], atol=1e-12)


@pytest.mark.parametrize("dtype", SIGNED)
def test_integer_power_with_wide_exponents(dtype):
    bits = np.dtype(dtype).itemsize * 8
    exps = [e for e in (2 ** (bits - 2) + 1, 2 ** (bits - 2) + 3, (1 << (bits - 1)) - 1, 1000) if e < 1 << (bits - 1)]
    x, y = a([3] * len(exps), dtype), a(exps, dtype)
    want = [pow(3, e, 1 << bits) for e in exps]
    want = [w - (1 << bits) if w >= 1 << (bits - 1) else w for w in want]
    assert ref.power(x, y).tolist() == want


@pytest.mark.parametrize("dtype", SIGNED)
def test_right_shift_out_of_range_fills_with_the_sign(dtype):
    info, bits = np.iinfo(dtype), np.dtype(dtype).itemsize * 8
    x = a([info.max, info.min, info.max, -1], dtype)
    y = a([bits, bits, -1, bits + 5], dtype)
    assert ref.right_shift(x, y).tolist() == [0, -1, 0, -1]
    assert ref.left_shift(x, y).tolist() == [0, 0, 0, 0]
    top = bits - 1  # the widest shift in range
    assert ref.right_shift(a([info.min, info.max], dtype), a([top, top - 1], dtype)).tolist() == [-1, 1]
    assert ref.left_shift(a([1, 1], dtype), a([top, top - 1], dtype)).tolist() == [info.min, 1 << (top - 1)]
