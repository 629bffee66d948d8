"""cvm-runtime model files: the graph JSON and the params binary, read into a verified `Graph` and written back.

Loading checks everything cvm-runtime checks at `CVMAPILoadModel` (and the few things it forgets), with the
same error class: a `CVMRuntimeError` for a malformed file, an unknown operator or attribute, a
`CVMLogicError` for what the model gets wrong (shapes, precisions, attribute values, params out of range).
Every operator rule comes from `cvmc.dialects.cvm_rules`; this module only reads, walks and checks files.
"""

from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import dataclass, field
from math import prod
from typing import Any

import numpy as np

from cvmc.dialects import cvm_rules as rules
from cvmc.errors import CVMError, CVMLogicError, CVMRuntimeError

LIST_MAGIC = 0xF7E58D4F05049CB7
ARRAY_MAGIC = 0xDD5E40F096B4A13F
VERSIONS = ("cvm_1.0.0", "cvm_1.1.0")
POSTPROCESS = (None, "argmax", "detection")
_NODE_ATTR_KEYS = {"func_name", "num_inputs", "num_outputs", "flatten_data"}
_FUNC_SUFFIX = re.compile(r"_\d+$")


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


def read_source(src: bytes | str | os.PathLike[str], json_text: bool = False) -> bytes:
    """The bytes of a file given as bytes or a path, or (when `json_text`) a str holding JSON itself."""
    if isinstance(src, bytes | bytearray | memoryview):
        return bytes(src)
    if isinstance(src, str) and json_text and src.lstrip()[:1] in ("{", "["):
        return src.encode()
    if isinstance(src, str | os.PathLike):
        try:
            with open(src, "rb") as f:
                return f.read()
        except OSError as e:
            raise CVMRuntimeError(f"cannot read {os.fspath(src)!r}: {e.strerror}") from None
    raise CVMRuntimeError(f"expected bytes or a path, got {type(src).__name__}")


# ---------------------------------------------------------------------------------------------------------
# Params binary
# ---------------------------------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise CVMLogicError(f"invalid params file: truncated while reading {what} at byte {self.pos}")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def u64(self, what: str) -> int:
        return struct.unpack("<Q", self.take(8, what))[0]

    def unpack(self, fmt: str, what: str) -> tuple[Any, ...]:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))


def read_params(data: bytes) -> dict[str, np.ndarray]:
    """Decode a params binary into int32 arrays by name (int8 params are sign-extended)."""
    if len(data) == 0:
        raise CVMLogicError("invalid params file: it is empty")
    r = _Reader(data)
    if r.u64("the list magic") != LIST_MAGIC:
        raise CVMLogicError("invalid params file: wrong list magic, expected 0xF7E58D4F05049CB7")
    r.u64("the reserved word")
    names = []
    for i in range(r.u64("the name count")):
        n = r.u64(f"the length of name {i}")
        raw = r.take(n, f"name {i}")
        try:
            names.append(raw.decode())
        except UnicodeDecodeError:
            raise CVMLogicError(f"invalid params file: name {i} is not UTF-8") from None
    count = r.u64("the array count")
    if count != len(names):
        raise CVMLogicError(f"invalid params file: {count} arrays for {len(names)} names")
    out: dict[str, np.ndarray] = {}
    for name in names:
        if r.u64(f"the magic of {name!r}") != ARRAY_MAGIC:
            raise CVMRuntimeError(f"invalid params file: wrong array magic for {name!r}")
        r.u64("the reserved word")
        device_type, _device_id, ndim = r.unpack("<iii", f"the header of {name!r}")
        if device_type != 1:
            raise CVMRuntimeError(f"param {name!r}: device_type {device_type} is not enabled, expected 1 (CPU)")
        code, bits, lanes = r.unpack("<BBH", f"the dtype of {name!r}")
        if code != 0 or bits not in (8, 32) or lanes != 1:
            raise CVMLogicError(f"param {name!r}: dtype (code {code}, bits {bits}, lanes {lanes}), "
                                "expected int8 or int32")
        if not 0 <= ndim <= rules.MAX_NDIM:
            raise CVMLogicError(f"param {name!r}: ndim {ndim}, expected at most {rules.MAX_NDIM}")
        shape = r.unpack(f"<{ndim}q", f"the shape of {name!r}")
        if any(d <= 0 or d > rules.MAX_DIM for d in shape) or prod(shape) > rules.MAX_SIZE:
            raise CVMLogicError(f"param {name!r}: shape {list(shape)} out of range")
        nbytes = r.unpack("<q", f"the size of {name!r}")[0]
        if nbytes != prod(shape) * bits // 8:
            raise CVMLogicError(f"param {name!r}: {nbytes} data bytes, expected {prod(shape) * bits // 8}")
        raw = r.take(nbytes, f"the data of {name!r}")
        arr = np.frombuffer(raw, dtype="<i1" if bits == 8 else "<i4").astype(np.int32).reshape(shape)
        out[name] = arr
    return out


def write_params(params: dict[str, np.ndarray]) -> bytes:
    """Encode int32 arrays as a params binary (int8 storage when every value fits, as cvm-runtime writes)."""
    parts = [struct.pack("<QQQ", LIST_MAGIC, 0, len(params))]
    for name in params:
        b = name.encode()
        parts.append(struct.pack("<Q", len(b)) + b)
    parts.append(struct.pack("<Q", len(params)))
    for arr in params.values():
        a = np.asarray(arr)
        small = a.size > 0 and int(a.min()) >= -127 and int(a.max()) <= 127
        data = a.astype("<i1" if small else "<i4").tobytes()
        parts.append(struct.pack("<QQiiiBBH", ARRAY_MAGIC, 0, 1, 0, a.ndim, 0, 8 if small else 32, 1))
        parts.append(struct.pack(f"<{a.ndim}q", *a.shape) + struct.pack("<q", len(data)) + data)
    return b"".join(parts)


# ---------------------------------------------------------------------------------------------------------
# Graph JSON
# ---------------------------------------------------------------------------------------------------------


def _expect(cond: bool, msg: str, cls: type[CVMError] = CVMRuntimeError) -> None:
    if not cond:
        raise cls(msg)


def _int_list(x: Any, what: str) -> list[int]:
    _expect(isinstance(x, list) and all(type(v) is int for v in x), f"expected {what} to be a list of integers")
    return x


def _graph_attr(attrs: dict[str, Any], key: str, kind: str, n: int) -> list[Any]:
    v = attrs.get(key)
    if not (isinstance(v, list) and len(v) == 2 and v[0] == kind and isinstance(v[1], list)):
        raise CVMRuntimeError(f"expected graph attribute {key!r} as [\"{kind}\", [...]]")
    _expect(len(v[1]) == n, f"graph attribute {key!r} has {len(v[1])} entries, expected {n}")
    return v[1]


def op_name(func_name: str) -> str:
    """The operator a node's func_name names (a trailing `_<digits>` is dropped, as cvm-runtime does)."""
    return _FUNC_SUFFIX.sub("", func_name)


def parse_graph(doc: Any) -> tuple[list[Node], list[tuple[int, int]], list[int], str, str | None]:
    """Structure of the JSON: nodes with typed attributes, heads, the file's precisions; no shape checks yet."""
    _expect(isinstance(doc, dict), "expected the graph JSON to be an object")
    for key in ("nodes", "arg_nodes", "heads", "attrs"):
        _expect(key in doc, f"graph JSON has no {key!r}")
    raw_nodes, attrs = doc["nodes"], doc["attrs"]
    _expect(isinstance(raw_nodes, list) and len(raw_nodes) > 0, "expected 'nodes' to be a non-empty list")
    _expect(isinstance(attrs, dict), "expected 'attrs' to be an object")
    version = doc.get("version", "cvm_1.0.0")
    _expect(version in VERSIONS, f"unsupported graph version {version!r}, expected one of {list(VERSIONS)}")
    post = doc.get("postprocess")
    _expect(post in POSTPROCESS, f"unsupported postprocess {post!r}, expected argmax, detection or none")
    _expect("device_index" not in attrs, "graph attribute 'device_index' must be absent", CVMLogicError)
    row_ptr = _int_list(doc.get("node_row_ptr", list(range(len(raw_nodes) + 1))), "'node_row_ptr'")
    _expect(len(row_ptr) == len(raw_nodes) + 1 and row_ptr[0] == 0
            and all(row_ptr[i] < row_ptr[i + 1] for i in range(len(raw_nodes))),
            "expected 'node_row_ptr' to start at 0 and increase, one entry per node plus one")
    n_entries = row_ptr[-1]
    shapes = _graph_attr(attrs, "shape", "list_shape", n_entries)
    precisions = _graph_attr(attrs, "precision", "list_int", n_entries)
    op_attrs = _graph_attr(attrs, "op_attrs", "list_str", len(raw_nodes)) if "op_attrs" in attrs else None
    if "dltype" in attrs:
        # storage is int32 whatever the file says; cvm_1.0.0 files say int32 everywhere, later ones may say int8
        allowed = ("int32",) if version == "cvm_1.0.0" else ("int32", "int8")
        dl = _graph_attr(attrs, "dltype", "list_str", n_entries)
        bad = [t for t in dl if t not in allowed]
        _expect(not bad, f"'dltype' {bad[0]!r} is not supported in {version}, expected one of {list(allowed)}"
                if bad else "", CVMLogicError)
    storage = _graph_attr(attrs, "storage_id", "list_int", n_entries) if "storage_id" in attrs else None
    _int_list(precisions, "'precision'")

    nodes: list[Node] = []
    for nid, rn in enumerate(raw_nodes):
        _expect(isinstance(rn, dict) and isinstance(rn.get("name"), str) and isinstance(rn.get("op"), str),
                f"node {nid}: expected an object with string 'op' and 'name'")
        name, kind = rn["name"], rn["op"]
        where = f"node {nid} ({name!r})"
        _expect(kind in ("null", "cvm_op"), f"{where}: op {kind!r}, expected 'cvm_op' or 'null'", CVMLogicError)
        ins = rn.get("inputs", [])
        _expect(isinstance(ins, list), f"{where}: expected 'inputs' to be a list")
        inputs = []
        for e in ins:
            _expect(isinstance(e, list) and len(e) in (2, 3) and all(type(v) is int for v in e),
                    f"{where}: expected each input as [node, index, version]")
            src, idx = e[0], e[1]
            _expect(0 <= src < nid, f"{where}: input node {src} does not precede it (the graph must be in "
                    "topological order)", CVMLogicError)
            _expect(0 <= idx < row_ptr[src + 1] - row_ptr[src],
                    f"{where}: input ({src}, {idx}) names a missing output", CVMLogicError)
            inputs.append((src, idx))
        node = Node(name, "null", inputs)
        if kind == "null":
            _expect(not inputs, f"{where}: a variable cannot have inputs", CVMLogicError)
            _expect(row_ptr[nid + 1] - row_ptr[nid] == 1, f"{where}: a variable has exactly one output")
        else:
            na = rn.get("attrs")
            if not (isinstance(na, dict) and isinstance(na.get("func_name"), str)):
                raise CVMRuntimeError(f"{where}: expected 'attrs' with a 'func_name'")
            for key in na:
                _expect(key in _NODE_ATTR_KEYS, f"{where}: node attributes do not support key {key!r}")
            op = op_name(na["func_name"])
            if op not in rules.OP_ATTRS:
                _expect(not (op.startswith("nn.") and op[3:] in rules.OP_ATTRS),
                        f"{where}: {op!r} is an alias with no kernel; use {op[3:]!r}", CVMLogicError)
                raise CVMRuntimeError(f"{where}: operator {op!r} is not registered")
            node.op = op
            raw_attrs: dict[str, Any] = {}
            if op_attrs is not None and op_attrs[nid]:
                text = op_attrs[nid]
                try:
                    raw_attrs = json.loads(text) if isinstance(text, str) else None  # type: ignore[assignment]
                except ValueError:
                    raw_attrs = None  # type: ignore[assignment]
                _expect(isinstance(raw_attrs, dict), f"{where}: 'op_attrs' is not a JSON object: {text!r}")
            try:
                node.attrs = rules.parse_attrs(op, raw_attrs)
            except CVMError as e:
                raise type(e)(f"{where}: {e}") from None
            for key, want in (("num_inputs", len(inputs)), ("num_outputs", rules.num_outputs(op))):
                if key in na:
                    _expect(na[key] == str(want), f"{where}: {key} {na[key]!r}, expected {want}", CVMLogicError)
            _expect(row_ptr[nid + 1] - row_ptr[nid] == rules.num_outputs(op),
                    f"{where}: node_row_ptr gives {row_ptr[nid + 1] - row_ptr[nid]} outputs, "
                    f"expected {rules.num_outputs(op)}", CVMLogicError)
        file_shapes = []
        for k in range(row_ptr[nid], row_ptr[nid + 1]):
            s = shapes[k]
            _expect(isinstance(s, list) and all(type(d) is int for d in s), f"{where}: malformed shape {s!r}")
            try:
                file_shapes.append(rules.check_shape(s, f"the shape of {name!r}"))
            except CVMError as e:
                raise type(e)(f"{where}: {e}") from None
        node.shapes = tuple(file_shapes)
        node.precisions = tuple(precisions[row_ptr[nid]:row_ptr[nid + 1]])
        if storage is not None and kind == "cvm_op":
            outs = {storage[k] for k in range(row_ptr[nid], row_ptr[nid + 1])}
            for src, idx in inputs:
                sid = storage[row_ptr[src] + idx]
                _expect(sid not in outs, f"{where}: output shares storage_id {sid} with input ({src}, {idx})",
                        CVMLogicError)
        nodes.append(node)

    heads = []
    _expect(isinstance(doc["heads"], list) and len(doc["heads"]) > 0, "expected 'heads' to be a non-empty list")
    for h in doc["heads"]:
        _expect(isinstance(h, list) and len(h) in (2, 3) and all(type(v) is int for v in h),
                "expected each head as [node, index, version]")
        _expect(0 <= h[0] < len(nodes) and 0 <= h[1] < len(nodes[h[0]].shapes),
                f"head {h[:2]} names a missing output", CVMLogicError)
        heads.append((h[0], h[1]))
    return nodes, heads, precisions, version, post


def verify_graph(nodes: list[Node], params: dict[str, np.ndarray]) -> int:
    """Infer every operator node's shapes and precisions in place, check params against the graph; the gas."""
    gas = 0
    for nid, node in enumerate(nodes):
        where = f"node {nid} ({node.name!r})"
        if node.is_variable:
            shape, p = node.shapes[0], node.precisions[0]
            _expect(type(p) is int and 1 <= p <= 32, f"{where}: precision {p}, expected in [1, 32]", CVMLogicError)
            if node.name != "data":
                _expect(node.name in params, f"{where}: parameter {node.name!r} is missing from the params file",
                        CVMLogicError)
                arr = params[node.name]
                _expect(tuple(arr.shape) == shape, f"{where}: parameter shape {list(arr.shape)}, expected "
                        f"{list(shape)}", CVMLogicError)
                try:
                    rules.check_values(arr, p)
                except CVMLogicError as e:
                    raise CVMLogicError(f"{where}: parameter {node.name!r}: {e}") from None
            gas += rules.variable_gas(shape)
            continue
        in_shapes = [nodes[s].shapes[k] for s, k in node.inputs]
        in_precs = [nodes[s].precisions[k] for s, k in node.inputs]
        try:
            sig = rules.infer(node.op, node.attrs, in_shapes, in_precs)
        except CVMError as e:
            raise type(e)(f"{where} ({node.op}): {e}") from None
        for k, (got, want) in enumerate(zip(node.shapes, sig.shapes)):
            _expect(got == want, f"{where} ({node.op}): output {k} shape {list(got)} in the file, inferred "
                    f"{list(want)}", CVMLogicError)
        node.precisions = sig.precisions
        gas += rules.node_gas(sig)
    _expect(gas <= rules.MAX_TOTAL_OPS, f"model gas {gas} exceeds {rules.MAX_TOTAL_OPS}", CVMLogicError)
    memory = 4 * sum(prod(shape) for node in nodes for shape in node.shapes)
    _expect(memory <= rules.MAX_MEMORY, f"model memory {memory} bytes exceeds {rules.MAX_MEMORY}", CVMLogicError)
    return gas


def load_graph(graph_json: bytes | str | os.PathLike[str], params: bytes | str | os.PathLike[str]) -> Graph:
    """Read and verify a model: graph JSON and params binary, each as bytes, a path, or (JSON) text."""
    raw = read_source(graph_json, json_text=True)
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise CVMRuntimeError(f"graph JSON does not parse: {e}") from None
    nodes, heads, _, version, post = parse_graph(doc)
    param_arrays = read_params(read_source(params))
    gas = verify_graph(nodes, param_arrays)
    names = {n.name for n in nodes if n.is_variable and n.name != "data"}
    return Graph(nodes, heads, {k: v for k, v in param_arrays.items() if k in names}, version, post, gas)


def graph_to_json(g: Graph) -> dict[str, Any]:
    """The graph JSON document of a Graph (with a fresh one-buffer-per-entry storage plan)."""
    nodes, row_ptr, shapes, precs, op_attrs = [], [0], [], [], []
    for n in g.nodes:
        entry: dict[str, Any] = {"op": "null" if n.is_variable else "cvm_op", "name": n.name,
                                 "inputs": [[s, k, 0] for s, k in n.inputs]}
        if not n.is_variable:
            entry["attrs"] = {"func_name": n.op, "num_inputs": str(len(n.inputs)),
                              "num_outputs": str(len(n.shapes)), "flatten_data": "0"}
            specs = {s.name: s for s in rules.OP_ATTRS[n.op]}
            text = json.dumps({k: rules.format_attr(specs[k], v) for k, v in n.attrs.items()})
        else:
            text = "{}"
        nodes.append(entry)
        op_attrs.append(text)
        for shape, p in zip(n.shapes, n.precisions):
            shapes.append(list(shape))
            precs.append(p)
        row_ptr.append(len(shapes))
    doc: dict[str, Any] = {
        "nodes": nodes,
        "arg_nodes": [i for i, n in enumerate(g.nodes) if n.is_variable],
        "node_row_ptr": row_ptr,
        "heads": [[n, k, 0] for n, k in g.heads],
        "attrs": {
            "dltype": ["list_str", ["int32"] * len(shapes)],
            "storage_id": ["list_int", list(range(len(shapes)))],
            "shape": ["list_shape", shapes],
            "precision": ["list_int", precs],
            "op_attrs": ["list_str", op_attrs],
        },
        "version": g.version,
    }
    if g.postprocess:
        doc["postprocess"] = g.postprocess
    return doc


def save_graph(graph: Graph, directory: str | os.PathLike[str]) -> None:
    """Write cvm-runtime's `model.json` and `params.bin` for a graph into a directory, created if needed."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "model.json"), "w") as f:
        json.dump(graph_to_json(graph), f)
    with open(os.path.join(directory, "params.bin"), "wb") as f:
        f.write(write_params(graph.params))
