"""CinnBuilder: every primitive built, printed and run on the reference device; misuse and bad inputs."""

import math

import numpy as np
import pytest

from cvmc import CinnBuilder, CVMLogicError, CVMRuntimeError
from cvmc.dialects import cinn

RNG = np.random.default_rng(7)
X = RNG.uniform(-2, 2, (3, 4)).astype(np.float32)
POS = RNG.uniform(0.1, 3, (3, 4)).astype(np.float32)
UNIT = RNG.uniform(-0.9, 0.9, (3, 4)).astype(np.float32)
BIG = RNG.uniform(1.1, 4, (3, 4)).astype(np.float32)
I = RNG.integers(-50, 50, (3, 4)).astype(np.int32)
J = RNG.integers(-9, 9, (3, 4)).astype(np.int32)
B = RNG.integers(0, 2, (3, 4)).astype(bool)

# method, input, expected (computed independently of the reference where the math allows)
UNARY = [
    ("abs", I, np.abs(I)),
    ("acos", UNIT, np.arccos(UNIT)),
    ("acosh", BIG, np.arccosh(BIG)),
    ("asin", UNIT, np.arcsin(UNIT)),
    ("asinh", X, np.arcsinh(X)),
    ("atan", X, np.arctan(X)),
    ("atanh", UNIT, np.arctanh(UNIT)),
    ("bitwise_not", I, -I - 1),
    ("ceil", X, np.ceil(X)),
    ("cos", X, np.cos(X)),
    ("cosh", X, np.cosh(X)),
    ("erf", X, np.array([[math.erf(v) for v in row] for row in X.tolist()], np.float32)),
    ("exp", X, np.exp(X)),
    ("floor", X, np.floor(X)),
    ("identity", B, B),
    ("is_finite", X, np.ones_like(B)),
    ("is_inf", X, np.zeros_like(B)),
    ("is_nan", X, np.zeros_like(B)),
    ("log", POS, np.log(POS)),
    ("log10", POS, np.log10(POS)),
    ("log2", POS, np.log2(POS)),
    ("logical_not", I, I == 0),
    ("negative", X, -X),
    ("round", X, np.array([[math.copysign(math.floor(abs(v) + 0.5), v) for v in r] for r in X.tolist()], np.float32)),
    ("rsqrt", POS, 1 / np.sqrt(POS)),
    ("sign", J, np.sign(J)),
    ("sin", X, np.sin(X)),
    ("sinh", X, np.sinh(X)),
    ("sqrt", POS, np.sqrt(POS)),
    ("tan", UNIT, np.tan(UNIT)),
    ("tanh", X, np.tanh(X)),
    ("trunc", X, np.trunc(X)),
]

ROW = I[0] % 5 + 1  # positive divisors and small exponents, shape (4,): broadcast along rows
BINARY = [
    ("add", X, X[1], X + X[1]),
    ("bitwise_and", I, J, I & J),
    ("bitwise_or", I, J, I | J),
    ("bitwise_xor", B, B[0], B ^ B[0]),
    ("div", I, ROW, np.trunc(I / ROW).astype(np.int32)),
    ("floor_div", I, ROW, I // ROW),
    ("floor_mod", I, ROW, I % ROW),
    ("left_shift", I, np.abs(J) % 8, I * 2 ** (np.abs(J) % 8)),
    ("logical_and", I, J, (I != 0) & (J != 0)),
    ("logical_or", I, J, (I != 0) | (J != 0)),
    ("logical_xor", I, J, (I != 0) ^ (J != 0)),
    ("max", X, X[2], np.maximum(X, X[2])),
    ("min", X, X[2], np.minimum(X, X[2])),
    ("mod", I, ROW, np.fmod(I, ROW)),
    ("mul", I, J, I * J),
    ("power", J, np.abs(J) % 4, J ** (np.abs(J) % 4)),
    ("right_shift", I, np.abs(J) % 8, I >> (np.abs(J) % 8)),
    ("sub", X, X[0], X - X[0]),
]


def run(build, *arrays, device="reference"):
    """Build a program over inputs named a0, a1, ... with `build(b, *variables)` and run it."""
    b = CinnBuilder("test")
    variables = [b.create_input(x.dtype.name, x.shape, f"a{i}") for i, x in enumerate(arrays)]
    outputs = build(b, *variables)
    outputs = list(outputs) if isinstance(outputs, tuple) else [outputs]
    fn = b.compile(outputs=outputs, device=device)
    return fn(**{f"a{i}": x for i, x in enumerate(arrays)})


@pytest.mark.parametrize(("method", "x", "want"), UNARY, ids=[u[0] for u in UNARY])
def test_unary(method, x, want):
    (got,) = run(lambda b, v: getattr(b, method)(v), x)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize(("method", "x", "y", "want"), BINARY, ids=[u[0] for u in BINARY])
def test_binary(method, x, y, want):
    (got,) = run(lambda b, u, v: getattr(b, method)(u, v), x, y)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_every_primitive_has_a_method():
    ops = [cinn.ConstScalarOp, *cinn.UNARY_OPS, *cinn.BINARY_OPS, *cinn.COMPLEX_OPS]
    methods = {op.name.removeprefix("cinn.") for op in ops}
    assert all(callable(getattr(CinnBuilder, m, None)) for m in methods), methods
    assert {m for m, *_ in UNARY} == {op.name.removeprefix("cinn.") for op in cinn.UNARY_OPS}
    assert {m for m, *_ in BINARY} == {op.name.removeprefix("cinn.") for op in cinn.BINARY_OPS}


def test_const_scalar_broadcasts_and_defaults_its_dtype():
    (got,) = run(lambda b, v: b.max(v, b.const_scalar(0.0, "zero")), X)
    np.testing.assert_array_equal(got, np.maximum(X, 0))
    (got,) = run(lambda b, v: b.add(v, b.const_scalar(-3, "three")), I)
    np.testing.assert_array_equal(got, I - 3)
    (got,) = run(lambda b, v: b.logical_and(v, b.const_scalar(True, "yes")), B)
    np.testing.assert_array_equal(got, B)
    (got,) = run(lambda b, v: b.add(v, b.const_scalar(200, "c", "uint8")), np.array([100, 55], np.uint8))
    np.testing.assert_array_equal(got, np.array([44, 255], np.uint8))


def test_compare_kinds():
    for kind, f in [("eq", np.equal), ("ne", np.not_equal), ("ge", np.greater_equal), ("gt", np.greater),
                    ("le", np.less_equal), ("lt", np.less)]:  # fmt: skip
        (got,) = run(lambda b, u, v, kind=kind: b.compare(u, v, kind), J, J[1])
        np.testing.assert_array_equal(got, f(J, J[1]), err_msg=kind)
    u = np.array([200, 3], np.uint8)
    (got,) = run(lambda b, x, y: b.compare(x, y, "gt"), u, np.array([3, 200], np.uint8))
    assert got.tolist() == [True, False]  # unsigned


def test_dot_forms():
    m, n = X, X.T.copy()
    (got,) = run(lambda b, u, v: b.dot(u, v), m, n)
    np.testing.assert_allclose(got, m @ n, rtol=1e-5)
    (got,) = run(lambda b, u, v: b.dot(u, v), m, X[0])
    np.testing.assert_allclose(got, m @ X[0], rtol=1e-5)
    (got,) = run(lambda b, u, v: b.dot(u, v), I[0], J[0])
    assert got.shape == () and got == int(I[0] @ J[0])


def test_shape_primitives():
    (got,) = run(lambda b, v: b.broadcast_to(v, [2, 4, 3], [1]), X[0])
    np.testing.assert_array_equal(got, np.broadcast_to(X[0][None, :, None], (2, 4, 3)))
    (got,) = run(lambda b, u, v: b.concat([u, v, u], 1), X, POS)
    np.testing.assert_array_equal(got, np.concatenate([X, POS, X], 1))
    (got,) = run(lambda b, v: b.reshape(v, [2, -1]), X)
    np.testing.assert_array_equal(got, X.reshape(2, 6))
    (got,) = run(lambda b, v: b.reverse(v, [0, 1]), I)
    np.testing.assert_array_equal(got, I[::-1, ::-1])
    (got,) = run(lambda b, c, u, v: b.select(c, u, v), B, X, X[0])
    np.testing.assert_array_equal(got, np.where(B, X, X[0]))
    (got,) = run(lambda b, v: b.slice(v, [0, 1], [1, -3], [10, -1]), X)
    np.testing.assert_array_equal(got, X[1:, 1:3])
    (got,) = run(lambda b, v: b.transpose(v, [1, 0]), I)
    np.testing.assert_array_equal(got, I.T)


def test_reduce_kinds():
    for kind, f in [("sum", np.sum), ("prod", np.prod), ("max", np.max), ("min", np.min)]:
        (got,) = run(lambda b, v, kind=kind: b.reduce(v, kind, [1], True), X)
        np.testing.assert_allclose(got, f(X, axis=1, keepdims=True), rtol=1e-5, err_msg=kind)
    (got,) = run(lambda b, v: b.reduce(v, "sum", [], False), I)
    assert got.shape == () and got == I.sum()


def test_bn_and_conv():
    x = RNG.standard_normal((2, 3, 5, 5)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    mean = x.mean(axis=(0, 2, 3))
    s, s2 = run(lambda b, v: b.bn_mean_variance(v), x)
    np.testing.assert_allclose(s, x.sum(axis=(0, 2, 3)), rtol=1e-4)
    np.testing.assert_allclose(s2, (x * x).sum(axis=(0, 2, 3)), rtol=1e-4)
    db, ds = run(lambda b, u, v, m: b.bn_grad_bias_scale(u, v, m), x, x, mean)
    np.testing.assert_allclose(db, x.sum(axis=(0, 2, 3)), rtol=1e-4)
    np.testing.assert_allclose(ds, (x * (x - mean[:, None, None])).sum(axis=(0, 2, 3)), rtol=1e-4)
    (y,) = run(lambda b, u, v: b.conv(u, v, [1, 1], [1, 1], [1, 1], 1, "forward", "NCHW", "EXPLICIT", []), x, w)
    assert y.shape == (2, 4, 5, 5)
    dy = RNG.standard_normal(y.shape).astype(np.float32)
    (dx,) = run(lambda b, u, v: b.conv(u, v, [1, 1], [1, 1], [1, 1], 1, "backward_data", output_shape=x.shape), w, dy)
    (dw,) = run(lambda b, u, v: b.conv(u, v, paddings=[1, 1], conv_type="backward_filter", output_shape=w.shape), x, dy)
    inner = float(np.vdot(y.astype(np.float64), dy))
    assert np.vdot(x.astype(np.float64), dx) == pytest.approx(inner, rel=1e-4)
    assert np.vdot(w.astype(np.float64), dw) == pytest.approx(inner, rel=1e-4)


def test_build_prints_the_program():
    b = CinnBuilder("net")
    x = b.create_input("float32", [4, 8], "x")
    y = b.max(x, b.const_scalar(0.0, "zero"))
    b.reduce(y, "sum", [1], False)
    text = str(b.build())
    assert "func.func @net(%x: tensor<4x8xf32>) -> tensor<4xf32>" in text
    assert "%zero = cinn.const_scalar 0.000000e+00 : f32" in text
    assert "cinn.reduce sum" in text and "func.return" in text


def test_builder_misuse_raises_the_verifier_message():
    b = CinnBuilder("net")
    x = b.create_input("float32", [4, 8], "x")
    i = b.create_input("int32", [8], "i")
    cases = [
        (lambda: b.reduce(x, "sum", [2], False), "expected 'dim' in [-2, 2), got 2"),
        (lambda: b.add(x, i), "expected 'rhs' element type to equal 'lhs' element type f32, got i32"),
        (lambda: b.sin(i), "expected 'x' element type to be float (f32, f64), got i32"),
        (lambda: b.transpose(x, [0]), "expected 'axis' to be a permutation of [0, 2), got [0]"),
        (lambda: b.reduce(x, "mean", [1], False), "expected 'kind' in ['sum', 'prod', 'max', 'min'], got 'mean'"),
        (lambda: b.compare(x, x, "lt2"), "expected 'kind' in"),
        (lambda: b.create_input("complex64", [1], "c"), "expected a dtype in"),
        (lambda: b.create_input("float32", [1], "x"), "expected a new Python identifier"),
        (lambda: b.const_scalar(300, "c", "int8"), "expected 'value' an integer in [-128, 127] for int8, got 300"),
        (lambda: b.compile([x], device="tpu"), "expected 'device' in"),
    ]
    for make, message in cases:
        with pytest.raises(CVMLogicError) as info:
            make()
        assert message in str(info.value)


def test_compiled_function_checks_its_inputs():
    b = CinnBuilder("net")
    x = b.create_input("float32", [2, 3], "x")
    fn = b.compile([b.abs(x)])
    with pytest.raises(CVMLogicError, match=r"input 'x': expected float32 \[2, 3\], got float64 \[2, 3\]"):
        fn(x=np.zeros((2, 3)))
    with pytest.raises(CVMLogicError, match=r"input 'x': expected float32 \[2, 3\], got float32 \[3, 2\]"):
        fn(x=np.zeros((3, 2), np.float32))
    with pytest.raises(CVMLogicError, match="missing"):
        fn()
    with pytest.raises(CVMLogicError, match="unexpected"):
        fn(x=np.zeros((2, 3), np.float32), y=1)


def test_cuda_without_a_gpu_is_a_clear_runtime_error():
    from cvmc.runtime.devices import cuda

    try:
        cuda.default_device()
    except CVMRuntimeError:
        pass
    else:
        pytest.skip("a CUDA device is present: the GPU tests cover this device")
    b = CinnBuilder("net")
    x = b.create_input("float32", [2], "x")
    with pytest.raises(CVMRuntimeError, match="no CUDA device"):
        b.compile([x], device="cuda")


@pytest.mark.parametrize("shape", [[10**30], [1 << 18, 1 << 13], [2] * 9])
def test_an_input_past_the_shape_caps_is_refused(shape):
    """F7: no [10**30] input compiles."""
    from cvmc.runtime.cinn_builder import MAX_ELEMENTS, MAX_RANK

    assert MAX_ELEMENTS == 1 << 30 and MAX_RANK == 8
    with pytest.raises(CVMLogicError, match="expected at most"):
        CinnBuilder("big").create_input("int32", shape, "x")


def test_the_caps_at_the_bound_and_one_past_it():
    b = CinnBuilder("edge")
    b.create_input("int8", [1 << 15, 1 << 15], "x")  # 2**30 elements: made (nothing is allocated to build)
    b.create_input("int8", [1] * 8, "y")
    with pytest.raises(CVMLogicError):
        b.create_input("int8", [(1 << 30) + 1], "z")


def test_a_result_past_the_cap_is_refused_when_made():
    """F7: a broadcast to 2**36 elements is a CVMLogicError when it is built, not numpy's MemoryError when run."""
    b = CinnBuilder("wide")
    x = b.create_input("int32", [1, 1], "x")
    with pytest.raises(CVMLogicError, match="at most 1073741824 elements"):
        b.broadcast_to(x, [1 << 18, 1 << 18], [0, 1])
    assert b.broadcast_to(x, [1 << 15, 1 << 15], [0, 1]) is not None
