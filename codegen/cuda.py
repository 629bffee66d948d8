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

import sys
from collections.abc import Callable, Sequence

from xdsl.dialects import arith, func, gpu, math, memref, scf
from xdsl.dialects.builtin import (
    Float32Type,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from cvmc.codegen import llvm
from cvmc.codegen.abi import KernelArg
from cvmc.codegen.cuda_c import (
    DEVICE,
    HELPERS,
    PRELUDE,
    c_type,
    float_literal,
    int_literal,
    is_int,
    low,
    memory_c_type,
    sext,
    wrap,
    zext,
)
from cvmc.codegen.cuda_launch import (
    BLOCK_SIZE,
    CudaKernelSpec,
    GridLoop,
    bit_width,
    grid_loop,
    is_shared,
    kernel_funcs,
    kernel_specs,
)
from cvmc.codegen.loop_ir import VIEW_OPS, constant_int, op_name, static_layout
from cvmc.dialects.cvmc import Dp4aOp, IndexCastUIOp, IsFiniteOp, IsInfOp, IsNanOp, LoadWordOp, RemFOp
from cvmc.dialects.narrow import is_memref
from cvmc.errors import CVMRuntimeError

# --------------------------------------------------------------------------------------------------------------
# Layouts
# --------------------------------------------------------------------------------------------------------------


def _layout(t: Attribute) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    return static_layout(t, "cuda codegen: ")



# --------------------------------------------------------------------------------------------------------------
# Op tables
# --------------------------------------------------------------------------------------------------------------

# Wrapping integer ops: the low bits of the unsigned operation.
_INT_BINARY: dict[type[Operation], str] = {
    arith.AddiOp: "+",
    arith.SubiOp: "-",
    arith.MuliOp: "*",
    arith.AndIOp: "&",
    arith.OrIOp: "|",
    arith.XOrIOp: "^",
}
# Float arithmetic: round-to-nearest intrinsics (never contracted to FMA), by C type.
_FLOAT_BINARY: dict[type[Operation], tuple[str, str]] = {
    arith.AddfOp: ("__fadd_rn", "__dadd_rn"),
    arith.SubfOp: ("__fsub_rn", "__dsub_rn"),
    arith.MulfOp: ("__fmul_rn", "__dmul_rn"),
    arith.DivfOp: ("__fdiv_rn", "__ddiv_rn"),
}
# Total integer ops calling a helper on 32 or 64 bits, and whether their operands are sign extended.
_INT_HELPERS: dict[type[Operation], tuple[str, bool]] = {
    arith.DivSIOp: ("cvmc_divsi", True),
    arith.RemSIOp: ("cvmc_remsi", True),
    arith.FloorDivSIOp: ("cvmc_floordivsi", True),
    arith.CeilDivSIOp: ("cvmc_ceildivsi", True),
    arith.DivUIOp: ("cvmc_divui", False),
    arith.RemUIOp: ("cvmc_remui", False),
    arith.CeilDivUIOp: ("cvmc_ceildivui", False),
    math.IPowIOp: ("cvmc_ipowi", True),
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
_MIN_MAX_INT: dict[type[Operation], tuple[bool, str]] = {
    arith.MinSIOp: (True, "<"),
    arith.MaxSIOp: (True, ">"),
    arith.MinUIOp: (False, "<"),
    arith.MaxUIOp: (False, ">"),
}
# Float ops that are one CUDA device function: the double version's name (the float one adds `f`), or the two
# names where they differ.
_FLOAT_FUNCTIONS: dict[type[Operation], str | tuple[str, str]] = {
    math.AbsFOp: "fabs",
    math.ExpOp: "exp",
    math.Exp2Op: "exp2",
    math.ExpM1Op: "expm1",
    math.LogOp: "log",
    math.Log1pOp: "log1p",
    math.Log2Op: "log2",
    math.Log10Op: "log10",
    math.SqrtOp: ("__fsqrt_rn", "__dsqrt_rn"),
    math.SinOp: "sin",
    math.CosOp: "cos",
    math.TanOp: "tan",
    math.AsinOp: "asin",
    math.AcosOp: "acos",
    math.AtanOp: "atan",
    math.SinhOp: "sinh",
    math.CoshOp: "cosh",
    math.TanhOp: "tanh",
    math.AsinhOp: "asinh",
    math.AcoshOp: "acosh",
    math.AtanhOp: "atanh",
    math.ErfOp: "erf",
    math.CbrtOp: "cbrt",
    math.FloorOp: "floor",
    math.CeilOp: "ceil",
    math.RoundOp: "round",  # half away from zero, as C's round
    math.RoundEvenOp: "rint",  # the default rounding mode: to nearest, ties to even
    math.TruncOp: "trunc",
    math.PowFOp: "pow",
    math.Atan2Op: "atan2",
    math.CopySignOp: "copysign",
    math.FmaOp: ("__fmaf_rn", "__fma_rn"),
    RemFOp: "fmod",
    arith.MinnumfOp: "fmin",
    arith.MaxnumfOp: "fmax",
}

_Handler = Callable[["_KernelPrinter", Operation], None]
_HANDLERS: dict[type[Operation], _Handler] = {}  # by the op's class: one dispatch


def _handles(*ops: type[Operation]) -> Callable[[_Handler], _Handler]:
    def register(handler: _Handler) -> _Handler:
        for op in ops:
            _HANDLERS[op] = handler
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
        self.grid = grid_loop(op)

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
        self.line(f"{c_type(result.type)} {name} = {expr};")
        self.values[result] = name

    def helper(self, name: str) -> str:
        if name not in HELPERS:
            raise CVMRuntimeError(f"cuda codegen: no helper '{name}'")
        self.helpers.add(name)
        return name

    # ---- kernel ------------------------------------------------------------------------------------------

    def emit(self) -> list[str]:
        block = self.op.body.block
        params: list[str] = []
        for arg, karg in zip(block.args, self.spec.args):
            name = f"arg{arg.index}"
            assert is_memref(arg.type)
            ty = memory_c_type(arg.type.element_type)
            const = "" if karg.written else "const "
            if not karg.written:
                self.const_pointers.add(arg)
            params.append(f"{const}{ty} *__restrict__ {name}")
            self.values[arg] = name
        body = body_symbol(self.spec.symbol)
        self.line(f"{DEVICE} void {body}({', '.join(params)}) {{")
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
            kind = type(op)
            if kind in (scf.YieldOp, scf.ReduceOp):
                if kind is scf.ReduceOp and op.operands:
                    raise CVMRuntimeError("scf.parallel reductions are not part of the loop level")
                result = [self.values[v] for v in op.operands]
                continue
            if kind is func.ReturnOp:
                continue
            handler = _HANDLERS.get(kind)
            if handler is None:
                raise CVMRuntimeError(f"cuda codegen: unsupported op '{op_name(op)}'")
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
        temps: list[str] = []
        for _, value, ty in moves:
            temp = self.fresh()
            self.line(f"{c_type(ty)} {temp} = {value};")
            temps.append(temp)
        for (target, _, _), temp in zip(moves, temps):
            self.line(f"{target} = {temp};")

    @_handles(scf.ForOp)
    def _for(self, op: Operation) -> None:
        assert isinstance(op, scf.ForOp)
        lb, ub, step = (self.values[v] for v in (op.lb, op.ub, op.step))
        block = op.body.block
        carried: list[str] = []
        for arg, init in zip(block.args[1:], op.iter_args):
            name = self.fresh()
            self.line(f"{c_type(arg.type)} {name} = {self.values[init]};")
            self.values[arg] = name
            carried.append(name)
        iv = self.fresh()
        self.values[block.args[0]] = iv
        self.line(f"for ({c_type(block.args[0].type)} {iv} = {lb}; {iv} < {ub}; {iv} += {step}) {{")
        self.depth += 1
        yielded = self.emit_ops(block)
        self.assign(carried, yielded, [a.type for a in block.args[1:]])
        self.depth -= 1
        self.line("}")
        for res, name in zip(op.results, carried):
            self.values[res] = name

    @_handles(scf.ParallelOp)
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

    def _grid_stride(self, block: Block, grid: GridLoop) -> None:
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

    @_handles(scf.IfOp)
    def _if(self, op: Operation) -> None:
        cond = self.values[op.operands[0]]
        names: list[str] = []
        for res in op.results:
            name = self.fresh()
            self.line(f"{c_type(res.type)} {name};")
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

    @_handles(memref.LoadOp)
    def _load(self, op: Operation) -> None:
        memref_value, *indices = op.operands
        access = self.address(memref_value, indices)
        result = op.results[0]
        self.define(result, f"({access} != 0)" if c_type(result.type) == "bool" else access)

    @_handles(memref.StoreOp)
    def _store(self, op: Operation) -> None:
        value_ssa, memref_value, *indices = op.operands
        value = self.values[value_ssa]
        if c_type(value_ssa.type) == "bool":
            value = f"(u8){value}"
        self.line(f"{self.address(memref_value, indices)} = {value};")

    def _buffer_elements(self, t: Attribute) -> int:
        shape, strides, offset = _layout(t)
        lo, hi = KernelArg(shape, "", strides, offset, False).element_span()
        if lo < 0:
            raise CVMRuntimeError(f"cuda codegen: expected a layout with non-negative element indices, got {t}")
        return max(1, hi)

    @_handles(memref.AllocaOp)
    def _alloca(self, op: Operation) -> None:
        """A local array of the thread, or (memory space 3) a `__shared__` array of the block."""
        t = op.results[0].type
        assert is_memref(t)
        name = self.fresh()
        shared = "__shared__ " if is_shared(t) else ""
        self.line(f"{shared}{memory_c_type(t.element_type)} {name}[{self._buffer_elements(t)}];")
        self.values[op.results[0]] = name

    # ---- gpu and the GPU schedule's own ops --------------------------------------------------------------

    @_handles(gpu.ThreadIdOp, gpu.BlockIdOp, gpu.BlockDimOp, gpu.GridDimOp)
    def _gpu_index(self, op: Operation) -> None:
        assert isinstance(op, gpu.ThreadIdOp | gpu.BlockIdOp | gpu.BlockDimOp | gpu.GridDimOp)
        axis = str(op.dimension.data).lower().rsplit(".", 1)[-1]
        if axis != "x":
            raise CVMRuntimeError(f"cuda codegen: expected dimension x in {op_name(op)}, got {axis}")
        variable = {gpu.ThreadIdOp: "threadIdx", gpu.BlockIdOp: "blockIdx", gpu.BlockDimOp: "blockDim",
                    gpu.GridDimOp: "gridDim"}[type(op)]  # fmt: skip
        self.define(op.results[0], f"(i64){variable}.x")

    @_handles(gpu.BarrierOp)
    def _barrier(self, op: Operation) -> None:
        self.line("__syncthreads();")

    @_handles(Dp4aOp)
    def _dp4a(self, op: Operation) -> None:
        """acc + the sum of the four products of the signed bytes of a and b (exact, wrapping in int32)."""
        a, b, acc = self.operands(op)
        self.define(op.results[0], f"__dp4a({a}, {b}, {acc})")

    @_handles(LoadWordOp)
    def _load_word(self, op: Operation) -> None:
        """The four bytes at a 4-byte aligned element of an i8 memref, as one i32 (memory order: byte k at bits 8k
        on the little-endian GPU)."""
        memref_value, *indices = op.operands
        self.define(op.results[0], f"{self.helper('cvmc_load_word')}(&{self.address(memref_value, indices)})")

    @_handles(memref.AllocOp)
    def _alloc(self, op: Operation) -> None:
        t = op.results[0].type
        assert is_memref(t)
        ty = memory_c_type(t.element_type)
        name = self.fresh()
        self.line(f"{ty} *{name} = ({ty} *)malloc({self._buffer_elements(t)} * sizeof({ty}));")
        self.line(f"if ({name} == nullptr) __trap();  // the device heap is exhausted")
        self.values[op.results[0]] = name

    @_handles(memref.DeallocOp)
    def _dealloc(self, op: Operation) -> None:
        self.line(f"free({self.values[op.operands[0]]});")

    @_handles(*VIEW_OPS)
    def _view(self, op: Operation) -> None:
        """A view keeps the base pointer; only a result type whose offset disagrees with the view's own moves it."""
        source = op.operands[0]
        _, src_strides, src_offset = _layout(source.type)
        _, _, res_offset = _layout(op.results[0].type)
        kind = type(op)
        if kind is memref.CastOp:
            element_offset = src_offset
        else:
            if len(op.operands) != 1:
                raise CVMRuntimeError(f"cuda codegen: expected static offsets, sizes and strides in {op_name(op)}")
            assert isinstance(op, memref.SubviewOp | memref.ReinterpretCastOp)
            values = op.static_offsets.get_values()
            if kind is memref.SubviewOp:
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
        assert is_memref(result.type)
        ty = memory_c_type(result.type.element_type)
        view = self.fresh()
        self.line(f"{const}{ty} *{view} = {self.values[source]} + {delta};")
        self.values[result] = view

    @_handles(memref.CopyOp)
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

    @_handles(arith.ConstantOp)
    def _constant(self, op: Operation) -> None:
        assert isinstance(op, arith.ConstantOp)
        attr = op.value
        t = op.results[0].type
        if isinstance(attr, IntegerAttr) and is_int(t):
            self.values[op.results[0]] = int_literal(attr.value.data, bit_width(t))
        elif isinstance(attr, FloatAttr):
            self.values[op.results[0]] = float_literal(attr.value.data, t)
        else:
            raise CVMRuntimeError(f"cuda codegen: unsupported arith.constant value {attr}")

    @_handles(*_INT_BINARY)
    def _int_binary(self, op: Operation) -> None:
        a, b = self.operands(op)
        w = bit_width(op.results[0].type)
        self.define(op.results[0], wrap(f"({low(a, w)} {_INT_BINARY[type(op)]} {low(b, w)})", w))

    @_handles(*_FLOAT_BINARY)
    def _float_binary(self, op: Operation) -> None:
        a, b = self.operands(op)
        f32, f64 = _FLOAT_BINARY[type(op)]
        self.define(op.results[0], f"{f32 if c_type(op.results[0].type) == 'float' else f64}({a}, {b})")

    @_handles(arith.NegfOp)
    def _negf(self, op: Operation) -> None:
        self.define(op.results[0], f"-{self.operands(op)[0]}")

    @_handles(*_INT_HELPERS)
    def _int_helper(self, op: Operation) -> None:
        a, b = self.operands(op)
        w = bit_width(op.results[0].type)
        base, signed = _INT_HELPERS[type(op)]
        if signed:
            call = f"{self.helper(f'{base}_i{64 if w == 64 else 32}')}({sext(a, w)}, {sext(b, w)})"
        else:
            call = f"{self.helper(f'{base}_u{64 if w == 64 else 32}')}({zext(a, w)}, {zext(b, w)})"
        self.define(op.results[0], call if w in (32, 64) and signed else wrap(call, w))

    @_handles(arith.ShLIOp, arith.ShRUIOp, arith.ShRSIOp)
    def _shift(self, op: Operation) -> None:
        a, b = self.operands(op)
        w = bit_width(op.results[0].type)
        amount = zext(b, w)
        kind = type(op)
        constant = constant_int(op.operands[1])
        if constant is not None:  # a constant amount: the range check is done here
            k = constant & ((1 << w) - 1)
            if kind is arith.ShRSIOp:
                self.define(op.results[0], wrap(f"({sext(a, w)} >> {min(k, w - 1)})", w))
            elif k >= w:
                self.define(op.results[0], int_literal(0, w))
            elif kind is arith.ShLIOp:
                self.define(op.results[0], wrap(f"({low(a, w)} << {k})", w))
            else:
                self.define(op.results[0], wrap(f"({zext(a, w)} >> {k})", w))
            return
        if kind is arith.ShRSIOp:
            clamped = f"({amount} < {w}u ? {amount} : {w - 1}u)"
            self.define(op.results[0], wrap(f"({sext(a, w)} >> {clamped})", w))
            return
        shifted = f"({low(a, w)} << {amount})" if kind is arith.ShLIOp else f"({zext(a, w)} >> {amount})"
        self.define(op.results[0], f"({amount} < {w}u ? {wrap(shifted, w)} : {int_literal(0, w)})")

    @_handles(arith.CmpiOp)
    def _cmpi(self, op: Operation) -> None:
        a, b = self.operands(op)
        assert isinstance(op, arith.CmpiOp)
        signed, c_op = _CMPI[op.predicate.value.data]
        w = bit_width(op.operands[0].type)
        if c_op in ("==", "!="):
            self.define(op.results[0], f"({a} {c_op} {b})")
        else:
            ext = sext if signed else zext
            self.define(op.results[0], f"({ext(a, w)} {c_op} {ext(b, w)})")

    @_handles(arith.CmpfOp)
    def _cmpf(self, op: Operation) -> None:
        a, b = self.operands(op)
        assert isinstance(op, arith.CmpfOp)
        self.define(op.results[0], _CMPF[op.predicate.value.data].format(a=a, b=b))

    @_handles(arith.SelectOp)
    def _select(self, op: Operation) -> None:
        c, a, b = self.operands(op)
        self.define(op.results[0], f"({c} ? {a} : {b})")

    @_handles(*_MIN_MAX_INT)
    def _min_max(self, op: Operation) -> None:
        a, b = self.operands(op)
        w = bit_width(op.results[0].type)
        signed, c_op = _MIN_MAX_INT[type(op)]
        ext = sext if signed else zext
        self.define(op.results[0], f"({ext(a, w)} {c_op} {ext(b, w)} ? {a} : {b})")

    @_handles(arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp, arith.IndexCastOp, IndexCastUIOp)
    def _int_cast(self, op: Operation) -> None:
        (a,) = self.operands(op)
        src, dst = bit_width(op.operands[0].type), bit_width(op.results[0].type)
        kind = type(op)
        if dst <= src:
            expr = wrap(low(a, src), dst) if dst < src else a
        elif kind in (arith.ExtUIOp, IndexCastUIOp):
            expr = wrap(zext(a, src), dst)
        elif dst == 32:
            expr = sext(a, src)  # already an i32
        else:
            expr = wrap(sext(a, src), dst)
        self.define(op.results[0], expr)

    @_handles(arith.SIToFPOp, arith.UIToFPOp)
    def _itofp(self, op: Operation) -> None:
        (a,) = self.operands(op)
        w = bit_width(op.operands[0].type)
        ext = sext if type(op) is arith.SIToFPOp else zext
        self.define(op.results[0], f"({c_type(op.results[0].type)}){ext(a, w)}")

    @_handles(arith.FPToSIOp, arith.FPToUIOp)
    def _fptoi(self, op: Operation) -> None:
        """Saturating, NaN to 0: the `_rz` conversion intrinsics, clamped further for narrow types."""
        (x,) = self.operands(op)
        w = bit_width(op.results[0].type)
        f = "float" if c_type(op.operands[0].type) == "float" else "double"
        signed = type(op) is arith.FPToSIOp
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
        self.define(op.results[0], wide if w == 32 else wrap(wide, w))

    @_handles(arith.ExtFOp, arith.TruncFOp)
    def _float_cast(self, op: Operation) -> None:
        (x,) = self.operands(op)
        src, dst = c_type(op.operands[0].type), c_type(op.results[0].type)
        if src == dst:
            expr = x
        else:
            expr = "(double)" + x if dst == "double" else f"__double2float_rn({x})"
        self.define(op.results[0], expr)

    @_handles(arith.BitcastOp)
    def _bitcast(self, op: Operation) -> None:
        (x,) = self.operands(op)
        src, dst = c_type(op.operands[0].type), c_type(op.results[0].type)
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

    @_handles(arith.MinimumfOp, arith.MaximumfOp)
    def _minimum_maximum(self, op: Operation) -> None:
        a, b = self.operands(op)
        base = op_name(op).removeprefix("arith.")
        self.define(op.results[0], f"{self.helper(f'cvmc_{base}_{c_type(op.results[0].type)}')}({a}, {b})")

    # ---- math --------------------------------------------------------------------------------------------

    @_handles(*_FLOAT_FUNCTIONS)
    def _float_function(self, op: Operation) -> None:
        names = _FLOAT_FUNCTIONS[type(op)]
        f32, f64 = names if isinstance(names, tuple) else (names + "f", names)
        fn = f32 if c_type(op.results[0].type) == "float" else f64
        self.define(op.results[0], f"{fn}({', '.join(self.operands(op))})")

    @_handles(math.RsqrtOp)
    def _rsqrt(self, op: Operation) -> None:
        """1 / sqrt(x), both correctly rounded, as the LLVM printer does (CUDA's rsqrt is approximate)."""
        (x,) = self.operands(op)
        if c_type(op.results[0].type) == "float":
            self.define(op.results[0], f"__fdiv_rn(1.0f, __fsqrt_rn({x}))")
        else:
            self.define(op.results[0], f"__ddiv_rn(1.0, __dsqrt_rn({x}))")

    @_handles(IsNanOp, IsInfOp, IsFiniteOp)
    def _float_class(self, op: Operation) -> None:
        (x,) = self.operands(op)
        t = op.operands[0].type
        inf = float_literal(float("inf"), t)
        fabs = "fabsf" if isinstance(t, Float32Type) else "fabs"
        kind = type(op)
        if kind is IsNanOp:
            self.define(op.results[0], f"({x} != {x})")
        elif kind is IsInfOp:
            self.define(op.results[0], f"({fabs}({x}) == {inf})")
        else:
            self.define(op.results[0], f"({fabs}({x}) < {inf})")

    @_handles(math.AbsIOp)
    def _absi(self, op: Operation) -> None:
        (a,) = self.operands(op)
        w = bit_width(op.results[0].type)
        zero = "0ull" if w == 64 else "0u"
        self.define(op.results[0], wrap(f"({sext(a, w)} < 0 ? {zero} - {low(a, w)} : {low(a, w)})", w))

    @_handles(math.CountLeadingZerosOp, math.CountTrailingZerosOp, math.CtPopOp)
    def _bit_count(self, op: Operation) -> None:
        (a,) = self.operands(op)
        w = bit_width(op.results[0].type)
        x = zext(a, w)
        ll = "ll" if w == 64 else ""
        kind = type(op)
        if kind is math.CtPopOp:
            count = f"__popc{ll}({x})"
        elif kind is math.CountLeadingZerosOp:
            count = f"(__clz{ll}({x}) - {64 - w if w == 64 else 32 - w})"
        else:  # cttz of 0 is the width
            count = f"({x} == 0 ? {w} : __ffs{ll}({x}) - 1)"
        self.define(op.results[0], wrap(f"(u32){count}", w))


def body_symbol(symbol: str) -> str:
    """The device function holding the body of the kernel `symbol` (`k_...`): `b_...`, unique as the symbols are."""
    return "b_" + symbol.removeprefix("k_")


def emit_cuda(module: ModuleOp) -> str:
    """The CUDA source of a loop-level `module` (every `func.func` with a body becomes a kernel)."""
    specs = kernel_specs(module)
    helpers: set[str] = set()
    kernels: list[str] = []
    for op in kernel_funcs(module):
        kernels.append("\n".join(_KernelPrinter(op, specs[op.sym_name.data], helpers).emit()))
    parts = ["// Generated by cvmc.codegen.cuda.\n" + PRELUDE]
    parts += [text for name, text in HELPERS.items() if name in helpers]
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
