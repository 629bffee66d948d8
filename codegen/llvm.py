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

Run `python -m cvmc.codegen.llvm FILE.mlir` to print the LLVM IR of a loop-level file.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from llvmlite import ir
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnregisteredOp,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from cvmc.codegen.abi import KernelArg, KernelSpec, row_major_strides
from cvmc.codegen.loop_ir import constant_int, static_layout
from cvmc.errors import CVMRuntimeError

# An llvmlite value. llvmlite ships no type information (its builder methods are wrapped by decorators that hide
# their signatures from a type checker), so values and builders are `Any` here.
_Value = Any

_I1 = ir.IntType(1)
_I8 = ir.IntType(8)
_I16 = ir.IntType(16)
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_PTR = ir.PointerType()


class _AmxTile(ir.Type):
    """LLVM's `x86_amx`: an AMX tile register's value (only the `.internal` tile intrinsics take it)."""

    def _to_string(self) -> str:
        return "x86_amx"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _AmxTile)

    def __hash__(self) -> int:
        return hash("x86_amx")


_AMX_TILE = _AmxTile()
_VOID = ir.VoidType()

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
        if not isinstance(arg.type, MemRefType):
            raise CVMRuntimeError(f"kernel '{op.sym_name.data}': expected memref arguments, got {arg.type}")
        shape, strides, offset = static_layout(arg.type)
        args.append(KernelArg(shape, _element_name(arg.type.element_type), strides, offset, arg in written))
    split = _split_loop(op)
    trip = 1 if split is None else split[1]
    return KernelSpec(op.sym_name.data, tuple(args), trip, split is not None)


def _written_args(op: func.FuncOp) -> set[SSAValue]:
    """Arguments that a store or copy writes through (directly or through a view)."""
    written: set[SSAValue] = set()
    for inner in op.walk():
        name = _op_name(inner)
        if name == "memref.store":
            target = inner.operands[1]
        elif name == "memref.copy":
            target = inner.operands[1]
        elif name == "cvmc.pack_tile":
            target = inner.operands[_int_attr(inner, "split")]
        else:
            continue
        while isinstance(target.owner, Operation) and _op_name(target.owner) in _VIEW_OPS:
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
        if other.regions or _op_name(other) in ("memref.store", "memref.copy"):
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


def _element_name(t: Attribute) -> str:
    if isinstance(t, IntegerType) and t.width.data in (1, 8, 16, 32, 64):
        return f"i{t.width.data}"
    if isinstance(t, Float32Type):
        return "f32"
    if isinstance(t, Float64Type):
        return "f64"
    raise CVMRuntimeError(f"expected a memref element type in i1, i8, i16, i32, i64, f32, f64, got {t}")


def _value_type(t: Attribute) -> ir.Type:
    """The LLVM type of an SSA value of type `t` (in registers)."""
    if isinstance(t, IntegerType):
        return ir.IntType(t.width.data)
    if isinstance(t, IndexType):
        return _I64
    if isinstance(t, Float32Type):
        return ir.FloatType()
    if isinstance(t, Float64Type):
        return ir.DoubleType()
    if isinstance(t, MemRefType):
        return _PTR
    raise CVMRuntimeError(f"unsupported type {t}")


def _memory_type(t: Attribute) -> ir.Type:
    """The LLVM type of an element of type `t` in memory (i1 is a byte)."""
    ty = _value_type(t)
    return _I8 if ty == _I1 else ty


def _byte_size(ty: ir.Type) -> int:
    if isinstance(ty, ir.IntType):
        return max(1, ty.width // 8)
    return 4 if isinstance(ty, ir.FloatType) else 8


def _suffix(ty: ir.Type) -> str:
    """The overload suffix of an intrinsic for `ty`: i32, f32, f64."""
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    return "f32" if isinstance(ty, ir.FloatType) else "f64"


def _int_attr(op: Operation, name: str) -> int:
    """The value of an integer attribute of `op` (-1 when it has none)."""
    attr = op.attributes.get(name)
    return attr.value.data if isinstance(attr, IntegerAttr) else -1


def _const(ty: ir.Type, value: int | float | bool) -> ir.Constant:
    """An LLVM constant; integers are wrapped to the signed range of `ty`."""
    if isinstance(ty, ir.IntType):
        v = int(value)
        if ty.width == 1:
            return ir.Constant(ty, bool(v & 1))
        half = 1 << (ty.width - 1)
        return ir.Constant(ty, (v + half) % (2 * half) - half)
    return ir.Constant(ty, float(value))


def _is_const(value: _Value, number: int) -> bool:
    return isinstance(value, ir.Constant) and value.constant == number


def _op_name(op: Operation) -> str:
    """The op's name, also for ops parsed as unregistered (e.g. `math.isnan`, `arith.remf` in xDSL 0.74)."""
    if isinstance(op, UnregisteredOp):
        return op.op_name.data
    return op.name


_VIEW_OPS = ("memref.subview", "memref.reinterpret_cast", "memref.cast")

# --------------------------------------------------------------------------------------------------------------
# Op tables
# --------------------------------------------------------------------------------------------------------------

_INT_BINARY = {
    "arith.addi": "add",
    "arith.subi": "sub",
    "arith.muli": "mul",
    "arith.andi": "and_",
    "arith.ori": "or_",
    "arith.xori": "xor",
}
_FLOAT_BINARY = {
    "arith.addf": "fadd",
    "arith.subf": "fsub",
    "arith.mulf": "fmul",
    "arith.divf": "fdiv",
    "arith.remf": "frem",
}
_CASTS = {
    "arith.extsi": "sext",
    "arith.extui": "zext",
    "arith.trunci": "trunc",
    "arith.sitofp": "sitofp",
    "arith.uitofp": "uitofp",
    "arith.extf": "fpext",
    "arith.truncf": "fptrunc",
    "arith.bitcast": "bitcast",
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
_MIN_MAX_INT = {
    "arith.minsi": (True, "<"),
    "arith.maxsi": (True, ">"),
    "arith.minui": (False, "<"),
    "arith.maxui": (False, ">"),
}
# Float ops that are one LLVM intrinsic `llvm.<name>.<f32|f64>`.
_FLOAT_INTRINSICS = {
    "math.absf": "fabs",
    "math.exp": "exp",
    "math.exp2": "exp2",
    "math.log": "log",
    "math.log2": "log2",
    "math.log10": "log10",
    "math.sqrt": "sqrt",
    "math.sin": "sin",
    "math.cos": "cos",
    "math.tan": "tan",
    "math.asin": "asin",
    "math.acos": "acos",
    "math.atan": "atan",
    "math.sinh": "sinh",
    "math.cosh": "cosh",
    "math.tanh": "tanh",
    "math.floor": "floor",
    "math.ceil": "ceil",
    "math.round": "round",  # half away from zero, as C's round
    "math.roundeven": "roundeven",
    "math.trunc": "trunc",
    "math.powf": "pow",
    "math.atan2": "atan2",
    "math.copysign": "copysign",
    "math.fma": "fma",
    "arith.minimumf": "minimum",
    "arith.maximumf": "maximum",
    "arith.minnumf": "minnum",
    "arith.maxnumf": "maxnum",
}
# Float ops without an intrinsic: calls to the C library (`erff` / `erf`), declared without side effects.
_LIBM = {
    "math.expm1": "expm1",
    "math.log1p": "log1p",
    "math.asinh": "asinh",
    "math.acosh": "acosh",
    "math.atanh": "atanh",
    "math.erf": "erf",
    "math.cbrt": "cbrt",
}
# Integer ops that are one intrinsic with a trailing `i1 false` (never poison).
_INT_INTRINSICS = {
    "math.absi": "abs",
    "math.ctlz": "ctlz",
    "math.cttz": "cttz",
}

_Handler = Callable[["_KernelEmitter", Operation], None]
_HANDLERS: dict[str, _Handler] = {}


def _handles(*names: str) -> Callable[[_Handler], _Handler]:
    def register(handler: _Handler) -> _Handler:
        for name in names:
            _HANDLERS[name] = handler
        return handler

    return register


# --------------------------------------------------------------------------------------------------------------
# The printer
# --------------------------------------------------------------------------------------------------------------


class _ModuleEmitter:
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

    def _kernel_function(self, name: str) -> ir.Function:
        """The module's internal function `name(a, b, acc, steps, row_stride, kh, stride_h, kw, stride_w,
        acc_stride)` of a micro-kernel, its pointers noalias: the one already built (it has blocks), else a new
        declaration for the caller to build."""
        existing = self.module.globals.get(name)
        if isinstance(existing, ir.Function):
            return existing
        fn = ir.Function(self.module, ir.FunctionType(_VOID, [_PTR] * 3 + [_I64] * 7), name)
        fn.linkage = "internal"
        for attr in ("nounwind", "noinline"):
            fn.attributes.add(attr)
        for arg in fn.args[:3]:
            arg.add_attribute("noalias")
        return fn

    def micro_kernel(self, rows: int, lanes: int, group: int = 2, pixel_major: bool = False, isa: str = "avx2",
                     emulated: bool = False) -> ir.Function:
        """`__cvmc_mmk_<i16|u8s8|vnni>_r<rows>_l<lanes>(a, b, acc, steps, row_stride, kh, stride_h, kw, stride_w,
        acc_stride)`, the body of every `cvmc.mmk_i16` (group 2) or `cvmc.mmk_u8s8` (group 4) of these rows and
        lanes (one function, compiled once, for all the module's convolutions): rows x lanes / width int32
        accumulators in vector registers of `width` lanes; for each tap (th, tw) and step i < steps, the block's
        lanes x group weights are loaded once (lanes / width vectors, at b + group * lanes * (t * steps + i),
        t = th * kw + tw) and each row's group inputs (one 32-bit load at a + r * row_stride + th * stride_h +
        tw * stride_w + group * i) are broadcast against them, then added to the accumulator:
        - int16 (width 8): sext, mul, the even and odd products added pairwise (wrapping only when all four are
          -32768: the same sum modulo 2^32): LLVM selects `vpmaddwd` (or `vpdpwssd`);
        - u8 x s8, `isa` "avx2" (width 8): `vpmaddubsw` (pairs of u8 x s8 products summed in int16, saturating: the
          caller guarantees u8 <= 127 and |s8| <= 127, so |sum| <= 32258 never saturates), then `vpmaddwd` by
          ones (pairs of those summed in int32);
        - u8 x s8, `isa` "avx512-vnni" (width 16, `__cvmc_mmk_vnni_...`): `vpdpbusd` (four u8 x s8 products summed
          into each int32 lane, wrapping, never saturating); `emulated` (`..._emu`): the same sums in portable
          IR (zext, sext, mul, the four products of a lane added), for a CPU without AVX512-VNNI.
        Then lane l's `rows` sums are stored at acc + l * acc_stride (channel-major), or with `pixel_major` row r's
        lanes at acc + r * acc_stride (the registers as they are: `__cvmc_mmk_..._pm`). Offsets are in elements."""
        vnni = group == 4 and isa in ("avx512-vnni", "amx")
        kind = "vnni" if vnni else "u8s8" if group == 4 else "i16"
        name = (f"__cvmc_mmk_{kind}_r{rows}_l{lanes}" + ("_pm" if pixel_major else "")
                + ("_emu" if vnni and emulated else ""))
        fn = self._kernel_function(name)
        if fn.blocks:
            return fn
        pa, pb, pacc, steps, row_stride, kh, stride_h, kw, stride_w, acc_stride = fn.args
        emitter = _Builder(fn)
        b = emitter.b
        width = 16 if vnni else 8
        vectors = lanes // width
        item = _I8 if group == 4 else _I16
        lanes_w = ir.VectorType(_I32, width)
        splat = ir.Constant(lanes_w, [0] * width)
        if group == 2:
            words, wide = ir.VectorType(_I16, 16), ir.VectorType(_I32, 16)
            even = ir.Constant(lanes_w, list(range(0, 16, 2)))
            odd = ir.Constant(lanes_w, list(range(1, 16, 2)))
        elif vnni:
            words = ir.VectorType(_I8, 64)
        else:
            words, halves = ir.VectorType(_I8, 32), ir.VectorType(_I16, 16)
            ubsw = self.function("llvm.x86.avx2.pmadd.ub.sw", halves, [words, words], ("nounwind", "readnone"))
            wd = self.function("llvm.x86.avx2.pmadd.wd", lanes_w, [halves, halves], ("nounwind", "readnone"))
            ones = ir.Constant(halves, [1] * 16)

        def i64(v: int) -> _Value:
            return _const(_I64, v)

        def weights(p: _Value) -> _Value:
            w = b.load(p, typ=words, align=item.width // 8)
            return b.sext(w, wide) if group == 2 else w

        def madd(acc: _Value, xs: _Value, w: _Value) -> _Value:
            if group == 2:
                m = b.mul(xs, w)  # each product of two int16 fits int32
                return b.add(acc, b.add(b.shuffle_vector(m, m, even), b.shuffle_vector(m, m, odd)))
            if vnni:
                return self.dpbusd(b, acc, xs, w, emulated)
            return b.add(acc, b.call(wd, [b.call(ubsw, [xs, w]), ones]))

        def channels(base_a: _Value, base_b: _Value, accs: list[_Value]) -> list[_Value]:
            def step(i: _Value, accs: list[_Value]) -> list[_Value]:
                at = b.add(base_b, b.mul(i, i64(group * lanes), flags=["nsw"]), flags=["nsw"])
                ws = [weights(b.gep(pb, [b.add(at, i64(width * group * v), flags=["nsw"])], inbounds=True,
                                    source_etype=item)) for v in range(vectors)]
                out = []
                first = b.add(base_a, b.mul(i, i64(group), flags=["nsw"]), flags=["nsw"])
                for r in range(rows):
                    index = b.add(first, b.mul(row_stride, i64(r), flags=["nsw"]), flags=["nsw"]) if r else first
                    x = b.load(b.gep(pa, [index], inbounds=True, source_etype=item), typ=_I32, align=item.width // 8)
                    one = b.insert_element(ir.Constant(lanes_w, None), x, i64(0))
                    xs = b.bitcast(b.shuffle_vector(one, one, splat), words)
                    if group == 2:
                        xs = b.sext(xs, wide)
                    out.extend(madd(accs[r * vectors + v], xs, ws[v]) for v in range(vectors))
                return out

            return emitter._loop(i64(0), steps, i64(1), accs, step, "mmk")

        def taps(th: _Value, accs: list[_Value]) -> list[_Value]:
            def tap(tw: _Value, accs: list[_Value]) -> list[_Value]:
                t = b.add(b.mul(th, kw, flags=["nsw"]), tw, flags=["nsw"])
                base_a = b.add(b.mul(th, stride_h, flags=["nsw"]), b.mul(tw, stride_w, flags=["nsw"]), flags=["nsw"])
                base_b = b.mul(b.mul(t, steps, flags=["nsw"]), i64(group * lanes), flags=["nsw"])
                return channels(base_a, base_b, accs)

            return emitter._loop(i64(0), kw, i64(1), accs, tap, "tap")

        zero = ir.Constant(lanes_w, None)
        accs = emitter._loop(i64(0), kh, i64(1), [zero] * (rows * vectors), taps, "taps")
        if pixel_major:
            for r in range(rows):
                for v in range(vectors):
                    p = b.gep(pacc, [b.add(b.mul(acc_stride, i64(r), flags=["nsw"]), i64(width * v), flags=["nsw"])],
                              inbounds=True, source_etype=_I32)
                    b.store(accs[r * vectors + v], p, align=4)
            b.ret_void()
            return fn
        column = ir.VectorType(_I32, rows)
        for v in range(vectors):
            for lane in range(width):
                col: _Value = ir.Constant(column, None)
                for r in range(rows):
                    col = b.insert_element(col, b.extract_element(accs[r * vectors + v], i64(lane)), i64(r))
                p = b.gep(pacc, [b.mul(acc_stride, i64(width * v + lane), flags=["nsw"])], inbounds=True,
                          source_etype=_I32)
                b.store(col, p, align=4)
        b.ret_void()
        return fn

    def amx_kernel(self, rows: int, steps: int, kh: int, kw: int, pixel_major: bool) -> ir.Function:
        """`__cvmc_mmk_amx_r<rows>_s<steps>_k<kh>x<kw>(a, b, acc, steps, row_stride, kh, stride_h, kw, stride_w,
        acc_stride)`: the u8 x s8 micro-kernel of `cvmc.mmk_u8s8` on AMX-INT8 tiles for `rows` pixels x 16
        channels (16 lanes: one tile row of 64 bytes of int32), the steps and taps fixed (straight-line code, no
        tile value crosses a block: LLVM inserts `ldtilecfg` and `tilerelease`). Per tap (th, tw) and chunk of at
        most 16 steps (64 bytes of the reduction): the pixels' bytes as a tile of rows x 4n bytes at a +
        th * stride_h + tw * stride_w + 4 * first step, row_stride apart; the weights as n rows of 64 bytes (the
        blocked layout is AMX's VNNI-4 layout: 4 bytes of one channel side by side); `tdpbusd` (u8 x s8, four
        products summed into each int32, wrapping). The tile is stored at acc, acc_stride int32 a pixel
        (pixel-major), or through a 16 x 16 buffer transposed (channel-major). The caller checked that the CPU has
        AMX-INT8 and that the process may use it."""
        name = f"__cvmc_mmk_amx_r{rows}_s{steps}_k{kh}x{kw}" + ("_pm" if pixel_major else "")
        fn = self._kernel_function(name)
        if fn.blocks:
            return fn
        pa, pb, pacc, _, row_stride, _, stride_h, _, stride_w, acc_stride = fn.args
        b: Any = ir.IRBuilder(fn.append_basic_block("entry"))
        tile = _AMX_TILE
        zero = self.function("llvm.x86.tilezero.internal", tile, [_I16, _I16])
        load = self.function("llvm.x86.tileloadd64.internal", tile, [_I16, _I16, _PTR, _I64])
        dot = self.function("llvm.x86.tdpbusd.internal", tile, [_I16, _I16, _I16, tile, tile, tile])
        store = self.function("llvm.x86.tilestored64.internal", _VOID, [_I16, _I16, _PTR, _I64, tile])

        def i16(v: int) -> _Value:
            return _const(_I16, v)

        def i64(v: int) -> _Value:
            return _const(_I64, v)

        m, n_bytes = i16(rows), i16(64)
        c = b.call(zero, [m, n_bytes])
        for th in range(kh):
            for tw in range(kw):
                base_a = b.add(b.mul(stride_h, i64(th)), b.mul(stride_w, i64(tw)))
                base_b = (th * kw + tw) * steps * 64
                for first in range(0, steps, 16):
                    n = min(16, steps - first)
                    at = b.gep(pa, [b.add(base_a, i64(4 * first))], inbounds=True, source_etype=_I8)
                    x = b.call(load, [m, i16(4 * n), at, row_stride])
                    w = b.call(load, [i16(n), n_bytes, b.gep(pb, [i64(base_b + 64 * first)], inbounds=True,
                                                              source_etype=_I8), i64(64)])
                    c = b.call(dot, [m, n_bytes, i16(4 * n), c, x, w])
        if pixel_major:
            b.call(store, [m, n_bytes, pacc, b.mul(acc_stride, i64(4)), c])
            b.ret_void()
            return fn
        buf = b.alloca(ir.ArrayType(_I32, 16 * 16))
        b.call(store, [m, n_bytes, buf, i64(64), c])
        for r in range(rows):
            for lane in range(16):
                v = b.load(b.gep(buf, [i64(0), i64(16 * r + lane)], inbounds=True), align=4)
                b.store(v, b.gep(pacc, [b.add(b.mul(acc_stride, i64(lane)), i64(r))], inbounds=True,
                                 source_etype=_I32), align=4)
        b.ret_void()
        return fn

    def dpbusd(self, b: Any, acc: _Value, xs: _Value, ws: _Value, emulated: bool) -> _Value:
        """acc (16 x i32) + for each lane the sum of its four u8 xs (64 x i8) x s8 ws (64 x i8) products, wrapping:
        `vpdpbusd` (AVX512-VNNI), or with `emulated` the same sums in portable IR (|u8 x s8| <= 32640: four fit
        int32, no saturation either way)."""
        lanes, pairs = ir.VectorType(_I32, 16), ir.VectorType(_I8, 64)
        if not emulated:
            fn = self.function("llvm.x86.avx512.vpdpbusd.512", lanes, [lanes, pairs, pairs], ("nounwind", "readnone"))
            return b.call(fn, [acc, xs, ws])
        wide = ir.VectorType(_I32, 64)
        m = b.mul(b.zext(xs, wide), b.sext(ws, wide))
        parts = [b.shuffle_vector(m, m, ir.Constant(lanes, list(range(j, 64, 4)))) for j in range(4)]
        return b.add(acc, b.add(b.add(parts[0], parts[1]), b.add(parts[2], parts[3])))

    def intrinsic(self, base: str, ty: ir.Type, nargs: int) -> ir.Function:
        """`llvm.<base>.<suffix>` taking `nargs` operands of type `ty`."""
        return self.function(f"llvm.{base}.{_suffix(ty)}", ty, [ty] * nargs)

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
        zero, one = _const(ty, 0), _const(ty, 1)
        result: _Value = one
        power: _Value = base
        for bit in range(ty.width - 1):  # the sign bit only matters for negative exponents
            set_ = b.icmp_unsigned("!=", b.and_(exp, _const(ty, 1 << bit)), zero)
            result = b.select(set_, b.mul(result, power), result)
            power = b.mul(power, power)
        odd = b.icmp_unsigned("!=", b.and_(exp, one), zero)
        minus_one = _const(ty, -1)
        negative = b.select(
            b.icmp_signed("==", base, one),
            one,
            b.select(b.icmp_signed("==", base, minus_one), b.select(odd, minus_one, one), zero),
        )
        b.ret(b.select(b.icmp_signed("<", exp, zero), negative, result))
        return fn


class _Builder:
    """An IRBuilder at the entry of `fn`, with `_KernelEmitter`'s loop helper (for functions the module adds)."""

    def __init__(self, fn: ir.Function):
        self.fn = fn
        self.b: Any = ir.IRBuilder(fn.append_basic_block("entry"))

    def _loop(self, lb: _Value, ub: _Value, step: _Value, inits: Sequence[_Value],
              body: Callable[[_Value, list[_Value]], list[_Value]], kind: str = "for") -> list[_Value]:
        return _KernelEmitter._loop(self, lb, ub, step, inits, body, kind)  # type: ignore[arg-type]


class _KernelEmitter:
    """Prints one `func.func` as one LLVM function."""

    def __init__(self, mod: _ModuleEmitter, op: func.FuncOp, spec: KernelSpec):
        self.mod = mod
        self.op = op
        self.spec = spec
        block = op.body.block
        params: list[Any] = [_PTR] * len(block.args) + [_I64, _I64]
        self.fn = ir.Function(mod.module, ir.FunctionType(_VOID, params), body_symbol(spec.symbol))
        self.fn.linkage = "internal"
        self.fn.attributes.add("nounwind")
        self.fn.attributes.add("noinline")
        for value, arg, karg in zip(self.fn.args, block.args, spec.args):
            value.name = f"arg{arg.index}"
            value.add_attribute("noalias")
            value.add_attribute("captures(none)")
            value.attributes.align = _byte_size(_memory_type(arg.type.element_type))  # pyright: ignore
            lo, hi = karg.element_span()
            if lo == 0 and hi > 0:
                value.attributes.dereferenceable = hi * value.attributes.align
        self.begin, self.end = self.fn.args[-2:]
        self.begin.name, self.end.name = "begin", "end"
        entry = self.fn.append_basic_block("entry")
        self.b: Any = ir.IRBuilder(entry)
        self.allocas: Any = ir.IRBuilder(entry)  # inserts at the start of the entry block, in order
        self.allocas.position_at_start(entry)
        self.values: dict[SSAValue, _Value] = dict(zip(block.args, self.fn.args))
        split = _split_loop(op)
        self.split_loop = split[0] if split is not None else None

    def emit(self) -> None:
        self._emit_entry()
        self._emit_body()

    def _emit_entry(self) -> None:
        """The exported kernel: load the argument pointers from the table and call the body with them."""
        count = len(self.spec.args)
        fn = ir.Function(self.mod.module, ir.FunctionType(_VOID, [_PTR, _I64, _I64]), self.spec.symbol)
        fn.attributes.add("nounwind")
        table, begin, end = fn.args
        table.name, begin.name, end.name = "args", "begin", "end"
        if count:
            table.add_attribute("captures(none)")
            table.attributes.align = 8  # pyright: ignore
            table.attributes.dereferenceable = 8 * count  # pyright: ignore
        b: Any = ir.IRBuilder(fn.append_basic_block("entry"))
        pointers = []
        for i in range(count):
            slot = table if i == 0 else b.gep(table, [_const(_I64, i)], inbounds=True, source_etype=_PTR)
            load = b.load(slot, name=f"arg{i}", typ=_PTR)
            load.align = 8
            pointers.append(load)
        b.call(self.fn, [*pointers, begin, end], tail=True)
        b.ret_void()

    def _emit_body(self) -> None:
        block = self.op.body.block
        if self.split_loop is None:
            # One unit of work: run when 0 is in [begin, end).
            run = self.b.and_(
                self.b.icmp_signed("<=", self.begin, _const(_I64, 0)),
                self.b.icmp_signed(">", self.end, _const(_I64, 0)),
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

    def _emit_ops(self, block: Block) -> list[_Value]:
        """Emit every op of `block` but its terminator; return the terminator's operand values."""
        result: list[_Value] = []
        for op in block.ops:
            name = _op_name(op)
            if name in ("scf.yield", "scf.reduce"):
                result = [self.values[v] for v in op.operands]
                if name == "scf.reduce" and op.operands:
                    raise CVMRuntimeError("scf.parallel reductions are not part of the loop level")
                continue
            if name == "func.return":
                self.b.ret_void()
                continue
            handler = _HANDLERS.get(name)
            if handler is None:
                raise CVMRuntimeError(f"llvm codegen: unsupported op '{name}'")
            handler(self, op)
        return result

    def _operands(self, op: Operation) -> list[_Value]:
        return [self.values[v] for v in op.operands]

    def _set(self, op: Operation, value: _Value) -> None:
        self.values[op.results[0]] = value

    def _loop(
        self,
        lb: _Value,
        ub: _Value,
        step: _Value,
        inits: Sequence[_Value],
        body: Callable[[_Value, list[_Value]], list[_Value]],
        kind: str = "for",
    ) -> list[_Value]:
        """`for (iv = lb; iv < ub; iv += step)` (signed), carrying `inits` through `body`; returns the carried
        values at exit. The header holds the phis; blocks are created in source order."""
        pre = self.b.block
        header = self.fn.append_basic_block(f"{kind}.cond")
        self.b.branch(header)
        self.b.position_at_end(header)
        iv = self.b.phi(lb.type, name="iv")
        iv.add_incoming(lb, pre)
        carried: list[ir.PhiInstr] = []
        for init in inits:
            phi = self.b.phi(init.type)
            phi.add_incoming(init, pre)
            carried.append(phi)
        cond = self.b.icmp_signed("<", iv, ub)
        first = self.fn.append_basic_block(f"{kind}.body")
        self.b.position_at_end(first)
        yielded = body(iv, list(carried))
        latch = self.b.block
        iv.add_incoming(self.b.add(iv, step, flags=["nsw"]), latch)
        for phi, value in zip(carried, yielded):
            phi.add_incoming(value, latch)
        self.b.branch(header)
        exit_ = self.fn.append_basic_block(f"{kind}.end")
        self.b.position_at_end(header)
        self.b.cbranch(cond, first, exit_)
        self.b.position_at_end(exit_)
        return list(carried)

    def _run_region(self, block: Block, args: Sequence[_Value]) -> list[_Value]:
        for arg, value in zip(block.args, args):
            self.values[arg] = value
        return self._emit_ops(block)

    @_handles("scf.for")
    def _for(self, op: Operation) -> None:
        lb, ub, step, *inits = self._operands(op)
        block = op.regions[0].block
        results = self._loop(lb, ub, step, inits, lambda iv, carried: self._run_region(block, [iv, *carried]))
        for res, value in zip(op.results, results):
            self.values[res] = value

    @_handles("scf.parallel")
    def _parallel(self, op: Operation) -> None:
        assert isinstance(op, scf.ParallelOp)
        block = op.body.block
        lbs = [self.values[v] for v in op.lowerBound]
        ubs = [self.values[v] for v in op.upperBound]
        steps = [self.values[v] for v in op.step]
        ivs: list[_Value] = []

        def nest(dim: int) -> None:
            if dim == len(lbs):
                self._run_region(block, ivs)
                return
            if dim == 0 and op is self.split_loop:
                # The units [max(begin, 0), min(end, trip)) of the first dimension: iv = lb + unit * step.
                zero, trip = _const(_I64, 0), _const(_I64, self.spec.trip)
                first = self.b.select(self.b.icmp_signed(">", self.begin, zero), self.begin, zero, name="first")
                last = self.b.select(self.b.icmp_signed("<", self.end, trip), self.end, trip, name="last")

                def unit_body(unit: _Value, _: list[_Value]) -> list[_Value]:
                    iv = unit if _is_const(steps[0], 1) else self.b.mul(unit, steps[0], flags=["nsw"])
                    ivs.append(iv if _is_const(lbs[0], 0) else self.b.add(lbs[0], iv, flags=["nsw"]))
                    nest(1)
                    ivs.pop()
                    return []

                self._loop(first, last, _const(_I64, 1), [], unit_body, "par")
                return

            def dim_body(iv: _Value, _: list[_Value]) -> list[_Value]:
                ivs.append(iv)
                nest(dim + 1)
                ivs.pop()
                return []

            self._loop(lbs[dim], ubs[dim], steps[dim], [], dim_body, "par")

        nest(0)

    @_handles("scf.if")
    def _if(self, op: Operation) -> None:
        cond = self.values[op.operands[0]]
        then_region, else_region = op.regions
        start = self.b.block
        incoming: list[tuple[list[_Value], ir.Block]] = []
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
            phi = self.b.phi(_value_type(res.type))
            for values, end_block in incoming:
                phi.add_incoming(values[i], end_block)
            self.values[res] = phi

    # ---- memory ------------------------------------------------------------------------------------------

    def _address(self, t: Attribute, base: _Value, indices: Sequence[_Value]) -> _Value:
        """One GEP: base + offset + sum(index * stride), in elements of the memref type `t`."""
        assert isinstance(t, MemRefType)
        _, strides, offset = static_layout(t)
        linear: _Value | None = None
        for index, stride in zip(indices, strides):
            if stride == 0:
                continue
            term = index if stride == 1 else self.b.mul(index, _const(_I64, stride), flags=["nsw"])
            linear = term if linear is None else self.b.add(linear, term, flags=["nsw"])
        if offset:
            off = _const(_I64, offset)
            linear = off if linear is None else self.b.add(linear, off, flags=["nsw"])
        if linear is None:
            return base
        return self.b.gep(base, [linear], inbounds=True, source_etype=_memory_type(t.element_type))

    def _access(self, memref_value: SSAValue, indices: Sequence[SSAValue]) -> tuple[_Value, ir.Type]:
        """The address of a load or store and the element's memory type."""
        t = memref_value.type
        assert isinstance(t, MemRefType)
        address = self._address(t, self.values[memref_value], [self.values[i] for i in indices])
        return address, _memory_type(t.element_type)

    @_handles("memref.load")
    def _load(self, op: Operation) -> None:
        memref_value, *indices = op.operands
        address, ty = self._access(memref_value, indices)
        value = self.b.load(address, typ=ty, align=_byte_size(ty))
        if _value_type(op.results[0].type) == _I1:
            value = self.b.icmp_unsigned("!=", value, _const(_I8, 0))
        self._set(op, value)

    @_handles("memref.store")
    def _store(self, op: Operation) -> None:
        value_ssa, memref_value, *indices = op.operands
        value = self.values[value_ssa]
        if value.type == _I1:
            value = self.b.zext(value, _I8)
        address, ty = self._access(memref_value, indices)
        self.b.store(value, address, align=_byte_size(ty))

    def _buffer_bytes(self, t: MemRefType) -> int:
        shape, strides, offset = static_layout(t)
        lo, hi = KernelArg(shape, "", strides, offset, False).element_span()
        if lo < 0:
            raise CVMRuntimeError(f"expected a layout with non-negative element indices, got {t}")
        return hi * _byte_size(_memory_type(t.element_type))

    @_handles("memref.alloca")
    def _alloca(self, op: Operation) -> None:
        t = op.results[0].type
        assert isinstance(t, MemRefType)
        slot = self.allocas.alloca(ir.ArrayType(_I8, max(1, self._buffer_bytes(t))))
        slot.align = _BUFFER_ALIGN
        slot.type = _PTR  # llvmlite types allocas as typed pointers; LLVM's are opaque
        self._set(op, slot)

    @_handles("memref.alloc")
    def _alloc(self, op: Operation) -> None:
        t = op.results[0].type
        assert isinstance(t, MemRefType)
        size = -(-max(1, self._buffer_bytes(t)) // _BUFFER_ALIGN) * _BUFFER_ALIGN
        aligned_alloc = self.mod.function("aligned_alloc", _PTR, [_I64, _I64], ("nounwind",))
        self._set(op, self.b.call(aligned_alloc, [_const(_I64, _BUFFER_ALIGN), _const(_I64, size)]))

    @_handles("memref.dealloc")
    def _dealloc(self, op: Operation) -> None:
        free = self.mod.function("free", _VOID, [_PTR], ("nounwind",))
        self.b.call(free, [self.values[op.operands[0]]])

    @_handles(*_VIEW_OPS)
    def _view(self, op: Operation) -> None:
        """A view keeps the base pointer; only a result type whose offset disagrees with the view's own moves it."""
        source = op.operands[0]
        src_t, res_t = source.type, op.results[0].type
        assert isinstance(src_t, MemRefType) and isinstance(res_t, MemRefType)
        _, src_strides, src_offset = static_layout(src_t)
        _, _, res_offset = static_layout(res_t)
        name = _op_name(op)
        if name == "memref.cast":
            element_offset = src_offset
        else:
            if len(op.operands) != 1:
                raise CVMRuntimeError(f"expected static offsets, sizes and strides in {name}")
            offsets = op.properties["static_offsets"]
            values = offsets.get_values()  # pyright: ignore[reportAttributeAccessIssue]
            if name == "memref.subview":
                element_offset = src_offset + sum(o * s for o, s in zip(values, src_strides))
            else:  # reinterpret_cast: relative to the base pointer
                element_offset = values[0]
        base = self.values[source]
        delta = element_offset - res_offset
        if delta:
            base = self.b.gep(base, [_const(_I64, delta)], source_etype=_memory_type(res_t.element_type))
        self._set(op, base)

    @_handles("memref.copy")
    def _copy(self, op: Operation) -> None:
        source, target = op.operands
        src_t, dst_t = source.type, target.type
        assert isinstance(src_t, MemRefType) and isinstance(dst_t, MemRefType)
        shape, src_strides, _ = static_layout(src_t)
        _, dst_strides, _ = static_layout(dst_t)
        ty = _memory_type(src_t.element_type)
        size = _byte_size(ty)
        if src_strides == dst_strides == row_major_strides(shape):
            count = 1
            for n in shape:
                count *= n
            memcpy = self.mod.function("llvm.memcpy.p0.p0.i64", _VOID, [_PTR, _PTR, _I64, _I1])
            src = self._address(src_t, self.values[source], [])
            dst = self._address(dst_t, self.values[target], [])
            self.b.call(memcpy, [dst, src, _const(_I64, count * size), _const(_I1, 0)])
            return
        src_base, dst_base = self.values[source], self.values[target]
        ivs: list[_Value] = []

        def nest(dim: int) -> None:
            if dim == len(shape):
                value = self.b.load(self._address(src_t, src_base, ivs), typ=ty, align=size)
                self.b.store(value, self._address(dst_t, dst_base, ivs), align=size)
                return

            def body(iv: _Value, _: list[_Value]) -> list[_Value]:
                ivs.append(iv)
                nest(dim + 1)
                ivs.pop()
                return []

            self._loop(_const(_I64, 0), _const(_I64, shape[dim]), _const(_I64, 1), [], body, "copy")

        nest(0)

    # ---- arith -------------------------------------------------------------------------------------------

    @_handles("arith.constant")
    def _constant(self, op: Operation) -> None:
        attr = op.properties["value"]
        ty = _value_type(op.results[0].type)
        if isinstance(attr, IntegerAttr):
            self._set(op, _const(ty, attr.value.data))
        elif isinstance(attr, FloatAttr):
            self._set(op, _const(ty, attr.value.data))
        else:
            raise CVMRuntimeError(f"unsupported arith.constant value {attr}")

    @_handles(*_INT_BINARY, *_FLOAT_BINARY)
    def _binary(self, op: Operation) -> None:
        name = _op_name(op)
        method = _INT_BINARY.get(name) or _FLOAT_BINARY[name]
        self._set(op, getattr(self.b, method)(*self._operands(op)))

    @_handles("arith.negf")
    def _negf(self, op: Operation) -> None:
        self._set(op, self.b.fneg(self.values[op.operands[0]]))

    @_handles(*_CASTS)
    def _cast(self, op: Operation) -> None:
        method = _CASTS[_op_name(op)]
        self._set(op, getattr(self.b, method)(self.values[op.operands[0]], _value_type(op.results[0].type)))

    @_handles("arith.index_cast", "arith.index_castui")
    def _index_cast(self, op: Operation) -> None:
        value = self.values[op.operands[0]]
        ty = _value_type(op.results[0].type)
        assert isinstance(value.type, ir.IntType) and isinstance(ty, ir.IntType)
        if ty.width < value.type.width:
            value = self.b.trunc(value, ty)
        elif ty.width > value.type.width:
            value = (self.b.zext if _op_name(op) == "arith.index_castui" else self.b.sext)(value, ty)
        self._set(op, value)

    @_handles("arith.fptosi", "arith.fptoui")
    def _fptoi(self, op: Operation) -> None:
        value = self.values[op.operands[0]]
        ty = _value_type(op.results[0].type)
        kind = "fptosi" if _op_name(op) == "arith.fptosi" else "fptoui"
        fn = self.mod.function(f"llvm.{kind}.sat.{_suffix(ty)}.{_suffix(value.type)}", ty, [value.type])
        self._set(op, self.b.call(fn, [value]))

    @_handles("arith.cmpi")
    def _cmpi(self, op: Operation) -> None:
        predicate = op.properties["predicate"]
        assert isinstance(predicate, IntegerAttr)
        signed, pred = _CMPI[predicate.value.data]
        compare = self.b.icmp_signed if signed else self.b.icmp_unsigned
        self._set(op, compare(pred, *self._operands(op)))

    @_handles("arith.cmpf")
    def _cmpf(self, op: Operation) -> None:
        predicate = op.properties["predicate"]
        assert isinstance(predicate, IntegerAttr)
        self._set(op, self.b.fcmp_ordered(_CMPF[predicate.value.data], *self._operands(op)))

    @_handles("arith.select")
    def _select(self, op: Operation) -> None:
        self._set(op, self.b.select(*self._operands(op)))

    @_handles(*_MIN_MAX_INT)
    def _min_max(self, op: Operation) -> None:
        a, b = self._operands(op)
        signed, pred = _MIN_MAX_INT[_op_name(op)]
        take_a = (self.b.icmp_signed if signed else self.b.icmp_unsigned)(pred, a, b)
        self._set(op, self.b.select(take_a, a, b))

    # Division, remainder and shifts: total and branch free (see the module docstring).

    def _safe_divisor(self, a: _Value, b: _Value, signed: bool) -> tuple[_Value, _Value]:
        """(b == 0, divisor): the divisor is 1 where b is 0 or, if signed, where a / b overflows."""
        ty = b.type
        assert isinstance(ty, ir.IntType)
        by_zero = self.b.icmp_unsigned("==", b, _const(ty, 0))
        bad = by_zero
        if signed:
            overflow = self.b.and_(
                self.b.icmp_unsigned("==", a, _const(ty, -(1 << (ty.width - 1)))),
                self.b.icmp_unsigned("==", b, _const(ty, -1)),
            )
            bad = self.b.or_(by_zero, overflow)
        return by_zero, self.b.select(bad, _const(ty, 1), b)

    def _float_division_type(self, a: _Value, b: _Value) -> Any:
        """The float type to divide `a` by `b` in, or None to use integer division.

        x86 has no vector integer division. For 8- to 32-bit operands and a divisor that is not a constant,
        dividing in floating point (f32 up to 16 bits, f64 up to 32 bits) is exact: |a| < 2**p (p the
        significand's bits) bounds the rounding error of the quotient, |a / d| * 2**-p, below 1 / |d|, the least
        distance from a non-integer quotient to an integer. Such loops vectorize (about 10x faster than scalar
        idiv); constant divisors stay integer divisions, which LLVM turns into multiplications."""
        ty = a.type
        assert isinstance(ty, ir.IntType)
        if isinstance(b, ir.Constant) or not 8 <= ty.width <= 32:
            return None
        return ir.FloatType() if ty.width <= 16 else ir.DoubleType()

    def _quotient(self, a: _Value, b: _Value, divisor: _Value, signed: bool) -> _Value:
        """`a / divisor` truncated, for a divisor that is never 0 and never overflows (`b` is the original)."""
        fty = self._float_division_type(a, b)
        if fty is None:
            return (self.b.sdiv if signed else self.b.udiv)(a, divisor)
        to_float = self.b.sitofp if signed else self.b.uitofp
        ratio = self.b.fdiv(to_float(a, fty), to_float(divisor, fty))
        return (self.b.fptosi if signed else self.b.fptoui)(ratio, a.type)

    def _remainder(self, a: _Value, b: _Value, divisor: _Value, signed: bool, quotient: _Value = None) -> _Value:
        """`a % divisor` (sign of `a`), reusing `quotient` where the division is done in floating point."""
        if self._float_division_type(a, b) is None:
            return (self.b.srem if signed else self.b.urem)(a, divisor)
        if quotient is None:
            quotient = self._quotient(a, b, divisor, signed)
        return self.b.sub(a, self.b.mul(quotient, divisor))

    @_handles("arith.divsi", "arith.divui")
    def _div(self, op: Operation) -> None:
        a, b = self._operands(op)
        signed = _op_name(op) == "arith.divsi"
        by_zero, divisor = self._safe_divisor(a, b, signed)
        quotient = self._quotient(a, b, divisor, signed)
        self._set(op, self.b.select(by_zero, _const(a.type, 0), quotient))

    @_handles("arith.remsi", "arith.remui")
    def _rem(self, op: Operation) -> None:
        a, b = self._operands(op)
        signed = _op_name(op) == "arith.remsi"
        _, divisor = self._safe_divisor(a, b, signed)  # x % 1 == 0 covers both b == 0 and INT_MIN % -1
        self._set(op, self._remainder(a, b, divisor, signed))

    @_handles("arith.floordivsi", "arith.ceildivsi", "arith.ceildivui")
    def _round_div(self, op: Operation) -> None:
        a, b = self._operands(op)
        name = _op_name(op)
        signed = name != "arith.ceildivui"
        ty = a.type
        zero = _const(ty, 0)
        by_zero, divisor = self._safe_divisor(a, b, signed)
        quotient = self._quotient(a, b, divisor, signed)
        rest = self._remainder(a, b, divisor, signed, quotient)
        inexact = self.b.icmp_unsigned("!=", rest, zero)
        if not signed:
            result = self.b.add(quotient, self.b.zext(inexact, ty))
        else:
            # The exact quotient is negative iff rest and divisor have different signs.
            negative = self.b.icmp_signed("<", self.b.xor(rest, divisor), zero)
            if name == "arith.floordivsi":
                result = self.b.sub(quotient, self.b.zext(self.b.and_(inexact, negative), ty))
            else:
                result = self.b.add(quotient, self.b.zext(self.b.and_(inexact, self.b.not_(negative)), ty))
        self._set(op, self.b.select(by_zero, zero, result))

    @_handles("arith.shli", "arith.shrui", "arith.shrsi")
    def _shift(self, op: Operation) -> None:
        a, b = self._operands(op)
        ty = a.type
        assert isinstance(ty, ir.IntType)
        in_range = self.b.icmp_unsigned("<", b, _const(ty, ty.width))
        name = _op_name(op)
        if name == "arith.shrsi":
            self._set(op, self.b.ashr(a, self.b.select(in_range, b, _const(ty, ty.width - 1))))
            return
        shifted = (self.b.shl if name == "arith.shli" else self.b.lshr)(a, b)
        self._set(op, self.b.select(in_range, shifted, _const(ty, 0)))

    # ---- math --------------------------------------------------------------------------------------------

    @_handles(*_FLOAT_INTRINSICS)
    def _float_intrinsic(self, op: Operation) -> None:
        args = self._operands(op)
        fn = self.mod.intrinsic(_FLOAT_INTRINSICS[_op_name(op)], args[0].type, len(args))
        self._set(op, self.b.call(fn, args))

    @_handles(*_LIBM)
    def _libm(self, op: Operation) -> None:
        (x,) = self._operands(op)
        self._set(op, self.b.call(self.mod.libm(_LIBM[_op_name(op)], x.type), [x]))

    @_handles("math.fpowi")
    def _fpowi(self, op: Operation) -> None:
        x, n = self._operands(op)
        exponent = self.b.sitofp(n, x.type)
        self._set(op, self.b.call(self.mod.intrinsic("pow", x.type, 2), [x, exponent]))

    @_handles("math.rsqrt")
    def _rsqrt(self, op: Operation) -> None:
        (x,) = self._operands(op)
        root = self.b.call(self.mod.intrinsic("sqrt", x.type, 1), [x])
        self._set(op, self.b.fdiv(_const(x.type, 1.0), root))

    @_handles("math.isnan", "math.isinf", "math.isfinite")
    def _float_class(self, op: Operation) -> None:
        (x,) = self._operands(op)
        name = _op_name(op)
        if name == "math.isnan":
            self._set(op, self.b.fcmp_unordered("uno", x, x))
            return
        magnitude = self.b.call(self.mod.intrinsic("fabs", x.type, 1), [x])
        inf = _const(x.type, float("inf"))
        self._set(op, self.b.fcmp_ordered("==" if name == "math.isinf" else "!=", magnitude, inf))

    @_handles(*_INT_INTRINSICS)
    def _int_intrinsic(self, op: Operation) -> None:
        (x,) = self._operands(op)
        name = f"llvm.{_INT_INTRINSICS[_op_name(op)]}.{_suffix(x.type)}"
        fn = self.mod.function(name, x.type, [x.type, _I1])
        self._set(op, self.b.call(fn, [x, _const(_I1, 0)]))

    @_handles("cvmc.dot_u8s8")
    def _dot_u8s8(self, op: Operation) -> None:
        """For r < rows: sum over i < depth of u8 a[..., j + r, i] * s8 b[..., i] in int32 (wrapping), `depth` a
        multiple of 64, the rows of `a` consecutive along its second-to-last dimension: a loop of `vpdpbusd`
        (AVX512-VNNI: 64 byte pairs, four products summed into each of 16 lanes, no saturation), one
        accumulator per row sharing each load of `b`, then each row's 16 lanes summed (`emulated` = 1: the same
        sums in portable IR, `_ModuleEmitter.dpbusd`). The caller checked that the host has AVX512-VNNI."""
        depth, split, rows = (_int_attr(op, name) for name in ("depth", "split", "rows"))
        rows = max(rows, 1)
        a = op.operands[0]
        b = op.operands[split] if 1 <= split < len(op.operands) else None
        if depth <= 0 or depth % 64 or b is None or len(op.results) != rows:
            raise CVMRuntimeError(f"expected {_op_name(op)} with a depth that is a positive multiple of 64, split "
                                  f"in [1, {len(op.operands) - 1}] and {rows} results, got depth {depth}, split "
                                  f"{split}, {len(op.results)} results")
        pa, _ = self._access(a, op.operands[1:split])
        pb, _ = self._access(b, op.operands[split + 1:])
        assert isinstance(a.type, MemRefType)
        row_stride = static_layout(a.type)[1][-2] if rows > 1 else 0
        bases = [pa] + [self.b.gep(pa, [_const(_I64, r * row_stride)], inbounds=True, source_etype=_I8)
                        for r in range(1, rows)]
        lanes, pairs = ir.VectorType(_I32, 16), ir.VectorType(_I8, 64)
        emulated = _int_attr(op, "emulated") == 1  # the portable lowering of the same sums

        def step(i: _Value, acc: list[_Value]) -> list[_Value]:
            y = self.b.load(self.b.gep(pb, [i], inbounds=True, source_etype=_I8), typ=pairs, align=1)
            out = []
            for base, partial in zip(bases, acc):
                x = self.b.load(self.b.gep(base, [i], inbounds=True, source_etype=_I8), typ=pairs, align=1)
                out.append(self.mod.dpbusd(self.b, partial, x, y, emulated))
            return out

        zero = ir.Constant(lanes, None)
        accs = self._loop(_const(_I64, 0), _const(_I64, depth), _const(_I64, 64), [zero] * rows, step, "dot")
        for res, value in zip(op.results, self._row_sums(accs)):
            self.values[res] = value

    @_handles("cvmc.mmk_i16", "cvmc.mmk_u8s8")
    def _mmk(self, op: Operation) -> None:
        """acc[(l, r)] = sum over taps (th, tw) and i < depth of a[r * row_stride + th * stride_h + tw * stride_w +
        i] * b[block][(th * kw + tw) * depth / g + i / g, l, i % g] in int32 (wrapping), for r < rows, l < lanes
        (a multiple of 8), all offsets in elements from each operand's indexed element; int16 operands (g = 2) or
        u8 x s8 (g = 4): a call of the module's micro-kernel for (rows, lanes, g) (`_ModuleEmitter.micro_kernel`)."""
        group = 4 if _op_name(op) == "cvmc.mmk_u8s8" else 2
        names = ("depth", "split", "acc_split", "rows", "lanes", "row_stride", "kh", "stride_h", "kw", "stride_w")
        depth, split, acc_split, rows, lanes, row_stride, kh, stride_h, kw, stride_w = (
            _int_attr(op, name) for name in names)
        if (depth <= 0 or depth % group or rows <= 0 or lanes <= 0 or lanes % 8 or kh <= 0 or kw <= 0 or op.results
                or not 1 <= split < acc_split < len(op.operands)):
            raise CVMRuntimeError(f"expected {_op_name(op)} with a depth a positive multiple of {group}, rows, kh, "
                                  f"kw > 0, lanes a "
                                  f"positive multiple of 8, 1 <= split < acc_split < {len(op.operands)} and no "
                                  f"results, got depth {depth}, rows {rows}, lanes {lanes}, kh {kh}, kw {kw}, split "
                                  f"{split}, acc_split {acc_split}, {len(op.results)} results")
        a, b, acc = op.operands[0], op.operands[split], op.operands[acc_split]
        pa, _ = self._access(a, op.operands[1:split])
        pb, _ = self._access(b, op.operands[split + 1:acc_split])
        pacc, _ = self._access(acc, op.operands[acc_split + 1:])
        assert isinstance(acc.type, MemRefType)
        sizes = (depth // group, row_stride, kh, stride_h, kw, stride_w, static_layout(acc.type)[1][0])
        pixel_major = _int_attr(op, "pixel_major") == 1
        isa = op.attributes.get("isa")
        isa_name = isa.data if isinstance(isa, StringAttr) else "avx2"
        emulated = _int_attr(op, "emulated") == 1
        if (isa_name not in ("avx2", "avx512-vnni", "amx") or (isa_name != "avx2" and (group != 4 or lanes % 16))
                or (isa_name == "amx" and (lanes != 16 or rows > 16))):
            raise CVMRuntimeError(f"expected {_op_name(op)} with isa avx2, avx512-vnni for u8 x s8 and lanes a "
                                  f"multiple of 16, or amx for u8 x s8, 16 lanes and at most 16 rows, got isa "
                                  f"{isa_name}, lanes {lanes}, rows {rows}")
        if isa_name == "amx" and not emulated:
            fn = self.mod.amx_kernel(rows, depth // group, kh, kw, pixel_major)
        else:  # AMX emulated: the same sums as the VNNI kernel's portable lowering, in tiles of 16 x 16
            fn = self.mod.micro_kernel(rows, lanes, group, pixel_major, isa_name, emulated)
        self.b.call(fn, [pa, pb, pacc, *(_const(_I64, v) for v in sizes)])

    @_handles("cvmc.pack_tile")
    def _pack_tile(self, op: Operation) -> None:
        """out[j, i] (out's last two dimensions) = inside ? byte(src[i, j] + zero_point) : byte(zero_point), for
        i, j < 8, src's rows its channels (its second dimension) and columns its last: 8 vector loads of 8 int32,
        narrowed, the 8 x 8 bytes transposed by one shuffle, 8 stores of 8 bytes."""
        split, zero_point = _int_attr(op, "split"), _int_attr(op, "zero_point")
        src, out, inside = op.operands[0], op.operands[split], op.operands[-1]
        assert isinstance(src.type, MemRefType) and isinstance(out.type, MemRefType)
        src_strides, out_strides = static_layout(src.type)[1], static_layout(out.type)[1]
        src_stride, out_stride = src_strides[1], out_strides[-2]
        if len(op.operands) != 2 * split + 1 or src_strides[-1] != 1 or out_strides[-1] != 1:
            raise CVMRuntimeError(f"expected {_op_name(op)} over unit-stride rows and columns, got {src.type} and "
                                  f"{out.type}")
        ps, _ = self._access(src, op.operands[1:split])
        po, _ = self._access(out, op.operands[split + 1:-1])
        words, bytes8 = ir.VectorType(_I32, 8), ir.VectorType(_I8, 8)
        keep = self.values[inside]
        rows = []
        for i in range(8):
            p = self.b.gep(ps, [_const(_I64, i * src_stride)], inbounds=True, source_etype=_I32)
            v = self.b.load(p, typ=words, align=4)
            if zero_point:
                v = self.b.add(v, ir.Constant(words, [zero_point] * 8))
            rows.append(self.b.trunc(v, bytes8))
        pairs = [self.b.shuffle_vector(rows[i], rows[i + 1], ir.Constant(ir.VectorType(_I32, 16), list(range(16))))
                 for i in range(0, 8, 2)]
        quads = [self.b.shuffle_vector(pairs[i], pairs[i + 1], ir.Constant(ir.VectorType(_I32, 32), list(range(32))))
                 for i in range(0, 4, 2)]
        whole = self.b.shuffle_vector(quads[0], quads[1], ir.Constant(ir.VectorType(_I32, 64), list(range(64))))
        transposed = self.b.shuffle_vector(whole, whole, ir.Constant(ir.VectorType(_I32, 64),
                                                                     [i * 8 + j for j in range(8) for i in range(8)]))
        padding = ir.Constant(ir.VectorType(_I8, 64), [zero_point & 0xFF] * 64)
        transposed = self.b.select(keep, transposed, padding)
        for j in range(8):
            col = self.b.shuffle_vector(transposed, transposed, ir.Constant(ir.VectorType(_I32, 8),
                                                                             list(range(8 * j, 8 * j + 8))))
            p = self.b.gep(po, [_const(_I64, j * out_stride)], inbounds=True, source_etype=_I8)
            self.b.store(col, p, align=1)

    def _row_sums(self, accs: list[_Value]) -> list[_Value]:
        """The sum of the 16 lanes of each accumulator. For a power-of-two count, a tree that halves every
        vector's segments pairwise (two shuffles and one add per pair and level: 16 shuffles for 8 rows instead
        of 32 in 8 separate reductions), then one lane per row; else one reduction per accumulator."""
        n = len(accs)
        if n == 1 or n & (n - 1) or n > 16:
            total = self.mod.function("llvm.vector.reduce.add.v16i32", _I32, [accs[0].type],
                                      ("nounwind", "readnone"))
            return [self.b.call(total, [acc]) for acc in accs]
        vals, seg = list(accs), 16  # each vector: 16 // seg rows, row i in lanes [i * seg, (i + 1) * seg)
        while len(vals) > 1:
            half = seg // 2
            lo = [i * seg + j for i in range(16 // seg) for j in range(half)]
            lo = lo + [16 + x for x in lo]
            hi = [x + half for x in lo]
            vals = [self.b.add(self.b.shuffle_vector(a, b, ir.Constant(ir.VectorType(_I32, 16), lo)),
                               self.b.shuffle_vector(a, b, ir.Constant(ir.VectorType(_I32, 16), hi)))
                    for a, b in zip(vals[::2], vals[1::2])]
            seg = half
        (v,) = vals  # n rows of seg lanes each
        while seg > 1:
            half = seg // 2
            lo = [i * seg + j for i in range(n) for j in range(half)]
            hi = [x + half for x in lo]
            width = ir.VectorType(_I32, len(lo))
            v = self.b.add(self.b.shuffle_vector(v, v, ir.Constant(width, lo)),
                           self.b.shuffle_vector(v, v, ir.Constant(width, hi)))
            seg = half
        return [self.b.extract_element(v, _const(_I64, r)) for r in range(n)]

    @_handles("math.ctpop")
    def _ctpop(self, op: Operation) -> None:
        (x,) = self._operands(op)
        self._set(op, self.b.call(self.mod.intrinsic("ctpop", x.type, 1), [x]))

    @_handles("math.ipowi")
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
    mod = _ModuleEmitter(name)
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.body.blocks:
            _KernelEmitter(mod, op, _kernel_spec(op)).emit()
    return mod.module


def parse_loop_level(text: str) -> ModuleOp:
    """Parse and verify loop-level MLIR text (ops missing from xDSL, like `math.isnan`, in generic form)."""
    from xdsl.context import Context
    from xdsl.dialects import builtin, gpu, math
    from xdsl.parser import Parser

    ctx = Context(allow_unregistered=True)
    for dialect in (builtin.Builtin, func.Func, scf.Scf, arith.Arith, memref.MemRef, math.Math, gpu.GPU):
        ctx.load_dialect(dialect)
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
