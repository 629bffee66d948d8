"""`CinnBuilder`: build a program of cinn primitives from Python, as Paddle CINN's CinnBuilder, and run it.

    from cvmc import CinnBuilder
    b = CinnBuilder("net")
    x = b.create_input("float32", [4, 8], "x")
    y = b.max(x, b.const_scalar(0.0, "zero"))
    z = b.reduce(y, "sum", [1], False)
    fn = b.compile(outputs=[z], device="reference")   # "cpu": JIT-compiled fused kernels; "cuda"
    (out,) = fn(x=np_x)
    print(b.build())                      # a builtin.module with one func.func of cinn ops

A variable is the xDSL SSA value of a block argument or op result. Every method creates its op with the op's own
shape inference and verifier: misuse raises `CVMLogicError` with the verifier's message. Every tensor, input or
result, has at most `MAX_RANK` dims and `MAX_ELEMENTS` elements (the CVM rules' bound on a tensor): a larger one is
a `CVMLogicError` when it is made, never a numpy MemoryError when it runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from math import prod
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import Float32Type, Float64Type, FloatAttr, IntegerAttr, IntegerType, ModuleOp, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from cvmc.dialects import cinn
from cvmc.dialects.cvm_rules import MAX_SIZE
from cvmc.errors import CVMLogicError, CVMRuntimeError
from cvmc.runtime.references.cinn import ELEMENT_TYPES, numpy_dtype, run_function

if TYPE_CHECKING:
    from xdsl.passes import ModulePass

    from cvmc.passes.convert_cinn_to_loops import KernelPlan

Variable = SSAValue
DEVICES = ("reference", "cpu", "cuda")
MAX_RANK = 8
MAX_ELEMENTS = MAX_SIZE  # 2**30
Step = tuple[Any, Sequence[SSAValue], Sequence[SSAValue], int]  # a kernel, the values it reads, writes, its work


def _check_shape(shape: Sequence[int], what: str) -> None:
    """A tensor's shape within the builder's caps (dims already known to be integers >= 0)."""
    if len(shape) > MAX_RANK:
        raise CVMLogicError(f"{what}: expected at most {MAX_RANK} dims, got {len(shape)} ({list(shape)})")
    size = 1
    for d in shape:
        size *= int(d)
    if size > MAX_ELEMENTS:
        raise CVMLogicError(f"{what}: expected at most {MAX_ELEMENTS} elements, got {size} ({list(shape)})")


def _dtype(name: str) -> np.dtype:
    dtype = next((d for d in ELEMENT_TYPES if d.name == name), None)
    if dtype is None:
        names = ", ".join(d.name for d in ELEMENT_TYPES)
        raise CVMLogicError(f"expected a dtype in [{names}], got {name!r}")
    return dtype


class CompiledFunction:
    """A compiled program: call it with the inputs by name, get the outputs as a list of numpy arrays."""

    def __init__(self, function: func.FuncOp, names: Sequence[str], run: Callable[[list[np.ndarray]], list]):
        self.function = function
        self.names = list(names)
        self._run = run
        types = function.function_type.inputs.data
        assert all(isinstance(t, TensorType) for t in types)
        self._types = [(name, numpy_dtype(t), t.get_shape()) for name, t in zip(self.names, types)]  # pyright: ignore

    def __call__(self, **inputs: np.ndarray) -> list[np.ndarray]:
        if len(inputs) != len(self.names) or any(n not in inputs for n in self.names):
            missing = [n for n in self.names if n not in inputs]
            extra = [n for n in inputs if n not in self.names]
            raise CVMLogicError(f"expected inputs {self.names}, missing {missing}, unexpected {extra}")
        arrays = []
        for name, want_dtype, want_shape in self._types:
            array = np.asarray(inputs[name])
            if array.dtype != want_dtype or array.shape != want_shape:
                raise CVMLogicError(
                    f"input '{name}': expected {want_dtype} {list(want_shape)}, got {array.dtype} {list(array.shape)}"
                )
            arrays.append(np.require(array, requirements=("C", "A")))  # C order, aligned: what the kernels take
        try:
            return self._run(arrays)
        except MemoryError:
            raise CVMRuntimeError(f"out of memory running {self.function.sym_name.data}") from None


def _compile_cpu(
    function: func.FuncOp, fuse: bool = True, threads: int = 1, exact_float: bool = False,
    dot_block: tuple[int, int, int] | None = None,
) -> Callable[[list[np.ndarray]], list]:
    """Lower `function` to loop-level kernels (cinn-mark-views and cinn-fuse when `fuse`, then
    convert-cinn-to-loops with `dot_block`), JIT them, and run them with a `CinnRunner` (each kernel's outer
    parallel loop shared by `threads` threads)."""
    from cvmc.passes.convert_cinn_to_loops import ConvertCinnToLoopsPass, plan_kernels
    from cvmc.runtime.driver.compile import lower_cinn
    from cvmc.runtime.driver.target import detect_target
    from cvmc.runtime.engine.jit import compile_module

    try:
        target = detect_target()  # its vector width: what the float kernels block for
    except ValueError as e:
        raise CVMLogicError(str(e)) from None
    planned: list[tuple[func.FuncOp, list[KernelPlan]]] = []

    def plan(p: ModulePass, module: ModuleOp) -> None:  # the kernels as fused, before they are lowered
        if isinstance(p, ConvertCinnToLoopsPass):
            annotated = module.body.block.first_op
            assert isinstance(annotated, func.FuncOp)
            planned.append((annotated, plan_kernels(annotated)))

    module = lower_cinn(function, target, fuse=fuse, exact_float=exact_float, dot_block=dot_block, before=plan)
    annotated, plans = planned[0]
    works = [sum(_op_work(op) for op in (plan.root, *plan.inlined)) for plan in plans]
    kernels = []
    if plans:  # a program of no primitive returns its inputs
        engine = compile_module(module)
        kernels = [engine[plan.name] for plan in plans]
    ret = annotated.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    steps = [(kernel, plan.inputs, plan.outputs, work) for plan, kernel, work in zip(plans, kernels, works)]
    return CinnRunner(steps, list(annotated.args), list(ret.arguments), threads)


def _empty(v: SSAValue) -> np.ndarray:
    return np.empty(v.type.get_shape(), numpy_dtype(v.type))  # pyright: ignore


def _elements(v: SSAValue) -> int:
    return prod(v.type.get_shape()) if isinstance(v.type, TensorType) else 1


def _op_work(op: Operation) -> int:
    """About how many element operations `op` makes (the multiply-adds of a dot or a conv), the measure the
    runner decides by whether to share a kernel with other threads."""
    largest = max(map(_elements, (*op.operands, *op.results)), default=1)
    if isinstance(op, cinn.DotOp):
        shape = op.lhs.type.get_shape()  # pyright: ignore
        return max(largest, _elements(op.result) * (shape[-1] if shape else 1))
    if isinstance(op, cinn.ConvOp):  # the (n, o, oh, ow) tensor times the filter's c / groups * kh * kw
        kind = op.conv_type.data
        grad, weights = {cinn.ConvType.FORWARD: (op.result, op.rhs), cinn.ConvType.BACKWARD_DATA: (op.rhs, op.lhs),
                         cinn.ConvType.BACKWARD_FILTER: (op.rhs, op.result)}[kind]  # fmt: skip
        outputs = weights.type.get_shape()[0]  # pyright: ignore
        return max(largest, _elements(grad) * (_elements(weights) // max(1, outputs)))
    return largest


def _intermediate_buffers(steps: Sequence[Step], skip: set[SSAValue]) -> dict[SSAValue, np.ndarray]:
    """A buffer for every result of `steps` but those in `skip`, made once, in one 64-byte aligned arena placed by
    the CVM buffer planner's first fit (`loops.arena.Occupancy`): results whose lives do not overlap share bytes
    (a result lives from its kernel to the last kernel that reads it, so a kernel's results never share with its
    inputs): a long chain of kernels then keeps a small working set, in cache."""
    from cvmc.passes.loops.arena import Occupancy
    from cvmc.runtime.devices.cpu import _ALIGN, _aligned_bytes

    first: dict[SSAValue, int] = {}
    last: dict[SSAValue, int] = {}
    for i, (_, inputs, outputs, _) in enumerate(steps):
        for v in outputs:
            first.setdefault(v, i)
        for v in (*inputs, *outputs):
            last[v] = i
    occupancy = Occupancy(max(1, len(steps)))
    placed: dict[SSAValue, int] = {}
    for v, start in first.items():
        if v not in skip:
            size = -(-max(1, _nbytes(v)) // _ALIGN) * _ALIGN
            placed[v] = occupancy.first_fit(start, last[v], size)
            occupancy.add(start, last[v], placed[v], placed[v] + size)
    arena = _aligned_bytes(max((at + _nbytes(v) for v, at in placed.items()), default=0))
    return {v: arena[at:at + _nbytes(v)].view(numpy_dtype(v.type)).reshape(v.type.get_shape())  # pyright: ignore
            for v, at in placed.items()}


def _nbytes(v: SSAValue) -> int:
    return _elements(v) * numpy_dtype(v.type).itemsize  # pyright: ignore


class CinnRunner:
    """Runs the kernels of one compiled CINN function in order: `runner(arrays) -> outputs`.

    Everything a call needs is made once, here, from the IR: the intermediate buffers (`_intermediate_buffers`),
    every kernel's argument table (`PreparedCall`), and, where the native runner works (`program.Program`), one
    program of all the calls, run with one hand-off to the helper threads per call of the function, none per
    kernel. A kernel of at least `cpu.NATIVE_SPLIT_WORK` (`_op_work`) and more than one unit (the iterations of its
    outer parallel loop, `trip`) is shared by `threads` threads, in a program whose shared kernels hold
    `cpu.SPLIT_WORK` in all (waking a helper costs more than a small program's run). A call only writes the
    addresses of that call's inputs (used in place, never written) and of fresh output arrays into the tables,
    and runs the program. A kernel of no input (a const_scalar) gives the same values every call: it runs once,
    here, and its buffer is only read later (a copy is returned). One call at a time (a lock): the calls share
    the intermediate buffers and the tables. The results do not depend on the thread count (units are
    independent, and the float orders are fixed per unit)."""

    def __init__(self, steps: Sequence[Step], params: Sequence[SSAValue], returns: Sequence[SSAValue],
                 threads: int):
        from cvmc.runtime.devices import cpu
        from cvmc.runtime.engine.jit import PreparedCall, Program, program_runner_available

        def prepared(kernel: Any, arrays: Sequence[np.ndarray | None]) -> PreparedCall:
            # the arguments need none of `Kernel.prepare`'s checks: the inputs were checked by `CompiledFunction`
            # (dtype, shape, C order) and every other buffer is made here, of the kernel's types
            kept = tuple(a for a in arrays if a is not None)
            return PreparedCall(kernel, kept, [0 if a is None else a.__array_interface__["data"][0] for a in arrays])

        self.params, self.returns = list(params), list(returns)
        buffers: dict[SSAValue, np.ndarray] = {}
        for kernel, inputs, outputs, _ in steps:
            if not inputs:
                results = [_empty(v) for v in outputs]
                prepared(kernel, results)()
                buffers.update(zip(outputs, results))
        # the kernels' results returned: a fresh array each call (the caller owns it); the others are kept (an
        # input or a constant returned: a copy)
        self.fresh = [v for v in dict.fromkeys(self.returns) if v not in self.params and v not in buffers]
        steps = [s for s in steps if s[1]]
        buffers.update(_intermediate_buffers(steps, set(self.fresh)))
        # (table, index) of every argument written per call: the inputs', then the fresh outputs'
        slots: dict[SSAValue, list[tuple[Any, int]]] = {v: [] for v in (*self.params, *self.fresh)}
        self.calls: list[PreparedCall] = []
        for kernel, inputs, outputs, _ in steps:
            args = [*inputs, *outputs]
            call = prepared(kernel, [buffers.get(v) for v in args])
            for i, v in enumerate(args):
                if v in slots:
                    slots[v].append((call._table, i))
            self.calls.append(call)
        self.slots = [slots[v] for v in (*self.params, *self.fresh)]  # in the order of a call's arrays
        self.buffers = buffers
        self._fresh_types = [(v.type.get_shape(), numpy_dtype(v.type)) for v in self.fresh]  # pyright: ignore
        # where each result comes from: (0, i) the i-th input, (1, j) the j-th fresh array, (2, array) a constant
        self._picks: list[tuple[int, Any]] = [(0, self.params.index(v)) if v in self.params else
                       (1, self.fresh.index(v)) if v in self.fresh else (2, buffers[v]) for v in self.returns]
        self.splits = [work >= cpu.NATIVE_SPLIT_WORK and call.kernel.trip > 1 for call, (*_, work) in
                       zip(self.calls, steps)]  # fmt: skip
        shared = sum(work for split, (*_, work) in zip(self.splits, steps) if split)
        self.threads = threads if shared >= cpu.SPLIT_WORK else 1
        self.native = Program(list(zip(self.calls, self.splits)), self.threads) if (
            self.calls and program_runner_available()) else None
        self._lock = threading.Lock()

    def __call__(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        fresh = [np.empty(shape, dtype) for shape, dtype in self._fresh_types]
        with self._lock:
            for array, slots in zip((*arrays, *fresh), self.slots):
                address = array.__array_interface__["data"][0]
                for table, i in slots:
                    table[i] = address
            if self.native is not None:
                self.native()
            else:
                for call, split in zip(self.calls, self.splits):
                    if split and self.threads > 1:
                        call.launch(self.threads)
                    else:
                        call()
        # an input or a constant kernel's buffer is returned as a copy
        return [fresh[at] if kind == 1 else (arrays[at] if kind == 0 else at).copy() for kind, at in self._picks]


class CinnBuilder:
    """Builds one function of cinn primitives; `build` gives it as IR, `compile` makes it callable."""

    def __init__(self, name: str):
        self.name = name
        self._region = Region(Block())
        self._block = self._region.block
        self._inputs: list[tuple[str, SSAValue]] = []

    # -- program ------------------------------------------------------------------------------------------------

    def create_input(self, dtype: str, shape: Sequence[int], name: str) -> Variable:
        """A function argument of numpy dtype `dtype` (float32, int32, bool, uint8, ...) and static `shape`."""
        element = ELEMENT_TYPES[_dtype(dtype)]
        if not name.isidentifier() or any(n == name for n, _ in self._inputs):
            raise CVMLogicError(f"expected a new Python identifier as input name, got {name!r}")
        if any(not isinstance(d, int | np.integer) or d < 1 for d in shape):
            raise CVMLogicError(f"expected 'shape' of integers >= 1, got {list(shape)}")
        _check_shape(shape, f"input {name!r}")
        arg = self._block.insert_arg(TensorType(element, [int(d) for d in shape]), len(self._inputs))
        arg.name_hint = name
        self._inputs.append((name, arg))
        return arg

    def build(self, outputs: Sequence[Variable] | None = None) -> ModuleOp:
        """The program as a builtin.module holding one func.func returning `outputs` (by default, the results
        no op uses). `str()` of it is the IR text."""
        if outputs is None:
            outputs = [r for op in self._block.ops for r in op.results if not r.uses]
        for v in outputs:
            if not isinstance(v, SSAValue) or (v.owner is not self._block and v.owner.parent is not self._block):
                raise CVMLogicError(f"expected outputs created by this builder, got {v}")
        mapping: dict[SSAValue, SSAValue] = {}
        body = Region()
        self._region.clone_into(body, value_mapper=mapping)
        body.block.add_op(func.ReturnOp(*[mapping[v] for v in outputs]))
        function = func.FuncOp(self.name, ([a.type for _, a in self._inputs], [v.type for v in outputs]), body)
        module = ModuleOp([function])
        module.verify()
        return module

    def compile(
        self,
        outputs: Sequence[Variable],
        device: str = "reference",
        *,
        fuse: bool = True,
        threads: int = 1,
        exact_float: bool = False,
        dot_block: tuple[int, int, int] | None = None,
    ) -> CompiledFunction:
        """A callable `fn(**inputs) -> list[np.ndarray]` computing `outputs` on `device`; on "cpu", `fuse`
        runs cinn-mark-views and cinn-fuse (off: one kernel per primitive), the kernels run as one program on
        `threads` threads (a small program on the calling thread alone, see `CinnRunner`), and float reductions
        run in FLOAT_SPLIT lanes of a fixed order (deterministic, within the bound of
        `cvmc.passes.convert_cinn_to_loops.FLOAT_SPLIT`), f32 exp, log, tanh and erf as vector arithmetic
        (within EXP_ULPS, LOG_ULPS, TANH_ULPS, ERF_ULPS of `cvmc.passes.loops.cinn_scalar`) and float convs
        as the micro-kernels of `cvmc.passes.loops.cinn_conv`, unless `exact_float` keeps the sequential order
        and libm (today's bits). `dot_block` (MR rows, NR vector registers, KC depth) replaces the register block
        of the float 2-D Dot kernel on "cpu" (`cvmc.passes.loops.cinn_dot.BLOCK`): a tuning choice that changes
        no bit (bench/cinn_dot_blocks.py ranks blocks on a host)."""
        from cvmc.passes.convert_cinn_to_loops import dot_block_error

        if threads < 1:
            raise CVMLogicError(f"expected 'threads' >= 1, got {threads}")
        if dot_block is not None and (error := dot_block_error(dot_block)):
            raise CVMLogicError(f"expected {error}")
        if device not in DEVICES:
            raise CVMLogicError(f"expected 'device' in {list(DEVICES)}, got {device!r}")
        function = self.build(outputs).body.block.first_op
        assert isinstance(function, func.FuncOp)
        names = [n for n, _ in self._inputs]
        if device == "reference":
            return CompiledFunction(function, names, lambda arrays: run_function(function, arrays))
        if device == "cpu":
            return CompiledFunction(function, names, _compile_cpu(function, fuse, threads, exact_float, dot_block))
        from cvmc.runtime.devices.cuda import CinnCudaRunner

        return CompiledFunction(function, names, CinnCudaRunner(function))

    def _add(self, make: Callable[[], Operation]) -> Operation:
        try:
            op = make()
            op.verify()
        except VerifyException as e:
            raise CVMLogicError(str(e)) from None
        for r in op.results:
            if isinstance(r.type, TensorType):
                _check_shape(r.type.get_shape(), f"the result of {op.name}")
        self._block.add_op(op)
        return op

    def _one(self, make: Callable[[], Operation]) -> Variable:
        return self._add(make).results[0]

    # -- scalar -------------------------------------------------------------------------------------------------

    def const_scalar(self, value: bool | int | float, name: str, dtype: str | None = None) -> Variable:
        """A rank-0 constant; dtype defaults to bool, int32 or float32 after the Python type of `value`."""
        if dtype is None:
            dtype = "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else "float32"
        element = ELEMENT_TYPES[_dtype(dtype)]
        if isinstance(element, Float32Type | Float64Type):
            attr = FloatAttr(float(value), element)
        else:
            assert isinstance(element, IntegerType)
            info = np.iinfo(np.int8 if dtype == "bool" else dtype)
            low, high = (0, 1) if dtype == "bool" else (int(info.min), int(info.max))
            if int(value) != value or not low <= value <= high:
                raise CVMLogicError(f"expected 'value' an integer in [{low}, {high}] for {dtype}, got {value}")
            attr = IntegerAttr(int(value), element)
        result = self._one(lambda: cinn.ConstScalarOp(attr))
        if name.isidentifier():
            result.name_hint = name
        return result

    # -- unary --------------------------------------------------------------------------------------------------

    def _unary(self, op: type[cinn.UnaryOp], x: Variable) -> Variable:
        return self._one(lambda: op(x))

    def abs(self, x: Variable) -> Variable:
        return self._unary(cinn.AbsOp, x)

    def acos(self, x: Variable) -> Variable:
        return self._unary(cinn.AcosOp, x)

    def acosh(self, x: Variable) -> Variable:
        return self._unary(cinn.AcoshOp, x)

    def asin(self, x: Variable) -> Variable:
        return self._unary(cinn.AsinOp, x)

    def asinh(self, x: Variable) -> Variable:
        return self._unary(cinn.AsinhOp, x)

    def atan(self, x: Variable) -> Variable:
        return self._unary(cinn.AtanOp, x)

    def atanh(self, x: Variable) -> Variable:
        return self._unary(cinn.AtanhOp, x)

    def bitwise_not(self, x: Variable) -> Variable:
        return self._unary(cinn.BitwiseNotOp, x)

    def ceil(self, x: Variable) -> Variable:
        return self._unary(cinn.CeilOp, x)

    def cos(self, x: Variable) -> Variable:
        return self._unary(cinn.CosOp, x)

    def cosh(self, x: Variable) -> Variable:
        return self._unary(cinn.CoshOp, x)

    def erf(self, x: Variable) -> Variable:
        return self._unary(cinn.ErfOp, x)

    def exp(self, x: Variable) -> Variable:
        return self._unary(cinn.ExpOp, x)

    def floor(self, x: Variable) -> Variable:
        return self._unary(cinn.FloorOp, x)

    def identity(self, x: Variable) -> Variable:
        return self._unary(cinn.IdentityOp, x)

    def is_finite(self, x: Variable) -> Variable:
        return self._unary(cinn.IsFiniteOp, x)

    def is_inf(self, x: Variable) -> Variable:
        return self._unary(cinn.IsInfOp, x)

    def is_nan(self, x: Variable) -> Variable:
        return self._unary(cinn.IsNanOp, x)

    def log(self, x: Variable) -> Variable:
        return self._unary(cinn.LogOp, x)

    def log10(self, x: Variable) -> Variable:
        return self._unary(cinn.Log10Op, x)

    def log2(self, x: Variable) -> Variable:
        return self._unary(cinn.Log2Op, x)

    def logical_not(self, x: Variable) -> Variable:
        return self._unary(cinn.LogicalNotOp, x)

    def negative(self, x: Variable) -> Variable:
        return self._unary(cinn.NegativeOp, x)

    def round(self, x: Variable) -> Variable:
        return self._unary(cinn.RoundOp, x)

    def rsqrt(self, x: Variable) -> Variable:
        return self._unary(cinn.RsqrtOp, x)

    def sign(self, x: Variable) -> Variable:
        return self._unary(cinn.SignOp, x)

    def sin(self, x: Variable) -> Variable:
        return self._unary(cinn.SinOp, x)

    def sinh(self, x: Variable) -> Variable:
        return self._unary(cinn.SinhOp, x)

    def sqrt(self, x: Variable) -> Variable:
        return self._unary(cinn.SqrtOp, x)

    def tan(self, x: Variable) -> Variable:
        return self._unary(cinn.TanOp, x)

    def tanh(self, x: Variable) -> Variable:
        return self._unary(cinn.TanhOp, x)

    def trunc(self, x: Variable) -> Variable:
        return self._unary(cinn.TruncOp, x)

    # -- binary -------------------------------------------------------------------------------------------------

    def _binary(self, op: type[cinn.BinaryOp], x: Variable, y: Variable) -> Variable:
        return self._one(lambda: op(x, y))

    def add(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.AddOp, x, y)

    def bitwise_and(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.BitwiseAndOp, x, y)

    def bitwise_or(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.BitwiseOrOp, x, y)

    def bitwise_xor(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.BitwiseXorOp, x, y)

    def div(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.DivOp, x, y)

    def dot(self, x: Variable, y: Variable) -> Variable:
        return self._one(lambda: cinn.DotOp(x, y))

    def floor_div(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.FloorDivOp, x, y)

    def floor_mod(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.FloorModOp, x, y)

    def left_shift(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.LeftShiftOp, x, y)

    def logical_and(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.LogicalAndOp, x, y)

    def logical_or(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.LogicalOrOp, x, y)

    def logical_xor(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.LogicalXorOp, x, y)

    def max(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.MaxOp, x, y)

    def min(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.MinOp, x, y)

    def mod(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.ModOp, x, y)

    def mul(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.MulOp, x, y)

    def power(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.PowerOp, x, y)

    def right_shift(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.RightShiftOp, x, y)

    def sub(self, x: Variable, y: Variable) -> Variable:
        return self._binary(cinn.SubOp, x, y)

    # -- complex ------------------------------------------------------------------------------------------------

    def bn_grad_bias_scale(self, x: Variable, grad: Variable, save_mean: Variable) -> tuple[Variable, Variable]:
        bias_grad, scale_grad = self._add(lambda: cinn.BnGradBiasScaleOp(x, grad, save_mean)).results
        return bias_grad, scale_grad

    def bn_mean_variance(self, x: Variable) -> tuple[Variable, Variable]:
        total, total_square = self._add(lambda: cinn.BnMeanVarianceOp(x)).results
        return total, total_square

    def broadcast_to(self, x: Variable, out_shape: Sequence[int], broadcast_axes: Sequence[int]) -> Variable:
        return self._one(lambda: cinn.BroadcastToOp(x, out_shape, broadcast_axes))

    def compare(self, x: Variable, y: Variable, kind: str) -> Variable:
        """kind: eq, ne, ge, gt, le or lt."""
        if kind not in list(cinn.CompareKind):
            raise CVMLogicError(f"expected 'kind' in {[k.value for k in cinn.CompareKind]}, got {kind!r}")
        return self._one(lambda: cinn.CompareOp(x, y, kind))

    def concat(self, inputs: Sequence[Variable], axis: int = 0) -> Variable:
        return self._one(lambda: cinn.ConcatOp(inputs, axis))

    def conv(
        self,
        lhs: Variable,
        rhs: Variable,
        strides: Sequence[int] = (1, 1),
        paddings: Sequence[int] = (0, 0),
        dilations: Sequence[int] = (1, 1),
        groups: int = 1,
        conv_type: str = "forward",
        data_format: str = "NCHW",
        padding_algorithm: str = "EXPLICIT",
        output_shape: Sequence[int] = (),
    ) -> Variable:
        """forward(x, w), backward_data(w, dy, output_shape = x's shape), backward_filter(x, dy, output_shape =
        w's shape)."""
        for field, value, enum in (
            ("conv_type", conv_type, cinn.ConvType),
            ("data_format", data_format, cinn.DataFormat),
            ("padding_algorithm", padding_algorithm, cinn.PaddingAlgorithm),
        ):
            if value not in list(enum):
                raise CVMLogicError(f"expected '{field}' in {[k.value for k in enum]}, got {value!r}")
        return self._one(
            lambda: cinn.ConvOp(
                lhs, rhs, strides, paddings, dilations, groups, conv_type, data_format, padding_algorithm,
                output_shape,
            )  # fmt: skip
        )

    def reduce(self, x: Variable, kind: str, dim: Sequence[int] = (), keep_dim: bool = False) -> Variable:
        """kind: sum, prod, max or min; an empty `dim` reduces every axis."""
        if kind not in list(cinn.ReduceKind):
            raise CVMLogicError(f"expected 'kind' in {[k.value for k in cinn.ReduceKind]}, got {kind!r}")
        return self._one(lambda: cinn.ReduceOp(x, kind, dim, keep_dim))

    def reshape(self, x: Variable, shape: Sequence[int]) -> Variable:
        return self._one(lambda: cinn.ReshapeOp(x, shape))

    def reverse(self, x: Variable, axis: Sequence[int]) -> Variable:
        return self._one(lambda: cinn.ReverseOp(x, axis))

    def select(self, condition: Variable, true_value: Variable, false_value: Variable) -> Variable:
        return self._one(lambda: cinn.SelectOp(condition, true_value, false_value))

    def slice(self, x: Variable, axes: Sequence[int], starts: Sequence[int], ends: Sequence[int]) -> Variable:
        return self._one(lambda: cinn.SliceOp(x, axes, starts, ends))

    def transpose(self, x: Variable, axis: Sequence[int]) -> Variable:
        return self._one(lambda: cinn.TransposeOp(x, axis))
