"""Composite pipelines: named sequences of the project's passes, as `cvm-opt -p` would run them.

    run_pipeline(module, "cvm-to-loops")     # the cpu device's lowering of a cvm module to the loop level

A pipeline is a plain string in `cvm-opt -p` syntax, so the same lowering can be replayed by hand, pass by pass
(`cvm-opt model.mlir -p cvm-mark-views,cvm-pack-operands,cvm-fuse` shows the decisions made so far as ops) or
whole (`cvm-opt model.mlir -p cvm-to-loops`: the cvm pipelines are also registered as one pass of their name).

`cvm-to-loops`: `cvm-mark-views` (strided views, no kernel: `cvm_sched.view`), `cvm-pack-operands` (the packed
operands of conv2d and dense: `cvm_sched.pack`), `cvm-fuse` (the kernels, one call each: `cvm_sched.kernel`),
`cvm-fuse-packs` (a blocked conv2d's epilogue writes the packed copy its reader wants; residuals read packed copies),
`cvm-bufferize` (the arena placed by liveness, params as globals, each kernel an outlined function, `@main` the
host), then `convert-cvm-to-loops` (each outlined kernel's loop nest). `cvm-to-gpu-loops` is the same pipeline
built for a CUDA GPU (what the `cuda` device runs). Each is built for a `loops.target.Target`:
`cvm-to-loops{target=x86:avx2}`, recorded on the module as `cvmc.target`. `cinn-to-loops` (`-unfused`: one kernel
per primitive) and `taskgraph-to-loops` are the other front ends' lowerings, which `runtime/driver/compile.py` runs as
it runs cvm's.
"""

from __future__ import annotations

import gc
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from cvmc.passes import get_all_passes
from cvmc.passes.loops.target import GPU, Target, module_target

PIPELINES: dict[str, str] = {
    "cvm-to-loops": "cvm-mark-views,cvm-pack-operands,cvm-fuse,cvm-fuse-packs,cvm-bufferize,convert-cvm-to-loops",
    "cinn-to-loops": "cinn-mark-views,cinn-fuse,convert-cinn-to-loops",  # a cinn program, fused
    "cinn-to-loops-unfused": "convert-cinn-to-loops",  # one kernel per primitive
    "taskgraph-to-loops": "convert-taskgraph-to-loops",  # a Task IR graph: one kernel a step
}


def pipeline_passes(name: str, options: Mapping[str, ModulePass] = {}) -> list[ModulePass]:
    """The pass instances of a named pipeline: default options, or the instance `options` gives for a pass name
    (`{"convert-cinn-to-loops": ConvertCinnToLoopsPass(exact_float=True)}`)."""
    factories = get_all_passes()
    names = [p.strip() for p in PIPELINES[name].split(",")]
    return [options[p] if p in options else factories[p]()() for p in names]


@contextmanager
def gc_paused() -> Generator[None, None, None]:
    """The cyclic garbage collector off for the block (as it was after): compiling allocates IR by the hundred
    thousand and frees little, so its full collections, each a walk of every live object, cost as much as the
    passes themselves on a large model (bench/results/2026-11-28-comment-figures.md). Memory freed by reference
    counting is freed as ever; cycles wait for the block's end."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def run_pipeline(module: ModuleOp, name: str, ctx: Context | None = None, target: Target | str | None = None
                 ) -> ModuleOp:
    """Apply a named pipeline to `module` in place (the garbage collector paused), built for `target` (recorded on
    the module as `cvmc.target`; None: the module's, else `loops.target.DEFAULT`); returns it."""
    ctx = ctx or Context()
    module_target(module, None if target is None else str(target))
    with gc_paused():
        for p in pipeline_passes(name):
            p.apply(ctx, module)
    return module


@dataclass(frozen=True)
class CvmToLoopsPass(ModulePass):
    """The `cvm-to-loops` pipeline as one pass."""

    name = "cvm-to-loops"

    target: str | None = None  # `loops.target.Target` printed; None: the module's `cvmc.target`, else DEFAULT

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_pipeline(op, self.name, ctx, self.target)


@dataclass(frozen=True)
class CvmToGpuLoopsPass(ModulePass):
    """The `cvm-to-loops` pipeline built for a CUDA GPU (target `cuda:any`: int8 operands as signed bytes, and the
    GPU schedule of conv2d, dense and packing of `loops.gpu`), as the `cuda` device lowers."""

    name = "cvm-to-gpu-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_pipeline(op, "cvm-to-loops", ctx, GPU)
