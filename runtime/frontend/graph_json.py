"""The graph JSON as cvm-runtime reads it: its JSON reader (include/utils/json.h, `JSONReader`) and the loaders of
graph_runtime.h (`NodeEntry`, `Node`, `GraphAttr`, `CvmRuntime::Load`), byte for byte, so that a malformed file
fails where the runtime's reader fails, with the same error class.

    raw = read_graph_json(data)     # RawGraph: nodes, arg_nodes, heads, node_row_ptr, graph attributes, version

Nothing is checked here beyond what the runtime's reader and loaders check: `graph.py` checks the graph.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, NoReturn

from cvmc.dialects import cvm_rules as rules
from cvmc.errors import CVMError, CVMRuntimeError

U32 = 1 << 32
_verify, _check = rules.verify, rules.check  # VERIFY, CHECK


def fail(cls: type[CVMError], msg: str) -> NoReturn:
    """Raise `cls(msg)` (in expressions and as the last statement of a reader's branch)."""
    raise cls(msg)


# ---------------------------------------------------------------------------------------------------------
# The runtime's JSON reader (include/utils/json.h, JSONReader), byte for byte
# ---------------------------------------------------------------------------------------------------------

_SPACE = re.compile(rb"[ \t\n\v\f\r]*")
_PLAIN = re.compile(rb'[^"\\\r\n]*')
_NUMBER = re.compile(rb"[ \t\n\v\f\r]*([+-]?)([0-9]*)")
_ESCAPES = {ord("r"): "\r", ord("n"): "\n", ord("\\"): "\\", ord("t"): "\t", ord('"'): '"'}
_INT_RANGE = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
              "uint32": (0, U32 - 1), "uint64": (0, (1 << 64) - 1)}


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
    return as_text(_UNESCAPE.sub(lambda m: _ESCAPES[m.group(1)[0]].encode(), raw) if b"\\" in raw else raw)


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


def as_text(raw: bytes) -> str:
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


class JsonReader(_Reader):
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
            fail(CVMRuntimeError, f"graph JSON: expected {chr(want)!r} at {self.where()}, got {got}")

    def read_string(self) -> str:
        m = _SIMPLE_STRING.match(self.data, self.pos)
        if m is not None:  # no escape: the common case
            self.pos = m.end()
            return as_text(m.group(1))
        self._expect(self.next_non_space(), _QUOTE)
        parts: list[str] = []
        while True:
            m = _PLAIN.match(self.data, self.pos)
            assert m is not None
            parts.append(as_text(m.group()))
            self.pos = m.end()
            if self.pos >= len(self.data):
                fail(CVMRuntimeError, f"graph JSON: a string is not closed at {self.where()}")
            ch = self.data[self.pos]
            self.pos += 1
            if ch == _QUOTE:
                return "".join(parts)
            if ch != _BACKSLASH:  # a raw end of line
                fail(CVMRuntimeError, f"graph JSON: a string is not closed before the end of line at {self.where()}")
            esc = self.data[self.pos] if self.pos < len(self.data) else -1
            self.pos += 1
            if esc not in _ESCAPES:
                fail(CVMRuntimeError, f"graph JSON: unknown string escape \\{chr(esc) if esc >= 0 else ''} at "
                      f"{self.where()} (the runtime's reader knows \\r \\n \\\\ \\t \\\")")
            parts.append(_ESCAPES[esc])

    def read_int(self, kind: str) -> int:
        """`istream >> value` for an integer field of C++ type `kind`."""
        m = _NUMBER.match(self.data, self.pos)
        assert m is not None
        sign, digits = m.group(1), m.group(2)
        if not digits:
            fail(CVMRuntimeError, f"graph JSON: expected a number at {self.where()}")
        self.pos = m.end()
        value = _int_value(kind, sign, digits)
        if value is None:
            fail(CVMRuntimeError, f"graph JSON: number {(sign + digits).decode()} does not fit a {kind} at "
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
    """The interface of `JsonReader` over a parsed document (see `_read_graph`); it only has to fail where the
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
class RawNode:
    op_type: str = ""
    name: str = ""
    inputs: list[tuple[int, int]] = field(default_factory=list)
    func_name: str = ""


@dataclass
class RawGraph:
    nodes: list[RawNode] = field(default_factory=list)
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


def _read_node(r: Any) -> RawNode:
    """Node::Load and Node::LoadAttrs (graph_runtime.h:218-261)."""
    node, bits = RawNode(), 0
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
            fail(CVMRuntimeError, f"graph JSON: node do not support key {key!r}")  # h:257
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
            fail(CVMRuntimeError, f"graph attribute {key!r} not supported")  # h:401
    _verify(bits == 14, "graph JSON: invalid format: 'attrs' needs 'storage_id', 'shape' and 'op_attrs'")  # h:404


def read_graph_json(data: bytes) -> RawGraph:
    """CvmRuntime::Load (graph_runtime.h:408-435) on the graph JSON's bytes.

    The runtime's reader is a streaming one (`JsonReader`), and it decides. A document that Python's json module
    parses, with no escape, number or constant that the runtime reads otherwise, is first walked as a tree
    (`_TreeReader`, the same loaders): the same values in the same order, many times faster. Any failure there is
    decided again by the streaming reader, whose error (its class, its position) is the one raised."""
    tree = _parse_plain_json(data)
    if tree is not None:
        try:
            return _load_graph_json(_TreeReader(tree))
        except CVMError:
            pass
    return _load_graph_json(JsonReader(data))


def _load_graph_json(r: Any) -> RawGraph:
    g, bits = RawGraph(), 0
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
            fail(CVMRuntimeError, f"graph JSON: key {key!r} is not supported")  # h:431
    _verify(bits == 25, "graph JSON: invalid format: it needs 'nodes', 'heads' and 'attrs'")  # h:434
    return g


