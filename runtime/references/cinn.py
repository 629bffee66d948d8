"""Reference semantics of the `cinn` primitives in numpy: the executable definition every backend is tested against.

Written from `shared/spec/cinn.md`. Integers are exact and total: add, sub, mul, neg, abs, power, dot and the
reductions wrap; division and remainder by zero give 0; INT_MIN / -1 gives INT_MIN and INT_MIN % -1 gives 0;
a shift amount outside [0, bits - 1] gives 0 (left shift, unsigned right shift) or the sign fill (signed right
shift). Floats follow IEEE-754 with numpy's (and so the platform's) libm; Round is half away from zero.

    from cvmc.runtime.references.cinn import run_function
    outputs = run_function(func_op, [x, y])      # func_op: a func.func of cinn ops; arrays in, arrays out
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType, i1, i8, i16, i32, i64
from xdsl.ir import Attribute, Operation

from cvmc.dialects import cinn
from cvmc.errors import CVMRuntimeError

NUMPY_DTYPES: dict[Attribute, np.dtype] = {
    cinn.f32: np.dtype(np.float32),
    cinn.f64: np.dtype(np.float64),
    i8: np.dtype(np.int8),
    i16: np.dtype(np.int16),
    i32: np.dtype(np.int32),
    i64: np.dtype(np.int64),
    cinn.ui8: np.dtype(np.uint8),
    i1: np.dtype(np.bool_),
}
ELEMENT_TYPES: dict[np.dtype, Attribute] = {v: k for k, v in NUMPY_DTYPES.items()}


def numpy_dtype(t: Attribute) -> np.dtype:
    """The numpy dtype of a cinn element type (or of a tensor type's elements)."""
    if isinstance(t, TensorType):
        t = t.element_type
    return NUMPY_DTYPES[t]


# ---------------------------------------------------------------------------------------------------------------
# Element-wise definitions
# ---------------------------------------------------------------------------------------------------------------


def _is_int(x: np.ndarray) -> bool:
    return np.issubdtype(x.dtype, np.integer)


def _safe_divisor(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """y with the two cases a divide instruction traps on (y == 0, INT_MIN / -1) replaced by 1."""
    bad = y == 0
    if np.issubdtype(x.dtype, np.signedinteger):
        bad = bad | ((x == np.iinfo(x.dtype).min) & (y == -1))
    return np.where(bad, 1, y).astype(y.dtype)


def div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x / y; integers truncate toward zero, x / 0 = 0, INT_MIN / -1 = INT_MIN."""
    if not _is_int(x):
        return x / y
    d = _safe_divisor(x, y)
    return np.where(y == 0, 0, (x - np.fmod(x, d)) // d)  # x - fmod(x, d) is an exact multiple of d


def mod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C remainder, with the sign of x; on integers x % 0 = 0 and INT_MIN % -1 = 0."""
    if not _is_int(x):
        return np.fmod(x, y)
    return np.where(y == 0, 0, np.fmod(x, _safe_divisor(x, y)))


def floor_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """floor(x / y); on integers x / 0 = 0 and INT_MIN / -1 = INT_MIN. On floats Python's divmod quotient, numpy's
    floor_divide: (x - floor_mod(x, y)) / y snapped to an integer, x / y for y = 0."""
    if not _is_int(x):
        return np.floor_divide(x, y)
    return np.where(y == 0, 0, np.floor_divide(x, _safe_divisor(x, y)))


def floor_mod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x - y * floor_div(x, y), with the sign of y (Python's %); on integers x % 0 = 0. On floats Python's divmod
    remainder, numpy's remainder: fmod(x, y), plus y where non-zero and of the other sign than y; a zero takes
    the sign of y."""
    if not _is_int(x):
        return np.remainder(x, y)
    return np.where(y == 0, 0, np.remainder(x, _safe_divisor(x, y)))


def power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x ^ y; on integers wrapping repeated multiplication, and for y < 0: 1 for x = 1, (-1)^y for x = -1,
    else 0."""
    if not _is_int(x):
        return np.power(x, y)
    x, y = np.broadcast_arrays(x, y)
    result = np.ones_like(x)
    base, exponent = x.copy(), np.where(y < 0, 0, y).astype(y.dtype)
    for _ in range(x.dtype.itemsize * 8):  # square and multiply, one exponent bit at a time
        result = np.where(exponent & 1, result * base, result)
        base = base * base
        exponent = exponent >> 1
    negative = np.where(x == 1, 1, np.where(x == -1, np.where(y & 1, -1, 1), 0)).astype(x.dtype)
    return np.where(y < 0, negative, result)


def _shift_in_range(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (y >= 0) & (y < x.dtype.itemsize * 8)


def left_shift(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x << y; 0 for an amount outside [0, bits - 1]."""
    ok = _shift_in_range(x, y)
    return np.where(ok, np.left_shift(x, np.where(ok, y, 0).astype(y.dtype)), 0)


def right_shift(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x >> y, arithmetic on signed and logical on unsigned types; for an amount outside [0, bits - 1] the sign
    fill on signed types, 0 on unsigned ones."""
    ok = _shift_in_range(x, y)
    if np.issubdtype(x.dtype, np.signedinteger):
        return np.right_shift(x, np.where(ok, y, x.dtype.itemsize * 8 - 1).astype(y.dtype))
    return np.where(ok, np.right_shift(x, np.where(ok, y, 0).astype(y.dtype)), 0)


def round_half_away(x: np.ndarray) -> np.ndarray:
    """Round half away from zero, as C's round: trunc(x) + sgn(x) when |x - trunc(x)| >= 0.5 (exact)."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x).astype(x.dtype)


def _truth(x: np.ndarray) -> np.ndarray:
    return x != 0


UNARY: dict[type[cinn.UnaryOp], Callable[[np.ndarray], np.ndarray]] = {
    cinn.AbsOp: np.abs,
    cinn.AcosOp: np.arccos,
    cinn.AcoshOp: np.arccosh,
    cinn.AsinOp: np.arcsin,
    cinn.AsinhOp: np.arcsinh,
    cinn.AtanOp: np.arctan,
    cinn.AtanhOp: np.arctanh,
    cinn.BitwiseNotOp: np.invert,
    cinn.CeilOp: np.ceil,
    cinn.CosOp: np.cos,
    cinn.CoshOp: np.cosh,
    cinn.ErfOp: erf,
    cinn.ExpOp: np.exp,
    cinn.FloorOp: np.floor,
    cinn.IdentityOp: np.copy,
    cinn.IsFiniteOp: np.isfinite,
    cinn.IsInfOp: np.isinf,
    cinn.IsNanOp: np.isnan,
    cinn.LogOp: np.log,
    cinn.Log10Op: np.log10,
    cinn.Log2Op: np.log2,
    cinn.LogicalNotOp: lambda x: x == 0,
    cinn.NegativeOp: np.negative,
    cinn.RoundOp: round_half_away,
    cinn.RsqrtOp: lambda x: 1 / np.sqrt(x),
    cinn.SignOp: np.sign,
    cinn.SinOp: np.sin,
    cinn.SinhOp: np.sinh,
    cinn.SqrtOp: np.sqrt,
    cinn.TanOp: np.tan,
    cinn.TanhOp: np.tanh,
    cinn.TruncOp: np.trunc,
}

BINARY: dict[type[cinn.BinaryOp], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    cinn.AddOp: np.add,
    cinn.BitwiseAndOp: np.bitwise_and,
    cinn.BitwiseOrOp: np.bitwise_or,
    cinn.BitwiseXorOp: np.bitwise_xor,
    cinn.DivOp: div,
    cinn.FloorDivOp: floor_div,
    cinn.FloorModOp: floor_mod,
    cinn.LeftShiftOp: left_shift,
    cinn.LogicalAndOp: lambda x, y: _truth(x) & _truth(y),
    cinn.LogicalOrOp: lambda x, y: _truth(x) | _truth(y),
    cinn.LogicalXorOp: lambda x, y: _truth(x) ^ _truth(y),
    cinn.MaxOp: np.maximum,  # NaN-propagating
    cinn.MinOp: np.minimum,
    cinn.ModOp: mod,
    cinn.MulOp: np.multiply,
    cinn.PowerOp: power,
    cinn.RightShiftOp: right_shift,
    cinn.SubOp: np.subtract,
}

COMPARE: dict[cinn.CompareKind, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    cinn.CompareKind.EQ: np.equal,
    cinn.CompareKind.NE: np.not_equal,
    cinn.CompareKind.GE: np.greater_equal,
    cinn.CompareKind.GT: np.greater,
    cinn.CompareKind.LE: np.less_equal,
    cinn.CompareKind.LT: np.less,
}


# ---------------------------------------------------------------------------------------------------------------
# Complex primitives
# ---------------------------------------------------------------------------------------------------------------


def dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.dot(x, y)


def reduce(x: np.ndarray, kind: cinn.ReduceKind, dim: Sequence[int], keep_dim: bool) -> np.ndarray:
    """sum / prod (wrapping, in x's type), max / min (NaN-propagating) over `dim`, every axis when empty."""
    axes = cinn.reduce_axes(x.shape, dim)
    if kind in (cinn.ReduceKind.SUM, cinn.ReduceKind.PROD):
        f = np.sum if kind == cinn.ReduceKind.SUM else np.prod
        return f(x, axis=axes, keepdims=keep_dim, dtype=x.dtype)
    f = np.max if kind == cinn.ReduceKind.MAX else np.min
    return f(x, axis=axes, keepdims=keep_dim)


def broadcast_to(x: np.ndarray, out_shape: Sequence[int], axes: Sequence[int]) -> np.ndarray:
    """Input axis i goes to output axis axes[i]; the other output axes repeat."""
    order = sorted(range(len(axes)), key=lambda i: axes[i])
    shape = [1] * len(out_shape)
    for i in order:
        shape[axes[i]] = x.shape[i]
    return np.broadcast_to(np.transpose(x, order).reshape(shape), tuple(out_shape)).copy()


def bn_mean_variance(x: np.ndarray) -> list[np.ndarray]:
    """(sum x, sum x^2) per channel of an NCHW x."""
    return [np.sum(x, axis=(0, 2, 3), dtype=x.dtype), np.sum(x * x, axis=(0, 2, 3), dtype=x.dtype)]


def bn_grad_bias_scale(x: np.ndarray, dy: np.ndarray, mean: np.ndarray) -> list[np.ndarray]:
    """(sum dy, sum dy * (x - mean)) per channel of NCHW x and dy."""
    centered = x - mean.reshape(1, -1, 1, 1)
    return [np.sum(dy, axis=(0, 2, 3), dtype=x.dtype), np.sum(dy * centered, axis=(0, 2, 3), dtype=x.dtype)]


def _to_nchw(t: np.ndarray, g: cinn.ConvGeometry) -> np.ndarray:
    return t if g.data_format == cinn.DataFormat.NCHW else np.transpose(t, (0, 3, 1, 2))


def _from_nchw(t: np.ndarray, g: cinn.ConvGeometry) -> np.ndarray:
    return t if g.data_format == cinn.DataFormat.NCHW else np.transpose(t, (0, 2, 3, 1))


def _padded_size(g: cinn.ConvGeometry) -> tuple[int, int]:
    hp = max((g.oh - 1) * g.stride_h + (g.kh - 1) * g.dilation_h + 1, g.pad_top + g.h)
    wp = max((g.ow - 1) * g.stride_w + (g.kw - 1) * g.dilation_w + 1, g.pad_left + g.w)
    return hp, wp


def _window(g: cinn.ConvGeometry, p: int, q: int) -> tuple[slice, slice, slice, slice]:
    """The padded-input positions filter tap (p, q) meets, for every output position."""
    rows = slice(p * g.dilation_h, p * g.dilation_h + (g.oh - 1) * g.stride_h + 1, g.stride_h)
    cols = slice(q * g.dilation_w, q * g.dilation_w + (g.ow - 1) * g.stride_w + 1, g.stride_w)
    return slice(None), slice(None), rows, cols


def _grouped(t: np.ndarray, groups: int) -> np.ndarray:
    """[n, c, h, w] -> [n, groups, c / groups, h, w]."""
    return t.reshape(t.shape[0], groups, t.shape[1] // groups, *t.shape[2:])


def conv(lhs: np.ndarray, rhs: np.ndarray, g: cinn.ConvGeometry, conv_type: cinn.ConvType) -> np.ndarray:
    """y[n, o, i, j] = sum over the c of o's group and taps (p, q) of x_padded[n, c, i*s + p*d, j*s + q*d] *
    w[o, c, p, q]; backward_data and backward_filter are its exact adjoints in x and in w."""
    groups, dtype = g.groups, lhs.dtype
    hp, wp = _padded_size(g)
    top, left = g.pad_top, g.pad_left
    w_shape = (groups, g.o // groups, g.c // groups, g.kh, g.kw)
    if conv_type == cinn.ConvType.FORWARD:
        x, w = _to_nchw(lhs, g), rhs.reshape(w_shape)
        xp = np.zeros((g.n, g.c, hp, wp), dtype)
        xp[:, :, top : top + g.h, left : left + g.w] = x
        y = np.zeros((g.n, groups, g.o // groups, g.oh, g.ow), dtype)
        for p in range(g.kh):
            for q in range(g.kw):
                patch = _grouped(xp[_window(g, p, q)], groups)
                y += np.einsum("ngchw,goc->ngohw", patch, w[:, :, :, p, q])
        return _from_nchw(y.reshape(g.n, g.o, g.oh, g.ow), g)
    if conv_type == cinn.ConvType.BACKWARD_DATA:
        w, dy = lhs.reshape(w_shape), _grouped(_to_nchw(rhs, g), groups)
        dxp = np.zeros((g.n, g.c, hp, wp), dtype)
        for p in range(g.kh):
            for q in range(g.kw):
                contribution = np.einsum("ngohw,goc->ngchw", dy, w[:, :, :, p, q])
                dxp[_window(g, p, q)] += contribution.reshape(g.n, g.c, g.oh, g.ow)
        return _from_nchw(dxp[:, :, top : top + g.h, left : left + g.w], g)
    x, dy = _to_nchw(lhs, g), _grouped(_to_nchw(rhs, g), groups)
    xp = np.zeros((g.n, g.c, hp, wp), dtype)
    xp[:, :, top : top + g.h, left : left + g.w] = x
    dw = np.zeros(w_shape, dtype)
    for p in range(g.kh):
        for q in range(g.kw):
            dw[:, :, :, p, q] = np.einsum("ngchw,ngohw->goc", _grouped(xp[_window(g, p, q)], groups), dy)
    return dw.reshape(g.w_shape)


def _ints(attr) -> list[int]:
    return [int(v) for v in attr.iter_values()]


def _evaluate_complex(op: Operation, args: list[np.ndarray]) -> list[np.ndarray]:
    match op:
        case cinn.DotOp():
            return [dot(*args)]
        case cinn.CompareOp():
            return [COMPARE[op.kind.data](*args)]
        case cinn.ReduceOp():
            return [reduce(args[0], op.kind.data, _ints(op.dim), bool(op.keep_dim.value.data))]
        case cinn.BroadcastToOp():
            return [broadcast_to(args[0], _ints(op.out_shape), _ints(op.broadcast_axes))]
        case cinn.BnMeanVarianceOp():
            return bn_mean_variance(*args)
        case cinn.BnGradBiasScaleOp():
            return bn_grad_bias_scale(*args)
        case cinn.ConcatOp():
            return [np.concatenate(args, axis=op.normalized_axis())]
        case cinn.ConvOp():
            return [conv(args[0], args[1], op.geometry(), op.conv_type.data)]
        case cinn.ReshapeOp():
            return [args[0].reshape(op.result.type.get_shape())]  # pyright: ignore[reportAttributeAccessIssue]
        case cinn.ReverseOp():
            return [np.flip(args[0], axis=op.axes())]
        case cinn.SelectOp():
            return [np.where(*args)]
        case cinn.SliceOp():
            return [args[0][tuple(slice(lo, hi) for lo, hi in op.bounds())]]
        case cinn.TransposeOp():
            return [np.transpose(args[0], _ints(op.axis))]
        case _:
            raise CVMRuntimeError(f"no reference semantics for '{op.name}'")


def evaluate(op: Operation, args: list[np.ndarray]) -> list[np.ndarray]:
    """The results of one cinn op (which must verify) on numpy arguments of its operand types."""
    with np.errstate(all="ignore"):
        if isinstance(op, cinn.ConstScalarOp):
            results = [np.array(op.value.value.data)]
        elif type(op) in UNARY:
            results = [UNARY[type(op)](args[0])]  # pyright: ignore[reportArgumentType]
        elif type(op) in BINARY:
            results = [BINARY[type(op)](*args)]  # pyright: ignore[reportArgumentType]
        else:
            results = _evaluate_complex(op, args)
    out: list[np.ndarray] = []
    for value, result in zip(results, op.results):
        t = result.type
        assert isinstance(t, TensorType)
        array = np.asarray(value).astype(numpy_dtype(t), copy=False)
        assert array.shape == t.get_shape(), f"{op.name}: reference shape {array.shape}, expected {t}"
        out.append(np.require(array, requirements="C"))  # ascontiguousarray would make a 0-d array 1-d
    return out


def run_function(function: func.FuncOp, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Interpret a func.func of cinn ops, walking its ops in order; the inputs must have the argument types."""
    env: dict = dict(zip(function.args, inputs))
    for op in function.body.ops:
        if isinstance(op, func.ReturnOp):
            return [env[v] for v in op.arguments]
        env.update(zip(op.results, evaluate(op, [env[v] for v in op.operands])))
    raise CVMRuntimeError(f"function '{function.sym_name.data}' has no func.return")
