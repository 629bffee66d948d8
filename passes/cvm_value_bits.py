"""What the values of each tensor of a cvm function provably are: a bound as a precision, and whether >= 0.

    bits = ValueBits.of(main)        # one walk of @main in order (kernel bodies included)
    bits.bits(v)                     # |x| <= 2^(p-1) - 1 for every value x of the SSA value v (32: any int32)
    bits.nonnegative(v)              # every value of v is >= 0

The declared precision (a tensor type's `#cvm.prec<p>`) is not always a bound: `where` takes its precision from
the condition while its values come from x and y, broadcast_greater keeps its first input's precision for 0/1
values, and get_valid_counts and non_max_suppression fill rows with -1; whatever consumes such a tensor inherits
the understatement. So an op whose inputs are all within their declared precisions keeps its declared output
precisions, and any other op is inferred again by `cvm_rules.infer` from the bounds of its inputs (32 when the
rules reject them: the values may have wrapped) (`node_bits`, shared with the planner's network). Non-negative:
a relu's output, and a cvm_right_shift or cvm_clip of such a tensor (a rounding shift and a symmetric clip keep a
value >= 0). conv2d and dense read both to choose their operands' packed element type (`cvm-pack-operands`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import func
from xdsl.ir import SSAValue

from cvmc.dialects import cvm_rules as rules
from cvmc.dialects.cvm import CvmOperator, cvm_attrs, tensor_precision, tensor_shape
from cvmc.dialects.cvm_sched import KernelOp, PackOp, ViewOp, YieldOp
from cvmc.errors import CVMError


def node_bits(op: str, attrs: Mapping[str, Any], shapes: Sequence[Sequence[int]], ins: Sequence[int],
              in_precisions: Sequence[int], declared: Sequence[int]) -> list[int]:
    """The bounds of an operator's outputs from its inputs' bounds `ins` (their declared precisions
    `in_precisions`, shapes `shapes`) and its outputs' declared precisions. `op` "view" is a `cvm_sched.view`
    (the values of its source, with the declared step of the operator it was: an identity sum adds 1), "pack" a
    `cvm_sched.pack` (its source's values)."""
    if op == "view":
        out = [declared[0] + max(0, ins[0] - in_precisions[0])]
    elif op == "pack":
        out = [ins[0]]
    elif op == "where":
        out = [max(ins[1], ins[2])]
    elif op == "broadcast_greater":
        out = [2]
    elif op == "get_valid_counts":
        out = [declared[0], max(ins[0], 2)]
    elif op == "non_max_suppression":
        out = [max(ins[0], 2)]
    elif op == "cvm_precision":
        out = [7 if ins[0] >= 32 else declared[0]]  # |INT32_MIN| has 32 bits
    elif all(b <= p for b, p in zip(ins, in_precisions)):
        out = list(declared)
    else:
        try:
            sig = rules.infer(op, dict(attrs), shapes, ins)
            out = [max(d, p) for d, p in zip(declared, sig.precisions)]
        except CVMError:
            out = [32] * len(declared)
    return [min(b, 32) for b in out]


def keeps_nonnegative(op: str) -> bool:
    """Whether `op` of a non-negative input gives a non-negative output (a relu's is whatever its input)."""
    return op in ("cvm_right_shift", "cvm_clip")


@dataclass
class ValueBits:
    """The bound and sign of every tensor of a function, by SSA value."""

    _bits: dict[SSAValue, int] = field(default_factory=dict[SSAValue, int])
    _nonnegative: set[SSAValue] = field(default_factory=set[SSAValue])

    def bits(self, v: SSAValue) -> int:
        b = self._bits.get(v)
        if b is None:
            p = tensor_precision(v.type)
            return 32 if p is None else p
        return b

    def nonnegative(self, v: SSAValue) -> bool:
        return v in self._nonnegative

    @staticmethod
    def of(main: func.FuncOp) -> ValueBits:
        """One walk of `main` in order (the ops of each `cvm_sched.kernel` where it stands)."""
        vb = ValueBits()
        for op in main.body.block.ops:
            if isinstance(op, KernelOp):
                body = op.body.block
                for a, v in zip(body.args, op.inputs):
                    vb._alias(a, v)
                for inner in body.ops:
                    if isinstance(inner, YieldOp):
                        for r, v in zip(op.outputs, inner.values):
                            vb._alias(r, v)
                    else:
                        vb._visit(inner)
            else:
                vb._visit(op)
        return vb

    def _alias(self, new: SSAValue, old: SSAValue) -> None:
        self._bits[new] = self.bits(old)
        if old in self._nonnegative:
            self._nonnegative.add(new)

    def _visit(self, op: Any) -> None:
        if isinstance(op, CvmOperator):
            name, attrs = op.op_name, cvm_attrs(op)
        elif isinstance(op, ViewOp):
            name, attrs = "view", {}
        elif isinstance(op, PackOp):
            name, attrs = "pack", {}
        else:
            return
        ins = [self.bits(v) for v in op.operands]
        in_precs = [tensor_precision(v.type) or 32 for v in op.operands]
        declared = [tensor_precision(r.type) or 32 for r in op.results]
        shapes = [tensor_shape(v.type) or () for v in op.operands]
        for r, b in zip(op.results, node_bits(name, attrs, shapes, ins, in_precs, declared)):
            self._bits[r] = b
        if name == "relu" or (keeps_nonnegative(name) and op.operands[0] in self._nonnegative):
            self._nonnegative.update(op.results)
