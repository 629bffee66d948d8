"""`convert-cvm-to-loops`: a function of `cvm` ops on tensors -> loop-level kernels over memrefs and a host plan.

The function `@main` (as `graph_to_module` writes it: the input `data` as argument, `cvm.param`s, cvm operators,
the heads returned) is planned by `loops.plan` following the decisions recorded on it by the analyses of the
`cvm-to-loops` pipeline, checked, and making the missing ones itself (so this pass alone lowers as the pipeline
does):

- `cvm_sched.view` (`cvm-mark-views`): a strided layout over its base's buffer, no kernel;
- `cvm_sched.pack` (`cvm-pack-operands`): a conv2d's or dense's packed operand (a pack kernel, or a param packed
  when compiling);
- `cvm_sched.kernel` (`cvm-fuse`): one kernel, an anchor and its elementwise epilogue;
- `cvm.offset`, `cvm.pack_offset`, `cvm.scratch_offset`, `cvm.arena_bytes` (`cvm-plan-buffers`): where each
  buffer lives in the arena.

It becomes:

- one `memref.global` per param that some kernel reads (`constant`, its values), conv2d and dense weights
  already packed (int16 rows of the reduction, see `loops.plan`);
- one kernel `func.func` per fused group (`loops.plan`), with memref arguments only, plus the pack kernels
  of conv2d and dense inputs; groups that compute the same thing on the same argument types share one kernel;
- a host `func.func @main(%data, %arena)` returning the heads: `memref.view`s of the byte arena at the planned
  offsets, `memref.reinterpret_cast`s to the strided view each kernel reads, and one `func.call` per group in
  execution order (with `cvm.work`, its gas, to decide threading). Views (reshape, transpose, slices, broadcast
  operands) exist only as these layouts.

    func.func @main(%data: memref<1x4xi32>, %arena: memref<64xi8>) -> memref<1x4xi32> {
      %0 = memref.view %arena[%c0][] : memref<64xi8> to memref<4xi32>
      %1 = memref.reinterpret_cast %0 to offset: [0], sizes: [1, 4], strides: [4, 1] : ...
      func.call @relu_cvm_right_shift(%1, %data) : (memref<1x4xi32>, memref<1x4xi32>) -> ()
      func.return %1 : memref<1x4xi32>
    }

The kernels follow the loop level contract (`codegen/llvm.py` compiles them); the host `@main` is not a kernel
(it calls them): the runtime (`cvmc.runtime.devices.cpu.read_host`) reads it, allocates the arena once and calls the
kernels in order.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
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
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from cvmc.passes.cvm_plan_buffers import read_hints
from cvmc.passes.loops.ir import CvmFunction
from cvmc.passes.loops.kernels import ELEMENT_TYPES, KernelArg, KernelNames, build_kernel, kernel_call
from cvmc.passes.loops.ops import pack_values
from cvmc.passes.loops.plan import ELEMENT_BYTES, Buffer, Plan, group_work, pack_sources
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


def lower(p: Plan, params: dict[int, np.ndarray]) -> list[Operation]:
    """The globals, kernels and host `@main` of a plan."""
    net = p.net
    calls = [kernel_call(p, g) for g in p.groups]
    kernels: dict[tuple[object, ...], str] = {}
    names = KernelNames()
    out: list[Operation] = []
    for call in calls:
        if call.key not in kernels:
            name = names.new(call.group)
            kernels[call.key] = name
            out.append(build_kernel(name, call, p.target))

    used = {a.buffer for c in calls for a in c.args} | {p.refs[t].buffer for t in net.heads}
    input_buffer = next((i for i, b in enumerate(p.buffers) if b.kind == "input"), None)
    arg_types: list[MemRefType] = []
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


@dataclass(frozen=True)
class ConvertCvmToLoopsPass(ModulePass):
    """Lower the cvm function `@main` to loop-level kernels, param globals and a host `@main`."""

    name = "convert-cvm-to-loops"

    target: str | None = None  # `loops.target.Target` printed; None: the module's `cvmc.target`, else DEFAULT

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fn = CvmFunction.of_module(op)
        new_ops = lower(fn.plan(read_hints(fn), target=module_target(op, self.target)), fn.values())
        fn.main.detach()
        fn.main.erase()
        op.body.block.add_ops(new_ops)
