"""A float ONNX model as the quantizer reads it: one input of a static shape, constants folded, BatchNormalization
folded into the Conv before it (or turned into a Mul and an Add), Gemm and MatMul by a constant as one `Dense`
node; and a numpy interpreter of that graph (the float model the calibration measures).

Every operator outside `SUPPORTED`, and every attribute or operand form the importer does not implement exactly
as the ONNX spec says, is refused at load with the node's name (`onnx_spec`: one table per operator): the quantizer
drops nothing silently. The files it reads are bounded (`inputs`), and every allocation the model's declared
shapes imply (its initializers, each constant folded, the float model's values) is checked against a memory
budget (`max_memory`) before it is made.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cvmc.errors import CVMLogicError
from cvmc.runtime.quantize import inputs
from cvmc.runtime.quantize.onnx_spec import (
    MAX_OPSET,
    MIN_OPSET,
    OPS,
    SUPPORTED,
    Node,
    check_node,
    infer,
    temporary_elements,
)

__all__ = ["MAX_OPSET", "MIN_OPSET", "SUPPORTED", "FloatGraph", "Node", "load", "run"]

log = logging.getLogger(__name__)
RUN_BATCH = 64  # rows of the input `run` computes at once


@dataclass
class FloatGraph:
    """The model after folding: nodes in topological order over one input; `consts` holds every constant value.
    `row_bytes` and `temp_row_bytes` bound the float interpreter's memory per input row (the values it keeps, the
    temporaries of its largest node), `const_bytes` the constants' (`run_bytes`)."""

    input_name: str
    input_shape: tuple[int, ...]
    nodes: list[Node]
    consts: dict[str, np.ndarray]
    outputs: list[str]
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    row_bytes: int = 0
    temp_row_bytes: int = 0
    const_bytes: int = 0

    def consumers(self, value: str) -> list[Node]:
        return [n for n in self.nodes if value in n.inputs]

    def run_bytes(self, rows: int) -> int:
        """An upper bound of what `run` on `rows` input rows allocates: every value of every row twice (the
        batches' values, then joined) and the temporaries of one batch."""
        return 2 * rows * self.row_bytes + min(rows, RUN_BATCH) * self.temp_row_bytes


def _static_shape(value: Any) -> tuple[int, ...]:
    t = value.type.tensor_type
    if not t.HasField("shape"):
        raise CVMLogicError(f"input {value.name!r}: the model gives it no shape; export it with a fixed shape")
    dims = []
    for k, d in enumerate(t.shape.dim):
        if d.HasField("dim_value") and d.dim_value <= 0:
            raise CVMLogicError(f"input {value.name!r}: dimension {k} is {d.dim_value}: expected a size >= 1")
        if not d.HasField("dim_value"):
            what = f"the symbol {d.dim_param!r}" if d.HasField("dim_param") else "no size"
            raise CVMLogicError(f"input {value.name!r}: dimension {k} is dynamic ({what}); a CVM model has one fixed "
                                f"input shape: export the model with fixed dimensions (no dynamic_axes)")
        dims.append(int(d.dim_value))
    if not dims:
        raise CVMLogicError(f"input {value.name!r}: a scalar input has no batch axis; expected rank >= 1")
    return tuple(dims)


def _refuse_unsupported(nodes: Any) -> None:
    """Every operator of the model the quantizer has no CVM form for, in one CVMLogicError naming the first node
    and each such operator with its nodes (an LSTM export is refused as the LSTM it is, not by its first Shape)."""
    found: dict[str, list[str]] = {}
    first = None
    for k, p in enumerate(nodes):
        if p.domain not in ("", "ai.onnx") or p.op_type not in SUPPORTED:
            op = p.op_type if p.domain in ("", "ai.onnx") else f"{p.domain}.{p.op_type}"
            found.setdefault(op, []).append(p.name or f"{p.op_type}_{k}")
            first = first or Node(found[op][-1], p.op_type, [], [])
    if first is None:
        return
    listed = "; ".join(f"{op}: {len(names)} node{'s' * (len(names) > 1)} ({', '.join(map(repr, names[:3]))}"
                       f"{', ...' if len(names) > 3 else ''})" for op, names in found.items())
    raise CVMLogicError(f"{first.where()}: the operator has no CVM form in the quantizer; the "
                        f"model's operators without one: {listed} (supported: "
                        f"{', '.join(sorted(SUPPORTED - {'Constant', 'Identity', 'Dropout'}))})")


def load(model: str | os.PathLike[str] | bytes | Any, max_memory: int = inputs.DEFAULT_MAX_MEMORY) -> FloatGraph:
    """Read an ONNX model (a path, its bytes or a ModelProto) into a FloatGraph, folded and shape-inferred; every
    node checked against the operator tables (`onnx_spec`), every allocation against `max_memory` bytes first."""
    budget = inputs.Budget(max_memory)
    proto, base, name = inputs.read_model(model, budget)
    inputs.check_names(proto)
    opsets = [o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")]
    opset = opsets[0] if opsets else 0
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise CVMLogicError(f"the model uses ONNX opset {opset}; the quantizer reads opset {MIN_OPSET} and later "
                            f"(to {MAX_OPSET})")
    g = proto.graph
    if len(g.sparse_initializer):
        raise CVMLogicError(f"initializer {g.sparse_initializer[0].values.name!r}: a sparse initializer is not read")
    cache: dict[str, bytes] = {}
    consts: dict[str, np.ndarray] = {}
    const_bytes = 0
    for t in g.initializer:
        if t.name in consts or not t.name:
            raise CVMLogicError(f"initializer {t.name!r}: {'named twice' if t.name else 'expected a name'}")
        consts[t.name] = a = inputs.tensor_array(t, f"initializer {t.name!r}", base, budget, cache)
        const_bytes += a.nbytes
        budget.check(const_bytes, "the model's initializers")
    graph_inputs = [v for v in g.input if v.name not in consts]
    if len(graph_inputs) != 1:
        raise CVMLogicError(f"expected a model with one input, got {len(graph_inputs)}: "
                            f"{[v.name for v in graph_inputs]}")
    x_in = graph_inputs[0]
    elem = x_in.type.tensor_type.elem_type
    if elem != 1:  # FLOAT
        raise CVMLogicError(f"input {x_in.name!r}: expected a float32 input, got ONNX type {inputs._type_name(elem)}")
    shape = _static_shape(x_in)
    budget.check(4 * math.prod(shape), f"input {x_in.name!r} of shape {list(shape)}")
    fg = FloatGraph(x_in.name, shape, [], consts, [o.name for o in g.output])
    fg.shapes[x_in.name] = shape
    known: dict[str, tuple[int, ...]] = {k: v.shape for k, v in consts.items()}
    known[x_in.name] = shape
    unmade: dict[str, str] = {}  # outputs the importer does not make (MaxPool's Indices, ...): who names them
    indices: dict[str, str] = {}  # the computed outputs of ArgMax (int64 indices): a head only
    value_bytes = 4 * math.prod(shape)
    temp_bytes = 0
    _refuse_unsupported(g.node)
    for k, p in enumerate(g.node):
        n = Node(p.name or f"{p.op_type}_{k}", p.op_type, list(p.input), list(p.output))
        for v in n.inputs:
            if v in indices:
                raise CVMLogicError(f"{n.where()}: reads {v!r}, the indices {indices[v]} makes: the quantizer gives "
                                    f"ArgMax a CVM form only as the model's output")
            if v in unmade:
                raise CVMLogicError(f"{n.where()}: reads {v!r}, {unmade[v]}, which the quantizer does not make")
            if v and v not in known:
                raise CVMLogicError(f"{n.where()}: reads {v!r}, which no earlier node, initializer or input makes "
                                    f"(the nodes must be in topological order, without cycles)")
        for v in n.outputs:
            if v and (v in known or v in unmade or n.outputs.count(v) > 1):
                raise CVMLogicError(f"{n.where()}: writes {v!r}, which is already defined")
        rank = len(known[n.inputs[0]]) if n.inputs and n.inputs[0] else 0
        n.attrs = check_node(n, p.attribute, opset, rank)
        if n.op == "Constant":
            a = inputs.tensor_array(n.attrs["value"], f"{n.where()}: its value", base, budget, cache)
            const_bytes += a.nbytes
            budget.check(const_bytes, f"{n.where()}: its value with the model's other constants")
            consts[n.outputs[0]] = a
            known[n.outputs[0]] = a.shape
            continue
        in_shapes = [known[v] if v else None for v in n.inputs]
        computed = [bool(v) and v not in consts for v in n.inputs]
        outs = infer(n, in_shapes, consts, computed)
        for s in outs:
            budget.check_shape(s, f"{n.where()}: its output")
        made = OPS[n.op].made_outputs
        for i, v in enumerate(n.outputs[made:], made):
            if v:
                unmade[v] = f"output {i} of {n.where()}"
        size = sum(math.prod(s) for s in outs[:made])
        if not all(math.prod(s) for s in outs[:made]):
            raise CVMLogicError(f"{n.where()}: its output of shape {list(outs[0])} holds no values: no CVM form")
        temp = temporary_elements(n, in_shapes, outs[:made])
        if not any(computed):  # folded now: every value at most 8 bytes (numpy's float64 promotion)
            budget.check(const_bytes + 8 * (size + temp), f"{n.where()}: folding its constant operands")
            vals = _eval(n, [consts.get(v) if v else None for v in n.inputs], fg, [list(s) for s in outs])
            for v, val in zip(n.outputs[:made], vals):
                consts[v] = np.asarray(val)
                const_bytes += consts[v].nbytes
            for v, s in zip(n.outputs, outs):
                known[v] = s
            continue
        width = 8 if n.op == "ArgMax" else 4
        value_bytes += width * size
        temp_bytes = max(temp_bytes, width * temp)
        budget.check(const_bytes + value_bytes + temp_bytes, f"{n.where()}: the float model's values up to it "
                     f"(on one batch of shape {list(shape)})")
        for v, s in zip(n.outputs, outs):
            known[v] = s
        fg.shapes.update(zip(n.outputs[:made], outs[:made]))
        if n.op == "ArgMax":
            indices[n.outputs[0]] = n.where()
        fg.nodes.append(n)
    cache.clear()
    for o in fg.outputs:
        if o in unmade:
            raise CVMLogicError(f"output {o!r}: {unmade[o]}, which the quantizer does not make")
        if o == x_in.name or o in consts or o not in known or fg.outputs.count(o) > 1:
            what = "is the input itself" if o == x_in.name else "is a constant" if o in consts else \
                "is named twice" if o in known else "is made by no node"
            raise CVMLogicError(f"output {o!r} {what}: expected each output computed by a node from the input")
    if not fg.outputs:
        raise CVMLogicError("the model has no output")
    fg.const_bytes = const_bytes
    fg.row_bytes = -(-value_bytes // shape[0])
    fg.temp_row_bytes = -(-temp_bytes // shape[0])
    _fold_batch_norm(fg)
    _dense(fg)
    for n in fg.nodes:
        for v in n.inputs:
            c = fg.consts.get(v)
            if c is not None and c.dtype.kind == "f" and not np.all(np.isfinite(c)):
                raise CVMLogicError(f"{n.where()}: the constant {v!r} holds values that are not finite (inf or NaN): "
                                    f"no CVM form")
    budget.check(fg.const_bytes + fg.run_bytes(shape[0]), f"the float model on one input of shape {list(shape)}")
    inferred = fg.shapes
    with np.errstate(all="ignore"):  # overflow is refused by name below, not warned of
        zeros = run(fg, np.zeros(shape, np.float32))
    check_finite(fg, zeros, "an input of zeros")
    fg.shapes = {k: v.shape for k, v in zeros.items()}
    assert all(fg.shapes[k] == s for k, s in inferred.items() if k in fg.shapes), "the shape inference disagrees"
    log.info("read %s: opset %d, %d nodes after folding, input %s %s", name, opset, len(fg.nodes), fg.input_name,
             list(shape))
    return fg


def _fold_batch_norm(fg: FloatGraph) -> None:
    """Conv -> BatchNormalization (the Conv's only reader) becomes one Conv; any other BatchNormalization a Mul by
    a per-channel constant and an Add of one."""
    out = []
    for n in fg.nodes:
        if n.op != "BatchNormalization":
            out.append(n)
            continue
        if len(n.outputs) > 1 and any(n.outputs[1:]):
            raise CVMLogicError(f"{n.where()}: training mode (more than one output) has no CVM form")
        gamma, beta, mean, var = (fg.consts.get(i) for i in n.inputs[1:5])
        if any(v is None for v in (gamma, beta, mean, var)):
            raise CVMLogicError(f"{n.where()}: expected constant scale, bias, mean and variance")
        mul = (gamma / np.sqrt(var + n.attrs.get("epsilon", 1e-5))).astype(np.float32)
        add = (beta - mean * mul).astype(np.float32)
        prev = next((m for m in out if n.inputs[0] in m.outputs), None)
        if prev is not None and prev.op == "Conv" and len(fg.consumers(n.inputs[0])) == 1 \
                and n.inputs[0] not in fg.outputs:
            w = fg.consts[prev.inputs[1]]
            b = fg.consts[prev.inputs[2]] if len(prev.inputs) > 2 and prev.inputs[2] else np.zeros(w.shape[0])
            wname, bname = prev.name + "/folded_weight", prev.name + "/folded_bias"
            fg.consts[wname] = (w * mul.reshape(-1, 1, 1, 1)).astype(np.float32)
            fg.consts[bname] = (b * mul + add).astype(np.float32)
            prev.inputs = [prev.inputs[0], wname, bname]
            prev.outputs = [n.outputs[0]]
            continue
        shape = (1, -1) + (1,) * (len(fg.shapes[n.inputs[0]]) - 2)
        fg.consts[n.name + "/mul"] = mul.reshape(shape)
        fg.consts[n.name + "/add"] = add.reshape(shape)
        mid = n.name + "/scaled"
        out.append(Node(n.name + "/mul", "Mul", [n.inputs[0], n.name + "/mul"], [mid]))
        out.append(Node(n.name, "Add", [mid, n.name + "/add"], [n.outputs[0]]))
    fg.nodes = out


def _dense(fg: FloatGraph) -> None:
    """Gemm, and MatMul by a 2-D constant, as `Dense`: inputs [x, weight (units, K), bias or ""], y = x W^T + b."""
    for n in fg.nodes:
        if n.op == "Gemm":
            a = n.attrs
            w = fg.consts.get(n.inputs[1])
            if a.get("transA", 0) or w is None or n.inputs[0] in fg.consts:
                raise CVMLogicError(f"{n.where()}: expected x (not transposed) times a constant B")
            w = (w if a.get("transB", 0) else w.T) * a.get("alpha", 1.0)
            c = fg.consts.get(n.inputs[2]) if len(n.inputs) > 2 and n.inputs[2] else None
            if len(n.inputs) > 2 and n.inputs[2] and c is None:
                raise CVMLogicError(f"{n.where()}: expected a constant C")
            bias = None if c is None else np.broadcast_to((c * a.get("beta", 1.0)).reshape(-1), (w.shape[0],))
        elif n.op == "MatMul":
            w = fg.consts.get(n.inputs[1])
            if w is None or w.ndim != 2 or n.inputs[0] in fg.consts:
                raise CVMLogicError(f"{n.where()}: expected x times a constant 2-D matrix")
            w, bias = w.T, None
        else:
            continue
        wname = n.name + "/dense_weight"
        fg.consts[wname] = np.ascontiguousarray(w, dtype=np.float32)
        inputs = [n.inputs[0], wname, ""]
        if bias is not None:
            fg.consts[n.name + "/dense_bias"] = np.ascontiguousarray(bias, dtype=np.float32)
            inputs[2] = n.name + "/dense_bias"
        n.op, n.inputs, n.attrs = "Dense", inputs, {}


# --- the float interpreter ---------------------------------------------------------------------------------


def pads_2d(n: Node) -> tuple[int, int]:
    """ONNX pads [top, left, bottom, right] as CVM's symmetric (ph, pw); asymmetric pads are refused."""
    if n.attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise CVMLogicError(f"{n.where()}: auto_pad has no CVM form; export with explicit pads")
    p = list(n.attrs.get("pads", [0, 0, 0, 0]))
    if len(p) != 4 or p[0] != p[2] or p[1] != p[3]:
        raise CVMLogicError(f"{n.where()}: pads {p}: CVM pads both sides of an axis alike (2-D, symmetric)")
    return p[0], p[1]


def _windows(x: np.ndarray, kernel: tuple[int, int], strides: tuple[int, int], pads: tuple[int, int],
             dil: tuple[int, int], fill: float, extra: tuple[int, int] = (0, 0)) -> np.ndarray:
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, strides, pads, dil
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph + extra[0]), (pw, pw + extra[1])), constant_values=fill)
    win = np.lib.stride_tricks.sliding_window_view(xp, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    return win[:, :, ::sh, ::sw, ::dh, ::dw]  # (N, C, OH, OW, KH, KW)


def conv_float(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, strides, pads, dil, groups: int) -> np.ndarray:
    n, c = x.shape[:2]
    oc, icg, kh, kw = w.shape
    win = _windows(x, (kh, kw), strides, pads, dil, 0.0)
    oh, ow = win.shape[2:4]
    cols = win.reshape(n, groups, icg, oh, ow, kh, kw).transpose(1, 0, 3, 4, 2, 5, 6).reshape(
        groups, n * oh * ow, icg * kh * kw)
    wg = w.reshape(groups, oc // groups, icg * kh * kw).transpose(0, 2, 1)
    y = np.matmul(cols, wg).reshape(groups, n, oh, ow, oc // groups).transpose(1, 0, 4, 2, 3)
    y = y.reshape(n, oc, oh, ow)
    return y if b is None else y + b.reshape(1, oc, 1, 1)


def pool_geometry(n: Node) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], bool]:
    k = tuple(n.attrs["kernel_shape"])
    if len(k) != 2:
        raise CVMLogicError(f"{n.where()}: expected a 2-D pool, got kernel_shape {list(k)}")
    if any(d != 1 for d in n.attrs.get("dilations", [1, 1])):
        raise CVMLogicError(f"{n.where()}: dilated pooling has no CVM form")
    return k, tuple(n.attrs.get("strides", [1, 1])), pads_2d(n), bool(n.attrs.get("ceil_mode", 0))


def _pool(n: Node, x: np.ndarray) -> np.ndarray:
    k, s, p, ceil = pool_geometry(n)
    extra = (0, 0)
    if ceil:
        extra = tuple((s[i] - (x.shape[2 + i] + 2 * p[i] - k[i]) % s[i]) % s[i] for i in range(2))
    if n.op == "MaxPool":
        return _windows(x, k, s, p, (1, 1), -np.inf, extra).max(axis=(4, 5))
    if ceil or (any(p) and not n.attrs.get("count_include_pad", 0)):
        raise CVMLogicError(f"{n.where()}: an average over a varying count (ceil_mode, or pads without "
                            f"count_include_pad) has no CVM form")
    return _windows(x, k, s, p, (1, 1), 0.0).mean(axis=(4, 5))


def _eval(n: Node, xs: list[Any], fg: FloatGraph, outs: list[list[int]] | None = None) -> list[np.ndarray]:
    """One node on float values (a stack of input rows), or on constants: then `outs` gives the outputs' shapes."""
    a, x = n.attrs, xs[0]
    op = n.op
    if op in ("Identity", "Dropout"):
        return [x]
    if op == "Conv":
        w = xs[1]
        pads = pads_2d(n)
        return [conv_float(x, w, xs[2] if len(xs) > 2 else None, tuple(a.get("strides", [1, 1])), pads,
                           tuple(a.get("dilations", [1, 1])), a.get("group", 1))]
    if op == "Dense":
        y = x @ xs[1].T
        return [y if xs[2] is None else y + xs[2]]
    if op == "Gemm":  # constant-only Gemm
        A = x.T if a.get("transA", 0) else x
        B = xs[1].T if a.get("transB", 0) else xs[1]
        y = a.get("alpha", 1.0) * (A @ B)
        return [y if len(xs) < 3 or xs[2] is None else y + a.get("beta", 1.0) * xs[2]]
    if op == "MatMul":
        return [x @ xs[1]]
    if op == "Relu":
        return [np.maximum(x, 0)]
    if op == "Clip":
        lo = xs[1] if len(xs) > 1 and xs[1] is not None else -np.inf
        hi = xs[2] if len(xs) > 2 and xs[2] is not None else np.inf
        return [np.clip(x, lo, hi)]
    if op == "LeakyRelu":
        return [np.where(x >= 0, x, x * a.get("alpha", 0.01))]
    if op == "Add":
        return [x + xs[1]]
    if op == "Sub":
        return [x - xs[1]]
    if op == "Mul":
        return [x * xs[1]]
    if op in ("MaxPool", "AveragePool"):
        return [_pool(n, x)]
    if op == "GlobalAveragePool":
        return [x.mean(axis=(2, 3), keepdims=True)]
    if op == "Flatten":
        ax = a.get("axis", 1)
        ax = ax + x.ndim if ax < 0 else ax
        return [x.reshape(math.prod(x.shape[:ax]), math.prod(x.shape[ax:]))]
    if op == "Reshape":
        if outs is not None:  # a constant: the shape inferred (onnx_spec.infer), -1 and 0 resolved
            return [x.reshape(outs[0])]
        # a computed value keeps its batch axis first (onnx_spec.infer): the stack's rows, then the model's shape
        return [x.reshape((x.shape[0], *fg.shapes[n.outputs[0]][1:]))]
    if op == "Transpose":
        return [np.transpose(x, a.get("perm"))]
    if op == "Concat":
        return [np.concatenate(xs, axis=a["axis"])]
    if op == "Softmax":
        e = np.exp(x - x.max(axis=a.get("axis", -1), keepdims=True))
        return [e / e.sum(axis=a.get("axis", -1), keepdims=True)]
    if op == "ArgMax":
        y = np.asarray(np.argmax(x, axis=a.get("axis", 0)))
        return [np.expand_dims(y, a.get("axis", 0)) if a.get("keepdims", 1) else y]
    if op == "BatchNormalization":
        g, b, m, v = xs[1:5]
        shape = (1, -1) + (1,) * (x.ndim - 2)
        return [(x - m.reshape(shape)) / np.sqrt(v.reshape(shape) + a.get("epsilon", 1e-5)) * g.reshape(shape)
                + b.reshape(shape)]
    raise CVMLogicError(f"{n.where()}: the operator has no CVM form in the quantizer")


def check_finite(fg: FloatGraph, values: dict[str, np.ndarray], what: str) -> None:
    """Refuse a float model whose values on `what` are not finite (weights near the float's limits overflow), by
    the first node that makes one."""
    for n in fg.nodes:
        for v in n.outputs:
            a = values.get(v)
            if a is not None and a.dtype.kind == "f" and not np.all(np.isfinite(a)):
                raise CVMLogicError(f"{n.where()}: the float model's values are not finite (inf or NaN) on {what}: no "
                                    f"CVM form")


def run_steps(fg: FloatGraph, x: np.ndarray, batch: int = 64) -> int:
    """How many steps `run` reports to its `progress`: one per node per group of `batch` inputs."""
    return len(range(0, max(len(x), 1), batch)) * len(fg.nodes)


def run(fg: FloatGraph, x: np.ndarray, batch: int = 64,
        progress: Callable[[int], None] | None = None) -> dict[str, np.ndarray]:
    """Every value of the float model on inputs `x` (a stack along the first axis, `batch` at a time);
    `progress(1)` after each node of each group (`run_steps` of them)."""
    parts: list[dict[str, np.ndarray]] = []
    x = np.asarray(x, np.float32)
    for i in range(0, max(len(x), 1), batch):
        env: dict[str, np.ndarray] = {fg.input_name: x[i:i + batch]}
        for n in fg.nodes:
            vals = _eval(n, [None if not v else env[v] if v in env else fg.consts[v] for v in n.inputs], fg)
            for name, v in zip(n.outputs, vals):
                env[name] = np.asarray(v, np.float32) if v.dtype.kind == "f" else v
            if progress is not None:
                progress(1)
        parts.append(env)
    if len(parts) == 1:
        return parts[0]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
