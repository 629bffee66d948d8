"""From a CVM network to a plan: views, fused groups, a schedule and buffers placed in one arena.

`plan(net)` decides, without building any IR:
- which tensors are views of another tensor's buffer (reshape, flatten, expand_dims, squeeze, transpose,
  positive-stride strided_slice, slice_like, an identity sum/max): a `Ref` (base buffer, strided layout), no kernel;
- groups: one anchor operator plus the chain of elementwise operators fused into its epilogue (an elementwise
  consumer joins the group of its input when it is that tensor's only consumer and the tensor is not a head);
  each group is one kernel call and writes one fresh buffer per output;
- packed operands of conv2d and dense: the input as zero-padded NHWC (conv2d) or rows (dense) and the weight as
  rows of the reduction, both int16 when every value provably fits 16 bits (`value_bits`), so the inner loop is
  a contiguous int16 dot product (LLVM makes it `vpmaddwd`); a param weight is packed once, at compile time;
- buffer liveness on base buffers (a view keeps its base alive; heads live to the end) and placement in one
  arena by first fit, largest buffer first, 64-byte aligned. The model's own storage_id is never used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Any

from cvmc.dialects import cvm_rules as rules
from cvmc.errors import CVMError
from cvmc.passes import cvm_loops_ops as ops
from cvmc.passes.cvm_loops_views import Layout

Attrs = dict[str, Any]
ALIGN = 64
ELEMENT_BYTES = {"i32": 4, "i16": 2}  # every CVM tensor is int32; packed operands may be int16


# ---------------------------------------------------------------------------------------------------------
# The network
# ---------------------------------------------------------------------------------------------------------


@dataclass
class Tensor:
    """A value of the network: the input (`kind == "input"`), a param, or an operator's output."""

    shape: tuple[int, ...]
    precision: int
    kind: str = "op"  # "input", "param" or "op"
    name: str = ""
    element: str = "i32"
    packed_from: int = -1  # a param packed at compile time: the param's tensor id (see `ops.pack_values`)
    pack: Attrs | None = None  # how it is packed (the attributes of a `pack` node)


@dataclass
class Node:
    """One operator: typed attributes (`cvm_rules`), input and output tensor ids."""

    op: str
    attrs: Attrs
    inputs: list[int]
    outputs: list[int]


@dataclass
class Net:
    tensors: list[Tensor]
    nodes: list[Node]  # topological order
    heads: list[int]


def value_bits(net: Net) -> list[int]:
    """A sound bound on each tensor's values, as a precision (|x| <= 2^(p-1) - 1; 32: any int32 value).

    The declared precision is not always one: `where` takes its precision from the condition while its values
    come from x and y, broadcast_greater keeps its first input's precision for 0/1 values, and get_valid_counts
    and non_max_suppression fill rows with -1; whatever consumes such a tensor inherits the understatement. So a
    node whose inputs are all within their declared precisions keeps its declared output precisions, and any
    other node is inferred again by `cvm_rules.infer` from the bounds of its inputs (32 when the rules reject
    them: the values may have wrapped). Conv2d and dense use it to decide whether products fit 16 bits."""
    bits = [t.precision for t in net.tensors]
    for node in net.nodes:
        ins = [bits[t] for t in node.inputs]
        declared = [net.tensors[t].precision for t in node.outputs]
        if node.op == "where":
            out = [max(ins[1], ins[2])]
        elif node.op == "broadcast_greater":
            out = [2]
        elif node.op == "get_valid_counts":
            out = [declared[0], max(ins[0], 2)]
        elif node.op == "non_max_suppression":
            out = [max(ins[0], 2)]
        elif node.op == "cvm_precision":
            out = [7 if ins[0] >= 32 else declared[0]]  # |INT32_MIN| has 32 bits
        elif all(b <= net.tensors[t].precision for b, t in zip(ins, node.inputs)):
            out = declared
        else:
            try:
                sig = rules.infer(node.op, node.attrs, [net.tensors[t].shape for t in node.inputs], ins)
                out = [max(d, p) for d, p in zip(declared, sig.precisions)]
            except CVMError:
                out = [32] * len(declared)
        for t, b in zip(node.outputs, out):
            bits[t] = min(b, 32)
    return bits


# ---------------------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------------------


@dataclass
class Buffer:
    """A base allocation: the input, a param, or an arena slot (`offset` in bytes)."""

    kind: str  # "input", "param" or "arena"
    elements: int
    element: str = "i32"
    tensor: int = -1  # the input's or param's tensor id
    offset: int = 0
    first: int = 0  # the step that writes it
    last: int = 0  # the last step that reads it

    @property
    def nbytes(self) -> int:
        return self.elements * ELEMENT_BYTES[self.element]


@dataclass(frozen=True)
class Ref:
    """A tensor as a strided layout over a base buffer."""

    buffer: int
    layout: Layout


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

    @property
    def nodes(self) -> list[Node]:
        return [self.anchor, *(s.node for s in self.epilogue)]

    @property
    def fusable(self) -> bool:
        return self.kind in ("map", "compute", "conv2d", "dense", "concatenate")


@dataclass
class Plan:
    net: Net
    tensors: list[Tensor]  # the network's, then the packed operands
    refs: dict[int, Ref]  # tensor id -> where it lives
    buffers: list[Buffer]
    groups: list[Group]  # in execution order
    arena_bytes: int

    @property
    def intermediate_bytes(self) -> int:
        """The bytes of every operator output of the network (what a plan without reuse would allocate)."""
        produced = {t for n in self.net.nodes for t in n.outputs}
        return sum(prod(self.net.tensors[t].shape) * ELEMENT_BYTES["i32"] for t in produced)


VIEW_OPS = frozenset({"reshape", "flatten", "expand_dims", "squeeze", "transpose", "strided_slice",
                      "slice_like"})


def _view(node: Node, src: Layout, out_shape: tuple[int, ...]) -> Layout | None:
    """The layout of a view operator's output over its input's buffer, or None when it needs a kernel."""
    op, a = node.op, node.attrs
    if op == "transpose":
        return src.permute(rules.transpose_axes(a["axes"], len(src.shape)))
    if op == "strided_slice":
        return src.slice(rules.strided_slice_bounds(src.shape, a["begin"], a["end"], a["stride"]))
    if op == "slice_like":
        return src.slice([(0, 1, n) for n in out_shape])
    return src.reshape(out_shape)  # reshape, flatten, expand_dims, squeeze, and a sum/max reducing nothing


def _is_view(node: Node, net: Net) -> bool:
    """A view operator, or a sum/max whose `exclude` lists every axis (the identity)."""
    if node.op in ("sum", "max"):
        a = node.attrs
        return not rules.reduce_axes(net.tensors[node.inputs[0]].shape, a["axis"], a["exclude"])
    return node.op in VIEW_OPS


def _kind(node: Node) -> str:
    if node.op in ops.ELEMENTWISE:
        return "map"
    if node.op in ("conv2d", "dense"):
        return node.op
    if node.op in ops.COMPUTE:
        return "compute"
    if node.op in VIEW_OPS or node.op in ("sum", "max"):
        return "copy"  # a view that strides cannot express (compute ops were caught above)
    return node.op  # concatenate, get_valid_counts, non_max_suppression


def _live_nodes(net: Net) -> list[Node]:
    """The nodes some head depends on, in order."""
    needed = set(net.heads)
    live: list[Node] = []
    for node in reversed(net.nodes):
        if any(t in needed for t in node.outputs):
            live.append(node)
            needed.update(node.inputs)
    return live[::-1]


class _Planner:
    """The state of `plan` while it walks the nodes in order."""

    def __init__(self, net: Net):
        self.net = net
        self.nodes = _live_nodes(net)
        self.consumers: dict[int, int] = {}
        for node in self.nodes:
            for t in set(node.inputs):
                self.consumers[t] = self.consumers.get(t, 0) + 1
        self.heads = set(net.heads)
        self.bits = value_bits(net)
        self.tensors = list(net.tensors)
        self.buffers: list[Buffer] = []
        self.refs: dict[int, Ref] = {}
        for tid, t in enumerate(net.tensors):
            if t.kind in ("input", "param"):
                self.refs[tid] = Ref(len(self.buffers), Layout.contiguous(t.shape))
                self.buffers.append(Buffer(t.kind, prod(t.shape), tensor=tid))
        self.groups: list[Group] = []
        self.position: list[float] = []  # index in `nodes` of each group's last member
        self.open_group: dict[int, int] = {}  # tensor id -> the group whose current output it is
        self.packs: dict[tuple[object, ...], int] = {}

    def run(self) -> Plan:
        for pos, node in enumerate(self.nodes):
            if _is_view(node, self.net) and self._view(node):
                continue
            if node.op in ops.ELEMENTWISE and self._fuse(node, pos):
                continue
            self._group(node, pos)
        order = sorted(range(len(self.groups)), key=lambda g: self.position[g])
        return _place(self.net, self.tensors, self.refs, self.buffers, [self.groups[g] for g in order], self.heads)

    def _new_buffer(self, shape: tuple[int, ...], element: str = "i32") -> Ref:
        self.buffers.append(Buffer("arena", prod(shape), element))
        return Ref(len(self.buffers) - 1, Layout.contiguous(shape))

    def _add(self, group: Group, pos: float) -> None:
        self.groups.append(group)
        self.position.append(pos)
        if group.fusable:
            self.open_group[group.outputs[0]] = len(self.groups) - 1

    def _view(self, node: Node) -> bool:
        """Make the node's output a view of its input's buffer, if strides can express it."""
        src = self.refs[node.inputs[0]]
        layout = _view(node, src.layout, self.net.tensors[node.outputs[0]].shape)
        if layout is not None:
            self.refs[node.outputs[0]] = Ref(src.buffer, layout)
        return layout is not None

    def _fuse(self, node: Node, pos: int) -> bool:
        """Append an elementwise node to the epilogue of the group that makes one of its inputs, if it may:
        that input is the group's current output, has no other consumer, is no head and has the node's shape
        (the latest such group, so that every other input is ready when the group runs)."""
        net = self.net
        out_shape = net.tensors[node.outputs[0]].shape
        target: int | None = None
        for t in node.inputs:
            g = self.open_group.get(t)
            if g is None or self.consumers.get(t) != 1 or t in self.heads or net.tensors[t].shape != out_shape:
                continue
            if node.op == "where" and t == node.inputs[0] and len(net.tensors[t].shape) != len(out_shape):
                continue
            target = g if target is None else max(target, g)
        if target is None:
            return False
        group = self.groups[target]
        running = group.outputs[0]
        sources: list[int | None] = []
        for t in node.inputs:
            if t == running:
                sources.append(None)
            else:
                sources.append(len(group.extras))
                group.extras.append(t)
        group.epilogue.append(Step(node, sources))
        group.outputs = [node.outputs[0]]
        self.refs[node.outputs[0]] = self.refs.pop(running)  # same shape: the buffer carries over
        self.open_group[node.outputs[0]] = self.open_group.pop(running)
        self.position[target] = pos
        return True

    def _group(self, node: Node, pos: int) -> None:
        """A new group anchored at `node` (conv2d and dense with their packed operands)."""
        net, kind, inputs = self.net, _kind(node), list(node.inputs)
        if kind in ("conv2d", "dense"):
            wide = self.bits[inputs[0]] > 16 or self.bits[inputs[1]] > 16
            element = "i32" if wide else "i16"
            x, w = (net.tensors[t].shape for t in inputs[:2])
            if kind == "conv2d" and not ops.conv2d_fits(node.attrs, w, element):
                kind = "compute"  # an im2col row would not fit the stack: the direct loop nest
            elif kind == "conv2d":
                (ph, pw), width = node.attrs["padding"], ops.padded(prod(w[1:]))
                nhwc = (x[0], x[2] + 2 * ph, x[3] + 2 * pw, x[1])
                inputs[0] = self._packed(inputs[0], {"to": "nhwc", "padding": (ph, pw)}, nhwc, element, pos)
                inputs[1] = self._packed(inputs[1], {"to": "conv_weight", "width": width}, (w[0], width), element,
                                         pos)
            else:
                width = ops.padded(x[1])
                inputs[0] = self._packed(inputs[0], {"to": "rows", "width": width}, (x[0], width), element, pos)
                inputs[1] = self._packed(inputs[1], {"to": "rows", "width": width}, (w[0], width), element, pos)
        group = Group(node, kind, inputs=inputs, outputs=list(node.outputs))
        for t in node.outputs:
            self.refs[t] = self._new_buffer(net.tensors[t].shape)
        if kind == "non_max_suppression":
            group.scratch.append(self._new_buffer((net.tensors[node.inputs[0]].shape[1],)).buffer)
        self._add(group, pos)

    def _packed(self, src: int, pack: Attrs, shape: tuple[int, ...], element: str, pos: int) -> int:
        """A tensor holding `src` packed: made when compiling for a param, else by a pack kernel that runs just
        before the node at `pos`; one per source and packing."""
        key = (src, element, *sorted(pack.items()))
        if key in self.packs:
            return self.packs[key]
        tid = self.packs[key] = len(self.tensors)
        origin = self.net.tensors[src]
        if origin.kind == "param" and pack["to"] != "nhwc":
            self.tensors.append(Tensor(shape, origin.precision, "param", origin.name, element, src, pack))
            self.refs[tid] = Ref(len(self.buffers), Layout.contiguous(shape))
            self.buffers.append(Buffer("param", prod(shape), element, tid))
            return tid
        self.tensors.append(Tensor(shape, origin.precision, "op", element=element))
        self.refs[tid] = self._new_buffer(shape, element)
        self._add(Group(Node("pack", pack, [src], [tid]), "pack", inputs=[src], outputs=[tid]), pos - 0.5)
        return tid


def plan(net: Net) -> Plan:
    """Views, fused groups, their order, and arena offsets for a network."""
    return _Planner(net).run()


def group_inputs(group: Group) -> list[int]:
    """Every tensor a group reads: the anchor's inputs, then the epilogue's extras."""
    return [*group.inputs, *group.extras]


def _place(net: Net, tensors: list[Tensor], refs: dict[int, Ref], buffers: list[Buffer], groups: list[Group],
           heads: set[int]) -> Plan:
    """Liveness per base buffer over the group order, then first-fit placement in one arena."""
    for step, group in enumerate(groups):
        for t in group.outputs:
            b = buffers[refs[t].buffer]
            b.first = b.last = step
        for s in group.scratch:
            buffers[s].first = buffers[s].last = step
    for step, group in enumerate(groups):
        for t in group_inputs(group):
            b = buffers[refs[t].buffer]
            b.last = max(b.last, step)
    for t in heads:
        buffers[refs[t].buffer].last = len(groups)

    placed: list[Buffer] = []
    arena = 0
    for b in sorted((b for b in buffers if b.kind == "arena"), key=lambda b: (-b.nbytes, b.first)):
        size = -(-b.nbytes // ALIGN) * ALIGN
        busy = sorted((p.offset, p.offset + -(-p.nbytes // ALIGN) * ALIGN) for p in placed
                      if p.first <= b.last and b.first <= p.last)
        offset = 0
        for lo, hi in busy:
            if offset + size <= lo:
                break
            offset = max(offset, hi)
        b.offset = offset
        placed.append(b)
        arena = max(arena, offset + size)
    return Plan(net, tensors, refs, buffers, groups, arena)


def operand_layouts(plan: Plan, group: Group) -> list[Layout]:
    """The layouts a group's kernel receives for what it reads, in `group_inputs` order."""
    node = group.anchor
    out_shape = plan.tensors[group.outputs[0]].shape
    layouts = [plan.refs[t].layout for t in group.inputs]
    if group.kind == "map":
        layouts = [ops.operand_layout(node.op, i, l, out_shape) for i, l in enumerate(layouts)]
    else:
        for i in ops.flat_inputs(node.op, node.attrs):
            layouts[i] = ops.flat_layout(layouts[i])
    for t in group.extras:
        layouts.append(plan.refs[t].layout)
    # epilogue extras: broadcast to the output shape as their step reads them
    extra_at = len(group.inputs)
    for step in group.epilogue:
        for i, src in enumerate(step.sources):
            if src is not None:
                layouts[extra_at + src] = ops.operand_layout(step.node.op, i, layouts[extra_at + src], out_shape)
    return layouts


def group_work(net: Net, group: Group) -> int:
    """The gas of a group's operators: how much work one call does."""
    if group.kind == "pack":
        return prod(net.tensors[group.anchor.inputs[0]].shape)
    work = 0
    for node in group.nodes:
        shapes = [net.tensors[t].shape for t in node.inputs]
        precs = [net.tensors[t].precision for t in node.inputs]
        sig = rules.infer(node.op, node.attrs, shapes, precs)
        work += rules.node_gas(sig)
    return work
