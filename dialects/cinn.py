"""The `cinn` dialect: the primitives of Paddle CINN's CinnBuilder over static builtin tensors.

Semantics follow the seed (`shared/seeds/002_ce203d434acaa3fc.txt`) and the decisions of `shared/spec/cinn.md`;
the executable definition is `cvmc.runtime.references.cinn`.

Element types: f32, f64, i8, i16, i32, i64 (signed, two's complement), ui8 (the builtin unsigned type: it is what
makes Div, Mod, Compare, Max, Min and RightShift unsigned) and i1 (bool). Shapes are static.

Every op computes its result types with one static `infer` method, from its operand types and properties: the
verifier checks the result types against it and the op's `__init__` (and so the builder) uses it to create the
results. `infer` raises `VerifyException` for every rule that ties fields together, with messages of the form
`expected 'axis' in [0, 2), got 3`. Shape functions shared with the reference and the lowering
(`broadcast_shapes`, `reduce_axes`, `slice_bounds`, `conv_geometry`, ...) live at the top of this file.

Dialect choices the spec leaves open: Slice rejects an empty range; Transpose takes a full permutation;
BnMeanVariance and BnGradBiasScale take rank-4 NCHW inputs; Conv and the Bn ops are float only; Conv's filter is
OIHW in both data formats; the `paddings` of Conv are ignored unless `padding_algorithm` is EXPLICIT.

Where the seed is silent and CINN (Dec 2021) accepts more than a strict reading, cvmc decides (README, "CINN
primitives"): a negative `axis` of Concat and Reverse and a negative `dim` of Reduce count from the end (value +
rank, as CINN); a 0 in Reshape's `shape` copies the input's dim at that index (as CINN and paddle); FloorDiv and
FloorMod on floats are one pair, Python's and numpy's divmod (an exact remainder with the sign of y, and the
quotient (x - r) / y rounded to an integer), so y * floor_div(x, y) + floor_mod(x, y) == x up to the rounding of
that last sum; Conv SAME with dilation > 1 pads for the dilated filter, so the output is ceil(input / stride)
as SAME promises (paddle drops the dilation there, which would shrink the output).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from xdsl.dialects.builtin import (
    I64,
    BoolAttr,
    DenseArrayBase,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    Signedness,
    TensorType,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from cvmc.dialects.narrow import is_tensor

# ---------------------------------------------------------------------------------------------------------------
# Element types
# ---------------------------------------------------------------------------------------------------------------

f32 = Float32Type()
f64 = Float64Type()
ui8 = IntegerType(8, Signedness.UNSIGNED)


class ElementKind(NamedTuple):
    """A named set of element types, as an op's type rule."""

    name: str
    types: tuple[Attribute, ...]


FLOAT = ElementKind("float", (f32, f64))
INTEGER = ElementKind("integer", (i8, i16, i32, i64, ui8))
NUMERIC = ElementKind("numeric", FLOAT.types + INTEGER.types)
BITS = ElementKind("integer or bool", INTEGER.types + (i1,))
ANY = ElementKind("any", NUMERIC.types + (i1,))


def is_float(t: Attribute) -> bool:
    return t in FLOAT.types


def is_unsigned(t: Attribute) -> bool:
    """ui8 and i1 compare, divide and shift as unsigned."""
    return t in (ui8, i1)


def bit_width(t: Attribute) -> int:
    if isinstance(t, IntegerType):
        return t.bitwidth
    return 32 if t == f32 else 64


Shape = tuple[int, ...]


def shape_of(v: SSAValue) -> Shape:
    """The static shape of a tensor value (or of the memref a lowering holds it in)."""
    t = v.type
    assert isinstance(t, TensorType | MemRefType), t
    return tuple(t.get_shape())


def _tensor(field: str, t: Attribute, kind: ElementKind = ANY) -> TensorType[Attribute]:
    """`t` as a static tensor whose element type is in `kind`."""
    if not is_tensor(t):
        raise VerifyException(f"expected '{field}' to be a tensor, got {t}")
    if any(d < 0 for d in t.get_shape()):
        raise VerifyException(f"expected '{field}' to have a static shape, got {t}")
    if t.element_type not in kind.types:
        names = ", ".join(str(e) for e in kind.types)
        raise VerifyException(
            f"expected '{field}' element type to be {kind.name} ({names}), got {t.element_type}"
        )
    return t


def _same_element(fields: Sequence[str], types: Sequence[TensorType]) -> Attribute:
    first = types[0].element_type
    for field, t in zip(fields[1:], types[1:]):
        if t.element_type != first:
            raise VerifyException(
                f"expected '{field}' element type to equal '{fields[0]}' element type {first}, "
                f"got {t.element_type}"
            )
    return first


def _axis(field: str, value: int, rank: int) -> int:
    if not 0 <= value < rank:
        raise VerifyException(f"expected '{field}' in [0, {rank}), got {value}")
    return value


def normalize_axis(field: str, value: int, rank: int) -> int:
    """An axis in [-rank, rank), a negative one counting from the end (value + rank), as CINN normalises."""
    if not -rank <= value < rank:
        raise VerifyException(f"expected '{field}' in [-{rank}, {rank}), got {value}")
    return value + rank if value < 0 else value


def _unique_axes(field: str, values: Sequence[int], rank: int) -> tuple[int, ...]:
    for v in values:
        _axis(field, v, rank)
    if len(set(values)) != len(values):
        raise VerifyException(f"expected '{field}' without repeated axes, got {list(values)}")
    return tuple(values)


def normalize_axes(field: str, values: Sequence[int], rank: int) -> tuple[int, ...]:
    """Axes in [-rank, rank), each normalised by `normalize_axis`; no axis twice after normalisation."""
    axes = tuple(normalize_axis(field, v, rank) for v in values)
    if len(set(axes)) != len(axes):
        normalised = f" -> {list(axes)}" if tuple(values) != axes else ""
        raise VerifyException(f"expected '{field}' without repeated axes, got {list(values)}{normalised}")
    return axes


def _check_results(op: IRDLOperation, expected: Sequence[TensorType]) -> None:
    for i, (result, want) in enumerate(zip(op.results, expected)):
        if result.type != want:
            which = "result type" if len(expected) == 1 else f"result {i} type"
            raise VerifyException(f"expected {which} {want}, got {result.type}")


def _ints(attr: DenseArrayBase[IntegerType]) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.iter_values())


def _array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


# ---------------------------------------------------------------------------------------------------------------
# Shape functions: the single home of every shape rule (verifier, builder, reference and lowering use them)
# ---------------------------------------------------------------------------------------------------------------


def broadcast_shapes(*shapes: Shape) -> Shape:
    """numpy's right-aligned broadcasting: dims are equal or one of them is 1."""
    rank = max(len(s) for s in shapes)
    out: list[int] = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0}
        dims.discard(1)
        if len(dims) > 1:
            listed = " and ".join(str(list(s)) for s in shapes)
            raise VerifyException(f"expected broadcastable operand shapes, got {listed}")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def dot_shape(lhs: Shape, rhs: Shape) -> Shape:
    """1-D . 1-D -> scalar, 2-D . 2-D -> matmul, 2-D . 1-D -> matvec."""
    if (len(lhs), len(rhs)) not in ((1, 1), (2, 2), (2, 1)):
        raise VerifyException(
            f"expected operand ranks (1, 1), (2, 2) or (2, 1), got ({len(lhs)}, {len(rhs)})"
        )
    if lhs[-1] != rhs[0]:
        raise VerifyException(
            f"expected 'rhs' dim 0 to equal 'lhs' dim {len(lhs) - 1} ({lhs[-1]}), got {rhs[0]}"
        )
    return lhs[:-1] + rhs[1:]


def check_broadcast_to(shape: Shape, out_shape: Shape, axes: Sequence[int]) -> None:
    """Input axis i maps to output axis axes[i]; its dim is 1 or the output dim."""
    if len(axes) != len(shape):
        raise VerifyException(
            f"expected 'broadcast_axes' to have one entry per input axis ({len(shape)}), got {len(axes)}"
        )
    if any(d < 1 for d in out_shape):
        raise VerifyException(f"expected 'out_shape' dims >= 1, got {list(out_shape)}")
    _unique_axes("broadcast_axes", axes, len(out_shape))
    for i, (dim, axis) in enumerate(zip(shape, axes)):
        if dim not in (1, out_shape[axis]):
            raise VerifyException(
                f"expected input dim {i} to be 1 or {out_shape[axis]} (output dim {axis}), got {dim}"
            )


def concat_shape(shapes: Sequence[Shape], axis: int) -> Shape:
    """The concatenation's shape; `axis` may be negative (normalised by `normalize_axis`)."""
    first = shapes[0]
    axis = normalize_axis("axis", axis, len(first))
    for i, s in enumerate(shapes[1:], 1):
        if len(s) != len(first) or any(a != b for k, (a, b) in enumerate(zip(s, first)) if k != axis):
            raise VerifyException(
                f"expected input {i} shape to equal input 0 shape {list(first)} except on axis {axis}, "
                f"got {list(s)}"
            )
    return first[:axis] + (sum(s[axis] for s in shapes),) + first[axis + 1 :]


def reduce_axes(shape: Shape, dim: Sequence[int]) -> tuple[int, ...]:
    """The reduced axes, normalised (a negative one + rank) and sorted; an empty `dim` reduces every axis."""
    if not dim:
        return tuple(range(len(shape)))
    return tuple(sorted(normalize_axes("dim", dim, len(shape))))


def reduce_shape(shape: Shape, dim: Sequence[int], keep_dim: bool) -> Shape:
    axes = reduce_axes(shape, dim)
    if keep_dim:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def reshape_shape(shape: Shape, new_shape: Sequence[int]) -> Shape:
    """The target shape: a 0 copies the input's dim at the same index (as CINN and paddle), then the (at most
    one) -1 is resolved; the element count is kept."""
    if sum(1 for d in new_shape if d == -1) > 1:
        raise VerifyException(f"expected at most one -1 in 'shape', got {list(new_shape)}")
    if any(d < -1 for d in new_shape):
        raise VerifyException(f"expected 'shape' dims >= 0 or -1, got {list(new_shape)}")
    for i, d in enumerate(new_shape):
        if d == 0 and i >= len(shape):
            raise VerifyException(
                f"expected a 0 in 'shape' only at an index below the input's rank {len(shape)}, got index {i}"
            )
    given = list(new_shape)
    new_shape = [shape[i] if d == 0 else d for i, d in enumerate(new_shape)]
    copied = f" -> {new_shape}" if 0 in given else ""
    count = math.prod(shape)
    known = math.prod(d for d in new_shape if d != -1)
    if -1 in new_shape:
        if count % known:
            raise VerifyException(f"expected 'shape' {given}{copied} to divide {count} elements")
        return tuple(count // known if d == -1 else d for d in new_shape)
    if known != count:
        raise VerifyException(f"expected 'shape' with {count} elements, got {given}{copied} ({known})")
    return tuple(new_shape)


def slice_bounds(
    shape: Shape, axes: Sequence[int], starts: Sequence[int], ends: Sequence[int]
) -> list[tuple[int, int]]:
    """[start, end) on every axis: a negative index counts from the end, then clamps to [0, dim]."""
    if not len(axes) == len(starts) == len(ends):
        raise VerifyException(
            f"expected 'axes', 'starts' and 'ends' of one length, got {len(axes)}, {len(starts)}, {len(ends)}"
        )
    _unique_axes("axes", axes, len(shape))
    bounds = [(0, d) for d in shape]
    for axis, start, end in zip(axes, starts, ends):
        dim = shape[axis]
        lo = min(max(start + dim if start < 0 else start, 0), dim)
        hi = min(max(end + dim if end < 0 else end, 0), dim)
        if hi <= lo:
            raise VerifyException(
                f"expected a non-empty range on axis {axis} (dim {dim}), got [{start}, {end}) -> [{lo}, {hi})"
            )
        bounds[axis] = (lo, hi)
    return bounds


def transpose_shape(shape: Shape, perm: Sequence[int]) -> Shape:
    if sorted(perm) != list(range(len(shape))):
        raise VerifyException(f"expected 'axis' to be a permutation of [0, {len(shape)}), got {list(perm)}")
    return tuple(shape[p] for p in perm)


class ConvType(StrEnum):
    FORWARD = "forward"
    BACKWARD_DATA = "backward_data"
    BACKWARD_FILTER = "backward_filter"


class DataFormat(StrEnum):
    NCHW = "NCHW"
    NHWC = "NHWC"


class PaddingAlgorithm(StrEnum):
    EXPLICIT = "EXPLICIT"
    SAME = "SAME"
    VALID = "VALID"


@dataclass(frozen=True)
class ConvGeometry:
    """Every size of one 2-D convolution y = conv(x, w), whatever the conv_type computes.

    x is [n, c, h, w] (NCHW) or [n, h, w, c] (NHWC), the filter [o, c / groups, kh, kw] and y [n, o, oh, ow]
    or [n, oh, ow, o]; y[n, o, i, j] = sum over c in o's group, p, q of
    x[n, c, i * stride_h + p * dilation_h - pad_top, j * stride_w + q * dilation_w - pad_left] * w[o, c', p, q],
    zero outside x.
    """

    data_format: DataFormat
    n: int
    c: int
    h: int
    w: int
    o: int
    kh: int
    kw: int
    oh: int
    ow: int
    groups: int
    stride_h: int
    stride_w: int
    dilation_h: int
    dilation_w: int
    pad_top: int
    pad_left: int

    def _layout(self, n: int, c: int, h: int, w: int) -> Shape:
        return (n, c, h, w) if self.data_format == DataFormat.NCHW else (n, h, w, c)

    @property
    def x_shape(self) -> Shape:
        return self._layout(self.n, self.c, self.h, self.w)

    @property
    def w_shape(self) -> Shape:
        return (self.o, self.c // self.groups, self.kh, self.kw)

    @property
    def y_shape(self) -> Shape:
        return self._layout(self.n, self.o, self.oh, self.ow)


def _pads(algorithm: PaddingAlgorithm, size: int, k: int, stride: int, dilation: int, pad: int) -> tuple[int, int]:
    if algorithm == PaddingAlgorithm.EXPLICIT:
        return pad, pad
    if algorithm == PaddingAlgorithm.VALID:
        return 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def conv_geometry(
    lhs: Shape,
    rhs: Shape,
    strides: Sequence[int],
    paddings: Sequence[int],
    dilations: Sequence[int],
    groups: int,
    conv_type: ConvType,
    data_format: DataFormat,
    padding_algorithm: PaddingAlgorithm,
    output_shape: Sequence[int],
) -> ConvGeometry:
    """Check a Conv's operands and attributes and size it (see ConvOp)."""
    for field, values, low in (("strides", strides, 1), ("paddings", paddings, 0), ("dilations", dilations, 1)):
        if len(values) != 2 or min(values) < low:
            raise VerifyException(f"expected '{field}' to be 2 integers >= {low}, got {list(values)}")
    if max(strides) > 1 and max(dilations) > 1:
        raise VerifyException(
            f"expected 'strides' or 'dilations' to be all 1, got strides {list(strides)} "
            f"and dilations {list(dilations)}"
        )
    if groups < 1:
        raise VerifyException(f"expected 'groups' >= 1, got {groups}")
    for field, shape in (("lhs", lhs), ("rhs", rhs)):
        if len(shape) != 4:
            raise VerifyException(f"expected '{field}' of rank 4, got rank {len(shape)}")
    if conv_type == ConvType.FORWARD:
        x, w, given = lhs, rhs, None
    else:
        if len(output_shape) != 4:
            raise VerifyException(
                f"expected 'output_shape' of 4 dims for conv_type {conv_type.value}, got {list(output_shape)}"
            )
        x, w = (tuple(output_shape), lhs) if conv_type == ConvType.BACKWARD_DATA else (lhs, tuple(output_shape))
        given = rhs

    n, h, wd, c = (x[0], x[2], x[3], x[1]) if data_format == DataFormat.NCHW else x
    o, cg, kh, kw = w
    if c % groups or o % groups or cg * groups != c:
        raise VerifyException(
            f"expected input channels {c} and filter dims [{o}, {cg}] to satisfy c % groups == 0, "
            f"o % groups == 0 and filter dim 1 == c / groups with groups {groups}"
        )
    top, bottom = _pads(padding_algorithm, h, kh, strides[0], dilations[0], paddings[0])
    left, right = _pads(padding_algorithm, wd, kw, strides[1], dilations[1], paddings[1])
    extent_h, extent_w = (kh - 1) * dilations[0] + 1, (kw - 1) * dilations[1] + 1
    if extent_h > h + top + bottom or extent_w > wd + left + right:
        raise VerifyException(
            f"expected the dilated filter [{extent_h}, {extent_w}] to fit the padded input "
            f"[{h + top + bottom}, {wd + left + right}]"
        )
    geometry = ConvGeometry(
        data_format=data_format, n=n, c=c, h=h, w=wd, o=o, kh=kh, kw=kw,
        oh=(h + top + bottom - extent_h) // strides[0] + 1,
        ow=(wd + left + right - extent_w) // strides[1] + 1,
        groups=groups, stride_h=strides[0], stride_w=strides[1],
        dilation_h=dilations[0], dilation_w=dilations[1], pad_top=top, pad_left=left,
    )  # fmt: skip
    if given is not None and given != geometry.y_shape:
        raise VerifyException(
            f"expected 'rhs' shape {list(geometry.y_shape)} (the forward output for 'output_shape'), "
            f"got {list(given)}"
        )
    if conv_type == ConvType.FORWARD and output_shape and tuple(output_shape) != geometry.y_shape:
        raise VerifyException(
            f"expected 'output_shape' empty or {list(geometry.y_shape)}, got {list(output_shape)}"
        )
    return geometry


def conv_result_shape(g: ConvGeometry, conv_type: ConvType) -> Shape:
    if conv_type == ConvType.FORWARD:
        return g.y_shape
    return g.x_shape if conv_type == ConvType.BACKWARD_DATA else g.w_shape


# ---------------------------------------------------------------------------------------------------------------
# Attributes
# ---------------------------------------------------------------------------------------------------------------


class CompareKind(StrEnum):
    EQ = "eq"
    NE = "ne"
    GE = "ge"
    GT = "gt"
    LE = "le"
    LT = "lt"


class ReduceKind(StrEnum):
    SUM = "sum"
    PROD = "prod"
    MAX = "max"
    MIN = "min"


@irdl_attr_definition
class CompareKindAttr(EnumAttribute[CompareKind], SpacedOpaqueSyntaxAttribute):
    """The comparison of `cinn.compare`: eq, ne, ge, gt, le or lt."""

    name = "cinn.compare_kind"


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    """The reduction of `cinn.reduce`: sum, prod, max or min."""

    name = "cinn.reduce_kind"


@irdl_attr_definition
class ConvTypeAttr(EnumAttribute[ConvType], SpacedOpaqueSyntaxAttribute):
    """What `cinn.conv` computes: forward, backward_data or backward_filter."""

    name = "cinn.conv_type"


@irdl_attr_definition
class DataFormatAttr(EnumAttribute[DataFormat], SpacedOpaqueSyntaxAttribute):
    """The layout of `cinn.conv`'s data tensors: NCHW or NHWC (the filter is always OIHW)."""

    name = "cinn.data_format"


@irdl_attr_definition
class PaddingAlgorithmAttr(EnumAttribute[PaddingAlgorithm], SpacedOpaqueSyntaxAttribute):
    """How `cinn.conv` pads: EXPLICIT (its `paddings`), SAME (output = ceil(input / stride), the dilated filter
    counted) or VALID (none)."""

    name = "cinn.padding_algorithm"


# ---------------------------------------------------------------------------------------------------------------
# ConstScalar
# ---------------------------------------------------------------------------------------------------------------


@irdl_op_definition
class ConstScalarOp(IRDLOperation):
    """A constant scalar: a rank-0 tensor of the value's type.

    %zero = cinn.const_scalar 0.000000e+00 : f32      // : tensor<f32>
    """

    name = "cinn.const_scalar"

    value = prop_def(IntegerAttr | FloatAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, value: IntegerAttr | FloatAttr):
        super().__init__(properties={"value": value}, result_types=[self.infer(value)])

    @staticmethod
    def infer(value: IntegerAttr | FloatAttr) -> TensorType:
        return _tensor("value", TensorType(value.type, []))

    def verify_(self) -> None:
        _check_results(self, [self.infer(self.value)])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ConstScalarOp:
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, IntegerAttr | FloatAttr):
            parser.raise_error("expected an integer, float or bool literal", pos, parser.pos)
        properties: dict[str, Attribute] = {"value": value}
        attributes = parser.parse_optional_attr_dict()
        return cls.create(
            properties=properties, attributes=attributes, result_types=[TensorType(value.get_type(), [])]
        )


# ---------------------------------------------------------------------------------------------------------------
# Unary primitives
# ---------------------------------------------------------------------------------------------------------------


class UnaryOp(IRDLOperation):
    """Base of the element-wise unary primitives: `OPERAND_KIND` is the type rule, the result keeps the type
    (or is i1 when `predicate`)."""

    OPERAND_KIND: ClassVar[ElementKind]
    PREDICATE: ClassVar[bool] = False

    x = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$x attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: SSAValue):
        super().__init__(operands=[x], result_types=[self.infer(x.type)])

    @classmethod
    def infer(cls, x: Attribute) -> TensorType:
        t = _tensor("x", x, cls.OPERAND_KIND)
        return TensorType(i1, t.get_shape()) if cls.PREDICATE else t

    def verify_(self) -> None:
        _check_results(self, [self.infer(self.x.type)])


@irdl_op_definition
class AbsOp(UnaryOp):
    """Absolute value: |x| (wrapping: |INT_MIN| = INT_MIN; identity on ui8).

    %y = cinn.abs %x : (tensor<4xi32>) -> tensor<4xi32>
    """

    name = "cinn.abs"
    OPERAND_KIND: ClassVar[ElementKind] = NUMERIC


@irdl_op_definition
class AcosOp(UnaryOp):
    """Arc-cosine: acos(x).

    %y = cinn.acos %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.acos"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class AcoshOp(UnaryOp):
    """Hyperbolic arc-cosine: acosh(x).

    %y = cinn.acosh %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.acosh"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class AsinOp(UnaryOp):
    """Arc-sine: asin(x).

    %y = cinn.asin %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.asin"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class AsinhOp(UnaryOp):
    """Hyperbolic arc-sine: asinh(x).

    %y = cinn.asinh %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.asinh"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class AtanOp(UnaryOp):
    """Arc-tangent: atan(x).

    %y = cinn.atan %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.atan"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class AtanhOp(UnaryOp):
    """Hyperbolic arc-tangent: atanh(x).

    %y = cinn.atanh %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.atanh"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class BitwiseNotOp(UnaryOp):
    """Bitwise not: ~x (logical not on i1).

    %y = cinn.bitwise_not %x : (tensor<4xi8>) -> tensor<4xi8>
    """

    name = "cinn.bitwise_not"
    OPERAND_KIND: ClassVar[ElementKind] = BITS


@irdl_op_definition
class CeilOp(UnaryOp):
    """Ceiling: the least integer >= x.

    %y = cinn.ceil %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.ceil"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class CosOp(UnaryOp):
    """Cosine: cos(x).

    %y = cinn.cos %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.cos"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class CoshOp(UnaryOp):
    """Hyperbolic cosine: cosh(x).

    %y = cinn.cosh %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.cosh"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class ErfOp(UnaryOp):
    """Gauss error function: erf(x) = 2 / sqrt(pi) * integral from 0 to x of exp(-t^2) dt.

    %y = cinn.erf %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.erf"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class ExpOp(UnaryOp):
    """Exponential: e^x.

    %y = cinn.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.exp"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class FloorOp(UnaryOp):
    """Floor: the greatest integer <= x.

    %y = cinn.floor %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.floor"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class IdentityOp(UnaryOp):
    """Identity: x.

    %y = cinn.identity %x : (tensor<4xi1>) -> tensor<4xi1>
    """

    name = "cinn.identity"
    OPERAND_KIND: ClassVar[ElementKind] = ANY


@irdl_op_definition
class IsFiniteOp(UnaryOp):
    """Whether x is finite (neither infinite nor NaN).

    %y = cinn.is_finite %x : (tensor<4xf32>) -> tensor<4xi1>
    """

    name = "cinn.is_finite"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT
    PREDICATE: ClassVar[bool] = True


@irdl_op_definition
class IsInfOp(UnaryOp):
    """Whether x is +inf or -inf.

    %y = cinn.is_inf %x : (tensor<4xf32>) -> tensor<4xi1>
    """

    name = "cinn.is_inf"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT
    PREDICATE: ClassVar[bool] = True


@irdl_op_definition
class IsNanOp(UnaryOp):
    """Whether x is NaN.

    %y = cinn.is_nan %x : (tensor<4xf32>) -> tensor<4xi1>
    """

    name = "cinn.is_nan"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT
    PREDICATE: ClassVar[bool] = True


@irdl_op_definition
class LogOp(UnaryOp):
    """Natural logarithm: ln(x).

    %y = cinn.log %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.log"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class Log10Op(UnaryOp):
    """Common logarithm: log10(x).

    %y = cinn.log10 %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.log10"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class Log2Op(UnaryOp):
    """Binary logarithm: log2(x).

    %y = cinn.log2 %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.log2"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class LogicalNotOp(UnaryOp):
    """Logical not: x == 0, as i1.

    %y = cinn.logical_not %x : (tensor<4xi32>) -> tensor<4xi1>
    """

    name = "cinn.logical_not"
    OPERAND_KIND: ClassVar[ElementKind] = ANY
    PREDICATE: ClassVar[bool] = True


@irdl_op_definition
class NegativeOp(UnaryOp):
    """Negation: -x (wrapping on integers).

    %y = cinn.negative %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.negative"
    OPERAND_KIND: ClassVar[ElementKind] = NUMERIC


@irdl_op_definition
class RoundOp(UnaryOp):
    """Round half away from zero: sgn(x) * floor(|x| + 0.5), as C's round (not numpy's half to even).

    %y = cinn.round %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.round"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class RsqrtOp(UnaryOp):
    """Reciprocal square root: 1 / sqrt(x).

    %y = cinn.rsqrt %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.rsqrt"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class SignOp(UnaryOp):
    """Signum: -1 if x < 0, 0 if x == 0, 1 if x > 0 (NaN stays NaN).

    %y = cinn.sign %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.sign"
    OPERAND_KIND: ClassVar[ElementKind] = NUMERIC


@irdl_op_definition
class SinOp(UnaryOp):
    """Sine: sin(x).

    %y = cinn.sin %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.sin"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class SinhOp(UnaryOp):
    """Hyperbolic sine: sinh(x).

    %y = cinn.sinh %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.sinh"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class SqrtOp(UnaryOp):
    """Square root: sqrt(x).

    %y = cinn.sqrt %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.sqrt"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class TanOp(UnaryOp):
    """Tangent: tan(x).

    %y = cinn.tan %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.tan"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class TanhOp(UnaryOp):
    """Hyperbolic tangent: tanh(x).

    %y = cinn.tanh %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.tanh"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


@irdl_op_definition
class TruncOp(UnaryOp):
    """Truncation toward zero: ceil(x) if x < 0 else floor(x).

    %y = cinn.trunc %x : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.trunc"
    OPERAND_KIND: ClassVar[ElementKind] = FLOAT


# ---------------------------------------------------------------------------------------------------------------
# Binary primitives
# ---------------------------------------------------------------------------------------------------------------


class BinaryOp(IRDLOperation):
    """Base of the element-wise binary primitives: both operands have one element type in `OPERAND_KIND` and
    numpy-broadcastable shapes; the result has the broadcast shape and the operands' type (i1 when
    `predicate`)."""

    OPERAND_KIND: ClassVar[ElementKind]
    PREDICATE: ClassVar[bool] = False

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[self.infer(lhs.type, rhs.type)])

    @classmethod
    def infer(cls, lhs: Attribute, rhs: Attribute) -> TensorType:
        types = (_tensor("lhs", lhs, cls.OPERAND_KIND), _tensor("rhs", rhs, cls.OPERAND_KIND))
        element = _same_element(("lhs", "rhs"), types)
        shape = broadcast_shapes(*(t.get_shape() for t in types))
        return TensorType(i1 if cls.PREDICATE else element, shape)

    def verify_(self) -> None:
        _check_results(self, [self.infer(self.lhs.type, self.rhs.type)])


@irdl_op_definition
class AddOp(BinaryOp):
    """Addition: x + y (wrapping on integers).

    %z = cinn.add %x, %y : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    """

    name = "cinn.add"
    OPERAND_KIND: ClassVar[ElementKind] = NUMERIC


@irdl_op_definition
class BitwiseAndOp(BinaryOp):
    """Bitwise and: x & y.

    %z = cinn.bitwise_and %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    """

    name = "cinn.bitwise_and"
    OPERAND_KIND: ClassVar[ElementKind] = BITS


@irdl_op_definition
class BitwiseOrOp(BinaryOp):
    """Bitwise or: x | y.

    %z = cinn.bitwise_or %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    """

    name = "cinn.bitwise_or"
    OPERAND_KIND: ClassVar[ElementKind] = BITS


@irdl_op_definition
class BitwiseXorOp(BinaryOp):
    """Bitwise xor: x ^ y.

    %z = cinn.bitwise_xor %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    """

    name = "cinn.bitwise_xor"
    OPERAND_KIND: ClassVar[ElementKind] = BITS


@irdl_op_definition
class DivOp(BinaryOp):
    """Division: x / y; on integers truncated toward zero, x / 0 = 0 and INT_MIN / -1 = INT_MIN.

    %z = cinn.div %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    """

    name = "cinn.div"
    OPERAND_KIND: ClassVar[ElementKind] = NUMERIC


@irdl_op_definition
class FloorDivOp(BinaryOp):
    """Floor division: floor(x / y); on integers x / 0 = 0 and INT_MIN / -1 = INT_MIN. On floats the quotient of
    Python's divmod (numpy's floor_divide): (x - floor_mod(x, y)) / y snapped to the nearest integer, x / y for
    y = 0; so that y * floor_div(x, y) + floor_mod(x, y) == x (1 // 0.1 is 9, not floor(1 / 0.1) = 10).

    %z = cinn.floor_div %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    """

    name = "cinn.floor_div"
    OPERAND_KIND: ClassVar[ElementKind] = NUMERIC


@irdl_op_definition
class FloorModOp(BinaryOp):
    """Floor modulo: x - y * floor_div(x, y), the sign of y (Python's %); on integers x % 0 = 0. On floats the
    exact remainder fmod(x, y), plus y where it is non-zero and of the other sign than y; a zero remainder takes
    the sign of y; NaN for y = 0 (numpy's remainder).

    %z = cinn.floor_mod %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    """

    name = "cinn.floor_mod"
    OPERAND_KIND: ClassVar[ElementKind] = NUMERIC


@irdl_op_definition
class LeftShiftOp(BinaryOp):
    """Left shift: x << y; 0 when y is outside [0, bits - 1].

    %z = cinn.left_shift %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    """

    name = "cinn.left_shift"
    OPERAND_KIND: ClassVar[ElementKind] = INTEGER


@irdl_op_definition
class LogicalAndOp(BinaryOp):
    """Logical and: x != 0 && y != 0, as i1.

    %z = cinn.logical_and %x, %y : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    """

    name = "cinn.logical_and"
    OPERAND_KIND: ClassVar[ElementKind] = ANY
    PREDICATE: ClassVar[bool] = True


@irdl_op_definition
class LogicalOrOp(BinaryOp):
    """Logical or: x != 0 || y != 0, as i1.

    %z = cinn.logical_or %x, %y : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    """

    name = "cinn.logical_or"
    OPERAND_KIND: ClassVar[ElementKind] = ANY
    PREDICATE: ClassVar[bool] = True


@irdl_op_definition
class LogicalXorOp(BinaryOp):
    """Logical xor: (x != 0) != (y != 0), as i1.

    %z = cinn.logical_xor %x, %y : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    """

    name = "cinn.logical_xor"
    OPERAND_KIND: ClassVar[ElementKind] = ANY
    PREDICATE: ClassVar[bool] = True


@irdl_op_definition
class MaxOp(BinaryOp):
    """Maximum: max(x, y); NaN if either float is NaN.

    %z = cinn.max %x, %y : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    """

    name = "cinn.max"
    OPERAND_KIND: ClassVar[ElementKind] = NUMERIC


@irdl_op_definition
class MinOp(BinaryOp):
    """Minimum: min(x, y); NaN if either float is NaN.

    %z = cinn.min %x, %y : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    """

    name = "cinn.min"
    OPERAND_KIND: ClassVar[ElementKind] = NUMERIC


@irdl_op_definition
class ModOp(BinaryOp):
    """Remainder: x % y with the sign of x (C's % and fmod); on integers x % 0 = 0 and INT_MIN % -1 = 0.

    %z = cinn.mod %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    """

    name = "cinn.mod"
    OPERAND_KIND: ClassVar[ElementKind] = NUMERIC


@irdl_op_definition
class MulOp(BinaryOp):
    """Multiplication: x * y (wrapping on integers).

    %z = cinn.mul %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.mul"
    OPERAND_KIND: ClassVar[ElementKind] = NUMERIC


@irdl_op_definition
class PowerOp(BinaryOp):
    """Power: x ^ y; on integers exact wrapping repeated multiplication, and for y < 0: 1 for x = 1, (-1)^y for
    x = -1, else 0.

    %z = cinn.power %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.power"
    OPERAND_KIND: ClassVar[ElementKind] = NUMERIC


@irdl_op_definition
class RightShiftOp(BinaryOp):
    """Right shift: x >> y, arithmetic on signed and logical on unsigned types; for y outside [0, bits - 1] the
    sign fill (0 or -1) on signed types and 0 on unsigned ones.

    %z = cinn.right_shift %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    """

    name = "cinn.right_shift"
    OPERAND_KIND: ClassVar[ElementKind] = INTEGER


@irdl_op_definition
class SubOp(BinaryOp):
    """Subtraction: x - y (wrapping on integers).

    %z = cinn.sub %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    """

    name = "cinn.sub"
    OPERAND_KIND: ClassVar[ElementKind] = NUMERIC


@irdl_op_definition
class DotOp(IRDLOperation):
    """Dot product: sum over k of x[..., k] * y[k, ...]; 1-D . 1-D -> scalar, 2-D . 2-D -> matmul,
    2-D . 1-D -> matvec (wrapping on integers).

    %z = cinn.dot %x, %y : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    """

    name = "cinn.dot"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[self.infer(lhs.type, rhs.type)])

    @staticmethod
    def infer(lhs: Attribute, rhs: Attribute) -> TensorType:
        types = (_tensor("lhs", lhs, NUMERIC), _tensor("rhs", rhs, NUMERIC))
        element = _same_element(("lhs", "rhs"), types)
        return TensorType(element, dot_shape(types[0].get_shape(), types[1].get_shape()))

    def verify_(self) -> None:
        _check_results(self, [self.infer(self.lhs.type, self.rhs.type)])


# ---------------------------------------------------------------------------------------------------------------
# Complex primitives
# ---------------------------------------------------------------------------------------------------------------


def _bn_input(x: Attribute) -> TensorType:
    t = _tensor("x", x, FLOAT)
    if t.get_num_dims() != 4:
        raise VerifyException(f"expected 'x' of rank 4 (NCHW), got rank {t.get_num_dims()}")
    return t


@irdl_op_definition
class BnGradBiasScaleOp(IRDLOperation):
    """Batch-norm bias and scale gradients per channel c over N, H, W:
    (sum dy[n, c, h, w], sum dy[n, c, h, w] * (x[n, c, h, w] - mean[c])).

    %db, %ds = cinn.bn_grad_bias_scale %x, %dy, %mean
        : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
    """

    name = "cinn.bn_grad_bias_scale"

    x = operand_def(TensorType)
    grad = operand_def(TensorType)
    save_mean = operand_def(TensorType)
    bias_grad = result_def(TensorType)
    scale_grad = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$x `,` $grad `,` $save_mean attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: SSAValue, grad: SSAValue, save_mean: SSAValue):
        super().__init__(operands=[x, grad, save_mean], result_types=self.infer(x.type, grad.type, save_mean.type))

    @staticmethod
    def infer(x: Attribute, grad: Attribute, save_mean: Attribute) -> list[TensorType]:
        tx, tg, tm = _bn_input(x), _tensor("grad", grad, FLOAT), _tensor("save_mean", save_mean, FLOAT)
        element = _same_element(("x", "grad", "save_mean"), (tx, tg, tm))
        if tg.get_shape() != tx.get_shape():
            raise VerifyException(f"expected 'grad' shape {list(tx.get_shape())}, got {list(tg.get_shape())}")
        channels = (tx.get_shape()[1],)
        if tm.get_shape() != channels:
            raise VerifyException(f"expected 'save_mean' shape {list(channels)}, got {list(tm.get_shape())}")
        return [TensorType(element, channels)] * 2

    def verify_(self) -> None:
        _check_results(self, self.infer(self.x.type, self.grad.type, self.save_mean.type))


@irdl_op_definition
class BnMeanVarianceOp(IRDLOperation):
    """Batch-norm statistics per channel c over N, H, W: (sum x[n, c, h, w], sum x[n, c, h, w]^2).

    %sum, %sum_sq = cinn.bn_mean_variance %x : (tensor<2x3x4x4xf32>) -> (tensor<3xf32>, tensor<3xf32>)
    """

    name = "cinn.bn_mean_variance"

    x = operand_def(TensorType)
    sum = result_def(TensorType)
    sum_square = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$x attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: SSAValue):
        super().__init__(operands=[x], result_types=self.infer(x.type))

    @staticmethod
    def infer(x: Attribute) -> list[TensorType]:
        t = _bn_input(x)
        return [TensorType(t.element_type, (t.get_shape()[1],))] * 2

    def verify_(self) -> None:
        _check_results(self, self.infer(self.x.type))


@irdl_op_definition
class BroadcastToOp(IRDLOperation):
    """Broadcast to `out_shape`, input axis i mapping to output axis broadcast_axes[i] (XLA style):
    y[i_0, ..., i_r] = x[j_0, ...] with j_k = i_{axes[k]}, or 0 where x's dim k is 1.

    %y = cinn.broadcast_to %x {out_shape = array<i64: 2, 64, 4>, broadcast_axes = array<i64: 1>}
        : (tensor<64xf32>) -> tensor<2x64x4xf32>
    """

    name = "cinn.broadcast_to"

    x = operand_def(TensorType)
    out_shape = prop_def(DenseArrayBase[I64])
    broadcast_axes = prop_def(DenseArrayBase[I64])
    result = result_def(TensorType)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)

    assembly_format = "$x attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: SSAValue, out_shape: Sequence[int], broadcast_axes: Sequence[int]):
        super().__init__(
            operands=[x],
            properties={"out_shape": _array(out_shape), "broadcast_axes": _array(broadcast_axes)},
            result_types=[self.infer(x.type, out_shape, broadcast_axes)],
        )

    @staticmethod
    def infer(x: Attribute, out_shape: Sequence[int], broadcast_axes: Sequence[int]) -> TensorType:
        t = _tensor("x", x)
        check_broadcast_to(t.get_shape(), tuple(out_shape), broadcast_axes)
        return TensorType(t.element_type, out_shape)

    def verify_(self) -> None:
        _check_results(self, [self.infer(self.x.type, _ints(self.out_shape), _ints(self.broadcast_axes))])


@irdl_op_definition
class CompareOp(BinaryOp):
    """Element-wise comparison, as i1: x == y, x != y, x >= y, x > y, x <= y or x < y (unsigned on ui8; every
    comparison with NaN is false except ne).

    %z = cinn.compare lt %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    """

    name = "cinn.compare"
    OPERAND_KIND: ClassVar[ElementKind] = ANY
    PREDICATE: ClassVar[bool] = True

    kind = prop_def(CompareKindAttr)

    assembly_format = "$kind $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue, kind: CompareKind | str):
        IRDLOperation.__init__(
            self,
            operands=[lhs, rhs],
            properties={"kind": CompareKindAttr(CompareKind(kind))},
            result_types=[self.infer(lhs.type, rhs.type)],
        )


@irdl_op_definition
class ConcatOp(IRDLOperation):
    """Concatenation along an existing axis: inputs of one rank and element type, equal off that axis; `axis`
    in [-rank, rank), a negative one counting from the end (axis + rank, as CINN).

    %z = cinn.concat %x, %y {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    """

    name = "cinn.concat"

    inputs = var_operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)

    assembly_format = "$inputs attr-dict `:` functional-type(operands, results)"

    def __init__(self, inputs: Sequence[SSAValue], axis: int):
        super().__init__(
            operands=[inputs],
            properties={"axis": IntegerAttr(axis, i64)},
            result_types=[self.infer([v.type for v in inputs], axis)],
        )

    @staticmethod
    def infer(inputs: Sequence[Attribute], axis: int) -> TensorType:
        if not inputs:
            raise VerifyException("expected at least one input, got 0")
        types = [_tensor(f"input {i}", t) for i, t in enumerate(inputs)]
        element = _same_element([f"input {i}" for i in range(len(types))], types)
        return TensorType(element, concat_shape([t.get_shape() for t in types], axis))

    def verify_(self) -> None:
        _check_results(self, [self.infer([v.type for v in self.inputs], self.axis.value.data)])

    def normalized_axis(self) -> int:
        """The concatenation axis in [0, rank) (a negative `axis` + rank); the op must verify."""
        return normalize_axis("axis", self.axis.value.data, len(_tensor("input 0", self.inputs[0].type).get_shape()))


@irdl_op_definition
class ConvOp(IRDLOperation):
    """2-D convolution or one of its two adjoints (see ConvGeometry for the index map):
    forward(x, w) -> y; backward_data(w, dy) -> dx with <conv(x, w), dy> = <x, dx>;
    backward_filter(x, dy) -> dw with <conv(x, w), dy> = <w, dw>. The backward forms need `output_shape`
    (the shape of dx, resp. dw); strides and dilations may not both differ from 1. SAME pads (total, split with
    the odd one at the bottom / right) so that the output is ceil(input / stride), counting the dilated filter
    extent (k - 1) * dilation + 1: with dilation > 1 the output keeps the input's size (paddle ignores the
    dilation there and gives a smaller output; cvmc keeps SAME's promise, as ONNX's SAME_UPPER and TensorFlow).

    %y = cinn.conv forward NCHW EXPLICIT %x, %w {strides = array<i64: 1, 1>, paddings = array<i64: 1, 1>,
        dilations = array<i64: 1, 1>, groups = 1 : i64, output_shape = array<i64>}
        : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
    """

    name = "cinn.conv"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    strides = prop_def(DenseArrayBase[I64])
    paddings = prop_def(DenseArrayBase[I64])
    dilations = prop_def(DenseArrayBase[I64])
    groups = prop_def(IntegerAttr[I64])
    conv_type = prop_def(ConvTypeAttr)
    data_format = prop_def(DataFormatAttr)
    padding_algorithm = prop_def(PaddingAlgorithmAttr)
    output_shape = prop_def(DenseArrayBase[I64])
    result = result_def(TensorType)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)

    assembly_format = (
        "$conv_type $data_format $padding_algorithm $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        lhs: SSAValue,
        rhs: SSAValue,
        strides: Sequence[int] = (1, 1),
        paddings: Sequence[int] = (0, 0),
        dilations: Sequence[int] = (1, 1),
        groups: int = 1,
        conv_type: ConvType | str = ConvType.FORWARD,
        data_format: DataFormat | str = DataFormat.NCHW,
        padding_algorithm: PaddingAlgorithm | str = PaddingAlgorithm.EXPLICIT,
        output_shape: Sequence[int] = (),
    ):
        kind, layout, algorithm = ConvType(conv_type), DataFormat(data_format), PaddingAlgorithm(padding_algorithm)
        super().__init__(
            operands=[lhs, rhs],
            properties={
                "strides": _array(strides),
                "paddings": _array(paddings),
                "dilations": _array(dilations),
                "groups": IntegerAttr(groups, i64),
                "conv_type": ConvTypeAttr(kind),
                "data_format": DataFormatAttr(layout),
                "padding_algorithm": PaddingAlgorithmAttr(algorithm),
                "output_shape": _array(output_shape),
            },
            result_types=[
                self.infer(
                    lhs.type, rhs.type, strides, paddings, dilations, groups, kind, layout, algorithm, output_shape
                )
            ],
        )

    @staticmethod
    def infer(
        lhs: Attribute,
        rhs: Attribute,
        strides: Sequence[int],
        paddings: Sequence[int],
        dilations: Sequence[int],
        groups: int,
        conv_type: ConvType,
        data_format: DataFormat,
        padding_algorithm: PaddingAlgorithm,
        output_shape: Sequence[int],
    ) -> TensorType:
        types = (_tensor("lhs", lhs, FLOAT), _tensor("rhs", rhs, FLOAT))
        element = _same_element(("lhs", "rhs"), types)
        g = conv_geometry(
            types[0].get_shape(), types[1].get_shape(), strides, paddings, dilations, groups,
            conv_type, data_format, padding_algorithm, output_shape,
        )  # fmt: skip
        return TensorType(element, conv_result_shape(g, conv_type))

    def geometry(self) -> ConvGeometry:
        """This op's sizes (the op must verify)."""
        return conv_geometry(shape_of(self.lhs), shape_of(self.rhs), *self._attributes())

    def _attributes(
        self,
    ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int, ConvType, DataFormat, PaddingAlgorithm,
               tuple[int, ...]]:
        return (
            _ints(self.strides), _ints(self.paddings), _ints(self.dilations), self.groups.value.data,
            self.conv_type.data, self.data_format.data, self.padding_algorithm.data, _ints(self.output_shape),
        )  # fmt: skip

    def verify_(self) -> None:
        _check_results(self, [self.infer(self.lhs.type, self.rhs.type, *self._attributes())])


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """Reduction (sum, prod, max or min) over the axes `dim` (all axes when empty), kept as 1 when `keep_dim`
    (wrapping on integers; max and min propagate NaN); each dim in [-rank, rank), a negative one counting from the
    end (dim + rank, as CINN), none twice.

    %y = cinn.reduce sum %x {dim = array<i64: 1>, keep_dim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
    """

    name = "cinn.reduce"

    x = operand_def(TensorType)
    kind = prop_def(ReduceKindAttr)
    dim = prop_def(DenseArrayBase[I64])
    keep_dim = prop_def(BoolAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)

    assembly_format = "$kind $x attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: SSAValue, kind: ReduceKind | str, dim: Sequence[int], keep_dim: bool):
        super().__init__(
            operands=[x],
            properties={
                "kind": ReduceKindAttr(ReduceKind(kind)),
                "dim": _array(dim),
                "keep_dim": IntegerAttr.from_bool(keep_dim),
            },
            result_types=[self.infer(x.type, dim, keep_dim)],
        )

    @staticmethod
    def infer(x: Attribute, dim: Sequence[int], keep_dim: bool) -> TensorType:
        t = _tensor("x", x, NUMERIC)
        return TensorType(t.element_type, reduce_shape(t.get_shape(), dim, keep_dim))

    def verify_(self) -> None:
        _check_results(self, [self.infer(self.x.type, _ints(self.dim), bool(self.keep_dim.value.data))])


@irdl_op_definition
class ReshapeOp(IRDLOperation):
    """Reshape, keeping the row-major element order; a 0 in `shape` copies the input's dim at the same index
    (as CINN and paddle), and at most one dim is -1 (inferred from the element count).

    %y = cinn.reshape %x {shape = array<i64: -1, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
    """

    name = "cinn.reshape"

    x = operand_def(TensorType)
    shape = prop_def(DenseArrayBase[I64])
    result = result_def(TensorType)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)

    assembly_format = "$x attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: SSAValue, shape: Sequence[int]):
        super().__init__(
            operands=[x], properties={"shape": _array(shape)}, result_types=[self.infer(x.type, shape)]
        )

    @staticmethod
    def infer(x: Attribute, shape: Sequence[int]) -> TensorType:
        t = _tensor("x", x)
        return TensorType(t.element_type, reshape_shape(t.get_shape(), shape))

    def verify_(self) -> None:
        _check_results(self, [self.infer(self.x.type, _ints(self.shape))])


@irdl_op_definition
class ReverseOp(IRDLOperation):
    """Reverse along the axes `axis`: y[..., i_k, ...] = x[..., d_k - 1 - i_k, ...] for k in axis; each axis
    in [-rank, rank), a negative one counting from the end (axis + rank, as CINN), none twice.

    %y = cinn.reverse %x {axis = array<i64: 0>} : (tensor<4x3xf32>) -> tensor<4x3xf32>
    """

    name = "cinn.reverse"

    x = operand_def(TensorType)
    axis = prop_def(DenseArrayBase[I64])
    result = result_def(TensorType)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)

    assembly_format = "$x attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: SSAValue, axis: Sequence[int]):
        super().__init__(operands=[x], properties={"axis": _array(axis)}, result_types=[self.infer(x.type, axis)])

    @staticmethod
    def infer(x: Attribute, axis: Sequence[int]) -> TensorType:
        t = _tensor("x", x)
        normalize_axes("axis", axis, t.get_num_dims())
        return t

    def axes(self) -> tuple[int, ...]:
        """The reversed axes, normalised (a negative one + rank); the op must verify."""
        return normalize_axes("axis", _ints(self.axis), len(_tensor("x", self.x.type).get_shape()))

    def verify_(self) -> None:
        _check_results(self, [self.infer(self.x.type, _ints(self.axis))])


@irdl_op_definition
class SelectOp(IRDLOperation):
    """Element-wise choice: condition ? true_value : false_value, the three numpy-broadcast.

    %z = cinn.select %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    """

    name = "cinn.select"

    condition = operand_def(TensorType)
    true_value = operand_def(TensorType)
    false_value = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$condition `,` $true_value `,` $false_value attr-dict `:` functional-type(operands, results)"

    def __init__(self, condition: SSAValue, true_value: SSAValue, false_value: SSAValue):
        super().__init__(
            operands=[condition, true_value, false_value],
            result_types=[self.infer(condition.type, true_value.type, false_value.type)],
        )

    @staticmethod
    def infer(condition: Attribute, true_value: Attribute, false_value: Attribute) -> TensorType:
        c = _tensor("condition", condition, ElementKind("bool", (i1,)))
        t, f = _tensor("true_value", true_value), _tensor("false_value", false_value)
        element = _same_element(("true_value", "false_value"), (t, f))
        return TensorType(element, broadcast_shapes(c.get_shape(), t.get_shape(), f.get_shape()))

    def verify_(self) -> None:
        _check_results(self, [self.infer(self.condition.type, self.true_value.type, self.false_value.type)])


@irdl_op_definition
class SliceOp(IRDLOperation):
    """The box [starts, ends) on the axes `axes` (a negative index counts from the end, then clamps to
    [0, dim]; an empty range is an error): y[..., i_k, ...] = x[..., start_k + i_k, ...].

    %y = cinn.slice %x {axes = array<i64: 1>, starts = array<i64: 1>, ends = array<i64: -1>}
        : (tensor<4x8xf32>) -> tensor<4x6xf32>
    """

    name = "cinn.slice"

    x = operand_def(TensorType)
    axes = prop_def(DenseArrayBase[I64])
    starts = prop_def(DenseArrayBase[I64])
    ends = prop_def(DenseArrayBase[I64])
    result = result_def(TensorType)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)

    assembly_format = "$x attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: SSAValue, axes: Sequence[int], starts: Sequence[int], ends: Sequence[int]):
        super().__init__(
            operands=[x],
            properties={"axes": _array(axes), "starts": _array(starts), "ends": _array(ends)},
            result_types=[self.infer(x.type, axes, starts, ends)],
        )

    @staticmethod
    def infer(x: Attribute, axes: Sequence[int], starts: Sequence[int], ends: Sequence[int]) -> TensorType:
        t = _tensor("x", x)
        bounds = slice_bounds(t.get_shape(), axes, starts, ends)
        return TensorType(t.element_type, [hi - lo for lo, hi in bounds])

    def bounds(self) -> list[tuple[int, int]]:
        """[start, end) on every axis of x (the op must verify)."""
        return slice_bounds(shape_of(self.x), _ints(self.axes), _ints(self.starts), _ints(self.ends))

    def verify_(self) -> None:
        _check_results(self, [self.infer(self.x.type, _ints(self.axes), _ints(self.starts), _ints(self.ends))])


@irdl_op_definition
class TransposeOp(IRDLOperation):
    """Permute the axes: y's axis k is x's axis axis[k], y[i_0, ...] = x[j] with j[axis[k]] = i_k.

    %y = cinn.transpose %x {axis = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
    """

    name = "cinn.transpose"

    x = operand_def(TensorType)
    axis = prop_def(DenseArrayBase[I64])
    result = result_def(TensorType)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)

    assembly_format = "$x attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: SSAValue, axis: Sequence[int]):
        super().__init__(operands=[x], properties={"axis": _array(axis)}, result_types=[self.infer(x.type, axis)])

    @staticmethod
    def infer(x: Attribute, axis: Sequence[int]) -> TensorType:
        t = _tensor("x", x)
        return TensorType(t.element_type, transpose_shape(t.get_shape(), axis))

    def verify_(self) -> None:
        _check_results(self, [self.infer(self.x.type, _ints(self.axis))])


UNARY_OPS: tuple[type[UnaryOp], ...] = (
    AbsOp, AcosOp, AcoshOp, AsinOp, AsinhOp, AtanOp, AtanhOp, BitwiseNotOp, CeilOp, CosOp, CoshOp, ErfOp,
    ExpOp, FloorOp, IdentityOp, IsFiniteOp, IsInfOp, IsNanOp, LogOp, Log10Op, Log2Op, LogicalNotOp, NegativeOp,
    RoundOp, RsqrtOp, SignOp, SinOp, SinhOp, SqrtOp, TanOp, TanhOp, TruncOp,
)  # fmt: skip

BINARY_OPS: tuple[type[BinaryOp], ...] = (
    AddOp, BitwiseAndOp, BitwiseOrOp, BitwiseXorOp, DivOp, FloorDivOp, FloorModOp, LeftShiftOp, LogicalAndOp,
    LogicalOrOp, LogicalXorOp, MaxOp, MinOp, ModOp, MulOp, PowerOp, RightShiftOp, SubOp,
)  # fmt: skip

COMPLEX_OPS: tuple[type[IRDLOperation], ...] = (
    BnGradBiasScaleOp, BnMeanVarianceOp, BroadcastToOp, CompareOp, ConcatOp, ConvOp, DotOp, ReduceOp,
    ReshapeOp, ReverseOp, SelectOp, SliceOp, TransposeOp,
)  # fmt: skip

Cinn = Dialect(
    "cinn",
    [ConstScalarOp, *UNARY_OPS, *BINARY_OPS, *COMPLEX_OPS],
    [CompareKindAttr, ReduceKindAttr, ConvTypeAttr, DataFormatAttr, PaddingAlgorithmAttr],
)
