"""A float ONNX model as the quantizer reads it: one input of a static shape, constants folded, BatchNormalization
folded into the Conv before it (or turned into a Mul and an Add), Gemm and MatMul by a constant as one `Dense`
node; and a numpy interpreter of that graph (the float model the calibration measures).

Every operator outside `SUPPORTED` is refused at load with the node's name and operator: the quantizer drops
nothing silently.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cvmc.errors import CVMLogicError, CVMRuntimeError

MIN_OPSET = 13

# The operators the quantizer gives a CVM form (after folding); Softmax and ArgMax only where they make a head.
SUPPORTED = frozenset({
    "Conv", "Gemm", "MatMul", "Relu", "Clip", "LeakyRelu", "Add", "Sub", "Mul", "MaxPool", "AveragePool",
    "GlobalAveragePool", "Flatten", "Reshape", "Transpose", "Concat", "Softmax", "ArgMax", "BatchNormalization",
    "Identity", "Dropout", "Constant",
})


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


@dataclass
class FloatGraph:
    """The model after folding: nodes in topological order over one input; `consts` holds every constant value."""

    input_name: str
    input_shape: tuple[int, ...]
    nodes: list[Node]
    consts: dict[str, np.ndarray]
    outputs: list[str]
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def consumers(self, value: str) -> list[Node]:
        return [n for n in self.nodes if value in n.inputs]


def _attrs(node: Any) -> dict[str, Any]:
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _static_shape(value: Any) -> tuple[int, ...]:
    t = value.type.tensor_type
    if not t.HasField("shape"):
        raise CVMLogicError(f"input {value.name!r}: the model gives it no shape; export it with a fixed shape")
    dims = []
    for k, d in enumerate(t.shape.dim):
        if not d.HasField("dim_value") or d.dim_value <= 0:
            what = f"the symbol {d.dim_param!r}" if d.HasField("dim_param") else "no size"
            raise CVMLogicError(f"input {value.name!r}: dimension {k} is dynamic ({what}); a CVM model has one fixed "
                                f"input shape: export the model with fixed dimensions (no dynamic_axes)")
        dims.append(int(d.dim_value))
    return tuple(dims)


def load(model: str | os.PathLike[str] | bytes | Any) -> FloatGraph:
    """Read an ONNX model (a path, its bytes or a ModelProto) into a FloatGraph, folded and shape-inferred."""
    import onnx
    from onnx import numpy_helper

    if isinstance(model, str | os.PathLike):
        with open(model, "rb") as f:  # a missing file is an OSError, as for every tool
            model = f.read()
    try:
        proto = onnx.load_from_string(bytes(model)) if isinstance(model, bytes | bytearray) else model
    except Exception as e:  # bytes that are not ONNX
        raise CVMRuntimeError(f"cannot read the ONNX model: {e}") from None
    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < MIN_OPSET:
        raise CVMLogicError(f"the model uses ONNX opset {opset}; the quantizer reads opset {MIN_OPSET} and later")
    g = proto.graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    inputs = [v for v in g.input if v.name not in consts]
    if len(inputs) != 1:
        raise CVMLogicError(f"expected a model with one input, got {len(inputs)}: {[v.name for v in inputs]}")
    elem = inputs[0].type.tensor_type.elem_type
    if elem != onnx.TensorProto.FLOAT:
        raise CVMLogicError(f"input {inputs[0].name!r}: expected a float32 input, got ONNX type "
                            f"{onnx.TensorProto.DataType.Name(elem)}")
    shape = _static_shape(inputs[0])
    nodes = []
    for k, n in enumerate(g.node):
        node = Node(n.name or f"{n.op_type}_{k}", n.op_type, list(n.input), list(n.output), _attrs(n))
        if n.domain not in ("", "ai.onnx") or node.op not in SUPPORTED:
            raise CVMLogicError(f"{node.where()}: the operator has no CVM form in the quantizer (supported: "
                                f"{', '.join(sorted(SUPPORTED - {'Constant', 'Identity', 'Dropout'}))})")
        nodes.append(node)
    fg = FloatGraph(inputs[0].name, shape, nodes, consts, [o.name for o in g.output])
    _fold_constants(fg)
    _fold_batch_norm(fg)
    _dense(fg)
    fg.shapes = {k: v.shape for k, v in run(fg, np.zeros(shape, np.float32)).items()}
    return fg


def _fold_constants(fg: FloatGraph) -> None:
    """Evaluate every node whose inputs are all constants (Constant, Transpose or Reshape of a weight, ...)."""
    kept = []
    for n in fg.nodes:
        if n.op == "Constant":
            from onnx import numpy_helper

            if "value" not in n.attrs:
                raise CVMLogicError(f"{n.where()}: only the 'value' form of Constant is read")
            fg.consts[n.outputs[0]] = numpy_helper.to_array(n.attrs["value"])
        elif all(i == "" or i in fg.consts for i in n.inputs):
            vals = _eval(n, [fg.consts.get(i) if i else None for i in n.inputs], fg)
            for name, v in zip(n.outputs, vals):
                fg.consts[name] = v
        else:
            kept.append(n)
    fg.nodes = kept


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
        shape = (1, -1) + (1,) * 2
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
            bias = None if c is None else np.broadcast_to(c * a.get("beta", 1.0), (w.shape[0],))
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


def _eval(n: Node, xs: list[Any], fg: FloatGraph) -> list[np.ndarray]:
    """One node on float (or constant) values."""
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
        ax = a.get("axis", 1) % max(x.ndim, 1)
        return [x.reshape(int(np.prod(x.shape[:ax])), -1)]
    if op == "Reshape":
        shape = [int(v) for v in xs[1]]
        shape = [x.shape[i] if v == 0 and not a.get("allowzero", 0) else v for i, v in enumerate(shape)]
        if fg.input_shape and shape and x.ndim and shape[0] == fg.input_shape[0] != x.shape[0]:
            shape[0] = x.shape[0]  # a calibration batch larger than the model's: the batch stays first
        return [x.reshape(shape)]
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


def run(fg: FloatGraph, x: np.ndarray, batch: int = 64) -> dict[str, np.ndarray]:
    """Every value of the float model on inputs `x` (a stack along the first axis, `batch` at a time)."""
    parts: list[dict[str, np.ndarray]] = []
    x = np.asarray(x, np.float32)
    for i in range(0, max(len(x), 1), batch):
        env: dict[str, np.ndarray] = {fg.input_name: x[i:i + batch]}
        for n in fg.nodes:
            vals = _eval(n, [None if not v else env[v] if v in env else fg.consts[v] for v in n.inputs], fg)
            for name, v in zip(n.outputs, vals):
                env[name] = np.asarray(v, np.float32) if v.dtype.kind == "f" else v
        parts.append(env)
    if len(parts) == 1:
        return parts[0]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
