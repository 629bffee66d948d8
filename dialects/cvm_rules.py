"""The static rules of the CVM operator set: attributes, shapes, precisions and gas.

This module is the single home of the operator rules, taken from cvm-runtime's code (commit b5a2518), not from
the summary in `spec/cvm-runtime.md`: the same checks, in the same order, with the same error class. The model
loader runs the runtime's phases over the whole graph (`parse_attrs` and `check_num_inputs` per node while
reading; then `infer_shape` for every node, `check_type` for every node, `infer_precision` for every node,
`check_deviations`, `base_ops`); the `cvm` dialect's verifiers, the builder and the passes call `infer`, which
composes them for one node. It works on plain Python values (tuples of ints): loading a model needs no IR.

Classes: a `VERIFY` of the runtime is a `CVMLogicError`; a dmlc ParamError (an unknown, malformed or missing
attribute), a `CHECK` or a `LOG(FATAL)` (a shape an operator assigns that disagrees, an inference function
that gives up) is a `CVMRuntimeError`. Where the runtime has undefined behaviour, cvmc rejects with a
`CVMLogicError`: the cases are listed in `DEVIATIONS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import prod
from typing import Any, cast

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
# Attribute schema and parsing: dmlc Parameter semantics (include/utils/parameter.h), field declarations and
# defaults from include/cvm/top/nn.h and include/cvm/top/tensor.h. Every value is a string in the JSON.
# ---------------------------------------------------------------------------------------------------------


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()

_DTYPES = ("float16", "float32", "float64", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
           "int64")


@dataclass(frozen=True)
class AttrSpec:
    """One attribute of an operator: `kind` is int, bool, ints (a tuple), opt_int (None or int) or str.

    `bits` is the C++ width of an int or of a tuple's elements (32: `int`, 64: `int64_t`/`dim_t`); `lower` a
    bound the parameter parser itself enforces (`set_lower_bound`, a runtime error); `enum` the only strings a
    str attribute takes (a dtype field: `add_enum`, anything else a runtime error)."""

    name: str
    kind: str
    default: Any = REQUIRED
    lower: int | None = None
    bits: int = 32
    enum: tuple[str, ...] | None = None


def _a(name: str, kind: str, default: Any = REQUIRED, lower: int | None = None, bits: int = 32,
       enum: tuple[str, ...] | None = None) -> AttrSpec:
    return AttrSpec(name, kind, default, lower, bits, enum)


def _shape(name: str, default: Any = REQUIRED) -> AttrSpec:
    """A TShape field (Tuple<dim_t>, int64 elements)."""
    return _a(name, "ints", default, bits=64)


_SHIFT = (_a("precision", "int"), _a("is_sign", "bool", True), _a("shift_bit", "int"))
_REDUCE = (_shape("axis", ()), _a("keepdims", "bool", False), _a("exclude", "bool", False),
           _a("dtype", "str", "int32", enum=_DTYPES))

# None: the operator registers no attribute parser, so any attribute is a logic error
# (src/runtime/graph_runtime.h:306 VERIFY_EQ(attrs.dict.size(), 0)).
_NO_PARSER = frozenset({"relu", "abs", "negative", "cvm_precision", "elemwise_add", "elemwise_sub", "flatten",
                        "where", "broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_max",
                        "broadcast_div", "broadcast_greater"})

OP_ATTRS: dict[str, tuple[AttrSpec, ...]] = {
    # include/cvm/top/nn.h Conv2DParam
    "conv2d": (
        _a("channels", "int"), _shape("kernel_size"), _shape("strides", (1, 1)), _shape("padding", (0, 0)),
        _shape("dilation", (1, 1)), _a("groups", "int", 1), _a("layout", "str", "NCHW"),
        _a("kernel_layout", "str", "OIHW"), _a("out_layout", "str", "__undef__"),
        _a("out_dtype", "str", "same", enum=("same",) + _DTYPES), _a("use_bias", "bool", True),
    ),
    "dense": (_a("units", "int", lower=1), _a("use_bias", "bool", True)),  # DenseParam
    "relu": (),
    "max_pool2d": (  # MaxPool2DParam
        _shape("pool_size"), _shape("strides", (1, 1)), _shape("padding", (0, 0)),
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
    "tile": (_shape("reps", (0,)),),  # TileParam: TShape{0}, which TileShape then rejects (a logic error)
    "flatten": (),
    "concatenate": (_a("axis", "int", 1),),
    "expand_dims": (_a("axis", "int"), _a("num_newaxis", "int", 1, lower=1)),
    "reshape": (_shape("shape"),),  # Tuple<int64_t>
    "squeeze": (_shape("axis", ()),),
    "transpose": (_shape("axes", ()),),
    "strided_slice": (_shape("begin", (0,)), _shape("end", (1,)), _shape("stride", ())),
    "take": (_a("axis", "opt_int", None),),
    "cvm_lut": (_a("in_dim", "int"),),
    "slice_like": (_a("axis", "ints", ()),),  # Tuple<int>: 32-bit elements
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

_SPACE = " \t\n\v\f\r"  # C isspace in the "C" locale


class _ParamError(Exception):
    """A dmlc ParamError (a runtime error once it leaves the parser)."""


def _read_int(text: str, i: int, bits: int) -> tuple[int, int]:
    """`istream >> int32/int64` from position i: skip spaces, an optional sign, decimal digits; the value and
    the position after it. Fails (no digits, out of range) with _ParamError."""
    n = len(text)
    while i < n and text[i] in _SPACE:
        i += 1
    j = i
    if j < n and text[j] in "+-":
        j += 1
    k = j
    while k < n and "0" <= text[k] <= "9":
        k += 1
    if k == j:
        raise _ParamError("no digits")
    value = int(text[i:k])
    if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        raise _ParamError("out of range")
    return value, k


def _read_tuple(text: str, bits: int) -> tuple[tuple[int, ...], int]:
    """`istream >> Tuple<T>` (include/cvm/tuple.h:221): a bare integer, or ( or [ then integers separated by
    commas, an optional trailing comma, an optional L after each, then ) or ] (either closes either)."""
    n = len(text)
    i = 0
    while True:
        ch = text[i] if i < n else ""
        if ch and (ch.isdigit() and ch.isascii() or ch == "-"):
            v, i = _read_int(text, i, bits)
            return (v,), i
        if not ch:
            raise _ParamError("end of input")
        i += 1
        if ch in "([":
            break
        if ch not in _SPACE:
            raise _ParamError(f"unexpected {ch!r}")
    while i < n and text[i] in _SPACE:
        i += 1
    if i < n and text[i] in ")]":
        return (), i + 1
    out: list[int] = []
    while True:
        v, i = _read_int(text, i, bits)
        out.append(v)
        ch = ""
        while i < n:
            ch = text[i]
            i += 1
            if ch not in _SPACE:
                break
            ch = ""
        if ch == "L":
            ch = text[i] if i < n else ""
            i += 1 if i < n else 0
        if ch == ",":
            while i < n and text[i] in _SPACE:
                i += 1
            if i < n and text[i] in ")]":
                return tuple(out), i + 1
        elif ch and ch in ")]":
            return tuple(out), i
        else:
            raise _ParamError("expected , or )")


def _parse_value(spec: AttrSpec, text: str) -> Any:
    """FieldEntry<T>::Set (include/utils/parameter.h:555, 732, 838, 944, 961): the typed value or _ParamError."""
    if spec.kind == "str":
        if spec.enum is not None and text not in spec.enum:  # parameter.h:734 the enum map, exact match
            raise _ParamError(f"valid values are {list(spec.enum)}")
        return text
    if spec.kind == "bool":  # parameter.h:961: lower-cased, exactly true/false/1/0, no spaces
        low = text.lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
        raise _ParamError("expected a boolean")
    i = 0
    value: Any
    if spec.kind == "int":
        value, i = _read_int(text, 0, spec.bits)
    elif spec.kind == "opt_int":  # include/utils/optional.h:168
        if text[:4] == "None":
            value, i = None, 4
        else:
            value, i = _read_int(text, 0, spec.bits)
            if i < len(text) and text[i] == "L":
                i += 1
    else:
        value, i = _read_tuple(text, spec.bits)
    if any(ch not in _SPACE for ch in text[i:]):  # parameter.h:559: only spaces may follow
        raise _ParamError("trailing characters")
    return value


def has_parser(op: str) -> bool:
    """Whether cvm-runtime registers an attribute parser for the operator."""
    return op not in _NO_PARSER


def parse_attrs(op: str, raw: dict[str, Any]) -> Attrs:
    """Typed attributes, defaults filled in, from the JSON's string values.

    An operator without a parser takes no attribute at all (a logic error, graph_runtime.h:306). Otherwise
    dmlc's `Parameter::Init` (parameter.h:395): each given key in turn is found (an unknown one is a runtime
    error unless it is hidden, `__x__`), set (a malformed value a runtime error) and checked against its
    lower bound (a runtime error); then each field not given takes its default, a required one missing being a
    runtime error. The runtime walks the given keys in its unordered_map's order; every failure there is a
    ParamError, so the order changes only which key the message names: cvmc walks them sorted."""
    if op not in OP_ATTRS:
        raise CVMRuntimeError(f"operator {op!r} is not registered")
    if not has_parser(op):
        if raw:
            raise CVMLogicError(f"operator {op} should not have attributes, got {sorted(raw)}")
        return {}
    specs = {s.name: s for s in OP_ATTRS[op]}
    attrs: Attrs = {}
    for key in sorted(raw):
        spec = specs.get(key)
        if spec is None:
            if len(key) > 4 and key.startswith("__") and key.endswith("__"):  # parameter.h:412 kAllowHidden
                continue
            raise CVMRuntimeError(f"Cannot find argument {key!r} of {op}; expected one of {sorted(specs)}")
        text = raw[key]
        if not isinstance(text, str):
            raise CVMRuntimeError(f"attribute {key!r} of {op} must be a string, got {text!r}")
        try:
            value = _parse_value(spec, text)
        except _ParamError as e:
            raise CVMRuntimeError(f"Invalid Parameter format for {key!r} of {op}: {text!r} ({e})") from None
        if spec.lower is not None and value < spec.lower:  # parameter.h:690 Check
            raise CVMRuntimeError(f"value {value} for Parameter {key!r} of {op} should be greater equal to "
                                  f"{spec.lower}")
        attrs[key] = value
    for name in sorted(specs):  # parameter.h:428 SetDefault, in the std::map's (sorted) order
        if name not in attrs:
            spec = specs[name]
            if spec.default is REQUIRED:
                raise CVMRuntimeError(f"Required parameter {name!r} of {op} is not presented")
            attrs[name] = spec.default
    if op in ("sum", "max"):  # src/top/tensor/reduce.cc:105 AxesParamParser sorts the axes
        attrs["axis"] = tuple(sorted(attrs["axis"]))
    return {s.name: attrs[s.name] for s in OP_ATTRS[op]}


def format_attr(spec: AttrSpec, value: Any) -> str:
    """The JSON string form of a typed attribute value (the inverse of parsing)."""
    if spec.kind == "bool":
        return "True" if value else "False"
    if spec.kind == "ints":
        return "(" + ", ".join(str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
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
            attrs[s.name] = tuple(cast("Sequence[Any]", v)) if s.kind == "ints" and isinstance(v, list | tuple) else (
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
# Inference, in cvm-runtime's phases (src/runtime/infer_attr.cc): FInferShape for every node (its inputs are
# the file's shapes; the caller then compares the inferred shapes with the file's, a logic error), FInferType
# for every node, FInferPrecision for every node, then the gas (GetOps). Each check below cites the
# runtime's file and line; VERIFY is a logic error, CHECK / LOG(FATAL) (CVM_ASSIGN_*_SHAPE, a false return
# of an inference function) a runtime error.
#
# Documented deviations: where the runtime reads memory it does not own or dies on a signal, cvmc rejects
# with a CVMLogicError instead (DEVIATIONS below, one row each).
# ---------------------------------------------------------------------------------------------------------

DEVIATIONS: tuple[tuple[str, str, str], ...] = (
    ("conv2d", "the weight's shape differs from (channels, in_channels / groups, kernel_size) and its run is not "
     "defined (conv2d_weight_geometry)",
     "src/top/nn/convolution.cc:74 never checks it (the weight always has a shape) and the kernel "
     "(src/runtime/formal/ops/nn.cc:159) runs with the weight's own geometry: past the weight when it has fewer "
     "than in_channels / groups channels, past the output or leaving it partly unwritten when its rows or its "
     "kernel size give another output shape. Where the run is defined cvmc follows it (the loader's "
     "_follow_conv_weights)"),
    ("strided_slice", "more 'begin' values than the data has dims",
     "src/runtime/formal/ops/transform.cc:227 walks every 'begin' value and reads the shape and the "
     "'stride' vector past their ends"),
    ("where", "a condition of one dim over x and y of several (a condition per row)",
     "src/runtime/formal/ops/transform.cc:364 copies each row with memcpy(dst, src, size), size the row's element "
     "count taken as bytes: the rest of the output is memory nobody wrote"),
    ("reshape", "a -4 code whose split gives a division by zero (-1 with 0)",
     "src/top/tensor/transform.cc:454 divides by the other value: SIGFPE"),
    ("reshape", "a -1 code with the product of the other (int32-truncated) dims 0",
     "src/top/tensor/transform.cc:469 divides by it: SIGFPE"),
    ("reshape", "a -1 code whose index among the codes is past the output dims (codes before it emit fewer dims "
     "than they are: a code below -4, a -2 with no dim left, a -4 triple)",
     "src/top/tensor/transform.cc:469 writes the inferred dim at oshape[infer_idx], past the vector"),
)
"""Each case where cvmc does not follow cvm-runtime: (operator, case, what the runtime does)."""

# Not a deviation: non_max_suppression's FInferShape clears its output vector and then assigns element 0
# (src/top/nn/nms.cc:45, 64), undefined behaviour that in practice leaves the data's shape as the output's;
# cvmc takes that observable behaviour (output shape = data shape).


UNDEFINED = "undefined in cvm-runtime"
UNMODELLED = "not modelled by cvmc"


def verify(cond: bool, msg: str) -> None:
    """cvm-runtime's VERIFY: a logic error. (The loader, runtime/frontend/graph.py, uses these three as well.)"""
    if not cond:
        raise CVMLogicError(msg)


def check(cond: bool, msg: str) -> None:
    """cvm-runtime's CHECK and LOG(FATAL): a runtime error."""
    if not cond:
        raise CVMRuntimeError(msg)


def undefined(cond: bool, msg: str) -> None:
    """A documented deviation: a logic error where the runtime's behaviour is undefined (DEVIATIONS; the README)."""
    if not cond:
        raise CVMLogicError(f"{UNDEFINED}: {msg}")


def unmodelled(cond: bool, msg: str) -> None:
    """A documented limit: a logic error where the runtime's behaviour is defined but cvmc does not follow it
    (the README, "Decisions that differ from cvm-runtime")."""
    if not cond:
        raise CVMLogicError(f"{UNMODELLED}: {msg}")


_check, _fatal, _deviation = verify, check, undefined


def _range(name: str, value: int, lo: int = 0, hi: int = 4096) -> None:
    """VerifyAttrRange (src/top/op_common.h:33): a logic error outside [lo, hi] (default [0, 4096])."""
    _check(lo <= value <= hi, f"expected {name!r} in [{lo}, {hi}], got {value}")


def _wrap(v: int, bits: int = 64) -> int:
    """C++ two's complement wrap-around of a signed integer."""
    m = 1 << bits
    v &= m - 1
    return v - m if v >= m >> 1 else v


def _cdiv(a: int, b: int) -> int:
    """C++ integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _size(shape: Sequence[int]) -> int:
    """TShape::Size (include/cvm/tuple.h:388): the int64 product, as size_t."""
    s = 1
    for d in shape:
        s = _wrap(s * d)
    return s & ((1 << 64) - 1)


def _assign(name: str, got: Shape, want: Sequence[int]) -> None:
    """shape_assign of a known shape (src/top/op_common.h:112) in CVM_ASSIGN_INPUT_SHAPE: LOG(FATAL) when
    the ranks differ or a non-zero dim differs (a runtime error)."""
    ok = len(got) == len(want) and all(w == 0 or g == w for g, w in zip(got, want))
    _fatal(ok, f"expected {name} shape {list(want)}, got {list(got)}")


def check_shape(given: Sequence[object], what: str = "shape") -> Shape:
    """A tensor shape cvm-runtime accepts: 1 to 6 dims, each in [1, 2^24], at most 2^30 elements."""
    _check(0 < len(given) <= MAX_NDIM, f"expected {what} to have 1 to {MAX_NDIM} dims, got {len(given)}")
    shape = tuple(d for d in given if isinstance(d, int) and 0 < d <= MAX_DIM)
    _check(len(shape) == len(given), f"expected every dim of {what} in [1, {MAX_DIM}], got {list(given)}")
    _check(prod(shape) <= MAX_SIZE, f"expected {what} to have at most {MAX_SIZE} elements, got {prod(shape)}")
    return shape


@dataclass(frozen=True)
class Signature:
    """What an operator node produces: output shapes and precisions, and gas ops per element of output 0."""

    shapes: tuple[Shape, ...]
    precisions: tuple[int, ...]
    base_ops: int


ShapeRule = Callable[[Attrs, list[Shape]], tuple[Shape, ...]]
PrecRule = Callable[[Attrs, list[Shape], list[int], list[Shape]], tuple[int, ...]]
_SHAPE: dict[str, ShapeRule] = {}
_PREC: dict[str, PrecRule] = {}
_ARITY: dict[str, Callable[[Attrs], int]] = {}


def _shape_rule(*names: str, arity: int | Callable[[Attrs], int] = 1):
    def register(fn: ShapeRule) -> ShapeRule:
        for n in names:
            _SHAPE[n] = fn
            _ARITY[n] = arity if callable(arity) else (lambda _a, k=arity: k)
        return fn

    return register


def _prec_rule(*names: str):
    def register(fn: PrecRule) -> PrecRule:
        for n in names:
            _PREC[n] = fn
        return fn

    return register


def num_inputs(op: str, attrs: Attrs) -> int:
    """How many inputs the operator takes with these attributes (-1: any number, concatenate's kVarg)."""
    return _ARITY[op](attrs)


def num_outputs(op: str) -> int:
    return 2 if op == "get_valid_counts" else 1


def check_num_inputs(op: str, attrs: Attrs, count: int) -> None:
    """src/runtime/graph_runtime.h:314 VERIFY_EQ(num_inputs, inputs.size()), after the attributes."""
    want = num_inputs(op, attrs)
    _check(want < 0 or count == want, f"expected {want} inputs, got {count}")


def _ndim(what: str, shape: Shape, n: int) -> None:
    _check(len(shape) == n, f"expected {what} of rank {n}, got shape {list(shape)}")


# --- elementwise and broadcast -----------------------------------------------------------------------------


@_shape_rule("relu", "abs", "negative", "cvm_precision", "clip", "cvm_clip", "cvm_right_shift",
             "cvm_left_shift")
def _same_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    return (s[0],)  # src/top/elemwise_op_common.h:65 ElemwiseShape<1, 1>


@_shape_rule("elemwise_add", "elemwise_sub", arity=2)
def _elemwise_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    # src/top/elemwise_op_common.h:40 VERIFY(shape_assign(...)) across the inputs
    _check(s[0] == s[1], f"expected operands of the same shape, got {list(s[0])} and {list(s[1])}")
    return (s[0],)


@_shape_rule("broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_max", "broadcast_div",
             "broadcast_greater", arity=2)
def _broadcast_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    lhs, rhs = s
    if lhs == rhs:
        return (lhs,)
    n = max(len(lhs), len(rhs))
    pa, pb = (1,) * (n - len(lhs)) + lhs, (1,) * (n - len(rhs)) + rhs
    out: list[int] = []
    for x, y in zip(pa, pb):
        # src/top/tensor/broadcast.cc:43 VERIFY(l == 1 || r == 1)
        _check(x == y or x == 1 or y == 1,
               f"shapes {list(lhs)} and {list(rhs)} cannot be broadcast together")
        out.append(max(x, y))
    return (tuple(out),)


def _in_prec(p: list[int]) -> None:
    # src/top/op_common.h:311 IN_PREC_CHECK: VERIFY_NE(prec, -1) for every input
    for i, x in enumerate(p):
        _check(x != -1, f"inputs({i}) has not been inferred precision")


@_prec_rule("relu", "abs", "negative", "max_pool2d", "upsampling", "non_max_suppression", "repeat", "tile",
            "flatten", "expand_dims", "reshape", "squeeze", "transpose", "strided_slice", "take", "slice_like",
            "where", "max", "broadcast_div", "broadcast_greater")
def _same_prec(a: Attrs, s: list[Shape], p: list[int], o: list[Shape]) -> tuple[int, ...]:
    _in_prec(p)  # src/top/elemwise_op_common.h:78 SamePrecision
    return (p[0],)


@_prec_rule("cvm_precision")
def _six_prec(a: Attrs, s: list[Shape], p: list[int], o: list[Shape]) -> tuple[int, ...]:
    _in_prec(p)  # src/top/elemwise_op_common.h:123 MaxPrecision<6>
    return (6,)


@_prec_rule("elemwise_add", "elemwise_sub", "broadcast_add", "broadcast_sub")
def _plus_prec(a: Attrs, s: list[Shape], p: list[int], o: list[Shape]) -> tuple[int, ...]:
    _in_prec(p)  # src/top/elemwise_op_common.h:87 BinaryPlusPrecision
    return (max(p) + 1,)


@_prec_rule("broadcast_mul")
def _mul_prec(a: Attrs, s: list[Shape], p: list[int], o: list[Shape]) -> tuple[int, ...]:
    _in_prec(p)  # src/top/elemwise_op_common.h:98 BinaryMultiplyPrecision
    return (p[0] + p[1],)


@_prec_rule("broadcast_max", "concatenate")
def _max_prec(a: Attrs, s: list[Shape], p: list[int], o: list[Shape]) -> tuple[int, ...]:
    _in_prec(p)  # src/top/elemwise_op_common.h:108 MaxInPrecision
    _check(len(p) > 0, "expected at least one input")
    return (max(p),)


@_prec_rule("clip")
def _clip_prec(a: Attrs, s: list[Shape], p: list[int], o: list[Shape]) -> tuple[int, ...]:
    _in_prec(p)
    r = (1 << 31) - 1
    _range("a_max", a["a_max"], -r, r)  # src/top/tensor/elemwise.cc:105
    _range("a_min", a["a_min"], -r, r)  # src/top/tensor/elemwise.cc:106
    # src/top/tensor/elemwise.cc:107 VERIFY(a_min < a_max)
    _check(a["a_min"] < a["a_max"], f"expected 'a_min' < 'a_max', got {a['a_min']} and {a['a_max']}")
    return (next_precision(max(abs(a["a_max"]), abs(a["a_min"]))),)


@_prec_rule("cvm_clip")
def _cvm_clip_prec(a: Attrs, s: list[Shape], p: list[int], o: list[Shape]) -> tuple[int, ...]:
    _in_prec(p)
    _range("precision", a["precision"], 1, 32)  # src/top/tensor/elemwise.cc:153
    return (a["precision"],)


@_prec_rule("cvm_left_shift")
def _left_shift_prec(a: Attrs, s: list[Shape], p: list[int], o: list[Shape]) -> tuple[int, ...]:
    _in_prec(p)
    _range("precision", a["precision"], 1, 32)  # src/top/tensor/elemwise.cc:186
    _range("shift_bit", a["shift_bit"], 1, 32)  # src/top/tensor/elemwise.cc:187
    # src/top/tensor/elemwise.cc:188 returns false: LOG(FATAL) "infer precision failed" (src/runtime/infer_attr.cc:74)
    _fatal(p[0] + a["shift_bit"] <= 32, f"input precision {p[0]} plus 'shift_bit' "
           f"{a['shift_bit']} exceeds 32")
    return (a["precision"],)


@_prec_rule("cvm_right_shift")
def _right_shift_prec(a: Attrs, s: list[Shape], p: list[int], o: list[Shape]) -> tuple[int, ...]:
    _in_prec(p)
    _range("precision", a["precision"], 1, 32)  # src/top/tensor/elemwise.cc:226
    _range("shift_bit", a["shift_bit"], 1, 32)  # src/top/tensor/elemwise.cc:227
    return (a["precision"],)


# --- neural network operators -----------------------------------------------------------------------------


def _layout_ok(text: str) -> bool:
    """Layout::parse (include/cvm/layout.h:409): upper-case dims once each, a factor before each lower-case
    sub-dim whose upper-case dim is present; a CHECK / LOG(FATAL) otherwise."""
    if text == "__undef__":
        return True
    seen_upper: set[str] = set()
    seen_lower: set[str] = set()
    factor = 0
    for c in text:
        if "A" <= c <= "Z":
            if factor != 0 or c in seen_upper:
                return False
            seen_upper.add(c)
        elif "a" <= c <= "z":
            if factor <= 0 or c in seen_lower:
                return False
            seen_lower.add(c)
            factor = 0
        elif "0" <= c <= "9":
            factor = _wrap(factor * 10 + ord(c) - 48, 32)
        else:
            return False
    if not seen_upper and not seen_lower:
        return False
    return all(c.upper() in seen_upper for c in seen_lower)


@_shape_rule("conv2d", arity=lambda a: 3 if a["use_bias"] else 2)
def _conv2d_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    # src/top/nn/convolution.cc:29, 31 VERIFY_EQ layout NCHW, kernel_layout OIHW
    _check(a["layout"] == "NCHW", f"expected 'layout' NCHW, got {a['layout']}")
    _check(a["kernel_layout"] == "OIHW", f"expected 'kernel_layout' OIHW, got {a['kernel_layout']}")
    # src/top/nn/convolution.cc:36 Layout(out_layout) CHECKs its grammar; :38 VERIFY_EQ NCHW
    _fatal(_layout_ok(a["out_layout"]), f"Invalid layout {a['out_layout']!r}")
    _check(a["out_layout"] in ("__undef__", "NCHW"), f"expected 'out_layout' NCHW, got {a['out_layout']}")
    data = s[0]
    _ndim("data", data, 4)  # src/top/nn/convolution.cc:50
    ks, pad, st, dil = a["kernel_size"], a["padding"], a["strides"], a["dilation"]
    _check(len(ks) == 2, f"expected 'kernel_size' of 2 values, got {list(ks)}")  # src/top/nn/convolution.cc:51
    _check(len(pad) == 2, f"expected 'padding' of 2 values, got {list(pad)}")  # src/top/nn/convolution.cc:52
    _range("padding", pad[0])  # src/top/nn/convolution.cc:53
    _range("padding", pad[1])  # src/top/nn/convolution.cc:54
    _check(len(st) == 2, f"incorrect stride size: {list(st)}")  # src/top/nn/convolution.cc:55
    _range("strides", st[0], 1)  # src/top/nn/convolution.cc:57
    _range("strides", st[1], 1)  # src/top/nn/convolution.cc:58
    _check(len(dil) == 2, f"incorrect dilate size: {list(dil)}")  # src/top/nn/convolution.cc:59
    _range("dilation", dil[0], 1)  # src/top/nn/convolution.cc:61
    _range("dilation", dil[1], 1)  # src/top/nn/convolution.cc:62
    oc, g = a["channels"], a["groups"]
    # src/top/nn/convolution.cc:64 VERIFY(groups > 0 && C % groups == 0 && channels % groups == 0) (C++ remainders)
    _check(g > 0 and data[1] % g == 0 and _cdiv_rem(oc, g) == 0,
           f"expected 'groups' {g} > 0 dividing the input channels {data[1]} and 'channels' {oc}")
    # src/top/nn/convolution.cc:74: the weight's shape is never checked (it always has one); see DEVIATIONS
    if a["use_bias"]:
        _assign("bias", s[2], (oc,))  # src/top/nn/convolution.cc:86 CVM_ASSIGN_INPUT_SHAPE: LOG(FATAL)
    dky, dkx = 1 + (ks[0] - 1) * dil[0], 1 + (ks[1] - 1) * dil[1]
    n, _, h, w = data
    oh = _cdiv(h + pad[0] * 2 - dky, st[0]) + 1  # src/top/nn/convolution.cc:93
    ow = _cdiv(w + pad[1] * 2 - dkx, st[1]) + 1  # src/top/nn/convolution.cc:96
    # src/top/nn/convolution.cc:104-110 recomputes the data shape with strides 1: always the same, never fatal
    # src/top/nn/convolution.cc:114, 118 VERIFY_LE(dilated kernel, padded input)
    _check(dky <= h + 2 * pad[0], f"dilated kernel height {dky} exceeds padded input height {h + 2 * pad[0]}")
    _check(dkx <= w + 2 * pad[1], f"dilated kernel width {dkx} exceeds padded input width {w + 2 * pad[1]}")
    return ((n, oc, oh, ow),)


def _cdiv_rem(a: int, b: int) -> int:
    """C++ a % b (the sign of a)."""
    return a - _cdiv(a, b) * b


def conv2d_weight_geometry(a: Attrs, s: Sequence[Sequence[int]]) -> tuple[int, int] | None:
    """The kernel size the runtime convolves with when the weight's shape is not (channels, in_channels / groups,
    kernel_size) but its run is still defined: None when it is that shape, else (FH, FW) of the weight.

    The kernel (src/runtime/formal/ops/nn.cc:159) takes the output channels, the weight's channels and the kernel
    size from the weight, the channels per group from the data: output pixel (oc, oh, ow) sums x[oc / (OC / groups)
    * ic_g + c] * w[oc, c] over c < ic_g = in_channels / groups. That reads inside both tensors and writes exactly
    the file's output when the weight has `channels` rows of at least ic_g channels and its kernel size gives the
    output's height and width (C++ divisions). Anything else reads or writes past a tensor or leaves output
    unwritten: DEVIATIONS row 1, a CVMLogicError."""
    want = (a["channels"], s[0][1] // a["groups"], *a["kernel_size"])
    if tuple(s[1]) == want:
        return None
    oc, fc, fh, fw = s[1]
    (sh, sw), (ph, pw), (dh, dw) = a["strides"], a["padding"], a["dilation"]
    kh, kw = a["kernel_size"]
    _, _, h, w = s[0]

    def out(size: int, pad: int, k: int, d: int, stride: int) -> int:
        return _cdiv(size + 2 * pad - ((k - 1) * d + 1), stride) + 1

    runs = (oc == a["channels"] and fc >= want[1] and fh >= 1 and fw >= 1
            and out(h, ph, fh, dh, sh) == out(h, ph, kh, dh, sh) and out(w, pw, fw, dw, sw) == out(w, pw, kw, dw, sw))
    _deviation(runs, f"expected weight shape {list(want)} (channels, in_channels / groups, kernel_size), or "
               f"{a['channels']} rows of at least {want[1]} channels whose kernel size gives the output's, got "
               f"{list(s[1])}")
    return fh, fw


@_prec_rule("conv2d")
def _conv2d_prec(a: Attrs, s: list[Shape], p: list[int], o: list[Shape]) -> tuple[int, ...]:
    _in_prec(p)  # src/top/nn/convolution.cc:152
    _check(p[0] <= 8, f"expected data precision <= 8, got {p[0]}")  # src/top/nn/convolution.cc:153
    _check(p[1] <= 8, f"expected weight precision <= 8, got {p[1]}")  # src/top/nn/convolution.cc:156
    _ndim("weight", s[1], 4)  # src/top/nn/convolution.cc:160
    prec = p[0] + p[1] + bitlen(prod(s[1]) // s[1][0])
    if a["use_bias"]:
        prec = max(prec, p[2]) + 1
    return (prec,)


@_shape_rule("dense", arity=lambda a: 3 if a["use_bias"] else 2)
def _dense_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    data, weight = s[0], s[1]
    _ndim("data", data, 2)  # src/top/nn/nn.cc:55
    _ndim("weight", weight, 2)  # src/top/nn/nn.cc:56
    units = a["units"]
    _assign("weight", weight, (units, data[1]))  # src/top/nn/nn.cc:71 CVM_ASSIGN_INPUT_SHAPE: LOG(FATAL)
    if a["use_bias"]:
        _assign("bias", s[2], (units,))  # src/top/nn/nn.cc:74 CVM_ASSIGN_INPUT_SHAPE: LOG(FATAL)
    return ((data[0], units),)


@_prec_rule("dense")
def _dense_prec(a: Attrs, s: list[Shape], p: list[int], o: list[Shape]) -> tuple[int, ...]:
    _check(p[0] <= 8, f"expected data precision <= 8, got {p[0]}")  # src/top/nn/nn.cc:26
    _check(p[1] <= 8, f"expected weight precision <= 8, got {p[1]}")  # src/top/nn/nn.cc:29
    prec = p[0] + p[1] + bitlen(s[0][1])
    if a["use_bias"]:
        prec = max(prec, p[2]) + 1
    return (prec,)


@_shape_rule("max_pool2d")
def _max_pool2d_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    data = s[0]
    _ndim("data", data, 4)  # src/top/nn/pooling.cc:31
    _check(a["layout"] == "NCHW", f"expected 'layout' NCHW, got {a['layout']}")  # src/top/nn/pooling.cc:36
    pad, pool, st = a["padding"], a["pool_size"], a["strides"]
    # src/top/nn/pooling.cc:48 VERIFY padding of 1 or 2 values
    _check(len(pad) in (1, 2), f"Pool2D only supported 1-D or 2-D padding vs. {list(pad)}")
    _range("padding", pad[0])  # src/top/nn/pooling.cc:51
    ph = pw = pad[0]
    if len(pad) == 2:
        pw = pad[1]
        _range("padding", pad[1])  # src/top/nn/pooling.cc:59
    _check(len(pool) == 2, f"expected 'pool_size' of 2 values, got {list(pool)}")  # src/top/nn/pooling.cc:65
    _check(len(st) == 2, f"expected 'strides' of 2 values, got {list(st)}")  # src/top/nn/pooling.cc:66
    _range("strides", st[0], 1)  # src/top/nn/pooling.cc:67
    _range("strides", st[1], 1)  # src/top/nn/pooling.cc:68
    n, c, h, w = data
    _range("pool_size", pool[0], 0, h + 2 * ph)  # src/top/nn/pooling.cc:70
    _range("pool_size", pool[1], 0, w + 2 * pw)  # src/top/nn/pooling.cc:72
    smaller = f"expected 'padding' {[ph, pw]} smaller than 'pool_size' {list(pool)}"
    _check(ph < pool[0], smaller)  # src/top/nn/pooling.cc:80
    _check(pw < pool[1], smaller)  # src/top/nn/pooling.cc:81
    if not a["ceil_mode"]:
        oh = _cdiv(h + 2 * ph - pool[0], st[0]) + 1
        ow = _cdiv(w + 2 * pw - pool[1], st[1]) + 1
    else:
        oh = _cdiv(h + 2 * ph - pool[0] + st[0] - 1, st[0]) + 1
        # src/top/nn/pooling.cc:93 VERIFY the last window starts inside the data (int32 arithmetic)
        _check(_wrap((oh - 1) * st[0] - ph, 32) < h, "in ceil mode the last pooling window starts inside the padding")
        ow = _cdiv(w + 2 * pw - pool[1] + st[1] - 1, st[1]) + 1
        _check(_wrap((ow - 1) * st[1] - pw, 32) < w, "in ceil mode the last pooling window starts inside the padding")
    return ((n, c, oh, ow),)


@_shape_rule("upsampling")
def _upsampling_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    _ndim("data", s[0], 4)  # src/top/nn/upsampling.cc:28
    # src/top/nn/upsampling.cc:30 VERIFY_EQ method
    _check(a["method"] == "NEAREST_NEIGHBOR", f"expected 'method' NEAREST_NEIGHBOR, got {a['method']}")
    _range("scale", a["scale"], 1)  # src/top/nn/upsampling.cc:32
    _check(a["layout"] == "NCHW", f"expected 'layout' NCHW, got {a['layout']}")  # :33
    n, c, h, w = s[0]
    return ((n, c, h * a["scale"], w * a["scale"]),)


@_shape_rule("get_valid_counts")
def _get_valid_counts_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    _ndim("data", s[0], 3)  # src/top/nn/nms.cc:133
    b, _, k = s[0]
    _check(2 <= k < 32, f"expected data.shape[2] in [2, 31], got {k}")  # src/top/nn/nms.cc:134
    return ((b,), s[0])


@_prec_rule("get_valid_counts")
def _get_valid_counts_prec(a: Attrs, s: list[Shape], p: list[int], o: list[Shape]) -> tuple[int, ...]:
    _in_prec(p)  # src/top/nn/nms.cc:166
    return (next_precision(prod(s[0]) // s[0][0]), p[0])  # src/top/nn/nms.cc:168


@_shape_rule("non_max_suppression", arity=2)
def _nms_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    data, valid = s
    _ndim("data", data, 3)  # src/top/nn/nms.cc:40
    _ndim("valid_count", valid, 1)  # src/top/nn/nms.cc:41
    _check(data[2] == 6, f"expected data.shape[2] == 6, got {data[2]}")  # :42
    _check(data[0] == valid[0], f"expected valid_count shape {[data[0]]}, got {list(valid)}")  # src/top/nn/nms.cc:44
    for name, want in (("coord_start", 2), ("score_index", 1), ("id_index", 0)):  # src/top/nn/nms.cc:47-49
        _check(a[name] == want, f"expected {name!r} == {want}, got {a[name]}")
    _check(a["iou_threshold"] > 0, f"expected 'iou_threshold' > 0, got {a['iou_threshold']}")  # src/top/nn/nms.cc:50
    _check(not a["return_indices"], "expected 'return_indices' false, got true")  # src/top/nn/nms.cc:52
    _check(a["invalid_to_bottom"], "expected 'invalid_to_bottom' true, got false")  # src/top/nn/nms.cc:55
    return (data,)  # src/top/nn/nms.cc:64 (after out_attrs->clear(): see the note above DEVIATIONS)


# --- transforms ---------------------------------------------------------------------------------------------


@_shape_rule("repeat")
def _repeat_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    n = len(s[0])
    _check(a["repeats"] > 0, f"expected 'repeats' > 0, got {a['repeats']}")  # src/top/tensor/transform.cc:33
    _range("axis", a["axis"], -n, n - 1)  # src/top/tensor/transform.cc:36
    ax = a["axis"] + n if a["axis"] < 0 else a["axis"]
    out = list(s[0])
    out[ax] *= a["repeats"]
    return (tuple(out),)


@_shape_rule("tile")
def _tile_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    reps = a["reps"]
    _check(len(reps) > 0, "repetition array is not defined")  # src/top/tensor/transform.cc:83
    for r in reps:
        _range("reps", r, 1)  # src/top/tensor/transform.cc:86
    n = max(len(s[0]), len(reps))
    x = (1,) * (n - len(s[0])) + s[0]
    r = (1,) * (n - len(reps)) + tuple(reps)
    return (tuple(i * j for i, j in zip(x, r)),)


@_shape_rule("flatten")
def _flatten_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    return ((s[0][0], prod(s[0][1:])),)  # src/top/tensor/transform.cc:179


@_shape_rule("concatenate", arity=-1)
def _concatenate_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    _check(len(s) >= 1, "expected at least one input")  # src/top/tensor/transform.cc:225
    n = len(s[0])
    _range("axis", a["axis"], -n, n - 1)  # src/top/tensor/transform.cc:227
    ax: int = a["axis"] if a["axis"] >= 0 else n + a["axis"]
    for t in s:
        _check(len(t) == n, f"expected inputs of rank {n}, got {list(t)}")  # src/top/tensor/transform.cc:230
    for t in s[1:]:
        # src/top/tensor/transform.cc:240 VERIFY_EQ(shape_assign(...), true)
        _check(all(t[i] == s[0][i] for i in range(n) if i != ax),
               f"expected inputs equal except on axis {ax}, got {list(s[0])} and {list(t)}")
    out = list(s[0])
    out[ax] = sum(t[ax] for t in s)
    return (tuple(out),)


@_shape_rule("expand_dims")
def _expand_dims_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    n = len(s[0])
    _range("axis", a["axis"], -n - 1, n)  # src/top/tensor/transform.cc:362
    _range("num_newaxis", a["num_newaxis"])  # src/top/tensor/transform.cc:363
    ax = a["axis"] + n + 1 if a["axis"] < 0 else a["axis"]
    return (s[0][:ax] + (1,) * a["num_newaxis"] + s[0][ax:],)


def reshape_shape(src: Shape, codes: Sequence[int]) -> Shape:
    """ReshapeInferShape (src/top/tensor/transform.cc:402): MXNet's codes, 0 copy, -1 infer, -2 copy the
    rest, -3 merge two, -4 split one into two (given as int32 values); codes below -4 are ignored."""
    codes = list(codes)
    _check(len(codes) > 0, "expected a non-empty 'shape'")  # src/top/tensor/transform.cc:406
    out: list[int] = []
    i = 0  # src_idx
    infer = -1
    k = 0
    while k < len(codes):
        c = codes[k]
        if c > 0:
            out.append(c)
            i += 1
        elif c == 0:
            _check(i < len(src), f"reshape code 0 at position {k} has no input dim to copy")  # :425
            out.append(src[i])
            i += 1
        elif c == -1:
            _check(infer < 0, "One and only one dim can be inferred")  # src/top/tensor/transform.cc:429
            infer = k  # :431 infer_idx = i: the index among the codes, not among the output dims
            out.append(1)
            i += 1
        elif c == -2:
            out.extend(src[i:])
            i = max(i, len(src))
        elif c == -3:
            _check(i + 1 < len(src), f"reshape code -3 at position {k} needs two input dims")  # :441
            out.append(src[i] * src[i + 1])
            i += 2
        elif c == -4:
            _check(k + 2 < len(codes), f"reshape code -4 at position {k} needs two values")  # :448
            _check(i < len(src), f"reshape code -4 at position {k} has no input dim to split")  # :449
            d0 = src[i]
            i += 1
            d1, d2 = _wrap(codes[k + 1], 32), _wrap(codes[k + 2], 32)
            k += 2
            _check(d1 != -1 or d2 != -1, "Split dims cannot both be -1.")  # src/top/tensor/transform.cc:453
            if d1 == -1:
                _deviation(d2 != 0, "reshape code -4 splits by 0")  # DEVIATIONS: src/top/tensor/transform.cc:454 SIGFPE
                d1 = _wrap(_cdiv(d0, d2), 32)
            if d2 == -1:
                _deviation(d1 != 0, "reshape code -4 splits by 0")  # DEVIATIONS: src/top/tensor/transform.cc:455 SIGFPE
                d2 = _wrap(_cdiv(d0, d1), 32)
            # src/top/tensor/transform.cc:456 VERIFY_EQ(d1 * d2, d0) in int32
            _check(_wrap(d1 * d2, 32) == _wrap(d0, 32), f"Split dims {d1}, {d2} do not divide original dim {d0}")
            out.extend((d1, d2))
        k += 1
    total = _size(src)
    if infer >= 0:
        # src/top/tensor/transform.cc:469-471 writes oshape[infer_idx], an index among the codes: past the output
        # dims when the codes before the -1 emit fewer dims than they are (a code below -4, a -2 with nothing
        # left to copy, a -4 triple), a write past the vector (DEVIATIONS)
        _deviation(infer < len(out), f"'shape' {codes} gives {len(out)} dims: the runtime writes the -1's inferred "
                   f"dim at index {infer}, past them")
        if total > 0:  # :464 dshape.Size() > 0
            new_size = 1
            for x in out:  # :465-467 int new_size, int x: the placeholder 1 is where the -1 put it
                new_size = _wrap(new_size * _wrap(x, 32), 32)
            _deviation(new_size != 0, f"cannot infer -1 in 'shape' {codes}: the other dims multiply to 0")  # :469
            out[infer] = total // (new_size & ((1 << 64) - 1))
        else:
            out[infer] = 0  # :471
    # src/top/tensor/transform.cc:475 VERIFY_EQ(out.Size(), data.Size())
    _check(_size(out) == total, f"'shape' {codes} gives {out}: {_size(out)} elements, expected {total}")
    return tuple(out)


@_shape_rule("reshape")
def _reshape_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    return (reshape_shape(s[0], a["shape"]),)


@_shape_rule("squeeze")
def _squeeze_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    n = len(s[0])
    if a["axis"]:
        axes: set[int] = set()
        for x in a["axis"]:
            _range("axis", x, -n, n - 1)  # src/top/tensor/transform.cc:573
            axes.add(x + n if x < 0 else x)
        for i in range(n):
            # src/top/tensor/transform.cc:586 VERIFY_EQ(shp[i], 1)
            _check(i not in axes or s[0][i] == 1, f"expected dim {i} of size 1 to squeeze, got {s[0][i]}")
    else:
        axes = {i for i, d in enumerate(s[0]) if d == 1}
    out = tuple(d for i, d in enumerate(s[0]) if i not in axes)
    return (out or (1,),)


def transpose_axes(axes: Sequence[int], ndim: int) -> tuple[int, ...]:
    """The full permutation a transpose applies (the reverse when `axes` is empty)."""
    if not axes:
        return tuple(range(ndim - 1, -1, -1))
    _check(len(axes) == ndim, f"expected 'axes' of length {ndim}, got {len(axes)}")  # src/top/tensor/transform.cc:650
    perm = list(axes)
    for i in range(ndim):
        _range("axes", perm[i], -ndim, ndim - 1)  # src/top/tensor/transform.cc:654
        if perm[i] < 0:
            perm[i] += ndim
        for j in range(ndim):
            # src/top/tensor/transform.cc:661 VERIFY(new_axis != axes[j]): later ones not yet normalised
            _check(i == j or perm[i] != perm[j], f"expected 'axes' to be a permutation, got {list(axes)}")
    return tuple(perm)


@_shape_rule("transpose")
def _transpose_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    perm = transpose_axes(a["axes"], len(s[0]))
    return (tuple(s[0][i] for i in perm),)


def strided_slice_bounds(shape: Shape, begin: Sequence[int], end: Sequence[int],
                         stride: Sequence[int]) -> list[tuple[int, int, int]]:
    """Per axis (begin, stride, length) of a strided slice (src/top/tensor/transform.cc:754): a missing begin
    is 0, a missing end the dim, a missing stride 1, whatever the stride's sign."""
    out: list[tuple[int, int, int]] = []
    for i, dim in enumerate(shape):
        st = stride[i] if i < len(stride) else 1
        _check(st != 0, f"expected 'stride' values != 0, got 0 at axis {i}")  # src/top/tensor/transform.cc:781
        b = begin[i] if i < len(begin) else 0
        e = end[i] if i < len(end) else dim
        lo, hi = (-1, dim - 1) if st < 0 else (0, dim)
        b = min(max(b + dim if b < 0 else b, lo), hi)
        e = min(max(e + dim if e < 0 else e, lo), hi)
        n = (abs(e - b) + abs(st) - 1) // abs(st)
        # src/top/tensor/transform.cc:792 VERIFY(stride < 0 ? end < begin : begin < end)
        _check(e < b if st < 0 else b < e,
               f"expected a non-empty range on axis {i}, got begin {b}, end {e}, stride {st}")
        out.append((b, st, n))
    return out


@_shape_rule("strided_slice")
def _strided_slice_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    dims = strided_slice_bounds(s[0], a["begin"], a["end"], a["stride"])
    return (tuple(d[2] for d in dims),)


def _strided_slice_begin(a: Attrs, s: list[Shape]) -> None:
    """DEVIATIONS row 2: at most ndim 'begin' values."""
    n = len(s[0])
    _deviation(len(a["begin"]) <= n, f"expected at most {n} values in 'begin', got {len(a['begin'])}")


@_shape_rule("take", arity=2)
def _take_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    data, idx = s
    if a["axis"] is None:
        return (idx,)
    n = len(data)
    _range("axis", a["axis"], -n, n - 1)  # src/top/tensor/transform.cc:857
    ax = a["axis"] + n if a["axis"] < 0 else a["axis"]
    return (data[:ax] + idx + data[ax + 1:],)


@_shape_rule("cvm_lut", arity=2)
def _cvm_lut_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    # src/top/tensor/transform.cc:953 VERIFY_EQ(lut.Size(), in_dim) (size_t: a negative in_dim never matches)
    size = prod(s[1])
    _check(a["in_dim"] == size, f"expected 'in_dim' equal to the table size {size}, got {a['in_dim']}")
    return (s[0],)


@_prec_rule("cvm_lut")
def _cvm_lut_prec(a: Attrs, s: list[Shape], p: list[int], o: list[Shape]) -> tuple[int, ...]:
    _in_prec(p)  # src/top/tensor/transform.cc:993
    return (p[1],)


@_shape_rule("slice_like", arity=2)
def _slice_like_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    data, like = s
    n, m = len(data), len(like)
    # src/top/tensor/transform.cc:1025 VERIFY(same rank || axis given)
    _check(n == m or len(a["axis"]) > 0, f"expected shape_like of rank {n} when 'axis' is empty, got {m}")
    out = list(data)
    axes = a["axis"] if a["axis"] else range(n)
    for x in axes:
        if a["axis"]:
            x = x + n if x < 0 else x
            _range("axis", x, 0, min(n, m) - 1)  # src/top/tensor/transform.cc:1043
        out[x] = like[x]
        _check(like[x] <= data[x], f"expected shape_like dim {x} <= {data[x]}, got {like[x]}")  # :1046
    return (tuple(out),)


@_shape_rule("where", arity=3)
def _where_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    cond, x, y = s
    # src/top/tensor/transform.cc:1084 VERIFY_EQ(x, y)
    _check(x == y, f"expected x and y of the same shape, got {list(x)} and {list(y)}")
    if cond != x:
        want = f"expected condition of shape {list(x)} or {[x[0]]}, got {list(cond)}"
        _check(len(cond) == 1, want)  # src/top/tensor/transform.cc:1087
        _check(cond[0] == x[0], want)  # src/top/tensor/transform.cc:1090
    return (x,)


def _where_rows(s: list[Shape]) -> None:
    """DEVIATIONS row: a condition of one dim over an x of several (src/runtime/formal/ops/transform.cc:364 copies
    each row with memcpy(..., size), `size` the row's elements taken as its bytes: a quarter of each row, the rest
    left as the output buffer held it)."""
    cond, x = s[0], s[1]
    _deviation(cond == x, f"a condition of shape {list(cond)} selects whole rows of x {list(x)}: the runtime copies "
               "a quarter of each row's bytes and leaves the rest unwritten")


# --- reductions ---------------------------------------------------------------------------------------------


def reduce_axes(shape: Sequence[int], axis: Sequence[int], exclude: bool) -> tuple[int, ...]:
    """GetReduceAxes (src/top/tensor/reduce.cc:21): the sorted axes a sum or max reduces."""
    n = len(shape)
    if not axis:
        return tuple(range(n))
    given: list[int] = []
    for x in axis:
        x = x + n if x < 0 else x
        _range("axis", x, 0, n - 1)  # src/top/tensor/reduce.cc:33
        given.append(x)
    given.sort()
    for i in range(len(given) - 1):
        # src/top/tensor/reduce.cc:37 VERIFY(distinct)
        _check(given[i] != given[i + 1], f"expected distinct 'axis' values, got {list(axis)}")
    if not exclude:
        return tuple(given)
    return tuple(i for i in range(n) if i not in given)


def _reduce_out(a: Attrs, shape: Shape) -> Shape:
    axes = reduce_axes(shape, a["axis"], a["exclude"])
    if a["keepdims"]:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes) or (1,)


@_shape_rule("sum", "max")
def _reduce_shape(a: Attrs, s: list[Shape]) -> tuple[Shape, ...]:
    return (_reduce_out(a, s[0]),)  # src/top/tensor/reduce.cc:83 ReduceShape


@_prec_rule("sum")
def _sum_prec(a: Attrs, s: list[Shape], p: list[int], o: list[Shape]) -> tuple[int, ...]:
    _in_prec(p)  # src/top/tensor/reduce.cc:148
    return (p[0] + bitlen(prod(s[0]) // prod(o[0])),)  # src/top/tensor/reduce.cc:151 (the file's output shape)


# --- the phases -----------------------------------------------------------------------------------------------


def _known(op: str) -> None:
    if op not in _SHAPE:
        raise CVMRuntimeError(f"operator {op!r} is not registered")


def infer_shape(op: str, attrs: Attrs, in_shapes: Sequence[Sequence[int]]) -> tuple[Shape, ...]:
    """FInferShape of one node from its inputs' (file) shapes: the output shapes, or the runtime's error.

    The caller compares them with the file's output shapes (src/runtime/infer_attr.cc:205 VERIFY_EQ, a logic error)."""
    _known(op)
    shapes = [tuple(x) for x in in_shapes]
    check_num_inputs(op, attrs, len(shapes))
    return _SHAPE[op](attrs, shapes)


def check_type(op: str, attrs: Attrs) -> None:
    """FInferType (src/runtime/infer_attr.cc:250): every tensor is int32, so only conv2d's `out_dtype` can
    fail, when it names another type (src/top/nn/convolution.cc:136, then src/runtime/infer_attr.cc:298 VERIFY_EQ)."""
    if op == "conv2d":
        _check(attrs["out_dtype"] in ("same", "int32"), f"Check type failed: conv2d's out_dtype "
               f"{attrs['out_dtype']!r}, expected int32")


def check_deviations(op: str, attrs: Attrs, in_shapes: Sequence[Sequence[int]]) -> None:
    """The DEVIATIONS that are not part of an inference step (a logic error each). The runtime goes on where
    these fire, so a loader calls this as late as it can: after every node's precision."""
    shapes = [tuple(x) for x in in_shapes]
    if op == "conv2d":
        conv2d_weight_geometry(attrs, shapes)
    elif op == "strided_slice":
        _strided_slice_begin(attrs, shapes)
    elif op == "where":
        _where_rows(shapes)


def infer_precision(op: str, attrs: Attrs, in_shapes: Sequence[Sequence[int]], in_precs: Sequence[int],
                    out_shapes: Sequence[Sequence[int]] | None = None) -> tuple[int, ...]:
    """FInferPrecision of one node (inputs' shapes and precisions, the file's output shapes; inferred from
    the inputs when not given), then src/runtime/infer_attr.cc:79 VERIFY that each output precision is in [1, 32]."""
    _known(op)
    shapes = [tuple(x) for x in in_shapes]
    outs = [tuple(x) for x in out_shapes] if out_shapes is not None else list(_SHAPE[op](attrs, shapes))
    precs = _PREC[op](attrs, shapes, list(in_precs), outs)
    for p in precs:
        want = "at most 32" if p > 32 else "in [1, 32]"
        _check(0 < p <= 32, f"output precision would be {p}, expected {want}")  # src/runtime/infer_attr.cc:79
    return precs


def base_ops(op: str, attrs: Attrs, in_shapes: Sequence[Sequence[int]],
             out_shapes: Sequence[Sequence[int]]) -> int:
    """CvmRuntime::GetOps (src/runtime/infer_attr.cc:103): gas ops per element of output 0, at most 2^30."""
    if op == "dense":
        ops = in_shapes[1][1] * 3 + (1 if attrs["use_bias"] else 0)
    elif op == "non_max_suppression":
        ops = in_shapes[0][0] * 20
    elif op == "conv2d":
        w = in_shapes[1]
        ops = prod(w) // w[0] * 3 + (1 if attrs["use_bias"] else 0)
    elif op == "max_pool2d":
        ops = prod(attrs["pool_size"])
    elif op == "sum":
        ops = prod(in_shapes[0]) // prod(out_shapes[0])
    else:
        ops = 1  # src/runtime/infer_attr.cc:128 spells get_valid_count, so get_valid_counts takes output 0 with 1
    _check(ops <= MAX_BASE_OPS, f"single ops foreach output should not greater than 1G, but {ops}")  # :133
    return ops


def infer(op: str, attrs: Attrs, shapes: Sequence[Sequence[int]], precisions: Sequence[int]) -> Signature:
    """All the phases of one operator node in turn (for callers without a file: the builder, the verifiers,
    the passes): shapes (each output a valid shape), type, precisions, the deviations, gas."""
    out = infer_shape(op, attrs, shapes)
    for i, shp in enumerate(out):
        check_shape(shp, f"output {i}")
    check_type(op, attrs)
    precs = infer_precision(op, attrs, shapes, precisions, out)
    check_deviations(op, attrs, shapes)
    if op == "conv2d":  # a file's other weight geometries the loader makes plain convolutions; the IR has none
        want = [attrs["channels"], shapes[0][1] // attrs["groups"], *attrs["kernel_size"]]
        _check(conv2d_weight_geometry(attrs, shapes) is None, f"expected weight shape {want}, got {list(shapes[1])}")
    return Signature(out, precs, base_ops(op, attrs, shapes, out))


def node_gas(sig: Signature) -> int:
    """Gas of one operator node: base_ops x size(output 0) + 5 x the size of all outputs."""
    return sig.base_ops * prod(sig.shapes[0]) + 5 * sum(prod(x) for x in sig.shapes)


def variable_gas(shape: Shape) -> int:
    """Gas of one variable (input or param) node."""
    return 5 * prod(shape)
