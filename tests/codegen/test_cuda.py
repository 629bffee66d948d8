"""cvmc.codegen.cuda: the generated CUDA compiles for the GPU (NVRTC, else nvcc), and computes what the loop
level says when run on the CPU by `cuda_host` (the generated source with a host shim, under UBSan).

The integer ops are checked against a Python model of the loop-level contract on edge values of every width,
the float ops against numpy, the control-flow and memory tests against numpy; under several emulated grids.
(The corpus and the CINN primitives, through the runtime, are in tests/runtime/test_cuda_device.py.)
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from cuda_host import compile_for_device, compile_host, device_compiler, host_compiler, run_grid

from cvmc.codegen.cuda import emit_cuda
from cvmc.codegen.cuda_launch import BLOCK_SIZE, kernel_specs
from cvmc.codegen.llvm import parse_loop_level
from cvmc.errors import CVMRuntimeError

COMPILER, WHY = device_compiler()
needs_device_compiler = pytest.mark.skipif(COMPILER is None, reason=WHY)
needs_host_compiler = pytest.mark.skipif(host_compiler() is None, reason="no host C++ compiler to emulate CUDA")
RNG = np.random.default_rng(6)
GRIDS = [(1, 1), (2, 3), (3, 1), (1, 7)]


_PRINTED: dict[int, tuple[object, dict, str]] = {}


def run(module, kernel: str, *buffers: np.ndarray, grid: tuple[int, int] = (2, 3)) -> None:
    """Run kernel `kernel` of `module` on the CPU; each buffer is the argument's base buffer (C-contiguous)."""
    if id(module) not in _PRINTED or _PRINTED[id(module)][0] is not module:
        _PRINTED[id(module)] = (module, kernel_specs(module), emit_cuda(module))
    _, specs, source = _PRINTED[id(module)]
    lib = compile_host(source)
    blocks, threads = grid if specs[kernel].parallel else (1, 1)
    run_grid(lib, specs[kernel].symbol, [b.ctypes.data for b in buffers], blocks, threads)


def parallel(n: int, body: str, ivs: str = "%i") -> str:
    """A 1-D `scf.parallel` over [0, n) in generic form (xDSL 0.74 has no custom syntax for it)."""
    return (f'%p0 = arith.constant 0 : index\n%p1 = arith.constant 1 : index\n%pn = arith.constant {n} : index\n'
            f'"scf.parallel"(%p0, %pn, %p1) <{{operandSegmentSizes = array<i32: 1, 1, 1, 0>}}> ({{\n'
            f'^bb0({ivs}: index):\n{body}\nscf.reduce\n}}) : (index, index, index) -> ()')  # fmt: skip


# --------------------------------------------------------------------------------------------------------------
# Every integer op, on every width, against a Python model of the contract
# --------------------------------------------------------------------------------------------------------------

WIDTHS = [1, 8, 16, 32, 64]
INT_BINARY = ["addi", "subi", "muli", "andi", "ori", "xori", "divsi", "divui", "remsi", "remui", "floordivsi",
              "ceildivsi", "ceildivui", "shli", "shrsi", "shrui", "minsi", "maxsi", "minui", "maxui"]  # fmt: skip
CMPI = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
NUMPY_INT = {1: np.bool_, 8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def signed(x: int, w: int) -> int:
    half = 1 << (w - 1)
    return (x + half) % (2 * half) - half


def contract(op: str, a: int, b: int, w: int) -> int:
    """The loop level's total semantics of `op` on `w`-bit operands (signed values in, signed value out)."""
    m = (1 << w) - 1
    ua, ub = a & m, b & m

    def tdiv(x: int, y: int) -> int:
        q = abs(x) // abs(y)
        return q if (x < 0) == (y < 0) else -q

    table = {
        "addi": lambda: a + b, "subi": lambda: a - b, "muli": lambda: a * b,
        "andi": lambda: ua & ub, "ori": lambda: ua | ub, "xori": lambda: ua ^ ub,
        "divsi": lambda: 0 if b == 0 else tdiv(a, b),
        "remsi": lambda: 0 if b == 0 else a - b * tdiv(a, b),
        "floordivsi": lambda: 0 if b == 0 else a // b,
        "ceildivsi": lambda: 0 if b == 0 else -(-a // b),
        "divui": lambda: 0 if ub == 0 else ua // ub,
        "remui": lambda: 0 if ub == 0 else ua % ub,
        "ceildivui": lambda: 0 if ub == 0 else -(-ua // ub),
        "shli": lambda: ua << ub if ub < w else 0,
        "shrui": lambda: ua >> ub if ub < w else 0,
        "shrsi": lambda: a >> min(ub, w - 1),
        "minsi": lambda: min(a, b), "maxsi": lambda: max(a, b),
        "minui": lambda: a if ua <= ub else b, "maxui": lambda: a if ua >= ub else b,
        "ipowi": lambda: ((1 if a == 1 else ((-1 if b & 1 else 1) if a == -1 else 0)) if b < 0
                          else pow(a, b, 1 << w)),
        "eq": lambda: a == b, "ne": lambda: a != b, "slt": lambda: a < b, "sle": lambda: a <= b,
        "sgt": lambda: a > b, "sge": lambda: a >= b, "ult": lambda: ua < ub, "ule": lambda: ua <= ub,
        "ugt": lambda: ua > ub, "uge": lambda: ua >= ub,
    }  # fmt: skip
    result = table[op]()
    return int(result) if op in CMPI else signed(result, w)


def operand_pairs(w: int) -> tuple[list[int], list[int]]:
    """Every pair of edge values (zero, +-1, INT_MIN, INT_MAX, shift amounts around w) plus random pairs."""
    if w == 1:
        values = [0, -1]
    else:
        lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
        values = sorted({signed(v, w) for v in (0, 1, -1, 2, -2, 3, -3, 7, 5, lo, lo + 1, hi, hi - 1, w - 1, w,
                                                 w + 1, -w)})  # fmt: skip
    a = [x for x in values for _ in values]
    b = [y for _ in values for y in values]
    if w > 1:
        lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
        a += [int(v) for v in RNG.integers(lo, hi, 40, endpoint=True)]
        b += [int(v) for v in RNG.integers(lo, hi, 40, endpoint=True)]
        b[-10:] = [int(v) for v in RNG.integers(-3, 4, 10)]
    return a, b


def int_kernel(op: str, w: int, n: int) -> str:
    t = f"i{w}"
    mem, out_mem = f"memref<{n}x{t}>", f"memref<{n}xi1>" if op in CMPI else f"memref<{n}x{t}>"
    if op in CMPI:
        compute = f"%r = arith.cmpi {op}, %x, %y : {t}"
    elif op == "ipowi":
        compute = f"%r = math.ipowi %x, %y : {t}"
    else:
        compute = f"%r = arith.{op} %x, %y : {t}"
    body = (f"%x = memref.load %a[%i] : {mem}\n%y = memref.load %b[%i] : {mem}\n{compute}\n"
            f"memref.store %r, %out[%i] : {out_mem}")  # fmt: skip
    return f"func.func @{op}_{t}(%out: {out_mem}, %a: {mem}, %b: {mem}) {{\n{parallel(n, body)}\nfunc.return\n}}"


def index_kernel(op: str, n: int) -> str:
    """An index op: i64 in memory, `arith.index_cast` to and from index around the op."""
    mem = f"memref<{n}xi64>"
    result = "%r = arith.cmpi {0}, %xi, %yi : index\n%ro = arith.extui %r : i1 to i64" if op in CMPI else \
        "%r = arith.{0} %xi, %yi : index\n%ro = arith.index_cast %r : index to i64"  # fmt: skip
    body = (f"%x = memref.load %a[%i] : {mem}\n%y = memref.load %b[%i] : {mem}\n"
            f"%xi = arith.index_cast %x : i64 to index\n%yi = arith.index_cast %y : i64 to index\n"
            f"{result.format(op)}\nmemref.store %ro, %out[%i] : {mem}")  # fmt: skip
    return f"func.func @{op}_index(%out: {mem}, %a: {mem}, %b: {mem}) {{\n{parallel(n, body)}\nfunc.return\n}}"


INT_OPS = [*INT_BINARY, *CMPI, "ipowi"]
INDEX_OPS = ["addi", "muli", "divsi", "remsi", "floordivsi", "ceildivsi", "minsi", "maxsi", "slt", "ult"]


@pytest.fixture(scope="module")
def int_module():
    kernels = []
    for w in WIDTHS:
        n = len(operand_pairs(w)[0])
        kernels += [int_kernel(op, w, n) for op in INT_OPS]
    n = len(operand_pairs(64)[0])
    kernels += [index_kernel(op, n) for op in INDEX_OPS]
    return parse_loop_level("\n".join(kernels))


@needs_host_compiler
@pytest.mark.parametrize("w", WIDTHS)
@pytest.mark.parametrize("op", INT_OPS)
def test_integer_op_is_total(int_module, op, w, capfd):
    a, b = operand_pairs(w)
    dtype = NUMPY_INT[w]
    xs, ys = np.array(a).astype(dtype), np.array(b).astype(dtype)
    out = np.zeros(len(a), dtype=np.bool_ if op in CMPI else dtype)
    run(int_module, f"{op}_i{w}", out, xs, ys)
    got = [int(v) for v in out.astype(np.int64)]
    if w == 1 and op not in CMPI:
        got = [-v for v in got]  # a true i1 is -1 as a signed value
    want = [contract(op, x, y, w) for x, y in zip(a, b, strict=True)]
    bad = [(x, y, g, e) for x, y, g, e in zip(a, b, got, want, strict=True) if g != e]
    assert not bad, f"{op} i{w}: (a, b, got, want) {bad[:6]}"
    assert "runtime error" not in capfd.readouterr().err


@needs_host_compiler
@pytest.mark.parametrize("op", INDEX_OPS)
def test_index_op(int_module, op, capfd):
    a, b = operand_pairs(64)
    out = np.zeros(len(a), dtype=np.int64)
    run(int_module, f"{op}_index", out, np.array(a, np.int64), np.array(b, np.int64))
    assert [int(v) for v in out] == [contract(op, x, y, 64) for x, y in zip(a, b, strict=True)]
    assert "runtime error" not in capfd.readouterr().err


@needs_host_compiler
def test_constant_shift_amounts_are_folded_with_the_same_semantics(capfd):
    """A constant amount is range-checked when printing; the result must be the contract's all the same."""
    kernels, cases = [], []
    for w in WIDTHS[1:]:
        t = f"i{w}"
        for op in ("shli", "shrsi", "shrui"):
            for k in (0, 1, w - 1, w, w + 5, -1):
                name = f"{op}_{t}_{k}".replace("-", "m")
                body = (f"%x = memref.load %a[%i] : memref<8x{t}>\n%k = arith.constant {k} : {t}\n"
                        f"%r = arith.{op} %x, %k : {t}\nmemref.store %r, %out[%i] : memref<8x{t}>")  # fmt: skip
                kernels.append(f"func.func @{name}(%out: memref<8x{t}>, %a: memref<8x{t}>) {{\n"
                               f"{parallel(8, body)}\nfunc.return\n}}")  # fmt: skip
                cases.append((name, op, w, k))
    module = parse_loop_level("\n".join(kernels))
    assert "<<" in emit_cuda(module) and "? (u32)" not in emit_cuda(module)  # no run-time range checks
    for name, op, w, k in cases:
        lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
        a = [0, 1, -1, lo, hi, 5, -7, lo + 3]
        out = np.zeros(8, NUMPY_INT[w])
        run(module, name, out, np.array(a).astype(NUMPY_INT[w]))
        assert [int(v) for v in out] == [contract(op, x, signed(k, w), w) for x in a], name
    assert "runtime error" not in capfd.readouterr().err


CASTS = [("extsi", 8, 32), ("extsi", 1, 16), ("extsi", 32, 64), ("extui", 8, 32), ("extui", 1, 64),
         ("extui", 32, 64), ("trunci", 32, 8), ("trunci", 64, 32), ("trunci", 16, 1), ("absi", 8, 8),
         ("absi", 32, 32), ("absi", 64, 64), ("ctlz", 32, 32), ("ctlz", 8, 8), ("cttz", 16, 16),
         ("cttz", 64, 64), ("ctpop", 32, 32), ("ctpop", 64, 64)]  # fmt: skip


def cast_reference(op: str, x: int, src: int, dst: int) -> int:
    u = x & ((1 << src) - 1)
    if op == "extsi":
        return x
    if op == "extui":
        return signed(u, dst) if dst > src else u
    if op == "trunci":
        return signed(x, dst)
    if op == "absi":
        return signed(abs(x), src)
    if op == "ctlz":
        return src - u.bit_length()
    if op == "cttz":
        return src if u == 0 else (u & -u).bit_length() - 1
    return bin(u).count("1")


@needs_host_compiler
def test_casts_and_bit_ops(capfd):
    kernels, n = [], len(operand_pairs(64)[0])
    for op, src, dst in CASTS:
        s, d = f"i{src}", f"i{dst}"
        if op in ("extsi", "extui", "trunci"):
            compute = f"%r = arith.{op} %x : {s} to {d}"
        else:
            compute = f"%r = math.{op} %x : {s}"
        body = f"%x = memref.load %a[%i] : memref<{n}x{s}>\n{compute}\nmemref.store %r, %out[%i] : memref<{n}x{d}>"
        kernels.append(f"func.func @{op}_{src}_{dst}(%out: memref<{n}x{d}>, %a: memref<{n}x{s}>) {{\n"
                       f"{parallel(n, body)}\nfunc.return\n}}")  # fmt: skip
    module = parse_loop_level("\n".join(kernels))
    for op, src, dst in CASTS:
        a = [signed(v, src) for v in operand_pairs(64)[0]]
        xs = np.array(a).astype(NUMPY_INT[src])
        out = np.zeros(n, dtype=NUMPY_INT[dst])
        run(module, f"{op}_{src}_{dst}", out, xs)
        got = [int(v) for v in out.astype(np.int64)]
        if dst == 1:
            got = [-v for v in got]
        want = [cast_reference(op, -x if src == 1 else x, src, dst) for x in a]
        if src == 1:
            want = [cast_reference(op, x, src, dst) for x in a]
        assert got == want, f"{op} i{src} -> i{dst}"
    assert "runtime error" not in capfd.readouterr().err


@needs_device_compiler
def test_every_integer_op_compiles_for_the_device(int_module):
    source = emit_cuda(int_module)
    assert len(compile_for_device(source)) > 0
    assert "#include" not in source


# --------------------------------------------------------------------------------------------------------------
# Float ops: the exact ones bit for bit, the transcendental ones close to numpy
# --------------------------------------------------------------------------------------------------------------

FLOAT_BINARY = ["addf", "subf", "mulf", "divf", "remf", "minimumf", "maximumf", "minnumf", "maxnumf"]
MATH_BINARY = ["powf", "atan2", "copysign"]
EXACT_UNARY = ["absf", "floor", "ceil", "round", "roundeven", "trunc", "sqrt", "negf"]
TRANSCENDENTAL = ["exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
                  "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "cbrt", "rsqrt"]  # fmt: skip
CMPF = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une",
        "uno", "true"]  # fmt: skip
FLOAT_VALUES = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 1.0, -1.0, 3.0, 1e30, -1e-30,
                0.7, 0.2, 7.25, -3.75]  # fmt: skip


def float_pairs(dtype) -> tuple[np.ndarray, np.ndarray]:
    v = FLOAT_VALUES
    a = np.array([x for x in v for _ in v] + list(RNG.uniform(-4, 4, 30)), dtype=dtype)
    b = np.array([y for _ in v for y in v] + list(RNG.uniform(-4, 4, 30)), dtype=dtype)
    return a, b


def float_kernel(name: str, compute: str, t: str, out_t: str, n: int, binary: bool) -> str:
    loads = f"%x = memref.load %a[%i] : memref<{n}x{t}>\n%y = memref.load %b[%i] : memref<{n}x{t}>"
    body = f"{loads}\n{compute}\nmemref.store %r, %out[%i] : memref<{n}x{out_t}>"
    return (f"func.func @{name}(%out: memref<{n}x{out_t}>, %a: memref<{n}x{t}>, %b: memref<{n}x{t}>) {{\n"
            f"{parallel(n, body)}\nfunc.return\n}}")  # fmt: skip


def float_ops(t: str) -> dict[str, tuple[str, str]]:
    """name -> (the op's line computing %r from %x and %y, the result type)."""
    ops: dict[str, tuple[str, str]] = {}
    for op in FLOAT_BINARY:
        generic = op == "remf"  # not registered in xDSL 0.74
        ops[op] = (f'%r = "arith.remf"(%x, %y) : ({t}, {t}) -> {t}' if generic else f"%r = arith.{op} %x, %y : {t}",
                   t)  # fmt: skip
    for op in MATH_BINARY:
        ops[op] = (f"%r = math.{op} %x, %y : {t}", t)
    ops["fma"] = (f"%r = math.fma %x, %y, %x : {t}", t)
    for op in [*EXACT_UNARY, *TRANSCENDENTAL]:
        ops[op] = (f"%r = arith.negf %x : {t}" if op == "negf" else f"%r = math.{op} %x : {t}", t)
    for op in ("isnan", "isinf", "isfinite"):
        ops[op] = (f'%r = "math.{op}"(%x) : ({t}) -> i1', "i1")
    for p in CMPF:
        ops[f"cmpf_{p}"] = (f"%r = arith.cmpf {p}, %x, %y : {t}", "i1")
    for w in (8, 32, 64):
        ops[f"fptosi_{w}"] = (f"%r = arith.fptosi %x : {t} to i{w}", f"i{w}")
        ops[f"fptoui_{w}"] = (f"%r = arith.fptoui %x : {t} to i{w}", f"i{w}")
    return ops


def round_half_away(x: np.ndarray) -> np.ndarray:
    r = np.trunc(x)
    with np.errstate(invalid="ignore"):
        return np.copysign(r + np.where(np.abs(x - r) >= 0.5, np.sign(x), 0).astype(x.dtype), x)


def saturate(x: np.ndarray, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    with np.errstate(invalid="ignore"):
        clipped = np.clip(np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0), info.min, info.max)
    return np.array([int(v) if abs(v) < 2**63 else (info.max if v > 0 else info.min) for v in clipped], dtype)


def ieee_min_max(x: np.ndarray, y: np.ndarray, take_min: bool) -> np.ndarray:
    out = np.where((x < y) == take_min, x, y)
    both_zero = (x == y)
    sign_x = np.signbit(x)
    out = np.where(both_zero, np.where(sign_x == take_min, x, y), out)
    return np.where(np.isnan(x) | np.isnan(y), np.nan, out).astype(x.dtype)


def float_reference(op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    nan = np.isnan(x) | np.isnan(y)
    cmp = {"oeq": x == y, "ogt": x > y, "oge": x >= y, "olt": x < y, "ole": x <= y, "one": (x < y) | (x > y),
           "ord": ~nan}  # fmt: skip
    if op.startswith("cmpf_"):
        p = op[5:]
        if p in ("false", "true"):
            return np.full(x.shape, p == "true")
        if p in cmp:
            return cmp[p]
        if p == "une":
            return x != y
        if p == "uno":
            return nan
        return ~{"ueq": cmp["one"], "ugt": x <= y, "uge": x < y, "ult": x >= y, "ule": x > y}[p] | nan
    if op.startswith("fpto"):
        w = int(op.split("_")[1])
        signed_ = op.startswith("fptosi")
        return saturate(x, {8: np.int8, 32: np.int32, 64: np.int64}[w] if signed_ else
                        {8: np.uint8, 32: np.uint32, 64: np.uint64}[w]).view(NUMPY_INT[w])  # fmt: skip
    table = {
        "addf": lambda: x + y, "subf": lambda: x - y, "mulf": lambda: x * y, "divf": lambda: x / y,
        "remf": lambda: np.fmod(x, y), "minimumf": lambda: ieee_min_max(x, y, True),
        "maximumf": lambda: ieee_min_max(x, y, False), "minnumf": lambda: np.fmin(x, y),
        "maxnumf": lambda: np.fmax(x, y), "powf": lambda: np.power(x, y), "atan2": lambda: np.arctan2(x, y),
        "copysign": lambda: np.copysign(x, y), "fma": lambda: (x.astype(np.float64) * y + x).astype(x.dtype),
        "absf": lambda: np.abs(x), "floor": lambda: np.floor(x), "ceil": lambda: np.ceil(x),
        "round": lambda: round_half_away(x), "roundeven": lambda: np.rint(x), "trunc": lambda: np.trunc(x),
        "sqrt": lambda: np.sqrt(x), "negf": lambda: -x, "exp": lambda: np.exp(x), "exp2": lambda: np.exp2(x),
        "expm1": lambda: np.expm1(x), "log": lambda: np.log(x), "log1p": lambda: np.log1p(x),
        "log2": lambda: np.log2(x), "log10": lambda: np.log10(x), "sin": lambda: np.sin(x),
        "cos": lambda: np.cos(x), "tan": lambda: np.tan(x), "asin": lambda: np.arcsin(x),
        "acos": lambda: np.arccos(x), "atan": lambda: np.arctan(x), "sinh": lambda: np.sinh(x),
        "cosh": lambda: np.cosh(x), "tanh": lambda: np.tanh(x), "asinh": lambda: np.arcsinh(x),
        "acosh": lambda: np.arccosh(x), "atanh": lambda: np.arctanh(x), "cbrt": lambda: np.cbrt(x),
        "rsqrt": lambda: 1 / np.sqrt(x), "isnan": lambda: np.isnan(x), "isinf": lambda: np.isinf(x),
        "isfinite": lambda: np.isfinite(x),
        "erf": lambda: np.array([__import__("math").erf(v) for v in x.astype(np.float64)]).astype(x.dtype),
    }  # fmt: skip
    with np.errstate(all="ignore"):
        return np.asarray(table[op]())


@pytest.fixture(scope="module")
def float_modules():
    modules = {}
    for t, dtype in (("f32", np.float32), ("f64", np.float64)):
        n = len(float_pairs(dtype)[0])
        kernels = [float_kernel(f"{name}_{t}", line, t, out_t, n, True) for name, (line, out_t) in float_ops(t).items()]
        modules[t] = parse_loop_level("\n".join(kernels))
    return modules


@needs_host_compiler
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_float_ops(float_modules, t, capfd):
    dtype = np.float32 if t == "f32" else np.float64
    x, y = float_pairs(dtype)
    for name, (_, out_t) in float_ops(t).items():
        out_dtype = np.bool_ if out_t == "i1" else (dtype if out_t == t else NUMPY_INT[int(out_t[1:])])
        out = np.zeros(len(x), dtype=out_dtype)
        run(float_modules[t], f"{name}_{t}", out, x, y)
        want = float_reference(name, x, y)
        if name in TRANSCENDENTAL or name in ("powf", "atan2", "fma"):
            np.testing.assert_allclose(out, want, rtol=2e-6 if t == "f32" else 1e-14, atol=0, equal_nan=True,
                                       err_msg=name)  # fmt: skip
        elif out.dtype.kind == "f":
            same = (out.view(f"u{out.itemsize}") == want.astype(dtype).view(f"u{out.itemsize}")) | (
                np.isnan(out) & np.isnan(want))
            assert same.all(), f"{name}: {list(zip(x[~same], y[~same], out[~same], want[~same], strict=True))[:5]}"
        else:
            np.testing.assert_array_equal(out, want.astype(out.dtype), err_msg=name)
    assert "runtime error" not in capfd.readouterr().err


@needs_device_compiler
def test_every_float_op_compiles_for_the_device(float_modules):
    for module in float_modules.values():
        assert len(compile_for_device(emit_cuda(module))) > 0


def test_float_arithmetic_is_never_contracted(float_modules):
    """The rn intrinsics keep a * b + c two roundings on the GPU, as on the CPU; sqrt is correctly rounded."""
    source = emit_cuda(float_modules["f32"])
    assert "__fmul_rn(" in source and "__fadd_rn(" in source and "__fsqrt_rn(" in source
    assert not re.search(r"v\d+ [*+/-] v\d+", source.split("extern")[-1].replace("(u32)", ""))


# --------------------------------------------------------------------------------------------------------------
# Control flow and memory
# --------------------------------------------------------------------------------------------------------------

STRUCTURES = """
func.func @strided_add(%out: memref<4x6xi32>, %a: memref<4x6xi32, strided<[1, 4], offset: 3>>,
                       %b: memref<4x6xi32, strided<[0, 1]>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  "scf.parallel"(%c0, %c0, %c4, %c6, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %x = memref.load %a[%i, %j] : memref<4x6xi32, strided<[1, 4], offset: 3>>
    %y = memref.load %b[%i, %j] : memref<4x6xi32, strided<[0, 1]>>
    %s = arith.addi %x, %y : i32
    memref.store %s, %out[%i, %j] : memref<4x6xi32>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}
func.func @row_sums_and_swap(%sums: memref<5xi32>, %alt: memref<5xi32>, %a: memref<5x7xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %z = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  "scf.parallel"(%c0, %c5, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %r:3 = scf.for %j = %c0 to %c7 step %c1 iter_args(%acc = %z, %p = %z, %q = %one) -> (i32, i32, i32) {
      %x = memref.load %a[%i, %j] : memref<5x7xi32>
      %n = arith.addi %acc, %x : i32
      scf.yield %n, %q, %p : i32, i32, i32
    }
    memref.store %r#0, %sums[%i] : memref<5xi32>
    memref.store %r#1, %alt[%i] : memref<5xi32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}
func.func @conv_relu(%out: memref<2x3x4xi32>, %x: memref<3x6xi32>, %w: memref<2x3x3xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0 : i32
  "scf.parallel"(%c0, %c0, %c2, %c4, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%o: index, %p: index):
    "scf.parallel"(%c0, %c3, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
    ^bb1(%c: index):
      %s = scf.for %k = %c0 to %c3 step %c1 iter_args(%acc = %z) -> (i32) {
        %col = arith.addi %p, %k : index
        %xv = memref.load %x[%c, %col] : memref<3x6xi32>
        %wv = memref.load %w[%o, %c, %k] : memref<2x3x3xi32>
        %m = arith.muli %xv, %wv : i32
        %n = arith.addi %acc, %m : i32
        scf.yield %n : i32
      }
      %neg = arith.cmpi slt, %s, %z : i32
      %v = scf.if %neg -> (i32) {
        scf.yield %z : i32
      } else {
        scf.yield %s : i32
      }
      memref.store %v, %out[%o, %c, %p] : memref<2x3x4xi32>
      scf.reduce
    }) : (index, index, index) -> ()
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}
func.func @prefix_sum(%out: memref<8xi32>, %a: memref<8xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %z = arith.constant 0 : i32
  "scf.parallel"(%c0, %c8, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    memref.store %z, %out[%i] : memref<8xi32>
    scf.reduce
  }) : (index, index, index) -> ()
  %t = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %z) -> (i32) {
    %x = memref.load %a[%i] : memref<8xi32>
    %n = arith.addi %acc, %x : i32
    memref.store %n, %out[%i] : memref<8xi32>
    scf.yield %n : i32
  }
  func.return
}
func.func @views_and_copies(%out: memref<3x4xi32>, %flags: memref<12xi1>, %scalar: memref<i32>, %a: memref<4x5xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0 : i32
  %tmp = memref.alloca() : memref<3x4xi32>
  %heap = memref.alloc() : memref<12xi32>
  %sub = memref.subview %a[1, 1] [3, 4] [1, 1] : memref<4x5xi32> to memref<3x4xi32, strided<[5, 1], offset: 6>>
  "memref.copy"(%sub, %tmp) : (memref<3x4xi32, strided<[5, 1], offset: 6>>, memref<3x4xi32>) -> ()
  %flat = memref.reinterpret_cast %heap to offset: [0], sizes: [3, 4], strides: [4, 1]
      : memref<12xi32> to memref<3x4xi32>
  "memref.copy"(%tmp, %flat) : (memref<3x4xi32>, memref<3x4xi32>) -> ()
  scf.for %i = %c0 to %c3 step %c1 {
    scf.for %j = %c0 to %c4 step %c1 {
      %v = memref.load %flat[%i, %j] : memref<3x4xi32>
      %odd = arith.trunci %v : i32 to i1
      %k = arith.muli %i, %c4 : index
      %f = arith.addi %k, %j : index
      memref.store %odd, %flags[%f] : memref<12xi1>
      %back = memref.load %flags[%f] : memref<12xi1>
      scf.if %back {
        memref.store %v, %out[%i, %j] : memref<3x4xi32>
      } else {
        memref.store %z, %out[%i, %j] : memref<3x4xi32>
      }
    }
  }
  %s = memref.load %a[%c3, %c4] : memref<4x5xi32>
  memref.store %s, %scalar[] : memref<i32>
  memref.dealloc %heap : memref<12xi32>
  func.return
}
"""


@pytest.fixture(scope="module")
def structures():
    return parse_loop_level(STRUCTURES)


def test_kernel_specs(structures):
    specs = kernel_specs(structures)
    assert [(s.symbol, s.parallel, s.work, s.threads()) for s in specs.values()] == [
        ("k_strided_add", True, 24, 24),
        ("k_row_sums_and_swap", True, 5, 5),
        ("k_conv_relu", True, 8, 8),
        ("k_prefix_sum", False, 1, 1),  # two phases: one thread runs them in order
        ("k_views_and_copies", False, 1, 1),
    ]
    add = specs["strided_add"]
    assert [(a.written, a.strides, a.offset) for a in add.args] == [(True, (6, 1), 0), (False, (1, 4), 3),
                                                                    (False, (0, 1), 0)]  # fmt: skip


def test_the_source_reads_as_the_abi_says(structures):
    source = emit_cuda(structures)
    assert source == emit_cuda(structures)  # deterministic
    assert ("static __device__ __forceinline__ void b_strided_add(i32 *__restrict__ arg0, "
            "const i32 *__restrict__ arg1, const i32 *__restrict__ arg2)") in source  # fmt: skip
    assert (f'extern "C" __global__ void __launch_bounds__({BLOCK_SIZE}) k_strided_add(void *const *__restrict__ '
            "args) {\n  b_strided_add((i32 *)args[0], (const i32 *)args[1], (const i32 *)args[2]);\n}") in source
    assert "v0 < 24u; v0 += gridDim.x * blockDim.x" in source
    assert "arg1[v1 + v2 * 4 + 3]" in source and "arg2[v2]" in source  # static strides and offset, stride 0
    assert "u8 *__restrict__ arg1" in source  # i1 in memory is a byte
    assert source.count("if (blockIdx.x != 0 || threadIdx.x != 0) return;") == 2


@needs_host_compiler
@pytest.mark.parametrize("grid", GRIDS)
def test_structures_compute_what_numpy_does(structures, grid, capfd):
    a = RNG.integers(-50, 50, 4 * 6 + 3).astype(np.int32)  # the base buffer of a strided view
    b = RNG.integers(-50, 50, 6).astype(np.int32)
    out = np.full((4, 6), 7, np.int32)
    run(structures, "strided_add", out, a, b, grid=grid)
    view = np.lib.stride_tricks.as_strided(a[3:], (4, 6), (4, 16))
    np.testing.assert_array_equal(out, view + b)

    m = RNG.integers(-1000, 1000, (5, 7)).astype(np.int32)
    sums, alt = np.zeros(5, np.int32), np.zeros(5, np.int32)
    run(structures, "row_sums_and_swap", sums, alt, m, grid=grid)
    np.testing.assert_array_equal(sums, m.sum(axis=1))
    np.testing.assert_array_equal(alt, np.ones(5, np.int32))  # (p, q) swapped 7 times: p ends as q's 1

    x = RNG.integers(-9, 9, (3, 6)).astype(np.int32)
    w = RNG.integers(-9, 9, (2, 3, 3)).astype(np.int32)
    out3 = np.zeros((2, 3, 4), np.int32)
    run(structures, "conv_relu", out3, x, w, grid=grid)
    want = np.array([[[sum(x[c, p + k] * w[o, c, k] for k in range(3)) for p in range(4)] for c in range(3)]
                     for o in range(2)])  # fmt: skip
    np.testing.assert_array_equal(out3, np.maximum(want, 0))

    a8 = RNG.integers(-100, 100, 8).astype(np.int32)
    ps = np.zeros(8, np.int32)
    run(structures, "prefix_sum", ps, a8, grid=grid)
    np.testing.assert_array_equal(ps, np.cumsum(a8))

    a45 = RNG.integers(-100, 100, (4, 5)).astype(np.int32)
    out34, flags, scalar = np.zeros((3, 4), np.int32), np.full(12, 9, np.uint8), np.zeros((), np.int32)
    run(structures, "views_and_copies", out34, flags, scalar, a45, grid=grid)
    sub = a45[1:4, 1:5]
    np.testing.assert_array_equal(flags, (sub.reshape(-1) & 1).astype(np.uint8))
    np.testing.assert_array_equal(out34, np.where(sub & 1, sub, 0))
    assert scalar == a45[3, 4]
    assert "runtime error" not in capfd.readouterr().err


@needs_device_compiler
def test_structures_compile_for_the_device(structures):
    assert len(compile_for_device(emit_cuda(structures))) > 0


def test_grid_decomposition_with_bounds_and_steps():
    """Leading dims with constant bounds are flattened (lower bound and step applied); a dim with a bound that
    is not a constant stays a loop inside each unit."""
    module = parse_loop_level("""
func.func @k(%out: memref<10x20xi32>, %n: memref<i64>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c10 = arith.constant 10 : index
  %c0 = arith.constant 0 : index
  %nv = memref.load %n[] : memref<i64>
  %ub = arith.index_cast %nv : i64 to index
  %one = arith.constant 1 : i32
  "scf.parallel"(%c1, %c0, %c10, %ub, %c3, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    memref.store %one, %out[%i, %j] : memref<10x20xi32>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}""")
    (spec,) = kernel_specs(module).values()
    assert spec.parallel and spec.work == 3  # i in 1, 4, 7
    source = emit_cuda(module)
    assert "i64 v3 = 1LL + (i64)(v2) * 3LL;" in source  # v2: the unit; v1: the loaded bound
    assert "for (i64 v4 = 0LL; v4 < v1; v4 += 1LL) {" in source
    if host_compiler() is not None:
        for grid in GRIDS:
            out = np.zeros((10, 20), np.int32)
            run(module, "k", out, np.array(5, np.int64), grid=grid)
            want = np.zeros((10, 20), np.int32)
            want[1:10:3, :5] = 1
            np.testing.assert_array_equal(out, want)


def test_kernel_names_become_c_identifiers():
    module = parse_loop_level('\n'.join(
        f'func.func @"{name}"(%a: memref<i32>) {{\n func.return\n}}' for name in ("abs", "a.b", "a-b", "max")))
    assert [s.symbol for s in kernel_specs(module).values()] == ["k_abs", "k_a_b", "k_a_b_1", "k_max"]


def test_what_is_not_the_loop_level_is_refused():
    module = parse_loop_level("""
func.func @k(%a: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %x = memref.load %a[%c0] : memref<4xi32>
  %y = "test.op"(%x) : (i32) -> i32
  func.return
}""")
    with pytest.raises(CVMRuntimeError, match="cuda codegen: unsupported op 'test.op'"):
        emit_cuda(module)
    with pytest.raises(CVMRuntimeError, match="expected an integer of 1, 8, 16, 32 or 64 bits"):
        emit_cuda(parse_loop_level("""
func.func @k(%a: memref<4xi32>) {
  %c = arith.constant 3 : i7
  func.return
}"""))


def test_constants_are_exact_literals():
    module = parse_loop_level("""
func.func @k(%i: memref<4xi64>, %f: memref<4xf32>, %d: memref<3xf64>, %s: memref<2xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %min = arith.constant -9223372036854775808 : i64
  %max = arith.constant 9223372036854775807 : i64
  %m32 = arith.constant -2147483648 : i32
  %tenth = arith.constant 0.1 : f32
  %inf = arith.constant 0x7F800000 : f32
  %nan = arith.constant 0x7FC00001 : f32
  %neg = arith.constant -0.0 : f32
  %dt = arith.constant 0.1 : f64
  %dinf = arith.constant 0xFFF0000000000000 : f64
  %big = arith.constant 1.0e300 : f64
  memref.store %min, %i[%c0] : memref<4xi64>
  memref.store %max, %i[%c1] : memref<4xi64>
  memref.store %m32, %s[%c0] : memref<2xi32>
  memref.store %tenth, %f[%c0] : memref<4xf32>
  memref.store %inf, %f[%c1] : memref<4xf32>
  memref.store %nan, %f[%c2] : memref<4xf32>
  memref.store %neg, %f[%c3] : memref<4xf32>
  memref.store %dt, %d[%c0] : memref<3xf64>
  memref.store %dinf, %d[%c1] : memref<3xf64>
  memref.store %big, %d[%c2] : memref<3xf64>
  func.return
}""")
    source = emit_cuda(module)
    assert "(-9223372036854775807LL - 1)" in source and "(-2147483647 - 1)" in source
    assert "1e-01f" in source and "__int_as_float((i32)0x7fc00001u)" in source
    if host_compiler() is None:
        return
    i, f, d, s = np.zeros(4, np.int64), np.zeros(4, np.float32), np.zeros(3, np.float64), np.zeros(2, np.int32)
    run(module, "k", i, f, d, s)
    assert list(i[:2]) == [-(2**63), 2**63 - 1] and s[0] == -(2**31)
    assert list(f.view(np.uint32)) == [np.float32(0.1).view(np.uint32), 0x7F800000, 0x7FC00001, 0x80000000]
    assert list(d.view(np.uint64)) == [np.float64(0.1).view(np.uint64), 0xFFF0000000000000,
                                       np.float64(1e300).view(np.uint64)]  # fmt: skip
