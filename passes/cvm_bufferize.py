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
  broadcast operands exist only as these layouts), and one `func.call` per kernel in execution order (with
  `cvm.work`, its gas, to decide threading). `runtime/driver/host.py` reads it.

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
      func.call @relu(%1, %data) {cvm.work = 4 : i64} : ...
      func.return %2 : memref<1x4xi32>
    }
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
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

from cvmc.dialects.cvm_sched import LoadOp, PackOp, StoreOp
from cvmc.passes.cvm_pack_operands import ELEMENT_TYPES as PACK_ELEMENTS
from cvmc.passes.cvm_pack_operands import pack_op
from cvmc.passes.loops.ir import CvmFunction
from cvmc.passes.loops.kernels import ELEMENT_TYPES, KernelArg, KernelCall, KernelNames, kernel_call, written
from cvmc.passes.loops.ops import pack_values
from cvmc.passes.loops.plan import ELEMENT_BYTES, Buffer, Hints, Plan, group_work, live_nodes, pack_sources
from cvmc.passes.loops.target import module_target
from cvmc.passes.loops.views import Layout

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
def _call_attrs(callee: str, work: int) -> tuple[SymbolRefAttr, IntegerAttr]:
    """The callee and `cvm.work` of a call, shared by the calls of one kernel with equal work."""
    return SymbolRefAttr(callee), IntegerAttr(work, 64)


def _call(callee: str, args: list[SSAValue], work: int) -> Operation:
    """`func.call @callee(args) {cvm.work = work}`."""
    symbol, work_attr = _call_attrs(callee, work)
    return func.CallOp.create(operands=args, properties={"callee": symbol}, attributes={"cvm.work": work_attr})


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


def outline(name: str, call: KernelCall, p: Plan, fn: CvmFunction) -> func.FuncOp:
    """The kernel of `call` as a function over its arguments whose body is still its cvm ops on tensors."""
    group = call.group
    block = Block(arg_types=call.types)
    args = list(block.args)
    n_out = 1 if group.kind == "copy" else len(written(group))
    outs, rest = args[:n_out], args[n_out:]
    ins, extras = rest[:len(group.inputs)], rest[len(group.inputs):len(group.inputs) + len(group.extras)]

    def type_of(tid: int) -> Attribute:
        value = fn.value_of.get(tid)
        if value is not None:
            return value.type
        t = p.tensors[tid]  # a pack the planner made (a module that skipped cvm-pack-operands)
        return TensorType(PACK_ELEMENTS[t.element], t.shape)

    def load(arg: SSAValue, t: Attribute, zero_point: int = 0) -> SSAValue:
        # `create` (what the builder would pass it): a model of 20,000 ops has as many loads
        op = LoadOp.create(operands=[arg], result_types=[t],
                           properties={"zero_point": IntegerAttr(zero_point, 64)} if zero_point else {})
        block.add_op(op)
        return op.results[0]

    def pack(source: SSAValue, tid: int, how: dict[str, Any]) -> Operation:
        """The pack writing tensor `tid`: a copy of its op (a pack the planner made: built from `how`)."""
        value = fn.value_of.get(tid)
        if value is not None and isinstance(value.owner, PackOp):
            return PackOp.create(operands=[source], result_types=[value.type], properties=dict(value.owner.properties))
        t = p.tensors[tid]
        return pack_op(source, (how, t.shape, t.element))

    loads = [load(a, type_of(t), call.zero_point if k == 0 and group.kind == "conv2d" else 0)
             for k, (a, t) in enumerate(zip(ins, group.inputs))]
    source = fn.ops[group.origin] if group.origin >= 0 else None
    if group.kind == "pack":
        anchor: Operation = pack(loads[0], group.outputs[0], group.anchor.attrs)
    else:
        assert source is not None
        result_types = [r.type for r in source.results]
        if group.part is not None:  # its slice of the concatenate's output
            whole = source.results[0].type
            assert isinstance(whole, TensorType)
            axis = group.anchor.attrs["axis"] % whole.get_num_dims()
            shape = list(whole.get_shape())
            shape[axis] = sum(p.tensors[t].shape[axis] for t in group.inputs)
            result_types = [TensorType(whole.element_type, shape, whole.encoding)]
        anchor = type(source).create(operands=loads, result_types=result_types, properties=dict(source.properties),
                                     attributes=dict(source.attributes))
    block.add_op(anchor)
    running = anchor.results[0]
    for step, member in zip(group.epilogue, group.members[1:]):
        m = fn.ops[member]
        operands = [running if src is None else load(extras[src], m.operands[k].type)
                    for k, src in enumerate(step.sources)]
        op = type(m).create(operands=operands, result_types=[r.type for r in m.results],
                            properties=dict(m.properties), attributes=dict(m.attributes))
        block.add_op(op)
        running = op.results[0]
    values: list[SSAValue] = []
    if group.stores_output:
        values = list(anchor.results) if not group.epilogue else [running]
    for tid, how in group.packed:
        packed = pack(running, tid, how)
        block.add_op(packed)
        values.append(packed.results[0])
    for v, out in zip(values, outs, strict=True):
        block.add_op(StoreOp.create(operands=[v, out]))
    block.add_op(func.ReturnOp.create())
    return func.FuncOp.create(properties={"sym_name": StringAttr(name),
                                          "function_type": FunctionType.from_lists(call.types, [])},
                              regions=[Region(block)])


def bufferize(p: Plan, fn: CvmFunction) -> list[Operation]:
    """The globals, outlined kernels and host `@main` of a plan."""
    net = p.net
    params = fn.values()
    calls = [kernel_call(p, g) for g in p.groups]
    kernels: dict[tuple[object, ...], str] = {}
    names = KernelNames()
    out: list[Operation] = []
    for call in calls:
        if call.key not in kernels:
            name = names.new(call.group)
            kernels[call.key] = name
            out.append(outline(name, call, p, fn))

    used = {a.buffer for c in calls for a in c.args} | {p.refs[t].buffer for t in net.heads}
    input_buffer = next((i for i, b in enumerate(p.buffers) if b.kind == "input"), None)
    arg_types: list[MemRefType[Attribute]] = []
    if input_buffer is not None:
        arg_types.append(Layout.contiguous(net.tensors[p.buffers[input_buffer].tensor].shape).memref_type(i32))
    arena_type = MemRefType(i8, [p.arena_bytes])
    arg_types.append(arena_type)
    block = Block(arg_types=arg_types)
    if input_buffer is not None:
        block.args[0].name_hint = "data"
    arena = block.args[-1]
    arena.name_hint = "arena"
    host = _Host(block, {}, {}, p.buffers, arena, {})
    if input_buffer is not None:
        host.roots[input_buffer] = block.args[0]
    globals_: list[Operation] = []
    for bid, b in enumerate(p.buffers):
        if bid not in used:
            continue
        if b.kind == "param":
            tensor = p.tensors[b.tensor]
            element = ELEMENT_TYPES[tensor.element]
            t = MemRefType(element, tensor.shape)
            name = tensor.name + ("_packed" if tensor.pack else "")
            symbol = f"param_{bid}_{_SYMBOL.sub('_', name)}"
            if tensor.pack is not None:
                data = pack_values(tensor.pack, params[tensor.packed_from], tensor.element)
            else:
                data = params[b.tensor]
            data = np.ascontiguousarray(data, dtype=_NUMPY_ELEMENTS.get(tensor.element, "<i4"))
            dense = DenseIntOrFPElementsAttr(TensorType(element, tensor.shape), BytesAttr(data.tobytes()))
            globals_.append(memref.GlobalOp.get(StringAttr(symbol), t, dense, constant=UnitAttr()))
            host.roots[bid] = host.add(memref.GetGlobalOp(symbol, t))
            host.roots[bid].name_hint = _SYMBOL.sub("_", name) or None
        elif b.kind == "arena":
            shift, view = _view(arena, b.offset, Layout.contiguous((b.elements,)).memref_type(ELEMENT_TYPES[b.element]))
            host.add(shift)
            host.roots[bid] = host.add(view)
    sources = pack_sources(net)
    for call in calls:
        host.block.add_op(_call(kernels[call.key], [host.view(a) for a in call.args],
                                group_work(net, call.group, sources)))
    results = [host.view(KernelArg(p.refs[t].buffer, p.refs[t].layout)) for t in net.heads]
    host.block.add_op(func.ReturnOp(*results))
    main = func.FuncOp("main", (arg_types, [r.type for r in results]), Region(block))
    main.attributes["cvm.intermediate_bytes"] = IntegerAttr(p.intermediate_bytes, 64)
    return [*globals_, *out, main]


def require_scheduled(fn: CvmFunction) -> None:
    """Refuse a `@main` that skipped the scheduling passes (the pipeline is the contract): every cvm operator a
    head depends on runs in a `cvm_sched.kernel` (`cvm-fuse`; views are `cvm_sched.view`, `cvm-mark-views`), and
    every dense reads packed operands (`cvm-pack-operands` packs every dense; a conv2d it leaves unpacked runs as
    the direct loop nest)."""
    packed = pack_sources(fn.net)
    for i in live_nodes(fn.net):
        node = fn.net.nodes[i]
        if node.op in ("view", "pack"):
            continue
        if i not in fn.groups:
            raise PassFailedException(f"{fn.label(i)}: expected it inside a cvm_sched.kernel, got it in "
                                      f"@{fn.main.sym_name.data}; run cvm-mark-views, cvm-pack-operands and "
                                      "cvm-fuse first")
        if node.op == "dense" and not all(node.inputs[k] in packed for k in (0, 1)):
            raise PassFailedException(f"{fn.label(i)}: expected its operands packed by cvm_sched.pack, got them "
                                      "unpacked; run cvm-pack-operands first")


@dataclass(frozen=True)
class CvmBufferizePass(ModulePass):
    """Place the buffers of `@main` in one arena, outline each kernel into a function, make `@main` the host."""

    name = "cvm-bufferize"

    target: str | None = None  # `loops.target.Target` printed; None: the module's `cvmc.target`, else DEFAULT

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fn = CvmFunction.of_module(op)
        require_scheduled(fn)
        new_ops = bufferize(fn.plan(Hints(fn.groups), target=module_target(op, self.target)), fn)
        fn.main.detach()
        fn.main.erase()
        op.body.block.add_ops(new_ops)

