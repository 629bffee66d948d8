"""The `cvm` dialect: the 37 operators of the CVM integer network format, one op each, and `cvm.param`.

Every value is an int32 tensor that also carries a *precision* p (1 <= p <= 32, |x| <= 2^(p-1) - 1). The
precision lives in the value's type, as the encoding of a builtin tensor:

    %0 = cvm.relu %x : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x8x8xi32, #cvm.prec<8>>

Why a builtin tensor with an encoding and not a custom `!cvm.tensor` type: storage is always int32, so the
element type stays `i32`, and precision is metadata about the values, exactly what MLIR's tensor encodings
(sparse layouts) are for. xDSL 0.74 parses and prints `tensor<...xi32, #cvm.prec<8>>`, and every standard pass
and utility that understands tensors (shapes, `func`, `cse`, `dce`) keeps working and keeps the encoding. The
operators' verifiers then check the precision just like the shape: as type inference.

A result may be written without an encoding (`tensor<1x4xi32>`) or with dynamic dims (`tensor<?x4xi32>`): the
verifier then checks only what is written, and the passes `cvm-infer-shapes` / `cvm-infer-precision` fill it in.

Attributes are typed properties that mirror `cvm_rules.OP_ATTRS` (ints: `i64`, tuples: `array<i64: ...>`,
bools: `true`/`false`, strings: `"NCHW"`). An attribute left out takes the default of `OP_ATTRS`, so the
printed IR shows only what differs from the defaults. Each op may carry a `name` (its node name in the model
file). `cvm_attrs` and `cvm_properties` convert between properties and the attribute dicts of `cvm_rules`
through one table, driven by `OP_ATTRS`.

All the operator rules (shapes, precisions, attribute ranges) live in `cvmc.dialects.cvm_rules`; the single
generic verifier of `CvmOperator` calls `cvm_rules.infer` and compares the result types with its answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, cast

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    BoolAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    NoneAttr,
    StringAttr,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue
from xdsl.irdl import (
    AnyAttr,
    AnyOf,
    BaseAttr,
    EqAttrConstraint,
    IRDLOperation,
    ParamAttrConstraint,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from cvmc.dialects import cvm_rules as rules
from cvmc.errors import CVMError

# ---------------------------------------------------------------------------------------------------------
# Precision and tensor types
# ---------------------------------------------------------------------------------------------------------


@irdl_attr_definition
class PrecisionAttr(ParametrizedAttribute):
    """The precision p of a tensor, its type's encoding: every value satisfies |x| <= 2^(p-1) - 1.

        tensor<1x64xi32, #cvm.prec<8>>     // int8-range values stored as int32
    """

    name = "cvm.prec"

    precision: IntAttr

    def __init__(self, precision: int | IntAttr):
        super().__init__(precision if isinstance(precision, IntAttr) else IntAttr(precision))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[IntAttr]:
        with parser.in_angle_brackets():
            return (IntAttr(parser.parse_integer(allow_boolean=False)),)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_int(self.precision.data)

    def verify(self) -> None:
        p = self.precision.data
        if not 1 <= p <= 32:
            raise VerifyException(f"expected 'precision' in [1, 32], got {p}")


CvmTensorConstr = ParamAttrConstraint(
    TensorType, (AnyAttr(), EqAttrConstraint(i32), AnyOf((BaseAttr(PrecisionAttr), EqAttrConstraint(NoneAttr()))))
)
"""An int32 tensor, with or without its precision (an operator result not yet inferred has none)."""

PreciseTensorConstr = ParamAttrConstraint(TensorType, (AnyAttr(), EqAttrConstraint(i32), BaseAttr(PrecisionAttr)))
"""An int32 tensor with its precision: what inputs and params must be."""


DotOperandConstr = ParamAttrConstraint(TensorType, (
    AnyAttr(), BaseAttr(IntegerType), AnyOf((BaseAttr(PrecisionAttr), EqAttrConstraint(NoneAttr())))))
"""An operand of conv2d or dense: a cvm tensor, or the same packed (`cvm_sched.pack`: i16, i8 or ui8, no
precision; the verifier then checks nothing against it)."""


def tensor_type(shape: Sequence[int], precision: int | None) -> TensorType[IntegerType]:
    """`tensor<shape x i32, #cvm.prec<precision>>` (no encoding when precision is None)."""
    return TensorType(i32, shape, NoneAttr() if precision is None else PrecisionAttr(precision))


def tensor_shape(t: Attribute) -> rules.Shape | None:
    """The static shape of a cvm tensor type, or None when a dim is dynamic or it is no tensor."""
    if not isinstance(t, TensorType):
        return None
    shape = t.get_shape()
    return None if any(d < 0 for d in shape) else shape


def tensor_precision(t: Attribute) -> int | None:
    """The precision of a cvm tensor type, or None when it has none."""
    if isinstance(t, TensorType) and isinstance(t.encoding, PrecisionAttr):
        return t.encoding.precision.data
    return None


# ---------------------------------------------------------------------------------------------------------
# Properties <-> cvm_rules attributes: one table, driven by OP_ATTRS kinds
# ---------------------------------------------------------------------------------------------------------

I64Attr = IntegerAttr[I64]
I64ArrayAttr = DenseArrayBase[I64]

_KINDS: dict[str, tuple[Callable[[Any], Attribute], Callable[[Any], Any]]] = {
    # kind of OP_ATTRS: (python value -> property, property -> python value)
    "int": (lambda v: IntegerAttr(v, i64), lambda a: a.value.data),
    "opt_int": (lambda v: IntegerAttr(v, i64), lambda a: a.value.data),
    "bool": (IntegerAttr.from_bool, lambda a: bool(a.value.data)),
    "ints": (lambda v: DenseArrayBase.from_list(i64, tuple(v)), lambda a: tuple(a.get_values())),
    "str": (StringAttr, lambda a: a.data),
}


def cvm_attrs(op: CvmOperator) -> rules.Attrs:
    """The `cvm_rules` attribute dict of an operator: its properties, with defaults for those left out."""
    attrs: rules.Attrs = {}
    for spec in rules.OP_ATTRS[op.op_name]:
        prop = op.properties.get(spec.name)
        attrs[spec.name] = spec.default if prop is None else _KINDS[spec.kind][1](prop)
    return attrs


def cvm_properties(op_name: str, attrs: Mapping[str, Any]) -> dict[str, Attribute]:
    """The properties of an operator for a `cvm_rules` attribute dict (values equal to the default left out)."""
    props: dict[str, Attribute] = {}
    for spec in rules.OP_ATTRS[op_name]:
        if spec.name in attrs and attrs[spec.name] != spec.default:
            props[spec.name] = _KINDS[spec.kind][0](attrs[spec.name])
    return props


# ---------------------------------------------------------------------------------------------------------
# The generic operator
# ---------------------------------------------------------------------------------------------------------


PASS_ATTRIBUTES = {
    "cvm.gas": "an integer: the operator's gas (`cvm-gas`)",
}
"""The discardable attributes the passes write on cvm operators: declared here, each verified by
`verify_pass_attribute`; no other attribute is allowed."""


def verify_pass_attribute(key: str, value: Attribute) -> None:
    """Raise unless `value` is what `PASS_ATTRIBUTES` says attribute `key` holds."""
    if not (isinstance(value, IntegerAttr) and value.value.data >= 0):
        raise VerifyException(f"expected '{key}' to be {PASS_ATTRIBUTES[key]} (non-negative), got {value}")


class CvmOperator(IRDLOperation):
    """Base of the 37 CVM operators: one generic verifier, driven by `cvm_rules.infer`."""

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure())
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    node_name = opt_prop_def(StringAttr, prop_name="name")

    @property
    def op_name(self) -> str:
        """The operator's name in `cvm_rules` and in model files: `conv2d` for `cvm.conv2d`."""
        return self.name[4:]

    def verify_(self) -> None:
        for key, value in self.attributes.items():
            if key in PASS_ATTRIBUTES:
                verify_pass_attribute(key, value)
            else:
                known = [s.name for s in rules.OP_ATTRS[self.op_name]] + sorted(PASS_ATTRIBUTES)
                raise VerifyException(f"unknown attribute {key!r}, expected one of {known}")
        types = [v.type for v in self.operands]
        shapes = [s for s in map(tensor_shape, types) if s is not None]
        precisions = [p for p in map(tensor_precision, types) if p is not None]
        if len(shapes) < len(types) or len(precisions) < len(types):
            return  # an operand is not inferred yet: nothing to check against
        try:
            sig = rules.infer(self.op_name, cvm_attrs(self), shapes, precisions)
        except CVMError as e:
            raise VerifyException(str(e)) from e
        for i, (res, shape, prec) in enumerate(zip(self.results, sig.shapes, sig.precisions)):
            got = cast(TensorType[IntegerType], res.type).get_shape()  # dynamic dims (-1) match any size
            if len(got) != len(shape) or any(g not in (DYNAMIC_INDEX, d) for g, d in zip(got, shape)):
                dims = ", ".join("?" if g == DYNAMIC_INDEX else str(g) for g in got)
                raise VerifyException(f"expected result {i} of shape {list(shape)}, got [{dims}]")
            got_prec = tensor_precision(res.type)
            if got_prec is not None and got_prec != prec:
                raise VerifyException(f"expected result {i} of precision {prec}, got {got_prec}")


def _operand() -> Any:
    return operand_def(CvmTensorConstr)


def _result() -> Any:
    return result_def(CvmTensorConstr)


# ---------------------------------------------------------------------------------------------------------
# Neural network operators
# ---------------------------------------------------------------------------------------------------------


@irdl_op_definition
class Conv2dOp(CvmOperator):
    """2-D convolution, NCHW data with OIHW weights, zero padding, optional bias.

    Y[n, o, y, x] = bias[o] + sum_{c, i, j} X[n, g*C/G + c, y*SH - PH + i*DH, x*SW - PW + j*DW] * W[o, c, i, j]
    (g = o / (OC/G)); precision p_data + p_weight + bitlen(C/G * KH * KW), with bias max(that, p_bias) + 1.

        %y = cvm.conv2d %x, %w, %b {channels = 4 : i64, kernel_size = array<i64: 3, 3>}
             : (tensor<1x3x8x8xi32, #cvm.prec<8>>, tensor<4x3x3x3xi32, #cvm.prec<8>>, tensor<4xi32, #cvm.prec<8>>)
             -> tensor<1x4x6x6xi32, #cvm.prec<22>>
    """

    name = "cvm.conv2d"
    data = operand_def(DotOperandConstr)
    weight = operand_def(DotOperandConstr)
    bias = opt_operand_def(CvmTensorConstr)
    result = _result()
    channels = prop_def(I64Attr)
    kernel_size = prop_def(I64ArrayAttr)
    strides = opt_prop_def(I64ArrayAttr)
    padding = opt_prop_def(I64ArrayAttr)
    dilation = opt_prop_def(I64ArrayAttr)
    groups = opt_prop_def(I64Attr)
    layout = opt_prop_def(StringAttr)
    kernel_layout = opt_prop_def(StringAttr)
    out_layout = opt_prop_def(StringAttr)
    out_dtype = opt_prop_def(StringAttr)
    use_bias = opt_prop_def(BoolAttr)


@irdl_op_definition
class DenseOp(CvmOperator):
    """Fully connected layer: data times the transposed weight, plus an optional bias.

    Y[m, u] = bias[u] + sum_k X[m, k] * W[u, k]; precision p_data + p_weight + bitlen(K), with bias
    max(that, p_bias) + 1.

        %y = cvm.dense %x, %w {units = 10 : i64, use_bias = false}
             : (tensor<1x64xi32, #cvm.prec<8>>, tensor<10x64xi32, #cvm.prec<8>>) -> tensor<1x10xi32, #cvm.prec<23>>
    """

    name = "cvm.dense"
    data = operand_def(DotOperandConstr)
    weight = operand_def(DotOperandConstr)
    bias = opt_operand_def(CvmTensorConstr)
    result = _result()
    units = prop_def(I64Attr)
    use_bias = opt_prop_def(BoolAttr)


@irdl_op_definition
class ReluOp(CvmOperator):
    """Rectified linear unit.

    y = max(x, 0); precision p_x.

        %y = cvm.relu %x : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
    """

    name = "cvm.relu"
    data = _operand()
    result = _result()


@irdl_op_definition
class MaxPool2dOp(CvmOperator):
    """2-D max pooling over NCHW data; padding cells count as INT32_MIN.

    Y[n, c, y, x] = max_{i, j} X[n, c, y*SH - PH + i, x*SW - PW + j]; OH = (H + 2PH - PSH) / SH + 1 (ceil_mode
    rounds up); precision p_x.

        %y = cvm.max_pool2d %x {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>}
             : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x4x4xi32, #cvm.prec<8>>
    """

    name = "cvm.max_pool2d"
    data = _operand()
    result = _result()
    pool_size = prop_def(I64ArrayAttr)
    strides = opt_prop_def(I64ArrayAttr)
    padding = opt_prop_def(I64ArrayAttr)
    layout = opt_prop_def(StringAttr)
    ceil_mode = opt_prop_def(BoolAttr)


@irdl_op_definition
class UpsamplingOp(CvmOperator):
    """Nearest-neighbour upsampling of NCHW data by an integer scale.

    Y[n, c, y, x] = X[n, c, y / scale, x / scale]; precision p_x.

        %y = cvm.upsampling %x {scale = 2 : i64}
             : (tensor<1x4x8x8xi32, #cvm.prec<8>>) -> tensor<1x4x16x16xi32, #cvm.prec<8>>
    """

    name = "cvm.upsampling"
    data = _operand()
    result = _result()
    scale = prop_def(I64Attr)
    layout = opt_prop_def(StringAttr)
    method = opt_prop_def(StringAttr)


@irdl_op_definition
class GetValidCountsOp(CvmOperator):
    """Count and compact the boxes whose score passes a threshold.

    count[b] = #{i : X[b, i, 1] > score_threshold}; boxes[b] = those rows in order, then rows of -1;
    precisions NP(N * K) and p_x.

        %count, %boxes = cvm.get_valid_counts %x {score_threshold = 50 : i64}
             : (tensor<2x4x6xi32, #cvm.prec<8>>) -> (tensor<2xi32, #cvm.prec<6>>, tensor<2x4x6xi32, #cvm.prec<8>>)
    """

    name = "cvm.get_valid_counts"
    data = _operand()
    count = _result()
    boxes = _result()
    score_threshold = opt_prop_def(I64Attr)


@irdl_op_definition
class NonMaxSuppressionOp(CvmOperator):
    """Non-maximum suppression of [id, score, x1, y1, x2, y2] boxes, per batch.

    Keep the boxes in descending score order unless a kept box of the same class (any class with
    force_suppress) has iou * 100 >= iou_threshold; the rest become rows of -1; precision p_data.

        %y = cvm.non_max_suppression %boxes, %count {iou_threshold = 50 : i64}
             : (tensor<1x4x6xi32, #cvm.prec<8>>, tensor<1xi32, #cvm.prec<6>>) -> tensor<1x4x6xi32, #cvm.prec<8>>
    """

    name = "cvm.non_max_suppression"
    data = _operand()
    valid_count = _operand()
    result = _result()
    iou_threshold = opt_prop_def(I64Attr)
    force_suppress = opt_prop_def(BoolAttr)
    top_k = opt_prop_def(I64Attr)
    max_output_size = opt_prop_def(I64Attr)
    coord_start = opt_prop_def(I64Attr)
    score_index = opt_prop_def(I64Attr)
    id_index = opt_prop_def(I64Attr)
    return_indices = opt_prop_def(BoolAttr)
    invalid_to_bottom = opt_prop_def(BoolAttr)


# ---------------------------------------------------------------------------------------------------------
# Element-wise operators
# ---------------------------------------------------------------------------------------------------------


@irdl_op_definition
class AbsOp(CvmOperator):
    """Absolute value.

    y = |x|; precision p_x.

        %y = cvm.abs %x : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
    """

    name = "cvm.abs"
    data = _operand()
    result = _result()


@irdl_op_definition
class NegativeOp(CvmOperator):
    """Negation.

    y = -x; precision p_x.

        %y = cvm.negative %x : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
    """

    name = "cvm.negative"
    data = _operand()
    result = _result()


@irdl_op_definition
class CvmPrecisionOp(CvmOperator):
    """The precision each value needs.

    y = max(1, bitlen(|x|)); precision 6.

        %y = cvm.cvm_precision %x : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<6>>
    """

    name = "cvm.cvm_precision"
    data = _operand()
    result = _result()


@irdl_op_definition
class ElemwiseAddOp(CvmOperator):
    """Element-wise sum of two tensors of the same shape.

    y = a + b (wrapping int32); precision max(p_a, p_b) + 1.

        %y = cvm.elemwise_add %a, %b
             : (tensor<4xi32, #cvm.prec<8>>, tensor<4xi32, #cvm.prec<6>>) -> tensor<4xi32, #cvm.prec<9>>
    """

    name = "cvm.elemwise_add"
    lhs = _operand()
    rhs = _operand()
    result = _result()


@irdl_op_definition
class ElemwiseSubOp(CvmOperator):
    """Element-wise difference of two tensors of the same shape.

    y = a - b (wrapping int32); precision max(p_a, p_b) + 1.

        %y = cvm.elemwise_sub %a, %b
             : (tensor<4xi32, #cvm.prec<8>>, tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<9>>
    """

    name = "cvm.elemwise_sub"
    lhs = _operand()
    rhs = _operand()
    result = _result()


@irdl_op_definition
class ClipOp(CvmOperator):
    """Saturate to [a_min, a_max].

    y = min(max(x, a_min), a_max); precision NP(max(|a_min|, |a_max|)).

        %y = cvm.clip %x {a_min = -127 : i64, a_max = 127 : i64}
             : (tensor<4xi32, #cvm.prec<16>>) -> tensor<4xi32, #cvm.prec<9>>
    """

    name = "cvm.clip"
    data = _operand()
    result = _result()
    a_min = prop_def(I64Attr)
    a_max = prop_def(I64Attr)


@irdl_op_definition
class CvmClipOp(CvmOperator):
    """Saturate to the range of a precision.

    y = min(max(x, -(2^(p-1) - 1)), 2^(p-1) - 1) with p = precision; precision p.

        %y = cvm.cvm_clip %x {precision = 8 : i64} : (tensor<4xi32, #cvm.prec<16>>) -> tensor<4xi32, #cvm.prec<8>>
    """

    name = "cvm.cvm_clip"
    data = _operand()
    result = _result()
    precision = prop_def(I64Attr)
    is_sign = opt_prop_def(BoolAttr)


@irdl_op_definition
class CvmRightShiftOp(CvmOperator):
    """Arithmetic right shift rounding half up, then saturate to a precision.

    y = cvm_clip(((x >> (shift_bit - 1)) + 1) >> 1, precision); precision `precision`.

        %y = cvm.cvm_right_shift %x {precision = 8 : i64, shift_bit = 7 : i64}
             : (tensor<4xi32, #cvm.prec<16>>) -> tensor<4xi32, #cvm.prec<8>>
    """

    name = "cvm.cvm_right_shift"
    data = _operand()
    result = _result()
    precision = prop_def(I64Attr)
    is_sign = opt_prop_def(BoolAttr)
    shift_bit = prop_def(I64Attr)


@irdl_op_definition
class CvmLeftShiftOp(CvmOperator):
    """Left shift, then saturate to a precision.

    y = cvm_clip(x << shift_bit, precision); precision `precision` (p_x + shift_bit must be <= 32).

        %y = cvm.cvm_left_shift %x {precision = 12 : i64, shift_bit = 4 : i64}
             : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<12>>
    """

    name = "cvm.cvm_left_shift"
    data = _operand()
    result = _result()
    precision = prop_def(I64Attr)
    is_sign = opt_prop_def(BoolAttr)
    shift_bit = prop_def(I64Attr)


# ---------------------------------------------------------------------------------------------------------
# Shape operators
# ---------------------------------------------------------------------------------------------------------


@irdl_op_definition
class RepeatOp(CvmOperator):
    """Repeat each element along an axis.

    Y[..., i, ...] = X[..., i / repeats, ...] on `axis`; precision p_x.

        %y = cvm.repeat %x {repeats = 2 : i64} : (tensor<3x2xi32, #cvm.prec<8>>) -> tensor<6x2xi32, #cvm.prec<8>>
    """

    name = "cvm.repeat"
    data = _operand()
    result = _result()
    repeats = prop_def(I64Attr)
    axis = opt_prop_def(I64Attr)


@irdl_op_definition
class TileOp(CvmOperator):
    """Tile a tensor; shapes and reps are right-aligned.

    Y[i_0, ..., i_r] = X[i_0 mod d_0, ..., i_r mod d_r]; precision p_x.

        %y = cvm.tile %x {reps = array<i64: 2, 1>} : (tensor<3x2xi32, #cvm.prec<8>>) -> tensor<6x2xi32, #cvm.prec<8>>
    """

    name = "cvm.tile"
    data = _operand()
    result = _result()
    reps = opt_prop_def(I64ArrayAttr)


@irdl_op_definition
class FlattenOp(CvmOperator):
    """Collapse every dim but the first.

    (d0, d1, ..., dn) -> (d0, d1 * ... * dn), 1-D input gives (d0, 1); precision p_x.

        %y = cvm.flatten %x : (tensor<2x3x4xi32, #cvm.prec<8>>) -> tensor<2x12xi32, #cvm.prec<8>>
    """

    name = "cvm.flatten"
    data = _operand()
    result = _result()


@irdl_op_definition
class ConcatenateOp(CvmOperator):
    """Join tensors along an axis.

    Y = [X_0, X_1, ...] on `axis`; precision max(p_i).

        %y = cvm.concatenate %a, %b {axis = 0 : i64}
             : (tensor<1x4xi32, #cvm.prec<8>>, tensor<2x4xi32, #cvm.prec<5>>) -> tensor<3x4xi32, #cvm.prec<8>>
    """

    name = "cvm.concatenate"
    inputs = var_operand_def(CvmTensorConstr)
    result = _result()
    axis = opt_prop_def(I64Attr)


@irdl_op_definition
class ExpandDimsOp(CvmOperator):
    """Insert dims of size 1.

    (d0, ..., dn) -> (d0, ..., d_{axis-1}, 1 x num_newaxis, d_axis, ...); a negative axis means axis + n + 1;
    precision p_x.

        %y = cvm.expand_dims %x {axis = 1 : i64} : (tensor<3x4xi32, #cvm.prec<8>>) -> tensor<3x1x4xi32, #cvm.prec<8>>
    """

    name = "cvm.expand_dims"
    data = _operand()
    result = _result()
    axis = prop_def(I64Attr)
    num_newaxis = opt_prop_def(I64Attr)


@irdl_op_definition
class ReshapeOp(CvmOperator):
    """Reshape with MXNet's codes (0 copy, -1 infer, -2 copy the rest, -3 merge two, -4 split one).

    Same elements in row-major order; precision p_x.

        %y = cvm.reshape %x {shape = array<i64: -1, 4>}
             : (tensor<2x2x4xi32, #cvm.prec<8>>) -> tensor<4x4xi32, #cvm.prec<8>>
    """

    name = "cvm.reshape"
    data = _operand()
    result = _result()
    shape = prop_def(I64ArrayAttr)


@irdl_op_definition
class SqueezeOp(CvmOperator):
    """Drop dims of size 1 (those listed in `axis`, or all); an empty result is (1,).

    Same elements; precision p_x.

        %y = cvm.squeeze %x {axis = array<i64: 0>} : (tensor<1x4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
    """

    name = "cvm.squeeze"
    data = _operand()
    result = _result()
    axis = opt_prop_def(I64ArrayAttr)


@irdl_op_definition
class TransposeOp(CvmOperator):
    """Permute the dims (reverse them when `axes` is empty).

    Y[i_axes[0], ..., i_axes[n]] = X[i_0, ..., i_n]; precision p_x.

        %y = cvm.transpose %x {axes = array<i64: 1, 0>}
             : (tensor<2x3xi32, #cvm.prec<8>>) -> tensor<3x2xi32, #cvm.prec<8>>
    """

    name = "cvm.transpose"
    data = _operand()
    result = _result()
    axes = opt_prop_def(I64ArrayAttr)


@irdl_op_definition
class StridedSliceOp(CvmOperator):
    """Strided slice; negative begin/end count from the end, both are clamped to the dim.

    Y[i] = X[begin + i * stride] per axis, len = ceil(|end - begin| / |stride|); precision p_x.

        %y = cvm.strided_slice %x {begin = array<i64: 1>, end = array<i64: 3>}
             : (tensor<4x2xi32, #cvm.prec<8>>) -> tensor<2x2xi32, #cvm.prec<8>>
    """

    name = "cvm.strided_slice"
    data = _operand()
    result = _result()
    begin = opt_prop_def(I64ArrayAttr)
    end = opt_prop_def(I64ArrayAttr)
    stride = opt_prop_def(I64ArrayAttr)


@irdl_op_definition
class TakeOp(CvmOperator):
    """Gather by indices along an axis (from the flattened data when `axis` is absent); indices are clipped.

    Y[..., j, ...] = X[..., clip(I[j], 0, len - 1), ...]; precision p_data.

        %y = cvm.take %x, %i {axis = 0 : i64}
             : (tensor<5x2xi32, #cvm.prec<8>>, tensor<3xi32, #cvm.prec<4>>) -> tensor<3x2xi32, #cvm.prec<8>>
    """

    name = "cvm.take"
    data = _operand()
    indices = _operand()
    result = _result()
    axis = opt_prop_def(I64Attr)


@irdl_op_definition
class CvmLutOp(CvmOperator):
    """Table look-up: each input value indexes the table.

    y = table[clip(x, 0, in_dim - 1)]; precision p_table.

        %y = cvm.cvm_lut %x, %t {in_dim = 16 : i64}
             : (tensor<4xi32, #cvm.prec<5>>, tensor<16xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
    """

    name = "cvm.cvm_lut"
    data = _operand()
    table = _operand()
    result = _result()
    in_dim = prop_def(I64Attr)


@irdl_op_definition
class SliceLikeOp(CvmOperator):
    """Slice the leading part of data to the shape of another tensor (on `axis`, or all axes).

    Y[i] = X[i] for i < shape_like.shape on those axes; precision p_data.

        %y = cvm.slice_like %x, %s
             : (tensor<4x4xi32, #cvm.prec<8>>, tensor<2x3xi32, #cvm.prec<8>>) -> tensor<2x3xi32, #cvm.prec<8>>
    """

    name = "cvm.slice_like"
    data = _operand()
    shape_like = _operand()
    result = _result()
    axis = opt_prop_def(I64ArrayAttr)


@irdl_op_definition
class WhereOp(CvmOperator):
    """Select between two tensors (element-wise, or by rows with a 1-D condition).

    y = cond != 0 ? x : y; precision p_cond (as cvm-runtime computes it).

        %r = cvm.where %c, %x, %y
             : (tensor<4xi32, #cvm.prec<2>>, tensor<4xi32, #cvm.prec<8>>, tensor<4xi32, #cvm.prec<8>>)
             -> tensor<4xi32, #cvm.prec<2>>
    """

    name = "cvm.where"
    condition = _operand()
    x = _operand()
    y = _operand()
    result = _result()


@irdl_op_definition
class SumOp(CvmOperator):
    """Sum over axes (all when `axis` is empty; the others with `exclude`).

    Y = sum over the reduced axes; precision p_x + bitlen(in_size / out_size).

        %y = cvm.sum %x {axis = array<i64: 1>} : (tensor<2x8xi32, #cvm.prec<8>>) -> tensor<2xi32, #cvm.prec<12>>
    """

    name = "cvm.sum"
    data = _operand()
    result = _result()
    axis = opt_prop_def(I64ArrayAttr)
    keepdims = opt_prop_def(BoolAttr)
    exclude = opt_prop_def(BoolAttr)
    dtype = opt_prop_def(StringAttr)


@irdl_op_definition
class MaxOp(CvmOperator):
    """Maximum over axes (all when `axis` is empty; the others with `exclude`).

    Y = max over the reduced axes (from 0 when `axis` is empty and not `exclude`); precision p_x.

        %y = cvm.max %x {axis = array<i64: 1>} : (tensor<2x8xi32, #cvm.prec<8>>) -> tensor<2xi32, #cvm.prec<8>>
    """

    name = "cvm.max"
    data = _operand()
    result = _result()
    axis = opt_prop_def(I64ArrayAttr)
    keepdims = opt_prop_def(BoolAttr)
    exclude = opt_prop_def(BoolAttr)
    dtype = opt_prop_def(StringAttr)


# ---------------------------------------------------------------------------------------------------------
# Broadcasting binary operators
# ---------------------------------------------------------------------------------------------------------


@irdl_op_definition
class BroadcastAddOp(CvmOperator):
    """Sum with numpy broadcasting.

    y = a + b; precision max(p_a, p_b) + 1.

        %y = cvm.broadcast_add %a, %b
             : (tensor<2x3xi32, #cvm.prec<8>>, tensor<3xi32, #cvm.prec<8>>) -> tensor<2x3xi32, #cvm.prec<9>>
    """

    name = "cvm.broadcast_add"
    lhs = _operand()
    rhs = _operand()
    result = _result()


@irdl_op_definition
class BroadcastSubOp(CvmOperator):
    """Difference with numpy broadcasting.

    y = a - b; precision max(p_a, p_b) + 1.

        %y = cvm.broadcast_sub %a, %b
             : (tensor<2x3xi32, #cvm.prec<8>>, tensor<3xi32, #cvm.prec<8>>) -> tensor<2x3xi32, #cvm.prec<9>>
    """

    name = "cvm.broadcast_sub"
    lhs = _operand()
    rhs = _operand()
    result = _result()


@irdl_op_definition
class BroadcastMulOp(CvmOperator):
    """Product with numpy broadcasting.

    y = a * b; precision p_a + p_b.

        %y = cvm.broadcast_mul %a, %b
             : (tensor<2x3xi32, #cvm.prec<8>>, tensor<3xi32, #cvm.prec<8>>) -> tensor<2x3xi32, #cvm.prec<16>>
    """

    name = "cvm.broadcast_mul"
    lhs = _operand()
    rhs = _operand()
    result = _result()


@irdl_op_definition
class BroadcastMaxOp(CvmOperator):
    """Maximum with numpy broadcasting.

    y = max(a, b); precision max(p_a, p_b).

        %y = cvm.broadcast_max %a, %b
             : (tensor<2x3xi32, #cvm.prec<8>>, tensor<3xi32, #cvm.prec<4>>) -> tensor<2x3xi32, #cvm.prec<8>>
    """

    name = "cvm.broadcast_max"
    lhs = _operand()
    rhs = _operand()
    result = _result()


@irdl_op_definition
class BroadcastDivOp(CvmOperator):
    """Truncating division with numpy broadcasting; division by zero gives 0.

    y = b == 0 ? 0 : trunc(a / b); precision p_a.

        %y = cvm.broadcast_div %a, %b
             : (tensor<2x3xi32, #cvm.prec<8>>, tensor<3xi32, #cvm.prec<4>>) -> tensor<2x3xi32, #cvm.prec<8>>
    """

    name = "cvm.broadcast_div"
    lhs = _operand()
    rhs = _operand()
    result = _result()


@irdl_op_definition
class BroadcastGreaterOp(CvmOperator):
    """Comparison with numpy broadcasting.

    y = a > b ? 1 : 0; precision p_a.

        %y = cvm.broadcast_greater %a, %b
             : (tensor<2x3xi32, #cvm.prec<8>>, tensor<3xi32, #cvm.prec<4>>) -> tensor<2x3xi32, #cvm.prec<8>>
    """

    name = "cvm.broadcast_greater"
    lhs = _operand()
    rhs = _operand()
    result = _result()


# ---------------------------------------------------------------------------------------------------------
# Params
# ---------------------------------------------------------------------------------------------------------


@irdl_op_definition
class ParamOp(IRDLOperation):
    """A named constant tensor of the model (a params file entry); its values must fit its precision.

    y = value, with |value| <= 2^(p-1) - 1.

        %w = cvm.param "w" dense<[1, -2, 3]> : tensor<3xi32, #cvm.prec<3>>
    """

    name = "cvm.param"

    T: ClassVar = VarConstraint("T", PreciseTensorConstr)

    param_name = prop_def(StringAttr, prop_name="name")
    value = prop_def(ParamAttrConstraint(DenseIntOrFPElementsAttr, (T, AnyAttr())))
    result = result_def(T)

    traits = traits_def(Pure())
    assembly_format = "$name attr-dict $value"

    def __init__(self, name: str, value: np.ndarray, precision: int):
        """A param of these int32 values (any integer array that fits int32)."""
        data = np.ascontiguousarray(value, dtype="<i4")
        t = tensor_type(data.shape, precision)
        dense = DenseIntOrFPElementsAttr(t, BytesAttr(data.tobytes()))
        super().__init__(result_types=[t], properties={"name": StringAttr(name), "value": dense})

    def array(self) -> np.ndarray:
        """The values as an int32 array of the result's shape."""
        return np.frombuffer(self.value.data.data, dtype="<i4").reshape(self.value.get_shape())

    def verify_(self) -> None:
        prec = tensor_precision(self.result.type)
        assert prec is not None  # the type constraint holds
        try:
            rules.check_values(self.array(), prec)
        except CVMError as e:
            raise VerifyException(str(e)) from None


CVM_OPERATORS: tuple[type[CvmOperator], ...] = (
    Conv2dOp, DenseOp, ReluOp, MaxPool2dOp, UpsamplingOp, GetValidCountsOp, NonMaxSuppressionOp,
    AbsOp, NegativeOp, CvmPrecisionOp, ElemwiseAddOp, ElemwiseSubOp, ClipOp, CvmClipOp, CvmRightShiftOp,
    CvmLeftShiftOp, RepeatOp, TileOp, FlattenOp, ConcatenateOp, ExpandDimsOp, ReshapeOp, SqueezeOp, TransposeOp,
    StridedSliceOp, TakeOp, CvmLutOp, SliceLikeOp, WhereOp, SumOp, MaxOp,
    BroadcastAddOp, BroadcastSubOp, BroadcastMulOp, BroadcastMaxOp, BroadcastDivOp, BroadcastGreaterOp,
)

OPERATOR_CLASSES: dict[str, type[CvmOperator]] = {cls.name[4:]: cls for cls in CVM_OPERATORS}
"""The op class of each `cvm_rules` operator name."""


def create_operator(op_name: str, operands: Sequence[SSAValue], attrs: Mapping[str, Any],
                    result_types: Sequence[Attribute], node_name: str | None = None) -> CvmOperator:
    """Build the op of a `cvm_rules` operator from its operands, typed attributes and result types."""
    props = cvm_properties(op_name, attrs)
    if node_name is not None:
        props = {"name": StringAttr(node_name), **props}
    return OPERATOR_CLASSES[op_name].create(operands=operands, result_types=result_types, properties=props)


Cvm = Dialect("cvm", [*CVM_OPERATORS, ParamOp], [PrecisionAttr])
