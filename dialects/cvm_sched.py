"""The `cvm_sched` dialect: the scheduled cvm level, where the decisions of `cvm-to-loops` are ops a reader sees.

Between the cvm operators (`cvm` dialect: what the model computes) and the loop level (memrefs, kernels, a host
`@main`) sit three decisions, each made once by a pass of its own and recorded as an op of this dialect:

- `cvm_sched.view` (`cvm-mark-views`): a tensor that is a strided layout over the buffer of another, no kernel
  and no copy (a reshape, a transpose, a positive-stride slice, ...);
- `cvm_sched.pack` (operand packing): a conv2d's or dense's operand rewritten as the micro-kernel reads it
  (padded NHWC, rows of the reduction, register-blocked weight rows), narrowed to the element type that its
  values' bounds and the target allow;
- `cvm_sched.kernel` (`cvm-fuse`): one kernel call, its anchor operator and elementwise epilogue as a single
  block over tensors, isolated from above, ending in `cvm_sched.yield`.

    %t = cvm_sched.view %x {layout = strided<[1, 9]>} : tensor<2x9xi32, #cvm.prec<8>> -> tensor<9x2xi32, #cvm.prec<8>>
    %p = cvm_sched.pack %x {to = "nhwc", padding = array<i64: 1, 1>}
         : tensor<1x3x8x8xi32, #cvm.prec<8>> -> tensor<1x10x10x3xi16>
    %y = cvm_sched.kernel(%a) : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>> {
    ^bb0(%v: tensor<4xi32, #cvm.prec<8>>):
      %r = cvm.relu %v : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
      cvm_sched.yield %r : tensor<4xi32, #cvm.prec<8>>
    }

Everything there is a tensor. Bufferization (`cvm-bufferize`) then decides where each tensor lives (the arena)
and outlines each kernel into a `func.func` over memrefs, called by the host `@main`; until
`convert-cvm-to-loops` builds its loops, a kernel's body stays on cvm ops over tensors, between two ops of this
dialect that say what it reads and writes:

- `cvm_sched.load`: the tensor a kernel argument holds, as the kernel's ops read it;
- `cvm_sched.store`: a value the kernel writes to an argument.

    func.func @conv2d_cvm_right_shift(%out: memref<1x4x8x8xi32>, %x: memref<1x10x10x3xi16>, %w: memref<...>) {
      %0 = cvm_sched.load %x : memref<1x10x10x3xi16> -> tensor<1x10x10x3xi16>
      %1 = cvm_sched.load %w : memref<1x14x32xi16> -> tensor<1x14x32xi16>
      %c = cvm.conv2d %0, %1 {...} : ...
      %s = cvm.cvm_right_shift %c {...} : ...
      cvm_sched.store %s, %out : tensor<1x4x8x8xi32, #cvm.prec<8>>, memref<1x4x8x8xi32>
      func.return
    }
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import cast

from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    MemRefType,
    Signedness,
    StridedLayoutAttr,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i8,
    i16,
    i32,
)
from xdsl.ir import Attribute, Block, Dialect, OpResult, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from cvmc.dialects.narrow import is_tensor

ui8 = IntegerType(8, Signedness.UNSIGNED)
"""A packed byte that holds x + 128 (or a non-negative x): the u8 operand of `vpdpbusd` / `vpmaddubsw`."""

PACK_ELEMENTS: tuple[Attribute, ...] = (i32, i16, i8, ui8)
PACKING_FIELDS: dict[str, tuple[str, ...]] = {"nhwc": ("padding",), "rows": ("width",), "conv_weight": ("width",),
                                             "conv_weight_blocked": ("width", "lanes", "group")}
"""The packings (`to`) and the fields each takes (besides `zero_point`)."""


def _static_tensor(t: Attribute, what: str) -> TensorType[Attribute]:
    if not is_tensor(t):
        raise VerifyException(f"expected '{what}' to be a tensor, got {t}")
    if any(d < 0 for d in t.get_shape()):
        raise VerifyException(f"expected '{what}' of a static shape, got {t}")
    return t


def _ints(attr: DenseArrayBase[I64] | None) -> tuple[int, ...] | None:
    return None if attr is None else attr.get_values()


@irdl_op_definition
class ViewOp(IRDLOperation):
    """A tensor that lives in the buffer of `source`: element (i0, ..., ik) of the result is element
    `offset + sum(i * stride)` of `source` in row-major order. No kernel, no copy.

    `source` is a base tensor (the input, a param, a kernel's result: each held contiguously), never a view:
    `cvm-mark-views` composes a view of a view into one layout over the base. A view of a packed copy
    (`cvm_sched.pack {to = "nhwc"}` with no zero point, whose elements are the values themselves, narrowed without
    loss: `cvm-fuse-packs`) reads those values back as the tensor that was packed: its result is the pack's source
    type, its layout the copy's interior.

        %t = cvm_sched.view %x {layout = strided<[1, 9]>}
             : tensor<2x9xi32, #cvm.prec<8>> -> tensor<9x2xi32, #cvm.prec<8>>
    """

    name = "cvm_sched.view"

    irdl_options = (ParsePropInAttrDict(),)

    source = operand_def(TensorType[Attribute])
    layout = prop_def(StridedLayoutAttr)
    result = result_def(TensorType[Attribute])

    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, strides: Sequence[int], offset: int, result_type: Attribute):
        super().__init__(operands=[source], result_types=[result_type],
                         properties={"layout": StridedLayoutAttr(strides, offset)})

    def strides_offset(self) -> tuple[tuple[int, ...], int]:
        """The layout's strides and offset (static: the verifier checks it)."""
        strides, offset = self.layout.get_strides(), self.layout.get_offset()
        assert offset is not None and all(s is not None for s in strides)
        return tuple(s for s in strides if s is not None), offset

    def verify_(self) -> None:
        src_t, out_t = _static_tensor(self.source.type, "source"), _static_tensor(self.result.type, "result")
        src, out = src_t.get_shape(), out_t.get_shape()
        copy = packing_of(self.source)
        if copy is not None and out_t == copy.source.type:  # a read of a packed copy (`cvm-fuse-packs`)
            if copy.to.data != "nhwc" or copy.zero_point is not None:
                raise VerifyException("expected a packed copy holding the values themselves (to = \"nhwc\", no "
                                      f"zero point), got to = {copy.to.data!r}"
                                      + ("" if copy.zero_point is None else " with a zero point"))
        elif src_t.element_type != out_t.element_type:
            raise VerifyException(f"expected a result of element type {src_t.element_type}, got "
                                  f"{out_t.element_type}")
        strides, offset = self.layout.get_strides(), self.layout.get_offset()
        if offset is None or any(s is None for s in strides):
            raise VerifyException(f"expected a static layout, got {self.layout}")
        if len(strides) != len(out):
            raise VerifyException(f"expected a layout of {len(out)} strides (the result's rank), got {len(strides)}")
        if offset < 0 or any(s is not None and s < 0 for s in strides):
            raise VerifyException(f"expected a non-negative offset and strides, got {self.layout}")
        last = offset + sum((n - 1) * (s or 0) for n, s in zip(out, strides))
        if prod(out) and last >= prod(src):
            raise VerifyException(f"expected the layout within the source's {prod(src)} elements, got its last "
                                  f"element at {last}")
        if isinstance(self.source.owner, ViewOp):
            raise VerifyException("expected a source that is no view (compose the layouts over its base)")


@irdl_op_definition
class PackOp(IRDLOperation):
    """An operand of conv2d or dense rewritten as its micro-kernel reads it, narrowed to the result's element type
    (i32, i16, i8, or ui8: the value plus `zero_point`, or a non-negative value), zero-extended:

    - `to = "nhwc"`: data (N, C, H, W) -> (N, H + 2 PH, W + 2 PW, C), zero-padded by `padding` = [PH, PW];
    - `to = "rows"`: a matrix (M, K) -> (M, width), width >= K;
    - `to = "conv_weight"`: a weight (O, C, KH, KW) -> (O, width) rows (kh, kw, c), width >= C KH KW;
    - `to = "conv_weight_blocked"`: a weight -> (ceil(O / lanes), width / group, group lanes), the rows of
      `lanes` output channels interleaved by `group` reduction elements (the register-blocked micro-kernel).

        %p = cvm_sched.pack %x {to = "nhwc", padding = array<i64: 1, 1>, zero_point = 128 : i64}
             : tensor<1x3x8x8xi32, #cvm.prec<8>> -> tensor<1x10x10x3xui8>
    """

    name = "cvm_sched.pack"

    irdl_options = (ParsePropInAttrDict(),)

    source = operand_def(TensorType[Attribute])
    to = prop_def(StringAttr)
    padding = opt_prop_def(DenseArrayBase[I64])
    width = opt_prop_def(IntegerAttr[I64])
    lanes = opt_prop_def(IntegerAttr[I64])
    group = opt_prop_def(IntegerAttr[I64])
    zero_point = opt_prop_def(IntegerAttr[I64])
    result = result_def(TensorType[Attribute])

    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def packing(self) -> dict[str, object]:
        """The packing as `loops.ops.pack` reads it: `to` and the fields present."""
        how: dict[str, object] = {"to": self.to.data}
        if self.padding is not None:
            how["padding"] = _ints(self.padding)
        for name in ("width", "lanes", "group", "zero_point"):
            attr = self.properties.get(name)
            if isinstance(attr, IntegerAttr):
                how[name] = attr.value.data
        return how

    def verify_(self) -> None:
        for key in self.attributes:
            raise VerifyException(f"unknown attribute {key!r}: a pack takes none (`cvm-bufferize` places its buffer)")
        src = _static_tensor(self.source.type, "source").get_shape()
        out = _static_tensor(self.result.type, "result").get_shape()
        element = self.result.type.element_type
        if element not in PACK_ELEMENTS:
            raise VerifyException(f"expected a result element type in i32, i16, i8, ui8, got {element}")
        to = self.to.data
        if to not in PACKING_FIELDS:
            raise VerifyException(f"expected 'to' in {', '.join(PACKING_FIELDS)}, got {to!r}")
        given = {n for n in ("padding", "width", "lanes", "group") if self.properties.get(n) is not None}
        if given != set(PACKING_FIELDS[to]):
            raise VerifyException(f"expected the fields {sorted(PACKING_FIELDS[to])} for 'to' = {to!r}, got "
                                  f"{sorted(given)}")
        if self.zero_point is not None and (to not in ("nhwc", "rows") or element != ui8):
            raise VerifyException(f"expected 'zero_point' only on a ui8 'nhwc' or 'rows' packing, got it on "
                                  f"{to!r} to {element}")
        width = None if self.width is None else self.width.value.data
        expect: tuple[int, ...]
        if to == "nhwc":
            padding = _ints(self.padding)
            assert padding is not None
            if len(src) != 4 or len(padding) != 2 or min(padding) < 0:
                raise VerifyException(f"expected a 4-D source and two paddings >= 0, got {list(src)} and "
                                      f"{list(padding)}")
            n, c, h, w = src
            expect = (n, h + 2 * padding[0], w + 2 * padding[1], c)
        elif to == "rows":
            assert isinstance(width, int)
            if len(src) != 2 or width < src[1]:
                raise VerifyException(f"expected a 2-D source of at most 'width' = {width} columns, got {list(src)}")
            expect = (src[0], width)
        else:
            assert isinstance(width, int)
            if len(src) != 4 or width < prod(src[1:]):
                raise VerifyException(f"expected a 4-D weight of at most 'width' = {width} elements a row, got "
                                      f"{list(src)}")
            if to == "conv_weight":
                expect = (src[0], width)
            else:
                assert self.lanes is not None and self.group is not None
                lanes, group = self.lanes.value.data, self.group.value.data
                if lanes < 1 or group < 1 or width % group:
                    raise VerifyException(f"expected 'lanes' >= 1 and 'group' >= 1 dividing 'width' = {width}, got "
                                          f"{lanes} and {group}")
                expect = (-(-src[0] // lanes), width // group, group * lanes)
        if out != expect:
            raise VerifyException(f"expected a result of shape {list(expect)}, got {list(out)}")


@irdl_op_definition
class KernelOp(IRDLOperation):
    """One kernel call: its operators (an anchor and the elementwise epilogue fused into it) as one block over
    tensors, isolated from above: the block's arguments are `inputs`, its `cvm_sched.yield` gives the results.

        %y = cvm_sched.kernel(%a) : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>> {
        ^bb0(%v: tensor<4xi32, #cvm.prec<8>>):
          %r = cvm.relu %v : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
          cvm_sched.yield %r : tensor<4xi32, #cvm.prec<8>>
        }
    """

    name = "cvm_sched.kernel"

    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove())
    assembly_format = "`(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs) $body"

    def __init__(self, inputs: Sequence[SSAValue], result_types: Sequence[Attribute], body: Block):
        super().__init__(operands=[inputs], result_types=[result_types], regions=[Region(body)])

    def verify_(self) -> None:
        block = self.body.block
        got = [a.type for a in block.args]
        want = [v.type for v in self.inputs]
        if got != want:
            raise VerifyException(f"expected block arguments of the inputs' types {[str(t) for t in want]}, got "
                                  f"{[str(t) for t in got]}")
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException(f"expected the body to end in cvm_sched.yield, got {last and last.name}")
        yielded = [v.type for v in last.values]
        results = [r.type for r in self.outputs]
        if yielded != results:
            raise VerifyException(f"expected yielded values of the results' types {[str(t) for t in results]}, got "
                                  f"{[str(t) for t in yielded]}")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The results of a `cvm_sched.kernel`.

        cvm_sched.yield %r : tensor<4xi32, #cvm.prec<8>>
    """

    name = "cvm_sched.yield"

    values = var_operand_def(TensorType)

    traits = traits_def(IsTerminator(), HasParent(KernelOp), Pure())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


def _integer_elements(t: Attribute, what: str) -> None:
    """Raise unless `t` is a tensor or memref of a static shape and integer elements."""
    if not isinstance(t, TensorType | MemRefType):
        raise VerifyException(f"expected '{what}' to be a tensor or memref, got {t}")
    shaped = cast("TensorType[Attribute] | MemRefType[Attribute]", t)
    if not isinstance(shaped.element_type, IntegerType):
        raise VerifyException(f"expected '{what}' of integer elements, got {t}")
    if any(d < 0 for d in shaped.get_shape()):
        raise VerifyException(f"expected '{what}' of a static shape, got {t}")


@irdl_op_definition
class LoadOp(IRDLOperation):
    """The tensor a kernel argument holds, as the ops of an outlined kernel read it (`cvm-bufferize`). The memref is
    the view the host passes (strided, broadcast to the shape an elementwise op reads, the index space collapsed,
    or a narrower packed copy, sign-extended when read); the tensor is the value the op reads. `zero_point`: the
    argument holds each value plus this (a ui8 packing of signed data).

        %0 = cvm_sched.load %x : memref<4xi32> -> tensor<4xi32, #cvm.prec<8>>
    """

    name = "cvm_sched.load"

    irdl_options = (ParsePropInAttrDict(),)

    source = operand_def(MemRefType)
    zero_point = opt_prop_def(IntegerAttr[I64])
    result = result_def(TensorType)

    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, result_type: Attribute, zero_point: int = 0):
        properties: dict[str, Attribute] = {"zero_point": IntegerAttr(zero_point, 64)} if zero_point else {}
        super().__init__(operands=[source], result_types=[result_type], properties=properties)

    def verify_(self) -> None:
        _integer_elements(self.source.type, "source")
        _integer_elements(self.result.type, "result")


@irdl_op_definition
class StoreOp(IRDLOperation):
    """A value an outlined kernel writes to its argument `dest` (`cvm-bufferize`), in the layout of `dest`'s type.

        cvm_sched.store %r, %out : tensor<4xi32, #cvm.prec<8>>, memref<4xi32>
    """

    name = "cvm_sched.store"

    value = operand_def(TensorType)
    dest = operand_def(MemRefType)

    assembly_format = "$value `,` $dest attr-dict `:` type($value) `,` type($dest)"

    def __init__(self, value: SSAValue, dest: SSAValue):
        super().__init__(operands=[value, dest])

    def verify_(self) -> None:
        _integer_elements(self.value.type, "value")
        _integer_elements(self.dest.type, "dest")


@irdl_op_definition
class CallOp(IRDLOperation):
    """A kernel call of the host `@main` (`cvm-bufferize`): the outlined kernel `callee` on the views `args`, and
    `work`, the gas of its operators, which decides how many threads share the call.

        cvm_sched.call @relu(%1, %data) {work = 4 : i64} : memref<4xi32>, memref<1x4xi32>
    """

    name = "cvm_sched.call"

    irdl_options = (ParsePropInAttrDict(),)

    callee = prop_def(SymbolRefAttr)
    work = prop_def(IntegerAttr[I64])
    args = var_operand_def(MemRefType)

    assembly_format = "$callee `(` $args `)` attr-dict `:` type($args)"

    def __init__(self, callee: str, args: Sequence[SSAValue], work: int):
        super().__init__(operands=[args], properties={"callee": SymbolRefAttr(callee), "work": IntegerAttr(work, 64)})

    def verify_(self) -> None:
        if self.work.value.data < 0:
            raise VerifyException(f"expected 'work' >= 0, got {self.work.value.data}")


@irdl_op_definition
class FootprintOp(IRDLOperation):
    """What the model's operators output in all (`cvm-bufferize`, in the host `@main`): the bytes a host without
    buffer reuse would allocate, which the arena is measured against.

        cvm_sched.footprint {intermediate_bytes = 192 : i64}
    """

    name = "cvm_sched.footprint"

    irdl_options = (ParsePropInAttrDict(),)

    intermediate_bytes = prop_def(IntegerAttr[I64])

    assembly_format = "attr-dict"

    def __init__(self, intermediate_bytes: int):
        super().__init__(properties={"intermediate_bytes": IntegerAttr(intermediate_bytes, 64)})

    def verify_(self) -> None:
        if self.intermediate_bytes.value.data < 0:
            raise VerifyException(f"expected 'intermediate_bytes' >= 0, got {self.intermediate_bytes.value.data}")


def packing_of(v: SSAValue) -> PackOp | None:
    """The `cvm_sched.pack` that made `v`: its owner, or the pack a kernel's epilogue yields as `v`."""
    owner = v.owner
    if isinstance(owner, KernelOp) and isinstance(v, OpResult):
        last = owner.body.block.last_op
        if isinstance(last, YieldOp) and v.index < len(last.values):
            owner = last.values[v.index].owner
    return owner if isinstance(owner, PackOp) else None


CvmSched = Dialect("cvm_sched", [ViewOp, PackOp, KernelOp, YieldOp, LoadOp, StoreOp, CallOp, FootprintOp], [])
