"""How a CUDA kernel of the loop level is launched, read off its IR: the grid-stride loop that shares its work
(`grid_loop`), the block loop of a block kernel (the GPU schedule of `cvmc.passes.loops.gpu`), its shared memory,
its C symbol, and the multiply-adds and loads one launch performs (`kernel_macs`, `kernel_loads`), all gathered
in a `CudaKernelSpec` per kernel (`kernel_specs`). See `codegen.cuda`'s docstring for the grid and block kernels;
`codegen.cuda` prints the source these specs launch."""

from __future__ import annotations

import itertools
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, ModuleOp
from xdsl.ir import Attribute, Block, Operation, SSAValue

from cvmc.codegen import llvm
from cvmc.codegen.abi import KernelArg
from cvmc.codegen.loop_ir import constant_int, op_name
from cvmc.dialects.cvmc import Dp4aOp, IndexCastUIOp, LoadWordOp
from cvmc.dialects.narrow import is_integer_attr, is_memref
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
    symbols = c_symbols(module)
    llvm_specs = llvm.kernel_specs(module)
    specs: dict[str, CudaKernelSpec] = {}
    for op in kernel_funcs(module):
        name = op.sym_name.data
        grid = grid_loop(op)
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


def kernel_funcs(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]


@dataclass(frozen=True)
class GridLoop:
    """The top-level scf.parallel whose leading dimensions with constant bounds (`bounds`) the grid shares."""

    loop: scf.ParallelOp
    bounds: tuple[tuple[int, int, int], ...]  # (lower bound, step, trip count) of each flattened dimension

    @property
    def work(self) -> int:
        n = 1
        for _, _, trip in self.bounds:
            n *= trip
        return n


def grid_loop(op: func.FuncOp) -> GridLoop | None:
    """The grid loop of a kernel, or None when the kernel runs on one thread (see the module docstring)."""
    ops = list(op.body.block.ops)
    loops = [o for o in ops if isinstance(o, scf.ParallelOp)]
    if len(loops) != 1 or loops[0].initVals:
        return None
    loop = loops[0]
    for other in ops:
        if other is not loop and (other.regions or type(other) in _WRITING_OPS):
            return None
    bounds: list[tuple[int, int, int]] = []
    for lb_v, ub_v, step_v in zip(loop.lowerBound, loop.upperBound, loop.step):
        lb, ub, step = constant_int(lb_v), constant_int(ub_v), constant_int(step_v)
        if lb is None or ub is None or step is None or step <= 0:
            break
        bounds.append((lb, step, max(0, -(-(ub - lb) // step))))
    return GridLoop(loop, tuple(bounds)) if bounds else None


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
    if isinstance(lb, Operation) and isinstance(step, Operation) and _STRIDES.get(op_name(lb)) == op_name(step):
        return op_name(lb)
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


def is_shared(t: Attribute) -> bool:
    """A memref in a block's shared memory (memory space 3, as in NVVM)."""
    return is_memref(t) and is_integer_attr(t.memory_space) and t.memory_space.value.data == 3


def _shared_bytes(op: func.FuncOp) -> int:
    total = 0
    for inner in op.walk():
        if type(inner) is memref.AllocaOp and is_shared(inner.results[0].type):
            t = inner.results[0].type
            assert is_memref(t)
            total += max(1, bit_width(t.element_type) // 8) * math.prod(t.get_shape())
    return total


# --------------------------------------------------------------------------------------------------------------
# Multiply-adds: what a launch computes, for launch descriptions and estimates
# --------------------------------------------------------------------------------------------------------------


class _NotStatic(Exception):
    """A loop bound depends on a value the counter cannot evaluate (a load, a float, an unknown op)."""


class _NeedsIv(Exception):
    """A loop bound depends on the induction variable of an enclosing loop not yet enumerated."""


def _trunc_div(a: int, b: int) -> int:
    """`arith.divsi`: the quotient rounded toward zero, exact at any size (a float quotient is not past 2^53)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


_EVAL: dict[type[Operation], Callable[[int, int], int]] = {
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.MinSIOp: min,
    arith.MaxSIOp: max,
    arith.MinUIOp: min,
    arith.MaxUIOp: max,
    arith.FloorDivSIOp: lambda a, b: 0 if b == 0 else a // b,
    arith.DivSIOp: lambda a, b: 0 if b == 0 else _trunc_div(a, b),
    arith.DivUIOp: lambda a, b: 0 if b == 0 else a // b,
    arith.CeilDivSIOp: lambda a, b: 0 if b == 0 else -(-a // b),
    arith.CeilDivUIOp: lambda a, b: 0 if b == 0 else -(-a // b),
}
_CMP: dict[int, Callable[[int, int], bool]] = {  # arith.cmpi by the predicate's enum value
    0: operator.eq, 1: operator.ne, 2: operator.lt, 3: operator.le, 4: operator.gt, 5: operator.ge,
    6: operator.lt, 7: operator.le, 8: operator.gt, 9: operator.ge}  # fmt: skip


def _evaluate(value: SSAValue, env: dict[SSAValue, int]) -> int:
    """The integer value of an index expression, given the values of enclosing induction variables."""
    if value in env:
        return env[value]
    owner = value.owner
    if not isinstance(owner, Operation):  # a block argument: an induction variable of an enclosing loop
        raise _NeedsIv
    kind = type(owner)
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    if kind in _EVAL:
        return _EVAL[kind](_evaluate(owner.operands[0], env), _evaluate(owner.operands[1], env))
    if kind in (arith.IndexCastOp, IndexCastUIOp, arith.ExtSIOp, arith.ExtUIOp):
        return _evaluate(owner.operands[0], env)
    if kind is arith.SelectOp:
        c, a, b = owner.operands
        return _evaluate(a, env) if _evaluate(c, env) else _evaluate(b, env)
    if isinstance(owner, arith.CmpiOp):
        compare = _CMP[owner.predicate.value.data]
        return int(compare(_evaluate(owner.operands[0], env), _evaluate(owner.operands[1], env)))
    raise _NotStatic


def _is_mac(op: Operation) -> bool:
    """An integer multiply (not an index computation) whose product is added: one multiply-add."""
    if type(op) is not arith.MuliOp or not isinstance(op.results[0].type, IntegerType):
        return False
    return any(type(use.operation) is arith.AddiOp for use in op.results[0].uses)


def _macs_of(op: Operation) -> int:
    """The multiply-adds of one op: 1 for a multiply-add, 4 for `cvmc.dp4a` (four int8 products)."""
    if type(op) is Dp4aOp:
        return 4
    return 1 if _is_mac(op) else 0


def _loads_of(op: Operation) -> int:
    """The memory loads of one op (`memref.load`, `cvmc.load_word`: one instruction each)."""
    return 1 if type(op) in (memref.LoadOp, LoadWordOp) else 0


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
        for point in itertools.product(*ranges):
            inner = dict(env)
            inner.update(zip(ivs, point))
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


_WRITING_OPS = (memref.StoreOp, memref.CopyOp, memref.AllocOp, memref.DeallocOp)


def c_symbols(module: ModuleOp) -> dict[str, str]:
    """The C name of every kernel: `k_` and its symbol name with every character other than a letter, a digit or
    `_` made `_` (`_1`, `_2`, ... appended on a collision). The prefix keeps kernels apart from CUDA's own
    functions (`abs`, `max`, ...), C keywords and the source's own names."""
    symbols: dict[str, str] = {}
    taken: set[str] = set()
    for op in kernel_funcs(module):
        base = "k_" + re.sub(r"[^A-Za-z0-9_]", "_", op.sym_name.data)
        symbol, n = base, 0
        while symbol in taken:
            n += 1
            symbol = f"{base}_{n}"
        taken.add(symbol)
        symbols[op.sym_name.data] = symbol
    return symbols


def bit_width(t: Attribute) -> int:
    """Bits of an integer or index type."""
    if isinstance(t, IndexType):
        return 64
    if isinstance(t, IntegerType) and t.bitwidth in (1, 8, 16, 32, 64):
        return t.bitwidth
    raise CVMRuntimeError(f"cuda codegen: expected an integer of 1, 8, 16, 32 or 64 bits or an index, got {t}")
