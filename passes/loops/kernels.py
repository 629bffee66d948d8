# pyright: basic
"""One loop-level kernel per planned group: a `func.func` over memrefs whose body is the group's loop nest.

A kernel's arguments are, in order: the group's outputs (fresh contiguous buffers), what it reads (views with
their strided layouts: the anchor's inputs, then the epilogue's extras, broadcast to the output shape where an
elementwise op reads them), then scratch buffers. Elementwise groups run over the collapsed index space of all
their layouts (`collapse`), so a contiguous chain is one long loop that LLVM vectorizes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import MemRefType, i8, i16, i32

from cvmc.passes.loops import ops as ops
from cvmc.passes.loops import x86
from cvmc.passes.loops.builder import Arg, KernelBuilder, Value
from cvmc.passes.loops.target import Target
from cvmc.passes.loops.views import VIEW_OPERATORS, Layout

ELEMENT_TYPES = {"i32": i32, "i16": i16, "u8": i8, "i8": i8}  # u8: an int8 value + 128, in a byte


Attrs = dict[str, Any]


@dataclass
class Node:
    """One operator: typed attributes (`cvm_rules`), input and output tensor ids."""

    op: str
    attrs: Attrs
    inputs: list[int]
    outputs: list[int]


@dataclass
class Step:
    """One elementwise operator of a group's epilogue: its operands are the running value (None) or extra
    kernel inputs (indices into `Group.extras`)."""

    node: Node
    sources: list[int | None]


@dataclass
class Group:
    """One kernel call: an anchor operator, its epilogue, and the refs it reads and writes."""

    anchor: Node
    kind: str  # "map", "compute", "conv2d", "dense", "pack", "concatenate", "copy", "get_valid_counts", ...
    inputs: list[int] = field(default_factory=list)  # what the anchor reads (packed operands replace originals)
    epilogue: list[Step] = field(default_factory=list)
    extras: list[int] = field(default_factory=list)  # tensor ids read by the epilogue
    outputs: list[int] = field(default_factory=list)  # tensor ids written (the last epilogue's output)
    scratch: list[int] = field(default_factory=list)  # buffer ids of per-call scratch
    members: list[int] = field(default_factory=list)  # indices in `net.nodes` of its operators (a pack: none)
    part: int | None = None  # a concatenate in parts: where its slice of the output starts along the axis
    # packed copies of the output that the epilogue writes (a blocked conv2d's, for the next conv2d: no pack
    # kernel runs between them; see `cvm-fuse-packs`), and whether the output itself is stored (not
    # when such a pack is its one reader)
    packed: list[tuple[int, Attrs]] = field(default_factory=list)  # (tensor id, how: the `pack` node's attributes)
    stores_output: bool = True
    origin: int = -1  # the index in `net.nodes` of the node the anchor is (-1: a pack the planner made)

    @property
    def nodes(self) -> list[Node]:
        return [self.anchor, *(s.node for s in self.epilogue)]

    @property
    def fusable(self) -> bool:
        return self.kind in ("map", "compute", "conv2d", "dense", "concatenate")


def op_kind(op: str) -> str:
    """The kind of kernel an operator anchors (`Group.kind`; a conv2d or dense of unpacked operands: "compute")."""
    if op in ops.ELEMENTWISE:
        return "map"
    if op in ("conv2d", "dense"):
        return op
    if op in ops.COMPUTE:
        return "compute"
    if op in VIEW_OPERATORS | {"view"} or op in ("sum", "max"):
        return "copy"  # a view that strides cannot express (compute ops were caught above)
    return op  # concatenate, get_valid_counts, non_max_suppression



@dataclass(frozen=True)
class KernelArg:
    """What the host passes for one kernel argument: a view of a planned buffer."""

    buffer: int
    layout: Layout
    element: str = "i32"
    shift: int = 0  # elements into the buffer where the layout starts (a part of a concatenate's output)

    @property
    def type(self) -> MemRefType:
        return self.layout.memref_type(ELEMENT_TYPES[self.element])


@dataclass
class KernelCall:
    """A group's kernel: its signature key (equal keys build equal kernels), arguments, and how to build it."""

    group: Group
    args: list[KernelArg]
    types: list[MemRefType]
    key: tuple[object, ...]
    out_shape: tuple[int, ...] = ()  # the anchor's output shape (also when no output is stored)
    zero_point: int = 0  # what a conv2d's packed input adds to each value (the u8 packing of signed data)


def written(group: Group) -> list[int]:
    """The tensors a group's kernel writes, its first arguments: its outputs (unless it stores none), then the
    packs of its output that its epilogue writes."""
    return [*(group.outputs if group.stores_output else []), *(t for t, _ in group.packed)]


@dataclass
class KernelParts:
    """A kernel under construction: its builder and arguments by role, its anchor and fused epilogue."""

    k: KernelBuilder
    call: KernelCall
    outs: list[Arg]
    ins: list[Arg]
    extras: list[Arg]
    scratch: list[Arg]
    epilogue: Callable[[Value, list[Value]], Value]

    @property
    def group(self) -> Group:
        return self.call.group

    @property
    def node(self) -> Node:
        return self.call.group.anchor


def kernel_parts(name: str, call: KernelCall, target: Target) -> KernelParts:
    """The builder of `func.func @name` for `call`, built for `target`, its arguments split by role."""
    group = call.group
    k = KernelBuilder(name, call.types, target)
    args = [Arg(m, a.layout) for m, a in zip(k.args, call.args)]
    n_out = 1 if group.kind == "copy" else len(written(group))
    outs, rest = args[:n_out], args[n_out:]
    n_in = len(group.inputs)
    ins, extras = rest[:n_in], rest[n_in:n_in + len(group.extras)]
    scratch = rest[n_in + len(group.extras):]
    return KernelParts(k, call, outs, ins, extras, scratch, ops.fused_epilogue(k, group.epilogue, extras))


def build_map(p: KernelParts) -> None:
    """An elementwise anchor and its epilogue: one loop nest over the (collapsed) output."""
    k, node, ins, out = p.k, p.node, p.ins, p.outs[0]

    def body(ivs: list[Value]) -> None:
        v = ops.scalar(k, node.op, node.attrs, [a.load(k, ivs) for a in ins])
        k.store(p.epilogue(v, ivs), out.mem, ivs)

    k.loops(out.layout.shape, body, parallel=True)


def build_conv2d(p: KernelParts) -> None:
    """A conv2d of packed operands: the register-blocked micro-kernel writing the packs of its output, or the
    im2col dot product."""
    group, call = p.group, p.call
    attrs = {**p.node.attrs, "zero_point": call.zero_point} if call.zero_point else p.node.attrs
    if group.packed:
        stored = p.outs[0] if group.stores_output else None
        packs = [(arg, how) for arg, (_, how) in zip(p.outs[int(group.stores_output):], group.packed)]
        x86.conv2d_packing(p.k, attrs, call.out_shape, stored, packs, p.ins, p.epilogue)
    else:
        ops.conv2d(p.k, attrs, p.outs[0], p.ins, p.epilogue)


def build_dense(p: KernelParts) -> None:
    ops.dense(p.k, p.outs[0], p.ins, p.epilogue)


def build_pack(p: KernelParts) -> None:
    ops.pack(p.k, p.node.attrs, p.outs[0], p.ins[0])


def build_compute(p: KernelParts) -> None:
    """A computed op (pooling, reductions, gathers, a conv2d of unpacked operands, ...) and its epilogue."""
    k, out = p.k, p.outs[0]
    compute = ops.COMPUTE[p.node.op](k, p.node.attrs, p.ins, out.layout.shape)
    k.loops(out.layout.shape, lambda ivs: k.store(p.epilogue(compute(ivs), ivs), out.mem, ivs), parallel=True)


def build_concatenate(p: KernelParts) -> None:
    ops.concatenate(p.k, p.node.attrs, p.outs[0], p.ins, p.epilogue)


def build_copy(p: KernelParts) -> None:
    ops.copy(p.k, p.outs[0], p.ins[0])


def build_get_valid_counts(p: KernelParts) -> None:
    ops.get_valid_counts(p.k, p.node.attrs, p.outs, p.ins)


def build_non_max_suppression(p: KernelParts) -> None:
    ops.non_max_suppression(p.k, p.node.attrs, p.outs, p.ins, p.scratch[0])


class KernelNames:
    """Unique kernel names: `conv2d`, `conv2d_cvm_right_shift_relu`, ..., then `conv2d_1`, `conv2d_2`, ...: the
    base name with the lowest free counter (each base remembers where its search stopped: names are never
    freed, so the lowest free counter never goes down)."""

    def __init__(self) -> None:
        self.taken: set[str] = set()
        self.next: dict[str, int] = {}

    def new(self, ops: Sequence[str], copy: bool = False) -> str:
        """A new name for a kernel of the operators `ops` (its anchor, then its epilogue); `copy`: a copy kernel."""
        base = "_".join(ops)
        if copy:
            base = f"copy_{base}"
        if len(base) > 48:
            base = f"{ops[0]}_fused{len(ops) - 1}"
        name, i = base, self.next.get(base, 1)
        if name in self.taken:
            name = f"{base}_{i}"
            while name in self.taken:
                i += 1
                name = f"{base}_{i}"
            self.next[base] = i
        self.taken.add(name)
        return name
