"""The quantized CVM graph of a FloatGraph, built with `CvmBuilder`.

Every quantized value is an integer tensor and a float scale (float value ~= integer x scale). Scales change only
by powers of two (`cvm_right_shift`), by a weight's scale (a Conv or Dense multiplies the scales of its data and
weight) or by a known divisor (an average's window): a requantization is a shift, never a float multiply. Where
two values of unrelated scales meet (Add, Sub, Concat, LeakyRelu's slope, per-channel weights) one is brought to
the other's scale by an integer multiplier of at most 14 bits and a shift (`broadcast_mul`, `cvm_right_shift`).
Data of a Conv or Dense never negative on the calibration set is unsigned: x - 127 on 255 steps (`_data8`).

Precisions follow the CVM rules (`cvm_rules.infer`): a Conv or Dense reads data and weights of at most 8 bits and
its accumulation has p_data + p_weight + bitlen(K) bits (+1 with a bias): every partial sum of any input within
the declared precisions fits in int32 when that sum is at most 32, so a layer whose precision would pass 32 is
refused by name (proved from the precisions, as the verifier proves it, never from the calibration). Values keep
their full precision until an operator needs fewer bits (8 for a Conv or Dense, 16 for the operands of an Add):
only then is a shift chosen, from the calibration data (`choose_shift`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cvmc.dialects import cvm_rules as rules
from cvmc.errors import CVMError, CVMLogicError
from cvmc.runtime.builder import CvmBuilder, Tensor
from cvmc.runtime.quantize.onnx_graph import FloatGraph, Node, conv_float, pads_2d, pool_geometry

WEIGHT_PRECISION = 8  # what conv2d and dense accept (cvm_rules._conv2d_prec, _dense_prec)
DATA_PRECISION = 8
WIDE_PRECISION = 16  # operands of an Add, Sub, Concat or Mul: two of them fit int32 with room
MULTIPLIER_BITS = 14  # the integer multiplier between unrelated scales (relative error <= 2^-14)
METHODS = ("mse", "minmax")
ZERO_POINT = 127  # unsigned 8-bit data [0, 254] is stored as x - 127
MSE_SAMPLES = 1 << 18


@dataclass
class QValue:
    """A quantized value: its tensor in the builder and its scale."""

    t: Tensor
    scale: float

    @property
    def precision(self) -> int:
        return self.t.precision


@dataclass
class Layer:
    """What the report says of one ONNX node: the shifts chosen on its way and its output."""

    name: str
    op: str
    output: str
    shifts: list[int] = field(default_factory=list)
    precision: int = 0
    scale: float = 0.0
    tensor: Tensor | None = None


def choose_shift(ref: np.ndarray, scale: float, precision: int, method: str, floor: int = 0) -> int:
    """The right shift k >= 0 that brings a value of scale `scale` whose float values are `ref` to `precision`
    bits: 'minmax' the smallest k whose range holds the largest |ref| (nothing is clipped on the calibration
    set); 'mse' the k among that one and the four below it whose grid (step scale * 2^k, clipped to the
    precision) has the least squared error on `ref`. k = 0 keeps the values (clipped to the precision when
    the value has more bits). `floor` is the least k tried (0: a right shift or nothing)."""
    bound = rules.precision_bound(precision)
    amax = float(np.max(np.abs(ref))) if ref.size else 0.0
    if amax == 0.0:
        return max(floor, 0)
    ratio = amax / (bound * scale) if scale > 0 else math.inf
    if not 0 < ratio < math.inf:
        raise CVMLogicError(f"values up to |{amax:g}| at the scale {scale:g}: a float cannot hold their ratio (no CVM "
                            f"form)")
    k_max = max(floor, math.ceil(math.log2(ratio) - 1e-9))
    if method == "minmax" or k_max == floor:
        return k_max
    flat = ref.reshape(-1).astype(np.float64)
    if flat.size > MSE_SAMPLES:  # a fixed, evenly spaced subsample: the same choice on every run
        flat = flat[:: flat.size // MSE_SAMPLES]
    best, best_err = k_max, math.inf
    for k in range(k_max, max(floor - 1, k_max - 5), -1):
        step = scale * 2.0**k
        err = float(np.sum((np.clip(np.floor(flat / step + 0.5), -bound, bound) * step - flat) ** 2))
        if err < best_err * (1 - 1e-12):  # strictly better: ties keep the wider range
            best, best_err = k, err
    return best


class Emitter:
    """Walks a FloatGraph's nodes in order, building the CVM graph; `values` maps ONNX names to QValues."""

    def __init__(self, fg: FloatGraph, calib: dict[str, np.ndarray], input_scale: float, method: str,
                 name: str = "quantized", per_channel: bool = False):
        self.fg, self.calib, self.method, self.per_channel = fg, calib, method, per_channel
        self.b = CvmBuilder(name)
        x = self.b.create_input(fg.input_shape, DATA_PRECISION)
        self.values: dict[str, QValue] = {fg.input_name: QValue(x, input_scale)}
        self.layers: list[Layer] = []
        self.postprocess: str | None = None
        self._layer: Layer | None = None
        self._node: Node | None = None
        self._names: set[str] = {"data"}

    # -- helpers ------------------------------------------------------------------------------------------

    def _where(self) -> str:
        return self._node.where() if self._node is not None else "the model"

    def _checked(self, t: Tensor, what: str) -> Tensor:
        if t.precision > 32:
            raise CVMLogicError(f"{self._where()}: the int32 accumulation of {what} can overflow: its values need "
                                f"{t.precision} bits (the CVM precision rules), more than 32")
        return t

    def _param(self, values: np.ndarray, what: str) -> Tensor:
        big = np.asarray(values, np.float64)
        if big.size and not np.all(np.abs(big) < 2.0**31):  # before int64 could wrap
            raise CVMLogicError(f"{self._where()}: {what} needs more than 32 bits at its scale "
                                f"(|{float(np.max(np.abs(big)))}|), more than int32 holds")
        arr = np.asarray(values, np.int64)
        m = int(np.max(np.abs(arr))) if arr.size else 0
        p = rules.next_precision(m)
        if p > 32:
            raise CVMLogicError(f"{self._where()}: {what} needs {p} bits at its scale (|{m}|), more than int32 holds")
        return self.b.create_param(arr.astype(np.int32), precision=p, name=f"{self._node_name()}/{what}")

    def _node_name(self) -> str:
        """A fresh name for a CVM node of the ONNX node being emitted: its name, then NAME:1, NAME:2, ..."""
        base = self._node.name if self._node is not None else "q"
        k, name = 0, base
        while name in self._names:
            k += 1
            name = f"{base}:{k}"
        self._names.add(name)
        return name

    def fit(self, q: QValue, precision: int, ref: np.ndarray) -> QValue:
        """`q` at no more than `precision` bits: shifted right by the calibrated choice, or clipped."""
        k = choose_shift(ref, q.scale, precision, self.method)
        if self._layer is not None:
            self._layer.shifts.append(k)
        if k > 0:
            t = self.b.cvm_right_shift(q.t, precision=precision, shift_bit=k, name=self._node_name())
            return QValue(t, q.scale * 2.0**k)
        if q.precision > precision:
            return QValue(self.b.cvm_clip(q.t, precision=precision, name=self._node_name()), q.scale)
        return q

    def rescale(self, q: QValue, scale: float, precision: int) -> QValue:
        """`q` (of at most WIDE_PRECISION bits) at the coarser scale `scale`: a shift where the ratio is a power of
        two, else a multiplier m and a shift k (scale ~= q.scale * 2^k / m)."""
        r = scale / q.scale
        lg = math.log2(r)
        if abs(lg - round(lg)) < 1e-9:
            k = round(lg)
            if k <= 0:
                return q
            return QValue(self.b.cvm_right_shift(q.t, precision=precision, shift_bit=k, name=self._node_name()),
                          scale)
        k = math.floor(math.log2(r)) + MULTIPLIER_BITS
        m = round(2.0**k / r)
        mt = self._param(np.array([m]), "multiplier")
        prod_t = self._checked(self.b.broadcast_mul(q.t, mt, name=self._node_name()), "a rescaling")
        t = self.b.cvm_right_shift(prod_t, precision=precision, shift_bit=k, name=self._node_name())
        return QValue(t, q.scale * 2.0**k / m)

    def align(self, names: list[str], qs: list[QValue], precision: int = WIDE_PRECISION) -> list[QValue]:
        """The values at one scale (the coarsest of them once each fits `precision` bits)."""
        fitted = [self.fit(q, precision, self.calib[n]) for n, q in zip(names, qs)]
        scale = max(q.scale for q in fitted)
        return [self.rescale(q, scale, precision) for q in fitted]

    # -- operators ----------------------------------------------------------------------------------------

    def _channel_weights(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Symmetric int8 weights with a scale per output channel (max |w_c| -> 127)."""
        amax = np.abs(w.reshape(len(w), -1)).max(axis=1).astype(np.float64)
        s = np.where(amax > 0, amax / rules.precision_bound(WEIGHT_PRECISION), 1.0)
        shape = (-1,) + (1,) * (w.ndim - 1)
        return np.clip(np.floor(w / s.reshape(shape) + 0.5), -127, 127).astype(np.int64), s

    def _uniform(self, t: Tensor, scales: np.ndarray, out_ref: np.ndarray) -> QValue:
        """A layer output whose channels (axis 1) have scales `scales` at one scale: shifted to WIDE_PRECISION
        bits, multiplied per channel by m_c = 2^14 s_c / max s (at most 2^14: 16 + 16 bits) and shifted by 14."""
        shape = (1, -1) + (1,) * (len(t.shape) - 2)
        k = choose_shift(out_ref / scales.reshape(shape), 1.0, WIDE_PRECISION, self.method)
        if self._layer is not None:
            self._layer.shifts.append(k)
        if k > 0:
            t = self.b.cvm_right_shift(t, precision=WIDE_PRECISION, shift_bit=k, name=self._node_name())
        elif t.precision > WIDE_PRECISION:
            t = self.b.cvm_clip(t, precision=WIDE_PRECISION, name=self._node_name())
        s1 = scales * 2.0**k
        m = np.maximum(1, np.floor(2.0**MULTIPLIER_BITS * s1 / s1.max() + 0.5)).astype(np.int64)
        mt = self._param(m.reshape((-1,) + (1,) * (len(t.shape) - 2)), "channel_scale")
        t = self.b.broadcast_mul(t, mt, name=self._node_name())
        t = self.b.cvm_right_shift(t, precision=WIDE_PRECISION, shift_bit=MULTIPLIER_BITS, name=self._node_name())
        return QValue(t, float(s1.max()))

    def _weights(self, w: np.ndarray) -> tuple[np.ndarray, float]:
        amax = float(np.max(np.abs(w))) if w.size else 0.0
        s = amax / rules.precision_bound(WEIGHT_PRECISION) if amax > 0 else 1.0
        return np.clip(np.floor(w / s + 0.5), -127, 127).astype(np.int64), s

    def _data8(self, q: QValue, ref: np.ndarray) -> tuple[QValue, int]:
        """The 8-bit data of a Conv or Dense and its zero point. Data never negative on the calibration set is
        taken as unsigned: x in [0, 254] steps, stored as x - 127 (zero point 127, which the layer adds back as a
        constant); other data as signed (zero point 0)."""
        if not (ref.size and float(ref.min()) >= 0 and float(ref.max()) > 0):
            return self.fit(q, DATA_PRECISION, ref), 0
        k = choose_shift(ref, q.scale, DATA_PRECISION + 1, self.method)
        if self._layer is not None:
            self._layer.shifts.append(k)
        t = q.t
        if k > 0:
            t = self.b.cvm_right_shift(t, precision=DATA_PRECISION + 1, shift_bit=k, name=self._node_name())
        elif q.precision > DATA_PRECISION + 1:
            t = self.b.cvm_clip(t, precision=DATA_PRECISION + 1, name=self._node_name())
        t = self.b.broadcast_sub(t, self._param(np.array([ZERO_POINT]), "zero_point"), name=self._node_name())
        t = self.b.cvm_clip(t, precision=DATA_PRECISION, name=self._node_name())  # clip(+-127) would say 9 bits
        return QValue(t, q.scale * 2.0**k), ZERO_POINT

    def _conv_like(self, q: QValue, ref: np.ndarray, w_int: np.ndarray, sw: float | np.ndarray, w_prec: int,
                   bias: np.ndarray | None, conv: dict[str, Any] | None, out_ref: np.ndarray | None = None,
                   optional_bias: bool = False) -> QValue:
        """conv2d (attributes `conv`) or dense (`conv` None) of `q` by integer weights of scale `sw`, with the float
        bias; the zero point of the data comes back as a constant: in the bias, or where zero padding makes it vary
        over the output, as a per-pixel constant added after the layer."""
        x, zp = self._data8(q, ref)
        acc_scale = x.scale * sw
        oc = w_int.shape[0]
        const = np.zeros(oc, np.int64) if bias is None else np.floor(bias.astype(np.float64) / acc_scale + 0.5)
        const = np.clip(const, -(2.0**62), 2.0**62).astype(np.int64)  # within int64: past 32 bits is refused below
        per_pixel = None
        if zp and conv is None:
            const = const + zp * w_int.reshape(oc, -1).sum(axis=1)
        elif zp and conv is not None:
            ones = np.ones((1, *x.t.shape[1:]), np.float64)
            inside = conv_float(ones, w_int.astype(np.float64), None, conv["strides"], conv["padding"],
                                conv["dilation"], conv["groups"])[0]
            per_pixel = zp * np.rint(inside).astype(np.int64) + const.reshape(oc, 1, 1)
            if np.all(per_pixel == per_pixel[:, :1, :1]):
                const, per_pixel = per_pixel[:, 0, 0], None
        has_const = per_pixel is not None or bias is not None or bool(zp)
        k = int(np.prod(w_int.shape[1:]))
        need = x.precision + w_prec + rules.bitlen(k)
        extra = per_pixel if per_pixel is not None else const
        if has_const and optional_bias and not zp and need + 1 > 32:
            has_const = False  # a bias of bias correction alone goes where it would cost the bit past 32
        if has_const:
            need = max(need, rules.next_precision(int(np.max(np.abs(extra))) if extra.size else 0)) + 1
        if need > 32:  # the CVM rule (cvm_rules._conv2d_prec, _dense_prec) bounds every partial sum by 2^(need-1)
            raise CVMLogicError(f"{self._where()}: the int32 accumulation of the layer can overflow: its values need "
                                f"{need} bits ({x.precision}-bit data x {w_prec}-bit weights over {k} "
                                f"terms{' + the bias' if has_const else ''}), more than 32")
        w = self.b.create_param(w_int.astype(np.int32), precision=w_prec, name=f"{self._node_name()}/weight")
        b = self._param(const, "bias") if has_const and per_pixel is None else None
        if conv is None:
            if len(x.t.shape) != 2:
                raise CVMLogicError(f"{self._where()}: expected 2-D data (flatten first), got {list(x.t.shape)}")
            t = self.b.dense(x.t, w, b, units=oc, name=self._node_name())
        else:
            t = self.b.conv2d(x.t, w, b, channels=oc, kernel_size=w_int.shape[2:], name=self._node_name(), **conv)
        if per_pixel is not None:
            t = self.b.broadcast_add(t, self._param(per_pixel, "bias"), name=self._node_name())
        t = self._checked(t, "the layer")
        if isinstance(acc_scale, np.ndarray):  # per-channel weights
            assert out_ref is not None
            return self._uniform(t, acc_scale, out_ref)
        return QValue(t, acc_scale)

    def _linear(self, n: Node) -> QValue:
        w = self.fg.consts[n.inputs[1]]
        w_int, sw = self._channel_weights(w) if self.per_channel else self._weights(w)
        bias_name = n.inputs[2] if len(n.inputs) > 2 else ""
        bias = self.fg.consts[bias_name] if bias_name else None
        ref = self.calib[n.inputs[0]]
        conv = None if n.op == "Dense" else {
            "strides": tuple(n.attrs.get("strides", [1, 1])), "padding": pads_2d(n),
            "dilation": tuple(n.attrs.get("dilations", [1, 1])), "groups": n.attrs.get("group", 1)}
        # bias correction: the weights' rounding shifts the mean output by (W_q - W) . E[x]; take it back
        err = (w_int * (sw.reshape((-1,) + (1,) * (w.ndim - 1)) if isinstance(sw, np.ndarray) else sw)
               - w).astype(np.float64)
        oc = w.shape[0]
        if conv is None:
            shift = err @ ref.reshape(len(ref), -1).mean(axis=0)
        else:
            g = conv["groups"]
            mean = ref.mean(axis=(0, 2, 3)).reshape(g, -1)  # (groups, in channels per group)
            per = err.sum(axis=(2, 3)).reshape(g, oc // g, -1)  # (groups, out per group, in per group)
            shift = np.einsum("goi,gi->go", per, mean).reshape(oc)
        optional = bias is None
        if np.any(shift):
            bias = (np.zeros(oc) if bias is None else bias.astype(np.float64)) - shift
        return self._conv_like(self.values[n.inputs[0]], ref, w_int, sw, WEIGHT_PRECISION, bias, conv,
                               self.calib[n.outputs[0]], optional_bias=optional)

    def _binary(self, n: Node) -> QValue:
        a_name, b_name = n.inputs[:2]
        # a scalar constant as a 1-element one: CVM params have 1 to 6 axes, and the broadcast is the same
        consts = {k: self.fg.consts[k].reshape(1) if self.fg.consts[k].ndim == 0 else self.fg.consts[k]
                  for k in (a_name, b_name) if k in self.fg.consts}
        if a_name in consts and b_name in consts:
            raise CVMLogicError(f"{self._where()}: two constants (folding left it)")
        if n.op == "Mul":
            if a_name in consts or b_name in consts:
                c_name, v_name = (a_name, b_name) if a_name in consts else (b_name, a_name)
                q = self.fit(self.values[v_name], WIDE_PRECISION, self.calib[v_name])
                c_int, sc = self._weights(consts[c_name])
                ct = self.b.create_param(c_int.astype(np.int32), precision=WEIGHT_PRECISION,
                                         name=f"{self._node_name()}/constant")
                lhs, rhs, scale = (q.t, ct, q.scale * sc) if v_name == a_name else (ct, q.t, q.scale * sc)
            else:
                qa = self.fit(self.values[a_name], WIDE_PRECISION, self.calib[a_name])
                qb = self.fit(self.values[b_name], WIDE_PRECISION, self.calib[b_name])
                lhs, rhs, scale = qa.t, qb.t, qa.scale * qb.scale
            return QValue(self._checked(self.b.broadcast_mul(lhs, rhs, name=self._node_name()), "the product"), scale)
        if a_name in consts or b_name in consts:  # the constant at the value's scale
            c_name, v_name = (a_name, b_name) if a_name in consts else (b_name, a_name)
            q = self.fit(self.values[v_name], 24, self.calib[v_name])
            c = QValue(self._param(np.floor(consts[c_name].astype(np.float64) / q.scale + 0.5), "constant"), q.scale)
            qa, qb = (c, q) if a_name in consts else (q, c)
        else:
            qa, qb = self.align([a_name, b_name], [self.values[a_name], self.values[b_name]])
        same = qa.t.shape == qb.t.shape
        op = {"Add": "add", "Sub": "sub"}[n.op]
        fn = getattr(self.b, f"elemwise_{op}" if same else f"broadcast_{op}")
        return QValue(self._checked(fn(qa.t, qb.t, name=self._node_name()), "the sum"), qa.scale)

    def _leaky_relu(self, n: Node) -> QValue:
        alpha = float(n.attrs.get("alpha", 0.01))
        ref = self.calib[n.inputs[0]]
        q = self.fit(self.values[n.inputs[0]], WIDE_PRECISION, ref)
        pos = self.b.relu(q.t, name=self._node_name())
        neg = self.b.relu(self.b.negative(q.t, name=self._node_name()), name=self._node_name())
        if not 0 < alpha < 1:
            raise CVMLogicError(f"{self._where()}: alpha {alpha}: CVM expresses a slope in (0, 1)")
        k = math.floor(math.log2(1 / alpha)) + MULTIPLIER_BITS
        m = round(alpha * 2.0**k)
        mt = self._param(np.array([m]), "slope")
        scaled = self.b.cvm_right_shift(self.b.broadcast_mul(neg, mt, name=self._node_name()),
                                        precision=WIDE_PRECISION, shift_bit=k, name=self._node_name())
        return QValue(self.b.elemwise_sub(pos, scaled, name=self._node_name()), q.scale)

    def _pool(self, n: Node) -> QValue:
        k, s, p, ceil = pool_geometry(n)
        q = self.values[n.inputs[0]]
        if n.op == "MaxPool":
            return QValue(self.b.max_pool2d(q.t, pool_size=k, strides=s, padding=p, ceil_mode=ceil,
                                            name=self._node_name()), q.scale)
        if ceil or (any(p) and not n.attrs.get("count_include_pad", 0)):
            raise CVMLogicError(f"{self._where()}: an average over a varying count (ceil_mode, or pads without "
                                f"count_include_pad) has no CVM form")
        c = q.t.shape[1]
        out = self._conv_like(q, self.calib[n.inputs[0]], np.ones((c, 1, *k), np.int64), 1.0, 2, None,
                              {"strides": s, "padding": p, "dilation": (1, 1), "groups": c})
        return QValue(out.t, out.scale / (k[0] * k[1]))

    def _global_pool(self, n: Node) -> QValue:
        q = self.values[n.inputs[0]]
        hw = q.t.shape[2] * q.t.shape[3]
        q = self.fit(q, min(WIDE_PRECISION + 8, 32 - rules.bitlen(hw)), self.calib[n.inputs[0]])
        t = self.b.sum(q.t, axis=(2, 3), keepdims=True, name=self._node_name())
        return QValue(self._checked(t, "the sum"), q.scale / hw)

    def _head(self, n: Node) -> QValue:
        if n.outputs[0] not in self.fg.outputs or self.fg.consumers(n.outputs[0]):
            raise CVMLogicError(f"{self._where()}: CVM offers {n.op} only as the model's output")
        q = self.values[n.inputs[0]]
        shape = self.fg.shapes[n.inputs[0]]
        axis = n.attrs.get("axis", -1 if n.op == "Softmax" else 0) % len(shape)
        if axis != len(shape) - 1:
            raise CVMLogicError(f"{self._where()}: axis {axis}: CVM's argmax runs along the last axis")
        if n.op == "Softmax":  # monotonic: the head is the logits (the CVM output is not normalised)
            return q
        if n.attrs.get("select_last_index", 0):
            raise CVMLogicError(f"{self._where()}: select_last_index has no CVM form")
        self.postprocess = "argmax"  # cvm-runtime's argmax reads the head as int8
        return self.fit(q, DATA_PRECISION, self.calib[n.inputs[0]])

    def node(self, n: Node) -> None:
        try:
            self._emit(n)
        except CVMError as e:
            if str(e).startswith(n.where()):
                raise
            raise type(e)(f"{n.where()}: {e}") from None

    def _emit(self, n: Node) -> None:
        self._node = n
        self._layer = Layer(n.name, n.op, n.outputs[0])
        op, a = n.op, n.attrs
        q = self.values.get(n.inputs[0]) if n.inputs and n.inputs[0] not in self.fg.consts else None
        if op in ("Conv", "Dense"):
            out = self._linear(n)
        elif op in ("Add", "Sub", "Mul"):
            out = self._binary(n)
        elif q is None:
            raise CVMLogicError(f"{self._where()}: expected a computed input, got the constant {n.inputs[0]!r}")
        elif op in ("Identity", "Dropout"):
            out = q
        elif op == "Relu":
            out = QValue(self.b.relu(q.t, name=self._node_name()), q.scale)
        elif op == "Clip":
            # the bounds are constant scalars (onnx_spec.infer refuses computed ones)
            lo, hi = (float(self.fg.consts[n.inputs[i]].reshape(-1)[0]) if len(n.inputs) > i and n.inputs[i]
                      else None for i in (1, 2))
            bound = rules.precision_bound(q.precision)
            a_min = -bound if lo is None else int(np.clip(np.floor(lo / q.scale + 0.5), -bound, bound))
            a_max = bound if hi is None else int(np.clip(np.floor(hi / q.scale + 0.5), -bound, bound))
            if a_max <= a_min:
                raise CVMLogicError(f"{self._where()}: the bounds {lo}, {hi} meet at the value's scale {q.scale}")
            out = QValue(self.b.clip(q.t, a_min=a_min, a_max=a_max, name=self._node_name()), q.scale)
        elif op == "LeakyRelu":
            out = self._leaky_relu(n)
        elif op in ("MaxPool", "AveragePool"):
            out = self._pool(n)
        elif op == "GlobalAveragePool":
            out = self._global_pool(n)
        elif op == "Flatten":
            shape = self.fg.shapes[n.outputs[0]]
            out = QValue(self.b.flatten(q.t, name=self._node_name()) if a.get("axis", 1) == 1 and len(q.t.shape) > 1
                         else self.b.reshape(q.t, shape=shape, name=self._node_name()), q.scale)
        elif op == "Reshape":
            out = QValue(self.b.reshape(q.t, shape=self.fg.shapes[n.outputs[0]], name=self._node_name()), q.scale)
        elif op == "Transpose":
            perm = a.get("perm", list(range(len(q.t.shape)))[::-1])
            out = QValue(self.b.transpose(q.t, axes=perm, name=self._node_name()), q.scale)
        elif op == "Concat":
            if any(i in self.fg.consts for i in n.inputs):
                raise CVMLogicError(f"{self._where()}: a constant operand of Concat has no CVM form here")
            qs = self.align(list(n.inputs), [self.values[i] for i in n.inputs])
            axis = a["axis"] % len(q.t.shape)
            out = QValue(self.b.concatenate(*[v.t for v in qs], axis=axis, name=self._node_name()), qs[0].scale)
        elif op in ("Softmax", "ArgMax"):
            out = self._head(n)
        else:
            raise CVMLogicError(f"{self._where()}: the operator has no CVM form in the quantizer")
        self.values[n.outputs[0]] = out
        self._layer.precision, self._layer.scale, self._layer.tensor = out.precision, out.scale, out.t
        self.layers.append(self._layer)
        self._node = self._layer = None


def emit(fg: FloatGraph, calib: dict[str, np.ndarray], input_scale: float, method: str,
         per_channel: bool = False) -> Emitter:
    """The emitter after every node: its builder, values, layers and postprocess."""
    if method not in METHODS:
        raise CVMLogicError(f"expected a calibration method in {METHODS}, got {method!r}")
    e = Emitter(fg, calib, input_scale, method, per_channel=per_channel)
    for n in fg.nodes:
        e.node(n)
    return e
