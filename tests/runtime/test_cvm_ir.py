"""Graph <-> cvm IR: every valid corpus model goes to IR and back (in memory and through text) unchanged."""

import numpy as np
import pytest
from conftest import CVM_CORPUS, case_meta, case_params, corpus_cases, python_calls
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.parser import Parser

from cvmc.dialects.cvm import Cvm
from cvmc.errors import CVMLogicError, CVMRuntimeError
from cvmc.passes.cvm_gas import CvmGasPass
from cvmc.runtime.builder import CvmBuilder
from cvmc.runtime.frontend.cvm_ir import graph_to_module, module_to_graph
from cvmc.runtime.frontend.graph import Graph, load_graph, save_graph

VALID = corpus_cases("op", "chain", "model")


def _ctx() -> Context:
    ctx = Context()
    for d in (Builtin, Func, Cvm):
        ctx.load_dialect(d)
    return ctx


def _load(d) -> Graph:
    return load_graph((d / "model.json").read_bytes(), case_params(d))


def assert_same_graph(a: Graph, b: Graph) -> None:
    assert a.nodes == b.nodes
    assert a.heads == b.heads
    assert (a.version, a.postprocess, a.gas) == (b.version, b.postprocess, b.gas)
    assert a.params.keys() == b.params.keys()
    for k in a.params:
        assert a.params[k].dtype == b.params[k].dtype and np.array_equal(a.params[k], b.params[k]), k


def test_corpus_is_there():
    assert len(VALID) > 300


@pytest.mark.parametrize("case", VALID, ids=lambda d: d.name)
def test_round_trip(case):
    g = _load(case)
    module = graph_to_module(g)
    module.verify()
    assert_same_graph(module_to_graph(module), g)
    reparsed = Parser(_ctx(), str(module)).parse_module()
    reparsed.verify()
    assert_same_graph(module_to_graph(reparsed), g)


@pytest.mark.parametrize("case", VALID, ids=lambda d: d.name)
def test_gas_pass_equals_model_gas(case):
    g = _load(case)
    module = graph_to_module(g)
    CvmGasPass().apply(_ctx(), module)
    main = module.body.block.first_op
    assert main is not None
    assert main.attributes["cvm.gas"].value.data == g.gas == case_meta(case)["gas"]  # type: ignore[attr-defined]


def test_files_round_trip(tmp_path):
    d = CVM_CORPUS / "model_digits_cnn_000"
    g = _load(d)
    save_graph(module_to_graph(graph_to_module(g)), tmp_path)
    assert_same_graph(load_graph(tmp_path / "model.json", tmp_path / "params.bin"), g)


def test_bench_model_imports_fast():
    """Its 8,000 Python calls took 5 ms (they were 0.2 s once): a count, not a time, so a loaded machine passes."""
    g = _load(CVM_CORPUS / "model_bench_resnet_000")
    calls, _ = python_calls(lambda: graph_to_module(g))
    assert calls < 16_000, f"importing the bench model made {calls} Python calls"


def _module(text: str) -> ModuleOp:
    m = Parser(_ctx(), text).parse_module()
    m.verify()
    return m


RELU = """func.func @main(%data: tensor<4xi32, #cvm.prec<8>>) -> {ret} {{
  %0 = cvm.relu %data : (tensor<4xi32, #cvm.prec<8>>) -> {ret}
  func.return %0 : {ret}
}}"""


def test_names_and_defaults():
    """Ops without a name get `<op>_<node id>`; a result without a precision is inferred; version defaults."""
    g = module_to_graph(_module(RELU.format(ret="tensor<4xi32>")))
    assert [(n.name, n.op, n.precisions) for n in g.nodes] == [("data", "null", (8,)), ("relu_1", "relu", (8,))]
    assert (g.version, g.postprocess, g.gas, g.heads) == ("cvm_1.0.0", None, 20 + (1 + 5) * 4, [(1, 0)])


def test_input_becomes_node_zero():
    """The input is @main's argument: read back, it is node 0, the other nodes keep their order."""
    b = CvmBuilder()
    w = b.create_param(np.arange(6).reshape(2, 3), precision=4, name="w")
    x = b.create_input([1, 3], precision=8)
    g = b.graph(b.concatenate(w, x, axis=0))
    assert [n.name for n in g.nodes] == ["w", "data", "concatenate_2"]
    back = module_to_graph(graph_to_module(g))
    assert [n.name for n in back.nodes] == ["data", "w", "concatenate_2"]
    assert back.nodes[2].inputs == [(1, 0), (0, 0)] and back.heads == [(2, 0)] and back.gas == g.gas


@pytest.mark.parametrize(("text", "error", "message"), [
    (RELU.format(ret="tensor<?xi32>"), CVMLogicError, "has no static shape"),
    ("func.func @main(%data: tensor<4xi32>) {\n  func.return\n}", CVMLogicError, "the input 'data' has no precision"),
    ("func.func @main(%a: tensor<4xi32, #cvm.prec<8>>, %b: tensor<4xi32, #cvm.prec<8>>) {\n  func.return\n}",
     CVMRuntimeError, "expected at most one argument"),
    ("func.func @main(%data: tensor<4xi32, #cvm.prec<8>>) {\n  func.return\n}", CVMRuntimeError,
     "expected @main to return at least one value"),
    ("func.func @main() -> i32 {\n  %0 = arith.constant 1 : i32\n  func.return %0 : i32\n}", CVMRuntimeError,
     "unsupported op arith.constant"),
    ("func.func @main(%data: tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<8>> attributes "
     "{cvm.version = \"cvm_9\"} {\n  func.return %data : tensor<4xi32, #cvm.prec<8>>\n}", CVMRuntimeError,
     "unsupported cvm.version"),
    ("func.func @main(%data: tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<12>> {\n"
     "  %0 = cvm.cvm_left_shift %data {precision = 12 : i64, shift_bit = 30 : i64} : "
     "(tensor<4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<12>>\n"
     "  func.return %0 : tensor<4xi32, #cvm.prec<12>>\n}",
     CVMRuntimeError, "exceeds 32"),
])
def test_module_to_graph_errors(text, error, message):
    from xdsl.dialects.arith import Arith

    ctx = _ctx()
    ctx.load_dialect(Arith)
    with pytest.raises(error, match=message):
        module_to_graph(Parser(ctx, text).parse_module())
