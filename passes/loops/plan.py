"""From a CVM network to a plan: views, fused groups, a schedule and buffers placed in one arena.

`plan(net, hints)` decides, without building any IR:
- which tensors are views of another tensor's buffer (reshape, flatten, expand_dims, squeeze, transpose,
  positive-stride strided_slice, slice_like, an identity sum/max): a `Ref` (base buffer, strided layout), no kernel;
- groups: one anchor operator plus the chain of elementwise operators fused into its epilogue (an elementwise
  consumer joins the group of its input when it is that tensor's only consumer and the tensor is not a head);
  each group is one kernel call and writes one fresh buffer per output;
- packed operands of conv2d and dense: the input as zero-padded NHWC (conv2d) or rows (dense) and the weight as
  rows of the reduction, as u8 (x + 128) x s8 when every value provably fits 8 bits (`value_bits`) and the host
  has AVX512-VNNI (`vpdpbusd`), else both int16 when they fit 16 bits (LLVM makes the contiguous dot product
  `vpmaddwd` / `vpdpwssd`), else int32 (`_dot_elements`); a param weight is packed once, at compile time;
- buffer liveness on base buffers (a view keeps its base alive; heads live to the end) and placement in one
  arena by first fit, largest buffer first, 64-byte aligned (`loops.arena`: O(log n) per buffer). The
  model's own storage_id is never used.

The scheduled IR carries most of these decisions as ops, and the plan follows them: a `cvm_sched.view` node
("view") is its layout, a `cvm_sched.pack` node ("pack") the packed operand its conv2d or dense reads, the nodes
of one `cvm_sched.kernel` one group (`Hints.groups`, checked: a legal fusion). A module that skipped
those passes is planned as they would have decided (`dot_packing`, the fusion rule, `view_layouts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from math import prod
from typing import Any

from cvmc.dialects import cvm_rules as rules
from cvmc.errors import CVMLogicError
from cvmc.passes.cvm_fuse import MAX_CONCAT_INPUTS, MAX_GROUP_OPS
from cvmc.passes.cvm_pack_operands import dot_packing
from cvmc.passes.cvm_value_bits import keeps_nonnegative, node_bits
from cvmc.passes.loops import ops as ops
from cvmc.passes.loops.arena import ALIGN, ELEMENT_BYTES, Buffer, _fit, _fit_by_scan, place  # noqa: F401
from cvmc.passes.loops.kernels import Group, Node, Step, op_kind
from cvmc.passes.loops.target import DEFAULT, Target
from cvmc.passes.loops.views import VIEW_OPERATORS, Layout, is_view_operator, operator_view

Attrs = dict[str, Any]


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
        out = node_bits(node.op, node.attrs, [net.tensors[t].shape for t in node.inputs],
                        [bits[t] for t in node.inputs], [net.tensors[t].precision for t in node.inputs],
                        [net.tensors[t].precision for t in node.outputs])
        for t, b in zip(node.outputs, out):
            bits[t] = b
    return bits


# ---------------------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ref:
    """A tensor as a strided layout over a base buffer."""

    buffer: int
    layout: Layout


@dataclass
class Plan:
    net: Net
    tensors: list[Tensor]  # the network's, then the packed operands
    refs: dict[int, Ref]  # tensor id -> where it lives
    buffers: list[Buffer]
    groups: list[Group]  # in execution order
    arena_bytes: int
    target: Target = DEFAULT  # what its kernels are built for

    @property
    def intermediate_bytes(self) -> int:
        """The bytes of every operator output of the network (what a plan without reuse would allocate)."""
        produced = {t for n in self.net.nodes if n.op != "pack" for t in n.outputs}
        return sum(prod(self.net.tensors[t].shape) * ELEMENT_BYTES["i32"] for t in produced)


@dataclass
class Hints:
    """Decisions recorded in the IR, by node index in `net.nodes`; each may be partial or empty."""

    groups: Mapping[int, int] = field(default_factory=dict)  # the number of the group a node belongs to


class PlanError(CVMLogicError):
    """A recorded decision the plan cannot follow; `node` is its node index (-1: none in particular)."""

    def __init__(self, node: int, message: str):
        super().__init__(message)
        self.node = node


VIEW_OPS = VIEW_OPERATORS | {"view"}  # "view": a `cvm_sched.view`, its layout given over its base


def _view(node: Node, src: Layout, out_shape: tuple[int, ...]) -> Layout | None:
    """The layout of a view operator's output over its input's buffer, or None when it needs a kernel."""
    if node.op == "view":  # over its base, contiguous (the op's verifier)
        return node.attrs["layout"]
    return operator_view(node.op, node.attrs, src, out_shape)


def _is_view(node: Node, net: Net) -> bool:
    """A view operator, or a sum/max whose `exclude` lists every axis (the identity)."""
    return node.op == "view" or is_view_operator(node.op, node.attrs, net.tensors[node.inputs[0]].shape)


def _kind(node: Node) -> str:
    return op_kind(node.op)


def pack_sources(net: Net) -> dict[int, int]:
    """The source of each `cvm_sched.pack` node's output, by tensor id."""
    return {n.outputs[0]: n.inputs[0] for n in net.nodes if n.op == "pack"}


def read_inputs(node: Node) -> list[int]:
    """The inputs whose values a node reads: a slice_like's second input gives only its shape (known when
    compiling), so it is no reader (`cvm-mark-views` drops it from the view it makes)."""
    return node.inputs[:1] if node.op == "slice_like" else node.inputs


def live_nodes(net: Net) -> list[int]:
    """The indices of the nodes some head depends on, in order."""
    needed = set(net.heads)
    live: list[int] = []
    for i in reversed(range(len(net.nodes))):
        node = net.nodes[i]
        if any(t in needed for t in node.outputs):
            live.append(i)
            needed.update(read_inputs(node))
    return live[::-1]


def view_layouts(net: Net, kernels: Mapping[int, int] | None = None) -> dict[int, Layout]:
    """The nodes whose output is a view of their input's buffer (no kernel, no copy), by node index, with the
    layout of that output over its base buffer: the buffer of the nearest input that is no view, where it is
    contiguous (a `cvm_sched.view` node gives its own). A node in `kernels` (a `cvm_sched.kernel`) is none."""
    layouts: dict[int, Layout] = {}  # tensor id -> its layout, for views
    views: dict[int, Layout] = {}
    live = live_nodes(net)
    for i in live:
        node = net.nodes[i]
        if _is_view(node, net) and (kernels is None or i not in kernels):
            t = node.inputs[0]
            src = layouts[t] if t in layouts else Layout.contiguous(net.tensors[t].shape)
            layout = _view(node, src, net.tensors[node.outputs[0]].shape)
            if layout is not None:
                layouts[node.outputs[0]] = views[i] = layout
    return views


class _Planner:
    """The state of `plan` while it walks the nodes in order."""

    def __init__(self, net: Net, hints: Hints, target: Target = DEFAULT):
        self.net = net
        self.hints = hints
        self.target = target
        self.live = live_nodes(net)
        self.views = view_layouts(net, hints.groups)
        self.consumers: dict[int, int] = {}
        self.sources = pack_sources(net)
        for i in self.live:  # a pack is transparent: the op reading it reads its source
            if net.nodes[i].op != "pack":
                for t in {self.sources.get(t, t) for t in read_inputs(net.nodes[i])}:
                    self.consumers[t] = self.consumers.get(t, 0) + 1
        self.heads = set(net.heads)
        self.tensors = list(net.tensors)
        self.buffers: list[Buffer] = []
        self.refs: dict[int, Ref] = {}
        for tid, t in enumerate(net.tensors):
            if t.kind in ("input", "param"):
                self.refs[tid] = Ref(len(self.buffers), Layout.contiguous(t.shape))
                self.buffers.append(Buffer(t.kind, prod(t.shape), tensor=tid))
        self.groups: list[Group] = []
        self.position: list[float] = []  # index in `live` of each group's last member
        self.open_group: dict[int, int] = {}  # tensor id -> the group whose current output it is
        self.numbered: dict[int, int] = {}  # a recorded group number -> index in `groups`
        self.packs: dict[tuple[object, ...], int] = {}
        self.bounds: tuple[list[int], list[bool]] | None = None  # `_bounds`

    def run(self) -> Plan:
        live = set(self.live)
        for i in self.hints.groups:
            if i not in live:
                raise PlanError(i, "expected no group: no head depends on this op")
        for pos, i in enumerate(self.live):
            node = self.net.nodes[i]
            number = self.hints.groups.get(i)
            if i in self.views:
                if number is not None:
                    raise PlanError(i, f"expected no group for a view, got group {number}")
                src = self.refs[node.inputs[0]]
                self.refs[node.outputs[0]] = Ref(src.buffer, self.views[i])
            elif number is None:
                target = self._fusion_target(node) if node.op in ops.ELEMENTWISE else None
                if target is None:
                    self._group(i, pos)
                else:
                    self._append(target, i, pos)
            elif number in self.numbered:
                self._append(self._recorded_target(i, number), i, pos)
            else:
                self._group(i, pos)
                self.numbered[number] = len(self.groups) - 1
        order = sorted(range(len(self.groups)), key=lambda g: self.position[g])
        groups = self._extras_from_packs([self.groups[g] for g in order])
        arena = _place(self.refs, self.buffers, groups, self.heads)
        return Plan(self.net, self.tensors, self.refs, self.buffers, groups, arena, self.target)

    def _bounds(self) -> tuple[list[int], list[bool]]:
        """`value_bits` and `nonnegative` of the network: for a conv2d or dense that `cvm-pack-operands` did not
        pack (a module that skipped it), computed the first time one is met."""
        if self.bounds is None:
            self.bounds = value_bits(self.net), nonnegative(self.net)
        return self.bounds

    def _new_buffer(self, shape: tuple[int, ...], element: str = "i32") -> Ref:
        self.buffers.append(Buffer("arena", prod(shape), element))
        return Ref(len(self.buffers) - 1, Layout.contiguous(shape))

    def _add(self, group: Group, pos: float) -> None:
        self.groups.append(group)
        self.position.append(pos)
        if group.fusable:
            self.open_group[group.outputs[0]] = len(self.groups) - 1

    def _fusion_blocker(self, node: Node, t: int) -> str | None:
        """Why an elementwise `node` may not join the group whose current output is its input `t`, or None: `t`
        must be a fusable group's current output, have no other consumer, be no head and have the node's shape."""
        net = self.net
        out_shape = net.tensors[node.outputs[0]].shape
        if t not in self.open_group:
            return "the group takes no epilogue"
        if len(self.groups[self.open_group[t]].members) >= MAX_GROUP_OPS:
            return f"the group has {MAX_GROUP_OPS} ops, the most one kernel takes"
        if self.consumers.get(t) != 1:
            return "the group's output has other consumers"
        if t in self.heads:
            return "the group's output is a head"
        if net.tensors[t].shape != out_shape:
            return "the group's output has another shape"
        if node.op == "where" and t == node.inputs[0] and len(net.tensors[t].shape) != len(out_shape):
            return "a broadcast condition"
        return None

    def _fusion_target(self, node: Node) -> int | None:
        """The group an elementwise node joins, if any: the latest one whose current output it may take (so that
        every other input is ready when the group runs)."""
        target: int | None = None
        for t in node.inputs:
            if self._fusion_blocker(node, t) is None:
                g = self.open_group[t]
                target = g if target is None else max(target, g)
        return target

    def _recorded_target(self, i: int, number: int) -> int:
        """The group a node joins by its recorded number, if it may."""
        node, g = self.net.nodes[i], self.numbered[number]
        running = self.groups[g].outputs[0]
        if node.op not in ops.ELEMENTWISE:
            reason = f"'{node.op}' is no elementwise op"
        elif running not in node.inputs:
            reason = "it does not read the group's output"
        else:
            reason = self._fusion_blocker(node, running)
        if reason is not None:
            raise PlanError(i, f"cannot join group {number}: {reason}")
        return g

    def _append(self, target: int, i: int, pos: int) -> None:
        """Append an elementwise node to the epilogue of group `target`, whose current output it reads."""
        node = self.net.nodes[i]
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
        group.members.append(i)
        group.outputs = [node.outputs[0]]
        self.refs[node.outputs[0]] = self.refs.pop(running)  # same shape: the buffer carries over
        self.open_group[node.outputs[0]] = self.open_group.pop(running)
        self.position[target] = pos

    def _group(self, i: int, pos: int) -> None:
        """A new group anchored at node `i` (conv2d and dense with their packed operands)."""
        node = self.net.nodes[i]
        net, kind, inputs = self.net, _kind(node), list(node.inputs)
        if node.op == "pack":  # a `cvm_sched.pack`
            self._pack_node(i, pos)
            return
        if kind in ("conv2d", "dense") and inputs[0] in self.sources:  # packed by cvm-pack-operands
            pass
        elif kind in ("conv2d", "dense"):
            x, w = (net.tensors[t].shape for t in inputs[:2])
            bits, signs = self._bounds()
            packings = dot_packing(node.op, node.attrs, x, w, bits[inputs[0]], bits[inputs[1]], signs[inputs[0]],
                                   net.tensors[inputs[1]].kind == "param", self.target)
            if packings is None:
                kind = "compute"  # an im2col row would not fit the stack: the direct loop nest
            else:
                for k, (how, shape, element) in enumerate(packings):
                    inputs[k] = self._packed(inputs[k], how, shape, element, pos)
        group = Group(node, kind, inputs=inputs, outputs=list(node.outputs), members=[i], origin=i)
        for k, t in enumerate(node.outputs):
            self.refs[t] = self._new_buffer(net.tensors[t].shape)
        if kind == "non_max_suppression":
            group.scratch.append(self._new_buffer((net.tensors[node.inputs[0]].shape[1],)).buffer)
        if kind == "concatenate" and len(inputs) > MAX_CONCAT_INPUTS:
            self._concatenate_in_parts(i, pos)
            return
        self._add(group, pos)

    def _pack_node(self, i: int, pos: int) -> None:
        """A `cvm_sched.pack` node: made when compiling for a param (but its NHWC data), else by a pack kernel
        at its place or by its producer's epilogue (`_pack_in_epilogue`)."""
        node = self.net.nodes[i]
        src, tid = node.inputs[0], node.outputs[0]
        how, t, origin = node.attrs, self.tensors[node.outputs[0]], self.net.tensors[node.inputs[0]]
        if origin.kind == "param" and how["to"] != "nhwc":
            self.tensors[tid] = Tensor(t.shape, origin.precision, "param", origin.name, t.element, src, how)
            self.refs[tid] = Ref(len(self.buffers), Layout.contiguous(t.shape))
            self.buffers.append(Buffer("param", prod(t.shape), t.element, tid))
            return
        self.refs[tid] = self._new_buffer(t.shape, t.element)
        producer = self._pack_in_epilogue(src, how)
        if producer is None:
            self._add(Group(Node("pack", how, [src], [tid]), "pack", inputs=[src], outputs=[tid], origin=i), pos)
        else:
            self._packs_instead(producer, tid, how)

    def _concatenate_in_parts(self, i: int, pos: float) -> None:
        """Groups of MAX_CONCAT_INPUTS inputs of the concatenate node `i`, each writing its slice of the output (the
        last one counts as the node's group); none takes an epilogue, as the output is whole only after the last."""
        node = self.net.nodes[i]
        out = node.outputs[0]
        axis = node.attrs["axis"] % len(self.net.tensors[out].shape)
        start = 0
        for k in range(0, len(node.inputs), MAX_CONCAT_INPUTS):
            part = node.inputs[k:k + MAX_CONCAT_INPUTS]
            last = k + MAX_CONCAT_INPUTS >= len(node.inputs)
            anchor = Node(node.op, node.attrs, part, [out])
            self.groups.append(Group(anchor, "concatenate", inputs=part, outputs=[out], members=[i] if last else [],
                                     part=start, origin=i))
            self.position.append(pos)
            start += sum(self.net.tensors[t].shape[axis] for t in part)

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
        self.tensors.append(Tensor(shape, origin.precision, "op", element=element, pack=pack))
        self.refs[tid] = self._new_buffer(shape, element)
        producer = self._pack_in_epilogue(src, pack)
        if producer is None:
            self._add(Group(Node("pack", pack, [src], [tid]), "pack", inputs=[src], outputs=[tid]), pos - 0.5)
        else:
            self._packs_instead(producer, tid, pack)
        return tid

    def _packs_instead(self, producer: Group, tid: int, pack: Attrs) -> None:
        """`producer`'s epilogue writes the packed copy `tid` of its output, and not the output itself."""
        producer.packed.append((tid, pack))
        producer.stores_output = False
        dropped = self.buffers[self.refs[producer.outputs[0]].buffer]
        dropped.kind = "unused"

    def _extras_from_packs(self, groups: list[Group]) -> list[Group]:
        """An epilogue reads an extra input from a packed copy of it that is already written (a conv2d's padded
        NHWC input, with no zero point: the values themselves, narrowed without loss) through a strided view, so
        that a tensor a conv2d and a residual add both read (a ResNet's shortcut) need not be stored as int32.
        Then a pack kernel that is its tensor's one reader left becomes its producer's epilogue pack
        (`_pack_in_epilogue`), and the tensor is not stored. The host's blocked kernels only (the GPU packs in
        kernels of its own)."""
        if not self.target.blocked:
            return groups
        copies: dict[int, tuple[int, int, Attrs]] = {}  # tensor -> (its packed copy, the step writing it, how)
        for step, g in enumerate(groups):
            packs = [(g.anchor.inputs[0], g.outputs[0], g.anchor.attrs)] if g.kind == "pack" else []
            packs += [(g.outputs[0], t, how) for t, how in g.packed]
            for src, tid, how in packs:
                if (how["to"] == "nhwc" and not how.get("zero_point") and src not in copies
                        and self.tensors[tid].element in ("u8", "i16") and len(self.tensors[src].shape) == 4):
                    copies[src] = (tid, step, how)
        views: dict[int, int] = {}
        for step, g in enumerate(groups):
            for i, t in enumerate(g.extras):
                copy = copies.get(t)
                if copy is None or copy[1] >= step or self.refs[t].layout != Layout.contiguous(self.tensors[t].shape):
                    continue
                if t not in views:
                    tid, _, how = copy
                    n, hp, wp, c = self.tensors[tid].shape
                    _, _, h, w = self.tensors[t].shape
                    ph, pw = how["padding"]
                    layout = Layout((n, c, h, w), (hp * wp * c, 1, wp * c, c), (ph * wp + pw) * c)
                    views[t] = len(self.tensors)
                    self.tensors.append(Tensor(self.tensors[t].shape, self.tensors[t].precision, "op",
                                               element=self.tensors[tid].element))
                    self.refs[views[t]] = Ref(self.refs[tid].buffer, layout)
                g.extras[i] = views[t]
        if not views:
            return groups
        readers: dict[int, list[Group]] = {}
        for g in groups:
            for t in set(group_inputs(g)):
                readers.setdefault(self.refs[t].buffer, []).append(g)
        kept = []
        for g in groups:
            src = g.anchor.inputs[0] if g.kind == "pack" else -1
            producer = self._pack_in_epilogue(src, g.anchor.attrs, readers) if src in views else None
            if producer is None:
                kept.append(g)
            else:
                self._packs_instead(producer, g.outputs[0], g.anchor.attrs)
        return kept

    def _pack_in_epilogue(self, src: int, pack: Attrs,
                          readers: Mapping[int, list[Group]] | None = None) -> Group | None:
        """The group whose epilogue writes the padded NHWC pack of its output `src` instead of `src`: a conv2d on
        the register-blocked micro-kernel (its accumulators are then kept pixel by pixel, so a pixel's channels
        are contiguous, as NHWC has them), when the pack is the one reader of `src` (storing the int32 output as
        well, pixel by pixel, would write 4 KB apart: slower than the pack kernel). None otherwise: a pack kernel
        runs."""
        g = self.open_group.get(src)
        if readers is not None:  # after planning: one group left reads its buffer (the pack kernel), no head
            buffer = self.refs[src].buffer
            alone = len(readers.get(buffer, [])) == 1 and all(self.refs[h].buffer != buffer for h in self.heads)
        else:
            alone = self.consumers.get(src) == 1
        if g is None or pack["to"] != "nhwc" or not self.target.blocked or not alone or src in self.heads:
            return None
        group = self.groups[g]
        if group.kind != "conv2d" or group.outputs != [src] or len(self.tensors[group.inputs[1]].shape) != 3:
            return None
        return group


def nonnegative(net: Net) -> list[bool]:
    """Which tensors are provably >= 0: a relu's output, and a cvm_right_shift or cvm_clip of such a tensor
    (a rounding shift and a symmetric clip keep a value >= 0), whatever the bounds of `value_bits`."""
    out = [False] * len(net.tensors)
    for node in net.nodes:
        if node.op == "relu" or (keeps_nonnegative(node.op) and out[node.inputs[0]]):
            for t in node.outputs:
                out[t] = True
    return out


def plan(net: Net, hints: Hints | None = None, target: Target = DEFAULT) -> Plan:
    """Views, fused groups, their order, and arena offsets for a network, following `hints` where given."""
    return _Planner(net, hints or Hints(), target).run()


def group_inputs(group: Group) -> list[int]:
    """Every tensor a group reads: the anchor's inputs, then the epilogue's extras."""
    return [*group.inputs, *group.extras]


def _place(refs: dict[int, Ref], buffers: list[Buffer], groups: list[Group], heads: set[int]) -> int:
    """Liveness per base buffer over the group order, then placement in one arena by first fit, largest buffer
    first. Returns the arena's bytes."""
    written: set[int] = set()
    for step, group in enumerate(groups):
        for t in [*(group.outputs if group.stores_output else []), *(t for t, _ in group.packed)]:
            b = buffers[refs[t].buffer]
            if refs[t].buffer in written:  # a concatenate in parts: live from its first part
                b.last = step
            else:
                b.first = b.last = step
                written.add(refs[t].buffer)
        for s in group.scratch:
            buffers[s].first = buffers[s].last = step
    for step, group in enumerate(groups):
        for t in group_inputs(group):
            b = buffers[refs[t].buffer]
            b.last = max(b.last, step)
    for t in heads:
        buffers[refs[t].buffer].last = len(groups)

    return place(buffers, len(groups) + 1)


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


def group_work(net: Net, group: Group, sources: Mapping[int, int] | None = None) -> int:
    """The gas of a group's operators: how much work one call does (`sources`: `pack_sources(net)`, the operands
    a conv2d or dense reads packed are counted as they were)."""
    if group.kind == "pack":
        return prod(net.tensors[group.anchor.inputs[0]].shape)
    work = 0
    for node in group.nodes:
        inputs = [sources.get(t, t) for t in node.inputs] if sources else node.inputs
        shapes = [net.tensors[t].shape for t in inputs]
        precs = [net.tensors[t].precision for t in inputs]
        sig = rules.infer(node.op, node.attrs, shapes, precs)
        work += rules.node_gas(sig)
    return work
