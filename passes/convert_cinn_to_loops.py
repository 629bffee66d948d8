"""`convert-cinn-to-loops`: every kernel group of cinn primitives becomes one loop-level kernel.

A `func.func @net` of cinn ops is replaced by one kernel per group, `@net_<i>_<mnemonic>(inputs..., results...)`,
named after the group's last op (the one stored), at position i in @net; every argument is a memref of the
tensor's shape (ui8 becomes i8: the kernel's ops carry the unsignedness). Groups and views are the decisions of
`cinn-fuse` (`cinn.group = N`) and `cinn-mark-views` (`cinn.view`), followed and checked here (`plan_kernels`):
an op without either is a group of its own, whose kernel takes its operands then its results; a fused op or a
view is computed inside the kernel that reads it, at the index read, and its value never reaches memory.

The kernels follow the loop level (scf, memref, arith, math); element-wise work and every output element of a
reduction or convolution is an `scf.parallel` iteration, a reduction an `scf.for` with `iter_args`; a 2-D dot
parallel over blocks of rows and an NCHW conv over (n, channel) planes accumulate along rows in their output
(`exact_float`; the default float order lowers float convs, NCHW and NHWC, to the padded-row micro-kernels of
`cvmc.passes.loops.cinn_conv`). Running the kernels in op order on buffers of the SSA values computes @net (see
`cvmc.runtime.cinn_builder`). Integer division, remainder and shifts rely on the loop level's total semantics.
The arithmetic is that of `cvmc.runtime.references.cinn`, written with the loop level's ops.

    %y = cinn.abs %x : (tensor<4xf32>) -> tensor<4xf32>
becomes
    func.func @net_0_abs(%x: memref<4xf32>, %y: memref<4xf32>) {
      scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
        %v = memref.load %x[%i] : memref<4xf32>
        %a = math.absf %v : f32
        memref.store %a, %y[%i] : memref<4xf32>
      }
      func.return
    }
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeGuard

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from cvmc.dialects import cinn
from cvmc.dialects.cvmc import VECTOR_BYTES, TargetAttr
from cvmc.dialects.narrow import is_tensor
from cvmc.passes.loops.builder import KernelBuilder, unravel
from cvmc.passes.loops.cinn_conv import conv_padded, conv_roles
from cvmc.passes.loops.cinn_dot import dot_blocked
from cvmc.passes.loops.cinn_scalar import BINARY, Scalar, storage_type, unary
from cvmc.passes.loops.target import ATTRIBUTE, DEFAULT, Target

Value = SSAValue


def memref_type(t: Attribute) -> MemRefType:
    assert is_tensor(t), t
    return MemRefType(storage_type(t.element_type), t.get_shape())


def kernel_name(function: str, index: int, op: Operation) -> str:
    """The kernel of the index-th op of `function`."""
    return f"{function}_{index}_{op.name.removeprefix('cinn.')}"


def cinn_ops(function: func.FuncOp) -> list[Operation]:
    return [op for op in function.body.ops if op.dialect_name() == "cinn"]


def cinn_functions(module: ModuleOp) -> Iterator[tuple[list[Operation], set[SSAValue]]]:
    """For each function of the module with a body: its cinn ops, and the values its `func.return` returns."""
    for function in module.ops:
        if not isinstance(function, func.FuncOp) or not function.body.blocks:
            continue
        ret = function.body.block.last_op
        yield cinn_ops(function), set(ret.operands) if isinstance(ret, func.ReturnOp) else set()


# ---------------------------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------------------------


def _broadcast_index(k: KernelBuilder, ivs: Sequence[Value], shape: Sequence[int]) -> list[Value]:
    """The index into an operand of `shape` that numpy-broadcasts to the iteration space of `ivs`."""
    offset = len(ivs) - len(shape)
    return [k.idx(0) if d == 1 else ivs[offset + i] for i, d in enumerate(shape)]


def _for_nest(
    k: KernelBuilder, ubs: Sequence[int], inits: Sequence[Value], body: Callable[..., Sequence[Value]]
) -> list[Value]:
    """Nested scf.for over [0, ub) per dim carrying `inits`; `body(ivs, *carried)` returns the next values."""

    def nest(d: int, ivs: list[Value], carried: Sequence[Value]) -> list[Value]:
        if d == len(ubs):
            return list(body(ivs, *carried))
        return k.for_(ubs[d], lambda iv, *c: nest(d + 1, [*ivs, iv], c), inits=list(carried))

    return nest(0, [], inits)


def _index(k: KernelBuilder, value: int | Value, *terms: tuple[int | Value, int]) -> Value:
    """value + sum(v * c) on index values (constants folded)."""
    result = k.idx(value)
    for v, c in terms:
        if c == 0:
            continue
        term = k.idx(v * c) if isinstance(v, int) else v if c == 1 else k.muli(v, k.idx(c))
        result = k.addi(result, term)
    return result


def _inside(k: KernelBuilder, index: Value, size: int) -> Value:
    """0 <= index < size."""
    return k.andi(k.cmpi("sge", index, k.idx(0)), k.cmpi("slt", index, k.idx(size)))


def _accumulate_if(s: Scalar, cond: Value, acc: Value, product: Callable[[], Value]) -> Value:
    """acc + product() where cond, else acc (the loads stay under the condition)."""
    (result,) = s.k.if_(cond, lambda: [s.add(acc, product())], lambda: [acc], types=[s.type])
    return result



def _ravel(k: KernelBuilder, ivs: Sequence[Value], shape: Sequence[int]) -> Value:
    flat: Value = k.idx(0)
    for iv, d in zip(ivs, shape):
        flat = k.addi(k.muli(flat, k.idx(d)), iv) if d > 1 else flat
    return flat


# ---------------------------------------------------------------------------------------------------------------
# Kernels: which ops one kernel computes (the decisions of cinn-mark-views and cinn-fuse)
# ---------------------------------------------------------------------------------------------------------------

GROUP = "cinn.group"
VIEW = "cinn.view"
# Ops that only move elements: as a view, a consumer reads the op's input through the op's index map.
VIEW_OPS = (cinn.BroadcastToOp, cinn.IdentityOp, cinn.ReshapeOp, cinn.ReverseOp, cinn.SliceOp, cinn.TransposeOp)
# An element-wise op computed again inside every kernel that reads it (cinn-mark-views' choice): as a view.
RECOMPUTE = "cinn.recompute"


def is_elementwise(op: Operation) -> bool:
    """One result element from the operand elements at the same (broadcast) index."""
    return isinstance(op, cinn.UnaryOp | cinn.BinaryOp | cinn.SelectOp) and not isinstance(op, cinn.IdentityOp)


@dataclass
class KernelPlan:
    """One kernel: `root` computes its results into memory, `inlined` ops are computed inside it where read
    (fused producers and views), `inputs` are the values it reads from memory (function arguments or results
    of earlier kernels)."""

    name: str
    root: Operation
    inlined: list[Operation]
    inputs: list[Value]

    @property
    def outputs(self) -> list[Value]:
        return list(self.root.results)


def _fail(op: Operation, index: int, why: str) -> PassFailedException:
    return PassFailedException(f"op {index} ('{op.name}'): {why}")


def plan_kernels(function: func.FuncOp) -> list[KernelPlan]:
    """The kernels of a function of cinn ops in execution order, following its `cinn.view` and `cinn.group`
    attributes (an op with neither is a kernel of its own); a recorded decision that breaks a rule fails."""
    ops = cinn_ops(function)
    position = {op: i for i, op in enumerate(ops)}
    ret = function.body.block.last_op
    returned: set[SSAValue] = set(ret.operands) if isinstance(ret, func.ReturnOp) else set()
    last_of_group: dict[int, Operation] = {}
    for op in ops:
        group = op.attributes.get(GROUP)
        if group is not None:
            if not isinstance(group, IntegerAttr):
                raise _fail(op, position[op], f"expected '{GROUP}' to be an integer, got {group}")
            last_of_group[group.value.data] = op
    inlined: set[Operation] = set()
    for op in ops:
        i = position[op]
        if VIEW in op.attributes:
            if not isinstance(op, VIEW_OPS):
                raise _fail(op, i, f"expected '{VIEW}' only on {', '.join(c.name for c in VIEW_OPS)}")
            if op.results[0] in returned:
                raise _fail(op, i, f"expected no '{VIEW}' on a returned value (it must be stored)")
            inlined.add(op)
            continue
        if RECOMPUTE in op.attributes:
            if not is_elementwise(op):
                raise _fail(op, i, f"expected '{RECOMPUTE}' only on element-wise ops")
            if op.results[0] in returned:
                raise _fail(op, i, f"expected no '{RECOMPUTE}' on a returned value (it must be stored)")
            inlined.add(op)
            continue
        group = op.attributes.get(GROUP)
        if not isinstance(group, IntegerAttr) or last_of_group[group.value.data] is op:
            continue
        users = {use.operation for use in op.results[0].uses}
        if len(op.results) != 1 or op.results[0] in returned or not users:
            raise _fail(op, i, f"expected a fused op ('{GROUP}' not last in its group) to have one result, read "
                               f"and not returned, got {len(op.results)} results, {len(users)} readers")
        if any(user.attributes.get(GROUP) != group for user in users):
            raise _fail(op, i, f"expected all its readers to be in its group {group.value.data}")
        if isinstance(op, cinn.ConcatOp | cinn.BnMeanVarianceOp | cinn.BnGradBiasScaleOp | cinn.DotOp):
            raise _fail(op, i, "expected a fused op other than concat, dot and the bn ops (they are no expression "
                               "of one index)")
        inlined.add(op)
    plans: list[KernelPlan] = []
    for op in ops:
        if op in inlined:
            continue
        members: list[Operation] = []
        seen: set[Operation] = set()
        inputs: list[Value] = []

        def visit(v: Value) -> None:
            owner = v.owner
            if isinstance(owner, Operation) and owner in inlined:
                if owner in seen:
                    return  # a DAG: each op once (a diamond chain would be walked 2^depth times)
                seen.add(owner)
                members.append(owner)
                for operand in owner.operands:
                    visit(operand)
            elif v not in inputs:
                inputs.append(v)

        for operand in op.operands:
            visit(operand)
        if not members:
            inputs = list(op.operands)  # a kernel of one op takes its operands as they are, repeats included
        plans.append(KernelPlan(kernel_name(function.sym_name.data, position[op], op), op, members, inputs))
    return plans


MATMUL_UNROLL = 8
REDUCE_LANES = 8
# A float sum or product Reduce (and the sums the fused softmax / layer norm kernels make through it; max and min
# stay sequential: LLVM vectorizes them, maximumf / minimumf being order-free) whose reduced axes include the
# innermost one, of at least 2 * FLOAT_SPLIT elements, keeps FLOAT_SPLIT partial results (lanes), whatever the
# host's vector width: lane j combines, in order, the elements whose index along that axis is j mod FLOAT_SPLIT
# (the other reduced axes outermost, ascending), then the last (size mod FLOAT_SPLIT) elements go to lanes 0, 1,
# ... in order, and the lanes combine as a halving tree: lane j with lane j + h for h = FLOAT_SPLIT / 2, ..., 1.
# The order is fixed (the same run to run, across thread counts and hosts) and the lanes vectorize. A sum of n
# terms differs from the exact sum by at most (n / FLOAT_SPLIT + log2 FLOAT_SPLIT + 1) * eps * sum |x_i| (the
# sequential order: n * eps * sum |x_i|), so from the sequential sum by at most the sum of the two.
# `exact_float` keeps the sequential order (the bits of the element-wise form), libm's exp, log, tanh and erf (the
# default: `cinn_scalar.VECTOR_MATH` on f32) and the row and element-wise forms of conv (the default: `cinn_conv`).
FLOAT_SPLIT = 16
# An element-wise kernel of at least CHAIN_OPS ops (a dependency chain per element) and CHAIN_ELEMENTS elements
# computes CHAINS elements an iteration, each a CHAINS-th of an axis apart: LLVM's vectorizer interleaves no such
# loop, and one chain runs at its latency; LONG_CHAINS from LONG_CHAIN_OPS ops (long chains gain up to 8 chains, 16
# are slower; a short chain does not pay for more streams of memory: times in bench/results/cpu.md and the git
# log). Same values.
CHAINS = 4
CHAIN_OPS = 4
LONG_CHAINS = 8
LONG_CHAIN_OPS = 12
CHAIN_ELEMENTS = 1 << 16
# The largest `dot_block` (MR rows, NR vector registers, KC depth) the pass takes: MR x NR accumulators past a
# machine's 32 vector registers spill, and a KC x NR panel is a stack slot (at most 1024 x 4 zmm: 256 KiB).
DOT_BLOCK = (32, 4, 1024)


class KernelEmitter:
    """Emits one planned kernel: `value(v, ivs)` is the element of SSA value v at ivs, loaded from a kernel
    argument or computed by the inlined op that makes v."""

    def __init__(self, plan: KernelPlan, exact_float: bool = False, micro_kernels: bool = True,
                 vector_bytes: int = 32, dot_block: tuple[int, int, int] | None = None):
        values = [*plan.inputs, *plan.outputs]
        self.exact_float = exact_float
        self.vector_bytes = vector_bytes
        self.dot_block = dot_block  # (MR, NR registers, KC) of `cinn_dot`; None: its BLOCK for vector_bytes
        self.micro_kernels = micro_kernels and not exact_float  # the conv micro-kernels: default float order only
        self.dot_micro_kernel = micro_kernels  # a CPU form too; under exact_float with the sequential bits
        self.k = KernelBuilder(plan.name, [memref_type(v.type) for v in values])
        self.plan = plan
        self.memory: dict[Value, Value] = {}
        # The elements computed so far, by (value, block, index...): an element read again in the same block (a
        # value of several readers in one kernel, or one op reading a value twice) is computed once there. Only
        # the same block: a value made in a loop body or branch does not reach past it.
        self.computed: dict[tuple[Value | Block, ...], Value] = {}
        for arg, v in zip(self.k.args, values):
            if v.name_hint:
                arg.name_hint = v.name_hint
        for arg, v in zip(self.k.args, plan.inputs):
            self.memory.setdefault(v, arg)
        self.inputs = list(self.k.args[: len(plan.inputs)])
        self.outputs = list(self.k.args[len(plan.inputs) :])

    @staticmethod
    def scalar_type(op: Operation) -> Attribute:
        """The element type the op computes in: its first operand's (its result's for ConstScalar)."""
        source = op.operands[1] if isinstance(op, cinn.SelectOp) else (op.operands or op.results)[0]
        assert is_tensor(source.type), source.type
        return source.type.element_type

    def value(self, v: Value, ivs: Sequence[Value]) -> Value:
        return self.values(v, [list(ivs)])[0]

    def values(self, v: Value, points: Sequence[Sequence[Value]]) -> list[Value]:
        """The elements of v at several indices, one per lane: lanes share the loops of a reduction (each lane
        keeps its own accumulator and order, so each element is what `value` alone would give)."""
        k = self.k
        if v in self.memory:
            return [k.load(self.memory[v], list(p)) for p in points]
        block = k.insertion_block()
        keys = [(v, block, *p) for p in points]
        if all(key in self.computed for key in keys):
            return [self.computed[key] for key in keys]
        results = self._compute(v, points)
        self.computed.update(zip(keys, results))
        return results

    def _compute(self, v: Value, points: Sequence[Sequence[Value]]) -> list[Value]:
        """`values` of an op's result, emitted at the insertion point."""
        k = self.k
        op = v.owner
        assert isinstance(op, Operation)
        s = Scalar(k, self.scalar_type(op), self.exact_float)

        def operand(i: int, index: Callable[[Sequence[Value]], list[Value]]) -> list[Value]:
            return self.values(op.operands[i], [index(p) for p in points])

        def broadcast(i: int) -> list[Value]:
            return operand(i, lambda p: _broadcast_index(k, p, cinn.shape_of(op.operands[i])))

        if isinstance(op, cinn.UnaryOp):
            return [unary(s, op, x) for x in broadcast(0)]
        if type(op) in BINARY:
            return [BINARY[type(op)](s, a, b) for a, b in zip(broadcast(0), broadcast(1))]
        match op:
            case cinn.ConstScalarOp():
                return [s.const(op.value.value.data)] * len(points)
            case cinn.CompareOp():
                return [s.cmp(op.kind.data.value, a, b) for a, b in zip(broadcast(0), broadcast(1))]
            case cinn.SelectOp():
                return [s.emit(arith.SelectOp(c, a, b)) for c, a, b in zip(broadcast(0), broadcast(1), broadcast(2))]
            case cinn.BroadcastToOp():
                axes, shape = [int(v) for v in op.broadcast_axes.iter_values()], cinn.shape_of(op.operands[0])
                return operand(0, lambda p: [k.idx(0) if d == 1 else p[a] for a, d in zip(axes, shape)])
            case cinn.ReshapeOp():
                source, target = cinn.shape_of(op.operands[0]), cinn.shape_of(op.results[0])
                return operand(0, lambda p: unravel(k, _ravel(k, p, target), source))
            case cinn.ReverseOp():
                axes, shape = set(op.axes()), cinn.shape_of(op.results[0])

                def flip(d: int, v: Value) -> Value:
                    return k.subi(k.idx(shape[d] - 1), v) if d in axes else v

                return operand(0, lambda p: [flip(d, v) for d, v in enumerate(p)])
            case cinn.SliceOp():
                starts = [lo for lo, _ in op.bounds()]
                return operand(0, lambda p: [k.addi(v, k.idx(lo)) if lo else v for v, lo in zip(p, starts)])
            case cinn.TransposeOp():
                perm = [int(v) for v in op.axis.iter_values()]
                return operand(0, lambda p: [p[perm.index(d)] for d in range(len(perm))])
            case cinn.ReduceOp():
                return self._reduce(op, s, points)
            case cinn.DotOp():
                return [self._dot(op, s, p) for p in points]
            case cinn.ConvOp():
                return [self._conv(op, s, p) for p in points]
            case _:
                raise NotImplementedError(op.name)

    # -- reductions of one output element --------------------------------------------------------------------

    def _reduce(self, op: cinn.ReduceOp, s: Scalar, points: Sequence[Sequence[Value]]) -> list[Value]:
        k, x = self.k, op.operands[0]
        shape = cinn.shape_of(x)
        axes = cinn.reduce_axes(shape, [int(v) for v in op.dim.iter_values()])
        kept = [d for d in range(len(shape)) if d not in axes]
        keep_dim = bool(op.keep_dim.value.data)
        kind = op.kind.data
        init = {
            cinn.ReduceKind.SUM: lambda: s.const(0),
            cinn.ReduceKind.PROD: lambda: s.const(1),
            cinn.ReduceKind.MAX: s.lowest,
            cinn.ReduceKind.MIN: s.highest,
        }[kind]
        combine = {
            cinn.ReduceKind.SUM: s.add,
            cinn.ReduceKind.PROD: s.mul,
            cinn.ReduceKind.MAX: s.max,
            cinn.ReduceKind.MIN: s.min,
        }[kind]
        outers = [[p[d] for d in kept] if keep_dim else list(p) for p in points]

        def step(inner: list[Value], *accs: Value) -> list[Value]:
            indices: list[list[Value]] = []
            for outer in outers:
                index: list[Value] = [k.idx(0)] * len(shape)
                for d, v in zip(kept, outer):
                    index[d] = v
                for d, v in zip(axes, inner):
                    index[d] = v
                indices.append(index)
            return [combine(acc, e) for acc, e in zip(accs, self.values(x, indices))]

        sizes = [shape[d] for d in axes]
        if not self._splits(op):
            first = init()
            return _for_nest(k, sizes, [first] * len(points), step)
        return self._split_reduce(s, sizes, len(points), init, combine, step)

    def _splits(self, op: cinn.ReduceOp) -> bool:
        """Whether the Reduce runs in FLOAT_SPLIT lanes: a float sum or product over the innermost axis (among
        others) of at least 2 * FLOAT_SPLIT elements, not `exact_float`. Max and min stay as they are (LLVM
        vectorizes them, being order-free), and so do reductions over outer axes only (their kernels vectorize
        across adjacent outputs, REDUCE_LANES, each in order)."""
        shape = cinn.shape_of(op.operands[0])
        axes = cinn.reduce_axes(shape, [int(v) for v in op.dim.iter_values()])
        return (not self.exact_float and cinn.is_float(self.scalar_type(op)) and bool(axes)
                and axes[-1] == len(shape) - 1 and shape[-1] >= 2 * FLOAT_SPLIT
                and op.kind.data in (cinn.ReduceKind.SUM, cinn.ReduceKind.PROD))

    def _split_reduce(self, s: Scalar, sizes: list[int], count: int, init: Callable[[], Value],
                      combine: Callable[..., Value], step: Callable[..., list[Value]]) -> list[Value]:
        """`count` reductions over `sizes` in FLOAT_SPLIT lanes each, in the order of FLOAT_SPLIT's comment;
        `step(inner, *accs)` combines the element at `inner` into each of the `count` accumulators. The lanes
        live in a stack buffer updated by an inner loop over the lanes, which the loop vectorizer turns into
        vector loads and adds (as a C `acc[j] += x[i + j]`)."""
        k, lanes, last = self.k, FLOAT_SPLIT, sizes[-1]
        full = last - last % lanes
        buf = k.alloca(MemRefType(s.type, [count * lanes]))
        first = init()
        k.for_(count * lanes, lambda j: k.store(first, buf, [j]))

        def update(inner: list[Value], at: Value, lane: Value) -> None:
            slots = [k.addi(lane, k.idx(p * lanes)) if p else lane for p in range(count)]
            for slot, acc in zip(slots, step([*inner, at], *[k.load(buf, [slot]) for slot in slots])):
                k.store(acc, buf, [slot])

        def outer(inner: list[Value]) -> list[Value]:
            k.for_(full, lambda i: k.for_(lanes, lambda j: update(inner, k.addi(i, j), j)), step=lanes)
            for j in range(last - full):
                update(inner, k.idx(full + j), k.idx(j))
            return []

        _for_nest(k, sizes[:-1], [], outer)
        results: list[Value] = []
        for p in range(count):
            tree = [k.load(buf, [k.idx(p * lanes + j)]) for j in range(lanes)]
            while len(tree) > 1:
                half = len(tree) // 2
                tree = [combine(tree[j], tree[j + half]) for j in range(half)]
            results.append(tree[0])
        return results

    def _dot(self, op: cinn.DotOp, s: Scalar, ivs: Sequence[Value]) -> Value:
        lhs, rhs = op.operands
        lhs_rank, depth = len(cinn.shape_of(lhs)), cinn.shape_of(lhs)[-1]

        def step(kk: list[Value], acc: Value) -> list[Value]:
            a = self.value(lhs, [*ivs[: lhs_rank - 1], kk[0]])
            b = self.value(rhs, [kk[0], *ivs[lhs_rank - 1 :]])
            return [s.madd(acc, a, b)]

        (acc,) = _for_nest(self.k, [depth], [s.const(0)], step)
        return acc

    def _conv(self, op: cinn.ConvOp, s: Scalar, ivs: Sequence[Value]) -> Value:
        k = self.k
        lhs, rhs = op.operands
        g = op.geometry()
        cg, og = g.c // g.groups, g.o // g.groups
        nchw = g.data_format == cinn.DataFormat.NCHW
        load = self.value

        def at(n: Value, c: Value, h: Value, w: Value) -> list[Value]:
            return [n, c, h, w] if nchw else [n, h, w, c]

        def split(ivs: Sequence[Value]) -> tuple[Value, Value, Value, Value]:
            return (ivs[0], ivs[1], ivs[2], ivs[3]) if nchw else (ivs[0], ivs[3], ivs[1], ivs[2])

        kind = op.conv_type.data
        if kind == cinn.ConvType.FORWARD:  # y[n, o, i, j] = sum_{c, p, q} x[n, c0 + c, r, t] * w[o, c, p, q]
            n, o, i, j = split(ivs)
            c0 = k.muli(k.divsi(o, k.idx(og)), k.idx(cg))

            def tap(taps: list[Value], acc: Value) -> list[Value]:
                c, p, q = taps
                r = _index(k, -g.pad_top, (i, g.stride_h), (p, g.dilation_h))
                t = _index(k, -g.pad_left, (j, g.stride_w), (q, g.dilation_w))
                inside = k.andi(_inside(k, r, g.h), _inside(k, t, g.w))
                x = lambda: load(lhs, at(n, k.addi(c0, c), r, t))  # noqa: E731
                return [_accumulate_if(s, inside, acc, lambda: s.mul(x(), load(rhs, [o, c, p, q])))]

            return _for_nest(k, [cg, g.kh, g.kw], [s.const(0)], tap)[0]
        if kind == cinn.ConvType.BACKWARD_DATA:  # dx[n, c, h, w] = sum over (o, p, q) meeting (h, w) of dy * w
            n, c, h, w = split(ivs)
            group = k.divsi(c, k.idx(cg))
            o0, cc = k.muli(group, k.idx(og)), k.remsi(c, k.idx(cg))

            def tap(taps: list[Value], acc: Value) -> list[Value]:
                o, p, q = taps
                r = _index(k, h, (g.pad_top, 1), (p, -g.dilation_h))  # = i * stride_h for the output row i
                t = _index(k, w, (g.pad_left, 1), (q, -g.dilation_w))
                i, j = k.divsi(r, k.idx(g.stride_h)), k.divsi(t, k.idx(g.stride_w))
                inside = k.andi(_inside(k, i, g.oh), _inside(k, j, g.ow))
                inside = k.andi(inside, k.andi(k.cmpi("sge", r, k.idx(0)), k.cmpi("sge", t, k.idx(0))))
                for v, stride in ((r, g.stride_h), (t, g.stride_w)):
                    if stride > 1:
                        inside = k.andi(inside, k.cmpi("eq", k.remsi(v, k.idx(stride)), k.idx(0)))
                oo = k.addi(o0, o)
                dy = lambda: load(rhs, at(n, oo, i, j))  # noqa: E731
                return [_accumulate_if(s, inside, acc, lambda: s.mul(dy(), load(lhs, [oo, cc, p, q])))]

            return _for_nest(k, [og, g.kh, g.kw], [s.const(0)], tap)[0]
        # dw[o, c, p, q] = sum_{n, i, j} dy[n, o, i, j] * x[n, c0 + c, r, t]
        o, c, p, q = ivs
        channel = k.addi(k.muli(k.divsi(o, k.idx(og)), k.idx(cg)), c)

        def position(pos: list[Value], acc: Value) -> list[Value]:
            n, i, j = pos
            r = _index(k, -g.pad_top, (i, g.stride_h), (p, g.dilation_h))
            t = _index(k, -g.pad_left, (j, g.stride_w), (q, g.dilation_w))
            inside = k.andi(_inside(k, r, g.h), _inside(k, t, g.w))
            x = lambda: load(lhs, at(n, channel, r, t))  # noqa: E731
            return [_accumulate_if(s, inside, acc, lambda: s.mul(load(rhs, at(n, o, i, j)), x()))]

        return _for_nest(k, [g.n, g.oh, g.ow], [s.const(0)], position)[0]

    # -- whole kernels ----------------------------------------------------------------------------------------

    def _bn(self, op: Operation) -> None:
        """Per channel c: (sum x, sum x^2), or with grad and mean (sum dy, sum dy * (x - mean))."""
        k = self.k
        s = Scalar(k, self.scalar_type(op))
        x = op.operands[0]
        grad, mean = (op.operands[1], op.operands[2]) if len(op.operands) == 3 else (None, None)
        n, _, h, w = cinn.shape_of(x)

        def channel(ivs: list[Value]) -> None:
            (c,) = ivs
            m = self.value(mean, [c]) if mean is not None else None

            def step(pos: list[Value], a: Value, b: Value) -> list[Value]:
                index = [pos[0], c, pos[1], pos[2]]
                v = self.value(x, index)
                if grad is None or m is None:
                    return [s.add(a, v), s.add(b, s.mul(v, v))]
                dy = self.value(grad, index)
                return [s.add(a, dy), s.add(b, s.mul(dy, s.emit(arith.SubfOp(v, m))))]

            totals = _for_nest(k, [n, h, w], [s.const(0), s.const(0)], step)
            for total, result in zip(totals, self.outputs):
                k.store(total, result, [c])

        k.loops(cinn.shape_of(self.outputs[0]), channel, parallel=True)

    def _matmul(self, op: cinn.DotOp) -> None:
        """2-D . 2-D (integers; floats on the CPU: `cinn_dot`) by blocks of rows: out[i, :] = 0, then
        out[i, :] += lhs[i, kk] * rhs[kk, :] for kk ascending,
        MATMUL_UNROLL values of kk per pass over the rows, and ROWS rows (the largest of 4, 2, 1 dividing the row
        count) per pass sharing each load of rhs. Each element still sums in the order of the element-wise form,
        so the result is the same; the inner loop runs along rows of rhs and out, which the vectorizer turns into
        vector multiply-adds."""
        k, out = self.k, self.outputs[0]
        lhs, rhs = op.operands
        s = Scalar(k, self.scalar_type(op), self.exact_float)
        depth, cols = cinn.shape_of(rhs)
        count = cinn.shape_of(out)[0]
        # Narrow integers stay one row and one k per pass: LLVM's vectorizer (maximize-bandwidth) takes seconds
        # on the unrolled form of i8 and i16 code.
        wide = s.is_float or cinn.bit_width(s.element) >= 32
        rows = next(r for r in (4, 2, 1) if count % r == 0) if wide else 1
        unroll = MATMUL_UNROLL if wide else 1
        full = depth - depth % unroll

        def block_of_rows(ivs: list[Value]) -> None:
            first = k.muli(ivs[0], k.idx(rows))
            block = [k.addi(first, r) if r else first for r in range(rows)]
            zero = s.const(0)

            def clear(j: Value) -> None:
                for i in block:
                    k.store(zero, out, [i, j])

            k.for_(cols, clear)

            def step(kks: list[Value]) -> None:
                a = [[self.value(lhs, [i, kk]) for kk in kks] for i in block]

                def column(j: Value) -> None:
                    b = [self.value(rhs, [kk, j]) for kk in kks]
                    for i, ai in zip(block, a):
                        acc = k.load(out, [i, j])
                        for av, bv in zip(ai, b):
                            acc = s.madd(acc, av, bv)
                        k.store(acc, out, [i, j])

                k.for_(cols, column)

            if full:
                k.for_(full, lambda k0: step([k.addi(k0, u) for u in range(unroll)]), step=unroll)
            if depth > full:
                k.for_(depth, lambda kk: step([kk]), lb=full)

        k.parallel([count // rows], block_of_rows)

    def _conv_filter_rows(self, op: cinn.ConvOp) -> None:
        """NCHW backward_filter by (o, c) planes: for each filter row p, the kw outputs dw[o, c, p, :] accumulate
        together over (n, i) ascending (the row r guarded once) and, per q, over the columns j where the tap lands
        inside x (static bounds): BLOCK channels c at once (BLOCK chains per q, each load of dy shared), no test
        per element, and each output sums the same products in the order of the element-wise form."""
        g = op.geometry()
        k, out = self.k, self.outputs[0]
        x, dy = op.operands
        s = Scalar(k, self.scalar_type(op))
        cg, og = g.c // g.groups, g.o // g.groups

        block = next(r for r in (8, 4, 2, 1) if cg % r == 0)

        def plane(ivs: list[Value]) -> None:
            (u,) = ivs
            blocks = cg // block
            o, c0 = k.divsi(u, k.idx(blocks)), k.muli(k.remsi(u, k.idx(blocks)), k.idx(block))
            cs = [k.addi(c0, k.idx(b)) if b else c0 for b in range(block)]
            group_base = k.muli(k.divsi(o, k.idx(og)), k.idx(cg))
            channels = [k.addi(group_base, c) for c in cs]
            for p in range(g.kh):

                def position(pos: list[Value], *accs: Value, p: int = p) -> list[Value]:
                    n, i = pos
                    r = _index(k, -g.pad_top + p * g.dilation_h, (i, g.stride_h))

                    def taps() -> list[Value]:
                        results: list[Value] = []
                        for q in range(g.kw):
                            mine = list(accs[q * block : (q + 1) * block])
                            offset = q * g.dilation_w - g.pad_left
                            first = max(0, -(offset // g.stride_w))
                            last = min(g.ow, (g.w - 1 - offset) // g.stride_w + 1) if g.w - 1 - offset >= 0 else 0
                            if first >= last:
                                results.extend(mine)
                                continue

                            def column(j: Value, *acc: Value, offset: int = offset) -> list[Value]:
                                dyv = self.value(dy, [n, o, i, j])
                                t = _index(k, offset, (j, g.stride_w))
                                return [s.add(a, s.mul(dyv, self.value(x, [n, ch, r, t])))
                                        for a, ch in zip(acc, channels)]

                            results.extend(k.for_(last, column, lb=first, inits=mine))
                        return results

                    return k.if_(_inside(k, r, g.h), taps, lambda: list(accs), types=[s.type] * (g.kw * block))

                totals = _for_nest(k, [g.n, g.oh], [s.const(0)] * (g.kw * block), position)
                for q in range(g.kw):
                    for c, total in zip(cs, totals[q * block : (q + 1) * block]):
                        k.store(total, out, [o, c, k.idx(p), k.idx(q)])

        k.parallel([g.o * cg // block], plane)

    def _conv_rows(self, op: cinn.ConvOp) -> bool:
        """NCHW forward (and backward_data at stride 1) by output rows: out[n, o, i, :] += w * x[n, c, r, ...]
        (backward_filter: `_conv_filter_rows`)
        for the taps (c, p, q) in the element-wise form's order, each tap over the columns where it lands inside
        the input (static bounds per q), so the inner loop is a vectorizable multiply-add along a row and each
        element sums the same products in the same order. False (nothing emitted) for the other forms."""
        g = op.geometry()
        kind = op.conv_type.data
        if g.data_format != cinn.DataFormat.NCHW:
            return False
        if kind == cinn.ConvType.BACKWARD_FILTER:
            self._conv_filter_rows(op)
            return True
        if kind == cinn.ConvType.BACKWARD_DATA and (g.stride_h, g.stride_w) != (1, 1):
            return False
        k, out = self.k, self.outputs[0]
        s = Scalar(k, self.scalar_type(op))
        cg, og = g.c // g.groups, g.o // g.groups
        forward, channels, rows_out, cols_out, source, filt, src_rows, src_cols, inner = conv_roles(op)

        def column_range(q: int) -> tuple[int, int, int, int]:
            """(first, last + 1, stride, offset): output columns j where src column j * stride + offset is inside."""
            if forward:
                stride, offset = g.stride_w, q * g.dilation_w - g.pad_left
            else:
                stride, offset = 1, g.pad_left - q * g.dilation_w
            first = max(0, -(offset // stride))  # the least j with j * stride + offset >= 0
            last = min(cols_out, (src_cols - 1 - offset) // stride + 1) if src_cols - 1 - offset >= 0 else 0
            return first, last, stride, offset

        # BLOCK output channels per iteration (groups == 1: they read the same source rows), each load of the
        # source shared and BLOCK independent add chains (one chain through memory ran at its latency)
        block = next(r for r in (4, 2, 1) if channels % r == 0) if g.groups == 1 else 1

        def plane(ivs: list[Value]) -> None:
            (u,) = ivs
            blocks = channels // block
            n, first_ch = k.divsi(u, k.idx(blocks)), k.muli(k.remsi(u, k.idx(blocks)), k.idx(block))
            chs = [k.addi(first_ch, k.idx(b)) if b else first_ch for b in range(block)]
            ch = chs[0]
            if forward:
                base = k.muli(k.divsi(ch, k.idx(og)), k.idx(cg))  # the group's first input channel
            else:
                base = k.muli(k.divsi(ch, k.idx(cg)), k.idx(og))
            ccs = [] if forward else [k.remsi(c, k.idx(cg)) for c in chs]
            zero = s.const(0)

            def row(i: Value) -> None:
                def clear(j: Value) -> None:
                    for c in chs:
                        k.store(zero, out, [n, c, i, j])

                k.for_(cols_out, clear)

                def channel(c: Value) -> None:
                    src_channel = k.addi(base, c)
                    for p in range(g.kh):
                        if forward:
                            r = _index(k, -g.pad_top + p * g.dilation_h, (i, g.stride_h))
                        else:
                            r = _index(k, g.pad_top - p * g.dilation_h, (i, 1))

                        def taps(r: Value = r, p: int = p) -> None:
                            for q in range(g.kw):
                                first, last, stride, offset = column_range(q)
                                if first >= last:
                                    continue
                                weights = [[o, c, p, q] for o in chs] if forward else \
                                    [[src_channel, cc, p, q] for cc in ccs]
                                wvs = [self.value(filt, [k.idx(x) if isinstance(x, int) else x for x in weight])
                                       for weight in weights]

                                def column(j: Value, wvs: list[Value] = wvs, stride: int = stride,
                                           offset: int = offset) -> None:
                                    xv = self.value(source, [n, src_channel, r, _index(k, offset, (j, stride))])
                                    for o, wv in zip(chs, wvs):
                                        acc = k.load(out, [n, o, i, j])
                                        k.store(s.add(acc, s.mul(xv, wv)), out, [n, o, i, j])

                                k.for_(last, column, lb=first)

                        k.if_(_inside(k, r, src_rows), taps)

                k.for_(inner, channel)

            k.for_(rows_out, row)

        k.parallel([g.n * channels // block], plane)
        return True

    def emit(self) -> func.FuncOp:
        k, op = self.k, self.plan.root
        out = self.outputs[0]
        match op:
            case cinn.ConstScalarOp():
                k.store(self.value(op.results[0], []), out, [])
            case cinn.BnMeanVarianceOp() | cinn.BnGradBiasScaleOp():
                self._bn(op)
            case cinn.DotOp() if self.dot_micro_kernel and dot_blocked(self, op):
                pass
            case cinn.DotOp() if len(cinn.shape_of(op.operands[0])) == 2 == len(cinn.shape_of(op.operands[1])):
                self._matmul(op)
            case cinn.ConvOp() if (self.micro_kernels and conv_padded(self, op)) or self._conv_rows(op):
                pass
            case cinn.ConcatOp():
                axis, offset = op.normalized_axis(), 0
                for x in op.operands:

                    def copy(ivs: list[Value], x: Value = x, offset: int = offset) -> None:
                        at = [k.addi(v, k.idx(offset)) if d == axis and offset else v for d, v in enumerate(ivs)]
                        k.store(self.value(x, ivs), out, at)

                    k.loops(cinn.shape_of(x), copy, parallel=True)
                    offset += cinn.shape_of(x)[axis]
            case cinn.ReshapeOp() if not self.plan.inlined:
                count = pymath.prod(cinn.shape_of(out))

                def move(ivs: list[Value]) -> None:
                    source = unravel(k, ivs[0], cinn.shape_of(op.operands[0]))
                    k.store(self.value(op.operands[0], source), out, unravel(k, ivs[0], cinn.shape_of(out)))

                k.loops([count], move, parallel=True)
            case _ if self._lanes() > 1:
                self._store_lanes(self._lanes())
            case _ if (chain := self._chain_axis()) is not None:
                self._store_chains(*chain)
            case _:

                def store(ivs: list[Value]) -> None:
                    k.store(self.value(op.results[0], ivs), out, ivs)

                k.loops(cinn.shape_of(out), store, parallel=True)
        return k.finish()

    def _lanes(self) -> int:
        """How many output elements one iteration computes: REDUCE_LANES (or 4, 2) where the kernel reduces and
        its last dim of size > 1 divides by that (independent accumulators hide the latency of each add chain)."""
        root = self.plan.root
        reduces = [o for o in (root, *self.plan.inlined) if isinstance(o, cinn.ReduceOp)]
        if not reduces or len(root.results) != 1 or any(self._splits(o) for o in reduces):
            return 1  # a split reduction vectorizes along its own lanes (contiguous), not across outputs
        t = root.results[0].type
        assert is_tensor(t), t
        if not cinn.is_float(t.element_type) and cinn.bit_width(t.element_type) < 32:
            return 1  # as in _matmul: the vectorizer takes seconds on lanes of narrow integers
        dims = [d for d in cinn.shape_of(root.results[0]) if d > 1]
        return next((r for r in (REDUCE_LANES, 4, 2) if dims and dims[-1] % r == 0), 1)

    def _chain_axis(self) -> tuple[int, int] | None:
        """(axis, chains) for `_store_chains`: CHAINS, or LONG_CHAINS in a kernel of at least LONG_CHAIN_OPS ops, and
        the outermost axis of at least 4 chains' elements that the chains divide, in an element-wise kernel of at
        least CHAIN_OPS ops and CHAIN_ELEMENTS elements (None: one chain)."""
        ops = [self.plan.root, *self.plan.inlined]
        if len(ops) < CHAIN_OPS or not all(is_elementwise(o) or isinstance(o, VIEW_OPS) for o in ops):
            return None
        shape = cinn.shape_of(self.outputs[0])
        if pymath.prod(shape) < CHAIN_ELEMENTS:
            return None
        chains = LONG_CHAINS if len(ops) >= LONG_CHAIN_OPS else CHAINS
        return next(((d, chains) for d, n in enumerate(shape) if n % chains == 0 and n >= 4 * chains), None)

    def _store_chains(self, axis: int, chains: int) -> None:
        """Each iteration computes `chains` elements a `chains`-th of the axis apart (each with the ops of one
        element: the same values), so that the vectorized loop carries that many independent dependency chains."""
        k, out, root = self.k, self.outputs[0], self.plan.root
        shape = list(cinn.shape_of(out))
        shape[axis] //= chains

        def body(ivs: list[Value]) -> None:
            points = [[*ivs[:axis], k.addi(ivs[axis], k.idx(r * shape[axis])) if r else ivs[axis], *ivs[axis + 1 :]]
                      for r in range(chains)]
            for point, v in zip(points, self.values(root.results[0], points)):
                k.store(v, out, point)

        k.loops(shape, body, parallel=True)

    def _store_lanes(self, lanes: int) -> None:
        k, out, root = self.k, self.outputs[0], self.plan.root
        shape = list(cinn.shape_of(out))
        axis = max(d for d, n in enumerate(shape) if n > 1)
        shape[axis] //= lanes

        def body(ivs: list[Value]) -> None:
            first = k.muli(ivs[axis], k.idx(lanes))
            points = [[*ivs[:axis], k.addi(first, r) if r else first, *ivs[axis + 1 :]] for r in range(lanes)]
            for point, v in zip(points, self.values(root.results[0], points)):
                k.store(v, out, point)

        k.loops(shape, body, parallel=True)


def dot_block_error(block: Sequence[int]) -> str | None:
    """What is wrong with `block` as a `dot_block` (three ints within DOT_BLOCK), or None."""
    if len(block) == 3 and all(1 <= v <= bound for v, bound in zip(block, DOT_BLOCK)):
        return None
    return (f"dot_block as MR,NR,KC (MR in 1..{DOT_BLOCK[0]}, NR in 1..{DOT_BLOCK[1]} vector registers, KC in "
            f"1..{DOT_BLOCK[2]}), got {','.join(map(str, block))}")


def is_dot_block(block: tuple[int, ...]) -> TypeGuard[tuple[int, int, int]]:
    return dot_block_error(block) is None


def lower_op(op: Operation, name: str, exact_float: bool = False) -> func.FuncOp:
    """The kernel `name(operands..., results...)` computing one cinn op (which must verify)."""
    return KernelEmitter(KernelPlan(name, op, [], list(op.operands)), exact_float).emit()


@dataclass(frozen=True)
class ConvertCinnToLoopsPass(ModulePass):
    """Replace every func.func of cinn ops by one loop-level kernel per op (see the module docstring);
    `exact_float` keeps every float reduction in the sequential order (see FLOAT_SPLIT). `micro_kernels` (on by
    default, CPU forms) lowers float convs to the padded-row micro-kernels of `cinn_conv`, which keep rows in
    per-thread stack buffers of up to MAX_SLOT floats, and float 2-D dots to the register-blocked kernel of
    `cinn_dot` (packed rhs panels in stack buffers; also under `exact_float`: the same bits as the row form),
    blocked for `vector_bytes`-wide registers (32: AVX2's 16 ymm, 64: AVX-512's 32 zmm; None: the module's target's,
    `cvmc.target`, else 32) as `cinn_dot.BLOCK` says, or
    as `dot_block` (MR rows, NR in vector registers, KC: `{dot_block=8,2,256}`; a tuning choice that changes no
    bit, only the speed: `bench/cinn_dot_blocks.py` times them); the CUDA runner turns it
    off (the row forms): a GPU thread has no such stack or registers to spare, and nvcc 13.0 crashes on the NHWC
    conv micro-kernel."""

    name = "convert-cinn-to-loops"

    exact_float: bool = False
    micro_kernels: bool = True
    vector_bytes: int | None = None
    dot_block: tuple[int, ...] | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        vector_bytes = self.vector_bytes
        if vector_bytes is None:
            attr = op.attributes.get(ATTRIBUTE)
            vector_bytes = Target.of_attr(attr).vector_bytes if isinstance(attr, TargetAttr) else DEFAULT.vector_bytes
        if vector_bytes not in VECTOR_BYTES:
            raise PassFailedException(f"expected the option vector_bytes in {', '.join(map(str, VECTOR_BYTES))}, got "
                                      f"{vector_bytes}")
        block = self.dot_block
        if block is not None and not is_dot_block(block):
            raise PassFailedException(f"expected the option {dot_block_error(block)}")
        for function in list(op.ops):
            if not isinstance(function, func.FuncOp):
                continue
            ops = cinn_ops(function)
            if not ops:
                continue
            kernels = [KernelEmitter(plan, self.exact_float, self.micro_kernels, vector_bytes,
                                     block).emit()
                       for plan in plan_kernels(function)]
            op.body.block.insert_ops_before(kernels, function)
            function.detach()
            function.erase()

