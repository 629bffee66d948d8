"""What the `cvm-to-loops` pipeline decided for a model, read off the IR where each decision is recorded: the tests
of views, operand packing, fusion and buffers check the ops the passes made, not a planner of their own.

    module = scheduled(graph, target)      # the passes before cvm-bufferize: cvm_sched.view / pack / kernel ops
    packs(module), kernels(module)         # the pack ops of @main; the ops of each cvm_sched.kernel body
    low = bufferized(graph, target)        # after cvm-bufferize: the host program and its outlined kernels
    low.program.arena_bytes, [k.ops for k in low.kernels]

The passes run are the named pipeline's own (`passes.pipelines.PIPELINES`), cut before or after `cvm-bufferize`,
so a pass added to the pipeline is run here too. `target` is a `Target`, its text, or None: the runtime's
(`detect_target`, which follows the `host` fixture and the CVMC_* overrides).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, ModuleOp, Signedness, TensorType
from xdsl.ir import Operation, SSAValue

from cvmc.dialects.cvm import ParamOp
from cvmc.dialects.cvm_sched import KernelOp, LoadOp, PackOp, StoreOp, YieldOp
from cvmc.passes.loops.target import Target, module_target
from cvmc.passes.pipelines import gc_paused, pipeline_passes
from cvmc.runtime.driver.host import Call, HostProgram, View, read_host
from cvmc.runtime.driver.target import detect_target
from cvmc.runtime.frontend.cvm_ir import graph_to_module

BUFFERIZE = "cvm-bufferize"


def module_of(model: Any) -> ModuleOp:
    """A fresh module of cvm ops: of a `Graph`, or a `ModuleOp` as it is (changed in place by the passes)."""
    return model if isinstance(model, ModuleOp) else graph_to_module(model)


def run_passes(model: Any, target: Target | str | None = None, through_bufferize: bool = True) -> ModuleOp:
    """The passes of `cvm-to-loops` on the model's module, through `cvm-bufferize` or up to it (not verified)."""
    module = module_of(model)
    module_target(module, str(detect_target() if target is None else target))
    ctx = Context()
    with gc_paused():
        for p in pipeline_passes("cvm-to-loops"):
            if p.name == BUFFERIZE and not through_bufferize:
                break
            p.apply(ctx, module)
            if p.name == BUFFERIZE:
                break
    return module


def scheduled(model: Any, target: Target | str | None = None) -> ModuleOp:
    """The module after every pass of `cvm-to-loops` before `cvm-bufferize` (views, packs, kernels), verified."""
    module = run_passes(model, target, through_bufferize=False)
    module.verify()
    return module


def main_of(module: ModuleOp) -> func.FuncOp:
    """The module's `@main` (the model's function, or after cvm-bufferize the host)."""
    return next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")


def element(t: Any) -> str:
    """The element type of a tensor or memref type: "i32", "i16", "i8", or "u8" (a ui8 packing)."""
    e = t.element_type
    assert isinstance(e, IntegerType)
    return ("u" if e.signedness.data == Signedness.UNSIGNED else "i") + str(e.width.data)


def packs(module: ModuleOp) -> list[PackOp]:
    """The `cvm_sched.pack` ops of the scheduled `@main`, in order (inside kernels too)."""
    return [op for op in main_of(module).walk() if isinstance(op, PackOp)]


def packed_params(module: ModuleOp) -> list[tuple[str, tuple[int, ...], str]]:
    """(element, shape, `to`) of each pack of a param that is made when compiling (all but NHWC data)."""
    return [(element(p.result.type), tuple(p.result.type.get_shape()), p.to.data) for p in packs(module)
            if isinstance(p.source.owner, ParamOp) and p.to.data != "nhwc"]


def pack_elements(module: ModuleOp) -> list[str]:
    """The sorted element types of every packed operand, i32 left out."""
    return sorted({element(p.result.type) for p in packs(module)} - {"i32"})


def op_name(op: Operation) -> str:
    """`conv2d` for `cvm.conv2d`, `pack` for `cvm_sched.pack`."""
    return op.name.split(".", 1)[1]


def kernels(module: ModuleOp) -> list[list[str]]:
    """The ops of each `cvm_sched.kernel` of the scheduled `@main`, in order, the yield left out."""
    return [[op_name(op) for op in k.body.block.ops if not isinstance(op, YieldOp)]
            for k in main_of(module).body.block.ops if isinstance(k, KernelOp)]


@dataclass
class Kernel:
    """One call of the host and the outlined kernel it calls, its body still cvm ops between loads and stores."""

    call: Call
    fn: func.FuncOp

    @property
    def name(self) -> str:
        return self.call.kernel

    @property
    def body(self) -> list[Operation]:
        """Its ops, the loads, stores and return left out."""
        return [op for op in self.fn.body.block.ops if not isinstance(op, LoadOp | StoreOp | func.ReturnOp)]

    @property
    def ops(self) -> list[str]:
        return [op_name(op) for op in self.body]

    def _stores(self) -> list[StoreOp]:
        return [op for op in self.fn.body.block.ops if isinstance(op, StoreOp)]

    @property
    def stored(self) -> list[str]:
        """The op that computes each value it writes (`pack`: a packed copy; "argument": a value it loaded), in
        order."""
        owners = [s.value.owner for s in self._stores()]
        return [op_name(o) if isinstance(o, Operation) and not isinstance(o, LoadOp) else "argument" for o in owners]

    @property
    def stored_types(self) -> list[TensorType]:
        """The type of each value it writes, in order."""
        return [s.value.type for s in self._stores()]

    @property
    def written(self) -> list[View]:
        """The views of what it writes, as the host passes them."""
        args = list(self.fn.body.block.args)
        return [self.call.args[args.index(s.dest)] for s in self._stores()]

    def source(self, value: SSAValue) -> tuple[View, LoadOp] | None:
        """Where a value its ops read comes from: the argument (the host's view) and the load of it; None: an op
        of the kernel computes it."""
        load = value.owner
        if not isinstance(load, LoadOp):
            return None
        return self.call.args[list(self.fn.body.block.args).index(load.source)], load


@dataclass
class Bufferized:
    """A model after `cvm-bufferize`: the host program (`read_host`) and a `Kernel` per call, in order."""

    module: ModuleOp
    program: HostProgram
    kernels: list[Kernel]

    def arena_views(self) -> list[View]:
        """Every view of the arena a call passes or the host returns, in order of first use, once each."""
        seen: dict[View, None] = {}
        for v in [*(a for c in self.program.calls for a in c.args), *self.program.heads]:
            if v.root == "arena":
                seen.setdefault(v)
        return list(seen)


def bufferized(model: Any, target: Target | str | None = None) -> Bufferized:
    """The module after `cvm-to-loops` up to `cvm-bufferize` included, verified, read as its host program."""
    module = run_passes(model, target, through_bufferize=True)
    module.verify()
    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    program, _ = read_host(module.clone())
    return Bufferized(module, program, [Kernel(c, functions[c.kernel]) for c in program.calls])
