"""`CvmBuilder`: build a CVM model in Python, node by node, checked as it grows.

    b = cvmc.CvmBuilder("mlp")
    x = b.create_input([1, 64], precision=8)                 # the input node, named `data`
    w = b.create_param(weights, precision=8, name="w")       # int32 values that fit the precision
    y = b.dense(x, w, units=10)                              # tensors first, then the attributes
    y = b.cvm_right_shift(y, precision=8, shift_bit=7)
    graph = b.graph([y])                                     # a verified Graph, with its gas
    model = b.compile([y], device="cpu")                     # a runnable cvmc Model
    b.export("out/", [y])                                    # out/model.json, out/params.bin

Each operator method takes its input tensors, then the operator's attributes as keywords (names and defaults
of `cvm_rules.OP_ATTRS`; tuples as tuples or lists) and an optional node `name`. Every call runs
`cvm_rules.infer`, so a misuse raises at once: a `CVMLogicError` (the caller's fault) naming the node and the
rule, even where cvm-runtime gives a model file with that node a `CVMRuntimeError` (a dense weight of the wrong
shape; loading such a file keeps the runtime's class). The graph of the builder is the one loading its exported
files gives.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from cvmc.dialects import cvm_rules as rules
from cvmc.errors import CVMError, CVMLogicError
from cvmc.runtime.frontend.graph import Graph, Node, save_graph, verify_graph

if TYPE_CHECKING:
    from cvmc.runtime.model import Model

INPUT = "data"


@dataclass(frozen=True, eq=False)
class Tensor:
    """One output of a node of a builder: its shape and precision are known as soon as it is made."""

    builder: CvmBuilder
    node: int
    index: int
    shape: rules.Shape
    precision: int

    def __repr__(self) -> str:
        return f"Tensor(node={self.node}, index={self.index}, shape={list(self.shape)}, precision={self.precision})"


def _check_precision(precision: int) -> int:
    if isinstance(precision, bool) or not isinstance(precision, int | np.integer) or not 1 <= precision <= 32:
        raise CVMLogicError(f"expected 'precision' in [1, 32], got {precision!r}")
    return int(precision)


def _typed(op: str, spec: rules.AttrSpec, value: Any) -> Any:
    """A keyword value as the type `cvm_rules` expects for the attribute's kind."""
    try:
        if spec.kind == "opt_int" and value is None:
            return None
        if spec.kind in ("int", "opt_int"):
            return operator.index(value)
        if spec.kind == "bool":
            if not isinstance(value, bool | np.bool_):
                raise TypeError
            return bool(value)
        if spec.kind == "ints":
            return (operator.index(value),) if not isinstance(value, Sequence | np.ndarray) else tuple(
                operator.index(v) for v in value)
        if spec.kind == "str" and not isinstance(value, str):
            raise TypeError
        return value
    except TypeError:
        want = {"int": "an integer", "opt_int": "an integer or None", "bool": "a bool",
                "ints": "a tuple of integers", "str": "a string"}[spec.kind]
        raise CVMLogicError(f"attribute {spec.name!r} of {op}: expected {want}, got {value!r}") from None


def _dims(name: str, shape: Any) -> tuple[int, ...]:
    """A shape given as whole numbers: 2.5, "2" or True is refused, never truncated."""
    try:
        if isinstance(shape, str | bytes) or any(isinstance(d, bool | np.bool_) for d in shape):
            raise TypeError
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        raise CVMLogicError(f"expected the shape of {name!r} as a sequence of integers, got {shape!r}") from None


class CvmBuilder:
    """Build a CVM model: an input, params and operators; then a Graph, a compiled Model or model files."""

    def __init__(self, name: str = "net"):
        self.name = name
        self._nodes: list[Node] = []
        self._params: dict[str, np.ndarray] = {}

    def __repr__(self) -> str:
        return f"CvmBuilder({self.name!r}, {len(self._nodes)} nodes)"

    # -- variables ------------------------------------------------------------------------------------------

    def _variable(self, name: str, shape: Sequence[int], precision: int) -> Tensor:
        shape = rules.check_shape(_dims(name, shape), f"the shape of {name!r}")
        self._nodes.append(Node(name, "null", shapes=(shape,), precisions=(precision,)))
        return Tensor(self, len(self._nodes) - 1, 0, shape, precision)

    def create_input(self, shape: Sequence[int], precision: int) -> Tensor:
        """The model's input, the node named `data` (values are saturated to the precision at inference)."""
        if any(n.name == INPUT for n in self._nodes):
            raise CVMLogicError("the model already has an input")
        return self._variable(INPUT, shape, _check_precision(precision))

    def create_param(self, array: Any, precision: int, name: str | None = None) -> Tensor:
        """A param: integer values, each within the precision (|x| <= 2^(p-1) - 1); named `param_<n>` by default."""
        precision = _check_precision(precision)
        name = f"param_{len(self._nodes)}" if name is None else name
        if name == INPUT or any(n.name == name for n in self._nodes):
            raise CVMLogicError(f"a node named {name!r} already exists (or names the input)")
        arr = np.asarray(array)
        if arr.dtype.kind not in "iub":
            raise CVMLogicError(f"param {name!r}: expected integer values, got dtype {arr.dtype}")
        try:
            rules.check_values(arr, precision)
        except CVMLogicError as e:
            raise CVMLogicError(f"param {name!r}: {e}") from None
        tensor = self._variable(name, arr.shape, precision)
        self._params[name] = arr.astype(np.int32)
        return tensor

    # -- operators ------------------------------------------------------------------------------------------

    def _op(self, op: str, inputs: Sequence[Tensor], attrs: dict[str, Any]) -> tuple[Tensor, ...]:
        name = attrs.pop("name", None)
        for t in inputs:
            if not isinstance(t, Tensor) or t.builder is not self:
                raise CVMLogicError(f"{op}: expected tensors of this builder as inputs, got {t!r}")
        nid = len(self._nodes)
        name = f"{op}_{nid}" if name is None else str(name)
        specs = {s.name: s for s in rules.OP_ATTRS[op]}
        try:
            typed = rules.default_attrs(op, **{k: _typed(op, specs[k], v) if k in specs else v
                                               for k, v in attrs.items()})
            sig = rules.infer(op, typed, [t.shape for t in inputs], [t.precision for t in inputs])
        except CVMError as e:  # the caller's fault here, whatever class the runtime gives the same in a model file
            raise CVMLogicError(f"node {name!r} ({op}): {e}") from None
        self._nodes.append(Node(name, op, [(t.node, t.index) for t in inputs], typed, sig.shapes, sig.precisions))
        return tuple(Tensor(self, nid, k, s, p) for k, (s, p) in enumerate(zip(sig.shapes, sig.precisions)))

    def _one(self, op: str, *inputs: Tensor, **attrs: Any) -> Tensor:
        return self._op(op, inputs, attrs)[0]

    def _with_bias(self, op: str, data: Tensor, weight: Tensor, bias: Tensor | None, attrs: dict[str, Any]) -> Tensor:
        attrs.setdefault("use_bias", bias is not None)
        return self._op(op, [data, weight] if bias is None else [data, weight, bias], attrs)[0]

    def conv2d(self, data: Tensor, weight: Tensor, bias: Tensor | None = None, **attrs: Any) -> Tensor:
        """2-D convolution (NCHW, OIHW): channels, kernel_size; strides, padding, dilation, groups."""
        return self._with_bias("conv2d", data, weight, bias, attrs)

    def dense(self, data: Tensor, weight: Tensor, bias: Tensor | None = None, **attrs: Any) -> Tensor:
        """data . weight^T (+ bias): units."""
        return self._with_bias("dense", data, weight, bias, attrs)

    def relu(self, data: Tensor, **attrs: Any) -> Tensor:
        return self._one("relu", data, **attrs)

    def max_pool2d(self, data: Tensor, **attrs: Any) -> Tensor:
        """pool_size; strides, padding, ceil_mode."""
        return self._one("max_pool2d", data, **attrs)

    def upsampling(self, data: Tensor, **attrs: Any) -> Tensor:
        """scale."""
        return self._one("upsampling", data, **attrs)

    def get_valid_counts(self, data: Tensor, **attrs: Any) -> tuple[Tensor, Tensor]:
        """score_threshold; returns (count, boxes)."""
        count, boxes = self._op("get_valid_counts", [data], attrs)
        return count, boxes

    def non_max_suppression(self, data: Tensor, valid_count: Tensor, **attrs: Any) -> Tensor:
        """iou_threshold, force_suppress, top_k, max_output_size."""
        return self._one("non_max_suppression", data, valid_count, **attrs)

    def abs(self, data: Tensor, **attrs: Any) -> Tensor:
        return self._one("abs", data, **attrs)

    def negative(self, data: Tensor, **attrs: Any) -> Tensor:
        return self._one("negative", data, **attrs)

    def cvm_precision(self, data: Tensor, **attrs: Any) -> Tensor:
        return self._one("cvm_precision", data, **attrs)

    def elemwise_add(self, lhs: Tensor, rhs: Tensor, **attrs: Any) -> Tensor:
        return self._one("elemwise_add", lhs, rhs, **attrs)

    def elemwise_sub(self, lhs: Tensor, rhs: Tensor, **attrs: Any) -> Tensor:
        return self._one("elemwise_sub", lhs, rhs, **attrs)

    def clip(self, data: Tensor, **attrs: Any) -> Tensor:
        """a_min, a_max."""
        return self._one("clip", data, **attrs)

    def cvm_clip(self, data: Tensor, **attrs: Any) -> Tensor:
        """precision."""
        return self._one("cvm_clip", data, **attrs)

    def cvm_right_shift(self, data: Tensor, **attrs: Any) -> Tensor:
        """precision, shift_bit."""
        return self._one("cvm_right_shift", data, **attrs)

    def cvm_left_shift(self, data: Tensor, **attrs: Any) -> Tensor:
        """precision, shift_bit."""
        return self._one("cvm_left_shift", data, **attrs)

    def repeat(self, data: Tensor, **attrs: Any) -> Tensor:
        """repeats; axis."""
        return self._one("repeat", data, **attrs)

    def tile(self, data: Tensor, **attrs: Any) -> Tensor:
        """reps."""
        return self._one("tile", data, **attrs)

    def flatten(self, data: Tensor, **attrs: Any) -> Tensor:
        return self._one("flatten", data, **attrs)

    def concatenate(self, *inputs: Tensor, **attrs: Any) -> Tensor:
        """axis."""
        return self._one("concatenate", *inputs, **attrs)

    def expand_dims(self, data: Tensor, **attrs: Any) -> Tensor:
        """axis; num_newaxis."""
        return self._one("expand_dims", data, **attrs)

    def reshape(self, data: Tensor, **attrs: Any) -> Tensor:
        """shape (MXNet codes)."""
        return self._one("reshape", data, **attrs)

    def squeeze(self, data: Tensor, **attrs: Any) -> Tensor:
        """axis."""
        return self._one("squeeze", data, **attrs)

    def transpose(self, data: Tensor, **attrs: Any) -> Tensor:
        """axes."""
        return self._one("transpose", data, **attrs)

    def strided_slice(self, data: Tensor, **attrs: Any) -> Tensor:
        """begin; end, stride."""
        return self._one("strided_slice", data, **attrs)

    def take(self, data: Tensor, indices: Tensor, **attrs: Any) -> Tensor:
        """axis (None: from the flattened data)."""
        return self._one("take", data, indices, **attrs)

    def cvm_lut(self, data: Tensor, table: Tensor, **attrs: Any) -> Tensor:
        """in_dim."""
        return self._one("cvm_lut", data, table, **attrs)

    def slice_like(self, data: Tensor, shape_like: Tensor, **attrs: Any) -> Tensor:
        """axis."""
        return self._one("slice_like", data, shape_like, **attrs)

    def where(self, condition: Tensor, x: Tensor, y: Tensor, **attrs: Any) -> Tensor:
        return self._one("where", condition, x, y, **attrs)

    def sum(self, data: Tensor, **attrs: Any) -> Tensor:
        """axis, keepdims, exclude."""
        return self._one("sum", data, **attrs)

    def max(self, data: Tensor, **attrs: Any) -> Tensor:
        """axis, keepdims, exclude."""
        return self._one("max", data, **attrs)

    def broadcast_add(self, lhs: Tensor, rhs: Tensor, **attrs: Any) -> Tensor:
        return self._one("broadcast_add", lhs, rhs, **attrs)

    def broadcast_sub(self, lhs: Tensor, rhs: Tensor, **attrs: Any) -> Tensor:
        return self._one("broadcast_sub", lhs, rhs, **attrs)

    def broadcast_mul(self, lhs: Tensor, rhs: Tensor, **attrs: Any) -> Tensor:
        return self._one("broadcast_mul", lhs, rhs, **attrs)

    def broadcast_max(self, lhs: Tensor, rhs: Tensor, **attrs: Any) -> Tensor:
        return self._one("broadcast_max", lhs, rhs, **attrs)

    def broadcast_div(self, lhs: Tensor, rhs: Tensor, **attrs: Any) -> Tensor:
        return self._one("broadcast_div", lhs, rhs, **attrs)

    def broadcast_greater(self, lhs: Tensor, rhs: Tensor, **attrs: Any) -> Tensor:
        return self._one("broadcast_greater", lhs, rhs, **attrs)

    # -- results --------------------------------------------------------------------------------------------

    def sinks(self) -> list[Tensor]:
        """Every operator output that no node reads, in build order: the default heads."""
        read = {src for n in self._nodes for src in n.inputs}
        return [Tensor(self, i, k, n.shapes[k], n.precisions[k]) for i, n in enumerate(self._nodes)
                if not n.is_variable for k in range(len(n.shapes)) if (i, k) not in read]

    def graph(self, outputs: Tensor | Sequence[Tensor] | None = None, postprocess: str | None = None) -> Graph:
        """The verified graph of every node built so far, whose heads are `outputs` (by default `sinks()`)."""
        if outputs is None:
            outputs = self.sinks()
        outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
        if not outs:
            raise CVMLogicError("expected at least one output")
        for t in outs:
            if not isinstance(t, Tensor) or t.builder is not self:
                raise CVMLogicError(f"expected outputs that are tensors of this builder, got {t!r}")
        if postprocess not in (None, "argmax", "detection"):
            raise CVMLogicError(f"expected postprocess None, 'argmax' or 'detection', got {postprocess!r}")
        nodes = [replace(n, inputs=list(n.inputs), attrs=dict(n.attrs)) for n in self._nodes]
        params = {k: v.copy() for k, v in self._params.items()}
        gas = verify_graph(nodes, params)
        return Graph(nodes, [(t.node, t.index) for t in outs], params, postprocess=postprocess, gas=gas)

    def compile(self, outputs: Tensor | Sequence[Tensor] | None = None, device: str = "cpu",
                postprocess: str | None = None) -> Model:
        """A runnable model of the graph (`cvmc.runtime.model.Model`) on a device."""
        from cvmc.runtime.model import Model

        model = Model.from_graph(self.graph(outputs, postprocess), device)
        model.name = self.name
        return model

    def export(self, directory: str | os.PathLike[str], outputs: Tensor | Sequence[Tensor] | None = None,
               postprocess: str | None = None) -> Graph:
        """Write cvm-runtime's `model.json` and `params.bin` into a directory (created if needed); the graph."""
        graph = self.graph(outputs, postprocess)
        save_graph(graph, directory)
        return graph
