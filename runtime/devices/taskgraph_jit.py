"""Run a `taskgraph.graph` on the CPU: `convert-taskgraph-to-loops`, then the llvmlite JIT.

    jit = TaskGraphJit(module)                  # a verified module holding one taskgraph.graph
    outs = jit.step({35: image})                # {OUTPUT block id: flat int32 array}, as the executor gives

The kernel's arguments are the storage blocks' values (kept here between steps, so state carries over as in
the reference executor) and constant gather tables; their roles are the `taskgraph.*` argument attributes the
lowering writes.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, ModuleOp, StringAttr

from cvmc.errors import CVMLogicError
from cvmc.runtime.driver.compile import lower_taskgraph
from cvmc.runtime.engine.jit import compile_module
from cvmc.runtime.frontend.taskir_files import find_graph
from cvmc.runtime.references.taskgraph import Stepper


def _dense_values(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    return np.asarray(attr.get_values(), dtype=np.int64)


class TaskGraphJit(Stepper):
    """The compiled step of a graph and the values of its storage blocks."""

    def __init__(self, module: ModuleOp):
        find_graph(module)  # exactly one graph
        self.kernel_module = lower_taskgraph(module)  # `taskgraph-to-loops`, through the one driver
        kernel = self.kernel_module.ops.first
        assert isinstance(kernel, func.FuncOp) and kernel.arg_attrs is not None
        self.engine = compile_module(self.kernel_module)
        self.arrays: list[np.ndarray] = []
        self.inputs: dict[int, np.ndarray] = {}
        self.outputs: dict[int, np.ndarray] = {}
        self.values: dict[int, np.ndarray] = {}  # every storage block's value, by block id
        for arg, attrs in zip(kernel.args, kernel.arg_attrs.data):
            n = arg.type.get_shape()[0]  # type: ignore[union-attr]
            values = attrs.data
            array = np.zeros(n, dtype=np.int32)
            if "taskgraph.table" in values:
                array[:] = _dense_values(values["taskgraph.table"])  # type: ignore[arg-type]
            elif "taskgraph.init" in values:
                array[:] = _dense_values(values["taskgraph.init"]).reshape(-1).astype(np.int32)  # type: ignore[arg-type]
            if isinstance(block := values.get("taskgraph.block"), IntegerAttr):
                self.values[block.value.data] = array
                if isinstance(port := values.get("taskgraph.port"), StringAttr):
                    (self.inputs if port.data == "input" else self.outputs)[block.value.data] = array
            self.arrays.append(array)
        self.call = self.engine[kernel.sym_name.data].prepare(*self.arrays)

    def step(self, inputs: Mapping[int, np.ndarray] | None = None) -> dict[int, np.ndarray]:
        """Run one step; `inputs` gives each INPUT block's values. Returns each OUTPUT block's values."""
        inputs = dict(inputs or {})
        for block_id, array in self.inputs.items():
            if block_id not in inputs:
                raise CVMLogicError(f"block {block_id}: no values given for INPUT")
            value = np.asarray(inputs.pop(block_id)).reshape(-1)
            if value.size != array.size:
                raise CVMLogicError(f"block {block_id}: expected {array.size} INPUT values, got {value.size}")
            array[:] = value.astype(np.int64).astype(np.int32)
        if inputs:
            raise CVMLogicError(f"values given for blocks {sorted(inputs)}, which are not INPUT blocks")
        self.call()
        return {block_id: array.copy() for block_id, array in self.outputs.items()}
