"""The static rules of the CVM operator set: attributes, shapes, precisions and gas.

This module is the single home of every rule of `spec/cvm-runtime.md` sections 1 to 3. The `cvm` dialect's
verifiers, the model loader, the builder and the passes all call `infer`; nothing else re-derives a shape, a
precision or a gas figure. It works on plain Python values (tuples of ints) so that loading a model needs no IR.

Errors follow cvm-runtime's classes: a malformed attribute (missing, unknown, unparsable, or outside a bound the
runtime's parameter parser enforces) is a `CVMRuntimeError`; a value the operator rejects (a range, a shape or a
precision violation) is a `CVMLogicError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

from cvmc.errors import CVMLogicError, CVMRuntimeError

Shape = tuple[int, ...]
Attrs = dict[str, Any]

MAX_DIM = 1 << 24
MAX_SIZE = 1 << 30
MAX_NDIM = 6
MAX_ATTR = 4096
MAX_BASE_OPS = 1 << 30
MAX_TOTAL_OPS = 1 << 40
MAX_MEMORY = 1 << 40


# ---------------------------------------------------------------------------------------------------------
# Attribute schema and parsing (cvm-runtime's parameter parser: every value is a string in the JSON)
# ---------------------------------------------------------------------------------------------------------


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


@dataclass(frozen=True)
class AttrSpec:
    """One attribute of an operator: `kind` is int, bool, ints (a tuple), opt_int (None or int) or str."""

    name: str
    kind: str
    default: Any = REQUIRED
    lower: int | None = None  # a bound the parameter parser itself enforces (a runtime error)


def _a(name: str, kind: str, default: Any = REQUIRED, lower: int | None = None) -> AttrSpec:
    return AttrSpec(name, kind, default, lower)


_SHIFT = (_a("precision", "int"), _a("is_sign", "bool", True), _a("shift_bit", "int"))
_REDUCE = (_a("axis", "ints", ()), _a("keepdims", "bool", False), _a("exclude", "bool", False),
           _a("dtype", "str", "int32"))

OP_ATTRS: dict[str, tuple[AttrSpec, ...]] = {
    "conv2d": (
        _a("channels", "int"), _a("kernel_size", "ints"), _a("strides", "ints", (1, 1)),
        _a("padding", "ints", (0, 0)), _a("dilation", "ints", (1, 1)), _a("groups", "int", 1),
        _a("layout", "str", "NCHW"), _a("kernel_layout", "str", "OIHW"), _a("out_layout", "str", "__undef__"),
        _a("out_dtype", "str", "same"), _a("use_bias", "bool", True),
    ),
    "dense": (_a("units", "int", lower=1), _a("use_bias", "bool", True)),
    "relu": (),
    "max_pool2d": (
        _a("pool_size", "ints"), _a("strides", "ints", (1, 1)), _a("padding", "ints", (0, 0)),
        _a("layout", "str", "NCHW"), _a("ceil_mode", "bool", False),
    ),
    "upsampling": (_a("scale", "int"), _a("layout", "str", "NCHW"), _a("method", "str", "NEAREST_NEIGHBOR")),
    "get_valid_counts": (_a("score_threshold", "int", 0),),
    "non_max_suppression": (
        _a("iou_threshold", "int", 50), _a("force_suppress", "bool", False), _a("top_k", "int", -1),
        _a("max_output_size", "int", -1), _a("coord_start", "int", 2), _a("score_index", "int", 1),
        _a("id_index", "int", 0), _a("return_indices", "bool", False), _a("invalid_to_bottom", "bool", True),
    ),
    "abs": (),
    "negative": (),
    "cvm_precision": (),
    "elemwise_add": (),
    "elemwise_sub": (),
    "clip": (_a("a_min", "int"), _a("a_max", "int")),
    "cvm_clip": (_a("precision", "int"), _a("is_sign", "bool", True)),
    "cvm_right_shift": _SHIFT,
    "cvm_left_shift": _SHIFT,
    "repeat": (_a("repeats", "int"), _a("axis", "int", 0)),
    "tile": (_a("reps", "ints"),),
    "flatten": (),
    "concatenate": (_a("axis", "int", 1),),
    "expand_dims": (_a("axis", "int"), _a("num_newaxis", "int", 1, lower=1)),
    "reshape": (_a("shape", "ints"),),
    "squeeze": (_a("axis", "ints", ()),),
    "transpose": (_a("axes", "ints", ()),),
    "strided_slice": (_a("begin", "ints"), _a("end", "ints", (1,)), _a("stride", "ints", ())),
    "take": (_a("axis", "opt_int", None),),
    "cvm_lut": (_a("in_dim", "int"),),
    "slice_like": (_a("axis", "ints", ()),),
    "where": (),
    "sum": _REDUCE,
    "max": _REDUCE,
    "broadcast_add": (),
    "broadcast_sub": (),
    "broadcast_mul": (),
    "broadcast_max": (),
    "broadcast_div": (),
    "broadcast_greater": (),
}

OPS: tuple[str, ...] = tuple(OP_ATTRS)

_INT_RE = re.compile(r"\s*[-+]?\d+\s*$")
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _parse_int(text: str, bounds: tuple[int, int] = _INT32) -> int:
    if not _INT_RE.match(text):
        raise ValueError(f"expected an integer, got {text!r}")
    value = int(text)
    if not bounds[0] <= value <= bounds[1]:
        raise ValueError(f"integer {text.strip()} does not fit the attribute's type")
    return value


def _parse_bool(text: str) -> bool:
    t = text.strip().lower()
    if t in ("true", "1"):
        return True
    if t in ("false", "0"):
        return False
    raise ValueError(f"expected a boolean, got {text!r}")


def _parse_ints(text: str) -> tuple[int, ...]:
    t = text.strip()
    if t and t[0] in "([":
        close = ")" if t[0] == "(" else "]"
        if not t.endswith(close):
            raise ValueError(f"expected a tuple such as (1, 2), got {text!r}")
        body = t[1:-1].strip()
        if not body:
            return ()
        items = [s for s in body.split(",")]
        if items[-1].strip() == "":  # a trailing comma: (1,)
            items.pop()
        return tuple(_parse_int(s, _INT64) for s in items)
    return (_parse_int(t, _INT64),)


def _parse_value(spec: AttrSpec, text: str) -> Any:
    if spec.kind == "int":
        return _parse_int(text)
    if spec.kind == "bool":
        return _parse_bool(text)
    if spec.kind == "ints":
        return _parse_ints(text)
    if spec.kind == "opt_int":
        return None if text.strip() == "None" else _parse_int(text)
    return text


def parse_attrs(op: str, raw: dict[str, Any]) -> Attrs:
    """Typed attributes, defaults filled in, from the JSON's string values (a runtime error when malformed)."""
    specs = {s.name: s for s in OP_ATTRS[op]}
    for key in raw:
        if key not in specs:
            raise CVMRuntimeError(f"unknown attribute {key!r} of {op}; expected one of {sorted(specs)}")
    attrs: Attrs = {}
    for name, spec in specs.items():
        if name not in raw:
            if spec.default is REQUIRED:
                raise CVMRuntimeError(f"required attribute {name!r} of {op} is missing")
            attrs[name] = spec.default
            continue
        text = raw[name]
        if not isinstance(text, str):
            raise CVMRuntimeError(f"attribute {name!r} of {op} must be a string, got {text!r}")
        try:
            value = _parse_value(spec, text)
        except ValueError as e:
            raise CVMRuntimeError(f"attribute {name!r} of {op}: {e}") from None
        if spec.lower is not None and value < spec.lower:
            raise CVMRuntimeError(f"attribute {name!r} of {op}: expected >= {spec.lower}, got {value}")
        attrs[name] = value
    return attrs


def format_attr(spec: AttrSpec, value: Any) -> str:
    """The JSON string form of a typed attribute value (the inverse of parsing)."""
    if spec.kind == "bool":
        return "True" if value else "False"
    if spec.kind == "ints":
        return "(" + ", ".join(str(v) for v in value) + ")"
    return str(value)


def default_attrs(op: str, **given: Any) -> Attrs:
    """Typed attributes with defaults for those not given (for the builder); missing required ones raise."""
    specs = OP_ATTRS[op]
    unknown = set(given) - {s.name for s in specs}
    if unknown:
        raise CVMLogicError(f"unknown attribute {sorted(unknown)[0]!r} of {op}")
    attrs: Attrs = {}
    for s in specs:
        if s.name in given:
            v = given[s.name]
            attrs[s.name] = tuple(v) if s.kind == "ints" and isinstance(v, list | tuple) else (
                (v,) if s.kind == "ints" else v)
        elif s.default is REQUIRED:
            raise CVMLogicError(f"{op} needs the attribute {s.name!r}")
        else:
            attrs[s.name] = s.default
    return attrs


# ---------------------------------------------------------------------------------------------------------
# Precision helpers (spec section 1)
# ---------------------------------------------------------------------------------------------------------


def bitlen(k: int) -> int:
    """Number of bits of a non-negative integer: bitlen(1) = 1, bitlen(27) = 5."""
    return int(k).bit_length()


def next_precision(m: int) -> int:
    """NP(m): the precision that holds every value of magnitude <= m."""
    return bitlen(m + 1) + 1


def precision_bound(p: int) -> int:
    """The largest magnitude a tensor of precision p may hold: 2^(p-1) - 1."""
    return (1 << (p - 1)) - 1


def check_values(values: Any, p: int) -> None:
    """Params must hold their precision (cvm-runtime checks them at load): a logic error names the first that
    does not. `values` is an integer numpy array."""
    bound = precision_bound(p)
    flat = values.reshape(-1)
    bad = ((flat < -bound) | (flat > bound)).nonzero()[0]
    if bad.size:
        i = int(bad[0])
        raise CVMLogicError(f"expected values of precision {p} (|x| <= {bound}), got {int(flat[i])} at index {i}")


# ---------------------------------------------------------------------------------------------------------
# Inference
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Signature:
    """What an operator node produces: output shapes and precisions, and gas ops per element of output 0."""

    shapes: tuple[Shape, ...]
    precisions: tuple[int, ...]
    base_ops: int


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise CVMLogicError(msg)


def _in_range(name: str, value: int, lo: int, hi: int) -> None:
    _check(lo <= value <= hi, f"expected {name!r} in [{lo}, {hi}], got {value}")


def _pair(name: str, value: tuple[int, ...], n: int = 2) -> tuple[int, ...]:
    _check(len(value) == n, f"expected {name!r} to have {n} values, got {len(value)}")
    return value


def _axis(name: str, axis: int, ndim: int) -> int:
    _in_range(name, axis, -ndim, ndim - 1)
    return axis + ndim if axis < 0 else axis


def check_shape(shape: Sequence[int], what: str = "shape") -> Shape:
    """A tensor shape cvm-runtime accepts: 1 to 6 dims, each in [1, 2^24], at most 2^30 elements."""
    shape = tuple(shape)
    _check(0 < len(shape) <= MAX_NDIM, f"expected {what} to have 1 to {MAX_NDIM} dims, got {len(shape)}")
    for d in shape:
        _check(isinstance(d, int) and 0 < d <= MAX_DIM, f"expected every dim of {what} in [1, {MAX_DIM}], "
               f"got {list(shape)}")
    _check(prod(shape) <= MAX_SIZE, f"expected {what} to have at most {MAX_SIZE} elements, got {prod(shape)}")
    return shape


def _broadcast(a: Shape, b: Shape) -> Shape:
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(pa, pb):
        _check(x == y or x == 1 or y == 1, f"shapes {list(a)} and {list(b)} cannot be broadcast together")
        out.append(max(x, y))
    return tuple(out)


Rule = Callable[[Attrs, list[Shape], list[int]], Signature]
_RULES: dict[str, Rule] = {}
_ARITY: dict[str, Callable[[Attrs], int]] = {}


def _rule(*names: str, arity: int | Callable[[Attrs], int] = 1):
    def register(fn: Rule) -> Rule:
        for n in names:
            _RULES[n] = fn
            _ARITY[n] = arity if callable(arity) else (lambda _a, k=arity: k)
        return fn

    return register


def num_inputs(op: str, attrs: Attrs) -> int:
    """How many inputs the operator takes with these attributes (-1: any number >= 1)."""
    return _ARITY[op](attrs)


def num_outputs(op: str) -> int:
    return 2 if op == "get_valid_counts" else 1


def _sig(shape: Shape, prec: int, base_ops: int = 1) -> Signature:
    return Signature((shape,), (prec,), base_ops)


def _ndim(name: str, shape: Shape, n: int) -> None:
    _check(len(shape) == n, f"expected {name} of rank {n}, got shape {list(shape)}")


@_rule("conv2d", arity=lambda a: 3 if a["use_bias"] else 2)
def _conv2d(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    data, weight = s[0], s[1]
    _ndim("data", data, 4)
    _ndim("weight", weight, 4)
    _check(a["layout"] == "NCHW", f"expected 'layout' NCHW, got {a['layout']}")
    _check(a["kernel_layout"] == "OIHW", f"expected 'kernel_layout' OIHW, got {a['kernel_layout']}")
    _check(a["out_layout"] in ("__undef__", "NCHW"), f"expected 'out_layout' NCHW, got {a['out_layout']}")
    kh, kw = _pair("kernel_size", a["kernel_size"])
    sh, sw = _pair("strides", a["strides"])
    ph, pw = _pair("padding", a["padding"])
    dh, dw = _pair("dilation", a["dilation"])
    for name, v in (("strides", sh), ("strides", sw), ("dilation", dh), ("dilation", dw),
                    ("kernel_size", kh), ("kernel_size", kw)):
        _in_range(name, v, 1, MAX_ATTR)
    for v in (ph, pw):
        _in_range("padding", v, 0, MAX_ATTR)
    oc, g = a["channels"], a["groups"]
    _in_range("channels", oc, 1, MAX_DIM)
    _in_range("groups", g, 1, MAX_DIM)
    n, c, h, w = data
    _check(c % g == 0, f"expected input channels {c} divisible by 'groups' {g}")
    _check(oc % g == 0, f"expected 'channels' {oc} divisible by 'groups' {g}")
    _check(weight == (oc, c // g, kh, kw),
           f"expected weight shape {[oc, c // g, kh, kw]} (channels, in_channels / groups, kernel_size), "
           f"got {list(weight)}")
    _check(p[0] <= 8, f"expected data precision <= 8, got {p[0]}")
    _check(p[1] <= 8, f"expected weight precision <= 8, got {p[1]}")
    ekh, ekw = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    _check(ekh <= h + 2 * ph, f"dilated kernel height {ekh} exceeds padded input height {h + 2 * ph}")
    _check(ekw <= w + 2 * pw, f"dilated kernel width {ekw} exceeds padded input width {w + 2 * pw}")
    oh, ow = (h + 2 * ph - ekh) // sh + 1, (w + 2 * pw - ekw) // sw + 1
    k = (c // g) * kh * kw
    prec = p[0] + p[1] + bitlen(k)
    if a["use_bias"]:
        _check(s[2] == (oc,), f"expected bias shape {[oc]}, got {list(s[2])}")
        prec = max(prec, p[2]) + 1
    return _sig((n, oc, oh, ow), prec, 3 * k + (1 if a["use_bias"] else 0))


@_rule("dense", arity=lambda a: 3 if a["use_bias"] else 2)
def _dense(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    data, weight = s[0], s[1]
    _ndim("data", data, 2)
    _ndim("weight", weight, 2)
    units = a["units"]
    m, k = data
    _check(weight == (units, k), f"expected weight shape {[units, k]} (units, data.shape[1]), got {list(weight)}")
    _check(p[0] <= 8, f"expected data precision <= 8, got {p[0]}")
    _check(p[1] <= 8, f"expected weight precision <= 8, got {p[1]}")
    prec = p[0] + p[1] + bitlen(k)
    if a["use_bias"]:
        _check(s[2] == (units,), f"expected bias shape {[units]}, got {list(s[2])}")
        prec = max(prec, p[2]) + 1
    return _sig((m, units), prec, 3 * k + (1 if a["use_bias"] else 0))


@_rule("relu", "abs", "negative")
def _unary(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    return _sig(s[0], p[0])


@_rule("cvm_precision")
def _cvm_precision(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    return _sig(s[0], 6)


@_rule("max_pool2d")
def _max_pool2d(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    data = s[0]
    _ndim("data", data, 4)
    _check(a["layout"] == "NCHW", f"expected 'layout' NCHW, got {a['layout']}")
    ph_, pw_ = _pair("pool_size", a["pool_size"])
    sh, sw = _pair("strides", a["strides"])
    pad = a["padding"]
    _check(len(pad) in (1, 2), f"expected 'padding' to have 1 or 2 values, got {len(pad)}")
    ph, pw = (pad[0], pad[0]) if len(pad) == 1 else pad
    for name, v in (("pool_size", ph_), ("pool_size", pw_), ("strides", sh), ("strides", sw)):
        _in_range(name, v, 1, MAX_ATTR)
    for v in (ph, pw):
        _in_range("padding", v, 0, MAX_ATTR)
    _check(ph < ph_ and pw < pw_, f"expected 'padding' {[ph, pw]} smaller than 'pool_size' {[ph_, pw_]}")
    n, c, h, w = data
    _check(ph_ <= h + 2 * ph and pw_ <= w + 2 * pw,
           f"pool_size {[ph_, pw_]} exceeds padded input {[h + 2 * ph, w + 2 * pw]}")
    if a["ceil_mode"]:
        oh, ow = (h + 2 * ph - ph_ + sh - 1) // sh + 1, (w + 2 * pw - pw_ + sw - 1) // sw + 1
        _check((oh - 1) * sh - ph < h and (ow - 1) * sw - pw < w,
               "in ceil mode the last pooling window starts inside the padding")
    else:
        oh, ow = (h + 2 * ph - ph_) // sh + 1, (w + 2 * pw - pw_) // sw + 1
    return _sig((n, c, oh, ow), p[0], ph_ * pw_)


@_rule("upsampling")
def _upsampling(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    _ndim("data", s[0], 4)
    _in_range("scale", a["scale"], 1, MAX_ATTR)
    _check(a["method"] == "NEAREST_NEIGHBOR", f"expected 'method' NEAREST_NEIGHBOR, got {a['method']}")
    _check(a["layout"] == "NCHW", f"expected 'layout' NCHW, got {a['layout']}")
    n, c, h, w = s[0]
    k = a["scale"]
    return _sig((n, c, h * k, w * k), p[0])


@_rule("get_valid_counts")
def _get_valid_counts(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    _ndim("data", s[0], 3)
    b, n, k = s[0]
    _check(2 <= k < 32, f"expected data.shape[2] in [2, 31], got {k}")
    return Signature(((b,), (b, n, k)), (next_precision(n * k), p[0]), 1)


@_rule("non_max_suppression", arity=2)
def _nms(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    data, valid = s
    _ndim("data", data, 3)
    _check(data[2] == 6, f"expected data.shape[2] == 6, got {data[2]}")
    _check(valid == (data[0],), f"expected valid_count shape {[data[0]]}, got {list(valid)}")
    _check(a["iou_threshold"] > 0, f"expected 'iou_threshold' > 0, got {a['iou_threshold']}")
    for name, want in (("coord_start", 2), ("score_index", 1), ("id_index", 0)):
        _check(a[name] == want, f"expected {name!r} == {want}, got {a[name]}")
    _check(not a["return_indices"], "expected 'return_indices' false, got true")
    _check(a["invalid_to_bottom"], "expected 'invalid_to_bottom' true, got false")
    return _sig(data, p[0], 20 * data[0])


@_rule("elemwise_add", "elemwise_sub", arity=2)
def _elemwise(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    _check(s[0] == s[1], f"expected operands of the same shape, got {list(s[0])} and {list(s[1])}")
    return _sig(s[0], max(p) + 1)


@_rule("clip")
def _clip(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    lo, hi = a["a_min"], a["a_max"]
    _check(lo < hi, f"expected 'a_min' < 'a_max', got {lo} and {hi}")
    return _sig(s[0], next_precision(max(abs(lo), abs(hi))))


@_rule("cvm_clip")
def _cvm_clip(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    _in_range("precision", a["precision"], 1, 32)
    return _sig(s[0], a["precision"])


@_rule("cvm_right_shift", "cvm_left_shift")
def _shift(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    _in_range("precision", a["precision"], 1, 32)
    _in_range("shift_bit", a["shift_bit"], 1, 32)
    return _sig(s[0], a["precision"])


@_rule("repeat")
def _repeat(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    _check(a["repeats"] > 0, f"expected 'repeats' > 0, got {a['repeats']}")
    ax = _axis("axis", a["axis"], len(s[0]))
    out = list(s[0])
    out[ax] *= a["repeats"]
    return _sig(tuple(out), p[0])


@_rule("tile")
def _tile(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    reps = a["reps"]
    for r in reps:
        _in_range("reps", r, 1, MAX_ATTR)
    n = max(len(s[0]), len(reps))
    x = (1,) * (n - len(s[0])) + s[0]
    r = (1,) * (n - len(reps)) + tuple(reps)
    return _sig(tuple(i * j for i, j in zip(x, r)), p[0])


@_rule("flatten")
def _flatten(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    return _sig((s[0][0], prod(s[0][1:])), p[0])


@_rule("concatenate", arity=-1)
def _concatenate(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    _check(len(s) >= 1, "expected at least one input")
    n = len(s[0])
    ax = _axis("axis", a["axis"], n)
    for t in s[1:]:
        _check(len(t) == n and all(t[i] == s[0][i] for i in range(n) if i != ax),
               f"expected inputs equal except on axis {ax}, got {list(s[0])} and {list(t)}")
    out = list(s[0])
    out[ax] = sum(t[ax] for t in s)
    return _sig(tuple(out), max(p))


@_rule("expand_dims")
def _expand_dims(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    n = len(s[0])
    ax = a["axis"]
    _in_range("axis", ax, -n - 1, n)
    ax = ax + n + 1 if ax < 0 else ax
    return _sig(s[0][:ax] + (1,) * a["num_newaxis"] + s[0][ax:], p[0])


def reshape_shape(src: Shape, codes: Sequence[int]) -> Shape:
    """MXNet's reshape codes: 0 copy, -1 infer, -2 copy the rest, -3 merge two, -4 split one into two."""
    out: list[int] = []
    infer = -1
    i = 0
    k = 0
    codes = list(codes)
    while k < len(codes):
        c = codes[k]
        if c > 0:
            out.append(c)
            i += 1
        elif c == 0:
            _check(i < len(src), f"reshape code 0 at position {k} has no input dim to copy")
            out.append(src[i])
            i += 1
        elif c == -1:
            _check(infer < 0, "expected at most one -1 in 'shape'")
            infer = len(out)
            out.append(1)
            i += 1
        elif c == -2:
            out.extend(src[i:])
            i = len(src)
        elif c == -3:
            _check(i + 1 < len(src), f"reshape code -3 at position {k} needs two input dims")
            out.append(src[i] * src[i + 1])
            i += 2
        elif c == -4:
            _check(i < len(src) and k + 2 < len(codes), f"reshape code -4 at position {k} needs two values")
            d, a, b = src[i], codes[k + 1], codes[k + 2]
            _check(a >= -1 and b >= -1 and not (a == -1 and b == -1),
                   f"reshape code -4 expects two sizes (one may be -1), got {a}, {b}")
            if a == -1:
                _check(b > 0 and d % b == 0, f"cannot split dim {d} by {b}")
                a = d // b
            if b == -1:
                _check(a > 0 and d % a == 0, f"cannot split dim {d} by {a}")
                b = d // a
            _check(a * b == d, f"reshape code -4 splits dim {d} into {a} x {b}")
            out.extend((a, b))
            i += 1
            k += 2
        else:
            raise CVMLogicError(f"expected reshape codes > 0 or in {{0, -1, -2, -3, -4}}, got {c}")
        k += 1
    total = prod(src)
    if infer >= 0:
        rest = prod(out)
        _check(rest > 0 and total % rest == 0, f"cannot infer -1 in 'shape' {list(codes)} from {list(src)}")
        out[infer] = total // rest
    _check(prod(out) == total, f"'shape' {list(codes)} gives {out}: {prod(out)} elements, expected {total}")
    return tuple(out)


@_rule("reshape")
def _reshape(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    return _sig(reshape_shape(s[0], a["shape"]), p[0])


@_rule("squeeze")
def _squeeze(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    n = len(s[0])
    if a["axis"]:
        axes = {_axis("axis", x, n) for x in a["axis"]}
        for x in axes:
            _check(s[0][x] == 1, f"expected dim {x} of size 1 to squeeze, got {s[0][x]}")
    else:
        axes = {i for i, d in enumerate(s[0]) if d == 1}
    out = tuple(d for i, d in enumerate(s[0]) if i not in axes)
    return _sig(out or (1,), p[0])


def transpose_axes(axes: Sequence[int], ndim: int) -> tuple[int, ...]:
    """The full permutation a transpose applies (the reverse when `axes` is empty)."""
    if not axes:
        return tuple(range(ndim - 1, -1, -1))
    _check(len(axes) == ndim, f"expected 'axes' of length {ndim}, got {len(axes)}")
    perm = tuple(_axis("axes", x, ndim) for x in axes)
    _check(len(set(perm)) == ndim, f"expected 'axes' to be a permutation, got {list(axes)}")
    return perm


@_rule("transpose")
def _transpose(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    perm = transpose_axes(a["axes"], len(s[0]))
    return _sig(tuple(s[0][i] for i in perm), p[0])


def strided_slice_bounds(shape: Shape, begin: Sequence[int], end: Sequence[int],
                         stride: Sequence[int]) -> list[tuple[int, int, int]]:
    """Per axis (begin, stride, length) of a strided slice, as cvm-runtime computes them."""
    out = []
    for i, dim in enumerate(shape):
        st = stride[i] if i < len(stride) else 1
        _check(st != 0, f"expected 'stride' values != 0, got 0 at axis {i}")
        b = begin[i] if i < len(begin) else (0 if st > 0 else dim - 1)
        e = end[i] if i < len(end) else (dim if st > 0 else -1)
        if i < len(begin) and b < 0:
            b += dim
        if i < len(end) and e < 0:
            e += dim
        lo, hi = (0, dim) if st > 0 else (-1, dim - 1)
        b, e = min(max(b, lo), hi), min(max(e, lo), hi)
        _check(b < e if st > 0 else e < b, f"expected a non-empty range on axis {i}, got begin {b}, end {e}, "
               f"stride {st}")
        out.append((b, st, (abs(e - b) + abs(st) - 1) // abs(st)))
    return out


@_rule("strided_slice")
def _strided_slice(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    n = len(s[0])
    for name in ("begin", "end", "stride"):
        _check(len(a[name]) <= n, f"expected at most {n} values in {name!r}, got {len(a[name])}")
    dims = strided_slice_bounds(s[0], a["begin"], a["end"], a["stride"])
    return _sig(tuple(d[2] for d in dims), p[0])


@_rule("take", arity=2)
def _take(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    data, idx = s
    if a["axis"] is None:
        return _sig(idx, p[0])
    ax = _axis("axis", a["axis"], len(data))
    return _sig(data[:ax] + idx + data[ax + 1:], p[0])


@_rule("cvm_lut", arity=2)
def _cvm_lut(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    size = prod(s[1])
    _check(a["in_dim"] == size, f"expected 'in_dim' equal to the table size {size}, got {a['in_dim']}")
    return _sig(s[0], p[1])


@_rule("slice_like", arity=2)
def _slice_like(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    data, like = s
    n, m = len(data), len(like)
    if a["axis"]:
        axes = [_axis("axis", x, n) for x in a["axis"]]
    else:
        _check(m == n, f"expected shape_like of rank {n} when 'axis' is empty, got {m}")
        axes = list(range(m))
    out = list(data)
    for x in axes:
        _check(x < m, f"axis {x} is beyond shape_like's rank {m}")
        _check(like[x] <= data[x], f"expected shape_like dim {x} <= {data[x]}, got {like[x]}")
        out[x] = like[x]
    return _sig(tuple(out), p[0])


@_rule("where", arity=3)
def _where(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    cond, x, y = s
    _check(x == y, f"expected x and y of the same shape, got {list(x)} and {list(y)}")
    _check(cond == x or (len(cond) == 1 and cond[0] == x[0]),
           f"expected condition of shape {list(x)} or {[x[0]]}, got {list(cond)}")
    return _sig(x, p[0])


def reduce_axes(shape: Shape, axis: Sequence[int], exclude: bool) -> tuple[int, ...]:
    """The sorted axes a sum or max reduces."""
    n = len(shape)
    given = sorted(_axis("axis", x, n) for x in axis)
    for i in range(len(given) - 1):
        _check(given[i] != given[i + 1], f"expected distinct 'axis' values, got {list(axis)}")
    if not axis:
        return tuple(range(n))
    if exclude:
        return tuple(i for i in range(n) if i not in given)
    return tuple(given)


def _reduce_shape(a: Attrs, shape: Shape) -> tuple[Shape, int]:
    axes = reduce_axes(shape, a["axis"], a["exclude"])
    if a["keepdims"]:
        out = tuple(1 if i in axes else d for i, d in enumerate(shape))
    else:
        out = tuple(d for i, d in enumerate(shape) if i not in axes) or (1,)
    return out, prod(shape) // prod(out)


@_rule("sum")
def _sum(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    out, ratio = _reduce_shape(a, s[0])
    return _sig(out, p[0] + bitlen(ratio), ratio)


@_rule("max")
def _max(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
    return _sig(_reduce_shape(a, s[0])[0], p[0])


def _broadcast_rule(name: str, precision: Callable[[list[int]], int]) -> None:
    def rule(a: Attrs, s: list[Shape], p: list[int]) -> Signature:
        return _sig(_broadcast(s[0], s[1]), precision(p))

    _rule(name, arity=2)(rule)


_broadcast_rule("broadcast_add", lambda p: max(p) + 1)
_broadcast_rule("broadcast_sub", lambda p: max(p) + 1)
_broadcast_rule("broadcast_mul", lambda p: p[0] + p[1])
_broadcast_rule("broadcast_max", max)
_broadcast_rule("broadcast_div", lambda p: p[0])
_broadcast_rule("broadcast_greater", lambda p: p[0])


def infer(op: str, attrs: Attrs, shapes: Sequence[Shape], precisions: Sequence[int]) -> Signature:
    """Output shapes, precisions and gas of one operator node; raises CVMLogicError on any violation."""
    if op not in _RULES:
        raise CVMRuntimeError(f"operator {op!r} is not registered")
    shapes = [tuple(x) for x in shapes]
    precisions = list(precisions)
    arity = num_inputs(op, attrs)
    _check(len(shapes) == arity if arity >= 0 else len(shapes) >= 1,
           f"expected {arity if arity >= 0 else 'at least 1'} inputs, got {len(shapes)}")
    sig = _RULES[op](attrs, shapes, precisions)
    for i, shp in enumerate(sig.shapes):
        check_shape(shp, f"output {i}")
    for prec in sig.precisions:
        _check(0 < prec <= 32, f"output precision would be {prec}, expected at most 32")
    if op == "cvm_left_shift":
        if precisions[0] + attrs["shift_bit"] > 32:
            raise CVMRuntimeError(f"input precision {precisions[0]} plus 'shift_bit' {attrs['shift_bit']} "
                                  "exceeds 32")
    _check(sig.base_ops <= MAX_BASE_OPS, f"expected at most {MAX_BASE_OPS} ops per element, got {sig.base_ops}")
    return sig


def node_gas(sig: Signature) -> int:
    """Gas of one operator node: base_ops x size(output 0) + 5 x the size of all outputs."""
    return sig.base_ops * prod(sig.shapes[0]) + 5 * sum(prod(x) for x in sig.shapes)


def variable_gas(shape: Shape) -> int:
    """Gas of one variable (input or param) node."""
    return 5 * prod(shape)
