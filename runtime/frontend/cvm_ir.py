"""A CVM model as IR and back: `Graph` <-> a module of `cvm` ops.

    module = graph_to_module(load_graph("model.json", "params.bin"))
    graph = module_to_graph(module)              # verified again, with its gas
    save_graph(graph, "out/")                    # out/model.json, out/params.bin (cvmc.runtime.frontend.graph)

The module holds one function, `@main`, whose argument is the model's input `data` and whose results are the
heads. Every other node becomes one op, in the graph's order: a variable becomes a `cvm.param` holding its
values, an operator its `cvm.*` op, named after the node (the `name` property, and the SSA name where the
node name is a valid one). The graph's version and postprocess are attributes of `@main`:

    func.func @main(%data: tensor<1x64xi32, #cvm.prec<8>>) -> tensor<1x10xi32, #cvm.prec<8>>
        attributes {cvm.version = "cvm_1.0.0", cvm.postprocess = "argmax"} { ... }

IR is built directly (no text is parsed), so importing a model costs about as much as loading it. The input
always becomes node 0 of the graph read back; every other node keeps its place.
"""

from __future__ import annotations

import re

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Attribute, Block, Region, SSAValue

from cvmc.dialects import cvm_rules as rules
from cvmc.dialects.cvm import (
    CvmOperator,
    ParamOp,
    create_operator,
    cvm_attrs,
    tensor_precision,
    tensor_shape,
    tensor_type,
)
from cvmc.errors import CVMLogicError, CVMRuntimeError
from cvmc.runtime.frontend.graph import POSTPROCESS, VERSIONS, Graph, Node, verify_graph

INPUT = "data"
_NAME = re.compile(r"[A-Za-z_$.-][\w$.-]*")


def _name_hint(value: SSAValue, name: str) -> None:
    if _NAME.fullmatch(name):
        value.name_hint = name


def graph_to_module(graph: Graph) -> ModuleOp:
    """The module of a (verified) graph: `@main(%data)` returning the heads, one op per other node."""
    input_id = graph.input_id
    arg_types = [] if input_id is None else [tensor_type(graph.nodes[input_id].shapes[0],
                                                         graph.nodes[input_id].precisions[0])]
    block = Block(arg_types=arg_types)
    if input_id is not None:
        block.args[0].name_hint = INPUT
    values: list[tuple[SSAValue, ...]] = []
    types: dict[tuple[tuple[int, ...], int], Attribute] = {}  # one (immutable) type per shape and precision
    for node in graph.nodes:
        if node.is_variable and node.name == INPUT:
            values.append((block.args[0],))
            continue
        if node.is_variable:
            op = ParamOp(node.name, graph.params[node.name], node.precisions[0])
        else:
            operands = [values[src][k] for src, k in node.inputs]
            for key in zip(node.shapes, node.precisions):
                if key not in types:
                    types[key] = tensor_type(*key)
            op = create_operator(node.op, operands, node.attrs, [types[k] for k in zip(node.shapes, node.precisions)],
                                 node.name)
        block.add_op(op)
        if len(op.results) == 1:
            _name_hint(op.results[0], node.name)
        values.append(tuple(op.results))
    heads = [values[n][k] for n, k in graph.heads]
    block.add_op(func.ReturnOp(*heads))
    main = func.FuncOp("main", (arg_types, [h.type for h in heads]), Region(block))
    main.attributes["cvm.version"] = StringAttr(graph.version)
    if graph.postprocess is not None:
        main.attributes["cvm.postprocess"] = StringAttr(graph.postprocess)
    return ModuleOp([main])


def _main(module: ModuleOp) -> func.FuncOp:
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    for f in funcs:
        if f.sym_name.data == "main":
            return f
    if len(funcs) == 1:
        return funcs[0]
    raise CVMRuntimeError(f"expected a function @main in the module, found {len(funcs)} functions")


def _static_shape(value: SSAValue, what: str) -> rules.Shape:
    shape = tensor_shape(value.type)
    if shape is None:
        raise CVMLogicError(f"{what} has no static shape ({value.type}); run cvm-infer-shapes first")
    return shape


def module_to_graph(module: ModuleOp) -> Graph:
    """The graph of a module made of `cvm` ops (as `graph_to_module` writes it), verified, with its gas.

    Raises CVMRuntimeError for a module of another form, CVMLogicError for what the model gets wrong.
    """
    main = _main(module)
    if len(main.body.blocks) != 1:
        raise CVMRuntimeError(f"expected @{main.sym_name.data} to have one block")
    block = main.body.block
    if len(block.args) > 1:
        raise CVMRuntimeError(f"expected at most one argument (the input {INPUT!r}), got {len(block.args)}")
    nodes: list[Node] = []
    params: dict[str, np.ndarray] = {}
    ids: dict[SSAValue, tuple[int, int]] = {}

    def add(node: Node, results: tuple[SSAValue, ...]) -> None:
        for k, r in enumerate(results):
            ids[r] = (len(nodes), k)
        nodes.append(node)

    for arg in block.args:
        prec = tensor_precision(arg.type)
        if prec is None:
            raise CVMLogicError(f"the input {INPUT!r} has no precision ({arg.type})")
        add(Node(INPUT, "null", shapes=(_static_shape(arg, f"the input {INPUT!r}"),), precisions=(prec,)), (arg,))
    heads: list[tuple[int, int]] | None = None
    for op in block.ops:
        if isinstance(op, ParamOp):
            name = op.param_name.data
            arr = op.array()
            if name == INPUT or (name in params and not np.array_equal(params[name], arr)):
                raise CVMLogicError(f"param {name!r} is defined twice with different values or names the input")
            params[name] = arr.copy()
            prec = tensor_precision(op.result.type)
            assert prec is not None  # the op's type constraint holds
            add(Node(name, "null", shapes=(arr.shape,), precisions=(prec,)), (op.result,))
        elif isinstance(op, CvmOperator):
            try:
                inputs = [ids[v] for v in op.operands]
            except KeyError:
                raise CVMRuntimeError(f"{op.name}: an operand is not defined in @main's block") from None
            what = f"result of {op.name}"
            shapes = tuple(_static_shape(r, what) for r in op.results)
            precs = tuple(tensor_precision(r.type) or 0 for r in op.results)  # recomputed by verify_graph
            name = op.node_name.data if op.node_name is not None else f"{op.op_name}_{len(nodes)}"
            add(Node(name, op.op_name, inputs, cvm_attrs(op), shapes, precs), tuple(op.results))
        elif isinstance(op, func.ReturnOp):
            try:
                heads = [ids[v] for v in op.arguments]
            except KeyError:
                raise CVMRuntimeError("a returned value is not defined in @main's block") from None
        else:
            raise CVMRuntimeError(f"unsupported op {op.name} in @main: expected cvm ops and func.return")
    if not heads:
        raise CVMRuntimeError("expected @main to return at least one value")
    version = main.attributes.get("cvm.version", StringAttr(VERSIONS[0]))
    post = main.attributes.get("cvm.postprocess")
    version_s = version.data if isinstance(version, StringAttr) else None
    post_s = post.data if isinstance(post, StringAttr) else None
    if version_s not in VERSIONS or post_s not in POSTPROCESS or (post is not None and post_s is None):
        raise CVMRuntimeError(f"unsupported cvm.version {version} or cvm.postprocess {post} on @main")
    gas = verify_graph(nodes, params)
    return Graph(nodes, heads, params, version_s, post_s, gas)
