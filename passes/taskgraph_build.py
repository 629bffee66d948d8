"""What `convert-cvm-to-taskgraph` builds and tracks: a cvm tensor as a Task IR box (`task_shape`,
`to_task_layout`, `from_task_layout`), the graph under construction (`Graph`: blocks, edges, groups), the values
of the model it follows (`Tensor`, `Const`) and the requantization chains it fuses (`Requant`, `Window`,
`Fused`), and the small analyses of params and clamps that pick a block's constants and precision."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TypedDict, Unpack, overload

import numpy as np

from cvmc.dialects.taskgraph import (
    PRECISION_RANGE,
    BiasType,
    BlockOp,
    ClusterAttr,
    ComputeBlockOp,
    EdgeOp,
    GraphOp,
    GroupOp,
    InterfaceAttr,
    OutputOp,
    ParamAttr,
    ParamKind,
    Precision,
    RearrangeAttr,
    ShapeAttr,
    TensorAttr,
)

P = ParamKind
Shape = tuple[int, ...]
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INF = 2**64  # the open end of a clamp

# Precisions whose largest value can be a CCMPB's upper clamp, in order of preference.
CLAMP_PRECISIONS = (
    Precision.TERNARY, Precision.UINT_4, Precision.INT_8, Precision.UINT_8, Precision.INT_9,
    Precision.INT_16, Precision.UINT_16, Precision.INT_28, Precision.INT_32,
)  # fmt: skip


# ---------------------------------------------------------------------------------------------------------
# Layout: a cvm tensor as a Task IR box
# ---------------------------------------------------------------------------------------------------------


def spatial(shape: Shape) -> bool:
    """Whether a tensor is an NCHW image of batch 1, held as a (y, x, f) box."""
    return len(shape) == 4 and shape[0] == 1


def task_shape(shape: Sequence[int]) -> Shape:
    """The Task IR box of a cvm tensor: (H, W, C) for an NCHW tensor of batch 1, else (size,)."""
    shape = tuple(shape)
    return (shape[2], shape[3], shape[1]) if spatial(shape) else (math.prod(shape),)


def to_task_layout(array: np.ndarray) -> np.ndarray:
    """A cvm tensor's values in the order of its Task IR box, flat (the values of an INPUT block)."""
    array = np.asarray(array)
    return (array[0].transpose(1, 2, 0) if spatial(array.shape) else array).reshape(-1)


def from_task_layout(values: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """The cvm tensor of `shape` whose Task IR box holds `values` (the values of an OUTPUT block)."""
    shape = tuple(shape)
    box = np.asarray(values).reshape(task_shape(shape))
    return box.transpose(2, 0, 1).reshape(shape) if spatial(shape) else box.reshape(shape)


def box_dims(box: Shape, names: tuple[str, str, str] = ("y", "x", "f")) -> dict[str, int]:
    """A box as block dims: (y, x, f) or (f); `names` renames them (SIC holds (y, x, r))."""
    return dict(zip(names, box)) if len(box) == 3 else {names[2]: box[0]}


@overload
def wrap32(v: int) -> int: ...
@overload
def wrap32(v: np.ndarray) -> np.ndarray: ...
def wrap32(v: int | np.ndarray) -> int | np.ndarray:
    """Two's-complement int32 of an integer (or an int64 array)."""
    return (v + 2**31) % 2**32 - 2**31


def task_precision(precision: int) -> Precision:
    """The Task IR precision of values of a cvm precision (|x| <= 2^(p-1) - 1)."""
    return Precision.INT_8 if precision <= 8 else Precision.INT_16 if precision <= 16 else Precision.INT_32


# ---------------------------------------------------------------------------------------------------------
# The graph under construction
# ---------------------------------------------------------------------------------------------------------

Box = tuple[dict[str, int], dict[str, int]]  # (position, size) of a box in a cluster, by dim


@dataclass(eq=False)
class Block:
    """A block under construction: its edges are final; its bias may still take an offset."""

    id: int
    op: type[BlockOp]
    precision: Precision
    shape: dict[str, int]
    params: dict[ParamKind, int] = field(default_factory=dict[ParamKind, int])
    data: np.ndarray | None = None
    bias: Block | int | None = None  # a compute block's SB (VECTOR) or CONSTANT_B
    parts: list[Block] = field(default_factory=list["Block"])  # an SI's writers, biased blocks that only it reads
    inputs: list[list[InterfaceAttr]] = field(default_factory=list[list[InterfaceAttr]])
    outputs: list[InterfaceAttr] = field(default_factory=list[InterfaceAttr])

    @property
    def is_compute(self) -> bool:
        return issubclass(self.op, ComputeBlockOp)

    @property
    def out_box(self) -> Shape:
        """The shape of the block's output cluster."""
        if self.is_compute:
            return tuple(self.shape[d] for d in ("y", "x", "f") if d in self.shape)
        return tuple(self.shape.values())

    def build(self) -> BlockOp:
        params = [ParamAttr.get(kind, value) for kind, value in self.params.items()]
        bias_type = None
        if isinstance(self.bias, Block):
            bias_type = BiasType.VECTOR
        elif self.bias is not None:
            bias_type = BiasType.CONSTANT
            params.append(ParamAttr.get(P.CONSTANT_B, self.bias))
        data = None if self.data is None else TensorAttr.from_numpy(self.data, self.precision)
        outputs = [] if self.op is OutputOp else [ClusterAttr.get(self.outputs)]
        inputs = [ClusterAttr.get(c) for c in self.inputs]
        shape = ShapeAttr.get((), **self.shape)
        return self.op(self.id, self.precision, shape, inputs, outputs, params, data, bias_type)


class BlockFields(TypedDict, total=False):
    """The optional fields of a `Block`, as `Graph.block` takes them."""

    params: dict[ParamKind, int]
    data: np.ndarray | None
    bias: Block | int | None
    parts: list[Block]
    inputs: list[list[InterfaceAttr]]
    outputs: list[InterfaceAttr]


class Graph:
    """Blocks, edges and groups, numbered in the order they are made."""

    def __init__(self):
        self.blocks: list[Block] = []
        self.edges: list[EdgeOp] = []
        self.groups: list[list[int]] = []

    def block(self, op: type[BlockOp], precision: Precision, shape: dict[str, int],
              **fields: Unpack[BlockFields]) -> Block:
        b = Block(len(self.blocks), op, precision, shape, **fields)
        self.blocks.append(b)
        return b

    def connect(
        self,
        src: Block,
        dst: Block,
        rearranges: Sequence[RearrangeAttr] = (),
        src_box: Box | None = None,
        dst_box: Box | None = None,
        cluster: int | None = None,
    ) -> None:
        """An edge from `src`'s output (or a box of it) into a new input cluster of `dst` (or into a box of
        `cluster`)."""
        edge = len(self.edges)
        src.outputs.append(interface(edge, src_box))
        if cluster is None:
            dst.inputs.append([interface(edge, dst_box)])
        else:
            dst.inputs[cluster].append(interface(edge, dst_box))
        shape = src.out_box if src_box is None else box_shape(src_box)
        self.edges.append(EdgeOp(edge, src.id, dst.id, simplified(rearranges, shape)))

    def build(self) -> GraphOp:
        groups = [GroupOp(k, ids) for k, ids in enumerate(self.groups)]
        return GraphOp([*(b.build() for b in self.blocks), *self.edges, *groups])


def interface(edge: int, box: Box | None) -> InterfaceAttr:
    if box is None:
        return InterfaceAttr.get(edge)
    return InterfaceAttr.get(edge, ShapeAttr.get((), **box[0]), ShapeAttr.get((), **box[1]))


def box_shape(box: Box) -> Shape:
    """The extents of a box, in layout order."""
    return tuple(box[1].values())


def simplified(rearranges: Sequence[RearrangeAttr], shape: Shape) -> tuple[RearrangeAttr, ...]:
    """The rearranges, or none when together they leave a box of `shape` in row-major order."""
    if not rearranges:
        return ()
    index = np.arange(math.prod(shape)).reshape(shape)
    for r in rearranges:
        gather = r.gather_map(index.shape)
        index = np.where(gather >= 0, index.reshape(-1)[np.maximum(gather, 0)], -1)
    return () if np.array_equal(index.reshape(-1), np.arange(index.size)) else tuple(rearranges)


# ---------------------------------------------------------------------------------------------------------
# Values of the model
# ---------------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Tensor:
    """A value a block's output holds: the block's output cluster (or `box` of it), rearranged by
    `rearranges`, read row-major, is the value's Task IR box. `sole`: this value, used once, is the only
    reader of the block's output."""

    block: Block
    shape: Shape
    precision: int
    rearranges: tuple[RearrangeAttr, ...] = ()
    sole: bool = False
    box: Box | None = None

    def array_shape(self) -> Shape:
        """The shape of what the block gives after the rearranges."""
        shape = self.block.out_box if self.box is None else box_shape(self.box)
        for r in self.rearranges:
            shape = r.result_shape(shape)
        return shape


@dataclass(eq=False)
class Const:
    """A param's values (cvm shape)."""

    array: np.ndarray
    precision: int


@dataclass(frozen=True)
class Window:
    """A max_pool2d window: kernel, strides, padding (top, bottom, left, right) and output extents."""

    ky: int
    kx: int
    sy: int
    sx: int
    pad: tuple[int, int, int, int]
    oy: int
    ox: int


@dataclass(frozen=True)
class Requant:
    """clamp((max over `window` of v + offset) >> shift, lo, hi) of a value v; +-INF: an open end."""

    offset: int = 0
    shift: int = 0
    lo: int = -INF
    hi: int = INF
    window: Window | None = None

    def clamp(self, lo: int, hi: int) -> Requant:
        return replace(self, lo=min(max(self.lo, lo), hi), hi=max(min(self.hi, hi), lo))

    def round_shift(self, s: int) -> Requant:
        """Then (y + 2^(s-1)) >> s, which is monotone: it moves the bounds and joins the shift."""
        k = 1 << (s - 1)

        def moved(bound: int) -> int:
            return bound if abs(bound) == INF else (bound + k) >> s

        return replace(self, offset=self.offset + (k << self.shift), shift=self.shift + s,
                       lo=moved(self.lo), hi=moved(self.hi))  # fmt: skip

    def pool(self, window: Window) -> Requant | None:
        return None if self.window is not None else replace(self, window=window)

    def fits(self, precision: int) -> bool:
        """Whether v + offset stays in int32 for every v of the precision."""
        return (1 << (precision - 1)) - 1 + self.offset <= INT32_MAX


@dataclass(eq=False)
class Fused:
    """A requantization chain over `base`, not yet given its CCMPB."""

    base: Tensor
    requant: Requant
    shape: Shape
    precision: int


class Unmappable(Exception):
    """Raised by an op's conversion with the reason; the converter names the node."""


# ---------------------------------------------------------------------------------------------------------
# What the conversion computes of values and params
# ---------------------------------------------------------------------------------------------------------


def box_order(shape: Shape) -> np.ndarray:
    """For each position of a tensor's Task IR box (row-major), the index of its element in cvm order."""
    return to_task_layout(np.arange(math.prod(shape)).reshape(shape))


def negated(value: int | np.ndarray) -> int | np.ndarray:
    return int(wrap32(-value)) if isinstance(value, int) else wrap32(-value)


def per_f(values: np.ndarray) -> int | np.ndarray | None:
    """A param broadcast to a result as a block constant: one int, a vector over f, or None when it varies
    over (y, x)."""
    if np.all(values == values.flat[0]):
        return int(values.flat[0])
    if not spatial(values.shape):
        return values.reshape(-1)
    per_channel = values[0, :, :1, :1]
    return per_channel.reshape(-1) if np.all(values[0] == per_channel) else None


def clamp_precision(lo: int, hi: int) -> Precision | None:
    """The precision whose largest value is hi (INT_32 without an upper bound) and that holds lo."""
    hi = min(hi, INT32_MAX)
    for p in CLAMP_PRECISIONS:
        p_lo, p_hi = PRECISION_RANGE[p]
        if p_hi == hi and p_lo <= lo:
            return p
    return None


def compare_block(box: Shape, w: Window | None) -> tuple[dict[str, int], Window]:
    """The shape of a CCMPB or CCMPS over a box: (y, x, f) with a window (1x1 without one), or 1-D."""
    if len(box) == 1:
        return {"f": box[0], "ky": 1, "kx": 1}, Window(1, 1, 1, 1, (0, 0, 0, 0), 0, 0)
    w = w or Window(1, 1, 1, 1, (0, 0, 0, 0), box[0], box[1])
    return {"y": w.oy, "x": w.ox, "f": box[2], "ky": w.ky, "kx": w.kx, "iy": box[0], "ix": box[1]}, w


def compare_params(cmp: int, w: Window, shift: int, planar: bool) -> dict[ParamKind, int]:
    """A CCMPB's or CCMPS's attributes, in LeNet's order."""
    params = {P.CMP: cmp, P.KERNEL_X: w.kx, P.KERNEL_Y: w.ky}
    if planar:
        params.update({P.PAD_UP: w.pad[0], P.PAD_DOWN: w.pad[1], P.PAD_LEFT: w.pad[2], P.PAD_RIGHT: w.pad[3]})
    params.update({P.STRIDE_X: w.sx, P.STRIDE_Y: w.sy, P.BIT_SHIGT_NUM: shift})
    return params
