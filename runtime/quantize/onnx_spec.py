"""The ONNX operators the quantizer reads, as tables: per operator its inputs, outputs and attributes, each
attribute with the range the ONNX operator spec allows and the part of it the importer implements exactly; and
the shape of every node's outputs (checked against its operands before anything is computed).

    check_node(node, opset, ranks)           # the table: a CVMLogicError naming the node, the attribute, the value
    shapes = infer(node, in_shapes, consts)  # the outputs' shapes, or a CVMLogicError naming the node

A value outside the spec's range is refused as such ("the ONNX spec allows ..."); one inside it that the importer
does not implement as the spec says is refused as having no CVM form ("the quantizer implements ..."): nothing is
read another way than the spec's. tests/runtime/test_quantize_spec.py checks the tables against onnx.defs for
every opset from MIN_OPSET to MAX_OPSET and each attribute at its bounds and one past.

The float interpreter runs the model on a stack of inputs along the first axis (the batch), so a computed value
keeps its first axis as the batch: a Transpose, Flatten, Reshape, Concat or broadcast that moves or mixes it is
refused too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cvmc.errors import CVMLogicError

MIN_OPSET = 13
MAX_OPSET = 27  # every operator below has the same attributes and semantics (for float32) from 13 to 27

INT, FLOAT, STRING, TENSOR, INTS = "INT", "FLOAT", "STRING", "TENSOR", "INTS"
_PROTO_KIND = {1: FLOAT, 2: INT, 3: STRING, 4: TENSOR, 5: "GRAPH", 6: "FLOATS", 7: INTS, 8: "STRINGS", 9: "TENSORS",
               10: "GRAPHS", 11: "SPARSE_TENSOR", 12: "SPARSE_TENSORS", 13: "TYPE_PROTO", 14: "TYPE_PROTOS"}


@dataclass
class Node:
    """One ONNX node: `inputs` and `outputs` are value names ("" for an absent optional input)."""

    name: str
    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)

    def where(self) -> str:
        return f"node {self.name!r} ({self.op})"


@dataclass(frozen=True)
class Rule:
    """A set of attribute values: `text` says which, `ok(value, rank)` tells (rank: the first input's)."""

    text: str
    ok: Callable[[Any, int], bool]


def one_of(*values: Any) -> Rule:
    return Rule(f"one of {list(values)}", lambda v, r: v in values)


def ints(count: Callable[[int], int], least: int, what: str) -> Rule:
    return Rule(f"{what} integers >= {least}",
                lambda v, r: len(v) == count(r) and all(x >= least for x in v))


SPATIAL = lambda r: r - 2  # noqa: E731
BOTH_SIDES = lambda r: 2 * (r - 2)  # noqa: E731
ANY = Rule("any value", lambda v, r: True)
FINITE = Rule("a finite number", lambda v, r: math.isfinite(v))
AXIS = Rule("an axis in [-r, r-1] (r: the input's rank)", lambda v, r: -r <= v <= r - 1)
ONES = Rule("all 1", lambda v, r: all(x == 1 for x in v))
SYMMETRIC = Rule("[h, w, h, w] (both sides of an axis alike, 2-D)",
                 lambda v, r: len(v) == 4 and v[0] == v[2] and v[1] == v[3])
PERM = Rule("a permutation of the input's axes", lambda v, r: sorted(v) == list(range(r)))
NONE = Rule("no value of it (of a Constant, the 'value' tensor alone is read)", lambda v, r: False)
POOL_PADS = ints(BOTH_SIDES, 0, "2 x (r - 2)")
STRIDES = ints(SPATIAL, 1, "r - 2")


@dataclass(frozen=True)
class Attr:
    """An attribute: its kind, its default (None: required or absent), the spec's range and the importer's."""

    kind: str
    default: Any
    spec: Rule
    implemented: Rule | None = None  # None: all the spec allows
    required: bool = False
    since: int = MIN_OPSET  # the first opset the attribute exists in


@dataclass(frozen=True)
class Op:
    """An operator: the counts of inputs and outputs the spec allows, the outputs the importer makes, attributes."""

    inputs: tuple[int, int]
    outputs: tuple[int, int]
    attrs: dict[str, Attr] = field(default_factory=dict)
    made_outputs: int = 1  # outputs past these (MaxPool's Indices, Dropout's mask, ...) may not be read
    outputs_until: tuple[int, tuple[int, int]] | None = None  # (opset, outputs) before that opset

    def output_counts(self, opset: int) -> tuple[int, int]:
        return self.outputs_until[1] if self.outputs_until and opset < self.outputs_until[0] else self.outputs

    def default(self, name: str, rank: int = 0) -> Any:
        d = self.attrs[name].default
        return d(rank) if callable(d) else d


_AUTO_PAD = Attr(STRING, "NOTSET", one_of("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"), one_of("NOTSET"))
_CEIL = Attr(INT, 0, one_of(0, 1))
_KERNEL = Attr(INTS, None, ints(SPATIAL, 1, "r - 2"), required=True)

OPS: dict[str, Op] = {
    "Conv": Op((2, 3), (1, 1), {
        "auto_pad": _AUTO_PAD,
        "dilations": Attr(INTS, lambda r: [1] * (r - 2), ints(SPATIAL, 1, "r - 2")),
        "group": Attr(INT, 1, Rule("an integer >= 1", lambda v, r: v >= 1)),
        "kernel_shape": Attr(INTS, None, ints(SPATIAL, 1, "r - 2")),
        "pads": Attr(INTS, lambda r: [0] * (2 * (r - 2)), POOL_PADS, SYMMETRIC),
        "strides": Attr(INTS, lambda r: [1] * (r - 2), STRIDES),
    }),
    "Gemm": Op((2, 3), (1, 1), {
        "alpha": Attr(FLOAT, 1.0, ANY, FINITE),
        "beta": Attr(FLOAT, 1.0, ANY, FINITE),
        "transA": Attr(INT, 0, one_of(0, 1), one_of(0)),
        "transB": Attr(INT, 0, one_of(0, 1)),
    }),
    "MatMul": Op((2, 2), (1, 1)),
    "Relu": Op((1, 1), (1, 1)),
    "Clip": Op((1, 3), (1, 1)),
    "LeakyRelu": Op((1, 1), (1, 1), {
        "alpha": Attr(FLOAT, 0.01, ANY, Rule("a slope in (0, 1)", lambda v, r: 0 < v < 1)),
    }),
    "Add": Op((2, 2), (1, 1)),
    "Sub": Op((2, 2), (1, 1)),
    "Mul": Op((2, 2), (1, 1)),
    "MaxPool": Op((1, 1), (1, 2), {
        "auto_pad": _AUTO_PAD,
        "ceil_mode": _CEIL,
        "dilations": Attr(INTS, lambda r: [1] * (r - 2), ints(SPATIAL, 1, "r - 2"), ONES),
        "kernel_shape": _KERNEL,
        "pads": Attr(INTS, lambda r: [0] * (2 * (r - 2)), POOL_PADS, SYMMETRIC),
        "storage_order": Attr(INT, 0, one_of(0, 1)),  # the layout of the Indices output, which is not made
        "strides": Attr(INTS, lambda r: [1] * (r - 2), STRIDES),
    }),
    "AveragePool": Op((1, 1), (1, 1), {
        "auto_pad": _AUTO_PAD,
        "ceil_mode": Attr(INT, 0, one_of(0, 1), one_of(0)),
        "count_include_pad": Attr(INT, 0, one_of(0, 1)),
        "dilations": Attr(INTS, lambda r: [1] * (r - 2), ints(SPATIAL, 1, "r - 2"), ONES, since=19),
        "kernel_shape": _KERNEL,
        "pads": Attr(INTS, lambda r: [0] * (2 * (r - 2)), POOL_PADS, SYMMETRIC),
        "strides": Attr(INTS, lambda r: [1] * (r - 2), STRIDES),
    }),
    "GlobalAveragePool": Op((1, 1), (1, 1)),
    "Flatten": Op((1, 1), (1, 1), {
        "axis": Attr(INT, 1, Rule("an axis in [-r, r]", lambda v, r: -r <= v <= r)),
    }),
    "Reshape": Op((2, 2), (1, 1), {
        "allowzero": Attr(INT, 0, one_of(0, 1), since=14),
    }),
    "Transpose": Op((1, 1), (1, 1), {
        "perm": Attr(INTS, lambda r: list(range(r))[::-1], PERM),
    }),
    "Concat": Op((1, (1 << 31) - 1), (1, 1), {  # variadic: protobuf's int32 bound, as onnx.defs gives it
        "axis": Attr(INT, None, AXIS, required=True),
    }),
    "Softmax": Op((1, 1), (1, 1), {
        "axis": Attr(INT, -1, AXIS),
    }),
    "ArgMax": Op((1, 1), (1, 1), {
        "axis": Attr(INT, 0, AXIS),
        "keepdims": Attr(INT, 1, one_of(0, 1)),
        "select_last_index": Attr(INT, 0, one_of(0, 1), one_of(0)),
    }),
    "BatchNormalization": Op((5, 5), (1, 3), outputs_until=(14, (1, 5)), attrs={
        "epsilon": Attr(FLOAT, 1e-5, ANY, FINITE),
        "momentum": Attr(FLOAT, 0.9, ANY),  # used in training only
        "training_mode": Attr(INT, 0, one_of(0, 1), one_of(0), since=14),
    }),
    "Identity": Op((1, 1), (1, 1)),
    "Dropout": Op((1, 3), (1, 2), {
        "seed": Attr(INT, None, ANY),  # used in training only
    }),
    "Constant": Op((0, 0), (1, 1), {
        "value": Attr(TENSOR, None, ANY),
        **{name: Attr(kind, None, ANY, NONE, since=since) for name, kind, since in (
            ("sparse_value", "SPARSE_TENSOR", 13), ("value_float", FLOAT, 13), ("value_floats", "FLOATS", 13),
            ("value_int", INT, 13), ("value_ints", INTS, 13), ("value_string", STRING, 13),
            ("value_strings", "STRINGS", 13))},
    }),
}

SUPPORTED = frozenset(OPS)


def _fmt(v: Any) -> str:
    return repr(v.decode(errors="replace") if isinstance(v, bytes) else v)


def check_node(n: Node, proto_attrs: Sequence[Any], opset: int, rank: int) -> dict[str, Any]:
    """The node's attributes (with their defaults), each checked against the table; `rank` is the first input's
    (0 when it has none). Refuses unknown and mistyped attributes, missing required ones, values outside the
    spec's range and values the importer does not implement."""
    op = OPS[n.op]
    lo, hi = op.inputs
    if not lo <= len(n.inputs) <= hi or any(not v for v in n.inputs[:lo]):
        raise CVMLogicError(f"{n.where()}: {len(n.inputs)} inputs {n.inputs}: the ONNX spec gives {n.op} "
                            f"{lo}{'' if lo == hi else f' to {hi}' if hi < (1 << 31) - 1 else ' or more'}, the first "
                            f"{lo} present")
    outs = op.output_counts(opset)
    if not outs[0] <= len(n.outputs) <= outs[1] or not n.outputs[0]:
        raise CVMLogicError(f"{n.where()}: {len(n.outputs)} outputs: the ONNX spec gives {n.op} "
                            f"{outs[0]} to {outs[1]}, the first named")
    got: dict[str, Any] = {}
    for a in proto_attrs:
        spec = op.attrs.get(a.name)
        if spec is None or spec.since > opset:
            raise CVMLogicError(f"{n.where()}: attribute {a.name!r} is not an attribute of {n.op} at opset {opset} "
                                f"(the ONNX spec gives {sorted(k for k, v in op.attrs.items() if v.since <= opset)})")
        if a.name in got:
            raise CVMLogicError(f"{n.where()}: attribute {a.name!r} given twice")
        if a.ref_attr_name:
            raise CVMLogicError(f"{n.where()}: attribute {a.name!r} refers to a function's attribute: not read")
        kind = _PROTO_KIND.get(a.type, str(a.type))
        if kind != spec.kind:
            raise CVMLogicError(f"{n.where()}: attribute {a.name!r}: expected {spec.kind}, got an attribute of type "
                                f"{kind}")
        got[a.name] = {INT: lambda: int(a.i), FLOAT: lambda: float(a.f), STRING: lambda: a.s.decode(errors="replace"),
                       INTS: lambda: [int(x) for x in a.ints], TENSOR: lambda: a.t}.get(kind, lambda: kind)()
    for name, spec in op.attrs.items():
        if spec.since > opset:
            continue
        if name not in got:
            if spec.required:
                raise CVMLogicError(f"{n.where()}: attribute {name!r} is required by the ONNX spec, and missing")
            continue
        v = got[name]
        if not spec.spec.ok(v, rank):
            raise CVMLogicError(f"{n.where()}: attribute {name!r} is {_fmt(v)}: the ONNX spec allows {spec.spec.text}"
                                f"{f' (rank {rank})' if rank else ''}")
        if spec.implemented is not None and not spec.implemented.ok(v, rank):
            raise CVMLogicError(f"{n.where()}: attribute {name!r} is {_fmt(v)}: the quantizer implements "
                                f"{spec.implemented.text} (no CVM form of the rest)")
    if n.op == "Constant" and len(got) != 1:
        raise CVMLogicError(f"{n.where()}: expected exactly one attribute, the 'value' tensor, got {sorted(got)}")
    for name, spec in op.attrs.items():
        if name not in got and spec.default is not None and spec.since <= opset:
            got[name] = spec.default(rank) if callable(spec.default) else spec.default
    return got


# --- shapes -------------------------------------------------------------------------------------------------


def _refuse(n: Node, text: str) -> CVMLogicError:
    return CVMLogicError(f"{n.where()}: {text}")


def _rank(n: Node, s: tuple[int, ...], ranks: tuple[int, ...], what: str) -> None:
    if len(s) not in ranks:
        raise _refuse(n, f"{what} of shape {list(s)}: expected rank {' or '.join(map(str, ranks))}")


def _windows(n: Node, size: int, k: int, s: int, p: int, d: int, ceil: bool, axis: int) -> int:
    span = d * (k - 1) + 1
    if size + 2 * p < span:
        raise _refuse(n, f"the window {span} on axis {axis} is larger than the padded input {size + 2 * p}")
    out = (-(-(size + 2 * p - span) // s) if ceil else (size + 2 * p - span) // s) + 1
    if n.op == "MaxPool" and (p >= span or (out - 1) * s >= size + p):
        raise _refuse(n, f"a window on axis {axis} lies in the padding alone (pads {p}, kernel {k}, stride {s}): "
                         f"no CVM form")
    return out


def infer(n: Node, shapes: list[tuple[int, ...] | None], consts: dict[str, np.ndarray],
          computed: list[bool]) -> list[tuple[int, ...]]:
    """The shape of every output of `n` whose operands have `shapes` (None: an absent optional input); `computed`
    says which operands depend on the model's input (the batch axis rules hold for those)."""
    a, op = n.attrs, n.op
    x = shapes[0] if shapes else None
    batch = bool(computed and computed[0])

    def const(i: int, what: str) -> np.ndarray:
        if len(n.inputs) <= i or not n.inputs[i]:
            raise _refuse(n, f"expected {what}")
        if computed[i]:
            raise _refuse(n, f"{what} {n.inputs[i]!r} is computed from the model's input: the quantizer implements "
                             f"a constant one only")
        return consts[n.inputs[i]]

    if op in ("Relu", "LeakyRelu", "Identity", "Dropout"):
        if op == "Dropout" and len(n.inputs) > 2 and n.inputs[2]:
            mode = const(2, "the training_mode input")
            if mode.size != 1 or bool(mode.reshape(-1)[0]):
                raise _refuse(n, "training_mode true (random dropout) has no CVM form")
        return [x]  # type: ignore[list-item]
    if op == "Clip":
        for i, what in ((1, "the min input"), (2, "the max input")):
            if len(n.inputs) > i and n.inputs[i]:
                v = const(i, what)
                if v.size != 1:
                    raise _refuse(n, f"{what} {n.inputs[i]!r} of shape {list(v.shape)}: the ONNX spec gives a scalar")
                if v.dtype.kind == "f" and not np.isfinite(v).all():
                    raise _refuse(n, f"{what} {n.inputs[i]!r} is {float(v.reshape(-1)[0])}: expected a finite bound")
        return [x]  # type: ignore[list-item]
    if op in ("Add", "Sub", "Mul"):
        y = shapes[1]
        assert x is not None and y is not None
        try:
            out = tuple(np.broadcast_shapes(x, y))
        except ValueError:
            raise _refuse(n, f"shapes {list(x)} and {list(y)} do not broadcast (the ONNX rules)") from None
        for s, c in zip((x, y), computed):
            if c and (len(s) != len(out) or not s or s[0] != out[0]):
                raise _refuse(n, f"broadcasting {list(x)} with {list(y)} gives {list(out)}: it moves or widens the "
                                 f"batch axis of the computed operand (no CVM form)")
        return [out]
    assert x is not None
    r = len(x)
    if op == "Conv":
        _rank(n, x, (4,), "the input")
        w = const(1, "the weight")
        _rank(n, w.shape, (4,), "the weight")
        g = a["group"]
        if w.shape[1] * g != x[1] or w.shape[0] % g:
            raise _refuse(n, f"weight of shape {list(w.shape)} with group {g} on {x[1]} input channels: expected "
                             f"W[1] x group = C and W[0] a multiple of group")
        if "kernel_shape" in a and list(a["kernel_shape"]) != list(w.shape[2:]):
            raise _refuse(n, f"kernel_shape {a['kernel_shape']} disagrees with the weight's shape {list(w.shape)}")
        if len(n.inputs) > 2 and n.inputs[2]:
            b = const(2, "the bias")
            if b.shape != (w.shape[0],):
                raise _refuse(n, f"bias of shape {list(b.shape)}: expected [{w.shape[0]}]")
        oh, ow = (_windows(n, x[2 + i], w.shape[2 + i], a["strides"][i], a["pads"][i], a["dilations"][i], False, i)
                  for i in range(2))
        return [(x[0], w.shape[0], oh, ow)]
    if op in ("MaxPool", "AveragePool"):
        _rank(n, x, (4,), "the input")
        k = a["kernel_shape"]
        dil = a.get("dilations", [1, 1])
        oh, ow = (_windows(n, x[2 + i], k[i], a["strides"][i], a["pads"][i], dil[i], bool(a["ceil_mode"]), i)
                  for i in range(2))
        if len(n.outputs) > 1 and n.outputs[1]:
            return [(x[0], x[1], oh, ow), (x[0], x[1], oh, ow)]
        return [(x[0], x[1], oh, ow)]
    if op == "GlobalAveragePool":
        _rank(n, x, (4,), "the input")
        return [(x[0], x[1], 1, 1)]
    if op == "Gemm":
        _rank(n, x, (2,), "A")
        b = const(1, "B")
        _rank(n, b.shape, (2,), "B")
        k_b, units = b.shape[::-1] if a["transB"] else b.shape
        if k_b != x[1]:
            raise _refuse(n, f"A of shape {list(x)} times B of shape {list(b.shape)} (transB {a['transB']}): the "
                             f"inner sizes {x[1]} and {k_b} differ")
        if len(n.inputs) > 2 and n.inputs[2]:
            c = const(2, "C")
            if c.ndim > 2 or any(d not in (1, units) for d in c.shape[-1:]) or any(d != 1 for d in c.shape[:-1]):
                raise _refuse(n, f"C of shape {list(c.shape)}: the quantizer implements a bias the same for every "
                                 f"row (shape [], [1], [{units}] or [1, {units}])")
        return [(x[0], units)]
    if op == "MatMul":
        if batch:
            if len(x) != 2:  # the spec's batched MatMul has no CVM dense form
                raise _refuse(n, f"the input of shape {list(x)}: the quantizer implements x of rank 2 (flatten "
                                 f"first)")
            w = const(1, "the matrix")
            _rank(n, w.shape, (2,), "the matrix")
            if w.shape[0] != x[-1]:
                raise _refuse(n, f"{list(x)} times {list(w.shape)}: the inner sizes {x[-1]} and {w.shape[0]} differ")
            return [(*x[:-1], w.shape[1])]
        y = shapes[1]
        assert y is not None
        xs, ys = list(x), list(y)
        if not xs or not ys or xs[-1] != (ys[-2] if len(ys) >= 2 else ys[0]):
            raise _refuse(n, f"{list(x)} times {list(y)}: the inner sizes differ")
        try:
            lead = tuple(np.broadcast_shapes(x[:-2], y[:-2]))
        except ValueError:
            raise _refuse(n, f"{list(x)} times {list(y)}: the batch axes do not broadcast") from None
        rows: tuple[int, ...] = (x[-2],) if len(x) >= 2 else ()
        cols: tuple[int, ...] = (y[-1],) if len(y) >= 2 else ()
        return [lead + rows + cols]
    if op == "Flatten":
        ax = a["axis"] + r if a["axis"] < 0 else a["axis"]
        out = (math.prod(x[:ax]), math.prod(x[ax:]))
        if batch and (ax == 0 or out[0] != x[0]):
            raise _refuse(n, f"axis {a['axis']} of {list(x)} gives {list(out)}: it moves the batch axis (no CVM form)")
        return [out]
    if op == "Reshape":
        spec = const(1, "the shape input")
        if spec.ndim != 1 or spec.dtype.kind not in "iu":
            raise _refuse(n, f"the shape input {n.inputs[1]!r}: expected a 1-D int64 tensor, got shape "
                             f"{list(spec.shape)} of {spec.dtype}")
        want = [int(v) for v in spec]
        if any(v < -1 for v in want) or want.count(-1) > 1 or (a.get("allowzero", 0) and 0 in want and -1 in want):
            raise _refuse(n, f"shape {want}: the ONNX spec allows sizes >= -1, one -1 at most (and no -1 with a 0 "
                             f"under allowzero)")
        if not a.get("allowzero", 0):
            if any(v == 0 and i >= r for i, v in enumerate(want)):
                raise _refuse(n, f"shape {want}: a 0 copies an input axis, and the input {list(x)} has {r}")
            want = [x[i] if v == 0 else v for i, v in enumerate(want)]
        total, known = math.prod(x), math.prod(v for v in want if v != -1)
        if -1 in want:
            if known == 0 or total % known:
                raise _refuse(n, f"shape {want} cannot hold the {total} values of {list(x)}")
            want[want.index(-1)] = total // known
        if math.prod(want) != total:
            raise _refuse(n, f"shape {want} holds {math.prod(want)} values, the input {list(x)} {total}")
        if batch and (not want or want[0] != x[0]):
            raise _refuse(n, f"shape {want} of {list(x)}: it moves the batch axis (the first stays {x[0]}): no CVM "
                             f"form")
        return [tuple(want)]
    if op == "Transpose":
        perm = a["perm"]
        if batch and perm and perm[0] != 0:
            raise _refuse(n, f"perm {perm} moves the batch axis (the first stays first in the quantizer)")
        return [tuple(x[p] for p in perm)]
    if op == "Concat":
        ax = a["axis"] % r
        if any(computed) and ax == 0:
            raise _refuse(n, f"axis {a['axis']} is the batch axis: the quantizer concatenates along a later one")
        for s in shapes[1:]:
            assert s is not None
            if len(s) != r or any(s[i] != x[i] for i in range(r) if i != ax):
                raise _refuse(n, f"shapes {[list(t or ()) for t in shapes]}: expected one rank and equal sizes "
                                 f"but on axis {ax}")
        return [tuple(sum(s[i] for s in shapes if s is not None) if i == ax else x[i] for i in range(r))]
    if op in ("Softmax", "ArgMax") and batch and r < 2:
        raise _refuse(n, f"the input of shape {list(x)} has the batch axis alone: no CVM form")
    if op in ("Softmax", "ArgMax") and batch and a["axis"] % r == 0:
        raise _refuse(n, f"axis {a['axis']} is the batch axis: the quantizer implements {op} along a later one")
    if op == "Softmax":
        return [x]
    if op == "ArgMax":
        ax = a["axis"] % r
        return [tuple(1 if i == ax else d for i, d in enumerate(x)) if a["keepdims"]
                else tuple(d for i, d in enumerate(x) if i != ax)]
    if op == "BatchNormalization":
        _rank(n, x, (2, 3, 4, 5), "the input")
        for i, what in enumerate(("scale", "B", "mean", "var"), 1):
            v = const(i, f"the {what} input")
            if v.shape != (x[1],):
                raise _refuse(n, f"the {what} input {n.inputs[i]!r} of shape {list(v.shape)}: expected [{x[1]}]")
        var = consts[n.inputs[4]].astype(np.float64) + a["epsilon"]
        if not np.all(var > 0):
            raise _refuse(n, f"var + epsilon is {float(var.min())} for a channel: expected > 0")
        if len(n.outputs) > 1 and any(n.outputs[1:]):
            raise _refuse(n, "training mode (more than one output) has no CVM form")
        return [x]
    raise _refuse(n, "the operator has no CVM form in the quantizer")  # pragma: no cover (the table holds every op)


# --- memory ---------------------------------------------------------------------------------------------------


def temporary_elements(n: Node, shapes: list[tuple[int, ...] | None], outs: list[tuple[int, ...]]) -> int:
    """Elements the float interpreter allocates for `n` besides its outputs (an upper bound): a Conv's unfolded
    windows twice (`conv_float`), a padded copy of a pool's input, and room for a few copies of the operands."""
    ins = sum(math.prod(s) for s in shapes if s is not None)
    out = sum(math.prod(s) for s in outs)
    extra = 0
    if n.op == "Conv" and shapes[0] is not None and shapes[1] is not None:
        x, w = shapes[0], shapes[1]
        extra = 2 * x[0] * math.prod(outs[0][2:]) * math.prod(w[1:]) * n.attrs["group"]
        extra += x[0] * x[1] * (x[2] + 2 * n.attrs["pads"][0]) * (x[3] + 2 * n.attrs["pads"][1])
    elif n.op in ("MaxPool", "AveragePool") and shapes[0] is not None:
        x = shapes[0]
        extra = x[0] * x[1] * (x[2] + 2 * n.attrs["pads"][0] + n.attrs["strides"][0]) * \
            (x[3] + 2 * n.attrs["pads"][1] + n.attrs["strides"][1])
    return extra + 4 * (ins + out)
