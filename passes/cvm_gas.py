"""`cvm-gas`: annotate each cvm op with its gas (`cvm.gas`) and each function with the total.

Gas is cvm-runtime's cost measure (`cvm_rules.node_gas`, `cvm_rules.variable_gas`): an input or param costs
5 per element, an operator its per-element ops times its output size plus 5 per output element. The
function's total counts its arguments (the input `data`), its params and its operators, so for a model it
equals the gas `load_graph` reports.

    func.func @main(%data: tensor<2xi32, #cvm.prec<5>>) -> tensor<2xi32, #cvm.prec<5>> {
      %0 = cvm.abs %data : (tensor<2xi32, #cvm.prec<5>>) -> tensor<2xi32, #cvm.prec<5>>
      func.return %0 : tensor<2xi32, #cvm.prec<5>>
    }
    // cvm-opt -p cvm-gas
    func.func @main(...) -> ... attributes {cvm.gas = 22 : i64} {
      %0 = cvm.abs %data {cvm.gas = 12 : i64} : ...
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from cvmc.dialects import cvm_rules as rules
from cvmc.dialects.cvm import ParamOp, tensor_shape
from cvmc.passes.cvm_infer import operator_signatures

GAS = "cvm.gas"


def _variable_gas(value: SSAValue, what: str) -> int:
    shape = tensor_shape(value.type)
    if shape is None:
        raise PassFailedException(f"{what} has no static shape ({value.type})")
    return rules.variable_gas(shape)


@dataclass(frozen=True)
class CvmGasPass(ModulePass):
    """Annotate cvm ops with `cvm.gas` and every function with the sum over its arguments and ops."""

    name = "cvm-gas"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in op.walk():
            if not isinstance(f, func.FuncOp) or f.is_declaration:
                continue
            total = sum(_variable_gas(a, f"argument {a.index} of @{f.sym_name.data}") for a in f.args)
            for p in f.walk():
                if isinstance(p, ParamOp):
                    gas = _variable_gas(p.result, f"cvm.param {p.param_name.data!r}")
                    p.attributes[GAS] = IntegerAttr(gas, i64)
                    total += gas
            for o, sig in operator_signatures(f):
                gas = rules.node_gas(sig)
                o.attributes[GAS] = IntegerAttr(gas, i64)
                total += gas
            f.attributes[GAS] = IntegerAttr(total, i64)
