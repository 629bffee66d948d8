"""A small builder for loop-level kernels: `func.func` over memrefs with `scf`, `memref` and `arith` inside.

    k = KernelBuilder("add", [out_type, a_type, b_type])
    out, a, b = k.args
    def body(ivs):
        k.store(k.addi(k.load(a, ivs), k.load(b, ivs)), out, ivs)
    k.parallel(out_type.get_shape(), body)
    func_op = k.finish()

Constants are made once per kernel and hoisted to the entry block; loops take Python callbacks for their bodies.
Integer helpers wrap the `arith` op of the same name; index values are `index`, tensor elements `i32`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Concatenate

from xdsl.builder import Builder
from xdsl.dialects import arith, func, math, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, MemRefType, i1, i32
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from cvmc.dialects.narrow import is_integer_type, is_memref
from cvmc.passes.loops.target import DEFAULT, Target
from cvmc.passes.loops.views import Layout

INDEX = IndexType()
Value = SSAValue
Attrs = dict[str, Any]  # an operator's attributes (`Node.attrs`)
Epilogue = Callable[[Value, list[Value]], Value]  # a fused epilogue: (value, output index) -> value
LoopBody = Callable[Concatenate[Value, ...], Sequence[Value] | None]  # (iv, *carried) -> the values yielded

# Index arithmetic on two constants is folded as it is built (None: leave it to LLVM).
_FOLD: dict[type[arith.SignlessIntegerBinaryOperation], Callable[[int, int], int | None]] = {
    arith.AddiOp: lambda x, y: x + y,
    arith.SubiOp: lambda x, y: x - y,
    arith.MuliOp: lambda x, y: x * y,
    arith.MinSIOp: min,
    arith.MaxSIOp: max,
    arith.DivSIOp: lambda x, y: x // y if x >= 0 and y > 0 else None,
    arith.RemSIOp: lambda x, y: x % y if x >= 0 and y > 0 else None,
}


class KernelBuilder:
    """Builds one `func.func @name(args...)` with no results."""

    def __init__(self, name: str, arg_types: Sequence[MemRefType], target: Target = DEFAULT):
        self.func = func.FuncOp(name, (list(arg_types), []))
        self.target = target  # what the kernel is built for (the kernel builders of `loops.ops` read it)
        self.block = self.func.body.block
        self.args: tuple[Value, ...] = tuple(self.block.args)
        self._b = Builder(InsertPoint.at_end(self.block))
        self._consts: dict[tuple[int, Attribute], Value] = {}
        self._const_ops: list[Operation] = []

    # ---- structure -------------------------------------------------------------------------------------

    def insertion_block(self) -> Block:
        """The block that the next op goes into."""
        return self._b.insertion_point.block

    def insert(self, op: Operation) -> Operation:
        self._b.insert(op)
        return op

    def _fill(self, block: Block, body: Callable[[], Sequence[Value] | None],
              terminator: Callable[[Sequence[Value]], Operation]) -> None:
        """Build `body` at the end of `block`, then its terminator over the values it returns."""
        saved = self._b
        self._b = Builder(InsertPoint.at_end(block))
        try:
            self.insert(terminator(body() or ()))
        finally:
            self._b = saved

    def for_(self, ub: int | Value, body: LoopBody, lb: int | Value = 0,
             step: int | Value = 1, inits: Sequence[Value] = ()) -> list[Value]:
        """`scf.for %iv = lb to ub step step iter_args(inits)`; `body(iv, *carried)` returns the yielded values.
        A loop of one iteration (static bounds) is its body, inline."""
        if isinstance(lb, int) and isinstance(ub, int) and isinstance(step, int) and lb < ub <= lb + step:
            return list(body(self.idx(lb), *inits) or ())
        block = Block(arg_types=[INDEX, *(v.type for v in inits)])
        self._fill(block, lambda: body(*block.args), lambda ys: scf.YieldOp(*ys))
        op = scf.ForOp(self.idx(lb), self.idx(ub), self.idx(step), list(inits), block)
        self.insert(op)
        return list(op.results)

    def parallel(self, ubs: Sequence[int], body: Callable[[list[Value]], None]) -> None:
        """`scf.parallel` over `[0, ub)` per dim (iterations independent); `body(ivs)`."""
        block = Block(arg_types=[INDEX] * len(ubs))
        self._fill(block, lambda: body(list(block.args)), lambda _: scf.ReduceOp())
        zero, one = self.idx(0), self.idx(1)
        self.insert(scf.ParallelOp([zero] * len(ubs), [self.idx(u) for u in ubs], [one] * len(ubs), Region(block)))

    def loops(self, ubs: Sequence[int], body: Callable[[list[Value]], None], parallel: bool = False) -> None:
        """A nest over `[0, ub)` per dim: one scf.parallel over the dims of size > 1 (its first dim is the one
        a launch splits over threads), or nested scf.for."""
        if parallel:
            dims = [d for d, n in enumerate(ubs) if n != 1]
            if not dims:
                body([self.idx(0)] * len(ubs))
                return

            def inner(ivs: list[Value]) -> None:
                full = [self.idx(0)] * len(ubs)
                for d, iv in zip(dims, ivs):
                    full[d] = iv
                body(full)

            self.parallel([ubs[d] for d in dims], inner)
            return
        ivs: list[Value] = []

        def nest(d: int) -> None:
            if d == len(ubs):
                body(list(ivs))
                return

            def step(iv: Value) -> None:
                ivs.append(iv)
                nest(d + 1)
                ivs.pop()

            self.for_(ubs[d], step)

        nest(0)

    def if_(self, cond: Value, then: Callable[[], Sequence[Value] | None],
            otherwise: Callable[[], Sequence[Value] | None] | None = None,
            types: Sequence[Attribute] = ()) -> list[Value]:
        """`scf.if` yielding values of `types` from both branches (an else branch is needed when types exist)."""
        then_block = Block()
        self._fill(then_block, then, lambda ys: scf.YieldOp(*ys))
        else_region = Region()
        if otherwise is not None:
            else_block = Block()
            self._fill(else_block, otherwise, lambda ys: scf.YieldOp(*ys))
            else_region = Region(else_block)
        op = scf.IfOp(cond, list(types), Region(then_block), else_region)
        self.insert(op)
        return list(op.results)

    def finish(self) -> func.FuncOp:
        self.insert(func.ReturnOp())
        first = self.block.first_op
        if self._const_ops:
            assert first is not None
            self.block.insert_ops_before(self._const_ops, first)
        return self.func

    # ---- values ----------------------------------------------------------------------------------------

    def const(self, value: int, type: IntegerType | IndexType = i32) -> Value:
        """A constant, made once per kernel at its entry (i32 values are wrapped to the signed range)."""
        if isinstance(type, IntegerType):
            bits = type.width.data
            if bits > 1:
                half = 1 << (bits - 1)
                value = (value + half) % (2 * half) - half
            else:
                value = value & 1
        key = (value, type)
        if key not in self._consts:
            op = arith.ConstantOp(IntegerAttr(value, type))
            self._const_ops.append(op)
            self._consts[key] = op.result
        return self._consts[key]

    def idx(self, value: int | Value) -> Value:
        return self.const(value, INDEX) if isinstance(value, int) else value

    @staticmethod
    def _type(a: Value | int, b: Value | int) -> IntegerType | IndexType:
        """The type of the operands of a binary op (at least one is a value)."""
        v = a if isinstance(a, SSAValue) else b
        assert isinstance(v, SSAValue) and (isinstance(v.type, IndexType) or is_integer_type(v.type))
        return v.type

    def _bin(self, cls: type[arith.SignlessIntegerBinaryOperation], a: Value | int, b: Value | int) -> Value:
        ty = self._type(a, b)
        x, y = self.constant_value(a), self.constant_value(b)
        if ty == INDEX and x is not None and y is not None and cls in _FOLD:
            folded = _FOLD[cls](x, y)
            if folded is not None:
                return self.const(folded, INDEX)
        a = self.const(a, ty) if isinstance(a, int) else a
        b = self.const(b, ty) if isinstance(b, int) else b
        return self.insert(cls(a, b)).results[0]

    def constant_value(self, v: Value | int) -> int | None:
        """The value of an int or of a constant this builder made, else None."""
        if isinstance(v, int):
            return v
        op = v.owner
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            return op.value.value.data
        return None

    def addi(self, a: Value | int, b: Value | int) -> Value:
        if self.constant_value(b) == 0 and isinstance(a, SSAValue):
            return a
        if self.constant_value(a) == 0 and isinstance(b, SSAValue):
            return b
        return self._bin(arith.AddiOp, a, b)

    def subi(self, a: Value | int, b: Value | int) -> Value:
        if self.constant_value(b) == 0 and isinstance(a, SSAValue):
            return a
        return self._bin(arith.SubiOp, a, b)

    def muli(self, a: Value | int, b: Value | int) -> Value:
        if self.constant_value(a) == 0 or self.constant_value(b) == 0:
            return self.const(0, self._type(a, b))
        if self.constant_value(b) == 1 and isinstance(a, SSAValue):
            return a
        if self.constant_value(a) == 1 and isinstance(b, SSAValue):
            return b
        return self._bin(arith.MuliOp, a, b)

    def divsi(self, a: Value | int, b: Value | int) -> Value:
        return self._bin(arith.DivSIOp, a, b)

    def remsi(self, a: Value | int, b: Value | int) -> Value:
        return self._bin(arith.RemSIOp, a, b)

    def maxsi(self, a: Value | int, b: Value | int) -> Value:
        return self._bin(arith.MaxSIOp, a, b)

    def minsi(self, a: Value | int, b: Value | int) -> Value:
        return self._bin(arith.MinSIOp, a, b)

    def shli(self, a: Value | int, b: Value | int) -> Value:
        return self._bin(arith.ShLIOp, a, b)

    def shrsi(self, a: Value | int, b: Value | int) -> Value:
        return self._bin(arith.ShRSIOp, a, b)

    def shrui(self, a: Value | int, b: Value | int) -> Value:
        return self._bin(arith.ShRUIOp, a, b)

    def andi(self, a: Value | int, b: Value | int) -> Value:
        return self._bin(arith.AndIOp, a, b)

    def ori(self, a: Value | int, b: Value | int) -> Value:
        return self._bin(arith.OrIOp, a, b)

    def cmpi(self, pred: str, a: Value | int, b: Value | int) -> Value:
        ty = self._type(a, b)
        a = self.const(a, ty) if isinstance(a, int) else a
        b = self.const(b, ty) if isinstance(b, int) else b
        return self.insert(arith.CmpiOp(a, b, pred)).results[0]

    def select(self, cond: Value, a: Value, b: Value) -> Value:
        return self.insert(arith.SelectOp(cond, a, b)).results[0]

    def absi(self, a: Value) -> Value:
        return self.insert(math.AbsIOp(a)).results[0]

    def extsi(self, a: Value, type: IntegerType) -> Value:
        return self.insert(arith.ExtSIOp(a, type)).results[0]

    def extui(self, a: Value, type: IntegerType) -> Value:
        return self.insert(arith.ExtUIOp(a, type)).results[0]

    def trunci(self, a: Value, type: IntegerType) -> Value:
        return self.insert(arith.TruncIOp(a, type)).results[0]

    def index_cast(self, a: Value, type: Attribute) -> Value:
        return self.insert(arith.IndexCastOp(a, type)).results[0]

    def to_index(self, a: Value) -> Value:
        return self.index_cast(a, INDEX)

    def clip(self, a: Value, lo: int, hi: int) -> Value:
        return self.minsi(self.maxsi(a, lo), hi)

    # ---- memory ----------------------------------------------------------------------------------------

    def load(self, mem: Value, ivs: Sequence[Value | int]) -> Value:
        return self.insert(memref.LoadOp.get(mem, [self.idx(i) for i in ivs])).results[0]

    def store(self, value: Value, mem: Value, ivs: Sequence[Value | int]) -> None:
        self.insert(memref.StoreOp.get(value, mem, [self.idx(i) for i in ivs]))

    def alloca(self, type: MemRefType) -> Value:
        return self.insert(memref.AllocaOp.get(type.element_type, shape=type.get_shape())).results[0]


@dataclass
class Arg:
    """A memref argument of a kernel and the layout it was given."""

    mem: Value
    layout: Layout

    @property
    def element_type(self) -> IntegerType:
        """The element type of the memref (a cvm kernel's arguments are memrefs of integers)."""
        t = self.mem.type
        assert is_memref(t) and is_integer_type(t.element_type), t
        return t.element_type

    def load(self, k: KernelBuilder, ivs: Sequence[Value | int]) -> Value:
        return k.load(self.mem, ivs)


def in_range(k: KernelBuilder, i: Value, n: int) -> Value:
    """0 <= i < n for an index i (one unsigned compare)."""
    return k.cmpi("ult", i, n)


def clamp_index(k: KernelBuilder, i: Value, n: int) -> Value:
    return k.minsi(k.maxsi(i, 0), n - 1)


def widened(k: KernelBuilder, v: Value) -> Value:
    """v sign-extended to i32 (v itself when it is one)."""
    return k.extsi(v, i32) if v.type != i32 else v


def narrowed(k: KernelBuilder, v: Value, element: Attribute) -> Value:
    """v truncated to the integer type `element` (v itself for i32 or a non-integer element)."""
    return k.trunci(v, element) if is_integer_type(element) and element != i32 else v


def unravel(k: KernelBuilder, flat: Value, shape: Sequence[int]) -> list[Value]:
    """The index of element `flat` (0 <= flat < prod(shape)) in the row-major order of `shape`: a remainder and a
    quotient per dimension but the first, which takes what is left; a dimension of 1 is index 0."""
    ivs: list[Value] = []
    rest = flat
    for d in range(len(shape) - 1, -1, -1):
        n = shape[d]
        if n == 1:
            ivs.append(k.idx(0))
        elif d == 0:
            ivs.append(rest)
        else:
            ivs.append(k.remsi(rest, n))
            rest = k.divsi(rest, n)
    return ivs[::-1]


__all__ = ["INDEX", "Arg", "Attrs", "Epilogue", "KernelBuilder", "Value", "clamp_index", "i1", "i32", "in_range",
           "narrowed", "unravel", "widened"]
