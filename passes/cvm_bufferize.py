# pyright: basic
"""`cvm-bufferize`: every tensor of `@main` in a buffer, each kernel an outlined function, `@main` the host.

The scheduled `@main` (`cvm_sched.view`, `cvm_sched.pack`, `cvm_sched.kernel` over cvm operators) becomes:

- one `memref.global` per param that some kernel reads (`constant`, its values), packed ones (a
  `cvm_sched.pack` of a param that is no NHWC data) already packed;
- one `func.func` per kernel, over memrefs: its arguments are what it writes (its results, or the packs of its
  result its epilogue writes), then what it reads (the anchor's operands, then the epilogue's), then a scratch;
  its body still the kernel's cvm ops on tensors, between a `cvm_sched.load` per argument read and a
  `cvm_sched.store` per argument written (`convert-cvm-to-loops` builds its loops); kernels that compute the same
  thing on the same argument types are one function;
- the host `func.func @main(%data, %arena)` returning the heads: `memref.view`s of the byte arena, one per
  buffer, `memref.reinterpret_cast`s to the strided view each kernel reads (views: reshape, transpose, slices,
  broadcast operands exist only as these layouts), one `cvm_sched.call` per kernel in execution order (with
  `work`, its gas, to decide threading), and `cvm_sched.footprint` (the bytes of every operator output, which the
  arena is measured against). `runtime/driver/host.py` reads it.

Buffers are placed by liveness: a buffer is live from the call that writes it to the last call that reads it or
a view of it (heads: to the end); first fit, largest first, 64-byte aligned (`loops.arena`), so two buffers share
bytes only when their lifetimes do not overlap. The model's own storage_id is never used.

    func.func @relu(%out: memref<4xi32>, %x: memref<4xi32>) {
      %0 = cvm_sched.load %x : memref<4xi32> -> tensor<4xi32, #cvm.prec<8>>
      %r = cvm.relu %0 : (tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>>
      cvm_sched.store %r, %out : tensor<4xi32, #cvm.prec<8>>, memref<4xi32>
      func.return
    }
    func.func @main(%data: memref<1x4xi32>, %arena: memref<64xi8>) -> memref<1x4xi32> {
      %0 = arith.constant 0 : index
      %1 = memref.view %arena[%0][] : memref<64xi8> to memref<4xi32>
      %2 = memref.reinterpret_cast %1 to offset: [0], sizes: [1, 4], strides: [4, 1] : ...
      cvm_sched.call @relu(%1, %data) {work = 4 : i64} : memref<4xi32>, memref<1x4xi32>
      cvm_sched.footprint {intermediate_bytes = 16 : i64}
      func.return %2 : memref<1x4xi32>
    }
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from math import prod
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from cvmc.dialects import cvm_rules as rules
from cvmc.dialects.cvm import CvmOperator, ParamOp, cvm_attrs, tensor_precision, tensor_shape
from cvmc.dialects.cvm_sched import (
    CallOp,
    FootprintOp,
    KernelOp,
    LoadOp,
    PackOp,
    StoreOp,
    ViewOp,
    YieldOp,
    packing_of,
    ui8,
)
from cvmc.passes.cvm_fuse import MAX_CONCAT_INPUTS, MAX_GROUP_OPS
from cvmc.passes.loops import ops
from cvmc.passes.loops.arena import ELEMENT_BYTES, Buffer, place
from cvmc.passes.loops.kernels import ELEMENT_TYPES, KernelArg, KernelNames, op_kind
from cvmc.passes.loops.ops import pack_values
from cvmc.passes.loops.views import Layout, collapse

_SYMBOL = re.compile(r"[^A-Za-z0-9_]")
_NUMPY_ELEMENTS = {"i16": "<i2", "i8": "i1", "u8": "u1"}  # a packed param's bytes


@functools.lru_cache(maxsize=4096)
def _i64s(values: tuple[int, ...]) -> DenseArrayBase:
    """`array<i64: ...>`, one (immutable) attribute per tuple: a host has a cast per view."""
    return DenseArrayBase.from_list(i64, values)


# The host has a few ops per kernel call, so a model of 20,000 nodes has 80,000: they are made by `create` from
# their operands and properties (what each op's builder would pass it), at a third of the builders' cost.
_CAST_SEGMENTS = DenseArrayBase.from_list(i32, [1, 0, 0, 0])  # the source; no dynamic offsets, sizes, strides


def _cast(source: SSAValue, layout: Layout, t: MemRefType) -> Operation:
    """`memref.reinterpret_cast %source to offset: [o], sizes: [...], strides: [...]` (static)."""
    return memref.ReinterpretCastOp.create(operands=[source], result_types=[t], properties={
        "static_offsets": _i64s((layout.offset,)), "static_sizes": _i64s(layout.shape),
        "static_strides": _i64s(layout.strides), "operandSegmentSizes": _CAST_SEGMENTS})


def _view(arena: SSAValue, offset: int, t: MemRefType) -> list[Operation]:
    """`%shift = arith.constant offset : index` and `memref.view %arena[%shift][] : ... to t`."""
    shift = arith.ConstantOp.create(result_types=[IndexType()], properties={"value": IntegerAttr(offset, IndexType())})
    return [shift, memref.ViewOp.create(operands=[arena, shift.results[0]], result_types=[t])]


@functools.lru_cache(maxsize=4096)
def _call_properties(callee: str, work: int) -> dict[str, Attribute]:
    """The callee and work of a call, shared by the calls of one kernel with equal work."""
    return {"callee": SymbolRefAttr(callee), "work": IntegerAttr(work, 64)}


def _call(callee: str, args: list[SSAValue], work: int) -> Operation:
    """`cvm_sched.call @callee(args) {work = work}`."""
    return CallOp.create(operands=args, properties=dict(_call_properties(callee, work)))


@dataclass
class _Host:
    """The host function under construction: one root value per buffer, one view per (buffer, type)."""

    block: Block
    roots: dict[int, SSAValue]
    views: dict[tuple[int, int, MemRefType], SSAValue]
    buffers: list[Buffer]
    arena: SSAValue
    shifted: dict[tuple[int, int], SSAValue]

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def root(self, buffer: int, shift: int) -> SSAValue:
        """The buffer's root, or a view of the arena `shift` elements into the buffer."""
        if not shift:
            return self.roots[buffer]
        if (buffer, shift) not in self.shifted:
            b = self.buffers[buffer]
            t = Layout.contiguous((b.elements - shift,)).memref_type(ELEMENT_TYPES[b.element])
            for op in _view(self.arena, b.offset + shift * ELEMENT_BYTES[b.element], t):
                self.shifted[buffer, shift] = self.add(op)
        return self.shifted[buffer, shift]

    def view(self, arg: KernelArg) -> SSAValue:
        t = arg.type
        key = (arg.buffer, arg.shift, t)
        if key not in self.views:
            root = self.root(arg.buffer, arg.shift)
            if root.type == t:
                self.views[key] = root
            else:
                self.views[key] = self.add(_cast(root, arg.layout.canonical(), t))
        return self.views[key]


@dataclass(frozen=True)
class Ref:
    """Where a tensor lives: a strided layout over a buffer (an index into the buffers), of that buffer's
    element type unless `element` says otherwise (a read of a packed copy)."""

    buffer: int
    layout: Layout


@dataclass
class _Call:
    """One kernel call of the host, in execution order: its anchor (a cvm operator, or a `cvm_sched.pack`: a pack
    kernel), its elementwise epilogue, what it reads and writes (values of `@main`), and its scratch buffers."""

    kind: str  # `op_kind` of the anchor; "pack" for a pack kernel
    anchor: Operation
    inputs: list[SSAValue]  # what the anchor reads (the packed operands of a conv2d or dense)
    epilogue: list[Operation] = field(default_factory=list)
    sources: list[list[int | None]] = field(default_factory=list)  # per epilogue op: running value or extra
    extras: list[SSAValue] = field(default_factory=list)  # what the epilogue reads, one per non-running operand
    outputs: list[SSAValue] = field(default_factory=list)  # the values it writes (the kernel's results)
    packs: list[PackOp] = field(default_factory=list)  # packed copies of its output its epilogue writes instead
    scratch: list[int] = field(default_factory=list)  # buffers of per-call scratch
    part: int | None = None  # a concatenate in parts: where its slice of the output starts along the axis
    out_shape: tuple[int, ...] = ()  # the shape of the anchor's result (and its epilogue's)

    @property
    def ops(self) -> list[Operation]:
        return [self.anchor, *self.epilogue]

    @property
    def stores_output(self) -> bool:
        return not self.packs

    @property
    def fusable(self) -> bool:
        """Whether it takes an elementwise epilogue."""
        return self.kind in ("map", "compute", "conv2d", "dense", "concatenate") and self.part is None


def _element(t: Attribute) -> str:
    """A tensor type's element as the arena names it: i32 (every cvm tensor), i16, i8 or u8 (a packed one)."""
    assert isinstance(t, TensorType) and isinstance(t.element_type, IntegerType)
    return "u8" if t.element_type == ui8 else f"i{t.element_type.bitwidth}"


def _shape(v: SSAValue) -> tuple[int, ...]:
    assert isinstance(v.type, TensorType)
    return tuple(v.type.get_shape())


def _label(op: Operation) -> str:
    """How messages name an op: its name and the SSA name of its first result, if any."""
    hint = op.results[0].name_hint if op.results else None
    return f"{op.name} %{hint}" if hint else op.name


def _fail(op: Operation, message: str) -> PassFailedException:
    return PassFailedException(f"{_label(op)}: {message}")


def _read_operands(op: Operation) -> Sequence[SSAValue]:
    """The operands whose values an op reads: a slice_like's second gives only its shape (known when compiling)."""
    return op.operands[:1] if isinstance(op, CvmOperator) and op.op_name == "slice_like" else op.operands


def _live(main: func.FuncOp) -> set[Operation]:
    """The ops of `@main` some returned value depends on (a kernel reads all its inputs; a slice_like only its
    first: the second gives its shape, known when compiling)."""
    block = main.body.block
    ret = block.last_op
    needed = set(ret.operands) if isinstance(ret, func.ReturnOp) else set()
    live: set[Operation] = set()
    for op in reversed(list(block.ops)):
        if any(r in needed for r in op.results):
            live.add(op)
            needed.update(_read_operands(op))
    return live


class _Bufferizer:
    """The walk of `cvm-bufferize` over a scheduled `@main`, in order: buffers, refs, calls; then liveness and the
    arena."""

    def __init__(self, main: func.FuncOp):
        self.main = main
        self.buffers: list[Buffer] = []
        self.refs: dict[SSAValue, Ref] = {}
        self.params: dict[int, tuple[ParamOp, PackOp | None]] = {}  # param buffer -> its param (and packing)
        self.calls: list[_Call] = []
        self.input_shape: tuple[int, ...] | None = None
        block = main.body.block
        ret = block.last_op
        self.heads: list[SSAValue] = list(ret.operands) if isinstance(ret, func.ReturnOp) else []
        for arg in block.args:
            self.input_shape = _shape(arg)
            self.refs[arg] = Ref(self._buffer("input", prod(self.input_shape)), Layout.contiguous(self.input_shape))
        for op in block.ops:  # the params' buffers, then the arena's as the walk makes them
            if isinstance(op, ParamOp):
                shape = _shape(op.result)
                self.refs[op.result] = Ref(self._buffer("param", prod(shape)), Layout.contiguous(shape))
                self.params[self.refs[op.result].buffer] = (op, None)

    def _buffer(self, kind: str, elements: int, element: str = "i32") -> int:
        self.buffers.append(Buffer(kind, elements, element))
        return len(self.buffers) - 1

    def _new(self, v: SSAValue) -> Ref:
        shape = _shape(v)
        return Ref(self._buffer("arena", prod(shape), _element(v.type)), Layout.contiguous(shape))

    def run(self) -> None:
        block = self.main.body.block
        live = _live(self.main)
        for op in block.ops:
            if op not in live or isinstance(op, ParamOp | func.ReturnOp):
                continue
            elif isinstance(op, ViewOp):  # over its source's buffer (a base: the verifier)
                strides, offset = op.strides_offset()
                self.refs[op.result] = Ref(self.refs[op.source].buffer, Layout(_shape(op.result), strides, offset))
            elif isinstance(op, PackOp):
                self._pack(op)
            elif isinstance(op, KernelOp):
                self._kernel(op)
            elif isinstance(op, CvmOperator):
                raise _fail(op, f"expected it inside a cvm_sched.kernel, got it in @{self.main.sym_name.data}; run "
                                "cvm-mark-views, cvm-pack-operands and cvm-fuse first")
            else:
                raise _fail(op, f"unexpected op in @{self.main.sym_name.data}: expected cvm ops")

    def _pack(self, op: PackOp) -> None:
        """A `cvm_sched.pack` outside kernels: made when compiling for a param (but its NHWC data), else by a pack
        kernel at its place."""
        how = op.packing()
        if isinstance(op.source.owner, ParamOp) and how["to"] != "nhwc":
            shape = _shape(op.result)
            self.refs[op.result] = Ref(self._buffer("param", prod(shape), _element(op.result.type)),
                                       Layout.contiguous(shape))
            self.params[self.refs[op.result].buffer] = (op.source.owner, op)
            return
        self.refs[op.result] = self._new(op.result)
        self.calls.append(_Call("pack", op, [op.source], outputs=[op.result], out_shape=_shape(op.result)))

    def _kernel(self, kernel: KernelOp) -> None:
        """A `cvm_sched.kernel`: one call (a concatenate of many inputs: one per part), its anchor and epilogue
        checked against the fusion rule."""
        number = len(self.calls)
        body = kernel.body.block
        outside: dict[SSAValue, SSAValue] = dict(zip(body.args, kernel.inputs))
        members: list[CvmOperator] = []
        packs: list[PackOp] = []  # packed copies of its output its epilogue writes (`cvm-fuse-packs`)
        for op in body.ops:
            if isinstance(op, CvmOperator) and not packs:
                members.append(op)
            elif isinstance(op, PackOp) and members and op.source == members[-1].results[0]:
                packs.append(op)
            elif not isinstance(op, YieldOp):
                raise _fail(op, f"unexpected op {op.name} in a cvm_sched.kernel: expected cvm operators, then packs "
                                "of the last one's result")
        if not members:
            raise _fail(kernel, "expected a cvm operator to anchor the kernel, got none")
        anchor = members[0]
        inputs = [outside[v] for v in anchor.operands]
        kind = op_kind(anchor.op_name)
        if kind in ("conv2d", "dense") and packing_of(inputs[0]) is None:
            if kind == "dense":
                raise _fail(anchor, "expected its operands packed by cvm_sched.pack, got them unpacked; run "
                                    "cvm-pack-operands first")
            kind = "compute"  # an im2col row would not fit the stack: the direct loop nest
        call = _Call(kind, anchor, inputs, out_shape=_shape(members[-1].results[0]), packs=packs)
        if packs and kind != "conv2d":
            raise _fail(packs[0], f"expected a pack in the epilogue of a conv2d kernel only, got it after {kind}")
        if kind == "concatenate" and len(inputs) > MAX_CONCAT_INPUTS:
            self._concatenate_in_parts(kernel, call)
            return
        running = anchor.results[0]
        for op in members[1:]:
            reason = self._blocker(call, op, running)
            if reason is not None:
                raise _fail(op, f"cannot join group {number}: {reason}")
            sources: list[int | None] = []
            for v in op.operands:
                if v == running:
                    sources.append(None)
                else:
                    sources.append(len(call.extras))
                    call.extras.append(outside[v])
            call.epilogue.append(op)
            call.sources.append(sources)
            running = op.results[0]
        last = body.last_op
        assert isinstance(last, YieldOp)  # the verifier
        computed = [p.result for p in packs] or (list(anchor.results) if not call.epilogue else [running])
        if list(last.values) != computed:
            raise _fail(kernel, "expected the kernel to yield its last op's results")
        call.outputs = list(kernel.outputs)
        for v in call.outputs:
            self.refs[v] = self._new(v)
        if anchor.op_name == "non_max_suppression":
            call.scratch.append(self._buffer("arena", _shape(inputs[0])[1]))
        self.calls.append(call)

    def _blocker(self, call: _Call, op: CvmOperator, running: SSAValue) -> str | None:
        """Why the elementwise `op` may not join `call`, whose current output is `running`, or None: it must read
        `running`, which must have no other reader, and have its shape; a kernel holds at most MAX_GROUP_OPS ops."""
        if op.op_name not in ops.ELEMENTWISE:
            return f"'{op.op_name}' is no elementwise op"
        if running not in op.operands:
            return "it does not read the group's output"
        if not call.fusable:
            return "the group takes no epilogue"
        if len(call.ops) >= MAX_GROUP_OPS:
            return f"the group has {MAX_GROUP_OPS} ops, the most one kernel takes"
        if len({use.operation for use in running.uses}) != 1:
            return "the group's output has other consumers"
        if _shape(running) != _shape(op.results[0]):
            return "the group's output has another shape"
        if op.op_name == "where" and running == op.operands[0] and len(_shape(running)) != len(_shape(op.results[0])):
            return "a broadcast condition"
        return None

    def _concatenate_in_parts(self, kernel: KernelOp, call: _Call) -> None:
        """Calls of MAX_CONCAT_INPUTS inputs of a concatenate, each writing its slice of the one output; none
        takes an epilogue, as the output is whole only after the last."""
        anchor = call.anchor
        assert isinstance(anchor, CvmOperator)
        out = kernel.outputs[0]
        self.refs[out] = self._new(out)
        axis = cvm_attrs(anchor)["axis"] % len(_shape(out))
        start = 0
        for k in range(0, len(call.inputs), MAX_CONCAT_INPUTS):
            part = call.inputs[k:k + MAX_CONCAT_INPUTS]
            self.calls.append(_Call("concatenate", anchor, part, outputs=[out], part=start, out_shape=_shape(out)))
            start += sum(_shape(v)[axis] for v in part)

    def reads(self, c: _Call, k: int) -> Ref:
        """Where the `k`-th value a call reads lives (its inputs, then its extras)."""
        return self.refs[c.inputs[k]] if k < len(c.inputs) else self.refs[c.extras[k - len(c.inputs)]]

    def written(self, c: _Call) -> list[SSAValue]:
        """What a call writes, its first arguments: its results (a kernel whose epilogue packs its output: the
        packed copies)."""
        return c.outputs

    def place(self) -> int:
        """Liveness per buffer over the calls, then placement in one arena. Returns the arena's bytes."""
        buffers, refs = self.buffers, self.refs
        written: set[int] = set()
        for step, c in enumerate(self.calls):
            for v in self.written(c):
                b = buffers[refs[v].buffer]
                if refs[v].buffer in written:  # a concatenate in parts: live from its first part
                    b.last = step
                else:
                    b.first = b.last = step
                    written.add(refs[v].buffer)
            for s in c.scratch:
                buffers[s].first = buffers[s].last = step
        for step, c in enumerate(self.calls):
            for k in range(len(c.inputs) + len(c.extras)):
                b = buffers[self.reads(c, k).buffer]
                b.last = max(b.last, step)
        for v in self.heads:
            buffers[refs[v].buffer].last = len(self.calls)
        return place(buffers, len(self.calls) + 1)


def _freeze(attrs: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(attrs.items()))


def _attrs(op: Operation) -> dict[str, Any]:
    """An anchor's or epilogue op's attributes as the loop builders read them."""
    if isinstance(op, PackOp):
        return op.packing()
    assert isinstance(op, CvmOperator)
    return cvm_attrs(op)


def _op_name(op: Operation) -> str:
    return "pack" if isinstance(op, PackOp) else op.name[4:]  # `cvm.conv2d` -> conv2d


@dataclass
class _Arguments:
    """A call's kernel arguments (views of buffers) and its signature key: equal keys build equal kernels."""

    args: list[KernelArg]
    key: tuple[object, ...]
    nodes: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]  # its ops' names and attributes


def _arguments(b: _Bufferizer, c: _Call) -> _Arguments:
    """What the host passes a call's kernel: what it writes (fresh contiguous buffers, or its slice of a
    concatenate's output), what it reads (strided views, broadcast to the output shape where an elementwise op
    reads them; a flat view where an op reads by flat index), its scratch; an elementwise kernel's over the
    collapsed index space of all its layouts."""
    out_shape = c.out_shape
    every = [_attrs(op) for op in c.ops]
    anchor, attrs = c.anchor, every[0]
    shift = 0
    written = b.written(c)
    if c.kind == "copy":
        outs = [Layout.contiguous(b.refs[c.inputs[0]].layout.shape)]
    elif c.part is not None:  # its slice of the output, from a pointer `shift` elements in: equal parts share
        whole = Layout.contiguous(out_shape)
        axis = attrs["axis"] % len(whole.shape)
        shape = list(whole.shape)
        shape[axis] = sum(_shape(v)[axis] for v in c.inputs)
        outs = [Layout(tuple(shape), whole.strides)]
        shift = c.part * whole.strides[axis]
    else:
        outs = [Layout.contiguous(_shape(v)) for v in written]
    reads = [b.reads(c, k) for k in range(len(c.inputs) + len(c.extras))]
    layouts = [r.layout for r in reads]
    if c.kind == "map":
        layouts[:len(c.inputs)] = [ops.operand_layout(_op_name(anchor), i, l, out_shape)
                                   for i, l in enumerate(layouts[:len(c.inputs)])]
    else:
        for i in ops.flat_inputs(_op_name(anchor), attrs):
            layouts[i] = ops.flat_layout(layouts[i])
    for op, sources in zip(c.epilogue, c.sources):  # extras broadcast to the output shape as their op reads them
        for i, src in enumerate(sources):
            if src is not None:
                k = len(c.inputs) + src
                layouts[k] = ops.operand_layout(_op_name(op), i, layouts[k], out_shape)
    layouts = [*outs, *layouts, *(Layout.contiguous((b.buffers[s].elements,)) for s in c.scratch)]
    if c.kind == "map":
        layouts = collapse(layouts)
    buffers = [b.refs[v].buffer for v in written] + [r.buffer for r in reads] + c.scratch
    args = [KernelArg(buf, l, b.buffers[buf].element) for buf, l in zip(buffers, layouts)]
    if shift:
        args[0] = KernelArg(args[0].buffer, args[0].layout, args[0].element, shift)
    zero_point = 0
    if c.kind == "conv2d":
        x = packing_of(c.inputs[0])
        assert x is not None
        zero_point = x.zero_point.value.data if x.zero_point is not None else 0
    nodes = tuple((_op_name(op), _freeze(a)) for op, a in zip(c.ops, every))
    steps = tuple(tuple(s) for s in c.sources)
    packs = tuple(_freeze(p.packing()) for p in c.packs)
    key = (c.kind, nodes, steps, tuple(a.type for a in args), packs, c.stores_output, out_shape, zero_point)
    return _Arguments(args, key, nodes)


def _work(c: _Call, nodes: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...],
          memo: dict[tuple[object, ...], int]) -> int:
    """The gas of a call's operators: how much work it does (a packed operand counted as its source). `nodes`:
    its ops' names and attributes (`_Arguments.nodes`); `memo`: the gas of an op by its attributes and operand
    types, shared by the calls of one module (a model repeats its layers)."""
    if c.kind == "pack":
        return prod(_shape(c.inputs[0]))
    work = 0
    outside: dict[SSAValue, SSAValue] = {}
    if c.part is None:
        parent = c.anchor.parent_op()
        if isinstance(parent, KernelOp):
            outside = dict(zip(parent.body.block.args, parent.inputs))
    for k, op in enumerate(c.ops):
        values = list(c.inputs) if k == 0 else [outside.get(v, v) for v in op.operands]
        packs = [packing_of(v) for v in values]
        values = [v if p is None else p.source for v, p in zip(values, packs)]
        key = (nodes[k], *(v.type for v in values))
        if key not in memo:
            shapes = [_shape(v) for v in values]
            precs = [tensor_precision(v.type) or 0 for v in values]  # every cvm tensor has one (the verifier)
            memo[key] = rules.node_gas(rules.infer(nodes[k][0], dict(nodes[k][1]), shapes, precs))
        work += memo[key]
    return work


def _outline(name: str, c: _Call, types: list[MemRefType], zero_point: int) -> func.FuncOp:
    """The kernel of call `c` as a function over its arguments whose body is still its ops on tensors, between a
    `cvm_sched.load` per argument read and a `cvm_sched.store` per argument written."""
    block = Block(arg_types=types)
    args = list(block.args)
    n_out = 1 if c.kind == "copy" else len(c.outputs)
    outs, rest = args[:n_out], args[n_out:]
    ins, extras = rest[:len(c.inputs)], rest[len(c.inputs):len(c.inputs) + len(c.extras)]

    def load(arg: SSAValue, t: Attribute, zero: int = 0) -> SSAValue:
        # `create` (what the builder would pass it): a model of 20,000 ops has as many loads
        op = LoadOp.create(operands=[arg], result_types=[t],
                           properties={"zero_point": IntegerAttr(zero, 64)} if zero else {})
        block.add_op(op)
        return op.results[0]

    def pack(source: SSAValue, p: PackOp) -> Operation:
        return PackOp.create(operands=[source], result_types=[p.result.type], properties=dict(p.properties))

    loads = [load(a, v.type, zero_point if k == 0 else 0) for k, (a, v) in enumerate(zip(ins, c.inputs))]
    anchor = c.anchor
    if isinstance(anchor, PackOp):
        first: Operation = pack(loads[0], anchor)
    else:
        result_types = [r.type for r in anchor.results]
        if c.part is not None:  # its slice of the concatenate's output
            whole = anchor.results[0].type
            assert isinstance(whole, TensorType)
            axis = _attrs(anchor)["axis"] % whole.get_num_dims()
            shape = list(whole.get_shape())
            shape[axis] = sum(_shape(v)[axis] for v in c.inputs)
            result_types = [TensorType(whole.element_type, shape, whole.encoding)]
        first = type(anchor).create(operands=loads, result_types=result_types, properties=dict(anchor.properties),
                                    attributes=dict(anchor.attributes))
    block.add_op(first)
    running = first.results[0]
    for m, sources in zip(c.epilogue, c.sources):
        operands = [running if src is None else load(extras[src], m.operands[k].type)
                    for k, src in enumerate(sources)]
        op = type(m).create(operands=operands, result_types=[r.type for r in m.results],
                            properties=dict(m.properties), attributes=dict(m.attributes))
        block.add_op(op)
        running = op.results[0]
    values: list[SSAValue] = []
    if c.stores_output:
        values = list(first.results) if not c.epilogue else [running]
    for p in c.packs:
        packed = pack(running, p)
        block.add_op(packed)
        values.append(packed.results[0])
    for v, out in zip(values, outs, strict=True):
        block.add_op(StoreOp.create(operands=[v, out]))
    block.add_op(func.ReturnOp.create())
    return func.FuncOp.create(properties={"sym_name": StringAttr(name),
                                          "function_type": FunctionType.from_lists(types, [])},
                              regions=[Region(block)])


def bufferize(main: func.FuncOp) -> list[Operation]:
    """The globals, outlined kernels and host `@main` of a scheduled `@main`."""
    b = _Bufferizer(main)
    b.run()
    arena_bytes = b.place()
    arguments = [_arguments(b, c) for c in b.calls]
    kernels: dict[tuple[object, ...], str] = {}
    gas: dict[tuple[object, ...], int] = {}
    names = KernelNames()
    out: list[Operation] = []
    for c, a in zip(b.calls, arguments):
        if a.key not in kernels:
            name = names.new([_op_name(op) for op in c.ops], c.kind == "copy")
            kernels[a.key] = name
            out.append(_outline(name, c, [x.type for x in a.args], a.key[-1]))  # type: ignore[arg-type]

    used = {x.buffer for a in arguments for x in a.args} | {b.refs[v].buffer for v in b.heads}
    input_buffer = next((i for i, buf in enumerate(b.buffers) if buf.kind == "input"), None)
    arg_types: list[MemRefType[Attribute]] = []
    if b.input_shape is not None:
        arg_types.append(Layout.contiguous(b.input_shape).memref_type(i32))
    arg_types.append(MemRefType(i8, [arena_bytes]))
    block = Block(arg_types=arg_types)
    if input_buffer is not None:
        block.args[0].name_hint = "data"
    arena = block.args[-1]
    arena.name_hint = "arena"
    host = _Host(block, {}, {}, b.buffers, arena, {})
    if input_buffer is not None:
        host.roots[input_buffer] = block.args[0]
    globals_: list[Operation] = []
    for bid, buf in enumerate(b.buffers):
        if bid not in used:
            continue
        if buf.kind == "param":
            param, packing = b.params[bid]
            name = param.param_name.data + ("_packed" if packing is not None else "")
            symbol = f"param_{bid}_{_SYMBOL.sub('_', name)}"
            data = param.array()
            shape, element = tuple(data.shape), "i32"
            if packing is not None:
                shape, element = _shape(packing.result), _element(packing.result.type)
                data = pack_values(packing.packing(), data, element)
            data = np.ascontiguousarray(data, dtype=_NUMPY_ELEMENTS.get(element, "<i4"))
            t = MemRefType(ELEMENT_TYPES[element], shape)
            dense = DenseIntOrFPElementsAttr(TensorType(ELEMENT_TYPES[element], shape), BytesAttr(data.tobytes()))
            globals_.append(memref.GlobalOp.get(StringAttr(symbol), t, dense, constant=UnitAttr()))
            host.roots[bid] = host.add(memref.GetGlobalOp(symbol, t))
            host.roots[bid].name_hint = _SYMBOL.sub("_", name) or None
        elif buf.kind == "arena":
            shift, view = _view(arena, buf.offset, Layout.contiguous((buf.elements,)).memref_type(
                ELEMENT_TYPES[buf.element]))
            host.add(shift)
            host.roots[bid] = host.add(view)
    for c, a in zip(b.calls, arguments):
        host.block.add_op(_call(kernels[a.key], [host.view(x) for x in a.args], _work(c, a.nodes, gas)))
    results = [host.view(KernelArg(b.refs[v].buffer, b.refs[v].layout)) for v in b.heads]
    host.block.add_op(FootprintOp(_intermediate_bytes(main)))
    host.block.add_op(func.ReturnOp(*results))
    host_main = func.FuncOp("main", (arg_types, [r.type for r in results]), Region(block))
    return [*globals_, *out, host_main]


def _intermediate_bytes(main: func.FuncOp) -> int:
    """The bytes of every operator output of `@main` (what a plan without reuse would allocate): cvm operators'
    and views' results, not packs' (nor a view reading a packed copy back: `cvm-fuse-packs`, no new output)."""
    total = 0
    for op in main.walk():
        if isinstance(op, CvmOperator) or (isinstance(op, ViewOp) and packing_of(op.source) is None):
            total += sum(prod(_shape(r)) * ELEMENT_BYTES["i32"] for r in op.results)
    return total


@dataclass(frozen=True)
class CvmBufferizePass(ModulePass):
    """Place the buffers of `@main` in one arena, outline each kernel into a function, make `@main` the host."""

    name = "cvm-bufferize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        mains = [f for f in op.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main"]
        if len(mains) != 1:
            raise PassFailedException("expected one function @main of cvm ops")
        main = mains[0]
        for arg in main.body.block.args:
            if tensor_shape(arg.type) is None or tensor_precision(arg.type) is None:
                raise PassFailedException(f"expected a static shape and a precision, got {arg.type}; run "
                                          "cvm-infer-shapes and cvm-infer-precision first")
        new_ops = bufferize(main)
        main.detach()
        main.erase()
        op.body.block.add_ops(new_ops)
