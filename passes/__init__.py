"""Analyses and rewrites, registered lazily by name for `cvm-opt -p`."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # importing the package imports no xDSL (a warm `load_model` needs `loops.target` alone)
    from xdsl.passes import ModulePass

# pass name -> (module under cvmc.passes, class name)
_PASSES: dict[str, tuple[str, str]] = {
    "cvm-infer-shapes": ("cvm_infer", "CvmInferShapesPass"),
    "cvm-infer-precision": ("cvm_infer", "CvmInferPrecisionPass"),
    "cvm-gas": ("cvm_gas", "CvmGasPass"),
    "cvm-mark-views": ("cvm_mark_views", "CvmMarkViewsPass"),
    "cvm-pack-operands": ("cvm_pack_operands", "CvmPackOperandsPass"),
    "cvm-fuse": ("cvm_fuse", "CvmFusePass"),
    "cvm-fuse-packs": ("cvm_fuse_packs", "CvmFusePacksPass"),
    "cvm-bufferize": ("cvm_bufferize", "CvmBufferizePass"),
    "convert-cvm-to-loops": ("convert_cvm_to_loops", "ConvertCvmToLoopsPass"),
    "cvm-to-loops": ("pipelines", "CvmToLoopsPass"),
    "cvm-to-gpu-loops": ("pipelines", "CvmToGpuLoopsPass"),
    "cinn-mark-views": ("cinn_mark_views", "CinnMarkViewsPass"),
    "cinn-fuse": ("cinn_fuse", "CinnFusePass"),
    "convert-cinn-to-loops": ("convert_cinn_to_loops", "ConvertCinnToLoopsPass"),
    "taskgraph-stats": ("taskgraph_stats", "TaskGraphStatsPass"),
    "convert-taskgraph-to-loops": ("convert_taskgraph_to_loops", "ConvertTaskGraphToLoopsPass"),
    "convert-cvm-to-taskgraph": ("convert_cvm_to_taskgraph", "ConvertCvmToTaskGraphPass"),
}


def _factory(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(f"cvmc.passes.{module}"), cls)

    return load


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Lazy factories of the project's passes, by name."""
    return {name: _factory(module, cls) for name, (module, cls) in _PASSES.items()}
