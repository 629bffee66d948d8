"""The `cvmc` dialect: the loop level's micro-kernel ops, which no upstream dialect has.

The lowering builds them (`passes.loops.x86` for the x86 CPU, `passes.loops.gpu` for CUDA) and the printers
lower them (`codegen.llvm_x86`, `codegen.cuda`). Declared here so that every stage of a compile, dumped as text,
parses back and lowers on (`cvm-opt loops.mlir -t llvm-ir`). They print in generic form, their parameters as
declared properties (what the printers read):

    %s = "cvmc.dot_u8s8"(%a, %i, %j, %w, %o) <{depth = 64 : i64, split = 3 : i64}> : (memref<8x64xi8>, index,
         index, memref<16x64xi8>, index) -> i32
    "cvmc.mmk_u8s8"(%a, %i, %w, %b, %s, %t, %acc, %p, %q) <{depth = 64 : i64, split = 2 : i64, acc_split = 6 : i64,
         rows = 4 : i64, lanes = 16 : i64, row_stride = 64 : i64, kh = 1 : i64, stride_h = 0 : i64, kw = 1 : i64,
         stride_w = 0 : i64, isa = "avx512-vnni"}> : (...) -> ()
    %r = "cvmc.dp4a"(%a, %b, %acc) : (i32, i32, i32) -> i32

The CINN lowering also emits four float ops that xDSL 0.74's `math` and `arith` lack, under their upstream MLIR
names: `math.isnan`, `math.isinf`, `math.isfinite` (float -> i1) and `arith.remf` (C's fmod); with
`arith.index_castui`, which the printers take, they are declared here too (`CvmcUpstream`), loaded eagerly where
IR is parsed since their namespaces belong to other dialects.

Verifiers check the shape of the operand lists (where each memref's indices start, their count and types, the
element types); the printers check what they need of the properties' values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    AnyFloat,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    i1,
    i8,
    i16,
    i32,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from cvmc.dialects.narrow import is_memref
from cvmc.dialects.target_rules import TIERS, VECTOR_BYTES, target_error

__all__ = ["TIERS", "VECTOR_BYTES", "Cvmc", "CvmcUpstream", "TargetAttr", "target_error"]


def _int(op: IRDLOperation, name: str, default: int | None = None) -> int:
    attr = op.properties.get(name)
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    if default is None:
        raise VerifyException(f"expected an integer attribute '{name}'")
    return default


def _check_access(what: str, operands: Sequence[SSAValue], element: Attribute | None) -> None:
    """`operands` = a memref and the indices of its first element read or written: one per dimension, or a prefix
    of them (the rest 0: a row the op reads on from there); `element`: the memref's element type."""
    mem, *indices = operands
    mem_t = mem.type
    if not is_memref(mem_t):
        raise VerifyException(f"expected '{what}' to be a memref, got {mem_t}")
    if element is not None and mem_t.element_type != element:
        raise VerifyException(f"expected '{what}' of element type {element}, got {mem_t.element_type}")
    rank = len(mem_t.get_shape())
    if len(indices) > rank or any(not isinstance(i.type, IndexType) for i in indices):
        raise VerifyException(f"expected '{what}' followed by at most {rank} index operands, got "
                              f"{[str(i.type) for i in indices]}")


def _split(op: IRDLOperation, name: str, lo: int, hi: int) -> int:
    split = _int(op, name)
    if not lo <= split <= hi:
        raise VerifyException(f"expected '{name}' in [{lo}, {hi}], got {split}")
    return split


@irdl_op_definition
class DotU8S8Op(IRDLOperation):
    """u8 x s8 dot products (`vpdpbusd`): for r < rows, sum over i < depth of a[a_idx + (..., r, i)] * b[b_idx +
    (..., i)] in int32, wrapping; `depth` a multiple of 64.

    Operands: a, its indices, b, its indices (`split`: where b starts); `rows` (default 1) results, the rows of a
    consecutive along its second-to-last dimension, sharing each load of b; `emulated` = 1: portable IR.
    """

    name = "cvmc.dot_u8s8"
    operands_ = var_operand_def()
    results_ = var_result_def(i32)
    depth = prop_def(IntegerAttr)
    split = prop_def(IntegerAttr)
    rows = opt_prop_def(IntegerAttr)
    emulated = opt_prop_def(IntegerAttr)

    def verify_(self) -> None:
        split = _split(self, "split", 1, len(self.operands) - 1)
        _check_access("a", self.operands[:split], i8)
        _check_access("b", self.operands[split:], i8)
        depth = _int(self, "depth")
        if depth <= 0 or depth % 64:
            raise VerifyException(f"expected 'depth' a positive multiple of 64, got {depth}")
        rows = _int(self, "rows", 1)
        if len(self.results) != rows:
            raise VerifyException(f"expected {rows} results (rows), got {len(self.results)}")


class _MmkOp(IRDLOperation):
    """The register-blocked micro-kernel (see `passes.loops.x86.mmk`): acc[acc_idx + (l, r)] (or (r, l) with
    `pixel_major`) = the int32 sum over taps and i < depth of a[...] * b[block][...] for r < rows, l < lanes.

    Operands: a, its indices, b, its indices, acc, its indices (`split`, `acc_split`: where b and acc start)."""

    ELEMENT: ClassVar[Attribute] = i16
    GROUP: ClassVar[int] = 2  # reduction elements per 32-bit lane step
    ISAS: ClassVar[tuple[str, ...]] = ("avx2",)  # `isa` values allowed ("avx2" when absent)

    operands_ = var_operand_def()
    depth = prop_def(IntegerAttr)
    split = prop_def(IntegerAttr)
    acc_split = prop_def(IntegerAttr)
    rows = prop_def(IntegerAttr)
    lanes = prop_def(IntegerAttr)
    row_stride = prop_def(IntegerAttr)
    kh = prop_def(IntegerAttr)
    stride_h = prop_def(IntegerAttr)
    kw = prop_def(IntegerAttr)
    stride_w = prop_def(IntegerAttr)
    pixel_major = opt_prop_def(IntegerAttr)
    isa = opt_prop_def(StringAttr)
    emulated = opt_prop_def(IntegerAttr)

    def verify_(self) -> None:
        n = len(self.operands)
        split = _split(self, "split", 1, n - 2)
        acc_split = _split(self, "acc_split", split + 1, n - 1)
        _check_access("a", self.operands[:split], self.ELEMENT)
        _check_access("b", self.operands[split:acc_split], self.ELEMENT)
        _check_access("acc", self.operands[acc_split:], i32)
        depth, rows, lanes, kh, kw = (_int(self, name) for name in ("depth", "rows", "lanes", "kh", "kw"))
        if depth <= 0 or depth % self.GROUP:
            raise VerifyException(f"expected 'depth' a positive multiple of {self.GROUP}, got {depth}")
        if rows <= 0 or kh <= 0 or kw <= 0:
            raise VerifyException(f"expected 'rows', 'kh' and 'kw' > 0, got {rows}, {kh}, {kw}")
        if lanes <= 0 or lanes % 8:
            raise VerifyException(f"expected 'lanes' a positive multiple of 8, got {lanes}")
        isa_name = self.isa.data if self.isa is not None else "avx2"
        if isa_name not in self.ISAS:
            raise VerifyException(f"expected 'isa' one of {', '.join(self.ISAS)} for {self.name}, got {isa_name}")
        if isa_name != "avx2" and lanes % 16:
            raise VerifyException(f"expected 'lanes' a multiple of 16 for isa {isa_name}, got {lanes}")
        if isa_name == "amx" and (lanes != 16 or rows > 16):
            raise VerifyException(f"expected 16 'lanes' and at most 16 'rows' for isa amx, got {lanes} and {rows}")


@irdl_op_definition
class MmkI16Op(_MmkOp):
    """`_MmkOp` on int16 operands, two reduction elements per 32-bit lane step (`vpmaddwd`)."""

    name = "cvmc.mmk_i16"
    ELEMENT: ClassVar[Attribute] = i16
    ISAS: ClassVar[tuple[str, ...]] = ("avx2",)


@irdl_op_definition
class MmkU8S8Op(_MmkOp):
    """`_MmkOp` on u8 x s8 operands, four per lane step; `isa`: "avx512-vnni" (`vpdpbusd`), "amx" (tiles), none
    for AVX2 (`vpmaddubsw`); `emulated` = 1: the tier's sums in portable IR."""

    name = "cvmc.mmk_u8s8"
    ELEMENT: ClassVar[Attribute] = i8
    GROUP: ClassVar[int] = 4
    ISAS: ClassVar[tuple[str, ...]] = ("avx2", "avx512-vnni", "amx")


@irdl_op_definition
class PackTileOp(IRDLOperation):
    """out[out_idx + (j, i)] = inside ? byte(src[src_idx + (i, j)] + zero_point) : byte(zero_point), i, j < 8:
    8 x 8 int32 narrowed to bytes and transposed. Operands: src, its indices, out, its indices (`split`: where
    out starts), inside (i1)."""

    name = "cvmc.pack_tile"
    operands_ = var_operand_def()
    split = prop_def(IntegerAttr)
    zero_point = prop_def(IntegerAttr)

    def verify_(self) -> None:
        n = len(self.operands)
        split = _split(self, "split", 1, n - 2)
        _check_access("src", self.operands[:split], i32)
        _check_access("out", self.operands[split:n - 1], i8)
        if self.operands[-1].type != i1:
            raise VerifyException(f"expected the last operand 'inside' of type i1, got {self.operands[-1].type}")


@irdl_op_definition
class Dp4aOp(IRDLOperation):
    """acc + the sum of the products of the four signed bytes of a and b (CUDA's `__dp4a`), exact.

        %r = "cvmc.dp4a"(%a, %b, %acc) : (i32, i32, i32) -> i32
    """

    name = "cvmc.dp4a"
    a = operand_def(i32)
    b = operand_def(i32)
    acc = operand_def(i32)
    result = result_def(i32)
    traits = traits_def(Pure())


@irdl_op_definition
class LoadWordOp(IRDLOperation):
    """The four bytes of an i8 memref from an index on (4-byte aligned) as one i32, little-endian.

        %w = "cvmc.load_word"(%m, %i) : (memref<64xi8>, index) -> i32
    """

    name = "cvmc.load_word"
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    result = result_def(i32)

    def verify_(self) -> None:
        _check_access("memref", self.operands, i8)


class _FloatTestOp(IRDLOperation):
    operand = operand_def(AnyFloat)
    result = result_def(IntegerType(1))
    traits = traits_def(Pure())


@irdl_op_definition
class IsNanOp(_FloatTestOp):
    """x is a NaN (MLIR's `math.isnan`)."""

    name = "math.isnan"


@irdl_op_definition
class IsInfOp(_FloatTestOp):
    """x is +-inf (MLIR's `math.isinf`)."""

    name = "math.isinf"


@irdl_op_definition
class IsFiniteOp(_FloatTestOp):
    """x is neither a NaN nor +-inf (MLIR's `math.isfinite`)."""

    name = "math.isfinite"


@irdl_op_definition
class RemFOp(IRDLOperation):
    """The float remainder of lhs / rhs with the sign of lhs, C's fmod (MLIR's `arith.remf`)."""

    name = "arith.remf"
    lhs = operand_def(AnyFloat)
    rhs = operand_def(AnyFloat)
    result = result_def(AnyFloat)
    traits = traits_def(Pure())

    def verify_(self) -> None:
        if not self.lhs.type == self.rhs.type == self.result.type:
            raise VerifyException(f"expected one float type, got {self.lhs.type}, {self.rhs.type} -> "
                                  f"{self.result.type}")


# --------------------------------------------------------------------------------------------------------------
# The target: what the loop level and code generation build for
# --------------------------------------------------------------------------------------------------------------

@irdl_attr_definition
class TargetAttr(ParametrizedAttribute):
    """What the loop level and code generation build for, on a module as `cvmc.target`
    (`passes.loops.target.Target` is its Python face). An x86 CPU: its ISA tier (`tier`, each implying the tiers
    before it in TIERS), `mmk` (the register-blocked micro-kernels), `emulated` (the tier's kernels in portable
    IR), the LLVM CPU and features code generation compiles for (`cpu`, `features`; empty: this machine's CPU, the
    CPU's own features) and the width of the float vector registers the cinn kernels block for (`vector_bytes`).
    A CUDA GPU: its architecture (`arch`) alone.

        #cvmc.target<x86, tier = "avx2", mmk = true, emulated = false, vector_bytes = 32>
        #cvmc.target<x86, tier = "avx2", mmk = true, emulated = false, vector_bytes = 32, cpu = "x86-64-v3",
                     features = "+avx2,+fma,-avx512f">
        #cvmc.target<cuda, arch = "sm_90">
    """

    name = "cvmc.target"

    tier: StringAttr
    arch: StringAttr  # "" for a CPU
    mmk: IntAttr
    emulated: IntAttr
    cpu: StringAttr
    features: StringAttr
    vector_bytes: IntAttr

    _KEYS: ClassVar[dict[str, tuple[str, ...]]] = {
        "x86": ("tier", "mmk", "emulated", "vector_bytes", "cpu", "features"), "cuda": ("arch",)}

    def __init__(self, tier: str = "avx2", arch: str = "", mmk: bool = True, emulated: bool = False, cpu: str = "",
                 features: str = "", vector_bytes: int = 32):
        super().__init__(StringAttr(tier), StringAttr(arch), IntAttr(int(mmk)), IntAttr(int(emulated)),
                         StringAttr(cpu), StringAttr(features), IntAttr(vector_bytes))

    def verify(self) -> None:
        for name, flag in (("mmk", self.mmk), ("emulated", self.emulated)):
            if flag.data not in (0, 1):
                raise VerifyException(f"expected '{name}' 0 or 1, got {flag.data}")
        error = target_error(self.tier.data, self.arch.data or None, bool(self.mmk.data), bool(self.emulated.data),
                             self.cpu.data, self.features.data, self.vector_bytes.data)
        if error is not None:
            raise VerifyException(error)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            if self.arch.data:
                printer.print_string("cuda, arch = ")
                printer.print_string_literal(self.arch.data)
                return
            printer.print_string("x86, tier = ")
            printer.print_string_literal(self.tier.data)
            mmk, emulated = ("true" if flag.data else "false" for flag in (self.mmk, self.emulated))
            printer.print_string(f", mmk = {mmk}, emulated = {emulated}, vector_bytes = {self.vector_bytes.data}")
            for key, value in (("cpu", self.cpu.data), ("features", self.features.data)):
                if value:
                    printer.print_string(f", {key} = ")
                    printer.print_string_literal(value)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        """`<x86` or `<cuda`, then `, key = value` in any order (each at most once; absent: its default), `>`."""
        start = parser.pos
        with parser.in_angle_brackets():
            kind = parser.parse_keyword_in(tuple(cls._KEYS), " as the kind of target")
            seen: set[str] = set()
            strings: dict[str, str] = {}
            flags: dict[str, bool] = {}
            vector_bytes = 32
            while parser.parse_optional_punctuation(",") is not None:
                at = parser.pos
                key = parser.parse_identifier(" (a target field)")
                if key not in cls._KEYS[kind]:
                    parser.raise_error(f"expected a field of the {kind} target in {', '.join(cls._KEYS[kind])}, got "
                                       f"{key!r}", at, parser.pos)
                if key in seen:
                    parser.raise_error(f"expected each target field once, got {key!r} twice", at, parser.pos)
                seen.add(key)
                parser.parse_punctuation("=")
                if key in ("mmk", "emulated"):
                    flags[key] = parser.parse_boolean(f" as '{key}'")
                elif key == "vector_bytes":
                    vector_bytes = parser.parse_integer(allow_boolean=False, context_msg=" as 'vector_bytes'")
                else:
                    strings[key] = parser.parse_str_literal(f" as '{key}'")
        if kind == "cuda" and "arch" not in seen:
            parser.raise_error("expected the field 'arch' of a cuda target")
        try:
            return TargetAttr(strings.get("tier", "avx2"), strings.get("arch", ""), flags.get("mmk", True),
                              flags.get("emulated", False), strings.get("cpu", ""), strings.get("features", ""),
                              vector_bytes).parameters
        except VerifyException as e:
            parser.raise_error(str(e), start, parser.pos)


@irdl_op_definition
class IndexCastUIOp(IRDLOperation):
    """An index to or from an integer, zero-extended or truncated (MLIR's `arith.index_castui`; `arith.index_cast`
    sign-extends).

        %i = arith.index_castui %x : i32 to index
    """

    name = "arith.index_castui"
    input = operand_def(IntegerType | IndexType)
    result = result_def(IntegerType | IndexType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"

    def verify_(self) -> None:
        if isinstance(self.input.type, IndexType) == isinstance(self.result.type, IndexType):
            raise VerifyException(f"expected one of the operand and the result an index, got {self.input.type} -> "
                                  f"{self.result.type}")


Cvmc = Dialect("cvmc", [DotU8S8Op, MmkI16Op, MmkU8S8Op, PackTileOp, Dp4aOp, LoadWordOp], [TargetAttr])
# Ops of upstream namespaces that xDSL 0.74 lacks: load them eagerly (`Context.load_dialect`), since a lookup of
# `math.isnan` by its namespace finds xDSL's `math`.
CvmcUpstream = Dialect("cvmc_upstream", [IsNanOp, IsInfOp, IsFiniteOp, RemFOp, IndexCastUIOp], [])
