"""CinnBuilder on device "cpu" (convert-cinn-to-loops + LLVM JIT) against the reference, edge cases included."""

import numpy as np
import pytest

from cvmc import CinnBuilder

pytest.importorskip("cvmc.runtime.engine.jit", reason="the LLVM JIT is not available")

RNG = np.random.default_rng(11)
INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8]
FLOAT_DTYPES = [np.float32, np.float64]


def int_operands(dtype) -> tuple[np.ndarray, np.ndarray]:
    """Random values plus the edge cases: zero divisors, INT_MIN / -1, extreme values, shift amounts."""
    info = np.iinfo(dtype)
    bits = np.dtype(dtype).itemsize * 8
    edge_x = [info.min, info.min, info.max, 0, 7, -7 if info.min else 7, 1, info.max, 5, 3, 2, 1]
    edge_y = [-1 if info.min else 1, 0, 0, 0, 2, 2, bits, bits + 1, -1 if info.min else 200, bits - 1, 31, 63]
    x = np.concatenate([np.array(edge_x, dtype), RNG.integers(info.min, int(info.max) + 1, 36, dtype=dtype)])
    y = np.concatenate([np.array(edge_y).astype(dtype), RNG.integers(info.min, int(info.max) + 1, 36, dtype=dtype)])
    y[20:30] = RNG.integers(-3 if info.min else 0, 4, 10).astype(dtype)
    return x.reshape(6, 8), y.reshape(6, 8)


def float_operands(dtype) -> tuple[np.ndarray, np.ndarray]:
    edge_x = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 2.5, -2.5, 1.5, 7.5, -7.5, 1.0, 0.0, 1e30, -3.0]
    edge_y = [1.0, 2.0, 2.0, 0.0, 1.0, np.nan, 2.0, -2.0, 2.0, np.inf, 2.0, 2.0, 0.0, -1.0, 1e-30, 2.0]
    x = np.concatenate([np.array(edge_x), RNG.uniform(-3, 3, 32)]).astype(dtype)
    y = np.concatenate([np.array(edge_y), RNG.uniform(-3, 3, 32)]).astype(dtype)
    return x.reshape(6, 8), y.reshape(6, 8)


def both(build, *arrays):
    """(reference outputs, cpu outputs) of one program."""
    results = []
    for device in ("reference", "cpu"):
        b = CinnBuilder("k")
        variables = [b.create_input(x.dtype.name, x.shape, f"a{i}") for i, x in enumerate(arrays)]
        outputs = build(b, *variables)
        outputs = list(outputs) if isinstance(outputs, tuple) else [outputs]
        results.append(b.compile(outputs, device=device)(**{f"a{i}": x for i, x in enumerate(arrays)}))
    return results


def assert_same(ref, cpu, rtol=0.0):
    for r, c in zip(ref, cpu, strict=True):
        assert r.dtype == c.dtype and r.shape == c.shape
        if rtol and np.issubdtype(r.dtype, np.floating):
            np.testing.assert_allclose(c, r, rtol=rtol, atol=rtol, equal_nan=True)
        else:
            np.testing.assert_array_equal(c, r)


FLOAT_UNARY = ["abs", "ceil", "floor", "identity", "is_finite", "is_inf", "is_nan", "logical_not", "negative",
               "round", "sign", "trunc"]  # fmt: skip
TRANSCENDENTAL = ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "erf", "exp", "log", "log10",
                  "log2", "rsqrt", "sin", "sinh", "sqrt", "tan", "tanh"]  # fmt: skip
INT_UNARY = ["abs", "bitwise_not", "identity", "logical_not", "negative", "sign"]
ARITH = ["add", "sub", "mul", "div", "mod", "floor_div", "floor_mod", "max", "min", "power"]
INT_ONLY = ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]
LOGICAL = ["logical_and", "logical_or", "logical_xor"]
KINDS = ["eq", "ne", "ge", "gt", "le", "lt"]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_float_unary(dtype):
    x, _ = float_operands(dtype)
    for method in FLOAT_UNARY:
        assert_same(*both(lambda b, v, m=method: getattr(b, m)(v), x))
    for method in TRANSCENDENTAL:  # libm, not numpy: a few ulps apart
        assert_same(*both(lambda b, v, m=method: getattr(b, m)(v), x), rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_int_unary(dtype):
    x, _ = int_operands(dtype)
    for method in INT_UNARY:
        assert_same(*both(lambda b, v, m=method: getattr(b, m)(v), x))


@pytest.mark.parametrize("dtype", INT_DTYPES + FLOAT_DTYPES)
def test_binary_and_compare(dtype):
    x, y = int_operands(dtype) if dtype in INT_DTYPES else float_operands(dtype)
    methods = ARITH + (INT_ONLY if dtype in INT_DTYPES else []) + LOGICAL
    for method in methods:
        rtol = 1e-6 if method == "power" and dtype == np.float32 else 1e-14 if method == "power" else 0.0
        assert_same(*both(lambda b, u, v, m=method: getattr(b, m)(u, v), x, y), rtol=rtol)
    for kind in KINDS:
        assert_same(*both(lambda b, u, v, k=kind: b.compare(u, v, k), x, y))
    # broadcasting, a rank-0 scalar on either side
    assert_same(*both(lambda b, u, v: b.sub(u, v), x, y[0]))
    assert_same(*both(lambda b, u, v: b.max(v, u), x[:, :1], y[0]))
    assert_same(*both(lambda b, u: b.add(b.const_scalar(1, "one", np.dtype(dtype).name), u), x))


def test_bool_ops():
    p, q = RNG.integers(0, 2, (4, 5)).astype(bool), RNG.integers(0, 2, (4, 5)).astype(bool)
    for method in ["bitwise_and", "bitwise_or", "bitwise_xor", *LOGICAL]:
        assert_same(*both(lambda b, u, v, m=method: getattr(b, m)(u, v), p, q))
    for method in ["bitwise_not", "logical_not", "identity"]:
        assert_same(*both(lambda b, u, m=method: getattr(b, m)(u), p))
    for kind in KINDS:
        assert_same(*both(lambda b, u, v, k=kind: b.compare(u, v, k), p, q))
    x, y = float_operands(np.float32)
    assert_same(*both(lambda b, c, u, v: b.select(c, u, v), p[:1, :1], x, y))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8, np.uint8])
def test_reduce_and_dot(dtype):
    x, y = int_operands(dtype) if dtype not in FLOAT_DTYPES else float_operands(dtype)
    x = np.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0) if dtype in FLOAT_DTYPES else x
    rtol = 1e-5 if dtype == np.float32 else 0.0
    for kind in ["sum", "prod", "max", "min"]:
        for dim, keep in [([1], False), ([0], True), ([], False), ([0, 1], True)]:
            assert_same(*both(lambda b, v, k=kind, d=dim, kd=keep: b.reduce(v, k, d, kd), x), rtol=1e-4 if rtol else 0)
    assert_same(*both(lambda b, u, v: b.dot(u, v), x, y.T.copy()), rtol=rtol)
    assert_same(*both(lambda b, u, v: b.dot(u, v), x, y[0]), rtol=rtol)
    assert_same(*both(lambda b, u, v: b.dot(u, v), x[0], y[0]), rtol=rtol)


def test_nan_propagates_through_max_reduce():
    x, _ = float_operands(np.float32)
    ref, cpu = both(lambda b, v: b.reduce(v, "max", [1], False), x)
    assert np.isnan(cpu[0][0]) and np.isnan(ref[0][0])
    assert_same(ref, cpu)


def test_shape_primitives():
    x = RNG.integers(-100, 100, (2, 3, 4)).astype(np.int16)
    assert_same(*both(lambda b, v: b.broadcast_to(v, [5, 4, 3], [2, 0, 1]), np.ones((3, 1, 1), np.int16) * 7))
    assert_same(*both(lambda b, v: b.broadcast_to(v, [2, 4, 3, 2], [0, 3, 2]), x[:, :, :1].transpose(0, 2, 1).copy()))
    assert_same(*both(lambda b, u, v: b.concat([u, v, u], 1), x, x[:, :2]))
    assert_same(*both(lambda b, v: b.reshape(v, [4, -1]), x))
    assert_same(*both(lambda b, v: b.reverse(v, [0, 2]), x))
    assert_same(*both(lambda b, v: b.slice(v, [2, 0], [-3, 1], [100, 2]), x))
    assert_same(*both(lambda b, v: b.transpose(v, [2, 0, 1]), x))
    assert_same(*both(lambda b, v: b.identity(b.reshape(v, [24])), x))
    # the README's decisions: negative axes count from the end, a 0 in Reshape copies the input's dim
    assert_same(*both(lambda b, u, v: b.concat([u, v, u], -2), x, x[:, :2]))
    assert_same(*both(lambda b, v: b.reverse(v, [-1, 0]), x))
    assert_same(*both(lambda b, v: b.reduce(b.reshape(v, [0, 0, 2, -1]), "max", [-1, -3], True), x))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_float_floor_div_and_mod_match_numpy(dtype):
    """Python's divmod pair (numpy's floor_divide and remainder), edge cases and signed zeros included."""
    x, y = float_operands(dtype)
    x, y = np.concatenate([x.ravel(), [1.0, -1.0, 0.0, -0.0, 5.0]]), np.concatenate([y.ravel(), [0.1, 0.1, -3, 3, -5]])
    x, y = x.astype(dtype), y.astype(dtype)
    ref, cpu = both(lambda b, u, v: (b.floor_div(u, v), b.floor_mod(u, v)), x, y)
    assert_same(ref, cpu)
    with np.errstate(all="ignore"):
        for got, want in zip(cpu, (np.floor_divide(x, y), np.remainder(x, y))):
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize(
    ("x_shape", "w_shape", "strides", "paddings", "dilations", "groups", "algorithm"),
    [
        ((1, 3, 6, 7), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1, "EXPLICIT"),
        ((2, 4, 7, 6), (6, 2, 3, 2), (2, 3), (1, 0), (1, 1), 2, "EXPLICIT"),
        ((1, 2, 9, 9), (2, 2, 3, 3), (1, 1), (0, 2), (2, 3), 1, "EXPLICIT"),
        ((1, 2, 7, 8), (3, 2, 3, 4), (2, 2), (0, 0), (1, 1), 1, "SAME"),
        ((1, 2, 7, 8), (3, 2, 3, 2), (1, 1), (0, 0), (2, 3), 1, "SAME"),  # dilated SAME keeps 7 x 8
    ],
)
def test_conv_forms(layout, x_shape, w_shape, strides, paddings, dilations, groups, algorithm):
    x = RNG.standard_normal(x_shape).astype(np.float32)
    if layout == "NHWC":
        x = x.transpose(0, 2, 3, 1).copy()
    w = RNG.standard_normal(w_shape).astype(np.float32)
    args = (strides, paddings, dilations, groups)
    ref, cpu = both(lambda b, u, v: b.conv(u, v, *args, "forward", layout, algorithm), x, w)
    assert_same(ref, cpu, rtol=1e-5)
    dy = RNG.standard_normal(ref[0].shape).astype(np.float32)
    assert_same(*both(lambda b, u, v: b.conv(u, v, *args, "backward_data", layout, algorithm, x.shape), w, dy), 1e-5)
    assert_same(*both(lambda b, u, v: b.conv(u, v, *args, "backward_filter", layout, algorithm, w.shape), x, dy), 1e-4)


def test_bn_primitives():
    x = RNG.standard_normal((2, 3, 4, 5))
    dy, mean = RNG.standard_normal((2, 3, 4, 5)), RNG.standard_normal(3)
    assert_same(*both(lambda b, v: b.bn_mean_variance(v), x), rtol=1e-12)
    assert_same(*both(lambda b, u, v, m: b.bn_grad_bias_scale(u, v, m), x, dy, mean), rtol=1e-12)


def test_a_program_of_several_primitives():
    x = RNG.standard_normal((4, 8)).astype(np.float32)

    def net(b, v):
        y = b.max(v, b.const_scalar(0.0, "zero"))
        z = b.reduce(y, "sum", [1], False)
        return z, b.exp(b.negative(z)), y

    assert_same(*both(net, x), rtol=1e-6)


def _fused_programs():
    """Programs whose ops cinn-fuse and cinn-mark-views group: chains, prologues, epilogues, views."""

    def softmax(b, x):
        m = b.reduce(x, "max", [-1], True)
        e = b.exp(b.sub(x, m))
        return b.div(e, b.reduce(e, "sum", [-1], True))

    def chain(b, x, y):
        t = b.transpose(b.reshape(x, [0, 3, -1]), [0, 2, 1])  # views read by a chain
        z = b.max(b.mul(b.add(t, t), t), b.negative(t))
        return b.select(b.compare(z, b.slice(y, [0], [1], [3]), "gt"), z, b.reverse(t, [-1])), b.reduce(z, "sum", [1])

    def conv_block(b, x, w):
        y = b.conv(x, w, paddings=(1, 1))
        r = b.max(y, b.const_scalar(0.0, "zero"))
        return b.reduce(b.mul(r, r), "sum", [0, 2, 3]), b.bn_mean_variance(b.add(r, r))[1]

    return softmax, chain, conv_block


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_fused_programs_match_unfused_and_reference(dtype):
    softmax, chain, conv_block = _fused_programs()
    x = RNG.integers(-20, 20, (2, 6, 4)).astype(dtype)
    y = RNG.integers(-20, 20, (4, 8, 3)).astype(dtype)
    cases = [(chain, (x, y))]
    if dtype == np.float32:
        cases += [(softmax, (RNG.standard_normal((5, 7)).astype(dtype),)),
                  (conv_block, (RNG.standard_normal((2, 3, 5, 5)).astype(dtype),
                                RNG.standard_normal((4, 3, 3, 3)).astype(dtype)))]  # fmt: skip
    for build, arrays in cases:
        runs = []
        for device, fuse in (("reference", True), ("cpu", True), ("cpu", False)):
            b = CinnBuilder("k")
            vs = [b.create_input(a.dtype.name, a.shape, f"a{i}") for i, a in enumerate(arrays)]
            outs = build(b, *vs)
            outs = list(outs) if isinstance(outs, tuple) else [outs]
            fn = b.compile(outs, device=device, fuse=fuse, threads=2)
            runs.append(fn(**{f"a{i}": a for i, a in enumerate(arrays)}))
        assert_same(runs[0], runs[1], rtol=1e-5)
        assert_same(runs[2], runs[1])  # fusion changes no arithmetic: bit-equal to one kernel per primitive


@pytest.mark.parametrize(("m", "k", "n"), [(8, 16, 5), (6, 9, 3), (3, 7, 4), (1, 8, 1)])
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_blocked_matmul_edges_and_transposed_operands(m, k, n, dtype):
    """Row blocks of 4, 2 and 1, depth with and without an unrolled tail, transposed operands (copied for rhs,
    viewed for lhs): integers exact (wrapping), floats as the reference."""
    x = RNG.integers(-1000, 1000, (m, k)).astype(dtype) * (1 if dtype == np.float32 else 40000)
    w = RNG.integers(-1000, 1000, (k, n)).astype(dtype)
    assert_same(*both(lambda b, u, v: b.dot(u, v), x, w), rtol=1e-6)
    xt, wt = x.T.copy(), w.T.copy()
    assert_same(*both(lambda b, u, v: b.dot(b.transpose(u, [1, 0]), b.transpose(v, [1, 0])), xt, wt), rtol=1e-6)
