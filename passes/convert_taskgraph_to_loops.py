"""`convert-taskgraph-to-loops`: each `taskgraph.graph` becomes one loop-level kernel that runs one step.

    taskgraph.graph { ... }
    // cvm-opt -p convert-taskgraph-to-loops
    func.func @taskgraph(%b35: memref<1024xi32> {taskgraph.block = 35 : i64, taskgraph.port = "input"},
                         %b1: memref<150xi32> {taskgraph.block = 1 : i64, taskgraph.init = dense<...> : tensor<150xi8>},
                         ..., %t0: memref<16xi32> {taskgraph.table = dense<...> : tensor<16xi32>}) { ... }

Every storage block (INPUT, OUTPUT and weights included) is one flat `memref<N x i32>` argument holding its
value in (y, x, f) row-major order; the caller keeps these between steps, fills INPUT arguments, reads OUTPUT
ones and initializes the others from `taskgraph.init` (zeros without it). A `taskgraph.table` argument is a
constant gather table for an edge whose rearranges are not affine. Compute blocks work in `memref.alloc`
buffers. The kernel does what the reference executor (`cvmc.runtime.references.taskgraph`) does, block by block
in topological order, in i32 arithmetic that wraps (CLIF in i64, as it clamps before wrapping):

- an edge copies, for each element of its destination box, the source element its rearranges pick (their
  composition is computed here with `RearrangeAttr.gather_map`): an affine index when it is one, else a table
  lookup, 0 where the table says -1;
- a compute block's input clusters are gathered (zero-filled where no box writes), then computed as the
  dialect's docstrings say; a CLIF writes its new membrane potential back to where it read it.
The `func.func` is named `taskgraph` (`taskgraph_<k>` for the k-th graph of a module when there are several).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import Attribute
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from cvmc.dialects.taskgraph import (
    PRECISION_RANGE,
    BlockOp,
    CaddOp,
    CavgOp,
    CaxOp,
    CcmpbOp,
    CcmpsOp,
    ClifOp,
    ClutOp,
    ComputeBlockOp,
    ConvBlockOp,
    CvmOp,
    CvsOp,
    CvvhOp,
    GraphOp,
    InputOp,
    InterfaceAttr,
    OutputOp,
    ParamKind,
    StorageBlockOp,
)
from cvmc.passes.loops.builder import KernelBuilder, Value
from cvmc.passes.loops.views import row_major

P = ParamKind
_CLAMP28 = (-(2**27), 2**27 - 1)


def _int_param(block: BlockOp, kind: ParamKind, default: int = 0) -> int:
    p = block.param(kind)
    if p is None:
        return default
    if not isinstance(p.value, int):
        raise PassFailedException(f"block {block.id}: attribute {kind} has the float value {p.value}")
    return p.value


@dataclass
class _Buffer:
    """A flat i32 buffer and the extents of the cluster it is viewed as."""

    value: Value
    extents: tuple[int, ...]


class _GraphLowering:
    def __init__(self, graph: GraphOp, name: str):
        self.graph = graph
        self.name = name
        self.blocks = {b.id: b for b in graph.blocks}
        self.edges = {e.id: e for e in graph.edges}
        self.order = graph.topological_blocks()
        self.storage = [b for b in graph.blocks if isinstance(b, StorageBlockOp)]
        for b in graph.blocks:
            if b.get_precision().name.startswith("FLOAT") and isinstance(b, ComputeBlockOp):
                raise PassFailedException(f"block {b.id}: float precision {b.get_precision()} is not supported")
            if b.data is not None and b.data.container == "float":
                raise PassFailedException(f"block {b.id}: float 'data' is not supported")
        # Gather maps of every edge (and CLIF write-back), decided before the kernel's signature.
        self.tables: list[np.ndarray] = []
        # each map as affine (base, coefficients) or as the index of its gather table
        self.maps: dict[tuple[str, int, int], tuple[int, tuple[int, ...]] | int] = {}
        for b in self.order:
            for k, cluster in enumerate(b.inputs.data):
                for iface in cluster.interfaces.data:
                    self._plan(("edge", iface.edge.data, 0), self._edge_map(b, k, iface))
                    if isinstance(b, ClifOp) and k == 1:
                        self._plan(("back", iface.edge.data, 0), self._write_back_map(b, iface))

    # --- gather maps ---------------------------------------------------------------------------------

    def _edge_map(self, dst: BlockOp, k: int, iface: InterfaceAttr) -> np.ndarray:
        """For each element of the destination box (in its shape), the flat index of the source element in
        the source's output cluster, or -1."""
        edge = self.edges[iface.edge.data]
        src = self.blocks[edge.src]
        offsets, sizes = src.edge_box(edge.id, "out")
        extents = tuple(src.cluster_extents("out", 0).values())
        grid = np.indices(sizes).reshape(len(sizes), -1).T + np.asarray(offsets)
        current = (grid @ np.asarray(row_major(extents), dtype=np.int64)).reshape(sizes)
        for r in edge.rearranges.data:
            source = r.gather_map(current.shape)
            current = np.where(source >= 0, current.reshape(-1)[np.maximum(source, 0)], -1)
        return current.reshape(dst.iface_box("in", k, iface)[1])

    def _write_back_map(self, clif: ClifOp, iface: InterfaceAttr) -> np.ndarray:
        """For each element of the membrane source's box, the flat index in the CLIF's membrane cluster."""
        edge = self.edges[iface.edge.data]
        src = self.blocks[edge.src]
        offsets, sizes = clif.iface_box("in", 1, iface)
        extents = tuple(clif.cluster_extents("in", 1).values())
        grid = np.indices(sizes).reshape(len(sizes), -1).T + np.asarray(offsets)
        flat = grid @ np.asarray(row_major(extents), dtype=np.int64)
        return flat.reshape(src.edge_box(edge.id, "out")[1])

    def _plan(self, key: tuple[str, int, int], gather: np.ndarray) -> None:
        affine = _affine(gather)
        if affine is not None:
            self.maps[key] = affine
        else:
            self.maps[key] = len(self.tables)
            self.tables.append(gather.reshape(-1).astype(np.int32))

    # --- the kernel ----------------------------------------------------------------------------------

    def lower(self) -> func.FuncOp:
        arg_types = [MemRefType(i32, [math.prod(b.shape.extents().values())]) for b in self.storage]
        arg_types += [MemRefType(i32, [max(len(t), 1)]) for t in self.tables]
        self.k = k = KernelBuilder(self.name, arg_types)
        self.values = {b.id: k.args[i] for i, b in enumerate(self.storage)}
        self.table_args = list(k.args[len(self.storage) :])
        self.results: dict[int, _Buffer] = {}
        self.buffers: list[Value] = []
        for b in self.order:
            if isinstance(b, StorageBlockOp):
                if b.inputs.data:
                    target = _Buffer(self.values[b.id], tuple(b.cluster_extents("in", 0).values()))
                    self._gather(b, 0, target)
            else:
                assert isinstance(b, ComputeBlockOp)
                self._compute(b)
        for buffer in self.buffers:
            k.insert(memref.DeallocOp.get(buffer))
        f = k.finish()
        f.arg_attrs = ArrayAttr([*(self._storage_attrs(b) for b in self.storage),
                                 *(DictionaryAttr({"taskgraph.table": _dense(t)}) for t in self.tables)])  # fmt: skip
        return f

    @staticmethod
    def _storage_attrs(b: StorageBlockOp) -> DictionaryAttr:
        attrs: dict[str, Attribute] = {"taskgraph.block": IntegerAttr(b.id, i64)}
        if isinstance(b, InputOp | OutputOp):
            attrs["taskgraph.port"] = StringAttr("input" if isinstance(b, InputOp) else "output")
        if b.data is not None:
            attrs["taskgraph.init"] = b.data.values
        return DictionaryAttr(attrs)

    def _alloc(self, extents: Sequence[int], zero: bool = False) -> _Buffer:
        n = max(math.prod(extents), 1)
        value = self.k.insert(memref.AllocOp.get(i32, shape=[n])).results[0]
        self.buffers.append(value)
        if zero:
            self.k.loops([n], lambda ivs: self.k.store(self.k.const(0), value, ivs))
        return _Buffer(value, tuple(extents))

    def _output_of(self, block: BlockOp) -> Value:
        return self.values[block.id] if isinstance(block, StorageBlockOp) else self.results[block.id].value

    def _copy(self, key: tuple[str, int, int], source: Value, target: _Buffer, offsets: Sequence[int],
              sizes: Sequence[int]) -> None:
        """target[box] = source[map(element)] over the box (offsets, sizes) of the target."""
        k = self.k
        strides = row_major(target.extents)
        how = self.maps[key]

        def body(ivs: list[Value]) -> None:
            dst = self._linear(sum(o * s for o, s in zip(offsets, strides)), ivs, strides)
            if isinstance(how, tuple):
                base, coeffs = how
                value = k.load(source, [self._linear(base, ivs, coeffs)])
            else:
                table = self.table_args[how]
                g = k.load(table, [self._linear(0, ivs, row_major(sizes))])
                valid = k.cmpi("sge", g, 0)
                value = k.load(source, [k.to_index(k.select(valid, g, k.const(0)))])
                value = k.select(valid, value, k.const(0))
            k.store(value, target.value, [dst])

        k.loops(list(sizes), body)

    def _linear(self, base: int, ivs: list[Value], coeffs: Sequence[int]) -> Value:
        """base + sum(coeff * iv), as an index."""
        k = self.k
        total = k.idx(base)
        for iv, c in zip(ivs, coeffs):
            if c:
                total = k.addi(total, k.muli(iv, k.idx(c)))
        return total

    def _gather(self, b: BlockOp, k: int, target: _Buffer) -> None:
        for iface in b.inputs.data[k].interfaces.data:
            edge = self.edges[iface.edge.data]
            offsets, sizes = b.iface_box("in", k, iface)
            self._copy(("edge", edge.id, 0), self._output_of(self.blocks[edge.src]), target, offsets, sizes)

    def _covered(self, b: BlockOp, k: int) -> bool:
        extents = tuple(b.cluster_extents("in", k).values())
        mask = np.zeros(extents, dtype=bool)
        for iface in b.inputs.data[k].interfaces.data:
            offsets, sizes = b.iface_box("in", k, iface)
            mask[tuple(slice(o, o + s) for o, s in zip(offsets, sizes))] = True
        return bool(mask.all())

    # --- compute blocks ------------------------------------------------------------------------------

    def _compute(self, b: ComputeBlockOp) -> None:
        ins: list[Value] = []
        for k in range(len(b.inputs.data)):
            buffer = self._alloc(tuple(b.cluster_extents("in", k).values()), zero=not self._covered(b, k))
            self._gather(b, k, buffer)
            ins.append(buffer.value)
        out = self._alloc(tuple(b.cluster_extents("out", 0).values()))
        self.results[b.id] = out
        s = b.shape
        positions = max(s.dim("y"), 1) * max(s.dim("x"), 1)
        nf = s.dim("f")
        kb = self.k
        if isinstance(b, CaddOp | CvvhOp | CaxOp | CvsOp | ClutOp):
            def elementwise(ivs: list[Value]) -> None:
                p, f = ivs
                i = kb.addi(kb.muli(p, kb.idx(nf)), f)
                x = kb.load(ins[0], [i])
                if isinstance(b, CaddOp):
                    for other, role in zip(ins[1:], b.input_roles()[1:]):
                        if role == "input":
                            x = kb.addi(x, kb.load(other, [i]))
                elif isinstance(b, CvvhOp):
                    x = kb.muli(x, kb.load(ins[1], [i]))
                elif isinstance(b, CaxOp):
                    x = kb.muli(x, kb.load(ins[1], [f]))
                elif isinstance(b, CvsOp):
                    x = kb.muli(x, kb.const(_int_param(b, P.CONSTANT_A)))
                if isinstance(b, ClutOp):
                    dw = _int_param(b, P.LUT_DW)
                    v = kb.clip(x, -(2 ** (dw - 1)), 2 ** (dw - 1) - 1)
                    v = kb.select(kb.cmpi("sge", v, 0), v, kb.addi(v, 2**dw))
                    x = kb.load(ins[1], [kb.to_index(v)])
                else:
                    x = kb.addi(x, self._bias(b, ins, f))
                kb.store(x, out.value, [i])

            kb.loops([positions, nf], elementwise)
        elif isinstance(b, CvmOp):
            nr = s.dim("r")

            def cvm(ivs: list[Value]) -> None:
                (f,) = ivs
                row = kb.muli(f, kb.idx(nr))

                def mac(r: Value, acc: Value) -> list[Value]:
                    w = kb.load(ins[1], [kb.addi(row, r)])
                    return [kb.addi(acc, kb.muli(w, kb.load(ins[0], [r])))]

                (acc,) = kb.for_(nr, mac, inits=[self._bias(b, ins, f)])
                kb.store(acc, out.value, [f])

            kb.loops([nf], cvm)
        elif isinstance(b, ConvBlockOp | CavgOp | CcmpbOp | CcmpsOp):
            self._window(b, ins, out.value)
        else:
            assert isinstance(b, ClifOp)
            self._clif(b, ins, out.value, positions * nf)

    def _bias(self, b: ComputeBlockOp, ins: list[Value], f: Value) -> Value:
        if b.has_vector_bias:
            return self.k.load(ins[-1], [f])
        return self.k.const(_int_param(b, P.CONSTANT_B))

    def _window(self, b: ComputeBlockOp, ins: list[Value], out: Value) -> None:
        kb = self.k
        s = b.shape
        ky, kx, sy, sx, pu, _, pl, _, dy, dx = b.window()
        oy, ox, nf = max(s.dim("y"), 1), max(s.dim("x"), 1), s.dim("f")
        iy, ix = max(s.dim("iy"), 1), max(s.dim("ix"), 1)
        conv = isinstance(b, ConvBlockOp)
        channels = s.dim("r") if conv else nf

        def position(ivs: list[Value]) -> None:
            y, x, f = ivs
            # The reduction's start: the bias for a convolution, 0 for a sum, the extreme for max and min.
            if conv:
                init = self._bias(b, ins, f)
            elif isinstance(b, CavgOp):
                init = kb.const(0)
            else:
                init = kb.const(-(2**31) if isinstance(b, CcmpbOp) else 2**31 - 1)

            def tap(a: Value, acc0: Value) -> list[Value]:
                def tap_x(c: Value, acc1: Value) -> list[Value]:
                    yy = kb.subi(kb.addi(kb.muli(y, kb.idx(sy)), kb.muli(a, kb.idx(dy))), kb.idx(pu))
                    xx = kb.subi(kb.addi(kb.muli(x, kb.idx(sx)), kb.muli(c, kb.idx(dx))), kb.idx(pl))
                    inside = kb.andi(kb.andi(kb.cmpi("sge", yy, kb.idx(0)), kb.cmpi("slt", yy, kb.idx(iy))),
                                     kb.andi(kb.cmpi("sge", xx, kb.idx(0)), kb.cmpi("slt", xx, kb.idx(ix))))
                    pixel = kb.muli(kb.addi(kb.muli(yy, kb.idx(ix)), xx), kb.idx(channels))
                    pixel = kb.select(inside, pixel, kb.idx(0))
                    if not conv:
                        v = kb.select(inside, kb.load(ins[0], [kb.addi(pixel, f)]), kb.const(0))
                        if isinstance(b, CavgOp):
                            return [kb.addi(acc1, v)]
                        return [kb.maxsi(acc1, v) if isinstance(b, CcmpbOp) else kb.minsi(acc1, v)]
                    nr = s.dim("r")
                    wbase = kb.addi(kb.muli(kb.addi(kb.muli(f, kb.idx(nr * ky)), a), kb.idx(kx)), c)

                    def channel(r: Value, acc2: Value) -> list[Value]:
                        v = kb.select(inside, kb.load(ins[0], [kb.addi(pixel, r)]), kb.const(0))
                        w = kb.load(ins[1], [kb.addi(wbase, kb.muli(r, kb.idx(ky * kx)))])
                        return [kb.addi(acc2, kb.muli(v, w))]

                    return kb.for_(nr, channel, inits=[acc1])

                return kb.for_(kx, tap_x, inits=[acc0])

            (acc,) = kb.for_(ky, tap, inits=[init])
            if isinstance(b, CavgOp):
                acc = kb.addi(acc, self._bias(b, ins, f))
            elif isinstance(b, CcmpbOp | CcmpsOp):
                shift = _int_param(b, P.BIT_SHIGT_NUM)
                cmp = _int_param(b, P.CMP)
                lo, hi = PRECISION_RANGE[b.get_precision()]
                hi = min(hi, 2**31 - 1)
                if isinstance(b, CcmpbOp):
                    acc = kb.minsi(kb.maxsi(kb.shrsi(acc, shift), cmp), hi)
                else:
                    acc = kb.clip(kb.shrsi(kb.minsi(acc, cmp), shift), max(lo, -(2**31)), hi)
            index = kb.addi(kb.muli(kb.addi(kb.muli(y, kb.idx(ox)), x), kb.idx(nf)), f)
            kb.store(acc, out, [index])

        kb.loops([oy, ox, nf], position)

    def _clif(self, b: ClifOp, ins: list[Value], out: Value, n: int) -> None:
        kb = self.k
        v_new = self._alloc((n,))
        adaptive = _int_param(b, P.VLEAKY_ADPT_EN)

        def neuron(ivs: list[Value]) -> None:
            (i,) = ivs
            v = kb.addi(kb.extsi(kb.load(ins[0], [i]), i64), kb.extsi(kb.load(ins[1], [i]), i64))
            v = kb.clip(v, *_CLAMP28)
            spike = kb.cmpi("sgt", v, kb.const(_int_param(b, P.VTH0), i64))
            v = kb.select(spike, kb.const(_int_param(b, P.VR), i64), v)
            beta = kb.const(_int_param(b, P.VLEAKY_BETA), i64)
            if adaptive:
                scaled = kb.muli(kb.const(_int_param(b, P.VLEAKY_ALPHA), i64), v)
                v = kb.addi(kb.insert(arith.FloorDivSIOp(scaled, kb.const(256, i64))).results[0], beta)
            else:
                v = kb.addi(v, beta)
            kb.store(kb.trunci(kb.clip(v, *_CLAMP28), i32), v_new.value, [i])
            kb.store(kb.extui(spike, i32), out, [i])

        kb.loops([n], neuron)
        for iface in b.inputs.data[1].interfaces.data:
            edge = self.edges[iface.edge.data]
            src = self.blocks[edge.src]
            if not isinstance(src, StorageBlockOp) or edge.rearranges.data:
                raise PassFailedException(f"block {b.id}: membrane edge {edge.id} must come from a storage "
                                          "block without rearranges")  # fmt: skip
            target = _Buffer(self.values[src.id], tuple(src.cluster_extents("out", 0).values()))
            offsets, sizes = src.edge_box(edge.id, "out")
            self._copy(("back", edge.id, 0), v_new.value, target, offsets, sizes)


def _affine(gather: np.ndarray) -> tuple[int, tuple[int, ...]] | None:
    """(base, coefficients) when gather[i] == base + sum(c_d * i_d) everywhere (and never -1), else None."""
    if gather.size == 0 or (gather < 0).any():
        return None
    base = int(gather.reshape(-1)[0])
    shape: tuple[int, ...] = gather.shape
    coeffs: list[int] = []
    for d, n in enumerate(shape):
        index = [0] * gather.ndim
        index[d] = 1 if n > 1 else 0
        coeffs.append(int(gather[tuple(index)]) - base if n > 1 else 0)
    expected = base + sum(c * np.arange(n).reshape([-1 if e == d else 1 for e in range(gather.ndim)])
                          for d, (c, n) in enumerate(zip(coeffs, shape)))  # fmt: skip
    if not np.array_equal(np.broadcast_to(expected, shape), gather):
        return None
    return base, tuple(coeffs)


def _dense(table: np.ndarray) -> DenseIntOrFPElementsAttr:
    return DenseIntOrFPElementsAttr.from_list(TensorType(i32, [len(table)]), table.tolist())


def lower_graph(graph: GraphOp, name: str = "taskgraph") -> func.FuncOp:
    """The loop-level kernel that runs one step of a verified graph."""
    return _GraphLowering(graph, name).lower()


@dataclass(frozen=True)
class ConvertTaskGraphToLoopsPass(ModulePass):
    """Replace every `taskgraph.graph` by a `func.func` kernel that runs one step of it."""

    name = "convert-taskgraph-to-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graphs = [g for g in op.walk() if isinstance(g, GraphOp)]
        for n, graph in enumerate(graphs):
            kernel = lower_graph(graph, "taskgraph" if len(graphs) == 1 else f"taskgraph_{n}")
            parent = graph.parent_block()
            assert parent is not None
            parent.insert_op_before(kernel, graph)
            parent.erase_op(graph)
