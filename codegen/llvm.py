"""Print the loop level (func/scf/memref/arith/math) as an `llvmlite.ir.Module`.

This is a printer: it walks the xDSL IR once and never rewrites it. `emit_llvm(module)` gives the LLVM module,
`kernel_specs(module)` what a caller needs to know to run its kernels (argument layouts, which arguments are
written, how far the kernel can be split over threads).

Kernel ABI. Every `func.func @name` becomes two functions:

    define void @name(ptr %args, i64 %begin, i64 %end)       ; loads args[0..N-1], calls the body
    define internal void @"__cvmc_body.name"(ptr noalias %arg0, ..., ptr noalias %argN-1, i64 %begin, i64 %end)

The exported entry takes one array of N pointers whatever N is (a C caller, ctypes included, limits the number
of arguments: ctypes to 1,024), loads them and calls the body, which is `noinline` so that it keeps its `noalias`,
`align` and `dereferenceable` parameters: the optimizer sees the same body as with direct arguments, and a call
costs one extra call.

A memref argument is passed as its *base* pointer: element `(i0, ..., ik)` of a memref with static strides `s` and
offset `o` lives at `base + o + sum(i * s)` elements (MLIR's aligned pointer; for the identity layout `o` is 0
and `s` the row-major strides). The kernel splits its work into `trip` units (see `KernelSpec.trip`) and runs
the units in `[max(begin, 0), min(end, trip))`:
- a kernel whose top level is one `scf.parallel` with constant bounds, next to ops that neither write memory nor
  hold regions, is *splittable*: a unit is one iteration of that loop's first dimension, `trip` its iteration
  count, so calls on disjoint ranges can run on several threads at once;
- any other kernel has `trip == 1` and runs everything when `begin <= 0 < end`.
Calling `name(args..., 0, trip)` always runs the whole kernel. A kernel named like a C library function that
generated code may call (`erf`, `free`, `memcpy`, ...) is emitted as `@"name.kernel"` (`KernelSpec.symbol`).

Values. An index is an i64. An i1 is an `i1` in registers and an `i8` (0 or 1) in memory; a load of i1 reads
`byte != 0`. A memref value is its base pointer; views (`subview`, `reinterpret_cast`, `cast`) keep the base
pointer and read their static strides and offset from the result type. Addresses are one `getelementptr` per
access (never ptrtoint arithmetic), so LLVM sees the loop structure and vectorizes.

Integer semantics are total, as the loop level promises (no trap, no poison, branch free): division and
remainder by zero give 0, INT_MIN / -1 gives INT_MIN and INT_MIN % -1 gives 0, a shift amount outside
[0, bits - 1] gives 0 for shli and shrui and the sign fill for shrsi, fptosi / fptoui saturate (NaN gives 0).
x86 has no vector integer division, so an 8- to 32-bit division by a non-constant is done, exactly, in f32 or f64
(see `_float_division_type`): such loops vectorize too.

Allocation: `memref.alloca` becomes an `alloca` in the entry block (so it runs once per call, on the caller's
thread stack), `memref.alloc` / `memref.dealloc` call `aligned_alloc` (64 bytes) and `free`. `scf.parallel` runs
as nested sequential loops inside one call.

The x86 micro-kernel ops (`cvmc.dot_u8s8`, `cvmc.mmk_*`, `cvmc.pack_tile`) are printed by `codegen.llvm_x86`;
types, constants and module declarations shared with it are in `codegen.llvm_module`.

Run `python -m cvmc.codegen.llvm FILE.mlir` to print the LLVM IR of a loop-level file.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from llvmlite import ir
from xdsl.dialects import arith, func, math, memref, scf
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from cvmc.codegen import llvm_x86
from cvmc.codegen.abi import KernelArg, KernelSpec, row_major_strides
from cvmc.codegen.llvm_module import (
    I1,
    I8,
    I64,
    PTR,
    VOID,
    LLValue,
    ModuleEmitter,
    byte_size,
    const,
    element_name,
    emit_loop,
    is_const,
    memory_type,
    suffix,
    value_type,
)
from cvmc.codegen.loop_ir import VIEW_OPS, constant_int, op_name, static_layout
from cvmc.dialects.cvmc import (
    DotU8S8Op,
    IndexCastUIOp,
    IsFiniteOp,
    IsInfOp,
    IsNanOp,
    MmkI16Op,
    MmkU8S8Op,
    PackTileOp,
    RemFOp,
)
from cvmc.dialects.narrow import is_memref
from cvmc.errors import CVMRuntimeError

# Bytes of alignment for `memref.alloc` buffers and `memref.alloca` slots (one AVX-512 register, one cache line).
_BUFFER_ALIGN = 64


# --------------------------------------------------------------------------------------------------------------
# What a caller needs to know about a kernel
# --------------------------------------------------------------------------------------------------------------


def kernel_specs(module: ModuleOp) -> dict[str, KernelSpec]:
    """The `KernelSpec` of every kernel of `module`, by name, in module order."""
    specs: dict[str, KernelSpec] = {}
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.body.blocks:
            specs[op.sym_name.data] = _kernel_spec(op)
    return specs


def _kernel_spec(op: func.FuncOp) -> KernelSpec:
    block = op.body.block
    written = _written_args(op)
    args: list[KernelArg] = []
    for arg in block.args:
        if not is_memref(arg.type):
            raise CVMRuntimeError(f"kernel '{op.sym_name.data}': expected memref arguments, got {arg.type}")
        shape, strides, offset = static_layout(arg.type)
        args.append(KernelArg(shape, element_name(arg.type.element_type), strides, offset, arg in written))
    split = _split_loop(op)
    trip = 1 if split is None else split[1]
    return KernelSpec(op.sym_name.data, tuple(args), trip, split is not None)


def _written_args(op: func.FuncOp) -> set[SSAValue]:
    """Arguments that a store or copy writes through (directly or through a view)."""
    written: set[SSAValue] = set()
    for inner in op.walk():
        if isinstance(inner, memref.StoreOp | memref.CopyOp):
            target = inner.operands[1]
        elif isinstance(inner, PackTileOp):
            target = inner.operands[inner.split.value.data]
        else:
            continue
        while isinstance(target.owner, Operation) and type(target.owner) in VIEW_OPS:
            target = target.owner.operands[0]
        written.add(target)
    return written


def _split_loop(op: func.FuncOp) -> tuple[scf.ParallelOp, int] | None:
    """The top-level scf.parallel whose first dimension may be split over threads, and its trip count."""
    ops = list(op.body.block.ops)
    loops = [o for o in ops if isinstance(o, scf.ParallelOp)]
    if len(loops) != 1:
        return None
    loop = loops[0]
    for other in ops:
        if other is loop:
            continue
        if other.regions or type(other) in (memref.StoreOp, memref.CopyOp):
            return None
    if loop.initVals:
        return None
    lb, ub, step = (constant_int(v[0]) for v in (loop.lowerBound, loop.upperBound, loop.step))
    if lb is None or ub is None or step is None or step <= 0:
        return None
    return loop, max(0, -(-(ub - lb) // step))


# --------------------------------------------------------------------------------------------------------------
# Types and layouts
# --------------------------------------------------------------------------------------------------------------



# --------------------------------------------------------------------------------------------------------------
# Op tables
# --------------------------------------------------------------------------------------------------------------

_INT_BINARY: dict[type[Operation], str] = {
    arith.AddiOp: "add",
    arith.SubiOp: "sub",
    arith.MuliOp: "mul",
    arith.AndIOp: "and_",
    arith.OrIOp: "or_",
    arith.XOrIOp: "xor",
}
_FLOAT_BINARY: dict[type[Operation], str] = {
    arith.AddfOp: "fadd",
    arith.SubfOp: "fsub",
    arith.MulfOp: "fmul",
    arith.DivfOp: "fdiv",
    RemFOp: "frem",
}
_CASTS: dict[type[Operation], str] = {
    arith.ExtSIOp: "sext",
    arith.ExtUIOp: "zext",
    arith.TruncIOp: "trunc",
    arith.SIToFPOp: "sitofp",
    arith.UIToFPOp: "uitofp",
    arith.ExtFOp: "fpext",
    arith.TruncFOp: "fptrunc",
    arith.BitcastOp: "bitcast",
}
# (signed, predicate) by the op's enum value.
_CMPI = {
    0: (True, "=="),
    1: (True, "!="),
    2: (True, "<"),
    3: (True, "<="),
    4: (True, ">"),
    5: (True, ">="),
    6: (False, "<"),
    7: (False, "<="),
    8: (False, ">"),
    9: (False, ">="),
}
_CMPF = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une", "uno",
         "true")  # fmt: skip
_MIN_MAX_INT: dict[type[Operation], tuple[bool, str]] = {
    arith.MinSIOp: (True, "<"),
    arith.MaxSIOp: (True, ">"),
    arith.MinUIOp: (False, "<"),
    arith.MaxUIOp: (False, ">"),
}
# Float ops that are one LLVM intrinsic `llvm.<name>.<f32|f64>`.
_FLOAT_INTRINSICS: dict[type[Operation], str] = {
    math.AbsFOp: "fabs",
    math.ExpOp: "exp",
    math.Exp2Op: "exp2",
    math.LogOp: "log",
    math.Log2Op: "log2",
    math.Log10Op: "log10",
    math.SqrtOp: "sqrt",
    math.SinOp: "sin",
    math.CosOp: "cos",
    math.TanOp: "tan",
    math.AsinOp: "asin",
    math.AcosOp: "acos",
    math.AtanOp: "atan",
    math.SinhOp: "sinh",
    math.CoshOp: "cosh",
    math.TanhOp: "tanh",
    math.FloorOp: "floor",
    math.CeilOp: "ceil",
    math.RoundOp: "round",  # half away from zero, as C's round
    math.RoundEvenOp: "roundeven",
    math.TruncOp: "trunc",
    math.PowFOp: "pow",
    math.Atan2Op: "atan2",
    math.CopySignOp: "copysign",
    math.FmaOp: "fma",
    arith.MinimumfOp: "minimum",
    arith.MaximumfOp: "maximum",
    arith.MinnumfOp: "minnum",
    arith.MaxnumfOp: "maxnum",
}
# Float ops without an intrinsic: calls to the C library (`erff` / `erf`), declared without side effects.
_LIBM: dict[type[Operation], str] = {
    math.ExpM1Op: "expm1",
    math.Log1pOp: "log1p",
    math.AsinhOp: "asinh",
    math.AcoshOp: "acosh",
    math.AtanhOp: "atanh",
    math.ErfOp: "erf",
    math.CbrtOp: "cbrt",
}
# Integer ops that are one intrinsic with a trailing `i1 false` (never poison).
_INT_INTRINSICS: dict[type[Operation], str] = {
    math.AbsIOp: "abs",
    math.CountLeadingZerosOp: "ctlz",
    math.CountTrailingZerosOp: "cttz",
}

_Handler = Callable[["KernelEmitter", Operation], None]
_HANDLERS: dict[type[Operation], _Handler] = {}  # by the op's class: one dispatch


def _handles(*ops: type[Operation]) -> Callable[[_Handler], _Handler]:
    def register(handler: _Handler) -> _Handler:
        for op in ops:
            _HANDLERS[op] = handler
        return handler

    return register


# The x86 micro-kernel ops, printed by `codegen.llvm_x86`.
_HANDLERS.update({DotU8S8Op: llvm_x86.dot_u8s8, MmkI16Op: llvm_x86.mmk, MmkU8S8Op: llvm_x86.mmk,
                  PackTileOp: llvm_x86.pack_tile})


# --------------------------------------------------------------------------------------------------------------
# The printer
# --------------------------------------------------------------------------------------------------------------


class KernelEmitter:
    """Prints one `func.func` as one LLVM function."""

    def __init__(self, mod: ModuleEmitter, op: func.FuncOp, spec: KernelSpec):
        self.mod = mod
        self.op = op
        self.spec = spec
        block = op.body.block
        params: list[Any] = [PTR] * len(block.args) + [I64, I64]
        self.fn = ir.Function(mod.module, ir.FunctionType(VOID, params), body_symbol(spec.symbol))
        self.fn.linkage = "internal"
        self.fn.attributes.add("nounwind")
        self.fn.attributes.add("noinline")
        for value, arg, karg in zip(self.fn.args, block.args, spec.args):
            value.name = f"arg{arg.index}"
            value.add_attribute("noalias")
            value.add_attribute("captures(none)")
            assert is_memref(arg.type)
            value.attributes.align = byte_size(memory_type(arg.type.element_type))
            lo, hi = karg.element_span()
            if lo == 0 and hi > 0:
                value.attributes.dereferenceable = hi * value.attributes.align
        self.begin, self.end = self.fn.args[-2:]
        self.begin.name, self.end.name = "begin", "end"
        entry = self.fn.append_basic_block("entry")
        self.b: Any = ir.IRBuilder(entry)
        self.allocas: Any = ir.IRBuilder(entry)  # inserts at the start of the entry block, in order
        self.allocas.position_at_start(entry)
        self.values: dict[SSAValue, LLValue] = dict(zip(block.args, self.fn.args))
        split = _split_loop(op)
        self.split_loop = split[0] if split is not None else None

    def emit(self) -> None:
        self._emit_entry()
        self._emit_body()

    def _emit_entry(self) -> None:
        """The exported kernel: load the argument pointers from the table and call the body with them."""
        count = len(self.spec.args)
        fn = ir.Function(self.mod.module, ir.FunctionType(VOID, [PTR, I64, I64]), self.spec.symbol)
        fn.attributes.add("nounwind")
        table, begin, end = fn.args
        table.name, begin.name, end.name = "args", "begin", "end"
        if count:
            table.add_attribute("captures(none)")
            table.attributes.align = 8
            table.attributes.dereferenceable = 8 * count
        b: Any = ir.IRBuilder(fn.append_basic_block("entry"))
        pointers = []
        for i in range(count):
            slot = table if i == 0 else b.gep(table, [const(I64, i)], inbounds=True, source_etype=PTR)
            load = b.load(slot, name=f"arg{i}", typ=PTR)
            load.align = 8
            pointers.append(load)
        b.call(self.fn, [*pointers, begin, end], tail=True)
        b.ret_void()

    def _emit_body(self) -> None:
        block = self.op.body.block
        if self.split_loop is None:
            # One unit of work: run when 0 is in [begin, end).
            run = self.b.and_(
                self.b.icmp_signed("<=", self.begin, const(I64, 0)),
                self.b.icmp_signed(">", self.end, const(I64, 0)),
            )
            entry = self.b.block
            body = self.fn.append_basic_block("body")
            self.b.position_at_end(body)
            self._emit_ops(block)
            done = self.fn.append_basic_block("done")
            self.b.position_at_end(entry)
            self.b.cbranch(run, body, done)
            self.b.position_at_end(done)
            self.b.ret_void()
        else:
            self._emit_ops(block)

    # ---- structure ---------------------------------------------------------------------------------------

    def _emit_ops(self, block: Block) -> list[LLValue]:
        """Emit every op of `block` but its terminator; return the terminator's operand values."""
        result: list[LLValue] = []
        for op in block.ops:
            kind = type(op)
            if kind in (scf.YieldOp, scf.ReduceOp):
                result = [self.values[v] for v in op.operands]
                if kind is scf.ReduceOp and op.operands:
                    raise CVMRuntimeError("scf.parallel reductions are not part of the loop level")
                continue
            if kind is func.ReturnOp:
                self.b.ret_void()
                continue
            handler = _HANDLERS.get(kind)
            if handler is None:
                raise CVMRuntimeError(f"llvm codegen: unsupported op '{op_name(op)}'")
            handler(self, op)
        return result

    def _operands(self, op: Operation) -> list[LLValue]:
        return [self.values[v] for v in op.operands]

    def _set(self, op: Operation, value: LLValue) -> None:
        self.values[op.results[0]] = value

    def loop(
        self,
        lb: LLValue,
        ub: LLValue,
        step: LLValue,
        inits: Sequence[LLValue],
        body: Callable[[LLValue, list[LLValue]], list[LLValue]],
        kind: str = "for",
    ) -> list[LLValue]:
        """`emit_loop` in this kernel's function, at the builder's position."""
        return emit_loop(self.b, self.fn, lb, ub, step, inits, body, kind)

    def _run_region(self, block: Block, args: Sequence[LLValue]) -> list[LLValue]:
        for arg, value in zip(block.args, args):
            self.values[arg] = value
        return self._emit_ops(block)

    @_handles(scf.ForOp)
    def _for(self, op: Operation) -> None:
        lb, ub, step, *inits = self._operands(op)
        block = op.regions[0].block
        results = self.loop(lb, ub, step, inits, lambda iv, carried: self._run_region(block, [iv, *carried]))
        for res, value in zip(op.results, results):
            self.values[res] = value

    @_handles(scf.ParallelOp)
    def _parallel(self, op: Operation) -> None:
        assert isinstance(op, scf.ParallelOp)
        block = op.body.block
        lbs = [self.values[v] for v in op.lowerBound]
        ubs = [self.values[v] for v in op.upperBound]
        steps = [self.values[v] for v in op.step]
        ivs: list[LLValue] = []

        def nest(dim: int) -> None:
            if dim == len(lbs):
                self._run_region(block, ivs)
                return
            if dim == 0 and op is self.split_loop:
                # The units [max(begin, 0), min(end, trip)) of the first dimension: iv = lb + unit * step.
                zero, trip = const(I64, 0), const(I64, self.spec.trip)
                first = self.b.select(self.b.icmp_signed(">", self.begin, zero), self.begin, zero, name="first")
                last = self.b.select(self.b.icmp_signed("<", self.end, trip), self.end, trip, name="last")

                def unit_body(unit: LLValue, _: list[LLValue]) -> list[LLValue]:
                    iv = unit if is_const(steps[0], 1) else self.b.mul(unit, steps[0], flags=["nsw"])
                    ivs.append(iv if is_const(lbs[0], 0) else self.b.add(lbs[0], iv, flags=["nsw"]))
                    nest(1)
                    ivs.pop()
                    return []

                self.loop(first, last, const(I64, 1), [], unit_body, "par")
                return

            def dim_body(iv: LLValue, _: list[LLValue]) -> list[LLValue]:
                ivs.append(iv)
                nest(dim + 1)
                ivs.pop()
                return []

            self.loop(lbs[dim], ubs[dim], steps[dim], [], dim_body, "par")

        nest(0)

    @_handles(scf.IfOp)
    def _if(self, op: Operation) -> None:
        cond = self.values[op.operands[0]]
        then_region, else_region = op.regions
        start = self.b.block
        incoming: list[tuple[list[LLValue], ir.Block]] = []
        then_bb = self.fn.append_basic_block("if.then")
        self.b.position_at_end(then_bb)
        incoming.append((self._emit_ops(then_region.block), self.b.block))
        else_bb: ir.Block | None = None
        if else_region.blocks:
            else_bb = self.fn.append_basic_block("if.else")
            self.b.position_at_end(else_bb)
            incoming.append((self._emit_ops(else_region.block), self.b.block))
        merge = self.fn.append_basic_block("if.end")
        for _, end_block in incoming:
            self.b.position_at_end(end_block)
            self.b.branch(merge)
        self.b.position_at_end(start)
        self.b.cbranch(cond, then_bb, else_bb if else_bb is not None else merge)
        self.b.position_at_end(merge)
        for i, res in enumerate(op.results):
            phi = self.b.phi(value_type(res.type))
            for values, end_block in incoming:
                phi.add_incoming(values[i], end_block)
            self.values[res] = phi

    # ---- memory ------------------------------------------------------------------------------------------

    def _address(self, t: Attribute, base: LLValue, indices: Sequence[LLValue]) -> LLValue:
        """One GEP: base + offset + sum(index * stride), in elements of the memref type `t`."""
        assert is_memref(t)
        _, strides, offset = static_layout(t)
        linear: LLValue | None = None
        for index, stride in zip(indices, strides):
            if stride == 0:
                continue
            term = index if stride == 1 else self.b.mul(index, const(I64, stride), flags=["nsw"])
            linear = term if linear is None else self.b.add(linear, term, flags=["nsw"])
        if offset:
            off = const(I64, offset)
            linear = off if linear is None else self.b.add(linear, off, flags=["nsw"])
        if linear is None:
            return base
        return self.b.gep(base, [linear], inbounds=True, source_etype=memory_type(t.element_type))

    def access(self, memref_value: SSAValue, indices: Sequence[SSAValue]) -> tuple[LLValue, ir.Type]:
        """The address of a load or store and the element's memory type."""
        t = memref_value.type
        assert is_memref(t)
        address = self._address(t, self.values[memref_value], [self.values[i] for i in indices])
        return address, memory_type(t.element_type)

    @_handles(memref.LoadOp)
    def _load(self, op: Operation) -> None:
        memref_value, *indices = op.operands
        address, ty = self.access(memref_value, indices)
        value = self.b.load(address, typ=ty, align=byte_size(ty))
        if value_type(op.results[0].type) == I1:
            value = self.b.icmp_unsigned("!=", value, const(I8, 0))
        self._set(op, value)

    @_handles(memref.StoreOp)
    def _store(self, op: Operation) -> None:
        value_ssa, memref_value, *indices = op.operands
        value = self.values[value_ssa]
        if value.type == I1:
            value = self.b.zext(value, I8)
        address, ty = self.access(memref_value, indices)
        self.b.store(value, address, align=byte_size(ty))

    def _buffer_bytes(self, t: MemRefType) -> int:
        shape, strides, offset = static_layout(t)
        lo, hi = KernelArg(shape, "", strides, offset, False).element_span()
        if lo < 0:
            raise CVMRuntimeError(f"expected a layout with non-negative element indices, got {t}")
        return hi * byte_size(memory_type(t.element_type))

    @_handles(memref.AllocaOp)
    def _alloca(self, op: Operation) -> None:
        t = op.results[0].type
        assert is_memref(t)
        slot = self.allocas.alloca(ir.ArrayType(I8, max(1, self._buffer_bytes(t))))
        slot.align = _BUFFER_ALIGN
        slot.type = PTR  # llvmlite types allocas as typed pointers; LLVM's are opaque
        self._set(op, slot)

    @_handles(memref.AllocOp)
    def _alloc(self, op: Operation) -> None:
        t = op.results[0].type
        assert is_memref(t)
        size = -(-max(1, self._buffer_bytes(t)) // _BUFFER_ALIGN) * _BUFFER_ALIGN
        aligned_alloc = self.mod.function("aligned_alloc", PTR, [I64, I64], ("nounwind",))
        self._set(op, self.b.call(aligned_alloc, [const(I64, _BUFFER_ALIGN), const(I64, size)]))

    @_handles(memref.DeallocOp)
    def _dealloc(self, op: Operation) -> None:
        free = self.mod.function("free", VOID, [PTR], ("nounwind",))
        self.b.call(free, [self.values[op.operands[0]]])

    @_handles(*VIEW_OPS)
    def _view(self, op: Operation) -> None:
        """A view keeps the base pointer; only a result type whose offset disagrees with the view's own moves it."""
        source = op.operands[0]
        src_t, res_t = source.type, op.results[0].type
        assert is_memref(src_t) and is_memref(res_t)
        _, src_strides, src_offset = static_layout(src_t)
        _, _, res_offset = static_layout(res_t)
        kind = type(op)
        if kind is memref.CastOp:
            element_offset = src_offset
        else:
            if len(op.operands) != 1:
                raise CVMRuntimeError(f"expected static offsets, sizes and strides in {op_name(op)}")
            assert isinstance(op, memref.SubviewOp | memref.ReinterpretCastOp)
            values = op.static_offsets.get_values()
            if kind is memref.SubviewOp:
                element_offset = src_offset + sum(o * s for o, s in zip(values, src_strides))
            else:  # reinterpret_cast: relative to the base pointer
                element_offset = values[0]
        base = self.values[source]
        delta = element_offset - res_offset
        if delta:
            base = self.b.gep(base, [const(I64, delta)], source_etype=memory_type(res_t.element_type))
        self._set(op, base)

    @_handles(memref.CopyOp)
    def _copy(self, op: Operation) -> None:
        source, target = op.operands
        src_t, dst_t = source.type, target.type
        assert is_memref(src_t) and is_memref(dst_t)
        shape, src_strides, _ = static_layout(src_t)
        _, dst_strides, _ = static_layout(dst_t)
        ty = memory_type(src_t.element_type)
        size = byte_size(ty)
        if src_strides == dst_strides == row_major_strides(shape):
            count = 1
            for n in shape:
                count *= n
            memcpy = self.mod.function("llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, I1])
            src = self._address(src_t, self.values[source], [])
            dst = self._address(dst_t, self.values[target], [])
            self.b.call(memcpy, [dst, src, const(I64, count * size), const(I1, 0)])
            return
        src_base, dst_base = self.values[source], self.values[target]
        ivs: list[LLValue] = []

        def nest(dim: int) -> None:
            if dim == len(shape):
                value = self.b.load(self._address(src_t, src_base, ivs), typ=ty, align=size)
                self.b.store(value, self._address(dst_t, dst_base, ivs), align=size)
                return

            def body(iv: LLValue, _: list[LLValue]) -> list[LLValue]:
                ivs.append(iv)
                nest(dim + 1)
                ivs.pop()
                return []

            self.loop(const(I64, 0), const(I64, shape[dim]), const(I64, 1), [], body, "copy")

        nest(0)

    # ---- arith -------------------------------------------------------------------------------------------

    @_handles(arith.ConstantOp)
    def _constant(self, op: Operation) -> None:
        assert isinstance(op, arith.ConstantOp)
        attr = op.value
        ty = value_type(op.results[0].type)
        if isinstance(attr, IntegerAttr):
            self._set(op, const(ty, attr.value.data))
        elif isinstance(attr, FloatAttr):
            self._set(op, const(ty, attr.value.data))
        else:
            raise CVMRuntimeError(f"unsupported arith.constant value {attr}")

    @_handles(*_INT_BINARY, *_FLOAT_BINARY)
    def _binary(self, op: Operation) -> None:
        kind = type(op)
        method = _INT_BINARY.get(kind) or _FLOAT_BINARY[kind]
        self._set(op, getattr(self.b, method)(*self._operands(op)))

    @_handles(arith.NegfOp)
    def _negf(self, op: Operation) -> None:
        self._set(op, self.b.fneg(self.values[op.operands[0]]))

    @_handles(*_CASTS)
    def _cast(self, op: Operation) -> None:
        method = _CASTS[type(op)]
        self._set(op, getattr(self.b, method)(self.values[op.operands[0]], value_type(op.results[0].type)))

    @_handles(arith.IndexCastOp, IndexCastUIOp)
    def _index_cast(self, op: Operation) -> None:
        value = self.values[op.operands[0]]
        ty = value_type(op.results[0].type)
        assert isinstance(value.type, ir.IntType) and isinstance(ty, ir.IntType)
        if ty.width < value.type.width:
            value = self.b.trunc(value, ty)
        elif ty.width > value.type.width:
            value = (self.b.zext if type(op) is IndexCastUIOp else self.b.sext)(value, ty)
        self._set(op, value)

    @_handles(arith.FPToSIOp, arith.FPToUIOp)
    def _fptoi(self, op: Operation) -> None:
        value = self.values[op.operands[0]]
        ty = value_type(op.results[0].type)
        kind = "fptosi" if type(op) is arith.FPToSIOp else "fptoui"
        fn = self.mod.function(f"llvm.{kind}.sat.{suffix(ty)}.{suffix(value.type)}", ty, [value.type])
        self._set(op, self.b.call(fn, [value]))

    @_handles(arith.CmpiOp)
    def _cmpi(self, op: Operation) -> None:
        assert isinstance(op, arith.CmpiOp)
        signed, pred = _CMPI[op.predicate.value.data]
        compare = self.b.icmp_signed if signed else self.b.icmp_unsigned
        self._set(op, compare(pred, *self._operands(op)))

    @_handles(arith.CmpfOp)
    def _cmpf(self, op: Operation) -> None:
        assert isinstance(op, arith.CmpfOp)
        self._set(op, self.b.fcmp_ordered(_CMPF[op.predicate.value.data], *self._operands(op)))

    @_handles(arith.SelectOp)
    def _select(self, op: Operation) -> None:
        self._set(op, self.b.select(*self._operands(op)))

    @_handles(*_MIN_MAX_INT)
    def _min_max(self, op: Operation) -> None:
        a, b = self._operands(op)
        signed, pred = _MIN_MAX_INT[type(op)]
        take_a = (self.b.icmp_signed if signed else self.b.icmp_unsigned)(pred, a, b)
        self._set(op, self.b.select(take_a, a, b))

    # Division, remainder and shifts: total and branch free (see the module docstring).

    def _safe_divisor(self, a: LLValue, b: LLValue, signed: bool) -> tuple[LLValue, LLValue]:
        """(b == 0, divisor): the divisor is 1 where b is 0 or, if signed, where a / b overflows."""
        ty = b.type
        assert isinstance(ty, ir.IntType)
        by_zero = self.b.icmp_unsigned("==", b, const(ty, 0))
        bad = by_zero
        if signed:
            overflow = self.b.and_(
                self.b.icmp_unsigned("==", a, const(ty, -(1 << (ty.width - 1)))),
                self.b.icmp_unsigned("==", b, const(ty, -1)),
            )
            bad = self.b.or_(by_zero, overflow)
        return by_zero, self.b.select(bad, const(ty, 1), b)

    def _float_division_type(self, a: LLValue, b: LLValue) -> Any:
        """The float type to divide `a` by `b` in, or None to use integer division.

        x86 has no vector integer division. For 8- to 32-bit operands and a divisor that is not a constant,
        dividing in floating point (f32 up to 16 bits, f64 up to 32 bits) is exact: |a| < 2**p (p the
        significand's bits) bounds the rounding error of the quotient, |a / d| * 2**-p, below 1 / |d|, the least
        distance from a non-integer quotient to an integer. Such loops vectorize (scalar idiv does not); constant
        divisors stay integer divisions, which LLVM turns into multiplications."""
        ty = a.type
        assert isinstance(ty, ir.IntType)
        if isinstance(b, ir.Constant) or not 8 <= ty.width <= 32:
            return None
        return ir.FloatType() if ty.width <= 16 else ir.DoubleType()

    def _quotient(self, a: LLValue, b: LLValue, divisor: LLValue, signed: bool) -> LLValue:
        """`a / divisor` truncated, for a divisor that is never 0 and never overflows (`b` is the original)."""
        fty = self._float_division_type(a, b)
        if fty is None:
            return (self.b.sdiv if signed else self.b.udiv)(a, divisor)
        to_float = self.b.sitofp if signed else self.b.uitofp
        ratio = self.b.fdiv(to_float(a, fty), to_float(divisor, fty))
        return (self.b.fptosi if signed else self.b.fptoui)(ratio, a.type)

    def _remainder(self, a: LLValue, b: LLValue, divisor: LLValue, signed: bool, quotient: LLValue = None) -> LLValue:
        """`a % divisor` (sign of `a`), reusing `quotient` where the division is done in floating point."""
        if self._float_division_type(a, b) is None:
            return (self.b.srem if signed else self.b.urem)(a, divisor)
        if quotient is None:
            quotient = self._quotient(a, b, divisor, signed)
        return self.b.sub(a, self.b.mul(quotient, divisor))

    @_handles(arith.DivSIOp, arith.DivUIOp)
    def _div(self, op: Operation) -> None:
        a, b = self._operands(op)
        signed = type(op) is arith.DivSIOp
        by_zero, divisor = self._safe_divisor(a, b, signed)
        quotient = self._quotient(a, b, divisor, signed)
        self._set(op, self.b.select(by_zero, const(a.type, 0), quotient))

    @_handles(arith.RemSIOp, arith.RemUIOp)
    def _rem(self, op: Operation) -> None:
        a, b = self._operands(op)
        signed = type(op) is arith.RemSIOp
        _, divisor = self._safe_divisor(a, b, signed)  # x % 1 == 0 covers both b == 0 and INT_MIN % -1
        self._set(op, self._remainder(a, b, divisor, signed))

    @_handles(arith.FloorDivSIOp, arith.CeilDivSIOp, arith.CeilDivUIOp)
    def _round_div(self, op: Operation) -> None:
        a, b = self._operands(op)
        kind = type(op)
        signed = kind is not arith.CeilDivUIOp
        ty = a.type
        zero = const(ty, 0)
        by_zero, divisor = self._safe_divisor(a, b, signed)
        quotient = self._quotient(a, b, divisor, signed)
        rest = self._remainder(a, b, divisor, signed, quotient)
        inexact = self.b.icmp_unsigned("!=", rest, zero)
        if not signed:
            result = self.b.add(quotient, self.b.zext(inexact, ty))
        else:
            # The exact quotient is negative iff rest and divisor have different signs.
            negative = self.b.icmp_signed("<", self.b.xor(rest, divisor), zero)
            if kind is arith.FloorDivSIOp:
                result = self.b.sub(quotient, self.b.zext(self.b.and_(inexact, negative), ty))
            else:
                result = self.b.add(quotient, self.b.zext(self.b.and_(inexact, self.b.not_(negative)), ty))
        self._set(op, self.b.select(by_zero, zero, result))

    @_handles(arith.ShLIOp, arith.ShRUIOp, arith.ShRSIOp)
    def _shift(self, op: Operation) -> None:
        a, b = self._operands(op)
        ty = a.type
        assert isinstance(ty, ir.IntType)
        in_range = self.b.icmp_unsigned("<", b, const(ty, ty.width))
        kind = type(op)
        if kind is arith.ShRSIOp:
            self._set(op, self.b.ashr(a, self.b.select(in_range, b, const(ty, ty.width - 1))))
            return
        shifted = (self.b.shl if kind is arith.ShLIOp else self.b.lshr)(a, b)
        self._set(op, self.b.select(in_range, shifted, const(ty, 0)))

    # ---- math --------------------------------------------------------------------------------------------

    @_handles(*_FLOAT_INTRINSICS)
    def _float_intrinsic(self, op: Operation) -> None:
        args = self._operands(op)
        fn = self.mod.intrinsic(_FLOAT_INTRINSICS[type(op)], args[0].type, len(args))
        self._set(op, self.b.call(fn, args))

    @_handles(*_LIBM)
    def _libm(self, op: Operation) -> None:
        (x,) = self._operands(op)
        self._set(op, self.b.call(self.mod.libm(_LIBM[type(op)], x.type), [x]))

    @_handles(math.FPowIOp)
    def _fpowi(self, op: Operation) -> None:
        x, n = self._operands(op)
        exponent = self.b.sitofp(n, x.type)
        self._set(op, self.b.call(self.mod.intrinsic("pow", x.type, 2), [x, exponent]))

    @_handles(math.RsqrtOp)
    def _rsqrt(self, op: Operation) -> None:
        (x,) = self._operands(op)
        root = self.b.call(self.mod.intrinsic("sqrt", x.type, 1), [x])
        self._set(op, self.b.fdiv(const(x.type, 1.0), root))

    @_handles(IsNanOp, IsInfOp, IsFiniteOp)
    def _float_class(self, op: Operation) -> None:
        (x,) = self._operands(op)
        kind = type(op)
        if kind is IsNanOp:
            self._set(op, self.b.fcmp_unordered("uno", x, x))
            return
        magnitude = self.b.call(self.mod.intrinsic("fabs", x.type, 1), [x])
        inf = const(x.type, float("inf"))
        self._set(op, self.b.fcmp_ordered("==" if kind is IsInfOp else "!=", magnitude, inf))

    @_handles(*_INT_INTRINSICS)
    def _int_intrinsic(self, op: Operation) -> None:
        (x,) = self._operands(op)
        name = f"llvm.{_INT_INTRINSICS[type(op)]}.{suffix(x.type)}"
        fn = self.mod.function(name, x.type, [x.type, I1])
        self._set(op, self.b.call(fn, [x, const(I1, 0)]))

    @_handles(math.CtPopOp)
    def _ctpop(self, op: Operation) -> None:
        (x,) = self._operands(op)
        self._set(op, self.b.call(self.mod.intrinsic("ctpop", x.type, 1), [x]))

    @_handles(math.IPowIOp)
    def _ipowi(self, op: Operation) -> None:
        base, exp = self._operands(op)
        assert isinstance(base.type, ir.IntType)
        self._set(op, self.b.call(self.mod.ipowi(base.type), [base, exp]))


def body_symbol(symbol: str) -> str:
    """The internal function holding the body of the kernel exported as `symbol` (`__cvmc_` names are reserved:
    no kernel symbol starts with it)."""
    return f"__cvmc_body.{symbol}"


def emit_llvm(module: ModuleOp) -> ir.Module:
    """The LLVM module of a loop-level `module` (every `func.func` with a body becomes a kernel)."""
    name = module.sym_name.data if module.sym_name is not None else "cvmc"
    mod = ModuleEmitter(name)
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.body.blocks:
            KernelEmitter(mod, op, _kernel_spec(op)).emit()
    return mod.module


def parse_loop_level(text: str) -> ModuleOp:
    """Parse and verify loop-level MLIR text (ops missing from xDSL, like `math.isnan`, in generic form)."""
    from xdsl.context import Context
    from xdsl.dialects import builtin, gpu, math
    from xdsl.parser import Parser

    from cvmc.dialects import register_all_dialects

    ctx = Context(allow_unregistered=True)
    for dialect in (builtin.Builtin, func.Func, scf.Scf, arith.Arith, memref.MemRef, math.Math, gpu.GPU):
        ctx.load_dialect(dialect)
    register_all_dialects(ctx)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m cvmc.codegen.llvm FILE.mlir`: print the LLVM IR of a loop-level file ('-' reads stdin)."""
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) != 1:
        sys.exit("usage: python -m cvmc.codegen.llvm FILE.mlir")
    text = sys.stdin.read() if args[0] == "-" else open(args[0]).read()
    print(emit_llvm(parse_loop_level(text)), end="")


if __name__ == "__main__":
    main()
