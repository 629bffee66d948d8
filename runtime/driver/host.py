"""The host program of a lowered model, as plain data, for every device: what the host `@main` of a module lowered
by `cvm-to-loops` does (the arena's size, the views of it each kernel reads and writes, the calls in order, the
heads), read once by `read_host` and then run by the cpu runner, the CUDA launcher and the `cvm-aot` C printer.

    program, kernels = read_host(module)   # kernels: the module of loop-level kernels alone, moved out of it
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cvmc.errors import CVMRuntimeError

# The name of the module of kernels (its LLVM ModuleID).
KERNELS_MODULE = "cvm-cpu"
# The numpy type of each element type of a view.
DTYPES = {"i32": np.dtype("<i4"), "i16": np.dtype("<i2"), "i8": np.dtype("i1"), "u8": np.dtype("u1")}



@dataclass(frozen=True)
class View:
    """A memref the host passes: `root` ("arena", "input" or a global's name), the byte shift of its base
    pointer in the root, and its layout over that base (as its memref type says)."""

    root: str
    shift: int
    element: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int

    @property
    def identity(self) -> bool:
        """The row-major layout of its shape (size-1 dims may have any stride), at offset 0."""
        expect = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and s != expect:
                return False
            expect *= n
        return self.offset == 0


@dataclass(frozen=True)
class Call:
    kernel: str
    args: tuple[View, ...]
    work: int


@dataclass
class HostProgram:
    """What the host `@main` of a lowered module does, as plain data."""

    arena_bytes: int
    input_shape: tuple[int, ...] | None
    calls: list[Call]
    heads: list[View]
    intermediate_bytes: int
    globals: dict[str, np.ndarray]


def read_host(module: Any) -> tuple[HostProgram, Any]:
    """The host program of a lowered module, and a module of its kernels alone (moved out of `module`)."""
    from xdsl.dialects import arith, func, memref
    from xdsl.dialects.builtin import (
        DenseIntOrFPElementsAttr,
        IntegerAttr,
        IntegerType,
        MemRefType,
        ModuleOp,
        StringAttr,
    )

    from cvmc.dialects.cvm_sched import CallOp, FootprintOp
    from cvmc.passes.loops.views import layout_of

    main: Any = None
    globals_: dict[str, np.ndarray] = {}
    kernels = []
    for op in list(module.ops):
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            main = op
        elif isinstance(op, memref.GlobalOp):
            value = op.initial_value
            assert isinstance(value, DenseIntOrFPElementsAttr) and isinstance(op.type, MemRefType)
            element = op.type.element_type
            assert isinstance(element, IntegerType)
            dtype = DTYPES[f"i{element.width.data}"]
            globals_[op.sym_name.data] = np.frombuffer(value.data.data, dtype=dtype).reshape(op.type.get_shape())
        elif isinstance(op, func.FuncOp):
            op.detach()
            kernels.append(op)
    if main is None:
        raise CVMRuntimeError("the lowered module has no host function @main")

    block = main.body.block
    roots: dict[Any, tuple[str, int]] = {block.args[-1]: ("arena", 0)}
    input_shape = None
    if len(block.args) == 2:
        roots[block.args[0]] = ("input", 0)
        input_shape = tuple(block.args[0].type.get_shape())
    consts: dict[Any, int] = {}

    def view(v: Any) -> View:
        layout = layout_of(v.type)
        root, shift = roots[v]
        return View(root, shift, f"i{v.type.element_type.width.data}", layout.shape, layout.strides, layout.offset)

    calls: list[Call] = []
    heads: list[View] = []
    inter = 0
    for op in block.ops:
        if isinstance(op, arith.ConstantOp):
            assert isinstance(op.value, IntegerAttr)
            consts[op.result] = op.value.value.data
        elif isinstance(op, memref.GetGlobalOp):
            roots[op.memref] = (op.name_.root_reference.data, 0)
        elif isinstance(op, memref.ViewOp):
            roots[op.result] = ("arena", consts[op.byte_shift])
        elif isinstance(op, memref.ReinterpretCastOp):
            roots[op.result] = roots[op.source]
        elif isinstance(op, CallOp):
            calls.append(Call(op.callee.root_reference.data, tuple(view(v) for v in op.args), op.work.value.data))
        elif isinstance(op, FootprintOp):
            inter = op.intermediate_bytes.value.data
        elif isinstance(op, func.ReturnOp):
            heads = [view(v) for v in op.arguments]
    program = HostProgram(block.args[-1].type.get_shape()[0], input_shape, calls, heads, inter, globals_)
    return program, ModuleOp(kernels, sym_name=StringAttr(KERNELS_MODULE))
