"""cvm-runtime model files loaded into a verified `Graph`: the graph's checks and the load, in the runtime's order.

    graph = load_graph("model.json", "params.bin")   # every check of CVMAPILoadModel, in its order

Its neighbours: `graph_json` reads the graph JSON as the runtime's reader does, `params` reads (and writes) the
params binary, `graph_writer` writes a `Graph` back as the two files; their public names are importable from here.

Loading takes the decision `CVMAPILoadModel` takes, check by check and in the same order, with the same class:
the first check that fails decides. cvm-runtime's macros give the classes: `VERIFY*` raises a logic error
(`CVMLogicError`, API status 1); `CHECK*`, `LOG(FATAL)`, a dmlc `ParamError` and `std::bad_alloc` raise a runtime
error (`CVMRuntimeError`, status 2); `std::length_error` is a `std::logic_error` (status 1). Each check below cites
the file and line of cvm-runtime (commit b5a2518) it mirrors. Operator rules (attributes, shapes, precisions, gas)
live in `cvmc.dialects.cvm_rules`; this module reads files and walks graphs.

The load path, in the runtime's order (`CvmRuntime::Init`, `Setup`, the `CVMModel` constructor, `LoadParams`):
  1. the JSON reader (include/utils/json.h) and the loaders of graph_runtime.h: the text is read as the runtime's
     streaming reader reads it, so a malformed file fails where the runtime's reader fails;
  2. `PrepareGraphWithVersion`: duplicate arg names, operators and their attributes, storage ids, shapes,
     precisions, device_index, the version's rules for dltype / node_row_ptr / arg_nodes, topological order;
  3. `SetupShape` over every node, then `SetupPrecision` over every node;
  4. the storage size, the heads, the input `data`;
  5. the params file (`load_param_dict`, `NDArray::Load`, `LoadParams`, `SetInput`);
  6. the gas (`GetOps`), which the API reports on request and cvmc checks at load.
  Then the storage plan is followed (`_follow_storage`): a read that sees another tensor's values in a shared
  buffer reads them in the graph too; the plans cvmc does not model are refused as `not modelled by cvmc`.

Deviations. Where the runtime reads memory it does not own, or computes on memory nobody wrote, its result is not
a function of the model: cvmc rejects such a model with a `CVMLogicError` whose message says "undefined in
cvm-runtime" (the operators' cases are `cvm_rules.DEVIATIONS`). The graph's and the files' cases (README,
"Decisions that differ from cvm-runtime"):
  - an input or head names a node past the end of `node_row_ptr` (the runtime indexes past a vector);
  - a head's entry is not an entry of the graph (the runtime reads past its precision list);
  - `arg_nodes` names a node past the node list (in the duplicate-name check);
  - `node_row_ptr` is too short for the storage check that runs before it is verified;
  - a params array whose data is cut short after its first byte (the runtime keeps uninitialised memory), or a
    params file cut inside the array count (the runtime compares an uninitialised count);
  - a param whose device type is negative or in [32, 128) (the runtime indexes past its device table);
  - a storage id of 2^24 or more (the runtime allocates one pool entry per id, as memory allows);
  - a postprocess name of 32 bytes or more (the runtime copies it into a 32-byte buffer with its terminator);
  - an allocation the runtime's reader makes from a count in the file: above 2^34 bytes cvmc assumes it fails
    (`std::bad_alloc`, a runtime error), below it succeeds; in between the runtime's outcome depends on the machine.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field
from math import prod
from typing import Any

import numpy as np

from cvmc.dialects import cvm_rules as rules
from cvmc.errors import CVMError, CVMLogicError, CVMRuntimeError
from cvmc.runtime.frontend.files import read_bounded
from cvmc.runtime.frontend.graph_json import U32, JsonReader, RawGraph, fail, read_graph_json
from cvmc.runtime.frontend.graph_writer import graph_to_json, save_graph
from cvmc.runtime.frontend.params import ARRAY_MAGIC, LIST_MAGIC, read_param_arrays, read_params, write_params

# The names users import from here, whose homes are the modules above.
__all__ = ["ARRAY_MAGIC", "LIST_MAGIC", "Graph", "Node", "estimate_gas", "graph_to_json", "load_graph", "load_params",
           "read_param_arrays", "read_params", "read_source", "save_graph", "verify_graph", "write_params"]

VERSIONS = ("cvm_1.0.0", "cvm_1.1.0")
POSTPROCESS = (None, "argmax", "detection")
MAX_STORAGE = 1 << 32  # graph_runtime.cc:567, the planned storage at load
MAX_STORAGE_ID = 1 << 24  # a deviation: see the module docstring

# Operators registered under another name (src/top/*: add_alias): parsed and inferred as their operator, then
# refused when the executor looks for a kernel of the alias's name (graph_runtime.cc:664, a logic error).
ALIASES = {
    "nn.relu": "relu", "vision.non_max_suppression": "non_max_suppression",
    "add": "broadcast_add", "subtract": "broadcast_sub", "multiply": "broadcast_mul",
}
# Operators whose output may share its input's storage (graph_runtime.cc:150; "nagetive" is the runtime's typo,
# so negative may not).
IN_PLACE_OPS = frozenset({"flatten", "relu", "expand_dims", "reshape", "squeeze", "abs", "cvm_precision",
                          "elemwise_add", "elemwise_sub", "clip", "cvm_clip", "cvm_right_shift",
                          "cvm_left_shift"})


@dataclass
class Node:
    """One node of the graph: a variable (`op == "null"`) or an operator with typed attributes."""

    name: str
    op: str
    inputs: list[tuple[int, int]] = field(default_factory=list)
    attrs: rules.Attrs = field(default_factory=dict)
    shapes: tuple[rules.Shape, ...] = ()
    precisions: tuple[int, ...] = ()

    @property
    def is_variable(self) -> bool:
        return self.op == "null"


@dataclass
class Graph:
    """A verified CVM model: nodes in topological order, params as int32 arrays, the heads and the gas."""

    nodes: list[Node]
    heads: list[tuple[int, int]]
    params: dict[str, np.ndarray]
    version: str = "cvm_1.0.0"
    postprocess: str | None = None
    gas: int = 0

    @property
    def input_id(self) -> int | None:
        """The node id of the runtime input `data`, if the graph has one."""
        for i, n in enumerate(self.nodes):
            if n.is_variable and n.name == "data":
                return i
        return None

    def head_shapes(self) -> list[rules.Shape]:
        return [self.nodes[n].shapes[k] for n, k in self.heads]

    def head_precisions(self) -> list[int]:
        return [self.nodes[n].precisions[k] for n, k in self.heads]


MAX_MODEL_BYTES = (1 << 31) - 1  # the C API takes the lengths of both files as int


def read_source(src: bytes | str | os.PathLike[str], json_text: bool = False) -> bytes:
    """The bytes of a file given as bytes or a path, or (when `json_text`) a str holding JSON itself."""
    if isinstance(src, bytes | bytearray | memoryview):
        return bytes(src)
    if isinstance(src, str) and json_text and src.lstrip()[:1] in ("{", "["):
        return src.encode()
    if isinstance(src, str | os.PathLike):
        return read_bounded(src, "model file", MAX_MODEL_BYTES, "the C API's int lengths")
    raise CVMRuntimeError(f"expected bytes or a path, got {type(src).__name__}")


_verify, _check, _undefined = rules.verify, rules.check, rules.undefined  # VERIFY, CHECK, a deviation
_unmodelled = rules.unmodelled  # a documented limit of cvmc


# ---------------------------------------------------------------------------------------------------------
# The graph's checks (graph_runtime.cc: PrepareGraphWithVersion; infer_attr.cc: SetupShape, SetupPrecision)
# ---------------------------------------------------------------------------------------------------------


def op_name(func_name: str) -> str:
    """Node::GetOpName (graph_runtime.h:262): a trailing `_` and the digits after it are dropped."""
    i = len(func_name) - 1
    while i >= 0 and func_name[i].isdigit() and func_name[i].isascii():
        i -= 1
    return func_name[:i] if i >= 0 and func_name[i] == "_" else func_name


def _parse_op_attrs(nid: int, name: str, op: str, text: str) -> rules.Attrs:
    """LoadOpAndAttrs (graph_runtime.h:295): the op_attrs string is read as a JSON map of strings."""
    try:
        raw = _EMPTY_MAP if text == "{}" else JsonReader(text.encode("utf-8", "surrogateescape")).read_str_map()
        return rules.parse_attrs(op, raw)
    except CVMError as e:
        raise type(e)(f"node {nid} ({name!r}): {e}") from None


_EMPTY_MAP: dict[str, str] = {}


def _entry_id(row_ptr: list[int], entry: tuple[int, int], what: str) -> int:
    node, index = entry
    if node >= len(row_ptr):
        _undefined(False, f"{what} names node {node}, past node_row_ptr's {len(row_ptr)} entries")
    return (row_ptr[node] + index) % U32


@dataclass
class _Prepared:
    """What PrepareGraphWithVersion leaves: operator nodes parsed, entries numbered."""

    raw: RawGraph
    ops: list[str | None]  # the registered operator of each node (None for a variable)
    attrs: list[rules.Attrs]
    row_ptr: list[int]
    shapes: list[rules.Shape]
    precisions: list[int]
    storage: list[int]
    variables: list[int]


def _prepare(g: RawGraph) -> _Prepared:
    nodes, attrs = g.nodes, g.attrs
    names: set[str] = set()
    for nid in g.arg_nodes:  # cc:116
        _undefined(nid < len(nodes), f"arg_nodes names node {nid} of {len(nodes)}")
        _check(nodes[nid].name not in names, f"node name {nodes[nid].name!r} duplicated in graph")
        names.add(nodes[nid].name)
    op_attrs = attrs.get("op_attrs", [])
    _verify(len(nodes) == len(op_attrs),  # cc:126
            f"graph attribute 'op_attrs' has {len(op_attrs)} entries, expected {len(nodes)} (one per node)")
    ops: list[str | None] = []
    parsed: list[rules.Attrs] = []
    n_entries = 0
    row_ptr, variables = [], []
    for nid, n in enumerate(nodes):
        if n.op_type == "null":
            ops.append(None)
            parsed.append({})
            variables.append(nid)
            row_ptr.append(n_entries)
            n_entries += 1
            continue
        func = op_name(n.func_name)
        op = ALIASES.get(func, func)
        if op not in rules.OP_ATTRS:  # src/top/op.cc:55
            fail(CVMRuntimeError, f"node {nid} ({n.name!r}): operator {func!r} is not registered")
        a = _parse_op_attrs(nid, n.name, op, op_attrs[nid])
        want = rules.num_inputs(op, a)
        if want < 0:
            want = len(n.inputs)
        if want != len(n.inputs):  # h:314
            fail(CVMLogicError, f"node {nid} ({n.name!r}): operator {func} takes {want} inputs, got {len(n.inputs)}")
        ops.append(op)
        parsed.append(a)
        row_ptr.append(n_entries)
        n_entries += rules.num_outputs(op)
    row_ptr.append(n_entries)

    storage = attrs.get("storage_id", [])
    _verify(len(storage) == n_entries,  # cc:143
            f"graph attribute 'storage_id' has {len(storage)} entries, expected {n_entries}")
    if storage and min(storage) < 0:  # cc:147
        fail(CVMLogicError, f"graph attribute 'storage_id': expected ids >= 0, got {min(storage)}")
    file_rows = g.row_ptr  # the storage check reads the file's node_row_ptr, before it is verified
    for nid, n in enumerate(nodes):
        op = ops[nid]
        if op is None or op in IN_PLACE_OPS:
            continue
        for k in range(rules.num_outputs(op)):
            out_eid = _entry_id(file_rows, (nid, k), "the storage check")
            if out_eid >= len(storage):
                _undefined(False, f"node {nid}: entry {out_eid} is past the storage ids")
            for e in n.inputs:
                in_eid = _entry_id(file_rows, e, "an input")
                if in_eid >= len(storage):
                    _undefined(False, f"node {nid}: input entry {in_eid} is past the storage ids")
                if storage[out_eid] == storage[in_eid]:  # cc:169
                    fail(CVMLogicError, f"node {nid} ({n.name!r}): operator {op} output ({nid}, {k}) uses the same "
                          f"storage_id {storage[in_eid]} as its input ({e[0]}, {e[1]}); only "
                          f"{sorted(IN_PLACE_OPS)} may")

    shapes = attrs.get("shape", [])
    _verify(len(shapes) == n_entries, f"graph attribute 'shape' has {len(shapes)} entries, expected {n_entries}")
    for k, shape in enumerate(shapes):  # cc:184
        if not 0 < len(shape) <= rules.MAX_NDIM:
            fail(CVMLogicError, f"entry {k}: shape {shape} has {len(shape)} dims, expected 1 to {rules.MAX_NDIM}")
        size = 1
        for d in shape:
            size *= d
            if not 0 < d <= rules.MAX_DIM:
                fail(CVMLogicError, f"entry {k}: shape {shape}: dim {d}, expected in [1, {rules.MAX_DIM}]")
            if size > rules.MAX_SIZE:
                fail(CVMLogicError, f"entry {k}: shape {shape} has more than {rules.MAX_SIZE} elements")
    precisions = attrs.get("precision", [])
    _verify(len(precisions) == n_entries,  # cc:199
            f"graph attribute 'precision' has {len(precisions)} entries, expected {n_entries}")
    for k, p in enumerate(precisions):
        if not (p == -1 or 0 < p <= 32):  # cc:203
            fail(CVMLogicError, f"entry {k}: precision {p}, expected -1 or in [1, 32]")
    _verify(not attrs.get("device_index"), "graph attribute 'device_index' must be absent or empty")  # cc:208

    if g.version == "cvm_1.0.0":
        dltype = attrs.get("dltype", [])
        _verify(len(dltype) == n_entries,  # cc:219
                f"graph attribute 'dltype' has {len(dltype)} entries, expected {n_entries}")
        for t in dltype:
            if t != "int32":
                fail(CVMLogicError, f"graph attribute 'dltype': type {t!r} is not supported in cvm_1.0.0")
        _verify(file_rows == row_ptr, f"'node_row_ptr' {file_rows}, expected {row_ptr}")  # cc:226
        _verify(g.arg_nodes == variables, f"'arg_nodes' {g.arg_nodes}, expected {variables}")  # cc:236
    elif g.version != "cvm_1.1.0":
        fail(CVMRuntimeError, f"graph version {g.version!r} not supported, expected one of {list(VERSIONS)}")

    for nid, n in enumerate(nodes):  # cc:252
        eid = row_ptr[nid]
        for e in n.inputs:
            src = _entry_id(row_ptr, e, "an input")
            if src >= eid:
                fail(CVMLogicError, f"node {nid} ({n.name!r}): input {list(e)} is entry {src}, not before the "
                      f"node's entry {eid}: the graph does not follow the topological order")
    return _Prepared(g, ops, parsed, row_ptr, [tuple(s) for s in shapes], list(precisions), list(storage),
                     variables)


def _locate(row_ptr: list[int], eid: int) -> tuple[int, int]:
    nid = bisect.bisect_right(row_ptr, eid) - 1
    return nid, eid - row_ptr[nid]


def _setup(p: _Prepared) -> list[Node]:
    """SetupShape over every node, SetupType, then SetupPrecision over every node (infer_attr.cc:17-21); then the
    operators' deviations (cvm_rules.DEVIATIONS), which the runtime does not stop at."""
    nodes: list[Node] = []
    for nid, raw in enumerate(p.raw.nodes):
        op = p.ops[nid]
        first, last = p.row_ptr[nid], p.row_ptr[nid + 1]
        outs = tuple(p.shapes[first:last])
        if op is None:
            nodes.append(Node(raw.name, "null", [], {}, outs, ()))
            continue
        inputs = [_locate(p.row_ptr, (p.row_ptr[s] + k) % U32) for s, k in raw.inputs]
        in_shapes = [p.shapes[p.row_ptr[s] + k] for s, k in inputs]
        try:
            inferred = rules.infer_shape(op, p.attrs[nid], in_shapes)
        except CVMError as e:
            raise type(e)(f"node {nid} ({raw.name!r}) ({op}): {e}") from None
        if inferred != outs:
            for k, (got, want) in enumerate(zip(outs, inferred, strict=True)):  # infer_attr.cc:205
                _verify(got == want, f"node {nid} ({raw.name!r}) ({op}): output {k} shape {list(got)} in the file, "
                        f"inferred {list(want)}")
        nodes.append(Node(raw.name, op, inputs, p.attrs[nid], outs, ()))
    for nid, node in enumerate(nodes):
        if not node.is_variable:
            _in_phase(nid, node, lambda n: rules.check_type(n.op, n.attrs))
    precs = list(p.precisions)
    for nid, node in enumerate(nodes):
        first = p.row_ptr[nid]
        if node.is_variable:
            if precs[first] == -1:  # infer_attr.cc:44
                fail(CVMLogicError, f"node {nid} ({node.name!r}): a variable's precision must be set, got -1")
            node.precisions = (precs[first],)
            continue
        in_shapes = [nodes[s].shapes[k] for s, k in node.inputs]
        in_precs = [precs[p.row_ptr[s] + k] for s, k in node.inputs]
        try:
            out = rules.infer_precision(node.op, node.attrs, in_shapes, in_precs, node.shapes)
        except CVMError as e:
            raise type(e)(f"node {nid} ({node.name!r}) ({node.op}): {e}") from None
        precs[first:first + len(out)] = out
        node.precisions = tuple(out)
    for nid, node in enumerate(nodes):
        if not node.is_variable:
            _in_phase(nid, node, lambda n: rules.check_deviations(n.op, n.attrs, _in_shapes(nodes, n)))
    return nodes


def _in_shapes(nodes: list[Node], node: Node) -> list[rules.Shape]:
    return [nodes[s].shapes[k] for s, k in node.inputs]


def _in_phase(nid: int, node: Node, check: Any) -> None:
    """A check of one operator node, its error naming the node."""
    try:
        check(node)
    except CVMError as e:
        raise type(e)(f"node {nid} ({node.name!r}) ({node.op}): {e}") from None


def _model_checks(p: _Prepared, nodes: list[Node]) -> tuple[list[tuple[int, int]], str | None]:
    """Setup's storage plan and the CVMModel constructor (graph_runtime.cc:505-575, model.cc:24-110)."""
    pools: dict[int, int] = {}
    if p.storage and max(p.storage) >= MAX_STORAGE_ID:  # cc:521 PlanStorage
        _undefined(False, f"storage_id {max(p.storage)}: the runtime allocates a pool entry per id up to it")
    for k, sid in enumerate(p.storage):
        pools[sid] = max(pools.get(sid, 0), 4 * prod(p.shapes[k]))
    for nid, func in enumerate(p.raw.nodes):  # cc:664 SetupOpExecs: a kernel is looked up by the func_name
        if p.ops[nid] is not None and op_name(func.func_name) in ALIASES:
            fail(CVMLogicError, f"node {nid} ({func.name!r}): function undefined: "
                  f"cvm.runtime.formal.{op_name(func.func_name)} (an alias of {p.ops[nid]} with no kernel)")
    total = 0
    for sid in sorted(pools):  # cc:566 GetStorageSize, called by the CVMModel constructor
        total += (pools[sid] + 3) // 4 * 4
        _verify(total <= MAX_STORAGE, f"the storage plan needs more than {MAX_STORAGE} bytes (storage_id {sid})")
    _verify(len(p.raw.heads) >= 1, "the graph has no heads (outputs)")  # model.cc:43, status 1
    post = p.raw.postprocess
    _undefined(len(post.encode("utf-8", "surrogateescape")) < 32,
               f"postprocess {post[:40]!r} does not fit the runtime's 32-byte buffer")
    _check(any(n.is_variable and n.name == "data" for n in nodes), "can not find input `data`")  # cc:445
    heads = []
    n_entries = p.row_ptr[-1]
    for h in p.raw.heads:  # model.cc:62 and :93 (GetOutputPrecision, then GetShape)
        eid = _entry_id(p.row_ptr, h, "a head")
        _undefined(eid < n_entries, f"head {list(h)} is entry {eid}, past the graph's {n_entries} entries")
        heads.append(_locate(p.row_ptr, eid))
    return heads, (post if post in ("argmax", "detection") else None)


def estimate_gas(data: bytes) -> int:
    """The gas of a graph JSON as `CvmRuntime::EstimateOps` (graph_runtime.h:98) counts it: the graph read
    (Load), prepared (PrepareGraphWithVersion), its shapes, types and precisions inferred (CheckAttr), its ops
    counted (GetOps); the loader's first steps, without the params and the model's checks."""
    return graph_gas(_setup(_prepare(read_graph_json(data))))


def parse_graph(data: bytes) -> tuple[list[Node], list[tuple[int, int]], _Prepared, str | None]:
    """Read and check a graph JSON as `CvmRuntime::Init` and `Setup` do: nodes with shapes and precisions."""
    p = _prepare(read_graph_json(data))
    nodes = _setup(p)
    heads, post = _model_checks(p, nodes)
    return nodes, heads, p, post


# ---------------------------------------------------------------------------------------------------------
# The params against the graph (model.cc: CVMModel::LoadParams; graph_runtime.cc: LoadParams, SetInput)
# ---------------------------------------------------------------------------------------------------------


def load_params(nodes: list[Node], data: bytes) -> tuple[dict[str, np.ndarray], list[str]]:
    """CVMModel::LoadParams and CvmRuntime::LoadParams / SetInput (model.cc:213, graph_runtime.cc:479, :316): the
    params by name, and the names in the order they were loaded."""
    _verify(len(data) != 0, "the params file is empty")  # model.cc:214
    variables = [i for i, n in enumerate(nodes) if n.is_variable]
    first: dict[str, int] = {}
    for i in variables:
        first.setdefault(nodes[i].name, i)
    loaded: set[int] = set()
    params: dict[str, np.ndarray] = {}
    order: list[str] = []
    for name, arr in read_param_arrays(data):
        _check(name in first, f"cannot find `{name}` among input")  # cc:298
        nid = first[name]
        node, where = nodes[nid], f"param {name!r}"
        _verify(arr.code == 0, f"{where}: dtype code {arr.code}, expected int (0)")  # cc:325
        _verify(arr.device_type == 1, f"{where}: device type {arr.device_type}, expected cpu (1)")  # cc:330
        shape = node.shapes[0]
        _verify(len(arr.shape) == len(shape), f"{where}: ndim {len(arr.shape)}, expected {len(shape)}")  # cc:339
        for i, (got, want) in enumerate(zip(arr.shape, shape, strict=True)):
            _verify(got == want, f"{where}: shape {list(arr.shape)}, expected {list(shape)} (index {i})")
        _verify(arr.bits in (8, 32) and arr.lanes == 1,  # cc:352
                f"{where}: dtype (int, {arr.bits} bits, {arr.lanes} lanes), expected int8 or int32")
        loaded.add(nid)
        order.append(name)
        if name == "data":
            continue  # set_input saturates it; the inference overwrites it
        try:
            rules.check_values(arr.values, node.precisions[0])  # cc:389
        except CVMLogicError as e:
            raise CVMLogicError(f"node {nid} ({name!r}): parameter {name!r}: {e}") from None
        params[name] = arr.values
    for nid in variables:  # cc:497
        _verify(nid in loaded or nodes[nid].name == "data",
                f"parameter nid={nid} name={nodes[nid].name!r} has not been loaded")
    return params, order


# ---------------------------------------------------------------------------------------------------------
# Gas (infer_attr.cc: CvmRuntime::GetOps) and the storage plan's history
# ---------------------------------------------------------------------------------------------------------


def graph_gas(nodes: list[Node]) -> int:
    """CvmRuntime::GetOps (infer_attr.cc:84): ops plus 5 x memory, with the runtime's limits checked in its order."""
    ops = mem = 0
    for node in nodes:
        if node.is_variable:
            mem += 5 * prod(node.shapes[0])
        else:
            base = rules.base_ops(node.op, node.attrs, _in_shapes(nodes, node), node.shapes)  # checks :133
            ops += base * prod(node.shapes[0])
            _verify(ops <= rules.MAX_TOTAL_OPS, f"graph ops exceed {rules.MAX_TOTAL_OPS}")  # infer_attr.cc:130
            mem += 5 * sum(prod(s) for s in node.shapes)
        _verify(mem <= rules.MAX_MEMORY, f"graph memory cost exceeds {rules.MAX_MEMORY}")  # infer_attr.cc:139
    return ops + mem


_Piece = tuple[int, int, int, bool]
"""A piece of an entry a node reads: (entry written, first element, end, written in this inference)."""


def _follow_storage(p: _Prepared, nodes: list[Node], heads: list[tuple[int, int]], param_order: list[str],
                    params: dict[str, np.ndarray]) -> tuple[list[Node], list[tuple[int, int]]]:
    """The graph the runtime runs under its storage plan, as a dataflow graph: each read that does not see the
    tensor it names becomes a read of what its buffer holds then.

    The runtime runs every tensor in a view at the start of its storage_id's buffer (sized for the largest, all
    int32; graph_runtime.cc:576 SetupStorage): params are written once at load (in the params file's order),
    `data` at each inference, then each operator's outputs as it runs (an operator in IN_PLACE_OPS reads each
    element of its input before it writes the same element of its output). A read of n elements sees, element
    by element, the last write that reached it. Where that is the tensor named, nothing changes; otherwise the
    reader is given a node that computes those elements: flat slices of the tensors written in this inference,
    params' values cut at load, joined, reshaped to the tensor named and widened to its precision (`cvm_clip`,
    which changes no value of a lower precision; values of a higher precision are read as such, and the reader's
    output precision must then stay the graph's). No element is read unwritten: each tensor read was itself
    written before (its own elements cover the read). Refused as `not modelled by cvmc`, though the runtime's one
    inference on them is defined: a read of a param's element that this inference writes later (the next
    inference reads what this one left), values of a higher precision that change the reader's output precision
    or reach a head (cvmc's types carry the precision), and two outputs of one node in one buffer (their order of
    writes is the kernel's)."""
    row, sid = p.row_ptr, p.storage
    where: dict[int, tuple[int, int]] = {}
    for nid in range(len(nodes)):
        for k in range(row[nid + 1] - row[nid]):
            where[row[nid] + k] = (nid, k)

    def size(e: int) -> int:
        nid, k = where[e]
        return prod(nodes[nid].shapes[k])

    def prec(e: int) -> int:
        nid, k = where[e]
        return nodes[nid].precisions[k]

    first_var: dict[str, int] = {}
    for i, n in enumerate(nodes):
        if n.is_variable:
            first_var.setdefault(n.name, row[i])
    load: dict[int, list[int]] = {}  # storage id -> the entries written at load, in order
    for name in param_order:
        load.setdefault(sid[first_var[name]], []).append(first_var[name])
    data_eid = first_var.get("data")
    op_nodes = [nid for nid, n in enumerate(nodes) if not n.is_variable]
    reach: dict[int, int] = {}  # storage id -> how far this inference's writes reach in its buffer
    for e in ([data_eid] if data_eid is not None else []) + [e for nid in op_nodes for e in range(row[nid],
                                                                                                  row[nid + 1])]:
        reach[sid[e]] = max(reach.get(sid[e], 0), size(e))

    written: dict[int, list[int]] = {}  # storage id -> the entries written so far in this inference, in order

    def pieces(e: int, by: str) -> list[_Piece]:
        n, s, pos, out = size(e), sid[e], 0, []
        for src, live in [(x, True) for x in reversed(written.get(s, []))] + \
                         [(x, False) for x in reversed(load.get(s, []))]:
            end = min(size(src), n)
            if end > pos:
                out.append((src, pos, end, live))
                pos = end
            if pos == n:
                break
        assert pos == n, "every entry read was written itself: a param at load, data or an output before it is read"
        for src, a, _, live in out:
            _unmodelled(live or reach.get(s, 0) <= a,
                        f"{by} reads entry {e}, whose storage_id {s} holds what this inference writes there later "
                        f"(the next inference reads what this one left)")
        return out

    plans: dict[tuple[int, int], list[_Piece]] = {}  # (reading node or -1 for a head, input index) -> pieces
    if data_eid is not None:
        written.setdefault(sid[data_eid], []).append(data_eid)
    for nid in op_nodes:
        node = nodes[nid]
        outs = range(row[nid], row[nid + 1])
        _unmodelled(len({sid[o] for o in outs}) == len(outs), f"node {nid}'s outputs share a storage_id")
        for i, (src, k) in enumerate(node.inputs):
            e = row[src] + k
            got = pieces(e, f"node {nid} ({node.name!r})")
            if [(x, a, b) for x, a, b, _ in got] != [(e, 0, size(e))]:
                plans[(nid, i)] = got
        for o in outs:
            written.setdefault(sid[o], []).append(o)
    for i, (src, k) in enumerate(heads):
        e = row[src] + k
        got = pieces(e, "a head")
        if [(x, a, b) for x, a, b, _ in got] != [(e, 0, size(e))]:
            plans[(-1, i)] = got
    if not plans:
        return nodes, heads
    return _rewire(nodes, heads, params, plans, row, where, prec, size)


def _rewire(nodes: list[Node], heads: list[tuple[int, int]], params: dict[str, np.ndarray],
            plans: dict[tuple[int, int], list[tuple[int, int, int, bool]]], row: list[int],
            where: dict[int, tuple[int, int]], prec: Any, size: Any) -> tuple[list[Node], list[tuple[int, int]]]:
    """The nodes with each planned read replaced by a node computing what the runtime's buffer holds."""
    names = {n.name for n in nodes}
    out: list[Node] = []
    new_id: dict[int, int] = {}

    def fresh(base: str) -> str:
        k = 0
        while f"{base}@storage{k}" in names:
            k += 1
        names.add(f"{base}@storage{k}")
        return f"{base}@storage{k}"

    def add(op: str, inputs: list[tuple[int, int]], attrs: dict[str, str], base: str) -> tuple[int, int]:
        a = rules.parse_attrs(op, attrs)
        shapes = [out[s].shapes[k] for s, k in inputs]
        precs = [out[s].precisions[k] for s, k in inputs]
        sig = rules.infer(op, a, shapes, precs)
        out.append(Node(fresh(base), op, list(inputs), a, tuple(sig.shapes), tuple(sig.precisions)))
        return len(out) - 1, 0

    def composite(e: int, got: list[tuple[int, int, int, bool]], base: str) -> tuple[int, int]:
        """What entry e's buffer holds: its shape, and its precision or the higher one of the values there."""
        nid, k = where[e]
        shape, want = nodes[nid].shapes[k], prec(e)
        parts = []
        for src, a, b, live in got:
            if not live:  # a param's values, cut at load
                snid, _ = where[src]
                name = fresh(base)
                params[name] = np.ascontiguousarray(params[nodes[snid].name].reshape(-1)[a:b])
                out.append(Node(name, "null", shapes=((b - a,),), precisions=(prec(src),)))
                parts.append((len(out) - 1, 0))
                continue
            snid, sk = where[src]
            ref = (new_id[snid], sk)
            if len(nodes[snid].shapes[sk]) != 1:
                ref = add("reshape", [ref], {"shape": f"({size(src)},)"}, base)
            if (a, b) != (0, size(src)):
                ref = add("strided_slice", [ref], {"begin": f"({a},)", "end": f"({b},)"}, base)
            parts.append(ref)
        ref = parts[0] if len(parts) == 1 else add("concatenate", parts, {"axis": "0"}, base)
        if tuple(shape) != (prod(shape),):
            ref = add("reshape", [ref], {"shape": str(tuple(shape))}, base)
        if out[ref[0]].precisions[ref[1]] < want:
            ref = add("cvm_clip", [ref], {"precision": str(want)}, base)
        return ref

    for nid, node in enumerate(nodes):
        if node.is_variable:
            new_id[nid] = len(out)
            out.append(node)
            continue
        inputs = []
        for i, (s, k) in enumerate(node.inputs):
            got = plans.get((nid, i))
            inputs.append((new_id[s], k) if got is None else composite(row[s] + k, got, node.name))
        precs = [out[s].precisions[k] for s, k in inputs]
        if precs != [nodes[s].precisions[k] for s, k in node.inputs]:  # it reads values of a higher precision
            try:
                again = tuple(rules.infer_precision(node.op, node.attrs, [out[s].shapes[k] for s, k in inputs],
                                                    precs, node.shapes))
            except CVMError:
                again = ()
            _unmodelled(again == node.precisions,
                        f"node {nid} ({node.name!r}) reads values of precision {precs} where the graph gives "
                        f"{[nodes[s].precisions[k] for s, k in node.inputs]}, so its output precision would be "
                        f"{list(again) or 'refused'}, not {list(node.precisions)}")
        new_id[nid] = len(out)
        out.append(Node(node.name, node.op, inputs, node.attrs, node.shapes, node.precisions))
    new_heads = []
    for i, (s, k) in enumerate(heads):
        got = plans.get((-1, i))
        ref = (new_id[s], k) if got is None else composite(row[s] + k, got, "head")
        _unmodelled(out[ref[0]].precisions[ref[1]] == nodes[s].precisions[k],
                    f"head {i} reads values of precision {out[ref[0]].precisions[ref[1]]} where the graph gives "
                    f"{nodes[s].precisions[k]}")
        new_heads.append(ref)
    return out, new_heads


def verify_graph(nodes: list[Node], params: dict[str, np.ndarray]) -> int:
    """The checks of a load on a graph built in memory (builder, IR import): shapes and precisions inferred in place
    for every node, params checked against their variables; the gas."""
    for nid, node in enumerate(nodes):
        if node.is_variable:
            continue
        try:
            node.shapes = rules.infer_shape(node.op, node.attrs, _in_shapes(nodes, node))
            for k, shape in enumerate(node.shapes):
                rules.check_shape(shape, f"output {k}")
        except CVMError as e:
            raise type(e)(f"node {nid} ({node.name!r}) ({node.op}): {e}") from None
    for nid, node in enumerate(nodes):
        if not node.is_variable:
            _in_phase(nid, node, lambda n: rules.check_type(n.op, n.attrs))
    for nid, node in enumerate(nodes):
        where = f"node {nid} ({node.name!r})"
        if node.is_variable:
            p = node.precisions[0]
            _verify(type(p) is int and 1 <= p <= 32, f"{where}: precision {p}, expected in [1, 32]")
            if node.name != "data":
                _verify(node.name in params, f"{where}: parameter {node.name!r} is missing from the params")
                arr = params[node.name]
                _verify(tuple(arr.shape) == node.shapes[0],
                        f"{where}: parameter shape {list(arr.shape)}, expected {list(node.shapes[0])}")
                try:
                    rules.check_values(arr, p)
                except CVMLogicError as e:
                    raise CVMLogicError(f"{where}: parameter {node.name!r}: {e}") from None
            continue
        in_precs = [nodes[s].precisions[k] for s, k in node.inputs]
        try:
            node.precisions = rules.infer_precision(node.op, node.attrs, _in_shapes(nodes, node), in_precs,
                                                    node.shapes)
        except CVMError as e:
            raise type(e)(f"{where} ({node.op}): {e}") from None
    for nid, node in enumerate(nodes):
        if not node.is_variable:
            _in_phase(nid, node, lambda n: rules.check_deviations(n.op, n.attrs, _in_shapes(nodes, n)))
    return graph_gas(nodes)


def load_graph(graph_json: bytes | str | os.PathLike[str], params: bytes | str | os.PathLike[str]) -> Graph:
    """Read and verify a model as `CVMAPILoadModel` does: graph JSON and params binary, each as bytes, a path, or
    (JSON) text. The first check that fails decides, with cvm-runtime's error class."""
    raw = read_source(graph_json, json_text=True)
    nodes, heads, prepared, post = parse_graph(raw)
    pdata = read_source(params)
    try:
        param_arrays, order = load_params(nodes, pdata)
    except CVMError as e:  # the runtime's class, the message naming the file when there is one
        if not isinstance(params, str | os.PathLike):
            raise
        raise type(e)(f"params file {os.fspath(params)!r}: {e}") from None
    gas = graph_gas(nodes)
    nodes, heads = _follow_storage(prepared, nodes, heads, order, param_arrays)
    _follow_conv_weights(nodes, heads, param_arrays)
    return Graph(nodes, heads, param_arrays, prepared.raw.version, post, gas)


def _follow_conv_weights(nodes: list[Node], heads: list[tuple[int, int]], params: dict[str, np.ndarray]) -> None:
    """Make each conv2d whose weight has another shape than (channels, in_channels / groups, kernel_size), but whose
    run the runtime defines (`rules.conv2d_weight_geometry`), the plain convolution the runtime computes: the
    weight's kernel size, and only the first in_channels / groups channels of each weight row. The weight param is
    cut to those channels, so it must be a param no other node reads; otherwise a CVMLogicError (cvmc does not model
    it). Gas and precisions stay those of the file."""
    readers: dict[str, int] = {}
    for n in nodes:
        for s, _ in n.inputs:
            readers[nodes[s].name] = readers.get(nodes[s].name, 0) + 1
    for s, _ in heads:
        readers[nodes[s].name] = readers.get(nodes[s].name, 0) + 1
    for nid, node in enumerate(nodes):
        if node.op != "conv2d":
            continue
        shapes = _in_shapes(nodes, node)
        kernel = rules.conv2d_weight_geometry(node.attrs, shapes)
        if kernel is None:
            continue
        weight = nodes[node.inputs[1][0]]
        channels = shapes[0][1] // node.attrs["groups"]
        _unmodelled(weight.is_variable and weight.name != "data" and readers[weight.name] == 1,
                    f"node {nid} ({node.name!r}) (conv2d): the runtime convolves with the first {channels} channels "
                    f"of its weight of shape {list(shapes[1])}; cvmc follows that only for a weight param that no "
                    f"other node reads, got {'the input' if weight.name == 'data' else repr(weight.name)} read "
                    f"{readers[weight.name]} times")
        params[weight.name] = np.ascontiguousarray(params[weight.name][:, :channels])
        weight.shapes = ((shapes[1][0], channels, *kernel),)
        node.attrs = {**node.attrs, "kernel_size": kernel}
