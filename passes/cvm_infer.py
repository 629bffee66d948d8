"""`cvm-infer-shapes` and `cvm-infer-precision`: rewrite the result types of cvm operators from `cvm_rules.infer`.

Useful after editing IR by hand: a result written as `tensor<?x?xi32>` or as a plain `tensor<4x8xi32>` gets its
inferred shape (`cvm-infer-shapes`) and its precision (`cvm-infer-precision`):

    %y = cvm.relu %x : (tensor<4x8xi32, #cvm.prec<8>>) -> tensor<?x?xi32>
    // cvm-opt -p cvm-infer-shapes,cvm-infer-precision
    %y = cvm.relu %x : (tensor<4x8xi32, #cvm.prec<8>>) -> tensor<4x8xi32, #cvm.prec<8>>

Inference walks the ops in order; the function arguments and `cvm.param`s must carry their shape and
precision, and every operator's results take what `cvm_rules.infer` gives for its inputs, whatever was written
before. Each pass writes only its part of the type, so `cvm-infer-shapes` alone keeps the written encodings.
The signatures of functions are updated to what they return.
"""

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from cvmc.dialects import cvm_rules as rules
from cvmc.dialects.cvm import CvmOperator, cvm_attrs, tensor_precision, tensor_shape, tensor_type
from cvmc.dialects.narrow import is_tensor
from cvmc.errors import CVMError


def operator_signatures(root: Operation) -> Iterator[tuple[CvmOperator, rules.Signature]]:
    """Every cvm operator under `root`, in order, with the signature `cvm_rules.infer` gives for its inputs.

    An operand produced by an earlier operator takes that operator's inferred shape and precision (not its
    written type), any other operand those of its type. The caller may retype an op's results before it asks
    for the next op. Raises PassFailedException when an input is not fully typed or a rule rejects an op.
    """
    known: dict[SSAValue, tuple[rules.Shape, int]] = {}
    for op in root.walk():
        if not isinstance(op, CvmOperator):
            continue
        shapes: list[rules.Shape] = []
        precisions: list[int] = []
        for i, v in enumerate(op.operands):
            if v in known:
                shape, prec = known[v]
            else:
                shape, prec = tensor_shape(v.type), tensor_precision(v.type)
                if shape is None or prec is None:
                    raise PassFailedException(f"{op.name}: operand {i} has no static shape and precision "
                                              f"({v.type})")
            shapes.append(shape)
            precisions.append(prec)
        try:
            sig = rules.infer(op.op_name, cvm_attrs(op), shapes, precisions)
        except CVMError as e:
            raise PassFailedException(f"{op.name}: {e}") from e
        yield op, sig
        for r, shape, prec in zip(op.results, sig.shapes, sig.precisions):
            known[r] = (shape, prec)


def _retype(root: ModuleOp, shapes: bool, precision: bool) -> None:
    for op, sig in operator_signatures(root):
        for r, shape, prec in zip(op.results, sig.shapes, sig.precisions):
            old = r.type
            new_shape = shape if shapes or not is_tensor(old) else old.get_shape()
            new_prec = prec if precision else tensor_precision(old)
            new: Attribute = tensor_type(new_shape, new_prec)
            if new != old:
                Rewriter.replace_value_with_new_type(r, new)
    for f in root.walk():
        if isinstance(f, func.FuncOp) and not f.is_declaration:
            f.update_function_type()


@dataclass(frozen=True)
class CvmInferShapesPass(ModulePass):
    """Set the shape of every cvm operator's results to the inferred one."""

    name = "cvm-infer-shapes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _retype(op, shapes=True, precision=False)


@dataclass(frozen=True)
class CvmInferPrecisionPass(ModulePass):
    """Set the precision of every cvm operator's results to the inferred one."""

    name = "cvm-infer-precision"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _retype(op, shapes=False, precision=True)
