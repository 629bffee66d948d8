"""The quantizer's operator tables (runtime/quantize/onnx_spec.py) against the ONNX operator spec: the attributes
of every supported operator at every opset it reads, as onnx.defs gives them; and each attribute at the bounds of
the spec's range and of what the importer implements, and one past each."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from cvmc.errors import CVMLogicError

onnx = pytest.importorskip("onnx", reason="the quantizer reads ONNX (the quantize extra)")
sys.path.insert(0, str(Path(__file__).parent))
from quantize_hostile import model, node  # noqa: E402

from cvmc.runtime.quantize import onnx_graph  # noqa: E402
from cvmc.runtime.quantize.onnx_spec import MAX_OPSET, MIN_OPSET, OPS  # noqa: E402

KINDS = {"INT": "INT", "FLOAT": "FLOAT", "STRING": "STRING", "TENSOR": "TENSOR", "INTS": "INTS",
         "SPARSE_TENSOR": "SPARSE_TENSOR", "FLOATS": "FLOATS", "STRINGS": "STRINGS"}


@pytest.mark.parametrize("opset", range(MIN_OPSET, MAX_OPSET + 1))
def test_the_tables_give_every_attribute_of_the_spec(opset):
    """Names, kinds and whether required, for every operator at every opset from MIN_OPSET to MAX_OPSET (those
    the installed onnx knows)."""
    from onnx import defs

    if opset > defs.onnx_opset_version():
        pytest.skip(f"the installed onnx knows opsets up to {defs.onnx_opset_version()}")
    for op, spec in OPS.items():
        schema = defs.get_schema(op, opset)
        want = {name: (a.type.name, a.required) for name, a in schema.attributes.items()}
        have = {name: (KINDS[a.kind], a.required) for name, a in spec.attrs.items() if a.since <= opset}
        assert have == want, f"{op} at opset {opset}"
        assert (schema.min_input, schema.max_input) == spec.inputs, f"{op} inputs at opset {opset}"
        assert (schema.min_output, schema.max_output) == spec.output_counts(opset), f"{op} outputs at opset {opset}"


def test_the_tables_know_every_change_of_the_operators_up_to_max_opset():
    """Every version of each operator from 13 to MAX_OPSET changes only its types (checked by hand when MAX_OPSET
    was set): a new version past it needs a look before MAX_OPSET moves."""
    from onnx import defs

    seen = {op: sorted({defs.get_schema(op, v).since_version for v in range(MIN_OPSET, MAX_OPSET + 1)
                        if v <= defs.onnx_opset_version()}) for op in OPS}
    assert all(v <= 25 for vs in seen.values() for v in vs), seen


# --- each attribute at its bounds -----------------------------------------------------------------------------

X4 = (1, 2, 6, 6)


def _harness(op, attrs, opset=13):
    """A model of one `op` node with `attrs` on an input that suits it."""
    w = {"w": np.ones((2, 2, 3, 3)) * 0.1}
    if op == "Conv":
        return model([node(op, ["x", "w"], ["y"], "n", **attrs)], w, in_shape=X4, opset=opset)
    if op in ("MaxPool", "AveragePool"):
        attrs = {"kernel_shape": [2, 2], **attrs}
        return model([node(op, ["x"], ["y"], "n", **attrs)], in_shape=X4, opset=opset)
    if op == "Gemm":
        b = np.ones((3, 4)) if attrs.get("transB", 0) else np.ones((4, 3))
        return model([node(op, ["x", "b"], ["y"], "n", **attrs)], {"b": b}, opset=opset)
    if op in ("Flatten", "Transpose", "Concat"):
        ins = ["x", "x"] if op == "Concat" else ["x"]
        return model([node(op, ins, ["y"], "n", **attrs)], in_shape=(1, 2, 3, 4), opset=opset)
    if op == "Reshape":
        return model([node(op, ["x", "s"], ["y"], "n", **attrs)], {"s": np.array([1, 0, 12])}, in_shape=(1, 2, 3, 4),
                     opset=opset)
    if op == "BatchNormalization":
        c = {k: np.ones(2) for k in "gbmv"}
        return model([node(op, ["x", "g", "b", "m", "v"], ["y"], "n", **attrs)], c, in_shape=X4, opset=opset)
    if op == "Constant":
        return model([node(op, [], ["c"], "n", **attrs), node("Add", ["x", "c"], ["y"], "add")], opset=opset)
    if op == "ArgMax":
        attrs = {"axis": 1, **attrs}  # its default, 0, is the batch axis
    return model([node(op, ["x"], ["y"], "n", **attrs)], opset=opset)  # (1, 4)


SPEC = "the ONNX spec allows"
IMPL = "the quantizer implements"
OK = None
INF = float("inf")

CASES = [  # (op, {attribute: value}, opset, None for a model read, else what the message says)
    ("Conv", {"group": 1}, 13, OK), ("Conv", {"group": 0}, 13, SPEC), ("Conv", {"group": 2}, 13, "weight of shape"),
    ("Conv", {"strides": [1, 1]}, 13, OK), ("Conv", {"strides": [0, 1]}, 13, SPEC),
    ("Conv", {"strides": [1, 0]}, 13, SPEC), ("Conv", {"strides": [1]}, 13, SPEC),
    ("Conv", {"strides": [1, 1, 1]}, 13, SPEC), ("Conv", {"strides": [4, 4]}, 13, OK),
    ("Conv", {"dilations": [1, 1]}, 13, OK), ("Conv", {"dilations": [0, 1]}, 13, SPEC),
    ("Conv", {"dilations": [2, 2]}, 13, OK), ("Conv", {"dilations": [3, 3]}, 13, "is larger than the padded input"),
    ("Conv", {"pads": [0, 0, 0, 0]}, 13, OK), ("Conv", {"pads": [-1, 0, -1, 0]}, 13, SPEC),
    ("Conv", {"pads": [1, 2, 1, 2]}, 13, OK), ("Conv", {"pads": [1, 2, 1, 3]}, 13, IMPL),
    ("Conv", {"pads": [0, 0]}, 13, SPEC),
    ("Conv", {"kernel_shape": [3, 3]}, 13, OK), ("Conv", {"kernel_shape": [0, 3]}, 13, SPEC),
    ("Conv", {"kernel_shape": [3, 2]}, 13, "disagrees with the weight"),
    ("Conv", {"auto_pad": "NOTSET"}, 13, OK), ("Conv", {"auto_pad": "VALID"}, 13, IMPL),
    ("Conv", {"auto_pad": "SAME_LOWER"}, 13, IMPL), ("Conv", {"auto_pad": "SAME"}, 13, SPEC),
    ("Gemm", {"transA": 0}, 13, OK), ("Gemm", {"transA": 1}, 13, IMPL), ("Gemm", {"transA": 2}, 13, SPEC),
    ("Gemm", {"transA": -1}, 13, SPEC),
    ("Gemm", {"transB": 0}, 13, OK), ("Gemm", {"transB": 1}, 13, OK), ("Gemm", {"transB": 2}, 13, SPEC),
    ("Gemm", {"transB": -1}, 13, SPEC),
    ("Gemm", {"alpha": 1e38}, 13, OK), ("Gemm", {"alpha": INF}, 13, IMPL), ("Gemm", {"alpha": -INF}, 13, IMPL),
    ("Gemm", {"beta": 0.0}, 13, OK), ("Gemm", {"beta": float("nan")}, 13, IMPL),
    ("LeakyRelu", {"alpha": 0.5}, 13, OK), ("LeakyRelu", {"alpha": 1e-30}, 13, OK),
    ("LeakyRelu", {"alpha": 0.0}, 13, IMPL), ("LeakyRelu", {"alpha": 0.9999}, 13, OK),
    ("LeakyRelu", {"alpha": 1.0}, 13, IMPL), ("LeakyRelu", {"alpha": -0.1}, 13, IMPL),
    ("MaxPool", {"ceil_mode": 0}, 13, OK), ("MaxPool", {"ceil_mode": 1}, 13, OK),
    ("MaxPool", {"ceil_mode": 2}, 13, SPEC),
    ("MaxPool", {"ceil_mode": -1}, 13, SPEC),
    ("MaxPool", {"storage_order": 1}, 13, OK), ("MaxPool", {"storage_order": 2}, 13, SPEC),
    ("MaxPool", {"dilations": [1, 1]}, 13, OK), ("MaxPool", {"dilations": [1, 2]}, 13, IMPL),
    ("MaxPool", {"dilations": [0, 1]}, 13, SPEC),
    ("MaxPool", {"kernel_shape": [1, 1]}, 13, OK), ("MaxPool", {"kernel_shape": [6, 6]}, 13, OK),
    ("MaxPool", {"kernel_shape": [7, 6]}, 13, "is larger than the padded input"),
    ("MaxPool", {"kernel_shape": [0, 1]}, 13, SPEC), ("MaxPool", {"kernel_shape": [2]}, 13, SPEC),
    ("MaxPool", {"pads": [1, 1, 1, 1]}, 13, OK), ("MaxPool", {"pads": [2, 2, 2, 2]}, 13, "in the padding alone"),
    ("MaxPool", {"pads": [-1, 0, -1, 0]}, 13, SPEC),
    ("MaxPool", {"strides": [1, 1]}, 13, OK), ("MaxPool", {"strides": [0, 1]}, 13, SPEC),
    ("MaxPool", {"auto_pad": "NOTSET"}, 13, OK), ("MaxPool", {"auto_pad": "SAME_UPPER"}, 13, IMPL),
    ("MaxPool", {"auto_pad": ""}, 13, SPEC),
    ("AveragePool", {"auto_pad": "NOTSET"}, 13, OK), ("AveragePool", {"auto_pad": "VALID"}, 13, IMPL),
    ("AveragePool", {"auto_pad": "valid"}, 13, SPEC),
    ("AveragePool", {"kernel_shape": [6, 6]}, 13, OK), ("AveragePool", {"kernel_shape": [6, 0]}, 13, SPEC),
    ("AveragePool", {"kernel_shape": [7, 6]}, 13, "is larger than the padded input"),
    ("AveragePool", {"pads": [1, 1, 1, 1], "count_include_pad": 1}, 13, OK),
    ("AveragePool", {"pads": [1, 0, 1, 1], "count_include_pad": 1}, 13, IMPL),
    ("AveragePool", {"pads": [-1, 0, -1, 0]}, 13, SPEC),
    ("AveragePool", {"strides": [6, 6]}, 13, OK), ("AveragePool", {"strides": [1, 0]}, 13, SPEC),
    ("AveragePool", {"count_include_pad": 0}, 13, OK), ("AveragePool", {"count_include_pad": 1}, 13, OK),
    ("AveragePool", {"count_include_pad": 2}, 13, SPEC), ("AveragePool", {"ceil_mode": 0}, 13, OK),
    ("AveragePool", {"ceil_mode": 1}, 13, IMPL), ("AveragePool", {"ceil_mode": 2}, 13, SPEC),
    ("AveragePool", {"dilations": [1, 1]}, 13, "is not an attribute of AveragePool at opset 13"),
    ("AveragePool", {"dilations": [1, 1]}, 19, OK), ("AveragePool", {"dilations": [2, 1]}, 19, IMPL),
    ("AveragePool", {"dilations": [0, 1]}, 19, SPEC),
    ("Flatten", {"axis": 1}, 13, OK), ("Flatten", {"axis": -3}, 13, OK),
    ("Flatten", {"axis": 2}, 13, "moves the batch axis"), ("Flatten", {"axis": -1}, 13, "moves the batch axis"),
    ("Flatten", {"axis": 4}, 13, "moves the batch axis"),
    ("Flatten", {"axis": 0}, 13, "moves the batch axis"), ("Flatten", {"axis": -4}, 13, "moves the batch axis"),
    ("Flatten", {"axis": 5}, 13, SPEC), ("Flatten", {"axis": -5}, 13, SPEC),
    ("Reshape", {"allowzero": 0}, 14, OK), ("Reshape", {"allowzero": 1}, 14, "holds 0 values"),
    ("Reshape", {"allowzero": 2}, 14, SPEC), ("Reshape", {"allowzero": 0}, 13, "is not an attribute of Reshape"),
    ("Transpose", {"perm": [0, 3, 1, 2]}, 13, OK), ("Transpose", {"perm": [0, 1, 2, 3]}, 13, OK),
    ("Transpose", {"perm": [0, 1, 2]}, 13, SPEC), ("Transpose", {"perm": [0, 1, 2, 4]}, 13, SPEC),
    ("Transpose", {"perm": [0, 1, 2, -1]}, 13, SPEC), ("Transpose", {"perm": [3, 1, 2, 0]}, 13, "moves the batch"),
    ("Concat", {"axis": 1}, 13, OK), ("Concat", {"axis": 3}, 13, OK), ("Concat", {"axis": -1}, 13, OK),
    ("Concat", {"axis": -3}, 13, OK), ("Concat", {"axis": 4}, 13, SPEC), ("Concat", {"axis": -5}, 13, SPEC),
    ("Concat", {"axis": 0}, 13, "is the batch axis"), ("Concat", {"axis": -4}, 13, "is the batch axis"),
    ("Softmax", {"axis": -1}, 13, OK), ("Softmax", {"axis": 1}, 13, OK),
    ("Softmax", {"axis": -2}, 13, "is the batch axis"), ("Softmax", {"axis": 0}, 13, "is the batch axis"),
    ("Softmax", {"axis": 2}, 13, SPEC), ("Softmax", {"axis": -3}, 13, SPEC),
    ("ArgMax", {"axis": 1}, 13, OK),
    ("ArgMax", {"axis": -2}, 13, "is the batch axis"),
    ("ArgMax", {"axis": 2}, 13, SPEC),
    ("ArgMax", {"axis": -3}, 13, SPEC),
    ("ArgMax", {"axis": 0}, 13, "is the batch axis"),
    ("ArgMax", {"keepdims": 0}, 13, OK),
    ("ArgMax", {"keepdims": 1}, 13, OK),
    ("ArgMax", {"keepdims": 2}, 13, SPEC), ("ArgMax", {"select_last_index": 0}, 13, OK),
    ("ArgMax", {"select_last_index": 1}, 13, IMPL), ("ArgMax", {"select_last_index": 2}, 13, SPEC),
    ("BatchNormalization", {"epsilon": 1e-5}, 13, OK), ("BatchNormalization", {"epsilon": 0.0}, 13, OK),
    ("BatchNormalization", {"epsilon": -1.0}, 13, "var \\+ epsilon is 0.0"),
    ("BatchNormalization", {"epsilon": INF}, 13, IMPL), ("BatchNormalization", {"momentum": 5.0}, 13, OK),
    ("BatchNormalization", {"training_mode": 0}, 14, OK), ("BatchNormalization", {"training_mode": 1}, 14, IMPL),
    ("BatchNormalization", {"training_mode": 2}, 14, SPEC),
    ("BatchNormalization", {"training_mode": 0}, 13, "is not an attribute of BatchNormalization at opset 13"),
    ("Dropout", {"seed": -(1 << 62)}, 13, OK), ("Dropout", {"seed": 7}, 13, OK),
    ("Constant", {"value": onnx.numpy_helper.from_array(np.ones(4, np.float32), "v")}, 13, OK),
    ("Constant", {"value_floats": [1.0] * 4}, 13, IMPL), ("Constant", {"value_ints": [1] * 4}, 13, IMPL),
    ("Constant", {"value_string": "a"}, 13, IMPL),
    ("Relu", {"alpha": 1.0}, 13, "is not an attribute of Relu"), ("Identity", {"x": 1}, 13, "is not an attribute"),
]


def _id(case) -> str:
    op, attrs, opset, message = case
    name, value = next(iter(attrs.items()))
    return f"{op}-{name}={value!s:.20}-{opset}-{'ok' if message is None else 'refused'}"


@pytest.mark.parametrize(("op", "attrs", "opset", "message"), CASES, ids=[_id(c) for c in CASES])
def test_each_attribute_at_its_bounds_and_one_past(op, attrs, opset, message):
    m = _harness(op, attrs, opset)
    if message is None:
        fg = onnx_graph.load(m)
        assert fg.nodes, "the node was read"
        return
    name, value = next(iter(attrs.items()))
    with pytest.raises(CVMLogicError, match=r"node 'n' \(" + op + r"\): ") as e:
        onnx_graph.load(m)
    text = str(e.value)
    assert message.replace("\\", "") in text or re.search(message, text), text
    if message in (SPEC, IMPL):
        assert f"attribute {name!r} is " in text, text


def test_every_attribute_of_the_tables_is_tried():
    tried = {(op, name) for op, attrs, _, _ in CASES for name in attrs}
    every = {(op, name) for op, spec in OPS.items() for name in spec.attrs if name not in ("sparse_value",
                                                                                          "value_float",
                                                                                          "value_int",
                                                                                          "value_strings")}
    assert every <= tried, sorted(every - tried)


def test_an_attribute_of_the_wrong_kind_and_one_given_twice_are_refused():
    m = _harness("Conv", {})
    m.graph.node[0].attribute.append(onnx.helper.make_attribute("group", [1, 2]))
    with pytest.raises(CVMLogicError, match=r"node 'n' \(Conv\): attribute 'group': expected INT, got an attribute of "
                                            r"type INTS"):
        onnx_graph.load(m)
    m = _harness("Conv", {"group": 1})
    m.graph.node[0].attribute.append(onnx.helper.make_attribute("group", 1))
    with pytest.raises(CVMLogicError, match=r"attribute 'group' given twice"):
        onnx_graph.load(m)


def test_the_inferred_shapes_are_the_interpreters():
    """load() checks every shape onnx_spec.infer gives against the float interpreter's (an assertion): the
    operators of the issue's model, through folding and the batch rules."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_quantize import argmax_model, every_operator_model

    for blob, _ in (every_operator_model(), argmax_model()):
        fg = onnx_graph.load(blob)
        assert fg.row_bytes > 0 and fg.const_bytes > 0
