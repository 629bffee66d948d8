"""Composite pipelines: named sequences of the project's passes, as `cvm-opt -p` would run them.

    run_pipeline(module, "cvm-to-loops")     # the cpu device's lowering of a cvm module to the loop level

A pipeline is a plain string in `cvm-opt -p` syntax, so the same lowering can be replayed by hand, pass by pass
(`cvm-opt model.mlir -p cvm-mark-views,cvm-fuse` shows the decisions made so far as attributes) or whole
(`cvm-opt model.mlir -p cvm-to-loops`: each pipeline is also registered as one pass of its name).

`cvm-to-loops`: `cvm-mark-views` (which ops are strided views, no kernel), `cvm-fuse` (the kernel groups, one
call each), `cvm-plan-buffers` (arena offsets by liveness), then `convert-cvm-to-loops` (kernels, param globals
and the host `@main`, following those decisions).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from cvmc.passes import get_all_passes

PIPELINES: dict[str, str] = {
    "cvm-to-loops": "cvm-mark-views,cvm-fuse,cvm-plan-buffers,convert-cvm-to-loops",
}


def pipeline_passes(name: str) -> list[ModulePass]:
    """The pass instances of a named pipeline (default options)."""
    factories = get_all_passes()
    return [factories[p.strip()]()() for p in PIPELINES[name].split(",")]


def run_pipeline(module: ModuleOp, name: str, ctx: Context | None = None) -> ModuleOp:
    """Apply a named pipeline to `module` in place; returns it.

    The cyclic garbage collector is paused meanwhile: the passes allocate IR by the hundred thousand and free
    little, so its full collections (each a walk of every live object) would cost as much as the passes."""
    ctx = ctx or Context()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for p in pipeline_passes(name):
            p.apply(ctx, module)
    finally:
        if was_enabled:
            gc.enable()
    return module


@dataclass(frozen=True)
class CvmToLoopsPass(ModulePass):
    """The `cvm-to-loops` pipeline as one pass."""

    name = "cvm-to-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_pipeline(op, self.name, ctx)
