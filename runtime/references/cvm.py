"""The reference interpreter: the executable specification of the 37 CVM operators, in numpy.

Every other backend is tested against this module, and this module is tested bit for bit against cvm-runtime's
FORMAL backend (the conformance corpus). It follows `spec/cvm-runtime.md`: storage is int32, arithmetic wraps
as two's-complement int32 (an op that can overflow computes in int64 and wraps), division truncates toward zero
and `>>` is arithmetic.

    outs = run_op("cvm_right_shift", {"precision": 8, "shift_bit": 3, "is_sign": True}, [x])
    heads = run_graph(load_graph(json_bytes, params_bytes), saturated_input)

Inputs are assumed verified (`cvmc.runtime.frontend.graph.load_graph` or `cvm_rules.infer`): shapes agree and the
attributes are typed, with defaults filled in (`cvm_rules.parse_attrs` / `default_attrs`).
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from typing import Any

import numpy as np

from cvmc.dialects import cvm_rules as rules
from cvmc.errors import CVMLogicError, CVMRuntimeError
from cvmc.runtime.frontend.graph import Graph, Node

Array = np.ndarray
Attrs = dict[str, Any]

INT32_MIN = -(1 << 31)
_I64 = np.int64


def _wrap(x: Array) -> Array:
    """Two's-complement int32 of an integer array (the low 32 bits)."""
    return np.asarray(x).astype(np.int32)


def _i64(x: Array) -> Array:
    return np.asarray(x, dtype=_I64)


def _clip_precision(x: Array, precision: int) -> Array:
    """Saturate to +-(2^(precision-1) - 1)."""
    bound = rules.precision_bound(precision)
    return np.clip(_i64(x), -bound, bound).astype(np.int32)


def _exact_matmul(a: Array, b: Array) -> Array:
    """a @ b of int64 matrices, exact modulo 2^64 (so its low 32 bits are int32 wrapping accumulation).

    When every partial sum stays below 2^53 in magnitude, float64 (BLAS) computes it exactly; otherwise the
    int64 product, which numpy wraps modulo 2^64.
    """
    k = a.shape[-1]
    if a.size == 0 or b.size == 0:
        return np.matmul(a, b)
    bound = int(np.abs(a).max()) * int(np.abs(b).max()) * k
    if bound < 1 << 53:
        return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(_I64)
    return np.matmul(a, b)


# ---------------------------------------------------------------------------------------------------------
# NN operators
# ---------------------------------------------------------------------------------------------------------


def _conv2d(a: Attrs, x: Array, w: Array, b: Array | None = None) -> Array:
    """Y[n,oc,p,q] = sum_{ic,i,j} pad0(X)[n, g*IC+ic, p*SH-PH+i*DH, q*SW-PW+j*DW] * W[oc,ic,i,j] + B[oc]
    with g = oc / (OC/groups); zero padding; int32 wrapping accumulation."""
    n, c, _, _ = x.shape
    oc, icg, kh, kw = w.shape
    groups = a["groups"]
    (sh, sw), (ph, pw), (dh, dw) = a["strides"], a["padding"], a["dilation"]
    xp = np.pad(_i64(x), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    # windows of the dilated kernel, subsampled by the dilation and the stride: (N, C, OH, OW, KH, KW)
    win = np.lib.stride_tricks.sliding_window_view(xp, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw]
    oh, ow = win.shape[2], win.shape[3]
    # im2col per group: (G, N*OH*OW, IC*KH*KW) @ (G, IC*KH*KW, OC/G)
    cols = win.reshape(n, groups, icg, oh, ow, kh, kw).transpose(1, 0, 3, 4, 2, 5, 6)
    cols = cols.reshape(groups, n * oh * ow, icg * kh * kw)
    wg = _i64(w).reshape(groups, oc // groups, icg * kh * kw).transpose(0, 2, 1)
    y = _exact_matmul(cols, wg)  # (G, N*OH*OW, OC/G)
    y = y.reshape(groups, n, oh, ow, oc // groups).transpose(1, 0, 4, 2, 3).reshape(n, oc, oh, ow)
    if b is not None:
        y = y + _i64(b).reshape(1, oc, 1, 1)
    return _wrap(y)


def _dense(a: Attrs, x: Array, w: Array, b: Array | None = None) -> Array:
    """Y = X . W^T (+ B), int32 wrapping accumulation."""
    y = _exact_matmul(_i64(x), _i64(w).T)
    if b is not None:
        y = y + _i64(b)
    return _wrap(y)


def _relu(a: Attrs, x: Array) -> Array:
    """Y = max(X, 0)."""
    return np.maximum(x, 0).astype(np.int32)


def _max_pool2d(a: Attrs, x: Array) -> Array:
    """Y[n,c,p,q] = max over the PSH x PSW window at (p*SH-PH, q*SW-PW) of X padded with INT32_MIN;
    the output size follows ceil_mode (spec section 2)."""
    _, _, h, w = x.shape
    psh, psw = a["pool_size"]
    sh, sw = a["strides"]
    pad = a["padding"]
    ph, pw = (pad[0], pad[0]) if len(pad) == 1 else pad
    if a["ceil_mode"]:
        oh, ow = (h + 2 * ph - psh + sh - 1) // sh + 1, (w + 2 * pw - psw + sw - 1) // sw + 1
    else:
        oh, ow = (h + 2 * ph - psh) // sh + 1, (w + 2 * pw - psw) // sw + 1
    # pad enough on the bottom/right for the last (ceil-mode) window to be in range
    eh, ew = max(0, (oh - 1) * sh + psh - h - ph), max(0, (ow - 1) * sw + psw - w - pw)
    xp = np.pad(x, ((0, 0), (0, 0), (ph, eh), (pw, ew)), constant_values=INT32_MIN)
    win = np.lib.stride_tricks.sliding_window_view(xp, (psh, psw), axis=(2, 3))[:, :, ::sh, ::sw]
    return win[:, :, :oh, :ow].max(axis=(4, 5)).astype(np.int32)


def _upsampling(a: Attrs, x: Array) -> Array:
    """Y[n,c,h,w] = X[n,c,h/s,w/s] (nearest neighbour)."""
    s = a["scale"]
    return np.repeat(np.repeat(x, s, axis=2), s, axis=3)


# ---------------------------------------------------------------------------------------------------------
# Vision operators
# ---------------------------------------------------------------------------------------------------------


def _get_valid_counts(a: Attrs, x: Array) -> tuple[Array, Array]:
    """count[b] = #{rows with X[b,r,1] > score_threshold}; Y[b] = those rows in order, then rows of -1."""
    bsz, n, k = x.shape
    counts = np.zeros(bsz, dtype=np.int32)
    y = np.full((bsz, n, k), -1, dtype=np.int32)
    for b in range(bsz):
        rows = x[b][x[b, :, 1] > a["score_threshold"]]
        counts[b] = len(rows)
        y[b, : len(rows)] = rows
    return counts, y


def _to_i32(v: int) -> int:
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def _to_i64(v: int) -> int:
    return (v + (1 << 63)) % (1 << 64) - (1 << 63)


def _iou(r1: list[int], r2: list[int]) -> int:
    """100 x intersection / union of two corner boxes [x1, y1, x2, y2] (FORMAL's integer formula, spec 5)."""
    ax1, ay1, ax2, ay2 = r1
    bx1, by1, bx2, by2 = r2
    total = _to_i64(_to_i32(ax2 - ax1) * _to_i32(ay2 - ay1) + _to_i32(bx2 - bx1) * _to_i32(by2 - by1))
    if total <= 0:
        return 0
    w = max(0, _to_i32(min(ax2, bx2) - max(ax1, bx1)))
    h = max(0, _to_i32(min(ay2, by2) - max(ay1, by1)))
    overlap = w * h
    union = total - overlap
    if union <= 0:
        return 0
    if overlap > ((1 << 63) - 1) // 100:  # overlap * 100 would overflow int64
        union //= 100
        # a union below 100 with such an overlap divides by zero in the runtime; the ratio is unbounded
        return overlap // max(union, 1)
    return overlap * 100 // union


def _non_max_suppression(a: Attrs, x: Array, valid_count: Array) -> Array:
    """Per batch: the first T = clip(valid_count[b], 0, N) rows, stable-sorted by score descending; walk
    min(T, top_k) of them, skip id < 0, keep a row unless a kept row (of the same id, or any when
    force_suppress) has iou >= iou_threshold; at most max_output_size kept; then rows of -1."""
    bsz, n, k = x.shape
    y = np.full((bsz, n, k), -1, dtype=np.int32)
    thr, force = a["iou_threshold"], a["force_suppress"]
    for b in range(bsz):
        t = max(min(n, int(valid_count[b])), 0)
        rows = x[b, :t].tolist()
        rows.sort(key=lambda r: -r[1])  # list.sort is stable
        walk = t if a["top_k"] < 0 else min(t, a["top_k"])
        limit = t if a["max_output_size"] < 0 else min(t, a["max_output_size"])
        kept: list[list[int]] = []
        for row in rows[:walk]:
            if len(kept) >= limit:
                break
            if row[0] < 0:
                continue
            if not any((force or q[0] == row[0]) and _iou(q[2:6], row[2:6]) >= thr for q in kept):
                kept.append(row)
        if kept:
            y[b, : len(kept)] = kept
    return y


# ---------------------------------------------------------------------------------------------------------
# Elementwise operators
# ---------------------------------------------------------------------------------------------------------


def _abs(a: Attrs, x: Array) -> Array:
    """Y = |X| (INT32_MIN stays INT32_MIN)."""
    return _wrap(np.abs(_i64(x)))


def _negative(a: Attrs, x: Array) -> Array:
    """Y = -X (INT32_MIN stays INT32_MIN)."""
    return _wrap(-_i64(x))


def _cvm_precision(a: Attrs, x: Array) -> Array:
    """Y = max(1, bitlen(|X|)): the number of bits of the magnitude."""
    _, exp = np.frexp(np.abs(_i64(x)).astype(np.float64))  # |x| = m * 2^exp, 0.5 <= m < 1, exact below 2^53
    return np.maximum(exp, 1).astype(np.int32)


def _elemwise_add(a: Attrs, x: Array, y: Array) -> Array:
    """Y = A + B (wrapping)."""
    return _wrap(_i64(x) + y)


def _elemwise_sub(a: Attrs, x: Array, y: Array) -> Array:
    """Y = A - B (wrapping)."""
    return _wrap(_i64(x) - y)


def _clip(a: Attrs, x: Array) -> Array:
    """Y = min(max(X, a_min), a_max)."""
    return np.clip(_i64(x), a["a_min"], a["a_max"]).astype(np.int32)


def _cvm_clip(a: Attrs, x: Array) -> Array:
    """Y = clip(X, -(2^(p-1)-1), 2^(p-1)-1), p = precision."""
    return _clip_precision(x, a["precision"])


def _cvm_right_shift(a: Attrs, x: Array) -> Array:
    """Y = clip(((X >> (b-1)) + 1) >> 1) to the precision: a shift by b rounding half toward +inf."""
    t = _wrap((_i64(x) >> (a["shift_bit"] - 1)) + 1) >> 1
    return _clip_precision(t, a["precision"])


def _cvm_left_shift(a: Attrs, x: Array) -> Array:
    """Y = clip(X << b) to the precision (the shift wraps in int32)."""
    return _clip_precision(_wrap(_i64(x) << a["shift_bit"]), a["precision"])


# ---------------------------------------------------------------------------------------------------------
# Transform operators
# ---------------------------------------------------------------------------------------------------------


def _repeat(a: Attrs, x: Array) -> Array:
    """Y[.., i, ..] = X[.., i / repeats, ..] along axis."""
    return np.repeat(x, a["repeats"], axis=a["axis"])


def _tile(a: Attrs, x: Array) -> Array:
    """Y[k] = X[k mod shape] with shape and reps right-aligned (rank max(n, len(reps)))."""
    return np.tile(x, a["reps"])


def _flatten(a: Attrs, x: Array) -> Array:
    """Y has shape (d0, d1 * ... * dn-1), row-major."""
    return x.reshape(x.shape[0], -1)


def _concatenate(a: Attrs, *xs: Array) -> Array:
    """Y = the inputs joined along axis."""
    return np.concatenate(xs, axis=a["axis"])


def _expand_dims(a: Attrs, x: Array) -> Array:
    """Insert num_newaxis dims of size 1 at axis (a negative axis means axis + ndim + 1)."""
    ax = a["axis"] + x.ndim + 1 if a["axis"] < 0 else a["axis"]
    return x.reshape(x.shape[:ax] + (1,) * a["num_newaxis"] + x.shape[ax:])


def _reshape(a: Attrs, x: Array) -> Array:
    """Y = X in the shape MXNet's codes give (0 copy, -1 infer, -2 rest, -3 merge, -4 split), row-major."""
    return x.reshape(rules.reshape_shape(x.shape, a["shape"]))


def _squeeze(a: Attrs, x: Array) -> Array:
    """Drop the given size-1 axes (all size-1 axes when axis is empty); an empty result is (1,)."""
    axes = tuple(ax % x.ndim for ax in a["axis"]) or tuple(i for i, d in enumerate(x.shape) if d == 1)
    return x.reshape(tuple(d for i, d in enumerate(x.shape) if i not in axes) or (1,))


def _transpose(a: Attrs, x: Array) -> Array:
    """Y[d_axes[0], ..] = X[d_0, ..]: permute the axes (reverse them when axes is empty)."""
    return np.transpose(x, rules.transpose_axes(a["axes"], x.ndim))


def _strided_slice(a: Attrs, x: Array) -> Array:
    """Y[d] = X[begin + stride * d] per axis, with begin/end clamped as cvm-runtime does (spec section 2)."""
    index = []
    for b, st, n in rules.strided_slice_bounds(x.shape, a["begin"], a["end"], a["stride"]):
        stop = b + st * (n - 1) + (1 if st > 0 else -1)
        index.append(slice(b, stop if stop >= 0 else None, st))
    return x[tuple(index)]


def _take(a: Attrs, x: Array, indices: Array) -> Array:
    """Y = X[clip(indices)] along axis (of the flattened X when axis is None); indices clipped to [0, len-1]."""
    if a["axis"] is None:
        return x.reshape(-1)[np.clip(indices, 0, x.size - 1)]
    ax = a["axis"] % x.ndim
    return np.take(x, np.clip(indices, 0, x.shape[ax] - 1), axis=ax)


def _cvm_lut(a: Attrs, x: Array, table: Array) -> Array:
    """Y = table[clip(X, 0, size - 1)]: take on the flattened table with X as indices."""
    return table.reshape(-1)[np.clip(x, 0, table.size - 1)]


def _slice_like(a: Attrs, x: Array, like: Array) -> Array:
    """Y = X[:m_0, :m_1, ..] on the given axes (all of shape_like's when axis is empty)."""
    axes = [ax % x.ndim for ax in a["axis"]] or list(range(like.ndim))
    index = [slice(None)] * x.ndim
    for ax in axes:
        index[ax] = slice(0, like.shape[ax])
    return x[tuple(index)]


def _where(a: Attrs, cond: Array, x: Array, y: Array) -> Array:
    """Y = cond ? X : Y elementwise; a 1-D condition selects whole rows (axis 0)."""
    if cond.ndim != x.ndim:
        cond = cond.reshape(cond.shape + (1,) * (x.ndim - 1))
    return np.where(cond != 0, x, y).astype(np.int32)


# ---------------------------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------------------------


def _reduce(a: Attrs, x: Array, fn: Callable[..., Array], start: int) -> Array:
    """The reduction driver of sum and max (spec section 8 for the accumulator's start)."""
    axes = rules.reduce_axes(x.shape, a["axis"], a["exclude"])
    keep = a["keepdims"]
    out_shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keep else (
        tuple(d for i, d in enumerate(x.shape) if i not in axes) or (1,))
    if not axes:  # exclude listing every axis: the identity
        return x.reshape(out_shape)
    y = fn(_i64(x), axis=axes)
    if not a["axis"] and not a["exclude"]:  # axis=() starts the accumulator at 0, not at the first element
        y = fn(np.stack([y, np.full_like(y, start)]), axis=0)
    return _wrap(y).reshape(out_shape)


def _sum(a: Attrs, x: Array) -> Array:
    """Y = the sum over the reduced axes (wrapping)."""
    return _reduce(a, x, np.sum, 0)


def _max(a: Attrs, x: Array) -> Array:
    """Y = the max over the reduced axes; with axis=() and exclude=false, max(0, max(X))."""
    return _reduce(a, x, np.max, 0)


# ---------------------------------------------------------------------------------------------------------
# Broadcast operators (numpy's right-aligned broadcasting)
# ---------------------------------------------------------------------------------------------------------


def _broadcast_add(a: Attrs, x: Array, y: Array) -> Array:
    """Y = A + B (wrapping)."""
    return _wrap(_i64(x) + y)


def _broadcast_sub(a: Attrs, x: Array, y: Array) -> Array:
    """Y = A - B (wrapping)."""
    return _wrap(_i64(x) - y)


def _broadcast_mul(a: Attrs, x: Array, y: Array) -> Array:
    """Y = A * B (wrapping)."""
    return _wrap(_i64(x) * y)


def _broadcast_max(a: Attrs, x: Array, y: Array) -> Array:
    """Y = max(A, B)."""
    return np.maximum(x, y).astype(np.int32)


def _broadcast_div(a: Attrs, x: Array, y: Array) -> Array:
    """Y = A / B truncated toward zero; 0 where B == 0; INT32_MIN / -1 wraps to INT32_MIN."""
    num, den = np.broadcast_arrays(_i64(x), _i64(y))
    safe = np.where(den == 0, 1, den)
    q = np.abs(num) // np.abs(safe) * (np.sign(num) * np.sign(safe))
    return _wrap(np.where(den == 0, 0, q))


def _broadcast_greater(a: Attrs, x: Array, y: Array) -> Array:
    """Y = 1 where A > B, else 0."""
    return np.greater(x, y).astype(np.int32)


# ---------------------------------------------------------------------------------------------------------
# Dispatch
# ---------------------------------------------------------------------------------------------------------

OPS: dict[str, Callable[..., Array | tuple[Array, ...]]] = {
    "conv2d": _conv2d,
    "dense": _dense,
    "relu": _relu,
    "max_pool2d": _max_pool2d,
    "upsampling": _upsampling,
    "get_valid_counts": _get_valid_counts,
    "non_max_suppression": _non_max_suppression,
    "abs": _abs,
    "negative": _negative,
    "cvm_precision": _cvm_precision,
    "elemwise_add": _elemwise_add,
    "elemwise_sub": _elemwise_sub,
    "clip": _clip,
    "cvm_clip": _cvm_clip,
    "cvm_right_shift": _cvm_right_shift,
    "cvm_left_shift": _cvm_left_shift,
    "repeat": _repeat,
    "tile": _tile,
    "flatten": _flatten,
    "concatenate": _concatenate,
    "expand_dims": _expand_dims,
    "reshape": _reshape,
    "squeeze": _squeeze,
    "transpose": _transpose,
    "strided_slice": _strided_slice,
    "take": _take,
    "cvm_lut": _cvm_lut,
    "slice_like": _slice_like,
    "where": _where,
    "sum": _sum,
    "max": _max,
    "broadcast_add": _broadcast_add,
    "broadcast_sub": _broadcast_sub,
    "broadcast_mul": _broadcast_mul,
    "broadcast_max": _broadcast_max,
    "broadcast_div": _broadcast_div,
    "broadcast_greater": _broadcast_greater,
}


def run_op(op: str, attrs: Attrs, inputs: list[Array], precisions: list[int] | None = None) -> list[Array]:
    """Run one operator on int32 inputs (verified shapes, typed attributes); its int32 outputs.

    `precisions` (the inputs') is accepted for the interface every backend shares; no CVM operator's values
    depend on it.
    """
    out = OPS[op](attrs, *(np.asarray(x, dtype=np.int32) for x in inputs))
    outs = list(out) if isinstance(out, tuple) else [out]
    return [np.ascontiguousarray(o, dtype=np.int32) for o in outs]


def last_uses(graph: Graph) -> list[int]:
    """For every node, the id of the last node that reads one of its outputs; a head is read at the end
    (`len(graph.nodes)`), a node nothing reads at its own id (it dies as soon as it is made)."""
    last = list(range(len(graph.nodes)))
    for nid, node in enumerate(graph.nodes):
        for src, _ in node.inputs:
            last[src] = nid
    for nid, _ in graph.heads:
        last[nid] = len(graph.nodes)
    return last


def peak_live_bytes(graph: Graph) -> int:
    """The largest total size of the tensors `run_graph` holds at once: the input, and each operator's
    outputs from the moment they are made to their last use (the heads to the end). Params belong to the
    graph and are not counted, nor an operator's temporaries while it runs."""
    last = last_uses(graph)
    dying: dict[int, int] = {}  # node id -> bytes freed once that node has run
    live = peak = 0
    for nid, node in enumerate(graph.nodes):
        if node.is_variable and node.name != "data":
            continue
        size = 4 * sum(prod(s) for s in node.shapes)
        live += size
        peak = max(peak, live)
        dying[last[nid]] = dying.get(last[nid], 0) + size
        live -= dying.pop(nid, 0)
    return peak


# Bytes of temporaries per element of an operator's largest tensor (conv2d and dense are counted apart): int32
# copies for the operators that move or compare values, int64 operands and results for those that compute.
_SCRATCH_PER_ELEMENT = {
    **dict.fromkeys(["relu", "max_pool2d", "upsampling", "repeat", "tile", "flatten", "concatenate", "expand_dims",
                     "reshape", "squeeze", "transpose", "strided_slice", "take", "cvm_lut", "slice_like", "where",
                     "max", "broadcast_max", "broadcast_greater"], 8),
    "broadcast_div": 48, "get_valid_counts": 48, "non_max_suppression": 48,
}


def scratch_bytes(node: Node, in_shapes: list[tuple[int, ...]]) -> int:
    """An upper bound on the bytes of numpy temporaries `run_op` makes while it computes `node` (besides its
    inputs and its outputs): int64 copies of its operands, and for conv2d and dense their im2col matrices and the
    float64 copies BLAS multiplies. Measured against tracemalloc on the corpus (tests/runtime/test_memory_limits)."""
    sizes = [prod(s) for s in in_shapes] + [prod(s) for s in node.shapes]
    largest = max(sizes, default=0)
    out = sum(prod(s) for s in node.shapes)
    if node.op == "conv2d" and len(in_shapes) >= 2 and len(in_shapes[0]) == 4 and len(in_shapes[1]) == 4:
        n, c, h, w = in_shapes[0]
        oc, icg, kh, kw = in_shapes[1]
        (ph, pw) = node.attrs.get("padding", (0, 0))
        padded = n * c * (h + 2 * ph) * (w + 2 * pw)
        cols = node.attrs.get("groups", 1) * (out // max(oc, 1)) * icg * kh * kw  # G x (N*OH*OW) x (IC*KH*KW)
        # the padded input (int64), im2col (int64 and float64), the weights (int64, float64), the product (float64,
        # int64, transposed, biased)
        return 8 * padded + 16 * cols + 16 * prod(in_shapes[1]) + 32 * out
    if node.op == "dense" and len(in_shapes) >= 2:
        return 16 * prod(in_shapes[0]) + 16 * prod(in_shapes[1]) + 32 * out
    # otherwise int64 operands and results before the int32 outputs are kept (division keeps its signs,
    # magnitudes and quotient besides)
    return _SCRATCH_PER_ELEMENT.get(node.op, 20) * largest


def peak_bytes(graph: Graph) -> int:
    """The largest number of bytes `run_graph` holds at once: the live tensors of `peak_live_bytes` and, while an
    operator runs, its temporaries (`scratch_bytes`). What `max_memory` bounds on the reference device."""
    last = last_uses(graph)
    dying: dict[int, int] = {}
    live = peak = 0
    for nid, node in enumerate(graph.nodes):
        if node.is_variable and node.name != "data":
            continue
        size = 4 * sum(prod(s) for s in node.shapes)
        scratch = 0 if node.is_variable else scratch_bytes(node, [graph.nodes[s].shapes[k] for s, k in node.inputs])
        live += size
        peak = max(peak, live + scratch)
        dying[last[nid]] = dying.get(last[nid], 0) + size
        live -= dying.pop(nid, 0)
    return peak


def run_graph(graph: Graph, data: Array | None) -> list[Array]:
    """Every head of a verified graph, as int32 arrays; `data` is the input, already saturated by the caller.

    Each intermediate is dropped after its last use, so at most `peak_live_bytes(graph)` of tensors are held
    at once. Running out of memory is a CVMRuntimeError naming the node."""
    last = last_uses(graph)
    values: dict[int, list[Array]] = {}
    for nid, node in enumerate(graph.nodes):
        if node.is_variable:
            if node.name == "data":
                if data is None:
                    raise CVMLogicError("the model takes an input 'data', none was given")
                values[nid] = [np.asarray(data, dtype=np.int32).reshape(node.shapes[0])]
            else:
                values[nid] = [graph.params[node.name]]
            continue
        ins = [values[src][k] for src, k in node.inputs]
        precs = [graph.nodes[src].precisions[k] for src, k in node.inputs]
        try:
            values[nid] = run_op(node.op, node.attrs, ins, precs)
        except MemoryError:
            size = 4 * sum(prod(s) for s in node.shapes)
            raise CVMRuntimeError(f"node {nid} ({node.name!r}, {node.op}): out of memory computing its "
                                  f"{size}-byte output") from None
        del ins
        for src in {src for src, _ in node.inputs} | {nid}:
            if last[src] == nid:
                del values[src]
    return [values[nid][k] for nid, k in graph.heads]
