"""The LLVM module that the loop-level printers (`codegen.llvm`, `codegen.llvm_x86`) build: LLVM types and
constants, what they read off an op, the module's declarations (`ModuleEmitter`: intrinsics, libm, helper
functions, each made once) and the counted loop every emitter builds (`emit_loop`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from llvmlite import ir
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
)
from xdsl.ir import Attribute

from cvmc.errors import CVMRuntimeError

# An llvmlite value. llvmlite ships no type information (its builder methods are wrapped by decorators that hide
# their signatures from a type checker), so values and builders are `Any` here.
LLValue = Any

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()


def element_name(t: Attribute) -> str:
    if isinstance(t, IntegerType) and t.bitwidth in (1, 8, 16, 32, 64):
        return f"i{t.bitwidth}"
    if isinstance(t, Float32Type):
        return "f32"
    if isinstance(t, Float64Type):
        return "f64"
    raise CVMRuntimeError(f"expected a memref element type in i1, i8, i16, i32, i64, f32, f64, got {t}")


def value_type(t: Attribute) -> ir.Type:
    """The LLVM type of an SSA value of type `t` (in registers)."""
    if isinstance(t, IntegerType):
        return ir.IntType(t.bitwidth)
    if isinstance(t, IndexType):
        return I64
    if isinstance(t, Float32Type):
        return ir.FloatType()
    if isinstance(t, Float64Type):
        return ir.DoubleType()
    if isinstance(t, MemRefType):
        return PTR
    raise CVMRuntimeError(f"unsupported type {t}")


def memory_type(t: Attribute) -> ir.Type:
    """The LLVM type of an element of type `t` in memory (i1 is a byte)."""
    ty = value_type(t)
    return I8 if ty == I1 else ty


def byte_size(ty: ir.Type) -> int:
    if isinstance(ty, ir.IntType):
        return max(1, ty.width // 8)
    return 4 if isinstance(ty, ir.FloatType) else 8


def suffix(ty: ir.Type) -> str:
    """The overload suffix of an intrinsic for `ty`: i32, f32, f64."""
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    return "f32" if isinstance(ty, ir.FloatType) else "f64"


def const(ty: ir.Type, value: int | float | bool) -> ir.Constant:
    """An LLVM constant; integers are wrapped to the signed range of `ty`."""
    if isinstance(ty, ir.IntType):
        v = int(value)
        if ty.width == 1:
            return ir.Constant(ty, bool(v & 1))
        half = 1 << (ty.width - 1)
        return ir.Constant(ty, (v + half) % (2 * half) - half)
    return ir.Constant(ty, float(value))


def is_const(value: LLValue, number: int) -> bool:
    return isinstance(value, ir.Constant) and value.constant == number


def emit_loop(b: Any, fn: ir.Function, lb: LLValue, ub: LLValue, step: LLValue, inits: Sequence[LLValue],
              body: Callable[[LLValue, list[LLValue]], list[LLValue]], kind: str = "for") -> list[LLValue]:
    """`for (iv = lb; iv < ub; iv += step)` (signed), carrying `inits` through `body`; returns the carried
    values at exit, `b` positioned after the loop in `fn`. The header holds the phis; blocks are created in
    source order."""
    pre = b.block
    header = fn.append_basic_block(f"{kind}.cond")
    b.branch(header)
    b.position_at_end(header)
    iv = b.phi(lb.type, name="iv")
    iv.add_incoming(lb, pre)
    carried: list[ir.PhiInstr] = []
    for init in inits:
        phi = b.phi(init.type)
        phi.add_incoming(init, pre)
        carried.append(phi)
    cond = b.icmp_signed("<", iv, ub)
    first = fn.append_basic_block(f"{kind}.body")
    b.position_at_end(first)
    yielded = body(iv, list(carried))
    latch = b.block
    iv.add_incoming(b.add(iv, step, flags=["nsw"]), latch)
    for phi, value in zip(carried, yielded):
        phi.add_incoming(value, latch)
    b.branch(header)
    exit_ = fn.append_basic_block(f"{kind}.end")
    b.position_at_end(header)
    b.cbranch(cond, first, exit_)
    b.position_at_end(exit_)
    return list(carried)


class ModuleEmitter:
    """The LLVM module being built and its declarations (intrinsics, libm, helpers), each made once."""

    def __init__(self, name: str):
        self.module = ir.Module(name=name)

    def function(self, name: str, ret: ir.Type, args: Sequence[ir.Type], attrs: Sequence[str] = ()) -> ir.Function:
        existing = self.module.globals.get(name)
        if isinstance(existing, ir.Function):
            return existing
        fn = ir.Function(self.module, ir.FunctionType(ret, args), name)
        for attr in attrs:
            fn.attributes.add(attr)
        return fn

    def intrinsic(self, base: str, ty: ir.Type, nargs: int) -> ir.Function:
        """`llvm.<base>.<suffix>` taking `nargs` operands of type `ty`."""
        return self.function(f"llvm.{base}.{suffix(ty)}", ty, [ty] * nargs)

    def libm(self, base: str, ty: ir.Type) -> ir.Function:
        name = base + "f" if isinstance(ty, ir.FloatType) else base
        return self.function(name, ty, [ty], ("nounwind", "readnone"))

    def ipowi(self, ty: ir.IntType) -> ir.Function:
        """`__cvmc_ipowi_iN(b, e)`: b ** e wrapping, by branch-free square and multiply; e < 0 gives 1 / b**-e
        in integers (1 for b == 1, +-1 for b == -1, else 0, also for b == 0)."""
        name = f"__cvmc_ipowi_i{ty.width}"
        existing = self.module.globals.get(name)
        if isinstance(existing, ir.Function):
            return existing
        fn = self.function(name, ty, [ty, ty], ("nounwind", "readnone"))
        fn.linkage = "internal"
        b: Any = ir.IRBuilder(fn.append_basic_block("entry"))
        base, exp = fn.args
        zero, one = const(ty, 0), const(ty, 1)
        result: LLValue = one
        power: LLValue = base
        for bit in range(ty.width - 1):  # the sign bit only matters for negative exponents
            set_ = b.icmp_unsigned("!=", b.and_(exp, const(ty, 1 << bit)), zero)
            result = b.select(set_, b.mul(result, power), result)
            power = b.mul(power, power)
        odd = b.icmp_unsigned("!=", b.and_(exp, one), zero)
        minus_one = const(ty, -1)
        negative = b.select(
            b.icmp_signed("==", base, one),
            one,
            b.select(b.icmp_signed("==", base, minus_one), b.select(odd, minus_one, one), zero),
        )
        b.ret(b.select(b.icmp_signed("<", exp, zero), negative, result))
        return fn
