"""The LLVM printer: loop-level kernels compiled with the JIT and compared with numpy and exact Python references.

Arrays are long enough (hundreds of elements) to run both the vectorized loop body and its scalar remainder.
"""

import math
import re

import numpy as np
import pytest

from cvmc.codegen.llvm import KernelArg, emit_llvm, kernel_specs, parse_loop_level
from cvmc.errors import CVMRuntimeError
from cvmc.runtime.engine.jit import compile_module, optimized_ir

NP = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "f32": np.float32,
      "f64": np.float64}  # fmt: skip


def map_kernel(name: str, n: int, inputs: list[str], output: str, body: str) -> str:
    """`out[i] = body(x0[i], x1[i], ...)` over a 1-d scf.parallel; `body` defines `%r` from `%x0`, `%x1`..."""
    args = ", ".join(f"%a{k}: memref<{n}x{t}>" for k, t in enumerate(inputs))
    loads = "\n".join(f"    %x{k} = memref.load %a{k}[%i] : memref<{n}x{t}>" for k, t in enumerate(inputs))
    return f"""
func.func @{name}({args}, %out: memref<{n}x{output}>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant {n} : index
  "scf.parallel"(%c0, %n, %c1) <{{operandSegmentSizes = array<i32: 1, 1, 1, 0>}}> ({{
  ^bb0(%i: index):
{loads}
    {body}
    memref.store %r, %out[%i] : memref<{n}x{output}>
    scf.reduce
  }}) : (index, index, index) -> ()
  func.return
}}"""


def compile_text(text: str):
    return compile_module(parse_loop_level(text), cache=False)


# ---------------------------------------------------------------------------------------------------------------
# Integer ops, total semantics
# ---------------------------------------------------------------------------------------------------------------


def wrap(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def unsigned(v: int, bits: int) -> int:
    return v & ((1 << bits) - 1)


def tdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


# Exact references on Python ints (the contract's total semantics); results are wrapped to the width afterwards.
INT_REFERENCE = {
    "addi": lambda a, b, n: a + b,
    "subi": lambda a, b, n: a - b,
    "muli": lambda a, b, n: a * b,
    "andi": lambda a, b, n: a & b,
    "ori": lambda a, b, n: a | b,
    "xori": lambda a, b, n: a ^ b,
    "divsi": lambda a, b, n: 0 if b == 0 else tdiv(a, b),
    "remsi": lambda a, b, n: 0 if b == 0 else a - b * tdiv(a, b),
    "divui": lambda a, b, n: 0 if b == 0 else unsigned(a, n) // unsigned(b, n),
    "remui": lambda a, b, n: 0 if b == 0 else unsigned(a, n) % unsigned(b, n),
    "floordivsi": lambda a, b, n: 0 if b == 0 else a // b,
    "ceildivsi": lambda a, b, n: 0 if b == 0 else -(-a // b),
    "ceildivui": lambda a, b, n: 0 if b == 0 else -(-unsigned(a, n) // unsigned(b, n)),
    "shli": lambda a, b, n: a << unsigned(b, n) if unsigned(b, n) < n else 0,
    "shrui": lambda a, b, n: unsigned(a, n) >> unsigned(b, n) if unsigned(b, n) < n else 0,
    "shrsi": lambda a, b, n: a >> min(unsigned(b, n), n - 1),
    "minsi": lambda a, b, n: min(a, b),
    "maxsi": lambda a, b, n: max(a, b),
    "minui": lambda a, b, n: min(unsigned(a, n), unsigned(b, n)),
    "maxui": lambda a, b, n: max(unsigned(a, n), unsigned(b, n)),
}
CMPI_REFERENCE = {
    "eq": lambda a, b, n: a == b,
    "ne": lambda a, b, n: a != b,
    "slt": lambda a, b, n: a < b,
    "sle": lambda a, b, n: a <= b,
    "sgt": lambda a, b, n: a > b,
    "sge": lambda a, b, n: a >= b,
    "ult": lambda a, b, n: unsigned(a, n) < unsigned(b, n),
    "ule": lambda a, b, n: unsigned(a, n) <= unsigned(b, n),
    "ugt": lambda a, b, n: unsigned(a, n) > unsigned(b, n),
    "uge": lambda a, b, n: unsigned(a, n) >= unsigned(b, n),
}
WIDTHS = (8, 32, 64)


def int_operands(bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of edge values (0, +-1, INT_MIN, INT_MAX, shift amounts 32, 40, bits...) plus random pairs."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    candidates = {0, 1, -1, 2, -2, 3, -7, 7, lo, hi, lo + 1, hi - 1, bits - 1, bits, bits + 1, 31, 32, 40, 63}
    special = sorted(v for v in candidates if lo <= v <= hi)
    rng = np.random.default_rng(bits)
    pairs = [(a, b) for a in special for b in special]
    pairs += [(int(a), int(b)) for a, b in rng.integers(lo, hi, size=(101, 2), endpoint=True)]
    dtype = NP[f"i{bits}"]
    return np.array([p[0] for p in pairs], dtype), np.array([p[1] for p in pairs], dtype)


@pytest.fixture(scope="module")
def int_engine():
    texts = []
    for bits in WIDTHS:
        n = len(int_operands(bits)[0])
        t = f"i{bits}"
        for op in INT_REFERENCE:
            texts.append(map_kernel(f"{op}_{t}", n, [t, t], t, f"%r = arith.{op} %x0, %x1 : {t}"))
        for pred in CMPI_REFERENCE:
            texts.append(map_kernel(f"cmpi_{pred}_{t}", n, [t, t], "i1", f"%r = arith.cmpi {pred}, %x0, %x1 : {t}"))
    return compile_text("\n".join(texts))


@pytest.mark.parametrize("bits", WIDTHS)
@pytest.mark.parametrize("op", list(INT_REFERENCE))
def test_integer_binary_ops_are_total(int_engine, op, bits):
    a, b = int_operands(bits)
    out = np.zeros_like(a)
    int_engine[f"{op}_i{bits}"](a, b, out)
    ref = INT_REFERENCE[op]
    expected = np.array([wrap(ref(int(x), int(y), bits), bits) for x, y in zip(a, b, strict=True)], a.dtype)
    bad = np.nonzero(out != expected)[0]
    assert bad.size == 0, f"{op} i{bits}: {a[bad[:5]]} op {b[bad[:5]]} gave {out[bad[:5]]}, not {expected[bad[:5]]}"


@pytest.mark.parametrize("bits", WIDTHS)
@pytest.mark.parametrize("pred", list(CMPI_REFERENCE))
def test_cmpi(int_engine, pred, bits):
    a, b = int_operands(bits)
    out = np.zeros(a.shape, np.bool_)
    int_engine[f"cmpi_{pred}_i{bits}"](a, b, out)
    expected = np.array([CMPI_REFERENCE[pred](int(x), int(y), bits) for x, y in zip(a, b, strict=True)])
    np.testing.assert_array_equal(out, expected)


def test_division_edge_cases_i32():
    """The contract's cases, spelled out: x / 0 == 0, x % 0 == 0, INT_MIN / -1 == INT_MIN, INT_MIN % -1 == 0."""
    lo = np.iinfo(np.int32).min
    a = np.array([5, -5, lo, lo, 7] * 50, np.int32)
    b = np.array([0, 0, -1, 0, -2] * 50, np.int32)
    expect = {
        "divsi": [0, 0, lo, 0, -3],
        "remsi": [0, 0, 0, 0, 1],
        "floordivsi": [0, 0, lo, 0, -4],
        "ceildivsi": [0, 0, lo, 0, -3],
        "divui": [0, 0, 0, 0, 0],
        "remui": [0, 0, lo, 0, 7],  # 2**31 % (2**32 - 1)
    }
    engine = compile_text("\n".join(
        map_kernel(op, a.size, ["i32", "i32"], "i32", f"%r = arith.{op} %x0, %x1 : i32") for op in expect
    ))  # fmt: skip
    for op, values in expect.items():
        out = np.ones_like(a)
        engine[op](a, b, out)
        np.testing.assert_array_equal(out, np.array(values * 50, np.int32), err_msg=op)


@pytest.mark.parametrize("t", ["i8", "i16", "i32"])
def test_division_by_variables_in_floating_point_is_exact(t):
    """Up to 32 bits, division by a non-constant goes through f32 / f64: compare 200k random pairs (small and
    large divisors, dividends near the extremes) with exact integer division."""
    info = np.iinfo(NP[t])
    rng = np.random.default_rng(7)
    n = 200_000
    a = rng.integers(info.min, info.max, n, endpoint=True)
    a[: n // 4] = rng.choice([info.min, info.min + 1, info.max, info.max - 1], n // 4)
    b = np.where(rng.random(n) < 0.5, rng.integers(-20, 20, n), rng.integers(info.min, info.max, n, endpoint=True))
    a, b = a.astype(NP[t]), b.astype(NP[t])
    ops = ("divsi", "remsi", "divui", "remui", "floordivsi", "ceildivui")
    engine = compile_text("\n".join(
        map_kernel(op, n, [t, t], t, f"%r = arith.{op} %x0, %x1 : {t}") for op in ops
    ))  # fmt: skip
    x, y = a.astype(np.int64), b.astype(np.int64)
    ux, uy = a.view(f"u{a.itemsize}").astype(np.int64), b.view(f"u{a.itemsize}").astype(np.int64)
    safe, usafe = np.where(y == 0, 1, y), np.where(uy == 0, 1, uy)
    trunc = np.abs(x) // np.abs(safe) * np.sign(x) * np.sign(safe)
    expected = {
        "divsi": np.where(y == 0, 0, trunc),
        "remsi": np.where(y == 0, 0, x - trunc * safe),
        "divui": np.where(uy == 0, 0, ux // usafe),
        "remui": np.where(uy == 0, 0, ux % usafe),
        "floordivsi": np.where(y == 0, 0, x // safe),
        "ceildivui": np.where(uy == 0, 0, -(-ux // usafe)),
    }
    for op in ops:
        out = np.zeros_like(a)
        engine[op](a, b, out)
        np.testing.assert_array_equal(out, expected[op].astype(NP[t]), err_msg=op)  # wraps INT_MIN / -1


def test_shift_edge_cases():
    """Shift amounts 32, 40 and -1 on i32 (8, 9, -1 on i8; 64, 70, -1 on i64): 0 for shli and shrui, the sign
    fill for shrsi."""
    expect = {"shli": [0] * 6, "shrui": [0] * 6, "shrsi": [-1, 0, -1, 0, -1, 0]}
    for t, amounts in (("i32", [32, 40, -1]), ("i8", [8, 9, -1]), ("i64", [64, 70, -1])):
        a = np.array([-8, 8] * 3 * 20, NP[t])
        b = np.array([x for x in amounts for _ in (0, 1)] * 20, NP[t])
        engine = compile_text("\n".join(
            map_kernel(op, a.size, [t, t], t, f"%r = arith.{op} %x0, %x1 : {t}") for op in expect
        ))  # fmt: skip
        for op, values in expect.items():
            out = np.ones_like(a)
            engine[op](a, b, out)
            np.testing.assert_array_equal(out, np.array(values * 20, NP[t]), err_msg=f"{op} {t}")


CASTS = [
    # (input type, output type, MLIR body, numpy reference on the input array)
    ("i8", "i32", "%r = arith.extsi %x0 : i8 to i32", lambda x: x.astype(np.int32)),
    ("i8", "i32", "%r = arith.extui %x0 : i8 to i32", lambda x: x.view(np.uint8).astype(np.int32)),
    ("i32", "i8", "%r = arith.trunci %x0 : i32 to i8", lambda x: x.astype(np.int8)),
    ("i32", "i64", "%t = arith.index_cast %x0 : i32 to index\n    %r = arith.index_cast %t : index to i64",
     lambda x: x.astype(np.int64)),
    ("i64", "i16", "%t = arith.index_cast %x0 : i64 to index\n    %r = arith.index_cast %t : index to i16",
     lambda x: x.astype(np.int16)),
    ("i32", "f32", "%r = arith.sitofp %x0 : i32 to f32", lambda x: x.astype(np.float32)),
    ("i32", "f64", "%r = arith.uitofp %x0 : i32 to f64", lambda x: x.view(np.uint32).astype(np.float64)),
    ("i32", "f32", "%r = arith.bitcast %x0 : i32 to f32", lambda x: x.view(np.float32)),
    ("f32", "f64", "%r = arith.extf %x0 : f32 to f64", lambda x: x.astype(np.float64)),
    ("f64", "f32", "%r = arith.truncf %x0 : f64 to f32", lambda x: x.astype(np.float32)),
]  # fmt: skip


@pytest.mark.parametrize(("src", "dst", "body", "reference"), CASTS)
def test_casts(src, dst, body, reference):
    rng = np.random.default_rng(0)
    if src.startswith("i"):
        info = np.iinfo(NP[src])
        x = rng.integers(info.min, info.max, 300, endpoint=True).astype(NP[src])
        x[:4] = [0, -1, info.min, info.max]
    else:
        x = (rng.standard_normal(300) * 1e3).astype(NP[src])
    out = np.zeros(x.size, NP[dst])
    compile_text(map_kernel("k", x.size, [src], dst, body))["k"](x, out)
    np.testing.assert_array_equal(out.view(np.uint8), reference(x).view(np.uint8))


def test_fptosi_fptoui_saturate():
    """Float to int never gives poison: NaN is 0, out-of-range values clamp."""
    x = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 3.9, -3.9, 127.5, -128.7, 300.0, -1.0] * 20, np.float32)
    si, ui, si8 = np.zeros(x.size, np.int32), np.zeros(x.size, np.int32), np.zeros(x.size, np.int8)
    text = (map_kernel("si", x.size, ["f32"], "i32", "%r = arith.fptosi %x0 : f32 to i32")
            + map_kernel("ui", x.size, ["f32"], "i32", "%r = arith.fptoui %x0 : f32 to i32")
            + map_kernel("si8", x.size, ["f32"], "i8", "%r = arith.fptosi %x0 : f32 to i8"))  # fmt: skip
    engine = compile_text(text)
    engine["si"](x, si)
    engine["ui"](x, ui)
    engine["si8"](x, si8)
    imax, imin = 2**31 - 1, -(2**31)
    np.testing.assert_array_equal(si[:11], [0, imax, imin, imax, imin, 3, -3, 127, -128, 300, -1])
    np.testing.assert_array_equal(ui[:11].view(np.uint32), [0, 2**32 - 1, 0, 2**32 - 1, 0, 3, 0, 127, 0, 300, 0])
    np.testing.assert_array_equal(si8[:11], [0, 127, -128, 127, -128, 3, -3, 127, -128, 127, -1])


def test_select_and_integer_math():
    rng = np.random.default_rng(1)
    a = rng.integers(-50, 50, 257).astype(np.int32)
    a[:2] = [np.iinfo(np.int32).min, -7]
    b = rng.integers(-3, 12, 257).astype(np.int32)
    text = (map_kernel("absi", a.size, ["i32"], "i32", "%r = math.absi %x0 : i32")
            + map_kernel("sel", a.size, ["i32", "i32"], "i32",
                         "%c = arith.cmpi slt, %x0, %x1 : i32\n    %r = arith.select %c, %x0, %x1 : i32")
            + map_kernel("ipowi", a.size, ["i32", "i32"], "i32", "%r = math.ipowi %x0, %x1 : i32"))  # fmt: skip
    engine = compile_text(text)
    out = np.zeros_like(a)
    engine["absi"](a, out)
    np.testing.assert_array_equal(out, np.abs(a))  # numpy also keeps INT_MIN
    engine["sel"](a, b, out)
    np.testing.assert_array_equal(out, np.minimum(a, b))
    engine["ipowi"](a, b, out)

    def ipow(x: int, e: int) -> int:
        if e >= 0:
            return wrap(x**e, 32)
        return 1 if x == 1 else (-1 if e % 2 else 1) if x == -1 else 0

    np.testing.assert_array_equal(out, [ipow(int(x), int(e)) for x, e in zip(a, b, strict=True)])


# ---------------------------------------------------------------------------------------------------------------
# Floats and math
# ---------------------------------------------------------------------------------------------------------------


def round_half_away(x: np.ndarray) -> np.ndarray:
    t = np.trunc(x)
    return t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0).astype(x.dtype)


# name -> (MLIR op, numpy reference, input domain)
MATH_UNARY = {
    "absf": (np.abs, (-5, 5)),
    "exp": (np.exp, (-5, 5)),
    "expm1": (np.expm1, (-1, 1)),
    "log": (np.log, (0.01, 100)),
    "log1p": (np.log1p, (-0.5, 10)),
    "log2": (np.log2, (0.01, 100)),
    "log10": (np.log10, (0.01, 100)),
    "sqrt": (np.sqrt, (0, 100)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.01, 100)),
    "sin": (np.sin, (-7, 7)),
    "cos": (np.cos, (-7, 7)),
    "tan": (np.tan, (-1.5, 1.5)),
    "tanh": (np.tanh, (-5, 5)),
    "asin": (np.arcsin, (-1, 1)),
    "acos": (np.arccos, (-1, 1)),
    "atan": (np.arctan, (-10, 10)),
    "sinh": (np.sinh, (-5, 5)),
    "cosh": (np.cosh, (-5, 5)),
    "asinh": (np.arcsinh, (-10, 10)),
    "acosh": (np.arccosh, (1, 10)),
    "atanh": (np.arctanh, (-0.99, 0.99)),
    "erf": (np.vectorize(math.erf), (-3, 3)),
    "floor": (np.floor, (-5, 5)),
    "ceil": (np.ceil, (-5, 5)),
    "round": (round_half_away, (-5, 5)),
    "trunc": (np.trunc, (-5, 5)),
}
MATH_BINARY = {
    "powf": ("math.powf", np.power, (0.1, 4)),
    "copysign": ("math.copysign", np.copysign, (-5, 5)),
    "minimumf": ("arith.minimumf", np.minimum, (-5, 5)),
    "maximumf": ("arith.maximumf", np.maximum, (-5, 5)),
    "addf": ("arith.addf", np.add, (-5, 5)),
    "subf": ("arith.subf", np.subtract, (-5, 5)),
    "mulf": ("arith.mulf", np.multiply, (-5, 5)),
    "divf": ("arith.divf", np.divide, (0.5, 5)),
}


@pytest.fixture(scope="module")
def math_engine():
    texts = []
    for t in ("f32", "f64"):
        for name in MATH_UNARY:
            texts.append(map_kernel(f"{name}_{t}", 300, [t], t, f"%r = math.{name} %x0 : {t}"))
        for name, (op, _, _) in MATH_BINARY.items():
            texts.append(map_kernel(f"{name}_{t}", 300, [t, t], t, f"%r = {op} %x0, %x1 : {t}"))
        texts.append(map_kernel(f"fma_{t}", 300, [t, t, t], t, f"%r = math.fma %x0, %x1, %x2 : {t}"))
        texts.append(map_kernel(f"negf_{t}", 300, [t], t, f"%r = arith.negf %x0 : {t}"))
        texts.append(map_kernel(f"remf_{t}", 300, [t, t], t, f'%r = "arith.remf"(%x0, %x1) : ({t}, {t}) -> {t}'))
    return compile_text("\n".join(texts))


def float_inputs(t: str, domain: tuple[float, float], seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).uniform(*domain, 300).astype(NP[t])
    if domain[0] <= -2.5 and domain[1] >= 2.5:
        x[:4] = [-2.5, -0.5, 0.5, 2.5]  # rounding ties
    return x


@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("name", list(MATH_UNARY))
def test_math_unary(math_engine, name, t):
    reference, domain = MATH_UNARY[name]
    x = float_inputs(t, domain)
    out = np.zeros_like(x)
    math_engine[f"{name}_{t}"](x, out)
    expected = reference(x.astype(np.float64))
    np.testing.assert_allclose(out, expected, rtol=2e-6 if t == "f32" else 1e-13, atol=1e-6 if t == "f32" else 1e-14)


@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("name", [*MATH_BINARY, "fma", "remf", "negf"])
def test_math_binary(math_engine, name, t):
    _, reference, domain = MATH_BINARY.get(name, (None, None, (-5, 5)))
    x, y, z = (float_inputs(t, domain, seed) for seed in range(3))
    out = np.zeros_like(x)
    if name == "fma":
        math_engine[f"fma_{t}"](x, y, z, out)
        expected = x.astype(np.float64) * y + z
    elif name == "negf":
        math_engine[f"negf_{t}"](x, out)
        expected = -x
    else:
        math_engine[f"{name}_{t}"](x, y, out)
        expected = np.fmod(x, y) if name == "remf" else reference(x, y)
    np.testing.assert_allclose(out, expected, rtol=2e-6 if t == "f32" else 1e-13, atol=1e-6 if t == "f32" else 1e-14)


def test_minimumf_maximumf_propagate_nan_and_order_zeros():
    x = np.array([np.nan, 1.0, -0.0, 0.0] * 10, np.float32)
    y = np.array([1.0, np.nan, 0.0, -0.0] * 10, np.float32)
    text = (map_kernel("mn", x.size, ["f32", "f32"], "f32", "%r = arith.minimumf %x0, %x1 : f32")
            + map_kernel("mx", x.size, ["f32", "f32"], "f32", "%r = arith.maximumf %x0, %x1 : f32"))  # fmt: skip
    engine = compile_text(text)
    mn, mx = np.zeros_like(x), np.zeros_like(x)
    engine["mn"](x, y, mn)
    engine["mx"](x, y, mx)
    assert np.isnan(mn[:2]).all() and np.isnan(mx[:2]).all()
    assert np.signbit(mn[2:4]).all() and not np.signbit(mx[2:4]).any()


CMPF = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une", "uno",
        "true"]  # fmt: skip


def test_cmpf_all_predicates_with_nan():
    vals = np.array([np.nan, -1.0, 0.0, 1.0, np.inf], np.float64)
    a, b = (v.ravel() for v in np.meshgrid(vals, vals))
    a, b = np.tile(a, 8), np.tile(b, 8)
    engine = compile_text("\n".join(
        map_kernel(p, a.size, ["f64", "f64"], "i1", f"%r = arith.cmpf {p}, %x0, %x1 : f64") for p in CMPF
    ))  # fmt: skip
    unordered = np.isnan(a) | np.isnan(b)
    ordered = {"eq": a == b, "gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b, "ne": (a != b) & ~unordered}
    for p in CMPF:
        if p in ("false", "true"):
            expected = np.full(a.shape, p == "true")
        elif p == "ord":
            expected = ~unordered
        elif p == "uno":
            expected = unordered
        elif p[0] == "o":
            expected = ordered[p[1:]] & ~unordered
        else:
            expected = ordered[p[1:]] | unordered
        out = np.zeros(a.shape, np.bool_)
        engine[p](a, b, out)
        np.testing.assert_array_equal(out, expected, err_msg=p)


def test_float_classification():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -1.5, 3e38, 1e-45] * 30, np.float32)
    engine = compile_text("\n".join(
        map_kernel(p, x.size, ["f32"], "i1", f'%r = "math.{p}"(%x0) : (f32) -> i1')
        for p in ("isnan", "isinf", "isfinite")
    ))  # fmt: skip
    for p, reference in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)):
        out = np.zeros(x.shape, np.bool_)
        engine[p](x, out)
        np.testing.assert_array_equal(out, reference(x), err_msg=p)


# ---------------------------------------------------------------------------------------------------------------
# i1 in memory, control flow, layouts, allocation
# ---------------------------------------------------------------------------------------------------------------


def test_i1_loads_and_stores_are_bytes():
    a = np.array([True, False, True, False] * 40)
    b = np.array([True, True, False, False] * 40)
    out = np.zeros(a.size, np.bool_)
    engine = compile_text(map_kernel("xor", a.size, ["i1", "i1"], "i1", "%r = arith.xori %x0, %x1 : i1"))
    engine["xor"](a, b, out)
    np.testing.assert_array_equal(out, a ^ b)
    assert set(out.view(np.uint8)) <= {0, 1}
    # Any non-zero byte reads as true.
    raw = np.array([0, 1, 2, 255] * 40, np.uint8)
    engine["xor"](raw, np.zeros(raw.size, np.bool_), out)
    np.testing.assert_array_equal(out, raw != 0)


def test_matmul_with_iter_args():
    m, k, n = 7, 19, 13
    text = f"""
func.func @mm(%a: memref<{m}x{k}xi32>, %b: memref<{k}x{n}xi32>, %c: memref<{m}x{n}xi32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cm = arith.constant {m} : index
  %ck = arith.constant {k} : index
  %cn = arith.constant {n} : index
  %z = arith.constant 0 : i32
  scf.for %i = %c0 to %cm step %c1 {{
    scf.for %j = %c0 to %cn step %c1 {{
      %s = scf.for %p = %c0 to %ck step %c1 iter_args(%acc = %z) -> (i32) {{
        %x = memref.load %a[%i, %p] : memref<{m}x{k}xi32>
        %y = memref.load %b[%p, %j] : memref<{k}x{n}xi32>
        %xy = arith.muli %x, %y : i32
        %next = arith.addi %acc, %xy : i32
        scf.yield %next : i32
      }}
      memref.store %s, %c[%i, %j] : memref<{m}x{n}xi32>
    }}
  }}
  func.return
}}"""
    rng = np.random.default_rng(2)
    a = rng.integers(-2**20, 2**20, (m, k)).astype(np.int32)
    b = rng.integers(-2**20, 2**20, (k, n)).astype(np.int32)
    c = np.zeros((m, n), np.int32)
    compile_text(text)["mm"](a, b, c)
    np.testing.assert_array_equal(c, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32))  # wraps


def test_scf_if_with_results():
    text = """
func.func @relu_or_double(%a: memref<100xi32>, %out: memref<100xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 100 : index
  %zero = arith.constant 0 : i32
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %a[%i] : memref<100xi32>
    %neg = arith.cmpi slt, %x, %zero : i32
    %r, %s = scf.if %neg -> (i32, i32) {
      scf.yield %zero, %x : i32, i32
    } else {
      %d = arith.addi %x, %x : i32
      scf.yield %d, %zero : i32, i32
    }
    %sum = arith.addi %r, %s : i32
    memref.store %sum, %out[%i] : memref<100xi32>
  }
  func.return
}"""
    a = np.arange(-50, 50, dtype=np.int32)
    out = np.zeros_like(a)
    compile_text(text)["relu_or_double"](a, out)
    np.testing.assert_array_equal(out, np.where(a < 0, a, 2 * a))


STRIDED = """
func.func @strided(%src: memref<4x5xi32, strided<[10, 2], offset: 3>>, %dst: memref<4x5xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c5 step %c1 {
      %x = memref.load %src[%i, %j] : memref<4x5xi32, strided<[10, 2], offset: 3>>
      memref.store %x, %dst[%i, %j] : memref<4x5xi32>
    }
  }
  func.return
}"""


def test_strided_argument_as_view_and_as_buffer():
    base = np.arange(60, dtype=np.int32)
    expected = base[3:].reshape(-1)[: 4 * 10].reshape(4, 10)[:, ::2]
    engine = compile_text(STRIDED)
    out = np.zeros((4, 5), np.int32)
    engine["strided"](base, out)  # the whole buffer
    np.testing.assert_array_equal(out, expected)
    out[:] = 0
    engine["strided"](expected, out)  # the numpy view with the same strides
    np.testing.assert_array_equal(out, expected)


def test_views_copy_and_allocation():
    """subview and reinterpret_cast read through static layouts; copy handles strided and contiguous memrefs;
    alloca and alloc give scratch buffers."""
    text = """
func.func @views(%a: memref<6x8xi32>, %out: memref<3x4xi32>, %flat: memref<12xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %sub = memref.subview %a[2, 1] [3, 4] [1, 2] : memref<6x8xi32> to memref<3x4xi32, strided<[8, 2], offset: 17>>
  %tmp = memref.alloca() : memref<3x4xi32>
  "memref.copy"(%sub, %tmp) : (memref<3x4xi32, strided<[8, 2], offset: 17>>, memref<3x4xi32>) -> ()
  %heap = memref.alloc() : memref<3x4xi32>
  "memref.copy"(%tmp, %heap) : (memref<3x4xi32>, memref<3x4xi32>) -> ()
  "memref.copy"(%heap, %out) : (memref<3x4xi32>, memref<3x4xi32>) -> ()
  memref.dealloc %heap : memref<3x4xi32>
  %row = memref.reinterpret_cast %a to offset: [40], sizes: [1, 8], strides: [8, 1]
      : memref<6x8xi32> to memref<1x8xi32, strided<[8, 1], offset: 40>>
  scf.for %j = %c0 to %c3 step %c1 {
    %x = memref.load %row[%c0, %j] : memref<1x8xi32, strided<[8, 1], offset: 40>>
    memref.store %x, %flat[%j] : memref<12xi32>
  }
  func.return
}"""
    a = np.arange(48, dtype=np.int32).reshape(6, 8)
    out = np.zeros((3, 4), np.int32)
    flat = np.zeros(12, np.int32)
    compile_text(text)["views"](a, out, flat)
    np.testing.assert_array_equal(out, a[2:5, 1:8:2])
    np.testing.assert_array_equal(flat[:3], a[5, :3])


def test_rank0_memrefs():
    text = """
func.func @acc(%x: memref<i64>, %y: memref<i64>) {
  %a = memref.load %x[] : memref<i64>
  %b = memref.load %y[] : memref<i64>
  %s = arith.addi %a, %b : i64
  memref.store %s, %y[] : memref<i64>
  func.return
}"""
    x, y = np.array(2**40, np.int64), np.array(5, np.int64)
    compile_text(text)["acc"](x, y)
    assert y == 2**40 + 5


# ---------------------------------------------------------------------------------------------------------------
# What the printer emits
# ---------------------------------------------------------------------------------------------------------------


def test_elementwise_add_vectorizes():
    module = parse_loop_level(map_kernel("add", 1024, ["i32", "i32"], "i32", "%r = arith.addi %x0, %x1 : i32"))
    text = str(emit_llvm(module))
    assert "ptrtoint" not in text and "getelementptr inbounds i32" in text
    assert re.search(r"ptr captures\(none\) noalias", text)
    optimized = optimized_ir(emit_llvm(module))
    widths = {int(w) for w in re.findall(r"add <(\d+) x i32>", optimized)}
    assert widths and min(widths) >= 4, optimized


def test_shifts_stay_branch_free_and_vectorize():
    module = parse_loop_level(map_kernel("shl", 1024, ["i32", "i32"], "i32", "%r = arith.shli %x0, %x1 : i32"))
    optimized = optimized_ir(emit_llvm(module))
    assert re.search(r"shl <\d+ x i32>", optimized), optimized


def test_kernel_specs():
    module = parse_loop_level(map_kernel("add", 10, ["i32", "i32"], "i32", "%r = arith.addi %x0, %x1 : i32")
                              + STRIDED)  # fmt: skip
    specs = kernel_specs(module)
    assert list(specs) == ["add", "strided"]
    add = specs["add"]
    assert (add.trip, add.splittable) == (10, True)
    assert [a.written for a in add.args] == [False, False, True]
    assert add.args[0] == KernelArg((10,), "i32", (1,), 0, False)
    strided = specs["strided"]
    assert (strided.trip, strided.splittable) == (1, False)
    assert strided.args[0].strides == (10, 2) and strided.args[0].offset == 3
    assert strided.args[0].element_span() == (3, 3 + 3 * 10 + 4 * 2 + 1)


def test_unsupported_op_is_reported():
    text = map_kernel("k", 4, ["i32"], "i32", '%r = "arith.frobnicate"(%x0) : (i32) -> i32')
    with pytest.raises(CVMRuntimeError, match="unsupported op 'arith.frobnicate'"):
        emit_llvm(parse_loop_level(text))


def test_dynamic_layout_is_rejected():
    text = """
func.func @k(%a: memref<4xi32, strided<[?], offset: 0>>) {
  func.return
}"""
    with pytest.raises(CVMRuntimeError, match="expected static strides and offset"):
        emit_llvm(parse_loop_level(text))


def test_scf_if_without_else_and_copy_between_offsets():
    text = """
func.func @clip_copy(%a: memref<2x6xi32>, %out: memref<6xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %lim = arith.constant 3 : i32
  %row = memref.subview %a[1, 0] [1, 6] [1, 1] : memref<2x6xi32> to memref<6xi32, strided<[1], offset: 6>>
  "memref.copy"(%row, %out) : (memref<6xi32, strided<[1], offset: 6>>, memref<6xi32>) -> ()
  scf.for %i = %c0 to %c6 step %c1 {
    %x = memref.load %out[%i] : memref<6xi32>
    %big = arith.cmpi sgt, %x, %lim : i32
    scf.if %big {
      memref.store %lim, %out[%i] : memref<6xi32>
    }
  }
  func.return
}"""
    a = np.arange(12, dtype=np.int32).reshape(2, 6) - 4
    out = np.zeros(6, np.int32)
    compile_text(text)["clip_copy"](a, out)
    np.testing.assert_array_equal(out, np.minimum(a[1], 3))


def test_other_math_ops():
    """Ops beyond the loop-level list that xDSL's math dialect has: exp2, cbrt, atan2, roundeven, fpowi,
    minnumf / maxnumf, and the bit counts. The kernels are named after the ops: `cbrt` and `atan2` are libm's
    names too, so their kernels become `cbrt.kernel` and `atan2.kernel` and the libm calls still reach libm."""
    x = np.array([-2.5, -0.5, 0.5, 1.5, 2.5, 8.0, -27.0, 3.25] * 20, np.float64)
    y = np.array([1.0, -2.0, 0.5, np.nan, 3.0, -1.0, 2.0, 0.25] * 20, np.float64)
    n = np.array([0, 1, 2, 3, -1, -2, 5, 7] * 20, np.int32)
    bits = np.array([0, 1, -1, 12, 2**30, -(2**31), 255, 96] * 20, np.int32)
    unary = {"exp2": np.exp2, "cbrt": np.cbrt, "roundeven": np.round}
    binary = {"math.atan2": np.arctan2, "arith.minnumf": np.fmin, "arith.maxnumf": np.fmax}
    texts = [map_kernel(k, x.size, ["f64"], "f64", f"%r = math.{k} %x0 : f64") for k in unary]
    texts += [map_kernel(k.split(".")[1], x.size, ["f64", "f64"], "f64", f"%r = {k} %x0, %x1 : f64") for k in binary]
    texts.append(map_kernel("fpowi", x.size, ["f64", "i32"], "f64", "%r = math.fpowi %x0, %x1 : f64, i32"))
    texts += [map_kernel(k, x.size, ["i32"], "i32", f"%r = math.{k} %x0 : i32") for k in ("ctlz", "cttz", "ctpop")]
    engine = compile_text("\n".join(texts))
    assert [engine[k].spec.symbol for k in ("cbrt", "exp2", "atan2")] == ["cbrt.kernel", "exp2.kernel", "atan2.kernel"]
    out = np.zeros_like(x)
    for name, reference in unary.items():
        engine[name](x, out)
        np.testing.assert_allclose(out, reference(x), rtol=1e-15, err_msg=name)
    for name, reference in binary.items():
        engine[name.split(".")[1]](x, y, out)
        np.testing.assert_allclose(out, reference(x, y), rtol=1e-15, err_msg=name)
    engine["fpowi"](x, n, out)
    np.testing.assert_allclose(out, x ** n.astype(np.float64), rtol=1e-15)
    counts = np.zeros_like(bits)
    u = [int(b) & 0xFFFFFFFF for b in bits]
    for name, reference in (("ctlz", lambda v: 32 - v.bit_length()),
                            ("cttz", lambda v: (v & -v).bit_length() - 1 if v else 32),
                            ("ctpop", lambda v: bin(v).count("1"))):  # fmt: skip
        engine[name](bits, counts)
        np.testing.assert_array_equal(counts, [reference(v) for v in u], err_msg=name)
