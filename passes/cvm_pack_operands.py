"""`cvm-pack-operands`: the operands of each conv2d and dense become `cvm_sched.pack`s, as its micro-kernel reads
them, in the element type that their values' bounds (`cvm_value_bits`) and the target allow.

- conv2d: the data as zero-padded NHWC, the weight as rows of the reduction (kh, kw, c), or, for the
  register-blocked micro-kernels (`cvmc.mmk_*`: a param weight, one group, a CPU target with them), as rows of
  `lanes` output channels interleaved by `group` reduction elements; a conv2d whose im2col row would not fit the
  stack (`loops.ops.conv2d_fits`) is left alone: the direct loop nest reads it unpacked;
- dense: both operands as rows of the reduction, zero-extended to the packed width.

The element type (`dot_elements`): both i8 on a GPU when both fit 8 bits (`__dp4a`); u8 (x + 128, `zero_point`)
x i8 when both fit 8 bits and the target has AVX512-VNNI (`vpdpbusd`); u8 (no zero point) x i8 for the blocked
conv2d of non-negative data on AVX2 (`vpmaddubsw` never saturates: x in [0, 127]); else i16 when both fit 16 bits
(`vpmaddwd` / `vpdpwssd`), else i32. An operand packed the same way for several ops is packed once, before the
first.

    %c = cvm.conv2d %data, %w {channels = 4 : i64, kernel_size = array<i64: 3, 3>, padding = ...} : ...

becomes

    %0 = cvm_sched.pack %data {to = "nhwc", padding = array<i64: 1, 1>} : ... -> tensor<1x10x10x3xi16>
    %1 = cvm_sched.pack %w {to = "conv_weight_blocked", width = 28 : i64, lanes = 16 : i64, group = 2 : i64} : ...
    %c = cvm.conv2d %0, %1 {channels = 4 : i64, ...} : (tensor<1x10x10x3xi16>, tensor<1x14x32xi16>) -> ...

A conv2d or dense then reads packed operands: its own verifier is not run on them (its shape rules are those of
the unpacked operands, checked before this pass).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Any

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, StringAttr, TensorType, i8, i16, i32, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.utils.exceptions import PassFailedException

from cvmc.dialects.cvm import Conv2dOp, DenseOp, ParamOp, cvm_attrs, tensor_shape
from cvmc.dialects.cvm_sched import PackOp, ui8
from cvmc.passes.cvm_value_bits import ValueBits
from cvmc.passes.loops import ops, x86
from cvmc.passes.loops.target import DEFAULT, Target, module_target

Packing = tuple[dict[str, Any], tuple[int, ...], str]  # how (`loops.ops.pack`'s attributes), shape, element
ELEMENT_TYPES: dict[str, Attribute] = {"i32": i32, "i16": i16, "i8": i8, "u8": ui8}


def fits_u8s8(data_bits: int, weight_bits: int, target: Target) -> bool:
    """Whether a non-negative data of `data_bits` against weights of `weight_bits` may take the blocked u8 x s8
    micro-kernel (`vpmaddubsw`, AVX2): both fit int8 and the target has AVX2, so x in [0, 127] and |w| <= 127,
    and a pair of products never leaves int16 (2 * 127 * 127 = 32258 <= 32767: no saturation)."""
    return data_bits <= 8 and weight_bits <= 8 and target.blocked and target.has("avx2")


def dot_elements(data_bits: int, weight_bits: int, target: Target = DEFAULT) -> tuple[str, str]:
    """The packed element types of a conv2d's or dense's (data, weight) from their value bounds (precisions):
    u8 (x + 128) x s8 when both fit int8 and the target has AVX512-VNNI (`vpdpbusd`), else int16 when both fit
    int16 (`vpdpwssd` / `vpmaddwd`), else int32. On the GPU both fitting int8 are signed bytes (`__dp4a`)."""
    if data_bits <= 8 and weight_bits <= 8 and target.gpu is not None:
        return "i8", "i8"
    if data_bits <= 8 and weight_bits <= 8 and target.has("avx512-vnni"):
        return "u8", "i8"
    element = "i32" if data_bits > 16 or weight_bits > 16 else "i16"
    return element, element


def dot_packing(op: str, attrs: dict[str, Any], x: tuple[int, ...], w: tuple[int, ...], x_bits: int, w_bits: int,
                x_nonnegative: bool, w_param: bool, target: Target) -> list[Packing] | None:
    """How a conv2d or dense (`op`) packs its (data, weight) of shapes `x`, `w`; None: a conv2d whose im2col row
    would not fit the stack, computed by the direct loop nest from its operands as they are."""
    element, weight = dot_elements(x_bits, w_bits, target)
    may_block = op == "conv2d" and attrs["groups"] == 1 and w_param and target.blocked
    blocked = may_block and element == "i16"
    if may_block and x_nonnegative and fits_u8s8(x_bits, w_bits, target):
        # x in [0, 127]: `vpmaddubsw` never saturates (`x86.MMK_U8S8`); `vpdpbusd` never does
        element, weight, blocked = "u8", "i8", True
        shift: dict[str, Any] = {}
    else:  # VNNI's u8: x + 128 (`vpdpbusd` never saturates), the kernel subtracts 128 * sum(w)
        shift = {"zero_point": x86.ZERO_POINT} if element == "u8" else {}
        blocked = blocked or (may_block and element == "u8")
    if op == "conv2d" and not ops.conv2d_fits(attrs, w, element, target):
        return None
    if op == "dense":
        width = ops.padded(x[1], element, target)
        return [({"to": "rows", "width": width, **shift}, (x[0], width), element),
                ({"to": "rows", "width": width}, (w[0], width), weight)]
    (ph, pw), width = attrs["padding"], ops.padded(prod(w[1:]), element, target)
    data = ({"to": "nhwc", "padding": (ph, pw), **shift}, (x[0], x[2] + 2 * ph, x[3] + 2 * pw, x[1]), element)
    if not blocked:
        return [data, ({"to": "conv_weight", "width": width}, (w[0], width), weight)]
    # the register-blocked micro-kernel (x86.MMK_I16, x86.MMK_U8S8)
    group = 4 if element == "u8" else 2  # reduction elements per 32-bit lane step
    width = -(-prod(w[1:]) // group) * group  # no padding beyond a multiple of the group
    lanes = x86.mmk_lanes(element, w[0], target)
    how = {"to": "conv_weight_blocked", "width": width, "lanes": lanes, "group": group}
    return [data, (how, (-(-w[0] // lanes), width // group, group * lanes), weight)]


def pack_op(source: SSAValue, packing: Packing) -> PackOp:
    """`cvm_sched.pack` of `source` as `packing` says."""
    how, shape, element = packing
    props: dict[str, Attribute] = {"to": StringAttr(how["to"])}
    for name, value in how.items():
        if name == "padding":
            props[name] = DenseArrayBase.from_list(i64, list(value))
        elif name != "to":
            props[name] = IntegerAttr(value, 64)
    return PackOp.create(operands=[source], result_types=[TensorType(ELEMENT_TYPES[element], shape)],
                         properties=props)


@dataclass
class PackDotOperands(RewritePattern):
    """A conv2d or dense of unpacked operands reads them packed (a pack op before it, or the same one before an
    earlier op)."""

    bits: ValueBits
    target: Target
    made: dict[tuple[SSAValue, str], PackOp] = field(default_factory=dict[tuple[SSAValue, str], PackOp])

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, Conv2dOp | DenseOp):
            return
        x, w = op.operands[0], op.operands[1]
        if isinstance(x.owner, PackOp) or isinstance(w.owner, PackOp):
            return  # packed already
        xs, ws = tensor_shape(x.type), tensor_shape(w.type)
        if xs is None or ws is None:
            raise PassFailedException(f"{op.name}: expected operands of static shapes, got {x.type} and {w.type}")
        packings = dot_packing(op.op_name, cvm_attrs(op), xs, ws, self.bits.bits(x), self.bits.bits(w),
                               self.bits.nonnegative(x), isinstance(w.owner, ParamOp), self.target)
        if packings is None:
            return
        for k, (source, packing) in enumerate(zip((x, w), packings)):
            key = (source, f"{packing[2]} {sorted(packing[0].items())}")
            if key not in self.made:
                self.made[key] = pack_op(source, packing)
                rewriter.insert(self.made[key])
            rewriter.replace_uses_with_if(source, self.made[key].result, lambda u, o=op, i=k: u.operation is o
                                          and u.index == i)


@dataclass(frozen=True)
class CvmPackOperandsPass(ModulePass):
    """Pack the operands of every conv2d and dense of `@main` for its micro-kernel: `cvm_sched.pack` ops."""

    name = "cvm-pack-operands"

    target: str | None = None  # `loops.target.Target` printed; None: the module's `cvmc.target`, else DEFAULT

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        mains = [f for f in op.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main"]
        if len(mains) != 1:
            raise PassFailedException("expected one function @main of cvm ops")
        pattern = PackDotOperands(ValueBits.of(mains[0]), module_target(op, self.target))
        PatternRewriteWalker(GreedyRewritePatternApplier([pattern], dce_enabled=False),
                             apply_recursively=False).rewrite_region(mains[0].body)
