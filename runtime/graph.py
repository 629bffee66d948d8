"""cvm-runtime model files: the graph JSON and the params binary, read into a verified `Graph` and written back.

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
  - a storage plan under which a tensor is read after another tensor overwrote its buffer, or two outputs of one
    node share a buffer (the runtime's output then depends on earlier inferences or on its kernels' write order),
    or a storage id of 2^24 or more (the runtime allocates one pool entry per id, as memory allows);
  - a postprocess name of 32 bytes or more (the runtime copies it into a 32-byte buffer with its terminator);
  - an allocation the runtime's reader makes from a count in the file: above 2^34 bytes cvmc assumes it fails
    (`std::bad_alloc`, a runtime error), below it succeeds; in between the runtime's outcome depends on the machine.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import struct
from dataclasses import dataclass, field
from math import prod
from typing import Any, NoReturn

import numpy as np

from cvmc.dialects import cvm_rules as rules
from cvmc.errors import CVMError, CVMLogicError, CVMRuntimeError
from cvmc.runtime.files import read_bounded

LIST_MAGIC = 0xF7E58D4F05049CB7
ARRAY_MAGIC = 0xDD5E40F096B4A13F
VERSIONS = ("cvm_1.0.0", "cvm_1.1.0")
POSTPROCESS = (None, "argmax", "detection")
MAX_STORAGE = 1 << 32  # graph_runtime.cc:567, the planned storage at load
MAX_STORAGE_ID = 1 << 24  # a deviation: see the module docstring
ALLOC_FAILS = 1 << 34  # a deviation: an allocation above this size is taken to fail

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

_U32 = 1 << 32


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


def _fail(cls: type[CVMError], msg: str) -> NoReturn:
    raise cls(msg)


_verify, _check, _undefined = rules.verify, rules.check, rules.undefined  # VERIFY, CHECK, a deviation
_unmodelled = rules.unmodelled  # a documented limit of cvmc


# ---------------------------------------------------------------------------------------------------------
# The runtime's JSON reader (include/utils/json.h, JSONReader), byte for byte
# ---------------------------------------------------------------------------------------------------------

_SPACE = re.compile(rb"[ \t\n\v\f\r]*")
_PLAIN = re.compile(rb'[^"\\\r\n]*')
_NUMBER = re.compile(rb"[ \t\n\v\f\r]*([+-]?)([0-9]*)")
_ESCAPES = {ord("r"): "\r", ord("n"): "\n", ord("\\"): "\\", ord("t"): "\t", ord('"'): '"'}
_INT_RANGE = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
              "uint32": (0, _U32 - 1), "uint64": (0, (1 << 64) - 1)}


_WS = rb"[ \t\n\v\f\r]*"
_SPACE_BYTES = frozenset(b" \t\n\v\f\r")
_QUOTE, _BACKSLASH, _COMMA, _COLON = ord('"'), ord("\\"), ord(","), ord(":")
_OPEN_OBJECT, _CLOSE_OBJECT, _OPEN_ARRAY, _CLOSE_ARRAY = ord("{"), ord("}"), ord("["), ord("]")
_SIMPLE_STRING = re.compile(_WS + rb'"([^"\\\r\n]*)"')
_STRING_BODY = rb'"(?:[^"\\\r\n]|\\[rnt"\\])*"'
_STR_ITEM = re.compile(rb'"((?:[^"\\\r\n]|\\[rnt"\\])*)"')
_STR_LIST = re.compile(_WS + rb"\[(" + _WS + _STRING_BODY + _WS + rb"(?:," + _WS + _STRING_BODY + _WS + rb")*)?\]")
_INT_BODY = rb"[+-]?[0-9]{1,18}"
_INT_ITEM = re.compile(_INT_BODY)
_INT_LIST = re.compile(_WS + rb"\[(" + _WS + _INT_BODY + _WS + rb"(?:," + _WS + _INT_BODY + _WS + rb")*)?\]")
_UNESCAPE = re.compile(rb"\\(.)")


def _unescape(raw: bytes) -> str:
    return _text(_UNESCAPE.sub(lambda m: _ESCAPES[m.group(1)[0]].encode(), raw) if b"\\" in raw else raw)


def _int_value(kind: str, sign: bytes, digits: bytes) -> int | None:
    """What `istream >>` stores for these characters in a field of C++ type `kind`, or None (failbit)."""
    digits = digits.lstrip(b"0") or b"0"
    if len(digits) > 20:
        return None
    lo, hi = _INT_RANGE[kind]
    value = int(digits)
    if kind.startswith("uint"):  # libstdc++ negates an unsigned value modulo 2^bits
        return None if value > hi else (-value) % (hi + 1) if sign == b"-" else value
    value = -value if sign == b"-" else value
    return value if lo <= value <= hi else None


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


class _Reader:
    """What both readers share: a list read item by item."""

    def begin_array(self) -> None:
        raise NotImplementedError

    def next_array_item(self) -> bool:
        raise NotImplementedError

    def read_list(self, read_one: Any) -> list[Any]:
        self.begin_array()
        out = []
        while self.next_array_item():
            out.append(read_one())
        return out


class _JsonReader(_Reader):
    """utils::JSONReader over bytes: the same accepted texts, and CHECK failures (runtime errors) where it has them.

    Its quirks are kept: end of input closes any open object or array (json.h:747, 780); only the escapes
    \\r \\n \\\\ \\t \\" exist (json.h:683); numbers are read with `istream >>`, so an unsigned field takes "-1" as
    2^32 - 1 and a number stops at the first character that is not a digit (json.h:713)."""

    def __init__(self, data: bytes):
        self.data, self.pos, self.scope = data, 0, [0]

    def where(self) -> str:
        return f"byte {self.pos} of the graph JSON"

    def next_non_space(self) -> int:
        data, pos = self.data, self.pos
        if pos < len(data) and data[pos] not in _SPACE_BYTES:
            self.pos = pos + 1
            return data[pos]
        pos = _SPACE.match(data, pos).end()  # type: ignore[union-attr]
        if pos >= len(data):
            self.pos = pos
            return -1
        self.pos = pos + 1
        return data[pos]

    def peek_non_space(self) -> int:
        self.pos = _SPACE.match(self.data, self.pos).end()  # type: ignore[union-attr]
        return self.data[self.pos] if self.pos < len(self.data) else -1

    def _expect(self, ch: int, want: int) -> None:
        if ch != want:
            got = "end of file" if ch < 0 else repr(chr(ch))
            _fail(CVMRuntimeError, f"graph JSON: expected {chr(want)!r} at {self.where()}, got {got}")

    def read_string(self) -> str:
        m = _SIMPLE_STRING.match(self.data, self.pos)
        if m is not None:  # no escape: the common case
            self.pos = m.end()
            return _text(m.group(1))
        self._expect(self.next_non_space(), _QUOTE)
        parts: list[str] = []
        while True:
            m = _PLAIN.match(self.data, self.pos)
            assert m is not None
            parts.append(_text(m.group()))
            self.pos = m.end()
            if self.pos >= len(self.data):
                _fail(CVMRuntimeError, f"graph JSON: a string is not closed at {self.where()}")
            ch = self.data[self.pos]
            self.pos += 1
            if ch == _QUOTE:
                return "".join(parts)
            if ch != _BACKSLASH:  # a raw end of line
                _fail(CVMRuntimeError, f"graph JSON: a string is not closed before the end of line at {self.where()}")
            esc = self.data[self.pos] if self.pos < len(self.data) else -1
            self.pos += 1
            if esc not in _ESCAPES:
                _fail(CVMRuntimeError, f"graph JSON: unknown string escape \\{chr(esc) if esc >= 0 else ''} at "
                      f"{self.where()} (the runtime's reader knows \\r \\n \\\\ \\t \\\")")
            parts.append(_ESCAPES[esc])

    def read_int(self, kind: str) -> int:
        """`istream >> value` for an integer field of C++ type `kind`."""
        m = _NUMBER.match(self.data, self.pos)
        assert m is not None
        sign, digits = m.group(1), m.group(2)
        if not digits:
            _fail(CVMRuntimeError, f"graph JSON: expected a number at {self.where()}")
        self.pos = m.end()
        value = _int_value(kind, sign, digits)
        if value is None:
            _fail(CVMRuntimeError, f"graph JSON: number {(sign + digits).decode()} does not fit a {kind} at "
                  f"{self.where()}")
        return value  # type: ignore[return-value]

    def read_int_list(self, kind: str) -> list[int]:
        """A list of integers; a plain `[1, 2, 3]` in one match, anything else item by item."""
        m = _INT_LIST.match(self.data, self.pos)
        if m is not None:
            values = [_int_value(kind, n[:1] if n[:1] in b"+-" else b"", n.lstrip(b"+-"))
                      for n in _INT_ITEM.findall(m.group(1) or b"")]
            if None not in values:
                self.pos = m.end()
                return values  # type: ignore[return-value]
        return self.read_list(lambda: self.read_int(kind))

    def read_str_list(self) -> list[str]:
        """A list of strings; a plain one in one match, anything else item by item."""
        m = _STR_LIST.match(self.data, self.pos)
        if m is not None:
            self.pos = m.end()
            return [_unescape(x) for x in _STR_ITEM.findall(m.group(1) or b"")]
        return self.read_list(self.read_string)

    def begin_object(self) -> None:
        self._expect(self.next_non_space(), _OPEN_OBJECT)
        self.scope.append(0)

    def begin_array(self) -> None:
        self._expect(self.next_non_space(), _OPEN_ARRAY)
        self.scope.append(0)

    def _next_item(self, close: int) -> bool:
        if self.scope[-1] != 0:
            ch = self.next_non_space()
            more = ch != -1 and ch != close
            if more:
                self._expect(ch, _COMMA)
        else:
            more = self.peek_non_space() != close
            if not more:
                self.pos += 1
        if not more:
            self.scope.pop()
            return False
        self.scope[-1] += 1
        return True

    def next_object_item(self) -> str | None:
        if not self._next_item(_CLOSE_OBJECT):
            return None
        key = self.read_string()
        self._expect(self.next_non_space(), _COLON)
        return key

    def next_array_item(self) -> bool:
        return self._next_item(_CLOSE_ARRAY)

    def read_str_map(self) -> dict[str, str]:
        out: dict[str, str] = {}
        self.begin_object()
        while (key := self.next_object_item()) is not None:
            out[key] = self.read_string()
        return out


class _Obj(list):
    """A JSON object as the list of its (key, value) pairs, in order, duplicates kept (the runtime reads each)."""


class _Unreadable:
    """A float or a constant (NaN, Infinity): the runtime's reader fails on it wherever it stands."""


_UNREADABLE = _Unreadable()
_BAD_ESCAPE = re.compile(rb'\\[^rnt"\\]')
_END = object()


def _parse_plain_json(data: bytes) -> Any:
    """The document as a tree when Python's json module reads it as the runtime's reader does, else None."""
    if _BAD_ESCAPE.search(data):  # (conservative: an escaped backslash before a letter also goes the slow way)
        return None
    try:
        text = data.decode("utf-8")
        return json.loads(text, object_pairs_hook=_Obj, parse_float=lambda _: _UNREADABLE,
                          parse_constant=lambda _: _UNREADABLE)
    except (ValueError, RecursionError):
        return None


class _TreeReader(_Reader):
    """The interface of `_JsonReader` over a parsed document (see `_read_graph`); it only has to fail where the
    streaming reader fails, since the streaming reader then gives the error."""

    def __init__(self, root: Any):
        self.pending, self.stack = root, []

    def _take(self, kind: type | tuple[type, ...]) -> Any:
        v, self.pending = self.pending, _END
        if not isinstance(v, kind) or isinstance(v, bool):
            raise CVMRuntimeError("graph JSON: a value of another type")
        return v

    def begin_object(self) -> None:
        self.stack.append(iter(self._take(_Obj)))

    def begin_array(self) -> None:
        v = self._take(list)
        if isinstance(v, _Obj):
            raise CVMRuntimeError("graph JSON: an object where an array belongs")
        self.stack.append(iter(v))

    def next_object_item(self) -> str | None:
        item = next(self.stack[-1], _END)
        if item is _END:
            self.stack.pop()
            return None
        key, self.pending = item  # type: ignore[misc]
        return key

    def next_array_item(self) -> bool:
        item = next(self.stack[-1], _END)
        if item is _END:
            self.stack.pop()
            return False
        self.pending = item
        return True

    def read_string(self) -> str:
        return self._take(str)

    def read_int(self, kind: str) -> int:
        v = self._take(int)
        value = _int_value(kind, b"-" if v < 0 else b"", str(abs(v)).encode())
        if value is None:
            raise CVMRuntimeError("graph JSON: a number out of range")
        return value

    def read_int_list(self, kind: str) -> list[int]:
        return self.read_list(lambda: self.read_int(kind))

    def read_str_list(self) -> list[str]:
        return self.read_list(self.read_string)


# ---------------------------------------------------------------------------------------------------------
# The graph's JSON loaders (graph_runtime.h: NodeEntry, Node, GraphAttr, CvmRuntime::Load)
# ---------------------------------------------------------------------------------------------------------


@dataclass
class _RawNode:
    op_type: str = ""
    name: str = ""
    inputs: list[tuple[int, int]] = field(default_factory=list)
    func_name: str = ""


@dataclass
class _RawGraph:
    nodes: list[_RawNode] = field(default_factory=list)
    arg_nodes: list[int] = field(default_factory=list)
    row_ptr: list[int] = field(default_factory=list)
    heads: list[tuple[int, int]] = field(default_factory=list)
    attrs: dict[str, list[Any]] = field(default_factory=dict)
    version: str = "cvm_1.0.0"
    postprocess: str = ""


def _read_entry(r: Any) -> tuple[int, int]:
    """NodeEntry::Load (graph_runtime.h:188): [node_id, index] or [node_id, index, version], all uint32."""
    r.begin_array()
    _verify(r.next_array_item(), "graph JSON: invalid json format: an entry needs [node, index]")  # h:191
    node = r.read_int("uint32")
    _verify(r.next_array_item(), "graph JSON: invalid json format: an entry needs [node, index]")  # h:193
    index = r.read_int("uint32")
    if r.next_array_item():
        r.read_int("uint32")
        _verify(not r.next_array_item(), "graph JSON: invalid json format: an entry has more than 3 values")  # h:197
    return node, index


def _read_node(r: Any) -> _RawNode:
    """Node::Load and Node::LoadAttrs (graph_runtime.h:218-261)."""
    node, bits = _RawNode(), 0
    r.begin_object()
    while (key := r.next_object_item()) is not None:
        if key == "op":
            node.op_type = r.read_string()
            _verify(node.op_type in ("cvm_op", "null"),  # h:243
                    f"node op {node.op_type!r}: the CVM executor supports only 'cvm_op' or 'null'")
            bits |= 1
        elif key == "name":
            node.name = r.read_string()
            bits |= 2
        elif key == "inputs":
            node.inputs = r.read_list(lambda: _read_entry(r))
            bits |= 4
        elif key == "attrs":
            abits = 0
            r.begin_object()
            while (akey := r.next_object_item()) is not None:
                value = r.read_string()
                if akey == "func_name":
                    node.func_name, abits = value, 1
                else:
                    _check(akey in ("num_inputs", "num_outputs", "op_attrs", "flatten_data"),  # h:230
                           f"node {node.name!r}: node attributes do not support key {akey!r}")
            _verify(abits == 1, f"node {node.name!r}: invalid format: 'attrs' has no 'func_name'")  # h:233
        elif key == "precision":
            r.read_int("int32")
        else:
            _fail(CVMRuntimeError, f"graph JSON: node do not support key {key!r}")  # h:257
    _verify(bits == 7, f"node {node.name!r}: invalid format: a node needs 'op', 'name' and 'inputs'")  # h:260
    return node


_GRAPH_ATTR_TYPES = {"dltype": "list_str", "storage_id": "list_int", "shape": "list_shape",
                     "device_index": "list_int", "precision": "list_int", "op_attrs": "list_str"}


def _read_graph_attrs(r: Any, attrs: dict[str, list[Any]]) -> None:
    """GraphAttr::Load (graph_runtime.h:328-405): each value is ["<type>", [...]]."""
    bits = 0
    r.begin_object()
    while (key := r.next_object_item()) is not None:
        if key in _GRAPH_ATTR_TYPES or key == "dtype":
            r.begin_array()
            _verify(r.next_array_item(), f"graph attribute {key!r}: expected [type, values]")
            kind = r.read_string()
            if key == "dtype":  # h:384, read and dropped
                _check(kind in ("list_int", "list_str"), f"cannot skip graph attr {key!r} of type {kind!r}")
                _verify(r.next_array_item(), f"graph attribute {key!r}: expected [type, values]")
                if kind == "list_int":
                    r.read_int_list("int32")
                else:
                    r.read_int("uint64")
            else:
                want = _GRAPH_ATTR_TYPES[key]
                _verify(kind == want, f"graph attribute {key!r}: type {kind!r}, expected {want!r}")
                _verify(r.next_array_item(), f"graph attribute {key!r}: expected [type, values]")
                if want == "list_str":
                    attrs[key] = r.read_str_list()
                elif want == "list_int":
                    attrs[key] = r.read_int_list("int32")
                else:
                    attrs[key] = r.read_list(lambda: r.read_int_list("int64"))
                bits |= {"storage_id": 2, "shape": 4, "op_attrs": 8}.get(key, 0)
            _verify(not r.next_array_item(), f"graph attribute {key!r}: expected [type, values]")
        else:
            _fail(CVMRuntimeError, f"graph attribute {key!r} not supported")  # h:401
    _verify(bits == 14, "graph JSON: invalid format: 'attrs' needs 'storage_id', 'shape' and 'op_attrs'")  # h:404


def _read_graph(data: bytes) -> _RawGraph:
    """CvmRuntime::Load (graph_runtime.h:408-435) on the graph JSON's bytes.

    The runtime's reader is a streaming one (`_JsonReader`), and it decides. A document that Python's json module
    parses, with no escape, number or constant that the runtime reads otherwise, is first walked as a tree
    (`_TreeReader`, the same loaders): the same values in the same order, many times faster. Any failure there is
    decided again by the streaming reader, whose error (its class, its position) is the one raised."""
    tree = _parse_plain_json(data)
    if tree is not None:
        try:
            return _load_graph_json(_TreeReader(tree))
        except CVMError:
            pass
    return _load_graph_json(_JsonReader(data))


def _load_graph_json(r: Any) -> _RawGraph:
    g, bits = _RawGraph(), 0
    r.begin_object()
    while (key := r.next_object_item()) is not None:
        if key == "nodes":
            g.nodes = r.read_list(lambda: _read_node(r))
            bits |= 1
        elif key == "arg_nodes":
            g.arg_nodes = r.read_int_list("uint32")
        elif key == "node_row_ptr":
            g.row_ptr = r.read_int_list("uint32")
        elif key == "heads":
            g.heads = r.read_list(lambda: _read_entry(r))
            bits |= 8
        elif key == "attrs":
            _read_graph_attrs(r, g.attrs)
            bits |= 16
        elif key == "version":
            g.version = r.read_string()
        elif key == "postprocess":
            g.postprocess = r.read_string()
        else:
            _fail(CVMRuntimeError, f"graph JSON: key {key!r} is not supported")  # h:431
    _verify(bits == 25, "graph JSON: invalid format: it needs 'nodes', 'heads' and 'attrs'")  # h:434
    return g


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
        raw = _EMPTY_MAP if text == "{}" else _JsonReader(text.encode("utf-8", "surrogateescape")).read_str_map()
        return rules.parse_attrs(op, raw)
    except CVMError as e:
        raise type(e)(f"node {nid} ({name!r}): {e}") from None


_EMPTY_MAP: dict[str, str] = {}


def _entry_id(row_ptr: list[int], entry: tuple[int, int], what: str) -> int:
    node, index = entry
    if node >= len(row_ptr):
        _undefined(False, f"{what} names node {node}, past node_row_ptr's {len(row_ptr)} entries")
    return (row_ptr[node] + index) % _U32


@dataclass
class _Prepared:
    """What PrepareGraphWithVersion leaves: operator nodes parsed, entries numbered."""

    raw: _RawGraph
    ops: list[str | None]  # the registered operator of each node (None for a variable)
    attrs: list[rules.Attrs]
    row_ptr: list[int]
    shapes: list[rules.Shape]
    precisions: list[int]
    storage: list[int]
    variables: list[int]


def _prepare(g: _RawGraph) -> _Prepared:
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
            _fail(CVMRuntimeError, f"node {nid} ({n.name!r}): operator {func!r} is not registered")
        a = _parse_op_attrs(nid, n.name, op, op_attrs[nid])
        want = rules.num_inputs(op, a)
        if want < 0:
            want = len(n.inputs)
        if want != len(n.inputs):  # h:314
            _fail(CVMLogicError, f"node {nid} ({n.name!r}): operator {func} takes {want} inputs, got {len(n.inputs)}")
        ops.append(op)
        parsed.append(a)
        row_ptr.append(n_entries)
        n_entries += rules.num_outputs(op)
    row_ptr.append(n_entries)

    storage = attrs.get("storage_id", [])
    _verify(len(storage) == n_entries,  # cc:143
            f"graph attribute 'storage_id' has {len(storage)} entries, expected {n_entries}")
    if storage and min(storage) < 0:  # cc:147
        _fail(CVMLogicError, f"graph attribute 'storage_id': expected ids >= 0, got {min(storage)}")
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
                    _fail(CVMLogicError, f"node {nid} ({n.name!r}): operator {op} output ({nid}, {k}) uses the same "
                          f"storage_id {storage[in_eid]} as its input ({e[0]}, {e[1]}); only "
                          f"{sorted(IN_PLACE_OPS)} may")

    shapes = attrs.get("shape", [])
    _verify(len(shapes) == n_entries, f"graph attribute 'shape' has {len(shapes)} entries, expected {n_entries}")
    for k, shape in enumerate(shapes):  # cc:184
        if not 0 < len(shape) <= rules.MAX_NDIM:
            _fail(CVMLogicError, f"entry {k}: shape {shape} has {len(shape)} dims, expected 1 to {rules.MAX_NDIM}")
        size = 1
        for d in shape:
            size *= d
            if not 0 < d <= rules.MAX_DIM:
                _fail(CVMLogicError, f"entry {k}: shape {shape}: dim {d}, expected in [1, {rules.MAX_DIM}]")
            if size > rules.MAX_SIZE:
                _fail(CVMLogicError, f"entry {k}: shape {shape} has more than {rules.MAX_SIZE} elements")
    precisions = attrs.get("precision", [])
    _verify(len(precisions) == n_entries,  # cc:199
            f"graph attribute 'precision' has {len(precisions)} entries, expected {n_entries}")
    for k, p in enumerate(precisions):
        if not (p == -1 or 0 < p <= 32):  # cc:203
            _fail(CVMLogicError, f"entry {k}: precision {p}, expected -1 or in [1, 32]")
    _verify(not attrs.get("device_index"), "graph attribute 'device_index' must be absent or empty")  # cc:208

    if g.version == "cvm_1.0.0":
        dltype = attrs.get("dltype", [])
        _verify(len(dltype) == n_entries,  # cc:219
                f"graph attribute 'dltype' has {len(dltype)} entries, expected {n_entries}")
        for t in dltype:
            if t != "int32":
                _fail(CVMLogicError, f"graph attribute 'dltype': type {t!r} is not supported in cvm_1.0.0")
        _verify(file_rows == row_ptr, f"'node_row_ptr' {file_rows}, expected {row_ptr}")  # cc:226
        _verify(g.arg_nodes == variables, f"'arg_nodes' {g.arg_nodes}, expected {variables}")  # cc:236
    elif g.version != "cvm_1.1.0":
        _fail(CVMRuntimeError, f"graph version {g.version!r} not supported, expected one of {list(VERSIONS)}")

    for nid, n in enumerate(nodes):  # cc:252
        eid = row_ptr[nid]
        for e in n.inputs:
            src = _entry_id(row_ptr, e, "an input")
            if src >= eid:
                _fail(CVMLogicError, f"node {nid} ({n.name!r}): input {list(e)} is entry {src}, not before the "
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
        inputs = [_locate(p.row_ptr, (p.row_ptr[s] + k) % _U32) for s, k in raw.inputs]
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
                _fail(CVMLogicError, f"node {nid} ({node.name!r}): a variable's precision must be set, got -1")
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
            _fail(CVMLogicError, f"node {nid} ({func.name!r}): function undefined: "
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


def parse_graph(data: bytes) -> tuple[list[Node], list[tuple[int, int]], _Prepared, str | None]:
    """Read and check a graph JSON as `CvmRuntime::Init` and `Setup` do: nodes with shapes and precisions."""
    p = _prepare(_read_graph(data))
    nodes = _setup(p)
    heads, post = _model_checks(p, nodes)
    return nodes, heads, p, post


# ---------------------------------------------------------------------------------------------------------
# Params binary (param_dict.cc: load_param_dict; ndarray.h: NDArray::Load; graph_runtime.cc: LoadParams)
# ---------------------------------------------------------------------------------------------------------


@dataclass
class _Array:
    code: int
    bits: int
    lanes: int
    device_type: int
    shape: tuple[int, ...]
    values: np.ndarray  # int32, sign-extended from the file's int8 or int32
    complete: bool  # False: the file ends inside the data


class _Stream:
    """utils::MemoryStringStream: a read returns what is left, up to the size asked."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def read(self, n: int) -> bytes:
        b = self.data[self.pos:self.pos + n]
        self.pos += len(b)
        return b

    def unpack(self, fmt: str) -> tuple[Any, ...] | None:
        """Arithmetic reads: None when the stream is short (the runtime's Read returns false)."""
        n = struct.calcsize(fmt)
        b = self.read(n)
        return struct.unpack(fmt, b) if len(b) == n else None


_VEC_STRING_MAX = ((1 << 63) - 1) // 32  # libstdc++ vector<string>::max_size()
_STRING_MAX = (1 << 62) - 1  # basic_string::max_size()


def _alloc(nbytes: int, what: str) -> None:
    _check(nbytes <= ALLOC_FAILS, f"invalid params file: std::bad_alloc allocating {nbytes} bytes for {what}")


def read_params(data: bytes) -> dict[str, np.ndarray]:
    """The int32 arrays of a params binary by name (int8 storage is sign-extended)."""
    return {name: arr.values for name, arr in read_param_arrays(data)}


def read_param_arrays(data: bytes) -> list[tuple[str, _Array]]:
    """load_param_dict and NDArray::Load: the arrays of a params binary, in file order, as the runtime reads them."""
    s = _Stream(data)
    header = s.unpack("<Q")
    _verify(header is not None, "invalid params file format: no list magic")  # param_dict.cc:20
    _verify(header == (LIST_MAGIC,), "invalid params file format: wrong list magic")  # param_dict.cc:22
    _verify(s.unpack("<Q") is not None, "invalid params file format: no reserved word")  # param_dict.cc:24
    count = s.unpack("<Q")
    if count is None:  # param_dict.cc:27
        _fail(CVMLogicError, "invalid params file format: no name count")
    n_names = count[0]
    _verify(n_names <= _VEC_STRING_MAX, f"invalid params file: {n_names} names (std::length_error)")
    _alloc(32 * n_names, f"{n_names} names")
    names = []
    for i in range(n_names):
        length = s.unpack("<Q")
        if length is None:
            _fail(CVMLogicError, f"invalid params file format: name {i} has no length")
        n = length[0]
        _verify(n <= _STRING_MAX, f"invalid params file: name {i} of {n} bytes (std::length_error)")
        _alloc(n + 1, f"name {i}")
        raw = s.read(n)
        _verify(len(raw) == n, f"invalid params file format: name {i} is cut short")
        names.append(_text(raw))
    left = len(data) - s.pos
    _undefined(left >= 8, "the params file ends inside the array count, which the runtime reads uninitialised")
    n_arrays = s.unpack("<Q")[0]  # type: ignore[index]
    _verify(n_arrays == len(names), f"invalid params file format: {n_arrays} arrays for {len(names)} names")
    arrays = [(name, _read_array(s, name)) for name in names]
    for name, arr in arrays:  # only the last array can be cut short: any later one fails its header (a CHECK)
        _undefined(arr.complete, f"param {name!r} is cut short inside its data: the runtime keeps the rest "
                   "uninitialised")
    return arrays


def _read_array(s: _Stream, name: str) -> _Array:
    def need(v: tuple[Any, ...] | None, what: str) -> tuple[Any, ...]:
        _check(v is not None, f"invalid DLTensor file format: param {name!r} is cut short in its {what}")
        assert v is not None
        return v

    magic = need(s.unpack("<Q"), "magic")[0]  # ndarray.h:487
    need(s.unpack("<Q"), "reserved word")
    _check(magic == ARRAY_MAGIC, f"invalid DLTensor file format: param {name!r} has a wrong array magic")
    device_type, _device_id = need(s.unpack("<ii"), "context")
    ndim = need(s.unpack("<i"), "ndim")[0]
    code, bits, lanes = need(s.unpack("<BBH"), "dtype")
    _verify(ndim >= 0, f"param {name!r}: ndim {ndim} (std::length_error)")  # vector<int64_t>(ndim)
    _alloc(8 * ndim, f"the shape of {name!r}")
    shape = need(s.unpack(f"<{ndim}q"), "shape") if ndim else ()
    # NDArray::Empty: VerifyDataType (ndarray.cc:22), DeviceAPI::Get (device_api.cc), AllocDataSpace
    _check(lanes >= 1, f"param {name!r}: dtype lanes {lanes}, expected >= 1")
    if not (bits == 1 and code == 1):  # uint1 is allowed as a bool flag
        _check(bits % 8 == 0, f"param {name!r}: dtype bits {bits} are not a whole number of bytes")
        _check(bits & (bits - 1) == 0, f"param {name!r}: dtype bits {bits} are not a power of two")
    _undefined(0 <= device_type < 32 or device_type >= 128, f"param {name!r}: device type {device_type}")
    _check(device_type in (1, 3), f"param {name!r}: device type {device_type} is not enabled (1 cpu, 3 formal)")
    nbytes = 1
    for d in shape:
        nbytes = nbytes * (d % (1 << 64)) % (1 << 64)
    nbytes = nbytes * ((bits * lanes + 7) // 8) % (1 << 64)
    align = max(64, (bits // 8) * lanes)
    _check(align & (align - 1) == 0, f"param {name!r}: alignment {align} (std::bad_alloc)")
    _alloc(nbytes, f"param {name!r}")
    elems = 1
    for d in shape:
        elems = _wrap64(elems * d)
    size = need(s.unpack("<q"), "data size")[0]  # ndarray.h:526
    _check(size == _wrap64(elems * ((bits + 7) // 8)),
           f"invalid DLTensor file format: param {name!r} declares {size} data bytes for shape {list(shape)}")
    raw = s.read(size % (1 << 64))
    _check(len(raw) > 0, f"invalid DLTensor file format: param {name!r} has no data")  # ndarray.h:530
    values = np.zeros(0, np.int32)
    # a negative dim, or dims whose product (in elements or in bytes) the runtime's 64-bit sizes wrap, give no
    # array of that shape: the runtime holds the bytes it read, and its shape check against the graph's
    # (load_params; those dims are in [1, 2^24]) refuses it
    exact = all(d >= 0 for d in shape) and prod(shape) == elems and elems * ((bits + 7) // 8) == size
    if code == 0 and lanes == 1 and bits in (8, 32) and len(raw) == size and exact:
        values = np.frombuffer(raw, "<i1" if bits == 8 else "<i4").astype(np.int32).reshape(shape)
    return _Array(code, bits, lanes, device_type, tuple(shape), values, len(raw) == size)


def _wrap64(x: int) -> int:
    x %= 1 << 64
    return x - (1 << 64) if x >= 1 << 63 else x


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


def _check_storage_history(p: _Prepared, nodes: list[Node], heads: list[tuple[int, int]],
                           param_order: list[str]) -> None:
    """A documented limit (`not modelled by cvmc`): refuse a storage plan under which a tensor read is not the tensor
    written.

    The runtime runs every tensor in a view at the start of its storage_id's buffer (sized for the largest): params
    are written once at load, `data` at each inference, each operator's outputs when it runs. A read sees the tensor
    it names when no other tensor wrote the buffer since that tensor was written (an operator in IN_PLACE_OPS may
    overwrite its own input as it reads it). Otherwise the runtime reads what the other tensor left, a defined
    result (clean under valgrind) that may depend on earlier inferences when a param's buffer is written; cvmc
    executes the dataflow graph and does not model shared buffers."""
    row = p.row_ptr
    sid = p.storage
    last: dict[int, int] = {}  # storage id -> the entry written last
    param_eids = {row[i] for i, n in enumerate(nodes) if n.is_variable and n.name != "data"}
    data_eid = next((row[i] for i, n in enumerate(nodes) if n.is_variable and n.name == "data"), None)
    first_var = {}
    for i, n in enumerate(nodes):
        if n.is_variable:
            first_var.setdefault(n.name, row[i])
    for name in param_order:  # load order
        e = first_var[name]
        last[sid[e]] = e
    written_later = {sid[e] for e in range(row[-1]) if e not in param_eids}
    loaded = dict(last)

    def read(e: int, by: str) -> None:
        if e in param_eids:
            _unmodelled(loaded.get(sid[e]) == e and sid[e] not in written_later,
                       f"{by} reads param entry {e}, whose storage_id {sid[e]} another tensor also writes")
            return
        _unmodelled(last.get(sid[e]) == e, f"{by} reads entry {e} after another tensor overwrote storage_id {sid[e]}")

    if data_eid is not None:
        last[sid[data_eid]] = data_eid
    for nid, node in enumerate(nodes):
        if node.is_variable:
            continue
        outs = range(row[nid], row[nid + 1])
        _unmodelled(len({sid[o] for o in outs}) == len(outs), f"node {nid}'s outputs share a storage_id")
        for s, k in node.inputs:
            read(row[s] + k, f"node {nid} ({node.name!r})")
        for o in outs:
            last[sid[o]] = o
    for s, k in heads:
        read(row[s] + k, "a head")


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
    param_arrays, order = load_params(nodes, pdata)
    gas = graph_gas(nodes)
    _check_storage_history(prepared, nodes, heads, order)
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
            text = json.dumps({k: rules.format_attr(specs[k], v) for k, v in n.attrs.items()}, ensure_ascii=False)
        else:
            text = "{}"
        nodes.append(entry)
        op_attrs.append(text)
        for shape, p in zip(n.shapes, n.precisions, strict=True):
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


def write_params(params: dict[str, np.ndarray]) -> bytes:
    """Encode int32 arrays as a params binary (int8 storage when every value fits, as cvm-runtime writes)."""
    parts = [struct.pack("<QQQ", LIST_MAGIC, 0, len(params))]
    for name in params:
        b = name.encode("utf-8", "surrogateescape")
        parts.append(struct.pack("<Q", len(b)) + b)
    parts.append(struct.pack("<Q", len(params)))
    for arr in params.values():
        a = np.asarray(arr)
        small = a.size > 0 and int(a.min()) >= -127 and int(a.max()) <= 127
        data = a.astype("<i1" if small else "<i4").tobytes()
        parts.append(struct.pack("<QQiiiBBH", ARRAY_MAGIC, 0, 1, 0, a.ndim, 0, 8 if small else 32, 1))
        parts.append(struct.pack(f"<{a.ndim}q", *a.shape) + struct.pack("<q", len(data)) + data)
    return b"".join(parts)


def save_graph(graph: Graph, directory: str | os.PathLike[str]) -> None:
    """Write cvm-runtime's `model.json` and `params.bin` for a graph into a directory, created if needed."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "model.json"), "w", encoding="utf-8") as f:
        json.dump(graph_to_json(graph), f, ensure_ascii=False)
    with open(os.path.join(directory, "params.bin"), "wb") as f:
        f.write(write_params(graph.params))
