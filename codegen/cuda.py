"""Print the loop level (func/scf/memref/arith/math) as CUDA C.

This is a printer: it walks the xDSL IR once and never rewrites it. `emit_cuda(module)` gives the CUDA source
of a whole module, `kernel_specs(module)` what a caller needs to launch its kernels (argument layouts, which
arguments are written, how much work the grid shares). The source includes no header, so NVRTC and `nvcc`
compile it as it is.

Kernel ABI. Every `func.func @name` becomes a device function holding the body and a kernel calling it:

    static __device__ __forceinline__ void b_name(T0 *__restrict__ arg0, const T1 *__restrict__ arg1, ...) {...}
    extern "C" __global__ void __launch_bounds__(256) k_name(void *const *__restrict__ args) {
      b_name((T0 *)args[0], (const T1 *)args[1], ...);
    }

The kernel takes one device array of the N argument pointers whatever N is (kernel parameters are limited to
4 KB, 512 pointers), and the body keeps its `__restrict__` parameters. A memref argument is passed as its *base*
pointer, as in `cvmc.codegen.llvm`: element `(i0, ..., ik)` of a
memref with static strides `s` and offset `o` lives at `base[o + sum(i * s)]`. Arguments the kernel never
writes are `const`; all are `__restrict__` (no written argument may overlap another). The C name of a kernel is
`k_` and its symbol name, sanitized (`CudaKernelSpec.symbol`).

The grid. Only `scf.parallel` maps to the grid, and only in a kernel whose top level is one `scf.parallel`
next to ops that neither write memory nor hold regions (the *splittable* kernels of the LLVM printer). The
leading dimensions of that loop with constant bounds are flattened into `work` units, and a grid-stride loop
deals the units to the threads:

    for (u32 v0 = blockIdx.x * blockDim.x + threadIdx.x; v0 < 96u; v0 += gridDim.x * blockDim.x) {
      i64 v1 = (i64)(v0 / 8u);
      i64 v2 = (i64)(v0 % 8u);
      ...

(`u32` units while they fit 31 bits, else `i64`), so the result does not depend on the launch configuration
(any grid of blocks of at most `BLOCK_SIZE` threads, fewer than 2**31 threads in all). Every other kernel but the
block kernels below has `work == 1` and runs on thread 0 of block 0 alone; nested `scf.parallel` loops run as
sequential loops inside a thread. Only the threads of a block kernel's block share memory (and meet at barriers
to do so); there are no atomics, so every launch computes the same bits.

Block kernels. A kernel whose top level holds `scf.for %b = gpu.block_id to B step gpu.grid_dim` (the GPU
schedule of conv2d and dense, `cvmc.passes.loops.gpu`) deals B blocks to the grid by that block-stride loop,
and the loops `scf.for %v = gpu.thread_id to T step gpu.block_dim` inside it deal the block's work to the
launch's threads: its `work` is B * min(T, BLOCK_SIZE) (T of the loops holding the multiply-adds), and it
computes the same bits under any launch as well. Threads of a block share `memref.alloca`s of memory space 3
(`__shared__` arrays; `shared_bytes` in the spec) and meet at `gpu.barrier` (`__syncthreads()`), which every
thread of a block reaches the same number of times (the loops around a barrier have bounds the whole block agrees
on). `cvmc.dp4a` (a, b, acc: i32) prints as `__dp4a(a, b, acc)` (four signed byte products added to acc, exact)
and `cvmc.load_word` (an i8 memref and indices) as a 4-byte aligned load of the four bytes there as one i32.

Values. Each op result is a local variable `vN` of its C type: an index is an `i64`, `iN` an `iN` typedef
(`i8` is `signed char`), `i1` a `bool` in registers and a `u8` (0 or 1) in memory, `f32` / `f64` `float` /
`double`. Constants are printed inline. A memref value is a pointer: views (`subview`, `reinterpret_cast`,
`cast`) keep the base pointer, as in the LLVM printer.

Integer semantics are total, as the loop level promises, and C++ undefined behaviour is never reached:
wrapping arithmetic is done on unsigned types, operands of narrow types are widened to 32 bits first (sign or
zero extended as the op says) and the result truncated back; division and remainder by zero give 0, INT_MIN / -1
gives INT_MIN and INT_MIN % -1 gives 0; a shift amount outside [0, bits - 1] gives 0 for shli and shrui and the
sign fill for shrsi; fptosi / fptoui saturate (NaN gives 0). Float arithmetic uses the round-to-nearest
intrinsics (`__fadd_rn`, `__fmul_rn`, ...), which the compiler never contracts into FMAs; `math` ops call CUDA's
device functions (`roundf` rounds half away from zero). Exact ops (arithmetic, sqrt, fma, floor, ceil, round,
trunc, fmod, min/max, conversions) give the CPU's bits; transcendental functions are within CUDA's documented
ulp bounds, not bit-identical to the host's libm.

Allocation: `memref.alloca` is a local array of the thread, `memref.alloc` / `memref.dealloc` the device heap
(`malloc`, trapping when it is exhausted, and `free`).

Run `python -m cvmc.codegen.cuda FILE.mlir` to print the CUDA source of a loop-level file.
"""

from __future__ import annotations

import math
import re
import struct
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    UnregisteredOp,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from cvmc.codegen import llvm
from cvmc.codegen.abi import KernelArg
from cvmc.codegen.loop_ir import constant_int, static_layout
from cvmc.errors import CVMRuntimeError

# Threads per block: the kernels' `__launch_bounds__`, and what a launcher should use.
BLOCK_SIZE = 256

# --------------------------------------------------------------------------------------------------------------
# What a caller needs to know about a kernel
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CudaKernelSpec:
    """A kernel's C symbol, its arguments, and the `work` units its grid-stride loop shares among threads."""

    name: str  # the func.func symbol
    symbol: str  # the extern "C" name in the source
    args: tuple[KernelArg, ...]
    work: int  # units of the grid-stride loop (1 when the kernel runs on one thread)
    parallel: bool  # the top-level scf.parallel is spread over the grid (else one thread runs everything)
    macs: int = 0  # integer multiply-adds one launch performs (`kernel_macs`)
    macs_exact: bool = True  # False where a loop around a multiply-add has a trip count known only at run time
    loads: int = 0  # load instructions one launch issues (`kernel_loads`)
    blocks: int = 0  # a block kernel (`_BlockLoop`): the blocks its block-stride loop deals out; 0: none
    shared_bytes: int = 0  # static shared memory of a block

    def threads(self) -> int:
        """The most threads that can have work: `work` when parallel, else 1."""
        return self.work if self.parallel else 1


def kernel_specs(module: ModuleOp) -> dict[str, CudaKernelSpec]:
    """The `CudaKernelSpec` of every kernel of `module`, by name, in module order."""
    symbols = _symbols(module)
    llvm_specs = llvm.kernel_specs(module)
    specs: dict[str, CudaKernelSpec] = {}
    for op in _kernels(module):
        name = op.sym_name.data
        grid = _grid_loop(op)
        blocks = _block_loop(op)
        macs, exact = kernel_macs(op)
        loads = kernel_loads(op)
        if blocks is not None:
            specs[name] = CudaKernelSpec(name, symbols[name], llvm_specs[name].args, blocks.work, True, macs, exact,
                                         loads, blocks.blocks, _shared_bytes(op))
            continue
        work = 1 if grid is None else grid.work
        specs[name] = CudaKernelSpec(name, symbols[name], llvm_specs[name].args, work, grid is not None, macs,
                                     exact, loads)
    return specs


def _kernels(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]


@dataclass(frozen=True)
class _GridLoop:
    """The top-level scf.parallel whose leading dimensions with constant bounds (`bounds`) the grid shares."""

    loop: scf.ParallelOp
    bounds: tuple[tuple[int, int, int], ...]  # (lower bound, step, trip count) of each flattened dimension

    @property
    def work(self) -> int:
        n = 1
        for _, _, trip in self.bounds:
            n *= trip
        return n


def _grid_loop(op: func.FuncOp) -> _GridLoop | None:
    """The grid loop of a kernel, or None when the kernel runs on one thread (see the module docstring)."""
    ops = list(op.body.block.ops)
    loops = [o for o in ops if isinstance(o, scf.ParallelOp)]
    if len(loops) != 1 or loops[0].initVals:
        return None
    loop = loops[0]
    for other in ops:
        if other is not loop and (other.regions or _name(other) in _WRITING_OPS):
            return None
    bounds: list[tuple[int, int, int]] = []
    for lb_v, ub_v, step_v in zip(loop.lowerBound, loop.upperBound, loop.step):
        lb, ub, step = constant_int(lb_v), constant_int(ub_v), constant_int(step_v)
        if lb is None or ub is None or step is None or step <= 0:
            break
        bounds.append((lb, step, max(0, -(-(ub - lb) // step))))
    return _GridLoop(loop, tuple(bounds)) if bounds else None


@dataclass(frozen=True)
class _BlockLoop:
    """A block kernel: a top-level `scf.for %b = gpu.block_id to blocks step gpu.grid_dim` dealing `blocks` blocks
    to the grid, inside which loops `for %v = gpu.thread_id to n step gpu.block_dim` deal a block's work to its
    threads (`threads`: how many of a block of BLOCK_SIZE have some; see `_block_loop`); barriers and shared
    memory are the block's."""

    blocks: int
    threads: int

    @property
    def work(self) -> int:
        return self.blocks * self.threads


_STRIDES = {"gpu.block_id": "gpu.grid_dim", "gpu.thread_id": "gpu.block_dim"}


def _strided_by(loop: scf.ForOp) -> str | None:
    """"gpu.block_id" or "gpu.thread_id" for a loop from that id by the grid's (block's) size, else None."""
    lb, step = loop.lb.owner, loop.step.owner
    if isinstance(lb, Operation) and isinstance(step, Operation) and _STRIDES.get(_name(lb)) == _name(step):
        return _name(lb)
    return None


def _block_loop(op: func.FuncOp) -> _BlockLoop | None:
    """The block loop of a block kernel; its `threads`: of a block's `BLOCK_SIZE` threads, those that have work in
    the thread loops holding multiply-adds (in every thread loop where none holds any)."""
    for top in op.body.block.ops:
        if isinstance(top, scf.ForOp) and _strided_by(top) == "gpu.block_id":
            blocks = constant_int(top.ub)
            loops = [inner for inner in top.walk() if isinstance(inner, scf.ForOp)
                     and _strided_by(inner) == "gpu.thread_id"]  # fmt: skip
            loops = [inner for inner in loops if _has(inner, _macs_of)] or loops
            threads = [constant_int(inner.ub) for inner in loops]
            if blocks is None or not threads or None in threads:
                raise CVMRuntimeError("cuda codegen: expected constant bounds in the block and thread loops")
            return _BlockLoop(blocks, min(BLOCK_SIZE, max(t for t in threads if t is not None)))
    return None


def _is_shared(t: Attribute) -> bool:
    """A memref in a block's shared memory (memory space 3, as in NVVM)."""
    return isinstance(t, MemRefType) and isinstance(t.memory_space, IntegerAttr) and t.memory_space.value.data == 3


def _shared_bytes(op: func.FuncOp) -> int:
    total = 0
    for inner in op.walk():
        if _name(inner) == "memref.alloca" and _is_shared(inner.results[0].type):
            t = inner.results[0].type
            assert isinstance(t, MemRefType)
            total += max(1, _width(t.element_type) // 8) * math.prod(t.get_shape())
    return total


# --------------------------------------------------------------------------------------------------------------
# Multiply-adds: what a launch computes, for launch descriptions and estimates
# --------------------------------------------------------------------------------------------------------------


class _NotStatic(Exception):
    """A loop bound depends on a value the counter cannot evaluate (a load, a float, an unknown op)."""


class _NeedsIv(Exception):
    """A loop bound depends on the induction variable of an enclosing loop not yet enumerated."""


_EVAL = {
    "arith.addi": lambda a, b: a + b,
    "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
    "arith.minsi": min,
    "arith.maxsi": max,
    "arith.minui": min,
    "arith.maxui": max,
    "arith.floordivsi": lambda a, b: 0 if b == 0 else a // b,
    "arith.divsi": lambda a, b: 0 if b == 0 else int(a / b),
    "arith.divui": lambda a, b: 0 if b == 0 else a // b,
    "arith.ceildivsi": lambda a, b: 0 if b == 0 else -(-a // b),
    "arith.ceildivui": lambda a, b: 0 if b == 0 else -(-a // b),
}
_CMP = {0: lambda a, b: a == b, 1: lambda a, b: a != b, 2: lambda a, b: a < b, 3: lambda a, b: a <= b,
        4: lambda a, b: a > b, 5: lambda a, b: a >= b, 6: lambda a, b: a < b, 7: lambda a, b: a <= b,
        8: lambda a, b: a > b, 9: lambda a, b: a >= b}  # fmt: skip


def _evaluate(value: SSAValue, env: dict[SSAValue, int]) -> int:
    """The integer value of an index expression, given the values of enclosing induction variables."""
    if value in env:
        return env[value]
    owner = value.owner
    if not isinstance(owner, Operation):  # a block argument: an induction variable of an enclosing loop
        raise _NeedsIv
    name = _name(owner)
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    if name in _EVAL:
        return _EVAL[name](_evaluate(owner.operands[0], env), _evaluate(owner.operands[1], env))
    if name in ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui"):
        return _evaluate(owner.operands[0], env)
    if name == "arith.select":
        c, a, b = owner.operands
        return _evaluate(a, env) if _evaluate(c, env) else _evaluate(b, env)
    if name == "arith.cmpi":
        predicate = owner.properties["predicate"]
        assert isinstance(predicate, IntegerAttr)
        return int(_CMP[predicate.value.data](_evaluate(owner.operands[0], env), _evaluate(owner.operands[1], env)))
    raise _NotStatic


def _is_mac(op: Operation) -> bool:
    """An integer multiply (not an index computation) whose product is added: one multiply-add."""
    if _name(op) != "arith.muli" or not isinstance(op.results[0].type, IntegerType):
        return False
    return any(_name(use.operation) == "arith.addi" for use in op.results[0].uses)


def _macs_of(op: Operation) -> int:
    """The multiply-adds of one op: 1 for a multiply-add, 4 for `cvmc.dp4a` (four int8 products)."""
    if _name(op) == "cvmc.dp4a":
        return 4
    return 1 if _is_mac(op) else 0


def _loads_of(op: Operation) -> int:
    """The memory loads of one op (`memref.load`, `cvmc.load_word`: one instruction each)."""
    return 1 if _name(op) in ("memref.load", "cvmc.load_word") else 0


_Weight = Callable[[Operation], int]


def _has(op: Operation, weight: _Weight) -> bool:
    return any(weight(inner) for inner in op.walk())


# At most this many iterations are enumerated to count a loop whose inner bounds depend on its variable.
_ENUMERATION_LIMIT = 1 << 20


def _count_block(block: Block, env: dict[SSAValue, int], inexact: list[Operation], weight: _Weight) -> int:
    total = 0
    for op in block.ops:
        if isinstance(op, scf.ForOp | scf.ParallelOp):
            if _has(op, weight):
                try:
                    total += _count_loop(op, env, inexact, weight)
                except _NotStatic:  # a trip count known only at run time: not counted
                    inexact.append(op)
        elif op.regions and _has(op, weight):  # scf.if and the like: the most any branch does (an upper bound)
            total += max(_count_block(b, env, inexact, weight) for r in op.regions for b in r.blocks)
        else:
            total += weight(op)
    return total


def _count_loop(op: scf.ForOp | scf.ParallelOp, env: dict[SSAValue, int], inexact: list[Operation],
                weight: _Weight) -> int:
    if isinstance(op, scf.ForOp):
        dims = [(op.lb, op.ub, op.step)]
        if _strided_by(op) is not None:  # over all the grid's threads: every trip of [0, ub) once
            return _count_times(_evaluate(op.ub, env), op, env, inexact, weight)
    else:
        dims = list(zip(op.lowerBound, op.upperBound, op.step))
    ivs = list(op.body.block.args[: len(dims)])
    ranges = [range(_evaluate(lb, env), _evaluate(ub, env), max(1, _evaluate(step, env))) for lb, ub, step in dims]
    trips = 1
    for r in ranges:
        trips *= len(r)
    if trips == 0:
        return 0
    try:
        return trips * _count_block(op.body.block, env, inexact, weight)
    except _NeedsIv:  # an inner bound depends on these variables: enumerate them
        if trips > _ENUMERATION_LIMIT:
            raise _NotStatic from None
        total = 0
        for point in np.ndindex(*(len(r) for r in ranges)):
            inner = dict(env)
            inner.update({iv: r[i] for iv, r, i in zip(ivs, ranges, point)})
            total += _count_block(op.body.block, inner, inexact, weight)
        return total


def _count_times(trips: int, op: scf.ForOp, env: dict[SSAValue, int], inexact: list[Operation],
                 weight: _Weight) -> int:
    """The count of `trips` trips of a loop striding over the grid's blocks or a block's threads (its body may
    depend on the induction variable: enumerated then)."""
    if trips <= 0:
        return 0
    try:
        return trips * _count_block(op.body.block, env, inexact, weight)
    except _NeedsIv:
        if trips > _ENUMERATION_LIMIT:
            raise _NotStatic from None
        total = 0
        for i in range(trips):
            total += _count_block(op.body.block, {**env, op.body.block.args[0]: i}, inexact, weight)
        return total


def _count(op: func.FuncOp, weight: _Weight) -> tuple[int, bool]:
    inexact: list[Operation] = []
    try:
        return _count_block(op.body.block, {}, inexact, weight), not inexact
    except _NeedsIv:  # a bound depending on a variable that is not an enclosing loop's: not countable
        return 0, False


def kernel_macs(op: func.FuncOp) -> tuple[int, bool]:
    """(multiply-adds, exact): the integer multiply-adds one call of the kernel performs: every non-index
    `arith.muli` whose product feeds an `arith.addi` (the inner step of conv2d, dense and the like, zero padding
    of the reduction included) and four for every `cvmc.dp4a`, times the trips of the loops around it (loops
    whose bounds depend on enclosing variables are enumerated; a block kernel's block and thread loops count
    every block and thread once; of an `scf.if`, the branch with more). A loop whose trip count depends on memory
    (NMS) is not counted, and `exact` is then False."""
    return _count(op, _macs_of)


def kernel_loads(op: func.FuncOp) -> int:
    """The load instructions one call of the kernel issues (`memref.load` and `cvmc.load_word`, global memory and
    shared), counted as `kernel_macs` counts (loops of run-time trips left out)."""
    return _count(op, _loads_of)[0]


_WRITING_OPS = ("memref.store", "memref.copy", "memref.alloc", "memref.dealloc")


# --------------------------------------------------------------------------------------------------------------
# Names, types and literals
# --------------------------------------------------------------------------------------------------------------

_PRELUDE = """\
typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
"""

def _symbols(module: ModuleOp) -> dict[str, str]:
    """The C name of every kernel: `k_` and its symbol name with every character other than a letter, a digit or
    `_` made `_` (`_1`, `_2`, ... appended on a collision). The prefix keeps kernels apart from CUDA's own
    functions (`abs`, `max`, ...), C keywords and the source's own names."""
    symbols: dict[str, str] = {}
    taken: set[str] = set()
    for op in _kernels(module):
        base = "k_" + re.sub(r"[^A-Za-z0-9_]", "_", op.sym_name.data)
        symbol, n = base, 0
        while symbol in taken:
            n += 1
            symbol = f"{base}_{n}"
        taken.add(symbol)
        symbols[op.sym_name.data] = symbol
    return symbols


def _width(t: Attribute) -> int:
    """Bits of an integer or index type."""
    if isinstance(t, IndexType):
        return 64
    if isinstance(t, IntegerType) and t.width.data in (1, 8, 16, 32, 64):
        return t.width.data
    raise CVMRuntimeError(f"cuda codegen: expected an integer of 1, 8, 16, 32 or 64 bits or an index, got {t}")


def _is_int(t: Attribute) -> bool:
    return isinstance(t, IntegerType | IndexType)


def _c_type(t: Attribute) -> str:
    """The C type of an SSA value of type `t` (in registers)."""
    if isinstance(t, Float32Type):
        return "float"
    if isinstance(t, Float64Type):
        return "double"
    w = _width(t)
    return "bool" if w == 1 else f"i{w}"


def _memory_c_type(t: Attribute) -> str:
    """The C type of an element of type `t` in memory (i1 is a byte)."""
    ty = _c_type(t)
    return "u8" if ty == "bool" else ty


def _int_literal(value: int, w: int) -> str:
    """An integer constant of `w` bits, wrapped to the signed range, with the C type of its register."""
    if w == 1:
        return "true" if value & 1 else "false"
    half = 1 << (w - 1)
    v = (value + half) % (2 * half) - half
    if w == 64:
        return "(-9223372036854775807LL - 1)" if v == -half else f"{v}LL"
    if w == 32:
        return "(-2147483647 - 1)" if v == -half else (f"({v})" if v < 0 else str(v))
    return f"((i{w}){v})"


def _float_literal(value: float, t: Attribute) -> str:
    """A float constant: the shortest decimal that reads back to the same bits, or the bits themselves."""
    if isinstance(t, Float32Type):
        if np.isfinite(np.float32(value)):
            text = np.format_float_scientific(np.float32(value), unique=True, trim="-") + "f"
            return f"({text})" if text.startswith("-") else text
        (bits,) = struct.unpack("<I", struct.pack("<f", value))
        return f"__int_as_float((i32)0x{bits:08x}u)"
    if np.isfinite(value):
        text = repr(float(value))
        return f"({text})" if text.startswith("-") else text
    (bits,) = struct.unpack("<Q", struct.pack("<d", value))
    return f"__longlong_as_double((i64)0x{bits:016x}ull)"


# Integer expressions. Operands are primary expressions (a variable, or a literal in parentheses); a result is a
# cast expression, so it may be an operand of any binary operator but must be parenthesized before a cast.


def _zext(x: str, w: int) -> str:
    """`x` (an integer of `w` bits) zero-extended to u32, or u64 for 64 bits."""
    if w == 64:
        return f"(u64){x}"
    if w in (8, 16):
        return f"(u32)(u{w}){x}"
    return f"(u32){x}"


def _sext(x: str, w: int) -> str:
    """`x` sign-extended to i32, or i64 for 64 bits (a true i1 is -1)."""
    if w in (32, 64):
        return x
    if w == 1:
        return f"-(i32){x}"
    return f"(i32){x}"


def _low(x: str, w: int) -> str:
    """`x` as an unsigned value whose low `w` bits are `x`'s (any extension will do)."""
    return f"(u64){x}" if w == 64 else f"(u32){x}"


def _wrap(x: str, w: int) -> str:
    """The low `w` bits of `x` (a primary expression, unsigned or wider) as the register type of `w` bits."""
    if w == 1:
        return f"(({x} & 1u) != 0)"
    return f"(i{w}){x}"


def _name(op: Operation) -> str:
    """The op's name, also for ops parsed as unregistered (e.g. `math.isnan`, `arith.remf` in xDSL 0.74)."""
    if isinstance(op, UnregisteredOp):
        return op.op_name.data
    return op.name


# --------------------------------------------------------------------------------------------------------------
# Layouts
# --------------------------------------------------------------------------------------------------------------


def _layout(t: Attribute) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    return static_layout(t, "cuda codegen: ")


_VIEW_OPS = ("memref.subview", "memref.reinterpret_cast", "memref.cast")

# --------------------------------------------------------------------------------------------------------------
# Helper functions, printed once per module before the kernels that use them
# --------------------------------------------------------------------------------------------------------------

_DEVICE = "static __device__ __forceinline__"


def _division_helpers(s: str, u: str) -> dict[str, str]:
    """Total division and remainder on `s` (i32 / i64) and `u` (u32 / u64); see the module docstring."""
    neg = f"({s})(({u})0 - ({u})a)"  # -a, wrapping: -INT_MIN == INT_MIN
    return {
        f"cvmc_divsi_{s}": f"{_DEVICE} {s} cvmc_divsi_{s}({s} a, {s} b) {{\n"
                           f"  return b == 0 ? 0 : (b == -1 ? {neg} : a / b);\n}}\n",
        f"cvmc_remsi_{s}": f"{_DEVICE} {s} cvmc_remsi_{s}({s} a, {s} b) {{\n"
                           f"  return (b == 0 || b == -1) ? 0 : a % b;\n}}\n",
        f"cvmc_floordivsi_{s}": f"{_DEVICE} {s} cvmc_floordivsi_{s}({s} a, {s} b) {{\n"
                                f"  if (b == 0) return 0;\n"
                                f"  if (b == -1) return {neg};\n"
                                f"  {s} q = a / b, r = a % b;\n"
                                f"  return (r != 0 && (r ^ b) < 0) ? q - 1 : q;\n}}\n",
        f"cvmc_ceildivsi_{s}": f"{_DEVICE} {s} cvmc_ceildivsi_{s}({s} a, {s} b) {{\n"
                               f"  if (b == 0) return 0;\n"
                               f"  if (b == -1) return {neg};\n"
                               f"  {s} q = a / b, r = a % b;\n"
                               f"  return (r != 0 && (r ^ b) >= 0) ? q + 1 : q;\n}}\n",
        f"cvmc_divui_{u}": f"{_DEVICE} {u} cvmc_divui_{u}({u} a, {u} b) {{\n"
                           f"  return b == 0 ? 0 : a / b;\n}}\n",
        f"cvmc_remui_{u}": f"{_DEVICE} {u} cvmc_remui_{u}({u} a, {u} b) {{\n"
                           f"  return b == 0 ? 0 : a % b;\n}}\n",
        f"cvmc_ceildivui_{u}": f"{_DEVICE} {u} cvmc_ceildivui_{u}({u} a, {u} b) {{\n"
                               f"  return b == 0 ? 0 : a / b + (a % b != 0);\n}}\n",
        f"cvmc_ipowi_{s}": f"{_DEVICE} {s} cvmc_ipowi_{s}({s} b, {s} e) {{\n"
                           f"  // b ** e wrapping; e < 0 gives 1 / b ** -e in integers (0 unless b is 1 or -1)\n"
                           f"  if (e < 0) return b == 1 ? 1 : (b == -1 ? ((e & 1) ? -1 : 1) : 0);\n"
                           f"  {u} r = 1, p = ({u})b;\n"
                           f"  for ({u} k = ({u})e; k != 0; k >>= 1) {{\n"
                           f"    if (k & 1) r *= p;\n"
                           f"    p *= p;\n"
                           f"  }}\n"
                           f"  return ({s})r;\n}}\n",
    }  # fmt: skip


def _float_helpers(t: str, bits: str, add: str) -> dict[str, str]:
    """IEEE minimum / maximum on `t`: NaN if either is NaN, -0 below +0."""
    out: dict[str, str] = {}
    for op, less, zero in (("minimumf", "<", "a : b"), ("maximumf", ">", "b : a")):
        out[f"cvmc_{op}_{t}"] = (
            f"{_DEVICE} {t} cvmc_{op}_{t}({t} a, {t} b) {{\n"
            f"  if (a != a || b != b) return {add}(a, b);\n"
            f"  if (a == b) return {bits}(a) < 0 ? {zero};\n"
            f"  return a {less} b ? a : b;\n}}\n"
        )
    return out


_HELPERS: dict[str, str] = {
    **_division_helpers("i32", "u32"),
    **_division_helpers("i64", "u64"),
    **_float_helpers("float", "__float_as_int", "__fadd_rn"),
    **_float_helpers("double", "__double_as_longlong", "__dadd_rn"),
    "cvmc_clamp_i32": f"{_DEVICE} i32 cvmc_clamp_i32(i32 x, i32 lo, i32 hi) {{\n"
                      f"  return x < lo ? lo : (x > hi ? hi : x);\n}}\n",
    "cvmc_clamp_u32": f"{_DEVICE} u32 cvmc_clamp_u32(u32 x, u32 hi) {{\n"
                      f"  return x > hi ? hi : x;\n}}\n",
    # four bytes as one word: NVRTC and nvcc make it one 32-bit load (the alignment is promised), no type punning
    "cvmc_load_word": f"{_DEVICE} i32 cvmc_load_word(const i8 *p) {{\n"
                      f"  const u8 *q = (const u8 *)__builtin_assume_aligned(p, 4);\n"
                      f"  return (i32)((u32)q[0] | (u32)q[1] << 8 | (u32)q[2] << 16 | (u32)q[3] << 24);\n}}\n",
}  # fmt: skip

# --------------------------------------------------------------------------------------------------------------
# Op tables
# --------------------------------------------------------------------------------------------------------------

# Wrapping integer ops: the low bits of the unsigned operation.
_INT_BINARY = {
    "arith.addi": "+",
    "arith.subi": "-",
    "arith.muli": "*",
    "arith.andi": "&",
    "arith.ori": "|",
    "arith.xori": "^",
}
# Float arithmetic: round-to-nearest intrinsics (never contracted to FMA), by C type.
_FLOAT_BINARY = {
    "arith.addf": ("__fadd_rn", "__dadd_rn"),
    "arith.subf": ("__fsub_rn", "__dsub_rn"),
    "arith.mulf": ("__fmul_rn", "__dmul_rn"),
    "arith.divf": ("__fdiv_rn", "__ddiv_rn"),
}
# Total integer ops calling a helper on 32 or 64 bits, and whether their operands are sign extended.
_INT_HELPERS = {
    "arith.divsi": ("cvmc_divsi", True),
    "arith.remsi": ("cvmc_remsi", True),
    "arith.floordivsi": ("cvmc_floordivsi", True),
    "arith.ceildivsi": ("cvmc_ceildivsi", True),
    "arith.divui": ("cvmc_divui", False),
    "arith.remui": ("cvmc_remui", False),
    "arith.ceildivui": ("cvmc_ceildivui", False),
    "math.ipowi": ("cvmc_ipowi", True),
}
# (signed, C operator) by the predicate's enum value.
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
# arith.cmpf by the predicate's enum value; C comparisons are ordered, except != (true when unordered).
_CMPF = (
    "false",
    "({a} == {b})",  # oeq
    "({a} > {b})",  # ogt
    "({a} >= {b})",  # oge
    "({a} < {b})",  # olt
    "({a} <= {b})",  # ole
    "({a} < {b} || {a} > {b})",  # one
    "({a} == {a} && {b} == {b})",  # ord
    "!({a} < {b} || {a} > {b})",  # ueq
    "!({a} <= {b})",  # ugt
    "!({a} < {b})",  # uge
    "!({a} >= {b})",  # ult
    "!({a} > {b})",  # ule
    "({a} != {b})",  # une
    "({a} != {a} || {b} != {b})",  # uno
    "true",
)
_MIN_MAX_INT = {
    "arith.minsi": (True, "<"),
    "arith.maxsi": (True, ">"),
    "arith.minui": (False, "<"),
    "arith.maxui": (False, ">"),
}
# Float ops that are one CUDA device function: the double version's name (the float one adds `f`), or the two
# names where they differ.
_FLOAT_FUNCTIONS: dict[str, str | tuple[str, str]] = {
    "math.absf": "fabs",
    "math.exp": "exp",
    "math.exp2": "exp2",
    "math.expm1": "expm1",
    "math.log": "log",
    "math.log1p": "log1p",
    "math.log2": "log2",
    "math.log10": "log10",
    "math.sqrt": ("__fsqrt_rn", "__dsqrt_rn"),
    "math.sin": "sin",
    "math.cos": "cos",
    "math.tan": "tan",
    "math.asin": "asin",
    "math.acos": "acos",
    "math.atan": "atan",
    "math.sinh": "sinh",
    "math.cosh": "cosh",
    "math.tanh": "tanh",
    "math.asinh": "asinh",
    "math.acosh": "acosh",
    "math.atanh": "atanh",
    "math.erf": "erf",
    "math.cbrt": "cbrt",
    "math.floor": "floor",
    "math.ceil": "ceil",
    "math.round": "round",  # half away from zero, as C's round
    "math.roundeven": "rint",  # the default rounding mode: to nearest, ties to even
    "math.trunc": "trunc",
    "math.powf": "pow",
    "math.atan2": "atan2",
    "math.copysign": "copysign",
    "math.fma": ("__fmaf_rn", "__fma_rn"),
    "arith.remf": "fmod",
    "arith.minnumf": "fmin",
    "arith.maxnumf": "fmax",
}

_Handler = Callable[["_KernelPrinter", Operation], None]
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


class _KernelPrinter:
    """Prints one `func.func` as one `extern "C" __global__` function."""

    def __init__(self, op: func.FuncOp, spec: CudaKernelSpec, helpers: set[str]):
        self.op = op
        self.spec = spec
        self.helpers = helpers  # helper names used so far in the module
        self.lines: list[str] = []
        self.depth = 0
        self.values: dict[SSAValue, str] = {}  # an SSA value's C expression (a variable or a literal)
        self.const_pointers: set[SSAValue] = set()  # memref values that point to read-only memory
        self.counter = 0
        self.grid = _grid_loop(op)

    # ---- output ------------------------------------------------------------------------------------------

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def fresh(self) -> str:
        name = f"v{self.counter}"
        self.counter += 1
        return name

    def define(self, result: SSAValue, expr: str) -> None:
        """`T vN = expr;` for an op result."""
        name = self.fresh()
        self.line(f"{_c_type(result.type)} {name} = {expr};")
        self.values[result] = name

    def helper(self, name: str) -> str:
        if name not in _HELPERS:
            raise CVMRuntimeError(f"cuda codegen: no helper '{name}'")
        self.helpers.add(name)
        return name

    # ---- kernel ------------------------------------------------------------------------------------------

    def emit(self) -> list[str]:
        block = self.op.body.block
        params: list[str] = []
        for arg, karg in zip(block.args, self.spec.args):
            name = f"arg{arg.index}"
            ty = _memory_c_type(arg.type.element_type)  # pyright: ignore[reportAttributeAccessIssue]
            const = "" if karg.written else "const "
            if not karg.written:
                self.const_pointers.add(arg)
            params.append(f"{const}{ty} *__restrict__ {name}")
            self.values[arg] = name
        body = body_symbol(self.spec.symbol)
        self.line(f"{_DEVICE} void {body}({', '.join(params)}) {{")
        self.depth += 1
        if self.grid is None and not self.spec.blocks:
            self.line("if (blockIdx.x != 0 || threadIdx.x != 0) return;  // one thread runs the kernel")
        self.emit_ops(block)
        self.depth -= 1
        self.line("}")
        self.line("")
        casts = [f"({p.rsplit(' *', 1)[0]} *)args[{i}]" for i, p in enumerate(params)]
        self.line(f'extern "C" __global__ void __launch_bounds__({BLOCK_SIZE}) '
                  f"{self.spec.symbol}(void *const *__restrict__ args) {{")  # fmt: skip
        self.line(f"  {body}({', '.join(casts)});")
        self.line("}")
        return self.lines

    # ---- structure ---------------------------------------------------------------------------------------

    def emit_ops(self, block: Block) -> list[str]:
        """Print every op of `block` but its terminator; return the terminator's operand expressions."""
        result: list[str] = []
        for op in block.ops:
            name = _name(op)
            if name in ("scf.yield", "scf.reduce"):
                if name == "scf.reduce" and op.operands:
                    raise CVMRuntimeError("scf.parallel reductions are not part of the loop level")
                result = [self.values[v] for v in op.operands]
                continue
            if name == "func.return":
                continue
            handler = _HANDLERS.get(name)
            if handler is None:
                raise CVMRuntimeError(f"cuda codegen: unsupported op '{name}'")
            handler(self, op)
        return result

    def operands(self, op: Operation) -> list[str]:
        return [self.values[v] for v in op.operands]

    def assign(self, targets: Sequence[str], values: Sequence[str], types: Sequence[Attribute]) -> None:
        """`targets = values`, all at once (a value may read a target: go through temporaries then)."""
        moves = [(t, v, ty) for t, v, ty in zip(targets, values, types) if t != v]
        if len(moves) <= 1 or not set(targets) & set(values):
            for target, value, _ in moves:
                self.line(f"{target} = {value};")
            return
        temps = []
        for _, value, ty in moves:
            temp = self.fresh()
            self.line(f"{_c_type(ty)} {temp} = {value};")
            temps.append(temp)
        for (target, _, _), temp in zip(moves, temps):
            self.line(f"{target} = {temp};")

    @_handles("scf.for")
    def _for(self, op: Operation) -> None:
        assert isinstance(op, scf.ForOp)
        lb, ub, step = (self.values[v] for v in (op.lb, op.ub, op.step))
        block = op.body.block
        carried = []
        for arg, init in zip(block.args[1:], op.iter_args):
            name = self.fresh()
            self.line(f"{_c_type(arg.type)} {name} = {self.values[init]};")
            self.values[arg] = name
            carried.append(name)
        iv = self.fresh()
        self.values[block.args[0]] = iv
        self.line(f"for ({_c_type(block.args[0].type)} {iv} = {lb}; {iv} < {ub}; {iv} += {step}) {{")
        self.depth += 1
        yielded = self.emit_ops(block)
        self.assign(carried, yielded, [a.type for a in block.args[1:]])
        self.depth -= 1
        self.line("}")
        for res, name in zip(op.results, carried):
            self.values[res] = name

    @_handles("scf.parallel")
    def _parallel(self, op: Operation) -> None:
        assert isinstance(op, scf.ParallelOp)
        if op.initVals:
            raise CVMRuntimeError("scf.parallel reductions are not part of the loop level")
        block = op.body.block
        lbs, ubs, steps = ([self.values[v] for v in vs] for vs in (op.lowerBound, op.upperBound, op.step))
        opened = 0
        first = 0
        if self.grid is not None and op is self.grid.loop:
            first = len(self.grid.bounds)
            self._grid_stride(block, self.grid)
            opened += 1
        for dim in range(first, len(lbs)):
            iv = self.fresh()
            self.values[block.args[dim]] = iv
            self.line(f"for (i64 {iv} = {lbs[dim]}; {iv} < {ubs[dim]}; {iv} += {steps[dim]}) {{")
            self.depth += 1
            opened += 1
        self.emit_ops(block)
        for _ in range(opened):
            self.depth -= 1
            self.line("}")

    def _grid_stride(self, block: Block, grid: _GridLoop) -> None:
        """Open the grid-stride loop over the flattened units and define the first dims' induction variables."""
        work = grid.work
        small = work < 2**31  # unit numbers and the grid's stride fit u32 (the launcher keeps the grid < 2**31)
        t, suffix = ("u32", "u") if small else ("i64", "LL")
        start = "blockIdx.x * blockDim.x + threadIdx.x" if small else "(i64)blockIdx.x * blockDim.x + threadIdx.x"
        stride = "gridDim.x * blockDim.x" if small else "(i64)gridDim.x * blockDim.x"
        unit = self.fresh()
        self.line(f"for ({t} {unit} = {start}; {unit} < {work}{suffix}; {unit} += {stride}) {{")
        self.depth += 1
        inner = work
        for dim, (lb, step, trip) in enumerate(grid.bounds):
            inner //= max(trip, 1)
            index = unit if inner == 1 else f"{unit} / {inner}{suffix}"
            if dim > 0:
                index = f"{index} % {trip}{suffix}" if inner == 1 else f"({index}) % {trip}{suffix}"
            expr = f"(i64)({index})"
            if step != 1:
                expr = f"{expr} * {step}LL"
            if lb != 0:
                expr = f"{lb}LL + {expr}"
            iv = self.fresh()
            self.line(f"i64 {iv} = {expr};")
            self.values[block.args[dim]] = iv

    @_handles("scf.if")
    def _if(self, op: Operation) -> None:
        cond = self.values[op.operands[0]]
        names = []
        for res in op.results:
            name = self.fresh()
            self.line(f"{_c_type(res.type)} {name};")
            self.values[res] = name
            names.append(name)
        types = [r.type for r in op.results]
        then_region, else_region = op.regions
        self.line(f"if ({cond}) {{")
        self.depth += 1
        self.assign(names, self.emit_ops(then_region.block), types)
        self.depth -= 1
        if else_region.blocks:
            self.line("} else {")
            self.depth += 1
            self.assign(names, self.emit_ops(else_region.block), types)
            self.depth -= 1
        self.line("}")

    # ---- memory ------------------------------------------------------------------------------------------

    def address(self, memref_value: SSAValue, indices: Sequence[SSAValue | str]) -> str:
        """`base[offset + sum(index * stride)]` for a memref value of static layout; constant indices are folded
        into the offset. An index is an SSA value or the name of a loop variable."""
        _, strides, static = _layout(memref_value.type)
        terms: list[str] = []
        for index, stride in zip(indices, strides):
            constant = constant_int(index) if isinstance(index, SSAValue) else None
            if stride == 0:
                continue
            if constant is not None:
                static += constant * stride
                continue
            name = self.values[index] if isinstance(index, SSAValue) else index
            terms.append(name if stride == 1 else f"{name} * {stride}")
        linear = " + ".join(terms)
        if not terms:
            linear = str(static)
        elif static:
            linear += f" + {static}" if static > 0 else f" - {-static}"
        return f"{self.values[memref_value]}[{linear}]"

    @_handles("memref.load")
    def _load(self, op: Operation) -> None:
        memref_value, *indices = op.operands
        access = self.address(memref_value, indices)
        result = op.results[0]
        self.define(result, f"({access} != 0)" if _c_type(result.type) == "bool" else access)

    @_handles("memref.store")
    def _store(self, op: Operation) -> None:
        value_ssa, memref_value, *indices = op.operands
        value = self.values[value_ssa]
        if _c_type(value_ssa.type) == "bool":
            value = f"(u8){value}"
        self.line(f"{self.address(memref_value, indices)} = {value};")

    def _buffer_elements(self, t: Attribute) -> int:
        shape, strides, offset = _layout(t)
        lo, hi = KernelArg(shape, "", strides, offset, False).element_span()
        if lo < 0:
            raise CVMRuntimeError(f"cuda codegen: expected a layout with non-negative element indices, got {t}")
        return max(1, hi)

    @_handles("memref.alloca")
    def _alloca(self, op: Operation) -> None:
        """A local array of the thread, or (memory space 3) a `__shared__` array of the block."""
        t = op.results[0].type
        assert isinstance(t, MemRefType)
        name = self.fresh()
        shared = "__shared__ " if _is_shared(t) else ""
        self.line(f"{shared}{_memory_c_type(t.element_type)} {name}[{self._buffer_elements(t)}];")
        self.values[op.results[0]] = name

    # ---- gpu and the GPU schedule's own ops --------------------------------------------------------------

    @_handles("gpu.thread_id", "gpu.block_id", "gpu.block_dim", "gpu.grid_dim")
    def _gpu_index(self, op: Operation) -> None:
        dimension = op.properties["dimension"]
        axis = str(getattr(dimension, "data", "x")).lower().rsplit(".", 1)[-1]
        if axis != "x":
            raise CVMRuntimeError(f"cuda codegen: expected dimension x in {_name(op)}, got {axis}")
        variable = {"gpu.thread_id": "threadIdx", "gpu.block_id": "blockIdx", "gpu.block_dim": "blockDim",
                    "gpu.grid_dim": "gridDim"}[_name(op)]  # fmt: skip
        self.define(op.results[0], f"(i64){variable}.x")

    @_handles("gpu.barrier")
    def _barrier(self, op: Operation) -> None:
        self.line("__syncthreads();")

    @_handles("cvmc.dp4a")
    def _dp4a(self, op: Operation) -> None:
        """acc + the sum of the four products of the signed bytes of a and b (exact, wrapping in int32)."""
        a, b, acc = self.operands(op)
        self.define(op.results[0], f"__dp4a({a}, {b}, {acc})")

    @_handles("cvmc.load_word")
    def _load_word(self, op: Operation) -> None:
        """The four bytes at a 4-byte aligned element of an i8 memref, as one i32 (memory order: byte k at bits 8k
        on the little-endian GPU)."""
        memref_value, *indices = op.operands
        self.define(op.results[0], f"{self.helper('cvmc_load_word')}(&{self.address(memref_value, indices)})")

    @_handles("memref.alloc")
    def _alloc(self, op: Operation) -> None:
        t = op.results[0].type
        assert isinstance(t, MemRefType)
        ty = _memory_c_type(t.element_type)
        name = self.fresh()
        self.line(f"{ty} *{name} = ({ty} *)malloc({self._buffer_elements(t)} * sizeof({ty}));")
        self.line(f"if ({name} == nullptr) __trap();  // the device heap is exhausted")
        self.values[op.results[0]] = name

    @_handles("memref.dealloc")
    def _dealloc(self, op: Operation) -> None:
        self.line(f"free({self.values[op.operands[0]]});")

    @_handles(*_VIEW_OPS)
    def _view(self, op: Operation) -> None:
        """A view keeps the base pointer; only a result type whose offset disagrees with the view's own moves it."""
        source = op.operands[0]
        _, src_strides, src_offset = _layout(source.type)
        _, _, res_offset = _layout(op.results[0].type)
        name = _name(op)
        if name == "memref.cast":
            element_offset = src_offset
        else:
            if len(op.operands) != 1:
                raise CVMRuntimeError(f"cuda codegen: expected static offsets, sizes and strides in {name}")
            values = op.properties["static_offsets"].get_values()  # pyright: ignore[reportAttributeAccessIssue]
            if name == "memref.subview":
                element_offset = src_offset + sum(o * s for o, s in zip(values, src_strides))
            else:  # reinterpret_cast: relative to the base pointer
                element_offset = values[0]
        result = op.results[0]
        if source in self.const_pointers:
            self.const_pointers.add(result)
        delta = element_offset - res_offset
        if not delta:
            self.values[result] = self.values[source]
            return
        const = "const " if source in self.const_pointers else ""
        ty = _memory_c_type(result.type.element_type)  # pyright: ignore[reportAttributeAccessIssue]
        view = self.fresh()
        self.line(f"{const}{ty} *{view} = {self.values[source]} + {delta};")
        self.values[result] = view

    @_handles("memref.copy")
    def _copy(self, op: Operation) -> None:
        source, target = op.operands
        shape, _, _ = _layout(source.type)
        ivs: list[str] = []
        for n in shape:
            iv = self.fresh()
            self.line(f"for (i64 {iv} = 0; {iv} < {n}; {iv} += 1) {{")
            self.depth += 1
            ivs.append(iv)
        self.line(f"{self.address(target, ivs)} = {self.address(source, ivs)};")
        for _ in shape:
            self.depth -= 1
            self.line("}")

    # ---- arith -------------------------------------------------------------------------------------------

    @_handles("arith.constant")
    def _constant(self, op: Operation) -> None:
        attr = op.properties["value"]
        t = op.results[0].type
        if isinstance(attr, IntegerAttr) and _is_int(t):
            self.values[op.results[0]] = _int_literal(attr.value.data, _width(t))
        elif isinstance(attr, FloatAttr):
            self.values[op.results[0]] = _float_literal(attr.value.data, t)
        else:
            raise CVMRuntimeError(f"cuda codegen: unsupported arith.constant value {attr}")

    @_handles(*_INT_BINARY)
    def _int_binary(self, op: Operation) -> None:
        a, b = self.operands(op)
        w = _width(op.results[0].type)
        self.define(op.results[0], _wrap(f"({_low(a, w)} {_INT_BINARY[_name(op)]} {_low(b, w)})", w))

    @_handles(*_FLOAT_BINARY)
    def _float_binary(self, op: Operation) -> None:
        a, b = self.operands(op)
        f32, f64 = _FLOAT_BINARY[_name(op)]
        self.define(op.results[0], f"{f32 if _c_type(op.results[0].type) == 'float' else f64}({a}, {b})")

    @_handles("arith.negf")
    def _negf(self, op: Operation) -> None:
        self.define(op.results[0], f"-{self.operands(op)[0]}")

    @_handles(*_INT_HELPERS)
    def _int_helper(self, op: Operation) -> None:
        a, b = self.operands(op)
        w = _width(op.results[0].type)
        base, signed = _INT_HELPERS[_name(op)]
        if signed:
            call = f"{self.helper(f'{base}_i{64 if w == 64 else 32}')}({_sext(a, w)}, {_sext(b, w)})"
        else:
            call = f"{self.helper(f'{base}_u{64 if w == 64 else 32}')}({_zext(a, w)}, {_zext(b, w)})"
        self.define(op.results[0], call if w in (32, 64) and signed else _wrap(call, w))

    @_handles("arith.shli", "arith.shrui", "arith.shrsi")
    def _shift(self, op: Operation) -> None:
        a, b = self.operands(op)
        w = _width(op.results[0].type)
        amount = _zext(b, w)
        name = _name(op)
        constant = constant_int(op.operands[1])
        if constant is not None:  # a constant amount: the range check is done here
            k = constant & ((1 << w) - 1)
            if name == "arith.shrsi":
                self.define(op.results[0], _wrap(f"({_sext(a, w)} >> {min(k, w - 1)})", w))
            elif k >= w:
                self.define(op.results[0], _int_literal(0, w))
            elif name == "arith.shli":
                self.define(op.results[0], _wrap(f"({_low(a, w)} << {k})", w))
            else:
                self.define(op.results[0], _wrap(f"({_zext(a, w)} >> {k})", w))
            return
        if name == "arith.shrsi":
            clamped = f"({amount} < {w}u ? {amount} : {w - 1}u)"
            self.define(op.results[0], _wrap(f"({_sext(a, w)} >> {clamped})", w))
            return
        shifted = f"({_low(a, w)} << {amount})" if name == "arith.shli" else f"({_zext(a, w)} >> {amount})"
        self.define(op.results[0], f"({amount} < {w}u ? {_wrap(shifted, w)} : {_int_literal(0, w)})")

    @_handles("arith.cmpi")
    def _cmpi(self, op: Operation) -> None:
        a, b = self.operands(op)
        predicate = op.properties["predicate"]
        assert isinstance(predicate, IntegerAttr)
        signed, c_op = _CMPI[predicate.value.data]
        w = _width(op.operands[0].type)
        if c_op in ("==", "!="):
            self.define(op.results[0], f"({a} {c_op} {b})")
        else:
            ext = _sext if signed else _zext
            self.define(op.results[0], f"({ext(a, w)} {c_op} {ext(b, w)})")

    @_handles("arith.cmpf")
    def _cmpf(self, op: Operation) -> None:
        a, b = self.operands(op)
        predicate = op.properties["predicate"]
        assert isinstance(predicate, IntegerAttr)
        self.define(op.results[0], _CMPF[predicate.value.data].format(a=a, b=b))

    @_handles("arith.select")
    def _select(self, op: Operation) -> None:
        c, a, b = self.operands(op)
        self.define(op.results[0], f"({c} ? {a} : {b})")

    @_handles(*_MIN_MAX_INT)
    def _min_max(self, op: Operation) -> None:
        a, b = self.operands(op)
        w = _width(op.results[0].type)
        signed, c_op = _MIN_MAX_INT[_name(op)]
        ext = _sext if signed else _zext
        self.define(op.results[0], f"({ext(a, w)} {c_op} {ext(b, w)} ? {a} : {b})")

    @_handles("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui")
    def _int_cast(self, op: Operation) -> None:
        (a,) = self.operands(op)
        src, dst = _width(op.operands[0].type), _width(op.results[0].type)
        name = _name(op)
        if dst <= src:
            expr = _wrap(_low(a, src), dst) if dst < src else a
        elif name in ("arith.extui", "arith.index_castui"):
            expr = _wrap(_zext(a, src), dst)
        elif dst == 32:
            expr = _sext(a, src)  # already an i32
        else:
            expr = _wrap(_sext(a, src), dst)
        self.define(op.results[0], expr)

    @_handles("arith.sitofp", "arith.uitofp")
    def _itofp(self, op: Operation) -> None:
        (a,) = self.operands(op)
        w = _width(op.operands[0].type)
        ext = _sext if _name(op) == "arith.sitofp" else _zext
        self.define(op.results[0], f"({_c_type(op.results[0].type)}){ext(a, w)}")

    @_handles("arith.fptosi", "arith.fptoui")
    def _fptoi(self, op: Operation) -> None:
        """Saturating, NaN to 0: the `_rz` conversion intrinsics, clamped further for narrow types."""
        (x,) = self.operands(op)
        w = _width(op.results[0].type)
        f = "float" if _c_type(op.operands[0].type) == "float" else "double"
        signed = _name(op) == "arith.fptosi"
        if w == 64:
            self.define(op.results[0], f"(i64)__{f}2{'ll' if signed else 'ull'}_rz({x})")
            return
        if signed:
            wide = f"__{f}2int_rz({x})"
            if w < 32:
                lo, hi = (-1, 0) if w == 1 else (-(1 << (w - 1)), (1 << (w - 1)) - 1)
                wide = f"{self.helper('cvmc_clamp_i32')}({wide}, {lo}, {hi})"
        else:
            wide = f"__{f}2uint_rz({x})"
            if w < 32:
                wide = f"{self.helper('cvmc_clamp_u32')}({wide}, {(1 << w) - 1}u)"
        self.define(op.results[0], wide if w == 32 else _wrap(wide, w))

    @_handles("arith.extf", "arith.truncf")
    def _float_cast(self, op: Operation) -> None:
        (x,) = self.operands(op)
        src, dst = _c_type(op.operands[0].type), _c_type(op.results[0].type)
        if src == dst:
            expr = x
        else:
            expr = "(double)" + x if dst == "double" else f"__double2float_rn({x})"
        self.define(op.results[0], expr)

    @_handles("arith.bitcast")
    def _bitcast(self, op: Operation) -> None:
        (x,) = self.operands(op)
        src, dst = _c_type(op.operands[0].type), _c_type(op.results[0].type)
        casts = {
            ("i32", "float"): "__int_as_float",
            ("float", "i32"): "__float_as_int",
            ("i64", "double"): "__longlong_as_double",
            ("double", "i64"): "__double_as_longlong",
        }
        if src == dst:
            self.define(op.results[0], x)
        elif (src, dst) in casts:
            self.define(op.results[0], f"{casts[src, dst]}({x})")
        else:
            raise CVMRuntimeError(f"cuda codegen: unsupported arith.bitcast from {src} to {dst}")

    @_handles("arith.minimumf", "arith.maximumf")
    def _minimum_maximum(self, op: Operation) -> None:
        a, b = self.operands(op)
        base = _name(op).removeprefix("arith.")
        self.define(op.results[0], f"{self.helper(f'cvmc_{base}_{_c_type(op.results[0].type)}')}({a}, {b})")

    # ---- math --------------------------------------------------------------------------------------------

    @_handles(*_FLOAT_FUNCTIONS)
    def _float_function(self, op: Operation) -> None:
        names = _FLOAT_FUNCTIONS[_name(op)]
        f32, f64 = names if isinstance(names, tuple) else (names + "f", names)
        fn = f32 if _c_type(op.results[0].type) == "float" else f64
        self.define(op.results[0], f"{fn}({', '.join(self.operands(op))})")

    @_handles("math.rsqrt")
    def _rsqrt(self, op: Operation) -> None:
        """1 / sqrt(x), both correctly rounded, as the LLVM printer does (CUDA's rsqrt is approximate)."""
        (x,) = self.operands(op)
        if _c_type(op.results[0].type) == "float":
            self.define(op.results[0], f"__fdiv_rn(1.0f, __fsqrt_rn({x}))")
        else:
            self.define(op.results[0], f"__ddiv_rn(1.0, __dsqrt_rn({x}))")

    @_handles("math.isnan", "math.isinf", "math.isfinite")
    def _float_class(self, op: Operation) -> None:
        (x,) = self.operands(op)
        t = op.operands[0].type
        inf = _float_literal(float("inf"), t)
        fabs = "fabsf" if isinstance(t, Float32Type) else "fabs"
        name = _name(op)
        if name == "math.isnan":
            self.define(op.results[0], f"({x} != {x})")
        elif name == "math.isinf":
            self.define(op.results[0], f"({fabs}({x}) == {inf})")
        else:
            self.define(op.results[0], f"({fabs}({x}) < {inf})")

    @_handles("math.absi")
    def _absi(self, op: Operation) -> None:
        (a,) = self.operands(op)
        w = _width(op.results[0].type)
        zero = "0ull" if w == 64 else "0u"
        self.define(op.results[0], _wrap(f"({_sext(a, w)} < 0 ? {zero} - {_low(a, w)} : {_low(a, w)})", w))

    @_handles("math.ctlz", "math.cttz", "math.ctpop")
    def _bit_count(self, op: Operation) -> None:
        (a,) = self.operands(op)
        w = _width(op.results[0].type)
        x = _zext(a, w)
        ll = "ll" if w == 64 else ""
        name = _name(op)
        if name == "math.ctpop":
            count = f"__popc{ll}({x})"
        elif name == "math.ctlz":
            count = f"(__clz{ll}({x}) - {64 - w if w == 64 else 32 - w})"
        else:  # cttz of 0 is the width
            count = f"({x} == 0 ? {w} : __ffs{ll}({x}) - 1)"
        self.define(op.results[0], _wrap(f"(u32){count}", w))


def body_symbol(symbol: str) -> str:
    """The device function holding the body of the kernel `symbol` (`k_...`): `b_...`, unique as the symbols are."""
    return "b_" + symbol.removeprefix("k_")


def emit_cuda(module: ModuleOp) -> str:
    """The CUDA source of a loop-level `module` (every `func.func` with a body becomes a kernel)."""
    specs = kernel_specs(module)
    helpers: set[str] = set()
    kernels: list[str] = []
    for op in _kernels(module):
        kernels.append("\n".join(_KernelPrinter(op, specs[op.sym_name.data], helpers).emit()))
    parts = ["// Generated by cvmc.codegen.cuda.\n" + _PRELUDE]
    parts += [text for name, text in _HELPERS.items() if name in helpers]
    parts += [k + "\n" for k in kernels]
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m cvmc.codegen.cuda FILE.mlir`: print the CUDA source of a loop-level file ('-' reads stdin)."""
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) != 1:
        sys.exit("usage: python -m cvmc.codegen.cuda FILE.mlir")
    text = sys.stdin.read() if args[0] == "-" else open(args[0]).read()
    try:
        print(emit_cuda(llvm.parse_loop_level(text)), end="")
    except CVMRuntimeError as e:
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    main()
