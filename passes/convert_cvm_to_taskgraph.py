"""`convert-cvm-to-taskgraph`: a CVM model (`@main` of `cvm` ops) becomes a Task IR `taskgraph.graph`.

    module = convert_graph(graph_to_module(load_graph("model.json", "params.bin")))
    // cvm-opt model.mlir -p convert-cvm-to-taskgraph

The graph has the form of the original converter's LeNet (`tests/data/taskir/lenet`): each compute block
reads storage blocks of its own (SIC or SIC2D, SW or SW2D and SB for a convolution; SIFC, SWFC and SB for a
CVM; SI elsewhere) and is read through an SI; the model's input is an INPUT block and each head, in order, an
OUTPUT block. A compute block and the storage blocks it reads form a group. Values are in Task IR's (y, x, f)
order: an NCHW tensor of batch 1 is the box (y = H, x = W, f = C), any other tensor the 1-D box (f = size) of
its row-major values (`to_task_layout` and `from_task_layout` convert).

    conv2d                               CC (CC2D below 8 input channels); stride, dilation, zero padding;
                                           with groups, one per group over boxes of the channels
    dense                                CVM (with a batch of m rows: a 1x1 CC over a (y = m) box)
    relu, clip, cvm_clip,                one CCMPB per chain (requantization, below), then a CCMPS when the
      cvm_right_shift, max_pool2d,         upper bound is not the largest value of a precision
      max over H and W, broadcast_max,   (max of two tensors and abs: a 2x1 window over an SI whose two
      abs                                  rows hold the operands)
    elemwise_add                         CADD
    elemwise_sub, negative,              CVS (x * CONSTANT_A) or CAX (x * a[f]) and CADD, a param of one value
      cvm_left_shift, broadcast_add,       per f being the bias or the scale (CVVH for a product of two
      broadcast_sub, broadcast_mul         tensors)
    sum over H and W                     CAVG (the exact window sum)
    cvm_lut                              CLUT over a table of 2^LUT_DW entries
    concatenate                          an SI that the inputs' edges write side by side (interface boxes)
    strided_slice, slice_like            a box of the producer's output (interface box); strides over H and
                                           W: then a 1x1 CAVG with those strides
    flatten, reshape, squeeze,           edge rearranges: RESHAPE (c-major flatten of a (y, x, f) box) or
      expand_dims, transpose               SHUFFLE (any other permutation)
    upsampling                           a SCALE rearrange

Requantization. cvm_right_shift rounds: ((x >> (b-1)) + 1) >> 1 = (x + 2^(b-1)) >> b. relu, clips, rounding
right shifts and one window max are monotone, so a chain of them (each value with one use) is
clamp((max_window(v) + c) >> s, lo, hi): one CCMPB with BIT_SHIGT_NUM = s, CMP = lo and the precision whose
largest value is hi (127 for INT_8), reading v + c. The offset c joins the bias of the block that computes v,
or a CADD adds it when v has other users or comes from a block without a bias. The conversion checks with v's
precision that v + c stays in int32; where it may not, the shift by b - 1 comes first in a CCMPB of its own,
as the reference computes it. A CCMPB pads with 0 where max_pool2d pads with INT32_MIN: the same when lo >= 0
(after a relu); otherwise the window reads an SI whose border holds INT32_MIN (its data, which the input edge
never overwrites).

What no block can compute (an operator such as take, an attribute value such as a negative slice stride, a
precision such as a LUT index of more than 16 bits into a large table, a batch of images) raises
CVMLogicError naming the first such node and why; `cvm-opt` reports it as a pass failure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from cvmc.dialects import cvm_rules as rules
from cvmc.dialects.cvm import CvmOperator, ParamOp, cvm_attrs, tensor_precision, tensor_shape
from cvmc.dialects.taskgraph import (
    KIND_SPECS,
    PRECISION_RANGE,
    CaddOp,
    CavgOp,
    CaxOp,
    Cc2dOp,
    CcmpbOp,
    CcmpsOp,
    CcOp,
    ClutOp,
    ComputeBlockOp,
    CvmOp,
    CvsOp,
    CvvhOp,
    GraphOp,
    InputOp,
    OutputOp,
    ParamKind,
    Precision,
    RearrangeAttr,
    RearrangeKind,
    SbOp,
    Sic2dOp,
    SicOp,
    SifcOp,
    SiOp,
    StorageBlockOp,
    Sw2dOp,
    SwfcOp,
    SwOp,
)
from cvmc.errors import CVMLogicError
from cvmc.passes.taskgraph_build import (
    INF,
    INT32_MIN,
    Block,
    Box,
    Const,
    Fused,
    Graph,
    Requant,
    Tensor,
    Unmappable,
    Window,
    box_dims,
    box_order,
    clamp_precision,
    compare_block,
    compare_params,
    negated,
    per_f,
    spatial,
    task_precision,
    task_shape,
    to_task_layout,
    wrap32,
)

P = ParamKind
Shape = tuple[int, ...]
_ACCUMULATOR = Precision.INT_32  # the precision of linear compute blocks and biases, as in LeNet


# ---------------------------------------------------------------------------------------------------------
# The conversion
# ---------------------------------------------------------------------------------------------------------


def _main(module: ModuleOp | func.FuncOp) -> func.FuncOp:
    if isinstance(module, func.FuncOp):
        return module
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    mains = [f for f in funcs if f.sym_name.data == "main"] or (funcs if len(funcs) == 1 else [])
    if len(mains) != 1:
        raise CVMLogicError(f"expected a function @main of cvm ops, found {len(funcs)} functions")
    return mains[0]


def _shape(value: SSAValue) -> Shape:
    shape = tensor_shape(value.type)
    if shape is None:
        raise CVMLogicError(f"a value has no static shape ({value.type}); run cvm-infer-shapes first")
    return shape


def _precision(value: SSAValue) -> int:
    precision = tensor_precision(value.type)
    if precision is None:
        raise CVMLogicError(f"a value has no precision ({value.type}); run cvm-infer-precision first")
    return precision


def _batch1(shape: Shape) -> None:
    if shape[0] != 1:
        raise Unmappable(f"batch {shape[0]}: a block holds one (y, x, f) image (expected batch 1)")


class _Converter:
    """Walks `@main` once, keeping for each SSA value its `Tensor`, `Const` or `Fused`."""

    def __init__(self):
        self.graph = Graph()
        self.values: dict[SSAValue, Tensor | Const | Fused] = {}

    def convert(self, main: func.FuncOp) -> GraphOp:
        block = main.body.block
        for arg in block.args:
            shape, precision = _shape(arg), _precision(arg)
            port = self.graph.block(InputOp, task_precision(precision), box_dims(task_shape(shape)))
            self.values[arg] = Tensor(port, shape, precision, sole=arg.has_one_use())
        index = len(block.args)  # the node index, for an op without a name
        for op in block.ops:
            if isinstance(op, ParamOp):
                self.values[op.result] = Const(op.array(), _precision(op.result))
            elif isinstance(op, CvmOperator):
                try:
                    if op.op_name not in _HANDLERS:
                        raise Unmappable("no task block computes it")
                    _HANDLERS[op.op_name](self, op, cvm_attrs(op))
                except Unmappable as e:
                    name = op.node_name.data if op.node_name is not None else f"{op.op_name}_{index}"
                    raise CVMLogicError(f"cannot convert node {name!r} ({op.op_name}) to Task IR: {e}") from None
            elif isinstance(op, func.ReturnOp):
                for head in op.arguments:
                    self.output(head)
            else:
                raise CVMLogicError(f"unexpected op {op.name} in @{main.sym_name.data}: expected cvm ops")
            index += 1
        return self.graph.build()

    # --- values as blocks -------------------------------------------------------------------------------

    def tensor(self, value: SSAValue) -> Tensor:
        """The value held in a block's output (a chain gets its CCMPB, a param an SI holding it)."""
        v = self.values[value]
        if isinstance(v, Const):  # (a param stays one: a weight may be another op's input too)
            return Tensor(self._const_block(SiOp, v.array, v.precision), v.array.shape, v.precision)
        if isinstance(v, Fused):
            v = self.values[value] = self._materialize(v, value.has_one_use())
        return v

    def _const_block(self, kind: type[StorageBlockOp], array: np.ndarray, precision: int,
                     box: Shape | None = None) -> Block:  # fmt: skip
        box = box or task_shape(array.shape)
        data = to_task_layout(array).reshape(box).astype(np.int64)
        return self.graph.block(kind, task_precision(precision), self._storage_dims(kind, box), data=data)

    def const(self, value: SSAValue, role: str) -> np.ndarray:
        v = self.values[value]
        if not isinstance(v, Const):
            raise Unmappable(f"its {role} is computed; a block reads its {role} from a storage block's data")
        return v.array

    def storage(self, value: SSAValue | Tensor, kind: type[StorageBlockOp] = SiOp, box: Shape | None = None) -> Block:
        """A new storage block of `kind` holding the value (in `box`, row-major, when given), for one compute
        block to read."""
        if isinstance(value, SSAValue) and isinstance(c := self.values[value], Const):
            return self._const_block(kind, c.array, c.precision, box)
        t = value if isinstance(value, Tensor) else self.tensor(value)
        s = self.graph.block(kind, t.block.precision, self._storage_dims(kind, box or task_shape(t.shape)))
        self.feed(t, s)
        return s

    def feed(self, t: Tensor, dst: Block, dst_box: Box | None = None, cluster: int | None = None) -> None:
        """An edge carrying t into `dst` (into a box of input cluster `cluster`, when given)."""
        self.graph.connect(t.block, dst, t.rearranges, t.box, dst_box, cluster)

    def plain(self, t: Tensor) -> Tensor:
        """t as the whole output cluster of a block, in its (y, x, f) box (copied into an SI if need be), so
        that boxes of it can be read."""
        if not t.rearranges and t.box is None and t.array_shape() == task_shape(t.shape):
            return t
        return Tensor(self.storage(t), t.shape, t.precision, sole=t.sole)

    @staticmethod
    def _storage_dims(kind: type[StorageBlockOp], box: Shape) -> dict[str, int]:
        if kind is SifcOp:
            return {"r": box[0]}
        return box_dims(box, ("y", "x", "r") if kind in (SicOp, Sic2dOp) else ("y", "x", "f"))

    def compute(
        self,
        kind: type[ComputeBlockOp],
        precision: Precision,
        shape: dict[str, int],
        inputs: Sequence[Block],
        params: dict[ParamKind, int] | None = None,
        bias: int | np.ndarray | None = None,
    ) -> Block:
        """A compute block reading `inputs` (then an SB for a vector bias); it and its inputs form a group."""
        members = [*inputs]
        if isinstance(bias, np.ndarray):
            members.append(self.graph.block(SbOp, _ACCUMULATOR, {"f": bias.size}, data=wrap32(bias.astype(np.int64))))
        block = self.graph.block(kind, precision, shape, params=params or {})
        for s in members:
            self.graph.connect(s, block)
        if isinstance(bias, np.ndarray):
            block.bias = members[-1]
        elif bias:
            block.bias = int(wrap32(bias))
        self.graph.groups.append([b.id for b in (*members, block)])
        return block

    def result(self, op: CvmOperator, block: Block) -> None:
        """The op's result is the output of a compute block."""
        r = op.results[0]
        self.values[r] = Tensor(block, _shape(r), _precision(r), sole=r.has_one_use())

    def output(self, head: SSAValue) -> None:
        """An OUTPUT block for a head, read from an SI as LeNet's."""
        t = self.tensor(head)
        if t.block.is_compute:
            t = Tensor(self.storage(t), t.shape, t.precision)
        self.feed(t, self.graph.block(OutputOp, t.block.precision, box_dims(task_shape(t.shape))))

    # --- requantization chains ------------------------------------------------------------------------

    def chain(self, op: CvmOperator, step: Callable[[Requant], Requant | None], x: SSAValue | None = None) -> None:
        """The op's result is `step` of its operand's (or x's) chain: that chain extended when the operand is
        one used only here (and the step composes), else a new chain over the operand."""
        x, r = x or op.operands[0], op.results[0]
        v = self.values[x]
        if (requant := self._extended(x, step)) is not None:
            assert isinstance(v, Fused)
            self.values[r] = Fused(v.base, requant, _shape(r), _precision(r))
            return
        base = self.tensor(x)
        requant = step(Requant())
        assert requant is not None
        if not requant.fits(base.precision):
            raise Unmappable(f"the rounding offset {requant.offset} added to a value of precision "
                              f"{base.precision} may leave int32")  # fmt: skip
        self.values[r] = Fused(base, requant, _shape(r), _precision(r))

    def _extended(self, x: SSAValue, step: Callable[[Requant], Requant | None]) -> Requant | None:
        """The chain of x (a chain used only by the op at hand) with `step`, if the step composes."""
        v = self.values[x]
        if isinstance(v, Fused) and x.has_one_use():
            requant = step(v.requant)
            if requant is not None and requant.fits(v.base.precision):
                return requant
        return None

    def _add_offset(self, t: Tensor, offset: int) -> Tensor:
        """t + offset: in the bias of the block computing t when t is its only reader, else through a CADD."""
        writers = t.block.parts or [t.block]
        if t.sole and all(b.is_compute and KIND_SPECS[b.op.kind_name()].biased for b in writers):
            for b in writers:
                if isinstance(b.bias, Block):
                    assert b.bias.data is not None
                    b.bias.data = wrap32(b.bias.data + offset)
                else:
                    b.bias = int(wrap32((b.bias or 0) + offset))
            return t
        return Tensor(self._linear(t, None, offset), t.shape, t.precision, sole=True)

    def _materialize(self, f: Fused, sole: bool) -> Tensor:
        """The CCMPB of a chain (and the CCMPS of an upper bound that no precision tops out at)."""
        r = f.requant
        t = self._add_offset(f.base, r.offset) if r.offset else f.base
        box, out_box = task_shape(t.shape), task_shape(f.shape)
        lo, w = max(r.lo, INT32_MIN), r.window
        if w is not None and any(w.pad) and lo < 0:
            # Padding must lose every max: an SI whose border holds INT32_MIN, the value written inside.
            (h, wd, c), (pu, pd, pl, pr) = box, w.pad
            box, w = (h + pu + pd, wd + pl + pr, c), replace(w, pad=(0, 0, 0, 0))
            si = self.graph.block(SiOp, Precision.INT_32, box_dims(box), data=np.full(box, INT32_MIN, np.int64))
            self.feed(t, si, ({"y": pu, "x": pl}, {"y": h, "x": wd, "f": c}))
        elif t.sole and t.block.op is SiOp and not t.block.data and not t.rearranges and t.box is None:
            si = t.block  # an SI made for this chain (the two rows of a max)
        else:
            si = self.storage(t)
        precision = clamp_precision(lo, r.hi)
        shape, w = compare_block(box, w)
        params = compare_params(lo, w, min(r.shift, 31), len(box) == 3)
        out = Tensor(self.compute(CcmpbOp, precision or Precision.INT_32, shape, [si], params), f.shape,
                      f.precision, sole=sole)  # fmt: skip
        if precision is None:  # the minimum with hi: a CCMPS labelled with a precision that holds [lo, hi]
            label = next(p for p in (Precision.INT_8, Precision.INT_16, Precision.INT_32)
                         if PRECISION_RANGE[p][0] <= lo and r.hi <= PRECISION_RANGE[p][1])  # fmt: skip
            shape, w = compare_block(out_box, None)
            params = compare_params(r.hi, w, 0, len(out_box) == 3)
            ccmps = self.compute(CcmpsOp, label, shape, [self.storage(out)], params)
            out = Tensor(ccmps, f.shape, f.precision, sole=sole)
        return out

    def _relu(self, op: CvmOperator, a: rules.Attrs) -> None:
        self.chain(op, lambda r: r.clamp(0, INF))

    def _clip(self, op: CvmOperator, a: rules.Attrs) -> None:
        self.chain(op, lambda r: r.clamp(a["a_min"], a["a_max"]))

    def _cvm_clip(self, op: CvmOperator, a: rules.Attrs) -> None:
        bound = rules.precision_bound(a["precision"])
        self.chain(op, lambda r: r.clamp(-bound, bound))

    def _cvm_right_shift(self, op: CvmOperator, a: rules.Attrs) -> None:
        bound, b = rules.precision_bound(a["precision"]), a["shift_bit"]
        x, r = op.operands[0], op.results[0]

        def step(requant: Requant) -> Requant:
            return requant.round_shift(b).clamp(-bound, bound)

        if b > 1 and self._extended(x, step) is None and not Requant().round_shift(b).fits(_precision(x)):
            # x + 2^(b-1) may leave int32: ((x >> (b-1)) + 1) >> 1 as the reference computes it, the first
            # shift in a CCMPB of its own.
            t = self.tensor(x)
            shifted = self._materialize(Fused(t, Requant(shift=b - 1), t.shape, t.precision), sole=True)
            shifted.precision = max(2, t.precision - b + 2)  # |x >> (b-1)| <= 2^(p-b)
            self.values[r] = Fused(shifted, Requant().round_shift(1).clamp(-bound, bound), _shape(r), _precision(r))
            return
        self.chain(op, step)

    def _max_pool2d(self, op: CvmOperator, a: rules.Attrs) -> None:
        (_, _, h, w), (_, _, oh, ow) = _shape(op.operands[0]), _shape(op.results[0])
        _batch1(_shape(op.operands[0]))
        (ky, kx), (sy, sx) = a["pool_size"], a["strides"]
        ph, pw = a["padding"] * 2 if len(a["padding"]) == 1 else a["padding"]
        # Bottom and right padding as far as the last window reaches (ceil mode), at least the top's.
        pad = (ph, max(ph, (oh - 1) * sy + ky - h - ph), pw, max(pw, (ow - 1) * sx + kx - w - pw))
        window = Window(ky, kx, sy, sx, pad, oh, ow)
        self.chain(op, lambda r: r.pool(window))

    def _max(self, op: CvmOperator, a: rules.Attrs) -> None:
        h, w = self._plane(op, a, "max")
        window = Window(h, w, 1, 1, (0, 0, 0, 0), 1, 1)
        self.chain(op, lambda r: r.pool(window))

    @staticmethod
    def _plane(op: CvmOperator, a: rules.Attrs, what: str) -> tuple[int, int]:
        """(H, W) of a reduction over the H and W axes of an NCHW tensor of batch 1."""
        shape = _shape(op.operands[0])
        axes = rules.reduce_axes(shape, a["axis"], a["exclude"])
        if len(shape) != 4 or axes != (2, 3):
            raise Unmappable(f"a window {what} reduces the H and W axes of an NCHW tensor, not axes {list(axes)} "
                              f"of shape {list(shape)}")  # fmt: skip
        _batch1(shape)
        return shape[2], shape[3]

    # --- linear blocks -----------------------------------------------------------------------------------

    def _conv2d(self, op: CvmOperator, a: rules.Attrs) -> None:
        """A CC (CC2D below 8 input channels, as LeNet's first layer); with groups, one per group reading its
        channels (a box of the input) and writing its own (a box of one SI)."""
        x, r = op.operands[0], op.results[0]
        (_, c, h, w), (_, oc, oh, ow) = _shape(x), _shape(r)
        _batch1(_shape(x))
        weight = self.const(op.operands[1], "weight").astype(np.int64)
        bias = self.const(op.operands[2], "bias") if a["use_bias"] else None
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = a["kernel_size"], a["strides"], a["padding"], a["dilation"]
        params = {
            P.DILATION_X: dw, P.DILATION_Y: dh, P.KERNEL_X: kw, P.KERNEL_Y: kh,
            P.PAD_UP: ph, P.PAD_DOWN: ph, P.PAD_LEFT: pw, P.PAD_RIGHT: pw, P.STRIDE_X: sw, P.STRIDE_Y: sh,
        }  # fmt: skip
        g = a["groups"]
        if g == 1:
            self.result(op, self._conv(x, weight, bias, (oh, ow), params))
            return
        t, icg, ocg = self.plain(self.tensor(x)), c // g, oc // g
        parts: list[Block] = []
        for k in range(g):
            channels = replace(t, shape=(1, icg, h, w), box=({"f": k * icg}, {"y": h, "x": w, "f": icg}))
            group_bias = None if bias is None else bias[k * ocg : (k + 1) * ocg]
            parts.append(self._conv(channels, weight[k * ocg : (k + 1) * ocg], group_bias, (oh, ow), params))
        joined = self.graph.block(SiOp, _ACCUMULATOR, {"y": oh, "x": ow, "f": oc}, inputs=[[]], parts=parts)
        for k, part in enumerate(parts):
            self.graph.connect(part, joined, dst_box=({"f": k * ocg}, {"y": oh, "x": ow, "f": ocg}), cluster=0)
        self.values[r] = Tensor(joined, (1, oc, oh, ow), _precision(r), sole=r.has_one_use())

    def _conv(self, x: SSAValue | Tensor, weight: np.ndarray, bias: np.ndarray | None, out: tuple[int, int],
              params: dict[ParamKind, int]) -> Block:  # fmt: skip
        """A CC or CC2D of x with weight [f, r, ky, kx]."""
        (f, c, kh, kw), (h, w, _) = weight.shape, task_shape(x.shape if isinstance(x, Tensor) else _shape(x))
        first = c < 8
        sic = self.storage(x, Sic2dOp if first else SicOp)
        sw = self.graph.block(Sw2dOp if first else SwOp, Precision.INT_8, {"f": f, "r": c, "ky": kh, "kx": kw},
                              data=weight)  # fmt: skip
        shape = {"y": out[0], "x": out[1], "f": f, "r": c, "ky": kh, "kx": kw, "iy": h, "ix": w}
        return self.compute(Cc2dOp if first else CcOp, _ACCUMULATOR, shape, [sic, sw], params, bias)

    def _dense(self, op: CvmOperator, a: rules.Attrs) -> None:
        """A CVM; with a batch of m > 1 rows, a 1x1 CC over the (y = m, x = 1, r = k) box of the rows."""
        m, k = _shape(op.operands[0])
        units = a["units"]
        weight = self.const(op.operands[1], "weight").astype(np.int64)
        bias = self.const(op.operands[2], "bias") if a["use_bias"] else None
        if m == 1:
            sifc = self.storage(op.operands[0], SifcOp)
            swfc = self.graph.block(SwfcOp, Precision.INT_8, {"f": units, "r": k}, data=weight)
            self.result(op, self.compute(CvmOp, _ACCUMULATOR, {"f": units, "r": k}, [sifc, swfc], bias=bias))
            return
        first = k < 8
        rows = self.storage(op.operands[0], Sic2dOp if first else SicOp, (m, 1, k))
        sw = self.graph.block(Sw2dOp if first else SwOp, Precision.INT_8, {"f": units, "r": k, "ky": 1, "kx": 1},
                              data=weight.reshape(units, k, 1, 1))  # fmt: skip
        shape = {"y": m, "x": 1, "f": units, "r": k, "ky": 1, "kx": 1, "iy": m, "ix": 1}
        params = {P.KERNEL_X: 1, P.KERNEL_Y: 1, P.STRIDE_X: 1, P.STRIDE_Y: 1}
        self.result(op, self.compute(Cc2dOp if first else CcOp, _ACCUMULATOR, shape, [rows, sw], params, bias))

    def _linear(self, x: SSAValue | Tensor, scale: int | np.ndarray | None, bias: int | np.ndarray | None) -> Block:
        """x * scale + bias, scale and bias per f or constant: a CADD (no scale), CVS or CAX."""
        dims = box_dims(task_shape(x.shape if isinstance(x, Tensor) else _shape(x)))
        si = self.storage(x)
        if scale is None:
            return self.compute(CaddOp, _ACCUMULATOR, {**dims, "ky": 1, "kx": 1}, [si], bias=bias)
        if isinstance(scale, int):
            return self.compute(CvsOp, _ACCUMULATOR, dims, [si], {P.CONSTANT_A: int(wrap32(scale))}, bias)
        alpha = self.graph.block(SbOp, _ACCUMULATOR, {"f": scale.size}, data=wrap32(scale.astype(np.int64)))
        return self.compute(CaxOp, _ACCUMULATOR, dims, [si, alpha], bias=bias)

    def _combine(self, op: CvmOperator, kind: str) -> None:
        """x + y, x - y or x * y (numpy broadcasting): with a param of one value per f (or one value) as the
        bias or scale of one block, else of two inputs of the result's shape (CADD, CVVH)."""
        x, y = op.operands
        out = _shape(op.results[0])
        is_const = [isinstance(self.values[v], Const) for v in (x, y)]
        if is_const[0] != is_const[1]:
            t, c = (y, x) if is_const[0] else (x, y)
            param = self.values[c]
            assert isinstance(param, Const)
            value = per_f(np.broadcast_to(param.array, out).astype(np.int64))
            if _shape(t) == out and value is not None:
                if kind == "mul":
                    block = self._linear(t, value, None)
                elif kind == "add":
                    block = self._linear(t, None, value)
                else:
                    block = self._linear(t, None, negated(value)) if c is y else self._linear(t, -1, value)
                self.result(op, block)
                return
        inputs = [self._operand(x, out), self._operand(y, out, negate=kind == "sub")]
        box = task_shape(out)
        if kind == "mul":
            self.result(op, self.compute(CvvhOp, _ACCUMULATOR, box_dims(box), inputs))
        else:
            self.result(op, self.compute(CaddOp, _ACCUMULATOR, {**box_dims(box), "ky": 1, "kx": 1}, inputs))

    def _operand(self, value: SSAValue, out: Shape, negate: bool = False) -> Block:
        """An SI holding an operand of an elementwise op (negated when asked), a param broadcast to `out`."""
        v = self.values[value]
        if isinstance(v, Const):
            array = np.broadcast_to(v.array, out).astype(np.int64)
            return self._const_block(SiOp, wrap32(-array) if negate else array, v.precision)
        if _shape(value) != out:
            raise Unmappable(f"a computed operand of shape {list(_shape(value))} is broadcast to {list(out)}; "
                              "a block reads its inputs as they are")  # fmt: skip
        if negate:
            return self.storage(Tensor(self._linear(value, -1, None), out, _precision(value)))
        return self.storage(value)

    def _elemwise_add(self, op: CvmOperator, a: rules.Attrs) -> None:
        self._combine(op, "add")

    def _elemwise_sub(self, op: CvmOperator, a: rules.Attrs) -> None:
        self._combine(op, "sub")

    _broadcast_add = _elemwise_add
    _broadcast_sub = _elemwise_sub

    def _broadcast_mul(self, op: CvmOperator, a: rules.Attrs) -> None:
        self._combine(op, "mul")

    def _negative(self, op: CvmOperator, a: rules.Attrs) -> None:
        self.result(op, self._linear(op.operands[0], -1, None))

    def _cvm_left_shift(self, op: CvmOperator, a: rules.Attrs) -> None:
        """x * 2^b (exact: the precision rules keep it in int32), then the clip as a chain."""
        x, r, b = op.operands[0], op.results[0], a["shift_bit"]
        scaled = Tensor(self._linear(x, 1 << b, None), _shape(x), _precision(x) + b, sole=True)
        bound = rules.precision_bound(a["precision"])
        self.values[r] = Fused(scaled, Requant().clamp(-bound, bound), _shape(r), _precision(r))

    def _sum(self, op: CvmOperator, a: rules.Attrs) -> None:
        h, w = self._plane(op, a, "sum")
        c = _shape(op.operands[0])[1]
        params = {P.KERNEL_X: w, P.KERNEL_Y: h, P.STRIDE_X: 1, P.STRIDE_Y: 1,
                  P.PAD_UP: 0, P.PAD_DOWN: 0, P.PAD_LEFT: 0, P.PAD_RIGHT: 0}  # fmt: skip
        shape = {"y": 1, "x": 1, "f": c, "ky": h, "kx": w, "iy": h, "ix": w}
        self.result(op, self.compute(CavgOp, _ACCUMULATOR, shape, [self.storage(op.operands[0])], params))

    def _cvm_lut(self, op: CvmOperator, a: rules.Attrs) -> None:
        """table[clip(x, 0, n - 1)]: a CLUT whose table covers every x of LUT_DW bits (x clamped first
        when its precision is above 16)."""
        x = op.operands[0]
        table = self.const(op.operands[1], "table").reshape(-1)
        n, precision = table.size, _precision(x)
        t = self.tensor(x)
        dw = precision
        if precision > 16:
            dw = (n - 1).bit_length() + 1
            if dw > 16:
                raise Unmappable(f"an index of precision {precision} into a table of {n} entries needs {dw} "
                                  "bits; a CLUT's LUT_DW is at most 16")  # fmt: skip
            t = self._materialize(Fused(t, Requant().clamp(0, n - 1), t.shape, precision), sole=True)
        index = np.arange(1 << dw)
        lut = table[np.clip(np.where(index < 2 ** (dw - 1), index, index - 2**dw), 0, n - 1)].astype(np.int64)
        label = task_precision(_precision(op.results[0]))
        sb = self.graph.block(SbOp, label, {"f": lut.size}, data=lut)
        self.result(op, self.compute(ClutOp, label, box_dims(task_shape(t.shape)), [self.storage(t), sb],
                                     {P.LUT_DW: dw}))  # fmt: skip

    # --- data movement -----------------------------------------------------------------------------------

    @staticmethod
    def _relaid(t: Tensor, shape: Shape, source_of: np.ndarray) -> tuple[RearrangeAttr, ...]:
        """The rearranges that make t's box the box of a tensor of `shape` whose element i (cvm order) is
        t's element source_of[i]: RESHAPE for the c-major flatten of a (y, x, f) box, else a SHUFFLE."""
        # For each position of the new box, the position of t's box it reads.
        perm = np.argsort(box_order(t.shape))[source_of[box_order(shape)]]
        if np.array_equal(perm, np.arange(perm.size)):
            return t.rearranges
        current = t.array_shape()
        flatten = RearrangeAttr.get(RearrangeKind.RESHAPE, [1, 0, 2])
        if len(current) == 3 and np.array_equal(flatten.gather_map(current), perm):
            return (*t.rearranges, flatten)
        return (*t.rearranges, RearrangeAttr.get(RearrangeKind.SHUFFLE, perm))

    def _view(self, op: CvmOperator, source_of: np.ndarray) -> None:
        t, r = self.tensor(op.operands[0]), op.results[0]
        rearranges = self._relaid(t, _shape(r), source_of)
        self.values[r] = Tensor(t.block, _shape(r), _precision(r), rearranges, t.sole and r.has_one_use())

    def _reshape(self, op: CvmOperator, a: rules.Attrs) -> None:
        self._view(op, np.arange(math.prod(_shape(op.results[0]))))

    _flatten = _squeeze = _expand_dims = _reshape

    def _transpose(self, op: CvmOperator, a: rules.Attrs) -> None:
        shape = _shape(op.operands[0])
        axes = rules.transpose_axes(a["axes"], len(shape))
        self._view(op, np.arange(math.prod(shape)).reshape(shape).transpose(axes).reshape(-1))

    def _upsampling(self, op: CvmOperator, a: rules.Attrs) -> None:
        x, r = op.operands[0], op.results[0]
        _batch1(_shape(x))
        t = self.tensor(x)
        if t.array_shape() != task_shape(t.shape):  # SCALE needs the (y, x, f) box: copy it into one
            t = Tensor(self.storage(t), t.shape, t.precision)
        scale = RearrangeAttr.get(RearrangeKind.SCALE, [a["scale"], a["scale"]])
        self.values[r] = Tensor(t.block, _shape(r), _precision(r), (*t.rearranges, scale),
                                 t.sole and r.has_one_use())  # fmt: skip

    def _strided_slice(self, op: CvmOperator, a: rules.Attrs) -> None:
        self._slice(op, rules.strided_slice_bounds(_shape(op.operands[0]), a["begin"], a["end"], a["stride"]))

    def _slice_like(self, op: CvmOperator, a: rules.Attrs) -> None:
        self._slice(op, [(0, 1, n) for n in _shape(op.results[0])])

    def _slice(self, op: CvmOperator, bounds: Sequence[tuple[int, int, int]]) -> None:
        """The result is a box of the operand, read by the edges that carry it; strides over H and W then are a
        1x1 CAVG with those strides (downsampling by pooling, as the seed has it). `bounds`: (begin, stride,
        length) per axis."""
        x, r = op.operands[0], op.results[0]
        shape, out = _shape(x), _shape(r)
        t = self.plain(self.tensor(x))
        sole = t.sole and r.has_one_use()
        if spatial(shape):
            _, (c0, sc, nc), (h0, sh, nh), (w0, sw, nw) = bounds
            if sc != 1 and nc > 1 or min(sh, sw) < 1:
                raise Unmappable(f"strides {[sc, sh, sw]} over C, H, W: a block reads a box of channels and "
                                  "strides forward over H and W")  # fmt: skip
            eh, ew = (nh - 1) * sh + 1, (nw - 1) * sw + 1
            box = ({"y": h0, "x": w0, "f": c0}, {"y": eh, "x": ew, "f": nc})
            part = replace(t, shape=(1, nc, eh, ew), precision=_precision(r), box=box, sole=sole)
            if (eh, ew) == (nh, nw):
                self.values[r] = part
                return
            params = {P.KERNEL_X: 1, P.KERNEL_Y: 1, P.STRIDE_X: sw, P.STRIDE_Y: sh,
                      P.PAD_UP: 0, P.PAD_DOWN: 0, P.PAD_LEFT: 0, P.PAD_RIGHT: 0}  # fmt: skip
            shape_1x1 = {"y": nh, "x": nw, "f": nc, "ky": 1, "kx": 1, "iy": eh, "ix": ew}
            self.result(op, self.compute(CavgOp, _ACCUMULATOR, shape_1x1, [self.storage(part)], params))
            return
        picks = tuple(np.arange(b, b + st * n, st) for b, st, n in bounds)
        index = np.arange(math.prod(shape)).reshape(shape)[np.ix_(*picks)].reshape(-1)
        if not np.array_equal(index, index[0] + np.arange(index.size)):
            raise Unmappable(f"the slice of shape {list(out)} is not one run of the operand's (f) box")
        box = ({"f": int(index[0])}, {"f": index.size})
        self.values[r] = replace(t, shape=out, precision=_precision(r), box=box, sole=sole)

    def _broadcast_max(self, op: CvmOperator, a: rules.Attrs) -> None:
        """max(x, c) of a constant c is a clamp; else a 2x1 window max (a chain) over two rows that hold x, y."""
        x, y = op.operands
        out = _shape(op.results[0])
        for t, c in ((x, y), (y, x)):
            param = self.values[c]
            if isinstance(param, Const) and _shape(t) == out and np.all(param.array == param.array.flat[0]):
                low = int(param.array.flat[0])
                self.chain(op, lambda r: r.clamp(low, INF), t)
                return
        self._max_of_two(op, *(self._full(v, out) for v in (x, y)))

    def _abs(self, op: CvmOperator, a: rules.Attrs) -> None:
        """max(x, -x), as INT32_MIN stays INT32_MIN."""
        x = op.operands[0]
        negated = Tensor(self._linear(x, -1, None), _shape(x), _precision(x))
        self._max_of_two(op, self.tensor(x), negated)

    def _full(self, value: SSAValue, out: Shape) -> Tensor:
        """An operand of an elementwise op as a tensor of the result's shape (a param broadcast to it)."""
        v = self.values[value]
        if isinstance(v, Const):
            array = np.broadcast_to(v.array, out)
            return Tensor(self._const_block(SiOp, array, v.precision), out, v.precision)
        if _shape(value) != out:
            raise Unmappable(f"a computed operand of shape {list(_shape(value))} is broadcast to {list(out)}; "
                              "a block reads its inputs as they are")  # fmt: skip
        return self.tensor(value)

    def _max_of_two(self, op: CvmOperator, a: Tensor, b: Tensor) -> None:
        """The result is the chain of a 2x1 window max over an SI whose two rows (y = 0, 1) hold a and b."""
        r = op.results[0]
        box = task_shape(_shape(r))
        m, f = (box[0] * box[1], box[2]) if len(box) == 3 else (box[0], 1)
        label = max((a.block.precision, b.block.precision), key=lambda p: PRECISION_RANGE[p][1])
        rows = self.graph.block(SiOp, label, {"y": 2, "x": m, "f": f}, inputs=[[]])
        for row, t in enumerate((a, b)):
            self.feed(t, rows, ({"y": row}, {"y": 1, "x": m, "f": f}), cluster=0)
        base = Tensor(rows, (1, f, 2, m), max(a.precision, b.precision), sole=True)
        window = Window(2, 1, 1, 1, (0, 0, 0, 0), 1, m)
        self.values[r] = Fused(base, Requant(window=window), _shape(r), _precision(r))

    def _concatenate(self, op: CvmOperator, a: rules.Attrs) -> None:
        """One SI; each input's edge writes its box at its offset along the joined dim."""
        r = op.results[0]
        out = _shape(r)
        axis = a["axis"] % len(out)
        if spatial(out):
            dim = {1: "f", 2: "y", 3: "x"}[axis]
        elif math.prod(out[:axis]) == 1:  # the inputs are consecutive runs of the result
            dim = "f"
        else:
            raise Unmappable(f"joining axis {axis} of shape {list(out)} interleaves the inputs' values")
        inputs = [self.tensor(v) for v in op.operands]
        label = max((t.block.precision for t in inputs), key=lambda p: PRECISION_RANGE[p][1])
        si = self.graph.block(SiOp, label, box_dims(task_shape(out)), inputs=[[]])
        offset = 0
        for t in inputs:
            rearranges = t.rearranges
            part = box_dims(task_shape(t.shape))
            if dim == "f" and not spatial(out):  # a run of the flat result (a (y, x, f) box flattened c-major)
                size = math.prod(t.shape)
                rearranges = self._relaid(t, (size,), np.arange(size))
                part = {"f": size}
            self.feed(replace(t, rearranges=rearranges), si, ({dim: offset}, part), cluster=0)
            offset += part[dim]
        self.values[r] = Tensor(si, out, _precision(r))


_Handler = Callable[[_Converter, CvmOperator, rules.Attrs], None]
_HANDLERS: dict[str, _Handler] = {
    name: getattr(_Converter, f"_{name}")
    for name in (
        "conv2d", "dense", "relu", "clip", "cvm_clip", "cvm_right_shift", "cvm_left_shift", "max_pool2d", "max",
        "sum", "elemwise_add", "elemwise_sub", "broadcast_add", "broadcast_sub", "broadcast_mul", "negative",
        "broadcast_max", "abs", "cvm_lut", "flatten", "reshape", "squeeze", "expand_dims", "transpose",
        "upsampling", "concatenate", "strided_slice", "slice_like",
    )
}  # fmt: skip
"""The operators a block (or an edge) computes, and their conversions."""


def convert_graph(module: ModuleOp | func.FuncOp) -> ModuleOp:
    """The Task IR of a CVM model: a verified module holding one `taskgraph.graph`.

    `module` holds the model's function `@main` of cvm ops (as `cvmc.runtime.frontend.cvm_ir.graph_to_module` writes
    it), with static shapes and precisions. Raises CVMLogicError naming the first node no block can compute.
    """
    result = ModuleOp([_Converter().convert(_main(module))])
    result.verify()
    return result


@dataclass(frozen=True)
class ConvertCvmToTaskGraphPass(ModulePass):
    """Replace the cvm function `@main` by the Task IR graph of the model."""

    name = "convert-cvm-to-taskgraph"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            main = _main(op)
            graph = _Converter().convert(main)
        except CVMLogicError as e:
            raise PassFailedException(str(e)) from e
        main.detach()
        main.erase()
        op.body.block.add_op(graph)
