"""The `taskgraph` dialect: Task IR, the dataflow graph of a brain-inspired many-core chip.

A `taskgraph.graph` holds task blocks and the edges between them, as the `.task` files of
openBII/BiMap do (see `cvmc.runtime.frontend.taskir_files` for the file side):

- storage blocks (`si`, `sic`, `sic2d`, `sifc`, `sw`, `sw2d`, `swfc`, `sb`) hold or forward data,
- compute blocks (`cadd`, `cavg`, `cvvh`, `cvm`, `cc`, `cc2d`, `cax`, `cvs`, `ccmpb`, `ccmps`, `clut`,
  `clif`) compute one output from their inputs,
- `input` and `output` blocks are the graph's ports.

Every block has an id, a precision (for a compute block, the precision of its output), a shape over the
dimensions [y, x, f, r, ky, kx, iy, ix] (an absent dimension reads 0), input and output edge clusters
and attributes. A cluster is one input or output of a block: a shape and interfaces, each a box
(position, size) of the cluster that one edge reads or writes. An edge copies the box of its source
interface into the box of its destination interface through a chain of rearranges.

    taskgraph.graph {
      taskgraph.sb 2 INT_32 <f = 6> out [[2]] data <INT_32 dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi32>>
      taskgraph.cc2d 3 INT_32 <y = 28, x = 28, f = 6, r = 1, ky = 5, kx = 5, iy = 32, ix = 32>
          in [[0], [1], [2]] out [[27]] attrs [KERNEL_X = 5 : INT_32, KERNEL_Y = 5 : INT_32] bias VECTOR
      taskgraph.edge 2 from 2 to 3
    }

Fields keep the presence they have in a file (a dimension written as 0, an attribute without a
precision), so a file imports and exports back to an equal message.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IntAttr,
    IntegerType,
    NoneAttr,
    Signedness,
    StringAttr,
    TensorType,
    f32,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, Region, SpacedOpaqueSyntaxAttribute
from xdsl.ir import Block as IRBlock
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, NoTerminator
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from cvmc.dialects import cvm_rules
from cvmc.dialects.narrow import is_dense_elements, is_int_attr

# Shape limits, those of CVM models (spec/cvm-runtime.md section 3): a dimension at most 2^24, a tensor (a
# storage block's values, a cluster) at most 2^30 values, the storage blocks of a graph at most 2^40 bytes.
MAX_DIM, MAX_SIZE, MAX_MEMORY = cvm_rules.MAX_DIM, cvm_rules.MAX_SIZE, cvm_rules.MAX_MEMORY

# ---------------------------------------------------------------------------------------------------------
# Enumerations (spellings and order as in the `.task` schema)
# ---------------------------------------------------------------------------------------------------------


class Precision(StrEnum):
    INT_8 = "INT_8"
    UINT_8 = "UINT_8"
    INT_16 = "INT_16"
    UINT_16 = "UINT_16"
    INT_32 = "INT_32"
    UINT_32 = "UINT_32"
    FLOAT_16 = "FLOAT_16"
    FLOAT_32 = "FLOAT_32"
    TERNARY = "TERNARY"
    INT_28 = "INT_28"
    UINT_4 = "UINT_4"
    INT_9 = "INT_9"


# The integer range of each precision; floats have none.
PRECISION_RANGE: dict[Precision, tuple[int, int]] = {
    Precision.INT_8: (-(2**7), 2**7 - 1),
    Precision.UINT_8: (0, 2**8 - 1),
    Precision.INT_16: (-(2**15), 2**15 - 1),
    Precision.UINT_16: (0, 2**16 - 1),
    Precision.INT_32: (-(2**31), 2**31 - 1),
    Precision.UINT_32: (0, 2**32 - 1),
    Precision.TERNARY: (-1, 1),
    Precision.INT_28: (-(2**27), 2**27 - 1),
    Precision.UINT_4: (0, 2**4 - 1),
    Precision.INT_9: (-(2**8), 2**8 - 1),
}

# Bits one element takes in storage.
PRECISION_BITS: dict[Precision, int] = {
    Precision.INT_8: 8,
    Precision.UINT_8: 8,
    Precision.INT_16: 16,
    Precision.UINT_16: 16,
    Precision.INT_32: 32,
    Precision.UINT_32: 32,
    Precision.FLOAT_16: 16,
    Precision.FLOAT_32: 32,
    Precision.TERNARY: 2,
    Precision.INT_28: 32,
    Precision.UINT_4: 4,
    Precision.INT_9: 16,
}


class BiasType(StrEnum):
    VECTOR = "VECTOR"
    CONSTANT = "CONSTANT"


class ParamKind(StrEnum):
    """The attribute types of a block (`AttributeType` in the schema)."""

    KERNEL_X = "KERNEL_X"
    KERNEL_Y = "KERNEL_Y"
    STRIDE_X = "STRIDE_X"
    STRIDE_Y = "STRIDE_Y"
    PAD_UP = "PAD_UP"
    PAD_DOWN = "PAD_DOWN"
    PAD_LEFT = "PAD_LEFT"
    PAD_RIGHT = "PAD_RIGHT"
    CMP = "CMP"
    CONSTANT_A = "CONSTANT_A"
    CONSTANT_B = "CONSTANT_B"
    DILATION_X = "DILATION_X"
    DILATION_Y = "DILATION_Y"
    BIT_SHIGT_NUM = "BIT_SHIGT_NUM"
    VTH0 = "VTH0"
    VTH_ALPHA = "VTH_ALPHA"
    VTH_BETA = "VTH_BETA"
    VTH_INCRE = "VTH_INCRE"
    VR = "VR"
    VL = "VL"
    VLEAKY_ALPHA = "VLEAKY_ALPHA"
    VLEAKY_BETA = "VLEAKY_BETA"
    DV = "DV"
    REF_LEN = "REF_LEN"
    TW_CNT = "TW_CNT"
    VINIT = "VINIT"
    TW_LEN = "TW_LEN"
    SEED = "SEED"
    LUT_DW = "LUT_DW"
    VTH_ADPT_EN = "VTH_ADPT_EN"
    VLEAKY_ADPT_EN = "VLEAKY_ADPT_EN"
    TW_EN = "TW_EN"
    RESET_MODE = "RESET_MODE"
    FIRE_TYPE = "FIRE_TYPE"
    VM_CONST_EN = "VM_CONST_EN"
    VM_CONST = "VM_CONST"
    VTHETA_CONST_EN = "VTHETA_CONST_EN"
    VTHETA_CONST = "VTHETA_CONST"


class RearrangeKind(StrEnum):
    IDENTITY = "IDENTITY"
    RESHAPE = "RESHAPE"
    PERMUTE = "PERMUTE"
    ROTATE = "ROTATE"
    SHIFT = "SHIFT"
    SCALE = "SCALE"
    SHEAR = "SHEAR"
    REFLECT = "REFLECT"
    AFFINE = "AFFINE"
    PROJECT = "PROJECT"
    SHUFFLE = "SHUFFLE"


@irdl_attr_definition
class PrecisionAttr(EnumAttribute[Precision], SpacedOpaqueSyntaxAttribute):
    """The precision of a block, a tensor or an attribute: `#taskgraph<precision INT_8>`."""

    name = "taskgraph.precision"


@irdl_attr_definition
class BiasTypeAttr(EnumAttribute[BiasType], SpacedOpaqueSyntaxAttribute):
    """Where a block's bias comes from: an SB input (VECTOR) or the attribute CONSTANT_B (CONSTANT)."""

    name = "taskgraph.bias_type"


@irdl_attr_definition
class ParamKindAttr(EnumAttribute[ParamKind], SpacedOpaqueSyntaxAttribute):
    """The type of a block attribute: `#taskgraph<param_kind KERNEL_X>`."""

    name = "taskgraph.param_kind"


@irdl_attr_definition
class RearrangeKindAttr(EnumAttribute[RearrangeKind], SpacedOpaqueSyntaxAttribute):
    """The type of a data rearrange: `#taskgraph<rearrange_kind RESHAPE>`."""

    name = "taskgraph.rearrange_kind"


# ---------------------------------------------------------------------------------------------------------
# Shapes, clusters, interfaces
# ---------------------------------------------------------------------------------------------------------

# The dimensions of a shape, in the order of data layout (row-major).
DIMS: tuple[str, ...] = ("y", "x", "f", "r", "ky", "kx", "iy", "ix")


def _opt_int(value: int | None) -> IntAttr | NoneAttr:
    return NoneAttr() if value is None else IntAttr(value)


def _int_or_none(attr: Attribute) -> int | None:
    return attr.data if is_int_attr(attr) else None


_T = TypeVar("_T")


def _parse_angle_list(parser: AttrParser, parse_one: Callable[[], object]) -> None:
    """Parse `<a, b, ...>`, possibly empty, calling `parse_one` for each element."""
    parser.parse_punctuation("<")
    if parser.parse_optional_punctuation(">") is None:
        parse_one()
        while parser.parse_optional_punctuation(",") is not None:
            parse_one()
        parser.parse_punctuation(">")


def _parse_square_list(parser: AttrParser, parse_one: Callable[[], _T]) -> list[_T]:
    """Parse `[a, b, ...]`, possibly empty."""
    items: list[_T] = []
    parser.parse_punctuation("[")
    if parser.parse_optional_punctuation("]") is None:
        items.append(parse_one())
        while parser.parse_optional_punctuation(",") is not None:
            items.append(parse_one())
        parser.parse_punctuation("]")
    return items


@irdl_attr_definition
class ShapeAttr(ParametrizedAttribute):
    """Extents over [y, x, f, r, ky, kx, iy, ix] (plus `n_branch` and extra dimensions).

    An absent dimension, or one of extent 0, is not part of the shape. A dimension given in a file
    as 0 stays given (`x = 0`), so the file exports back as it was.

        #taskgraph.shape<y = 28, x = 28, f = 6>
    """

    name = "taskgraph.shape"

    y: IntAttr | NoneAttr
    x: IntAttr | NoneAttr
    f: IntAttr | NoneAttr
    r: IntAttr | NoneAttr
    ky: IntAttr | NoneAttr
    kx: IntAttr | NoneAttr
    iy: IntAttr | NoneAttr
    ix: IntAttr | NoneAttr
    n_branch: IntAttr | NoneAttr
    extra: ArrayAttr[IntAttr]

    @staticmethod
    def get(extra: Sequence[int] = (), **dims: int | None) -> ShapeAttr:
        unknown = set(dims) - set(DIMS) - {"n_branch"}
        if unknown:
            raise ValueError(f"unknown shape dimensions {sorted(unknown)}")
        return ShapeAttr.new(
            [*(_opt_int(dims.get(d)) for d in (*DIMS, "n_branch")), ArrayAttr(IntAttr(e) for e in extra)]
        )

    def dim(self, name: str) -> int:
        """The extent of a dimension (or `n_branch`), 0 when absent."""
        return _int_or_none(getattr(self, name)) or 0

    def given(self) -> dict[str, int]:
        """The dimensions written in the IR (even as 0), in layout order, then `n_branch`."""
        return {d: v for d in (*DIMS, "n_branch") if (v := _int_or_none(getattr(self, d))) is not None}

    def extents(self) -> dict[str, int]:
        """The dimensions that are part of the shape (non-zero), in layout order."""
        return {d: v for d in DIMS if (v := self.dim(d)) != 0}

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        values: dict[str, int] = {}
        extra: list[int] = []

        def one():
            span_name = parser.parse_identifier()
            parser.parse_punctuation("=")
            if span_name == "extra":
                extra.extend(_parse_square_list(parser, parser.parse_integer))
                return
            if span_name not in (*DIMS, "n_branch"):
                parser.raise_error(f"unknown shape dimension '{span_name}', expected one of {DIMS}")
            if span_name in values:
                parser.raise_error(f"shape dimension '{span_name}' given twice")
            values[span_name] = parser.parse_integer(allow_boolean=False)

        _parse_angle_list(parser, one)
        return list(ShapeAttr.get(extra, **values).parameters)

    def print_parameters(self, printer: Printer) -> None:
        items = [f"{d} = {v}" for d, v in self.given().items()]
        if self.extra.data:
            items.append("extra = [" + ", ".join(str(e.data) for e in self.extra.data) + "]")
        printer.print_string("<" + ", ".join(items) + ">")

    def verify(self) -> None:
        for d, v in self.given().items():
            if v < 0:
                raise VerifyException(f"expected shape '{d}' >= 0, got {v}")
            if v > MAX_DIM:
                raise VerifyException(f"expected shape '{d}' <= {MAX_DIM}, got {v}")


@irdl_attr_definition
class InterfaceAttr(ParametrizedAttribute):
    """The box of a cluster that one edge reads or writes: an edge id, then optionally the box.

    Without a position the box starts at 0; without a size it covers the whole cluster.

        #taskgraph.iface<27>
        #taskgraph.iface<5 at <f = 16> size <y = 8, x = 8, f = 16>>
    """

    name = "taskgraph.iface"

    edge: IntAttr
    position: ShapeAttr | NoneAttr
    size: ShapeAttr | NoneAttr

    @staticmethod
    def get(edge: int, position: ShapeAttr | None = None, size: ShapeAttr | None = None) -> InterfaceAttr:
        return InterfaceAttr(IntAttr(edge), position or NoneAttr(), size or NoneAttr())

    @classmethod
    def parse_body(cls, parser: AttrParser) -> InterfaceAttr:
        edge = parser.parse_integer(allow_boolean=False)
        position = size = None
        if parser.parse_optional_keyword("at") is not None:
            position = ShapeAttr.new(ShapeAttr.parse_parameters(parser))
        if parser.parse_optional_keyword("size") is not None:
            size = ShapeAttr.new(ShapeAttr.parse_parameters(parser))
        return InterfaceAttr.get(edge, position, size)

    def print_body(self, printer: Printer) -> None:
        printer.print_string(str(self.edge.data))
        if isinstance(self.position, ShapeAttr):
            printer.print_string(" at ")
            self.position.print_parameters(printer)
        if isinstance(self.size, ShapeAttr):
            printer.print_string(" size ")
            self.size.print_parameters(printer)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        parser.parse_punctuation("<")
        iface = cls.parse_body(parser)
        parser.parse_punctuation(">")
        return list(iface.parameters)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        self.print_body(printer)
        printer.print_string(">")


@irdl_attr_definition
class ClusterAttr(ParametrizedAttribute):
    """One input or output of a block: an optional shape and the interfaces of its edges.

    Without a shape, the cluster has the shape that its block implies.

        #taskgraph.cluster<[0]>
        #taskgraph.cluster<<y = 32, x = 32, f = 128> [0, 1]>
    """

    name = "taskgraph.cluster"

    shape: ShapeAttr | NoneAttr
    interfaces: ArrayAttr[InterfaceAttr]

    @staticmethod
    def get(interfaces: Iterable[InterfaceAttr | int] = (), shape: ShapeAttr | None = None) -> ClusterAttr:
        ifaces = [InterfaceAttr.get(i) if isinstance(i, int) else i for i in interfaces]
        return ClusterAttr(shape or NoneAttr(), ArrayAttr(ifaces))

    @classmethod
    def parse_body(cls, parser: AttrParser) -> ClusterAttr:
        shape = None
        if parser.parse_optional_keyword("shape") is not None:
            shape = ShapeAttr.new(ShapeAttr.parse_parameters(parser))
        interfaces = _parse_square_list(parser, lambda: InterfaceAttr.parse_body(parser))
        return ClusterAttr.get(interfaces, shape)

    def print_body(self, printer: Printer) -> None:
        if isinstance(self.shape, ShapeAttr):
            printer.print_string("shape ")
            self.shape.print_parameters(printer)
            printer.print_string(" ")
        printer.print_string("[")
        for i, iface in enumerate(self.interfaces.data):
            if i:
                printer.print_string(", ")
            iface.print_body(printer)
        printer.print_string("]")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        parser.parse_punctuation("<")
        cluster = cls.parse_body(parser)
        parser.parse_punctuation(">")
        return list(cluster.parameters)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        self.print_body(printer)
        printer.print_string(">")


# ---------------------------------------------------------------------------------------------------------
# Tensors and block attributes
# ---------------------------------------------------------------------------------------------------------

_I8 = IntegerType(8)
_I16 = IntegerType(16)
_I32 = IntegerType(32)
_UI8 = IntegerType(8, Signedness.UNSIGNED)
_UI16 = IntegerType(16, Signedness.UNSIGNED)
_UI32 = IntegerType(32, Signedness.UNSIGNED)

# Element types that hold a precision's values compactly, by container.
_NARROW_SIGNED = {Precision.INT_8: _I8, Precision.TERNARY: _I8, Precision.INT_16: _I16, Precision.INT_9: _I16}
_NARROW_UNSIGNED = {Precision.UINT_8: _UI8, Precision.UINT_4: _UI8, Precision.UINT_16: _UI16}
_NUMPY_OF: dict[Attribute, type[np.integer]] = {_I8: np.int8, _I16: np.int16, _I32: np.int32, _UI8: np.uint8,
                                                 _UI16: np.uint16, _UI32: np.uint32}


@irdl_attr_definition
class TensorAttr(ParametrizedAttribute):
    """A tensor of a file (block data, rearrange matrix): values, optional precision and name.

    The element type of `values` is a storage choice that also names the file's container:
    a float type for `float_data`, an unsigned type for `uint32_data`, a signless one for
    `int32_data` (i8 or i16 when the precision allows it, to keep weights compact). Its shape is the
    tensor's `dims`; `nodims` marks a tensor written without dims (read as 1-D).

        #taskgraph.tensor<INT_8 dense<[1, -2, 3]> : tensor<3xi8>>
        #taskgraph.tensor<dense<[0, 1, 2]> : tensor<3xi32> nodims>
    """

    name = "taskgraph.tensor"

    precision: PrecisionAttr | NoneAttr
    values: DenseIntOrFPElementsAttr
    has_dims: IntAttr
    tensor_name: StringAttr | NoneAttr

    @staticmethod
    def from_numpy(
        array: np.ndarray,
        precision: Precision | None = None,
        *,
        container: str = "int32",
        has_dims: bool = True,
        name: str | None = None,
    ) -> TensorAttr:
        """A tensor of `array`'s values in `container` ('int32', 'uint32' or 'float')."""
        shape = list(array.shape)
        if container == "float":
            etype = f32
            values = DenseIntOrFPElementsAttr.from_list(TensorType(etype, shape), array.ravel().tolist())
        else:
            narrows = _NARROW_SIGNED if container == "int32" else _NARROW_UNSIGNED
            narrow = None if precision is None else narrows.get(precision)
            etype = _I32 if container == "int32" else _UI32
            if narrow is not None and array.size:
                info = np.iinfo(_NUMPY_OF[narrow])
                if int(array.min()) >= info.min and int(array.max()) <= info.max:
                    etype = narrow
            raw = np.ascontiguousarray(array, dtype=_NUMPY_OF[etype]).astype(f"<{np.dtype(_NUMPY_OF[etype]).str[1:]}")
            values = DenseIntOrFPElementsAttr(TensorType(etype, shape), BytesAttr(raw.tobytes()))
        return TensorAttr(
            NoneAttr() if precision is None else PrecisionAttr(Precision(precision)),
            values,
            IntAttr(int(has_dims)),
            NoneAttr() if name is None else StringAttr(name),
        )

    def to_numpy(self) -> np.ndarray:
        """The values in their shape (int64 for integers, float64 for floats)."""
        etype = self.values.get_element_type()
        shape = self.values.get_shape()
        if isinstance(etype, Float32Type):
            return np.frombuffer(self.values.data.data, dtype="<f4").astype(np.float64).reshape(shape)
        dtype = np.dtype(_NUMPY_OF[etype]).newbyteorder("<")
        return np.frombuffer(self.values.data.data, dtype=dtype).astype(np.int64).reshape(shape)

    @property
    def container(self) -> str:
        etype = self.values.get_element_type()
        if isinstance(etype, Float32Type):
            return "float"
        return "uint32" if etype in (_UI8, _UI16, _UI32) else "int32"

    def get_precision(self) -> Precision | None:
        return self.precision.data if isinstance(self.precision, PrecisionAttr) else None

    @classmethod
    def parse_body(cls, parser: AttrParser) -> TensorAttr:
        precision = parser.parse_optional_keyword_in(list(Precision))
        values = parser.parse_attribute()
        if not is_dense_elements(values):
            parser.raise_error("expected a dense elements attribute as tensor values")
        has_dims = parser.parse_optional_keyword("nodims") is None
        name = None
        if parser.parse_optional_keyword("name") is not None:
            name = parser.parse_str_literal()
        return TensorAttr(
            NoneAttr() if precision is None else PrecisionAttr(Precision(precision)),
            values,
            IntAttr(int(has_dims)),
            NoneAttr() if name is None else StringAttr(name),
        )

    def print_body(self, printer: Printer) -> None:
        if isinstance(self.precision, PrecisionAttr):
            printer.print_string(f"{self.precision.data} ")
        printer.print_attribute(self.values)
        if not self.has_dims.data:
            printer.print_string(" nodims")
        if isinstance(self.tensor_name, StringAttr):
            printer.print_string(" name ")
            printer.print_string_literal(self.tensor_name.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        parser.parse_punctuation("<")
        tensor = cls.parse_body(parser)
        parser.parse_punctuation(">")
        return list(tensor.parameters)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        self.print_body(printer)
        printer.print_string(">")

    def verify(self) -> None:
        etype = self.values.get_element_type()
        if not isinstance(etype, Float32Type) and etype not in _NUMPY_OF:
            raise VerifyException(f"expected tensor values of i8, i16, i32, ui8, ui16, ui32 or f32, got {etype}")
        if not self.has_dims.data and len(self.values.get_shape()) != 1:
            raise VerifyException("expected a tensor without dims to be 1-D")


def _format_float(value: float) -> str:
    """A float literal that reads back as the same float32."""
    return f"{value:.8e}"


def _f32(value: float) -> float:
    return float(np.float32(value))


@irdl_attr_definition
class ParamAttr(ParametrizedAttribute):
    """One attribute of a block: a type, an integer and/or float value, an optional precision.

        #taskgraph.param<KERNEL_X = 5 : INT_32>
        #taskgraph.param<CONSTANT_A = 5.00000000e-01>
    """

    name = "taskgraph.param"

    kind: ParamKindAttr
    precision: PrecisionAttr | NoneAttr
    int_value: IntAttr | NoneAttr
    float_value: FloatAttr | NoneAttr

    @staticmethod
    def get(
        kind: ParamKind,
        int_value: int | None = None,
        precision: Precision | None = Precision.INT_32,
        float_value: float | None = None,
    ) -> ParamAttr:
        return ParamAttr(
            ParamKindAttr(kind),
            NoneAttr() if precision is None else PrecisionAttr(precision),
            _opt_int(int_value),
            NoneAttr() if float_value is None else FloatAttr(_f32(float_value), f32),
        )

    @property
    def value(self) -> int | float | None:
        """The integer value, else the float value, else None."""
        if isinstance(self.int_value, IntAttr):
            return self.int_value.data
        if isinstance(self.float_value, FloatAttr):
            return self.float_value.value.data
        return None

    @classmethod
    def parse_body(cls, parser: AttrParser) -> ParamAttr:
        kind = parser.parse_str_enum(ParamKind)
        int_value = float_value = precision = None
        if parser.parse_optional_punctuation("=") is not None:
            number = parser.parse_optional_number()
            if isinstance(number, int):
                int_value = number
                if parser.parse_optional_punctuation("|") is not None:
                    float_value = parser.parse_float()
            elif isinstance(number, float):
                float_value = number
            else:
                parser.raise_error("expected an integer or float attribute value")
        if parser.parse_optional_punctuation(":") is not None:
            precision = parser.parse_str_enum(Precision)
        return ParamAttr.get(kind, int_value, precision, float_value)

    def print_body(self, printer: Printer) -> None:
        text = self.kind.data.value
        values: list[str] = []
        if isinstance(self.int_value, IntAttr):
            values.append(str(self.int_value.data))
        if isinstance(self.float_value, FloatAttr):
            values.append(_format_float(self.float_value.value.data))
        if values:
            text += " = " + " | ".join(values)
        if isinstance(self.precision, PrecisionAttr):
            text += f" : {self.precision.data}"
        printer.print_string(text)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        parser.parse_punctuation("<")
        param = cls.parse_body(parser)
        parser.parse_punctuation(">")
        return list(param.parameters)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        self.print_body(printer)
        printer.print_string(">")


# ---------------------------------------------------------------------------------------------------------
# Rearranges
# ---------------------------------------------------------------------------------------------------------

# The rearranges that act on the plane of a box's first two axes (rows i, columns j).
_PLANAR = {
    RearrangeKind.ROTATE,
    RearrangeKind.SHIFT,
    RearrangeKind.SCALE,
    RearrangeKind.SHEAR,
    RearrangeKind.AFFINE,
    RearrangeKind.PROJECT,
}


@irdl_attr_definition
class RearrangeAttr(ParametrizedAttribute):
    """One data rearrange of an edge: a type and its matrices (integer tensors).

    A rearrange maps the box read from the source interface (an array in layout order) to a new
    array; planar ones act on the first two axes (rows i, columns j) and keep the others:

    - IDENTITY: no change.
    - RESHAPE [order]: flatten to 1-D; `order` (optional) lists the axes from the fastest-varying to the
      slowest in the flat result (the default, [n-1, ..., 0], is row-major).
    - PERMUTE [perm]: transpose, result axis k = input axis perm[k] (default: swap the first two axes).
    - ROTATE [k]: k quarter turns counter-clockwise of the plane (np.rot90), k taken modulo 4.
    - SHIFT [di, dj] [mode]: out[i + di, j + dj] = in[i, j]; mode 0 (default) is cyclic, 1 fills with 0.
    - SCALE [k, l]: upsampling, out[i, j] = in[i // k, j // l] (shape km x ln).
    - SHEAR [a, b] [mode]: out[i + a j, j + b i] = in[i, j] for a, b >= 0, 1 - ab != 0; mode 0 (default)
      fills with 0 into shape (m + a (n - 1), n + b (m - 1)); mode 1 is cyclic (one of a, b is 0), same shape.
    - REFLECT [axes]: flip the listed axes (0: upside down, 1: left-right; default [1]).
    - AFFINE [[a11, a12, b1], [a21, a22, b2]] [m', n']: out[a11 i + a12 j + b1, a21 i + a22 j + b2] = in[i, j],
      into an m' x n' plane (default: the input's), zeros where nothing lands, later (row-major)
      source points win, points landing outside are dropped.
    - PROJECT [3 x 3 matrix M] [m', n']: (p, q, w) = M (i, j, 1); out[p // w, q // w] = in[i, j] where
      w != 0 (floor division), otherwise as AFFINE.
    - SHUFFLE [perm] [axis]: a gather, out.flat[k] = in.flat[perm[k]] (perm a permutation of the
      volume); with an axis, out[..., k, ...] = in[..., perm[k], ...] along that axis.

        #taskgraph.rearrange<RESHAPE [<INT_32 dense<[2, 1, 0]> : tensor<3xi32>>]>
    """

    name = "taskgraph.rearrange"

    kind: RearrangeKindAttr
    matrix: ArrayAttr[TensorAttr]

    @staticmethod
    def get(kind: RearrangeKind, *matrices: ArrayLike) -> RearrangeAttr:
        tensors = [TensorAttr.from_numpy(np.asarray(m, dtype=np.int64), Precision.INT_32) for m in matrices]
        return RearrangeAttr(RearrangeKindAttr(kind), ArrayAttr(tensors))

    @property
    def rearrange_kind(self) -> RearrangeKind:
        return self.kind.data

    def ints(self, k: int) -> np.ndarray | None:
        """Matrix k as int64 values in its shape, None when absent."""
        if k >= len(self.matrix.data):
            return None
        tensor = self.matrix.data[k]
        if tensor.container == "float":
            raise VerifyException(f"expected integer values in matrix {k} of {self.rearrange_kind}")
        return tensor.to_numpy()

    def flat_matrix(self, k: int, count: int | None = None, what: str = "values") -> list[int] | None:
        """Matrix k as a flat list of ints (None when absent), checking its length when `count` is given."""
        m = self.ints(k)
        if m is None:
            return None
        flat = [int(v) for v in m.ravel()]
        if count is not None and len(flat) != count:
            raise VerifyException(
                f"expected {count} {what} in matrix {k} of {self.rearrange_kind}, got {len(flat)}"
            )
        return flat

    def verify(self) -> None:
        kind = self.rearrange_kind
        max_matrices = {
            RearrangeKind.IDENTITY: 0,
            RearrangeKind.RESHAPE: 1,
            RearrangeKind.PERMUTE: 1,
            RearrangeKind.ROTATE: 1,
            RearrangeKind.SCALE: 1,
            RearrangeKind.REFLECT: 1,
        }.get(kind, 2)
        if len(self.matrix.data) > max_matrices:
            raise VerifyException(
                f"expected at most {max_matrices} matrices for {kind}, got {len(self.matrix.data)}"
            )
        for k in range(len(self.matrix.data)):
            self.ints(k)
        if kind == RearrangeKind.ROTATE:
            if self.ints(0) is None:
                raise VerifyException("expected the number of quarter turns in matrix 0 of ROTATE")
            self.flat_matrix(0, 1, "quarter turn count")
        elif kind == RearrangeKind.SHIFT:
            if self.ints(0) is None:
                raise VerifyException("expected the offsets [di, dj] in matrix 0 of SHIFT")
            self.flat_matrix(0, 2, "offsets")
            mode = self.flat_matrix(1, 1, "fill mode")
            if mode is not None and mode[0] not in (0, 1):
                raise VerifyException(f"expected SHIFT fill mode 0 (cyclic) or 1 (zero), got {mode[0]}")
        elif kind == RearrangeKind.SCALE:
            factors = self.flat_matrix(0, 2, "factors")
            if factors is None or min(factors) < 1:
                raise VerifyException(f"expected SCALE factors [k, l] >= 1, got {factors}")
        elif kind == RearrangeKind.SHEAR:
            ab = self.flat_matrix(0, 2, "shear factors")
            if ab is None or min(ab) < 0 or ab[0] * ab[1] == 1:
                raise VerifyException(f"expected SHEAR factors [a, b] >= 0 with a * b != 1, got {ab}")
            mode = self.flat_matrix(1, 1, "fill mode")
            if mode is not None and mode[0] not in (0, 1):
                raise VerifyException(f"expected SHEAR fill mode 0 (zero) or 1 (cyclic), got {mode[0]}")
            if mode == [1] and min(ab) != 0:
                raise VerifyException(f"expected a cyclic SHEAR along one axis (a or b = 0), got {ab}")
        elif kind in (RearrangeKind.AFFINE, RearrangeKind.PROJECT):
            rows = 2 if kind == RearrangeKind.AFFINE else 3
            m = self.ints(0)
            if m is None or m.size != rows * 3:
                raise VerifyException(f"expected a {rows}x3 matrix in matrix 0 of {kind}")
            size = self.flat_matrix(1, 2, "output extents")
            if size is not None and min(size) < 1:
                raise VerifyException(f"expected {kind} output extents >= 1, got {size}")
        elif kind == RearrangeKind.SHUFFLE:
            if self.ints(0) is None:
                raise VerifyException("expected a permutation in matrix 0 of SHUFFLE")
            self.flat_matrix(1, 1, "axis")
        for k, what in ((RearrangeKind.RESHAPE, "order"), (RearrangeKind.PERMUTE, "permutation")):
            if kind == k and (perm := self.flat_matrix(0)) is not None and sorted(perm) != list(range(len(perm))):
                raise VerifyException(f"expected a permutation of 0..{len(perm) - 1} as {kind} {what}, got {perm}")

    def gather_map(self, shape: tuple[int, ...]) -> np.ndarray:
        """For each element of the result of rearranging an array of `shape`, the flat (row-major) index of
        the element it takes, or -1 where the result is 0. This is the definition the executor runs."""
        return _rearranged(self, np.arange(math.prod(shape), dtype=np.int64).reshape(shape), -1)

    def result_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The shape this rearrange turns an array of `shape` into; raises VerifyException on a misfit."""
        kind = self.rearrange_kind
        rank = len(shape)
        if kind in _PLANAR and rank < 2:
            raise VerifyException(f"expected a box of rank >= 2 for {kind}, got shape {list(shape)}")
        if kind == RearrangeKind.IDENTITY:
            return shape
        if kind == RearrangeKind.RESHAPE:
            order = self.flat_matrix(0)
            if order is not None and len(order) != rank:
                raise VerifyException(f"expected a RESHAPE order of {rank} axes, got {order}")
            return (math.prod(shape),)
        if kind == RearrangeKind.PERMUTE:
            perm = self.flat_matrix(0)
            if perm is None:
                return (shape[1], shape[0], *shape[2:]) if rank >= 2 else shape
            if len(perm) != rank:
                raise VerifyException(f"expected a PERMUTE permutation of {rank} axes, got {perm}")
            return tuple(shape[p] for p in perm)
        if kind == RearrangeKind.ROTATE:
            (k,) = self.flat_matrix(0) or [0]
            return (shape[1], shape[0], *shape[2:]) if k % 2 else shape
        if kind == RearrangeKind.SHIFT:
            return shape
        if kind == RearrangeKind.SCALE:
            k, l = self.flat_matrix(0) or [1, 1]
            return (shape[0] * k, shape[1] * l, *shape[2:])
        if kind == RearrangeKind.SHEAR:
            a, b = self.flat_matrix(0) or [0, 0]
            if self.flat_matrix(1) == [1]:
                return shape
            m, n = shape[0], shape[1]
            return (m + a * (n - 1), n + b * (m - 1), *shape[2:])
        if kind in (RearrangeKind.AFFINE, RearrangeKind.PROJECT):
            size = self.flat_matrix(1)
            return shape if size is None else (size[0], size[1], *shape[2:])
        if kind == RearrangeKind.REFLECT:
            for axis in self.flat_matrix(0) or [1]:
                if not 0 <= axis < rank:
                    raise VerifyException(f"expected REFLECT axes in [0, {rank - 1}], got {axis}")
            return shape
        assert kind == RearrangeKind.SHUFFLE
        perm = self.flat_matrix(0) or []
        axis = self.flat_matrix(1)
        extent = math.prod(shape) if axis is None else None
        if axis is not None:
            if not 0 <= axis[0] < rank:
                raise VerifyException(f"expected a SHUFFLE axis in [0, {rank - 1}], got {axis[0]}")
            extent = shape[axis[0]]
        if sorted(perm) != list(range(extent or 0)):
            raise VerifyException(f"expected a SHUFFLE permutation of 0..{(extent or 0) - 1}, got {len(perm)} values")
        return shape

    @classmethod
    def parse_body(cls, parser: AttrParser) -> RearrangeAttr:
        kind = parser.parse_str_enum(RearrangeKind)
        matrices: list[TensorAttr] = []
        if parser.parse_optional_punctuation("[") is not None:
            if parser.parse_optional_punctuation("]") is None:
                while True:
                    parser.parse_punctuation("<")
                    matrices.append(TensorAttr.parse_body(parser))
                    parser.parse_punctuation(">")
                    if parser.parse_optional_punctuation(",") is None:
                        break
                parser.parse_punctuation("]")
        return RearrangeAttr(RearrangeKindAttr(kind), ArrayAttr(matrices))

    def print_body(self, printer: Printer) -> None:
        printer.print_string(self.rearrange_kind.value)
        if self.matrix.data:
            printer.print_string(" [")
            for i, m in enumerate(self.matrix.data):
                if i:
                    printer.print_string(", ")
                m.print_parameters(printer)
            printer.print_string("]")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        parser.parse_punctuation("<")
        rearrange = cls.parse_body(parser)
        parser.parse_punctuation(">")
        return list(rearrange.parameters)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        self.print_body(printer)
        printer.print_string(">")


def _scatter_plane(
    src: np.ndarray, rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int], fill: int
) -> np.ndarray:
    """out[rows[i, j], cols[i, j]] = src[i, j] for targets inside `shape`, the later source point
    (row-major) winning; `fill` elsewhere."""
    m, n = src.shape[:2]
    rest = src.shape[2:]
    rows, cols = rows.ravel(), cols.ravel()
    keep = (rows >= 0) & (rows < shape[0]) & (cols >= 0) & (cols < shape[1])
    sources = np.flatnonzero(keep)
    targets = rows[keep] * shape[1] + cols[keep]
    # The last source point for each target.
    _, last = np.unique(targets[::-1], return_index=True)
    chosen = len(targets) - 1 - last
    out = np.full((shape[0] * shape[1], *rest), fill, dtype=src.dtype)
    out[targets[chosen]] = src.reshape(m * n, *rest)[sources[chosen]]
    return out.reshape(*shape, *rest)


def _rearranged(r: RearrangeAttr, a: np.ndarray, fill: int) -> np.ndarray:
    """The array a rearrange makes of `a`, with `fill` where no element of `a` lands."""
    kind = r.rearrange_kind
    if kind == RearrangeKind.IDENTITY:
        return a
    if kind == RearrangeKind.RESHAPE:
        order = r.flat_matrix(0)
        return (a if order is None else a.transpose(order[::-1])).reshape(-1)
    if kind == RearrangeKind.PERMUTE:
        perm = r.flat_matrix(0)
        return np.swapaxes(a, 0, 1) if perm is None else a.transpose(perm)
    if kind == RearrangeKind.ROTATE:
        (k,) = r.flat_matrix(0) or [0]
        return np.rot90(a, k, axes=(0, 1))
    if kind == RearrangeKind.REFLECT:
        return np.flip(a, axis=tuple(r.flat_matrix(0) or [1]))
    if kind == RearrangeKind.SCALE:
        k, l = r.flat_matrix(0) or [1, 1]
        return np.repeat(np.repeat(a, k, axis=0), l, axis=1)
    if kind == RearrangeKind.SHUFFLE:
        perm = np.asarray(r.flat_matrix(0), dtype=np.int64)
        axis = r.flat_matrix(1)
        return a.reshape(-1)[perm].reshape(a.shape) if axis is None else np.take(a, perm, axis=axis[0])
    m, n = a.shape[:2]
    i, j = np.indices((m, n))
    if kind == RearrangeKind.SHIFT:
        di, dj = r.flat_matrix(0) or [0, 0]
        if (r.flat_matrix(1) or [0]) == [0]:
            return np.roll(a, (di, dj), axis=(0, 1))
        return _scatter_plane(a, i + di, j + dj, (m, n), fill)
    if kind == RearrangeKind.SHEAR:
        sa, sb = r.flat_matrix(0) or [0, 0]
        if r.flat_matrix(1) == [1]:
            return _scatter_plane(a, (i + sa * j) % m, (j + sb * i) % n, (m, n), fill)
        return _scatter_plane(a, i + sa * j, j + sb * i, (m + sa * (n - 1), n + sb * (m - 1)), fill)
    size = r.flat_matrix(1)
    shape = (m, n) if size is None else (size[0], size[1])
    matrix = r.ints(0)
    assert matrix is not None, "the verifier requires matrix 0 of an affine rearrange"
    mat = matrix.reshape(-1, 3)
    p = mat[0, 0] * i + mat[0, 1] * j + mat[0, 2]
    q = mat[1, 0] * i + mat[1, 1] * j + mat[1, 2]
    if kind == RearrangeKind.AFFINE:
        return _scatter_plane(a, p, q, shape, fill)
    assert kind == RearrangeKind.PROJECT
    w = mat[2, 0] * i + mat[2, 1] * j + mat[2, 2]
    safe = np.where(w == 0, 1, w)
    rows = np.where(w == 0, -1, np.floor_divide(p, safe))
    cols = np.where(w == 0, -1, np.floor_divide(q, safe))
    return _scatter_plane(a, rows, cols, shape, fill)


# ---------------------------------------------------------------------------------------------------------
# The graph, its edges and groups
# ---------------------------------------------------------------------------------------------------------


def _parse_int_list(parser: AttrParser) -> list[int]:
    return _parse_square_list(parser, lambda: parser.parse_integer(allow_boolean=False))


@irdl_op_definition
class GraphOp(IRDLOperation):
    """A TaskGraph: its task blocks, edges and groups, in file order.

    Verified as a whole: unique ids, each edge named by exactly one output interface of its source
    and one input interface of its destination, no edge between two compute blocks, no cycle, and
    every edge carrying as many values (after its rearranges) as its destination box holds.

        taskgraph.graph {
          taskgraph.si 0 INT_8 <f = 4> out [[0]] data <INT_8 dense<[1, 2, 3, 4]> : tensor<4xi8>>
          taskgraph.output 1 INT_8 <f = 4> in [[0]]
          taskgraph.edge 0 from 0 to 1
        }
    """

    name = "taskgraph.graph"

    body = region_def("single_block")
    test_config = opt_prop_def(StringAttr)

    traits = traits_def(NoTerminator(), IsolatedFromAbove())

    assembly_format = "(`test_config` $test_config^)? attr-dict-with-keyword $body"

    def __init__(self, ops: Iterable[IRDLOperation] = (), test_config: str | None = None):
        super().__init__(
            regions=[Region(IRBlock(ops))],
            properties={} if test_config is None else {"test_config": StringAttr(test_config)},
        )

    @property
    def blocks(self) -> list[BlockOp]:
        return [op for op in self.body.ops if isinstance(op, BlockOp)]

    @property
    def edges(self) -> list[EdgeOp]:
        return [op for op in self.body.ops if isinstance(op, EdgeOp)]

    @property
    def groups(self) -> list[GroupOp]:
        return [op for op in self.body.ops if isinstance(op, GroupOp)]

    def topological_blocks(self) -> list[BlockOp]:
        """The blocks in an order where every edge's source comes before its destination.

        Ties keep file order. Raises VerifyException on a cycle.
        """
        blocks = {b.id: b for b in self.blocks}
        succs: dict[int, list[int]] = {i: [] for i in blocks}
        indeg = dict.fromkeys(blocks, 0)
        for e in self.edges:
            if e.src in blocks and e.dst in blocks:
                succs[e.src].append(e.dst)
                indeg[e.dst] += 1
        order = list(blocks)
        ready = [i for i in order if indeg[i] == 0]
        done: list[int] = []
        position = {i: k for k, i in enumerate(order)}
        while ready:
            ready.sort(key=position.__getitem__)
            i = ready.pop(0)
            done.append(i)
            for j in succs[i]:
                indeg[j] -= 1
                if indeg[j] == 0:
                    ready.append(j)
        if len(done) != len(order):
            cycle = sorted(i for i in order if indeg[i] > 0)
            raise VerifyException(f"expected an acyclic graph, blocks {cycle} lie on a cycle")
        return [blocks[i] for i in done]

    def verify_(self) -> None:
        blocks: dict[int, BlockOp] = {}
        for b in self.blocks:
            if b.id in blocks:
                raise VerifyException(f"block id {b.id} is used twice")
            blocks[b.id] = b
        edges: dict[int, EdgeOp] = {}
        for e in self.edges:
            if e.id in edges:
                raise VerifyException(f"edge id {e.id} is used twice")
            edges[e.id] = e
        group_ids: set[int] = set()
        for g in self.groups:
            if g.group_id.data in group_ids:
                raise VerifyException(f"group id {g.group_id.data} is used twice")
            group_ids.add(g.group_id.data)
            for i in g.block_ids():
                if i not in blocks:
                    raise VerifyException(f"group {g.group_id.data}: 'block_ids' names unknown block {i}")

        # Interfaces name existing edges, in the right direction, exactly once.
        seen: dict[tuple[int, str], int] = {}
        for b in blocks.values():
            for direction, clusters in (("in", b.inputs), ("out", b.outputs)):
                for cluster in clusters.data:
                    for iface in cluster.interfaces.data:
                        e = edges.get(iface.edge.data)
                        if e is None:
                            raise VerifyException(f"block {b.id}: interface names unknown edge {iface.edge.data}")
                        end = e.dst if direction == "in" else e.src
                        if end != b.id:
                            side = "destination" if direction == "in" else "source"
                            raise VerifyException(
                                f"block {b.id}: {direction}put interface names edge {e.id}, "
                                f"whose {side} is block {end}"
                            )
                        if (e.id, direction) in seen:
                            raise VerifyException(f"edge {e.id} is named by two {direction}put interfaces")
                        seen[(e.id, direction)] = b.id

        for e in edges.values():
            for end, direction in ((e.src, "out"), (e.dst, "in")):
                if end not in blocks:
                    field = "src" if direction == "out" else "dst"
                    raise VerifyException(f"edge {e.id}: '{field}' names unknown block {end}")
                if (e.id, direction) not in seen:
                    raise VerifyException(f"edge {e.id}: block {end} has no {direction}put interface for it")
            src, dst = blocks[e.src], blocks[e.dst]
            if isinstance(src, ComputeBlockOp) and isinstance(dst, ComputeBlockOp):
                raise VerifyException(
                    f"edge {e.id}: expected a storage block between compute blocks {src.id} and {dst.id}"
                )
            shape = src.edge_box(e.id, "out")[1]
            for r in e.rearranges.data:
                try:
                    shape = r.result_shape(shape)
                except VerifyException as err:
                    raise VerifyException(f"edge {e.id}: {err}") from err
            dst_shape = dst.edge_box(e.id, "in")[1]
            if math.prod(shape) != math.prod(dst_shape):
                raise VerifyException(
                    f"edge {e.id}: carries {math.prod(shape)} values {list(shape)}, but its destination box "
                    f"in block {dst.id} holds {math.prod(dst_shape)} {list(dst_shape)}"
                )
        storage = sum(4 * math.prod(b.shape.extents().values()) for b in blocks.values()
                      if isinstance(b, StorageBlockOp))  # fmt: skip
        if storage > MAX_MEMORY:
            raise VerifyException(f"expected the storage blocks to hold at most {MAX_MEMORY} bytes, got {storage}")
        self.topological_blocks()


@irdl_op_definition
class EdgeOp(IRDLOperation):
    """An edge: copies its source interface's box into its destination interface's box.

    dst_box = reshape(rearrange_n(...rearrange_1(src_box)), shape of dst_box) (row-major).

        taskgraph.edge 32 from 15 to 18 [RESHAPE [<INT_32 dense<[2, 1, 0]> : tensor<3xi32>>]]
    """

    name = "taskgraph.edge"

    edge_id = prop_def(IntAttr, prop_name="id")
    src_block = prop_def(IntAttr, prop_name="src")
    dst_block = prop_def(IntAttr, prop_name="dst")
    rearranges = prop_def(ArrayAttr[RearrangeAttr])

    traits = traits_def(HasParent(GraphOp))

    def __init__(self, edge_id: int, src: int, dst: int, rearranges: Iterable[RearrangeAttr] = ()):
        super().__init__(
            properties={
                "id": IntAttr(edge_id),
                "src": IntAttr(src),
                "dst": IntAttr(dst),
                "rearranges": ArrayAttr(rearranges),
            }
        )

    @property
    def id(self) -> int:
        return self.edge_id.data

    @property
    def src(self) -> int:
        return self.src_block.data

    @property
    def dst(self) -> int:
        return self.dst_block.data

    @classmethod
    def parse(cls, parser: Parser) -> EdgeOp:
        edge_id = parser.parse_integer(allow_boolean=False)
        parser.parse_keyword("from")
        src = parser.parse_integer(allow_boolean=False)
        parser.parse_keyword("to")
        dst = parser.parse_integer(allow_boolean=False)
        rearranges: list[RearrangeAttr] = []
        if parser.parse_optional_punctuation("[") is not None:
            rearranges.append(RearrangeAttr.parse_body(parser))
            while parser.parse_optional_punctuation(",") is not None:
                rearranges.append(RearrangeAttr.parse_body(parser))
            parser.parse_punctuation("]")
        op = cls(edge_id, src, dst, rearranges)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.id} from {self.src} to {self.dst}")
        if self.rearranges.data:
            printer.print_string(" [")
            for i, r in enumerate(self.rearranges.data):
                if i:
                    printer.print_string(", ")
                r.print_body(printer)
            printer.print_string("]")
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class GroupOp(IRDLOperation):
    """A group of blocks that a mapper keeps together (no effect on execution).

        taskgraph.group 0 [0, 1, 2, 3]
    """

    name = "taskgraph.group"

    group_id = prop_def(IntAttr)
    members = prop_def(ArrayAttr[IntAttr], prop_name="block_ids")

    traits = traits_def(HasParent(GraphOp))

    def __init__(self, group_id: int, block_ids: Iterable[int]):
        super().__init__(
            properties={"group_id": IntAttr(group_id), "block_ids": ArrayAttr(IntAttr(i) for i in block_ids)}
        )

    def block_ids(self) -> list[int]:
        return [i.data for i in self.members.data]

    @classmethod
    def parse(cls, parser: Parser) -> GroupOp:
        group_id = parser.parse_integer(allow_boolean=False)
        op = cls(group_id, _parse_int_list(parser))
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.group_id.data} [" + ", ".join(map(str, self.block_ids())) + "]")
        printer.print_op_attributes(self.attributes)


# ---------------------------------------------------------------------------------------------------------
# Task blocks
# ---------------------------------------------------------------------------------------------------------

_REQ, _OPT, _ONE = "required", "optional", "absent or 1"
_YXF = {"y": _OPT, "x": _OPT, "f": _REQ}
_WINDOW_DIMS = {"y": _OPT, "x": _OPT, "f": _REQ, "ky": _REQ, "kx": _REQ, "iy": _OPT, "ix": _OPT}

P = ParamKind
_WINDOW = frozenset({P.KERNEL_X, P.KERNEL_Y, P.STRIDE_X, P.STRIDE_Y, P.PAD_UP, P.PAD_DOWN, P.PAD_LEFT, P.PAD_RIGHT})
_NEUTRAL_WINDOW = {
    P.KERNEL_X: 1, P.KERNEL_Y: 1, P.STRIDE_X: 1, P.STRIDE_Y: 1,
    P.PAD_UP: 0, P.PAD_DOWN: 0, P.PAD_LEFT: 0, P.PAD_RIGHT: 0,
}  # fmt: skip
_LIF = frozenset(p for p in ParamKind if list(ParamKind).index(p) >= list(ParamKind).index(P.VTH0)) - {P.LUT_DW}
# Attributes that must carry an integer value, and the range of their value.
_INT_RANGES: dict[ParamKind, tuple[int, int]] = {
    P.KERNEL_X: (1, 2**31 - 1), P.KERNEL_Y: (1, 2**31 - 1),
    P.STRIDE_X: (1, 2**31 - 1), P.STRIDE_Y: (1, 2**31 - 1),
    P.PAD_UP: (0, 2**31 - 1), P.PAD_DOWN: (0, 2**31 - 1), P.PAD_LEFT: (0, 2**31 - 1), P.PAD_RIGHT: (0, 2**31 - 1),
    P.DILATION_X: (1, 2**31 - 1), P.DILATION_Y: (1, 2**31 - 1),
    P.BIT_SHIGT_NUM: (0, 31), P.LUT_DW: (1, 16), P.CMP: (-(2**31), 2**31 - 1),
}  # fmt: skip


@dataclass(frozen=True)
class KindSpec:
    """What a block kind allows: its shape dims, its attributes, its inputs."""

    # dim -> required / optional / absent or 1; dims not listed must be absent.
    dims: Mapping[str, str]
    # The attributes that apply, those accepted only with a neutral value, those required.
    params: frozenset[ParamKind] = frozenset()
    neutral: Mapping[ParamKind, int] = field(default_factory=dict[ParamKind, int])
    required: tuple[ParamKind, ...] = ()
    # The fixed inputs of a compute block, before the bias input of a VECTOR bias.
    roles: tuple[str, ...] = ("input",)
    biased: bool = False
    # Renames of a storage block's dims in its input cluster (SIC takes (y, x, f) in and holds (y, x, r)).
    in_rename: Mapping[str, str] = field(default_factory=dict[str, str])


_ELEMENTWISE = _WINDOW | {P.CONSTANT_B}
_SQUARE = {"f": _REQ, "r": _REQ, "ky": _REQ, "kx": _REQ}
# The seed's shape tables, with the 1-D forms (no y, x) and the attributes that real files carry.
KIND_SPECS: dict[str, KindSpec] = {
    "SI": KindSpec(_YXF),
    "SIC": KindSpec({"y": _REQ, "x": _REQ, "r": _REQ}, in_rename={"r": "f"}),
    "SIC2D": KindSpec({"y": _REQ, "x": _REQ, "r": _REQ}, in_rename={"r": "f"}),
    "SIFC": KindSpec({"r": _REQ}, in_rename={"r": "f"}),
    "SW": KindSpec(_SQUARE),
    "SW2D": KindSpec(_SQUARE),
    "SWFC": KindSpec({"f": _REQ, "r": _REQ}),
    "SB": KindSpec({"f": _REQ}),
    "INPUT": KindSpec(_YXF),
    "OUTPUT": KindSpec(_YXF),
    "CADD": KindSpec({**_YXF, "ky": _ONE, "kx": _ONE}, _ELEMENTWISE, _NEUTRAL_WINDOW, biased=True),
    "CAVG": KindSpec(_WINDOW_DIMS, _ELEMENTWISE, biased=True),
    "CVVH": KindSpec(_YXF, _ELEMENTWISE, _NEUTRAL_WINDOW, roles=("input1", "input2"), biased=True),
    "CVM": KindSpec({"f": _REQ, "r": _REQ}, frozenset({P.CONSTANT_B}), roles=("input", "weight"), biased=True),
    "CC": KindSpec(
        dict.fromkeys(DIMS, _REQ), _ELEMENTWISE | {P.DILATION_X, P.DILATION_Y}, roles=("input", "weight"), biased=True
    ),
    "CC2D": KindSpec(
        dict.fromkeys(DIMS, _REQ), _ELEMENTWISE | {P.DILATION_X, P.DILATION_Y}, roles=("input", "weight"), biased=True
    ),
    "CAX": KindSpec(_YXF, _ELEMENTWISE, _NEUTRAL_WINDOW, roles=("input", "alpha"), biased=True),
    "CVS": KindSpec(_YXF, _ELEMENTWISE | {P.CONSTANT_A}, _NEUTRAL_WINDOW, (P.CONSTANT_A,), biased=True),
    "CCMPB": KindSpec(_WINDOW_DIMS, _WINDOW | {P.CMP, P.BIT_SHIGT_NUM}),
    "CCMPS": KindSpec(_WINDOW_DIMS, _WINDOW | {P.CMP, P.BIT_SHIGT_NUM}),
    "CLUT": KindSpec(_YXF, frozenset({P.LUT_DW}), required=(P.LUT_DW,), roles=("input", "lut")),
    "CLIF": KindSpec(_YXF, _LIF, roles=("input", "membrane")),
}


def _box_text(offsets: Sequence[int], sizes: Sequence[int]) -> str:
    return "[" + ", ".join(f"{o}:{o + s}" for o, s in zip(offsets, sizes)) + "]"


class BlockOp(IRDLOperation):
    """Common part of all task blocks (see the module docstring for the textual form)."""

    @classmethod
    def kind_name(cls) -> str:
        """The block type of the file (`CC2D` for `taskgraph.cc2d`)."""
        return cls.name.removeprefix("taskgraph.").upper()

    @property
    def kind(self) -> str:
        return self.kind_name()

    @property
    def spec(self) -> KindSpec:
        return KIND_SPECS[self.kind]


    block_id = prop_def(IntAttr, prop_name="id")
    precision = prop_def(PrecisionAttr)
    shape = prop_def(ShapeAttr)
    inputs = prop_def(ArrayAttr[ClusterAttr])
    outputs = prop_def(ArrayAttr[ClusterAttr])
    params = prop_def(ArrayAttr[ParamAttr])
    data = opt_prop_def(TensorAttr)
    bias_type = opt_prop_def(BiasTypeAttr)
    is_virtual = opt_prop_def(IntAttr)
    major_task_id = opt_prop_def(IntAttr)
    pipeline_num = opt_prop_def(IntAttr)
    socket_id = opt_prop_def(IntAttr)

    traits = traits_def(HasParent(GraphOp))

    def __init__(
        self,
        block_id: int,
        precision: Precision,
        shape: ShapeAttr,
        inputs: Iterable[ClusterAttr] = (),
        outputs: Iterable[ClusterAttr] = (),
        params: Iterable[ParamAttr] = (),
        data: TensorAttr | None = None,
        bias_type: BiasType | None = None,
        *,
        is_virtual: bool | None = None,
        major_task_id: int | None = None,
        pipeline_num: int | None = None,
        socket_id: int | None = None,
    ):
        props: dict[str, Attribute] = {
            "id": IntAttr(block_id),
            "precision": PrecisionAttr(precision),
            "shape": shape,
            "inputs": ArrayAttr(inputs),
            "outputs": ArrayAttr(outputs),
            "params": ArrayAttr(params),
        }
        if data is not None:
            props["data"] = data
        if bias_type is not None:
            props["bias_type"] = BiasTypeAttr(bias_type)
        if is_virtual is not None:
            props["is_virtual"] = IntAttr(int(is_virtual))
        for key, value in (("major_task_id", major_task_id), ("pipeline_num", pipeline_num), ("socket_id", socket_id)):
            if value is not None:
                props[key] = IntAttr(value)
        super().__init__(properties=props)

    # --- accessors -------------------------------------------------------------------------------------

    @property
    def id(self) -> int:
        return self.block_id.data

    def get_precision(self) -> Precision:
        return self.precision.data

    def param(self, kind: ParamKind) -> ParamAttr | None:
        return next((p for p in self.params.data if p.kind.data == kind), None)

    def int_param(self, kind: ParamKind, default: int = 0) -> int:
        """The integer value of an attribute, `default` when absent."""
        p = self.param(kind)
        if p is None or not isinstance(p.int_value, IntAttr):
            return default
        return p.int_value.data

    @property
    def has_vector_bias(self) -> bool:
        return self.bias_type is not None and self.bias_type.data == BiasType.VECTOR

    def input_roles(self) -> list[str]:
        """The meaning of each input cluster this block expects (for messages and the executor)."""
        return ["input"] * len(self.inputs.data)

    def derived_input_extents(self, k: int) -> dict[str, int]:
        """The shape the block implies for input cluster k."""
        raise NotImplementedError

    def derived_output_extents(self, k: int) -> dict[str, int]:
        return self.shape.extents()

    def cluster_extents(self, direction: str, k: int) -> dict[str, int]:
        """The extents of a cluster: its own shape if given, else the one the block implies."""
        cluster = (self.inputs if direction == "in" else self.outputs).data[k]
        if isinstance(cluster.shape, ShapeAttr):
            return cluster.shape.extents()
        return self.derived_input_extents(k) if direction == "in" else self.derived_output_extents(k)

    def iface_box(self, direction: str, k: int, iface: InterfaceAttr) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(offsets, sizes) of an interface's box in its cluster, in layout order of the cluster's dims."""
        extents = self.cluster_extents(direction, k)
        position = iface.position.extents() if isinstance(iface.position, ShapeAttr) else {}
        size = iface.size.extents() if isinstance(iface.size, ShapeAttr) else extents
        return tuple(position.get(d, 0) for d in extents), tuple(size.get(d, 0) for d in extents)

    def find_edge(self, edge_id: int, direction: str) -> tuple[int, InterfaceAttr]:
        """(cluster index, interface) of the edge in this block's input or output clusters."""
        for k, cluster in enumerate((self.inputs if direction == "in" else self.outputs).data):
            for iface in cluster.interfaces.data:
                if iface.edge.data == edge_id:
                    return k, iface
        raise VerifyException(f"block {self.id}: no {direction}put interface for edge {edge_id}")

    def edge_box(self, edge_id: int, direction: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        k, iface = self.find_edge(edge_id, direction)
        return self.iface_box(direction, k, iface)

    # --- verification --------------------------------------------------------------------------------

    def _fail(self, message: str):
        raise VerifyException(f"block {self.id}: {message}")

    def verify_(self) -> None:
        self._verify_shape()
        self._verify_cluster_counts()
        self._verify_sizes()
        for direction, clusters in (("in", self.inputs), ("out", self.outputs)):
            for k, cluster in enumerate(clusters.data):
                self._verify_cluster(direction, k, cluster)
        self._verify_params()
        self._verify_data()
        self._verify_kind()

    def _verify_shape(self) -> None:
        given = self.shape.extents()
        for d in DIMS:
            spec = self.spec.dims.get(d)
            v = given.get(d, 0)
            if spec is None and v:
                self._fail(f"expected no shape '{d}' for {self.kind}, got {v}")
            if spec == _REQ and not v:
                self._fail(f"expected shape '{d}' > 0 for {self.kind}, got {v}")
            if spec == _ONE and v not in (0, 1):
                self._fail(f"expected shape '{d}' absent or 1 for {self.kind}, got {v}")
        for a, b in (("y", "x"), ("iy", "ix")):
            if bool(given.get(a)) != bool(given.get(b)):
                self._fail(f"expected shape '{a}' and '{b}' both given or both absent, got {a} = "
                           f"{given.get(a, 0)}, {b} = {given.get(b, 0)}")
        n_branch = self.shape.dim("n_branch")
        if n_branch and not isinstance(self, CaddOp):
            self._fail(f"expected no shape 'n_branch' for {self.kind}, got {n_branch}")

    def _expected_input_counts(self) -> tuple[int, int]:
        raise NotImplementedError

    def _expected_output_count(self) -> int:
        return 1

    def _verify_cluster_counts(self) -> None:
        lo, hi = self._expected_input_counts()
        n = len(self.inputs.data)
        if not lo <= n <= hi:
            expected = str(lo) if lo == hi else f"{lo} to {hi}"
            self._fail(f"expected {expected} input clusters for {self.kind}, got {n}")
        m = len(self.outputs.data)
        if m != self._expected_output_count():
            self._fail(f"expected {self._expected_output_count()} output clusters for {self.kind}, got {m}")

    def _verify_sizes(self) -> None:
        """Every tensor the block holds or passes (its own values for a storage block, each cluster) has at most
        MAX_SIZE values."""
        tensors = [("the block", self.shape.extents())] if isinstance(self, StorageBlockOp) else []
        for direction, clusters in (("in", self.inputs), ("out", self.outputs)):
            tensors += [(f"{direction}put cluster {k}", self.cluster_extents(direction, k))
                        for k in range(len(clusters.data))]  # fmt: skip
        for what, extents in tensors:
            n = math.prod(extents.values())
            if n > MAX_SIZE:
                self._fail(f"expected at most {MAX_SIZE} values in {what}, got {n} {list(extents.values())}")

    def _verify_cluster(self, direction: str, k: int, cluster: ClusterAttr) -> None:
        where = f"{direction}put cluster {k}"
        if direction == "in":
            role = self.input_roles()[k]
            where += f" ({role})"
            derived = self.derived_input_extents(k)
        else:
            derived = self.derived_output_extents(k)
        if isinstance(cluster.shape, ShapeAttr) and cluster.shape.extents() != derived:
            self._fail(f"{where}: expected shape {derived}, got {cluster.shape.extents()}")
        if direction == "in" and isinstance(self, ComputeBlockOp) and not cluster.interfaces.data:
            self._fail(f"{where}: expected at least one interface")
        extents = self.cluster_extents(direction, k)
        for iface in cluster.interfaces.data:
            name = f"{where}, interface of edge {iface.edge.data}"
            if isinstance(iface.size, ShapeAttr) and set(iface.size.extents()) != set(extents):
                self._fail(f"{name}: expected 'size' over dims {list(extents)}, got {iface.size.extents()}")
            if isinstance(iface.position, ShapeAttr):
                extra = set(iface.position.extents()) - set(extents)
                if extra:
                    self._fail(f"{name}: 'position' has dims {sorted(extra)} outside the cluster {list(extents)}")
            offsets, sizes = self.iface_box(direction, k, iface)
            for d, o, s in zip(extents, offsets, sizes):
                if o < 0 or o + s > extents[d]:
                    self._fail(f"{name}: box {_box_text(offsets, sizes)} is not inside the cluster "
                               f"{list(extents.values())} (dim '{d}')")

    def _verify_params(self) -> None:
        seen: set[ParamKind] = set()
        for p in self.params.data:
            kind = p.kind.data
            if kind in seen:
                self._fail(f"attribute {kind} is given twice")
            seen.add(kind)
            if kind not in self.spec.params:
                self._fail(f"attribute {kind} does not apply to {self.kind}")
            if p.value is None:
                self._fail(f"attribute {kind} has no value")
            if kind in _INT_RANGES:
                if not isinstance(p.int_value, IntAttr):
                    self._fail(f"expected an integer value for attribute {kind}, got {p.value}")
                lo, hi = _INT_RANGES[kind]
                if not lo <= p.int_value.data <= hi:
                    self._fail(f"expected attribute {kind} in [{lo}, {hi}], got {p.int_value.data}")
            if kind in self.spec.neutral and p.value != self.spec.neutral[kind]:
                self._fail(f"expected attribute {kind} = {self.spec.neutral[kind]} for {self.kind}, got {p.value}")
        for kind in self.spec.required:
            if kind not in seen:
                self._fail(f"expected attribute {kind} for {self.kind}")
        if self.bias_type is not None and not (isinstance(self, ComputeBlockOp) and self.spec.biased):
            self._fail(f"'bias_type' does not apply to {self.kind}")

    def _verify_data(self) -> None:
        if self.data is None:
            return
        if not isinstance(self, StorageBlockOp) or isinstance(self, InputOp | OutputOp):
            self._fail(f"expected no 'data' for {self.kind}")
        precision = self.get_precision()
        data_precision = self.data.get_precision()
        if data_precision is not None and data_precision != precision:
            self._fail(f"expected 'data' precision {precision} (the block's), got {data_precision}")
        container = self.data.container
        expected = (
            "float" if precision in (Precision.FLOAT_16, Precision.FLOAT_32)
            else "uint32" if precision in (Precision.UINT_8, Precision.UINT_16, Precision.UINT_32, Precision.UINT_4)
            else "int32"
        )  # fmt: skip
        if container != expected:
            self._fail(f"expected 'data' of {precision} in {expected}_data, got {container}_data")
        extents = list(self.shape.extents().values())
        shape = list(self.data.values.get_shape())
        if math.prod(shape) != math.prod(extents) or (self.data.has_dims.data and shape != extents):
            self._fail(f"expected 'data' of shape {extents}, got {shape}")
        if precision in PRECISION_RANGE and math.prod(shape):
            values = self.data.to_numpy()
            lo, hi = PRECISION_RANGE[precision]
            if int(values.min()) < lo or int(values.max()) > hi:
                bad = int(values.min()) if int(values.min()) < lo else int(values.max())
                self._fail(f"expected 'data' values of {precision} in [{lo}, {hi}], got {bad}")

    def _verify_kind(self) -> None:
        """Rules of one block kind."""

    # --- text form ------------------------------------------------------------------------------------

    @classmethod
    def parse(cls, parser: Parser) -> BlockOp:
        block_id = parser.parse_integer(allow_boolean=False)
        precision = parser.parse_str_enum(Precision)
        shape = ShapeAttr.new(ShapeAttr.parse_parameters(parser))
        inputs = outputs = params = ()
        if parser.parse_optional_keyword("in") is not None:
            inputs = _parse_square_list(parser, lambda: ClusterAttr.parse_body(parser))
        if parser.parse_optional_keyword("out") is not None:
            outputs = _parse_square_list(parser, lambda: ClusterAttr.parse_body(parser))
        if parser.parse_optional_keyword("attrs") is not None:
            params = _parse_square_list(parser, lambda: ParamAttr.parse_body(parser))
        bias_type = parser.parse_str_enum(BiasType) if parser.parse_optional_keyword("bias") else None
        is_virtual = parser.parse_boolean() if parser.parse_optional_keyword("is_virtual") is not None else None
        extras: dict[str, int] = {}
        for key in ("major_task_id", "pipeline_num", "socket_id"):
            if parser.parse_optional_keyword(key) is not None:
                extras[key] = parser.parse_integer(allow_boolean=False)
        data = None
        if parser.parse_optional_keyword("data") is not None:
            parser.parse_punctuation("<")
            data = TensorAttr.parse_body(parser)
            parser.parse_punctuation(">")
        op = cls(block_id, precision, shape, inputs, outputs, params, data, bias_type, is_virtual=is_virtual, **extras)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.id} {self.get_precision()} ")
        self.shape.print_parameters(printer)
        for key, clusters in (("in", self.inputs), ("out", self.outputs)):
            if clusters.data:
                printer.print_string(f" {key} [")
                for i, cluster in enumerate(clusters.data):
                    if i:
                        printer.print_string(", ")
                    cluster.print_body(printer)
                printer.print_string("]")
        if self.params.data:
            printer.print_string(" attrs [")
            for i, p in enumerate(self.params.data):
                if i:
                    printer.print_string(", ")
                p.print_body(printer)
            printer.print_string("]")
        if self.bias_type is not None:
            printer.print_string(f" bias {self.bias_type.data}")
        if self.is_virtual is not None:
            printer.print_string(f" is_virtual {'true' if self.is_virtual.data else 'false'}")
        for key in ("major_task_id", "pipeline_num", "socket_id"):
            value = getattr(self, key)
            if value is not None:
                printer.print_string(f" {key} {value.data}")
        if self.data is not None:
            printer.print_string(" data ")
            self.data.print_parameters(printer)
        printer.print_op_attributes(self.attributes)


class StorageBlockOp(BlockOp):
    """A block that holds data: its value has the block's shape, read and written through boxes."""


    def _expected_input_counts(self) -> tuple[int, int]:
        return (0, 1)

    def derived_input_extents(self, k: int) -> dict[str, int]:
        renamed = {self.spec.in_rename.get(d, d): v for d, v in self.shape.extents().items()}
        return {d: renamed[d] for d in DIMS if d in renamed}


class ComputeBlockOp(BlockOp):
    """A block that computes one output cluster from its inputs."""


    def input_roles(self) -> list[str]:
        return [*self.spec.roles, *(["bias"] if self.has_vector_bias else [])]

    def _expected_input_counts(self) -> tuple[int, int]:
        n = len(self.input_roles())
        return (n, n)

    def _yxf(self, y: str = "y", x: str = "x") -> dict[str, int]:
        """(y, x, f) extents, taking y and x from the given dims."""
        s = self.shape
        return {d: v for d, v in (("y", s.dim(y)), ("x", s.dim(x)), ("f", s.dim("f"))) if v}

    def derived_input_extents(self, k: int) -> dict[str, int]:
        if self.input_roles()[k] == "bias":
            return {"f": self.shape.dim("f")}
        return self._yxf()

    def derived_output_extents(self, k: int) -> dict[str, int]:
        return self._yxf()

    def window(self) -> tuple[int, int, int, int, int, int, int, int, int, int]:
        """(ky, kx, stride_y, stride_x, pad_up, pad_down, pad_left, pad_right, dilation_y, dilation_x)."""
        s = self.shape
        return (
            s.dim("ky") or 1, s.dim("kx") or 1,
            self.int_param(P.STRIDE_Y, 1), self.int_param(P.STRIDE_X, 1),
            self.int_param(P.PAD_UP), self.int_param(P.PAD_DOWN),
            self.int_param(P.PAD_LEFT), self.int_param(P.PAD_RIGHT),
            self.int_param(P.DILATION_Y, 1), self.int_param(P.DILATION_X, 1),
        )  # fmt: skip

    def _verify_window(self) -> None:
        s = self.shape
        for kind, d in ((P.KERNEL_Y, "ky"), (P.KERNEL_X, "kx")):
            if (p := self.param(kind)) is not None and p.value != s.dim(d):
                self._fail(f"expected attribute {kind} = {s.dim(d)} (shape '{d}'), got {p.value}")
        if not s.dim("y"):
            if s.dim("ky") != 1 or s.dim("kx") != 1 or s.dim("iy"):
                self._fail(f"expected a 1x1 window and no 'iy'/'ix' for a 1-D {self.kind}")
            return
        if not s.dim("iy"):
            self._fail(f"expected shape 'iy' and 'ix' for a 2-D {self.kind}")
        ky, kx, sy, sx, pu, pd, pl, pr, dy, dx = self.window()
        axes = (("y", s.dim("iy"), ky, sy, pu + pd, dy), ("x", s.dim("ix"), kx, sx, pl + pr, dx))
        for d, n, k, stride, pad, dil in axes:
            expected = (n + pad - dil * (k - 1) - 1) // stride + 1
            if expected < 1 or s.dim(d) != expected:
                self._fail(f"expected shape '{d}' = {expected} from the window over 'i{d}' = {n}, got {s.dim(d)}")


# --- storage blocks ----------------------------------------------------------------------------------------


@irdl_op_definition
class SiOp(StorageBlockOp):
    """SI: general storage of (y, x, f) data (or 1-D (f) data)."""

    name = "taskgraph.si"


@irdl_op_definition
class SicOp(StorageBlockOp):
    """SIC: the (y, x, r) input of a CC; takes (y, x, f) data in.

    Its output cluster is (y, x, r), its input cluster (y, x, f = r): the same values.
    """

    name = "taskgraph.sic"


@irdl_op_definition
class Sic2dOp(StorageBlockOp):
    """SIC2D: the (y, x, r) input of a CC2D (the first-layer convolution, r < 8)."""

    name = "taskgraph.sic2d"


@irdl_op_definition
class SifcOp(StorageBlockOp):
    """SIFC: the (r) input vector of a CVM; takes an (f = r) vector in."""

    name = "taskgraph.sifc"


@irdl_op_definition
class SwOp(StorageBlockOp):
    """SW: convolution weights W[f, r, ky, kx]."""

    name = "taskgraph.sw"


@irdl_op_definition
class Sw2dOp(StorageBlockOp):
    """SW2D: the weights W[f, r, ky, kx] of a CC2D."""

    name = "taskgraph.sw2d"


@irdl_op_definition
class SwfcOp(StorageBlockOp):
    """SWFC: the weight matrix W[f, r] of a CVM."""

    name = "taskgraph.swfc"


@irdl_op_definition
class SbOp(StorageBlockOp):
    """SB: a vector[f]: a bias, the alpha of a CAX, the table of a CLUT."""

    name = "taskgraph.sb"


@irdl_op_definition
class InputOp(StorageBlockOp):
    """INPUT: a port of the graph; its (y, x, f) values come from outside at each step."""

    name = "taskgraph.input"

    def _expected_input_counts(self) -> tuple[int, int]:
        return (0, 0)


@irdl_op_definition
class OutputOp(StorageBlockOp):
    """OUTPUT: a port of the graph; holds the (y, x, f) values the graph gives out."""

    name = "taskgraph.output"

    def _expected_input_counts(self) -> tuple[int, int]:
        return (1, 1)

    def _expected_output_count(self) -> int:
        return 0


# --- compute blocks ----------------------------------------------------------------------------------------


@irdl_op_definition
class CaddOp(ComputeBlockOp):
    """CADD: elementwise sum of n inputs, plus bias.

    out[y, x, f] = sum_i in_i[y, x, f] + bias[f]  (bias from an SB when VECTOR, else CONSTANT_B)
    """

    name = "taskgraph.cadd"

    def input_roles(self) -> list[str]:
        n = len(self.inputs.data) - (1 if self.has_vector_bias else 0)
        return ["input"] * max(n, 0) + (["bias"] if self.has_vector_bias else [])

    def _expected_input_counts(self) -> tuple[int, int]:
        bias = 1 if self.has_vector_bias else 0
        return (1 + bias, 2**31)

    def _verify_kind(self) -> None:
        n_branch = self.shape.dim("n_branch")
        n = self.input_roles().count("input")
        if n_branch and n_branch != n:
            self._fail(f"expected shape 'n_branch' = {n} (the data inputs), got {n_branch}")


@irdl_op_definition
class CavgOp(ComputeBlockOp):
    """CAVG: window sum (not the mean) with zero padding, plus bias.

    out[y, x, f] = sum_{ky, kx} pad(in)[y * sy + ky, x * sx + kx, f] + bias[f]
    """

    name = "taskgraph.cavg"

    def derived_input_extents(self, k: int) -> dict[str, int]:
        return super().derived_input_extents(k) if k else self._yxf("iy", "ix")

    def _verify_kind(self) -> None:
        self._verify_window()


@irdl_op_definition
class CvvhOp(ComputeBlockOp):
    """CVVH: elementwise (Hadamard) product, plus bias.

    out[y, x, f] = in1[y, x, f] * in2[y, x, f] + bias[f]
    """

    name = "taskgraph.cvvh"


@irdl_op_definition
class CvmOp(ComputeBlockOp):
    """CVM: vector-matrix product, plus bias.

    out[f] = sum_r W[f, r] * in[r] + bias[f]
    """

    name = "taskgraph.cvm"

    def derived_input_extents(self, k: int) -> dict[str, int]:
        s = self.shape
        return [{"r": s.dim("r")}, {"f": s.dim("f"), "r": s.dim("r")}, {"f": s.dim("f")}][k]


class ConvBlockOp(ComputeBlockOp):
    """CC and CC2D: input (iy, ix, r), weight [f, r, ky, kx], bias [f]."""

    def derived_input_extents(self, k: int) -> dict[str, int]:
        s = self.shape
        return [
            {"y": s.dim("iy"), "x": s.dim("ix"), "r": s.dim("r")},
            {"f": s.dim("f"), "r": s.dim("r"), "ky": s.dim("ky"), "kx": s.dim("kx")},
            {"f": s.dim("f")},
        ][k]

    def _verify_kind(self) -> None:
        self._verify_window()


@irdl_op_definition
class CcOp(ConvBlockOp):
    """CC: 2-D convolution with stride, dilation and zero padding, plus bias.

    out[y, x, f] = sum_{r, ky, kx} pad(in)[y * sy + ky * dy, x * sx + kx * dx, r] * W[f, r, ky, kx] + bias[f]
    """

    name = "taskgraph.cc"


@irdl_op_definition
class Cc2dOp(ConvBlockOp):
    """CC2D: the first-layer 2-D convolution (r < 8); computes as CC.

    out[y, x, f] = sum_{r, ky, kx} pad(in)[y * sy + ky * dy, x * sx + kx * dx, r] * W[f, r, ky, kx] + bias[f]
    """

    name = "taskgraph.cc2d"


@irdl_op_definition
class CaxOp(ComputeBlockOp):
    """CAX: scaling by a vector, plus bias.

    out[y, x, f] = in[y, x, f] * a[f] + bias[f]
    """

    name = "taskgraph.cax"

    def derived_input_extents(self, k: int) -> dict[str, int]:
        return {"f": self.shape.dim("f")} if k else self._yxf()


@irdl_op_definition
class CvsOp(ComputeBlockOp):
    """CVS: scaling by the constant CONSTANT_A, plus bias.

    out[y, x, f] = in[y, x, f] * CONSTANT_A + bias[f]
    """

    name = "taskgraph.cvs"


class _CompareOp(ComputeBlockOp):

    def derived_input_extents(self, k: int) -> dict[str, int]:
        return self._yxf("iy", "ix")

    def _verify_kind(self) -> None:
        self._verify_window()
        if self.get_precision() not in PRECISION_RANGE:
            self._fail(f"expected an integer 'precision' for {self.kind} (it saturates), got {self.get_precision()}")


@irdl_op_definition
class CcmpbOp(_CompareOp):
    """CCMPB: window maximum (padding reads 0), shifted and clipped; with a 1x1 window, ReLU + requantize.

    out[y, x, f] = min(max(max_{ky, kx} pad(in)[y * sy + ky, x * sx + kx, f] >> BIT_SHIGT_NUM, CMP), hi)
    where hi is the largest value of the block's precision (127 for INT_8).
    """

    name = "taskgraph.ccmpb"


@irdl_op_definition
class CcmpsOp(_CompareOp):
    """CCMPS: window minimum from CMP, shifted and saturated to the block's precision.

    out[y, x, f] = sat(min(CMP, min_{ky, kx} pad(in)[y * sy + ky, x * sx + kx, f]) >> BIT_SHIGT_NUM)
    """

    name = "taskgraph.ccmps"


@irdl_op_definition
class ClutOp(ComputeBlockOp):
    """CLUT: table lookup, the input saturated to LUT_DW bits and read as two's complement.

    out[y, x, f] = lut[v if v >= 0 else v + 2^LUT_DW], v = clamp(in[y, x, f], -2^(LUT_DW-1), 2^(LUT_DW-1) - 1)
    """

    name = "taskgraph.clut"

    def derived_input_extents(self, k: int) -> dict[str, int]:
        return {"f": 2 ** self.int_param(P.LUT_DW)} if k else self._yxf()


@irdl_op_definition
class ClifOp(ComputeBlockOp):
    """CLIF: leaky integrate-and-fire; inputs are the current x, the membrane potential V and
    (optionally) a refractory count; V' replaces the membrane potential's source after each step.

    v = clamp28(x + V); spike = v > VTH0; v = spike ? VR : v;
    V' = clamp28(VLEAKY_ADPT_EN ? floor(VLEAKY_ALPHA * v / 256) + VLEAKY_BETA : v + VLEAKY_BETA); out = spike
    """

    name = "taskgraph.clif"

    def input_roles(self) -> list[str]:
        return ["input", "membrane", "refractory"][: max(len(self.inputs.data), 2)]

    def _expected_input_counts(self) -> tuple[int, int]:
        return (2, 3)


BLOCK_OPS: tuple[type[BlockOp], ...] = (
    SiOp, SwOp, Sic2dOp, SifcOp, SicOp, SbOp, SwfcOp, Sw2dOp,
    CaddOp, CvvhOp, CvmOp, CcOp, CaxOp, Cc2dOp, CvsOp, CcmpbOp, CavgOp, CcmpsOp, ClutOp, ClifOp,
    InputOp, OutputOp,
)  # fmt: skip
BLOCK_OP_OF_KIND: dict[str, type[BlockOp]] = {op.kind_name(): op for op in BLOCK_OPS}

TaskGraph = Dialect(
    "taskgraph",
    [GraphOp, EdgeOp, GroupOp, *BLOCK_OPS],
    [
        PrecisionAttr,
        BiasTypeAttr,
        ParamKindAttr,
        RearrangeKindAttr,
        ShapeAttr,
        InterfaceAttr,
        ClusterAttr,
        TensorAttr,
        ParamAttr,
        RearrangeAttr,
    ],
)
