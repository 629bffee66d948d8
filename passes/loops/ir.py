"""The cvm function `@main` as the planner sees it, for `cvm-bufferize`.

`cvm-bufferize` reads `@main` (the input `data` as argument, `cvm.param`s, cvm operators, and the scheduled
level's `cvm_sched.view`, `cvm_sched.pack` and `cvm_sched.kernel`, the heads returned) as a `loops.plan.Net` whose
node `i` is the op `ops[i]` (a kernel's operators in its body's order, one group, `Hints.groups`) and plans it once:
liveness, the arena, each kernel's arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, ModuleOp, TensorType
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import PassFailedException

from cvmc.dialects.cvm import CvmOperator, ParamOp, cvm_attrs, tensor_precision, tensor_shape
from cvmc.dialects.cvm_sched import KernelOp, PackOp, ViewOp, YieldOp, ui8
from cvmc.passes.loops.plan import Hints, Net, Node, Plan, PlanError, Tensor, plan
from cvmc.passes.loops.target import DEFAULT, Target
from cvmc.passes.loops.views import Layout

T = TypeVar("T")


@dataclass
class CvmFunction:
    """`@main` of cvm ops: its network, the op of each node (`ops[i]` is `net.nodes[i]`) and its params."""

    main: func.FuncOp
    net: Net
    ops: list[CvmOperator | ViewOp | PackOp]
    params: dict[int, ParamOp]  # tensor id -> the param op (values are read only when lowering)
    groups: dict[int, int]  # node index -> the number of its `cvm_sched.kernel` (`cvm-fuse`), in order
    value_of: dict[int, SSAValue]  # tensor id -> a value of it (its type: what the outlined kernels read)

    @staticmethod
    def of_module(module: ModuleOp) -> CvmFunction:
        mains = [f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main"]
        if len(mains) != 1:
            raise PassFailedException("expected one function @main of cvm ops")
        return CvmFunction.of_function(mains[0])

    @staticmethod
    def of_function(main: func.FuncOp) -> CvmFunction:
        tensors: list[Tensor] = []
        ids: dict[SSAValue, int] = {}

        def add(v: SSAValue, kind: str, name: str = "") -> int:
            shape, prec = tensor_shape(v.type), tensor_precision(v.type)
            if shape is None or prec is None:
                raise PassFailedException(f"expected a static shape and a precision, got {v.type}; run "
                                          "cvm-infer-shapes and cvm-infer-precision first")
            ids[v] = len(tensors)
            tensors.append(Tensor(shape, prec, kind, name))
            return ids[v]

        block = main.body.block
        for arg in block.args:
            add(arg, "input", "data")
        nodes: list[Node] = []
        ops: list[CvmOperator | ViewOp | PackOp] = []
        params: dict[int, ParamOp] = {}
        heads: list[int] = []
        groups: dict[int, int] = {}  # node index -> its kernel's number
        kernels = 0

        def operator(op: CvmOperator) -> None:
            inputs = [ids[v] for v in op.operands]
            nodes.append(Node(op.op_name, cvm_attrs(op), inputs, [add(r, "op") for r in op.results]))
            ops.append(op)

        for op in block.ops:
            if isinstance(op, KernelOp):  # its operators, one group
                body = op.body.block
                ids.update((a, ids[v]) for a, v in zip(body.args, op.inputs))
                for inner in body.ops:
                    if isinstance(inner, CvmOperator):
                        groups[len(nodes)] = kernels
                        operator(inner)
                    elif isinstance(inner, YieldOp):
                        ids.update((r, ids[v]) for r, v in zip(op.outputs, inner.values))
                    else:
                        raise PassFailedException(f"unexpected op {inner.name} in a cvm_sched.kernel: expected cvm "
                                                  "operators")
                kernels += 1
                continue
            if isinstance(op, ParamOp):
                params[add(op.result, "param", op.param_name.data)] = op
            elif isinstance(op, CvmOperator):
                operator(op)
            elif isinstance(op, PackOp):
                t = op.result.type
                assert isinstance(t, TensorType) and isinstance(t.element_type, IntegerType)
                src = ids[op.source]
                ids[op.result] = len(tensors)
                element = "u8" if t.element_type == ui8 else f"i{t.element_type.bitwidth}"
                how = op.packing()
                tensors.append(Tensor(tuple(t.get_shape()), tensors[src].precision, "op", element=element, pack=how))
                nodes.append(Node("pack", how, [src], [ids[op.result]]))
                ops.append(op)
            elif isinstance(op, ViewOp):
                strides, offset = op.strides_offset()
                shape = tensor_shape(op.result.type)
                assert shape is not None  # the op's verifier
                layout = Layout(shape, strides, offset)
                nodes.append(Node("view", {"layout": layout}, [ids[op.source]], [add(op.result, "op")]))
                ops.append(op)
            elif isinstance(op, func.ReturnOp):
                heads = [ids[v] for v in op.arguments]
            else:
                raise PassFailedException(f"unexpected op {op.name} in @{main.sym_name.data}: expected cvm ops")
        value_of: dict[int, SSAValue] = {}
        for v, t in ids.items():
            value_of.setdefault(t, v)
        return CvmFunction(main, Net(tensors, nodes, heads), ops, params, groups, value_of)

    def values(self) -> dict[int, np.ndarray]:
        """The params' values by tensor id."""
        return {t: op.array() for t, op in self.params.items()}

    def label(self, i: int) -> str:
        """How messages name node `i`: its op and the SSA name of its first result, if any."""
        op = self.ops[i]
        hint = op.results[0].name_hint if op.results else None
        return f"{op.name} %{hint}" if hint else f"{op.name} (op {i} of @main)"

    def run(self, fn: Callable[..., T], *args: object) -> T:
        """`fn(*args)`, a planner error reported as a failed pass naming its op."""
        try:
            return fn(*args)
        except PlanError as e:
            where = self.label(e.node) if e.node >= 0 else "@main"
            raise PassFailedException(f"{where}: {e}") from e

    def plan(self, hints: Hints, target: Target = DEFAULT) -> Plan:
        return self.run(plan, self.net, hints, target)


def net_from_function(main: func.FuncOp) -> tuple[Net, dict[int, np.ndarray]]:
    """The network of a cvm function and its params' values by tensor id."""
    fn = CvmFunction.of_function(main)
    return fn.net, fn.values()
