"""The loop nests of the 37 CVM operators, bit for bit the reference interpreter (`cvmc.runtime.references.cvm`).

Four kinds of lowering:
- elementwise ops are scalar functions (`scalar`) of i32 values: a kernel applies them inside one loop nest, and
  a chain of them runs in the epilogue of the op that produces their input (fusion);
- most other ops are a `compute(ivs) -> i32` of the output index (`COMPUTE`): the kernel loops over the output
  shape in an `scf.parallel`, computes the element, runs the epilogue and stores it once;
- conv2d and dense reduce over packed operands (`pack`, `conv2d`, `dense`): contiguous int16 (or int32) dot
  products, with the same epilogue;
- concatenate, get_valid_counts, non_max_suppression and copies write their outputs themselves.

Arithmetic is int32 wrapping (`arith` is), widened to i64 only where the reference widens (non_max_suppression's
areas); division and shifts rely on the loop level's total semantics. Indices are clipped where the reference
clips (take, cvm_lut), windows read INT32_MIN (max_pool2d) or 0 (conv2d) outside the input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod
from typing import Protocol

import numpy as np
from xdsl.dialects.builtin import MemRefType, i1, i8, i32, i64
from xdsl.ir import Attribute

from cvmc.dialects import cvm_rules as rules
from cvmc.passes.loops import x86
from cvmc.passes.loops.builder import (
    INDEX,
    Arg,
    Attrs,
    Epilogue,
    KernelBuilder,
    Value,
    clamp_index,
    in_range,
    narrowed,
    unravel,
    widened,
)
from cvmc.passes.loops.target import DEFAULT, Target
from cvmc.passes.loops.views import Layout

INT32_MIN = -(1 << 31)
INT64_MAX = (1 << 63) - 1

# ---------------------------------------------------------------------------------------------------------
# Elementwise operators: scalar functions of i32 values
# ---------------------------------------------------------------------------------------------------------

UNARY = frozenset({"relu", "abs", "negative", "cvm_precision", "clip", "cvm_clip", "cvm_right_shift",
                   "cvm_left_shift"})
BINARY = frozenset({"elemwise_add", "elemwise_sub", "broadcast_add", "broadcast_sub", "broadcast_mul",
                    "broadcast_max", "broadcast_div", "broadcast_greater"})
ELEMENTWISE = UNARY | BINARY | {"where"}


def _bitlen(k: KernelBuilder, x: Value) -> Value:
    """max(1, bitlen(|x|)) with |INT32_MIN| = 2^31 (unsigned), by a branch-free binary search."""
    u = k.absi(x)
    n = k.const(0)
    for s in (16, 8, 4, 2, 1):
        big = k.cmpi("uge", u, 1 << s)
        n = k.select(big, k.addi(n, s), n)
        u = k.select(big, k.shrui(u, s), u)
    return k.maxsi(k.addi(n, u), 1)  # u is now 0 or 1


def _clip_precision(k: KernelBuilder, x: Value, precision: int) -> Value:
    bound = rules.precision_bound(precision)
    return k.clip(x, -bound, bound)


def scalar(k: KernelBuilder, op: str, a: Attrs, xs: Sequence[Value]) -> Value:
    """One element of an elementwise operator, from its i32 operands."""
    x = xs[0]
    if op == "relu":
        return k.maxsi(x, 0)
    if op == "abs":
        return k.absi(x)
    if op == "negative":
        return k.subi(0, x)
    if op == "cvm_precision":
        return _bitlen(k, x)
    if op == "clip":
        return k.clip(x, a["a_min"], a["a_max"])
    if op == "cvm_clip":
        return _clip_precision(k, x, a["precision"])
    if op == "cvm_right_shift":
        b = a["shift_bit"]
        t = k.shrsi(x, b - 1) if b > 1 else x
        return _clip_precision(k, k.shrsi(k.addi(t, 1), 1), a["precision"])
    if op == "cvm_left_shift":
        return _clip_precision(k, k.shli(x, a["shift_bit"]), a["precision"])
    if op == "where":
        return k.select(k.cmpi("ne", x, 0), xs[1], xs[2])
    y = xs[1]
    if op in ("elemwise_add", "broadcast_add"):
        return k.addi(x, y)
    if op in ("elemwise_sub", "broadcast_sub"):
        return k.subi(x, y)
    if op == "broadcast_mul":
        return k.muli(x, y)
    if op == "broadcast_max":
        return k.maxsi(x, y)
    if op == "broadcast_div":
        return k.divsi(x, y)  # total: x / 0 == 0, INT32_MIN / -1 == INT32_MIN
    if op == "broadcast_greater":
        return k.extui(k.cmpi("sgt", x, y), i32)
    raise AssertionError(f"not an elementwise operator: {op}")


def operand_layout(op: str, index: int, layout: Layout, out_shape: tuple[int, ...]) -> Layout:
    """How an elementwise operator reads operand `index` at each output index: broadcast to the output shape
    (numpy's right alignment; `where`'s 1-D condition selects whole rows, so it aligns left)."""
    if op == "where" and index == 0 and len(layout.shape) != len(out_shape):
        pad = len(out_shape) - 1
        layout = Layout(layout.shape + (1,) * pad, layout.strides + (0,) * pad, layout.offset)
    return layout.broadcast_to(out_shape)


# ---------------------------------------------------------------------------------------------------------
# Operators computed per output element
# ---------------------------------------------------------------------------------------------------------


class _StepNode(Protocol):
    @property
    def op(self) -> str: ...
    @property
    def attrs(self) -> Attrs: ...


class EpilogueStep(Protocol):
    """One operator of a fused epilogue (`plan.Step`): its node and its operands, the running value (None) or
    an index into the kernel's extra inputs."""

    @property
    def node(self) -> _StepNode: ...
    @property
    def sources(self) -> Sequence[int | None]: ...


def fused_epilogue(k: KernelBuilder, steps: Sequence[EpilogueStep],
                   extras: Sequence[Arg]) -> Callable[[Value, list[Value]], Value]:
    """A group's fused epilogue as a function of the anchor's value at an output index: each step (`Group.epilogue`)
    applies its node's op to the value and to the extra inputs it names, read at that index."""

    def load(arg: Arg, ivs: list[Value]) -> Value:  # an extra read from a packed copy is narrower (its values fit)
        v = arg.load(k, ivs)
        return v if v.type == i32 else k.extsi(v, i32)

    def epilogue(v: Value, ivs: list[Value]) -> Value:
        for step in steps:
            xs = [v if src is None else load(extras[src], ivs) for src in step.sources]
            v = scalar(k, step.node.op, step.node.attrs, xs)
        return v

    return epilogue


Compute = Callable[[list[Value]], Value]
ComputeFactory = Callable[[KernelBuilder, Attrs, list[Arg], tuple[int, ...]], Compute]
COMPUTE: dict[str, ComputeFactory] = {}


def _computes(*names: str) -> Callable[[ComputeFactory], ComputeFactory]:
    def register(fn: ComputeFactory) -> ComputeFactory:
        for n in names:
            COMPUTE[n] = fn
        return fn

    return register


@_computes("conv2d")  # the direct loop nest, for convolutions whose im2col rows are too large (`conv2d_fits`)
def _conv2d(k: KernelBuilder, a: Attrs, ins: list[Arg], out_shape: tuple[int, ...]) -> Compute:
    x, w = ins[0], ins[1]
    _, _, h, wd = x.layout.shape
    oc_total, icg, kh, kw = w.layout.shape
    ocg = oc_total // a["groups"]
    (sh, sw), (ph, pw), (dh, dw) = a["strides"], a["padding"], a["dilation"]

    def compute(ivs: list[Value]) -> Value:
        n, oc, oh, ow = ivs
        c0 = k.muli(k.divsi(oc, ocg), icg) if a["groups"] > 1 else k.idx(0)
        ih0 = k.subi(k.muli(oh, sh), ph)
        iw0 = k.subi(k.muli(ow, sw), pw)

        def over_c(ic: Value, acc: Value) -> list[Value]:
            c = k.addi(c0, ic)

            def over_i(i: Value, acc: Value) -> list[Value]:
                ih = k.addi(ih0, k.muli(i, dh))
                row_ok = in_range(k, ih, h)
                ih_c = clamp_index(k, ih, h)

                def over_j(j: Value, acc: Value) -> list[Value]:
                    iw = k.addi(iw0, k.muli(j, dw))
                    ok = k.andi(row_ok, in_range(k, iw, wd))
                    v = k.select(ok, x.load(k, [n, c, ih_c, clamp_index(k, iw, wd)]), k.const(0))
                    return [k.addi(acc, k.muli(v, w.load(k, [oc, ic, i, j])))]

                return k.for_(kw, over_j, inits=[acc])

            return k.for_(kh, over_i, inits=[acc])

        acc = k.for_(icg, over_c, inits=[k.const(0)])[0]
        return k.addi(acc, ins[2].load(k, [oc])) if len(ins) > 2 else acc

    return compute


def _pool_padding(a: Attrs) -> tuple[int, int]:
    pad = a["padding"]
    return (pad[0], pad[0]) if len(pad) == 1 else (pad[0], pad[1])


@_computes("max_pool2d")
def _max_pool2d(k: KernelBuilder, a: Attrs, ins: list[Arg], out_shape: tuple[int, ...]) -> Compute:
    x = ins[0]
    _, _, h, wd = x.layout.shape
    (psh, psw), (sh, sw), (ph, pw) = a["pool_size"], a["strides"], _pool_padding(a)

    def compute(ivs: list[Value]) -> Value:
        n, c, oh, ow = ivs
        ih0 = k.subi(k.muli(oh, sh), ph)
        iw0 = k.subi(k.muli(ow, sw), pw)

        def over_i(i: Value, acc: Value) -> list[Value]:
            ih = k.addi(ih0, i)
            row_ok = in_range(k, ih, h)
            ih_c = clamp_index(k, ih, h)

            def over_j(j: Value, acc: Value) -> list[Value]:
                iw = k.addi(iw0, j)
                ok = k.andi(row_ok, in_range(k, iw, wd))
                v = x.load(k, [n, c, ih_c, clamp_index(k, iw, wd)])
                return [k.select(ok, k.maxsi(acc, v), acc)]  # padding cells are INT32_MIN: no change

            return k.for_(psw, over_j, inits=[acc])

        return k.for_(psh, over_i, inits=[k.const(INT32_MIN)])[0]

    return compute


@_computes("upsampling")
def _upsampling(k: KernelBuilder, a: Attrs, ins: list[Arg], out_shape: tuple[int, ...]) -> Compute:
    s = a["scale"]
    return lambda ivs: ins[0].load(k, [ivs[0], ivs[1], k.divsi(ivs[2], s), k.divsi(ivs[3], s)])


@_computes("repeat")
def _repeat(k: KernelBuilder, a: Attrs, ins: list[Arg], out_shape: tuple[int, ...]) -> Compute:
    ax: int = a["axis"] % len(out_shape)

    def compute(ivs: list[Value]) -> Value:
        src = list(ivs)
        src[ax] = k.divsi(ivs[ax], a["repeats"])
        return ins[0].load(k, src)

    return compute


@_computes("tile")
def _tile(k: KernelBuilder, a: Attrs, ins: list[Arg], out_shape: tuple[int, ...]) -> Compute:
    shape = ins[0].layout.shape
    lead = len(out_shape) - len(shape)

    def compute(ivs: list[Value]) -> Value:
        src = [ivs[lead + d] if n == out_shape[lead + d] else k.remsi(ivs[lead + d], n) for d, n in enumerate(shape)]
        return ins[0].load(k, src)

    return compute


@_computes("strided_slice")
def _strided_slice(k: KernelBuilder, a: Attrs, ins: list[Arg], out_shape: tuple[int, ...]) -> Compute:
    """Only slices with a negative stride get here (the others are views)."""
    bounds = rules.strided_slice_bounds(ins[0].layout.shape, a["begin"], a["end"], a["stride"])
    return lambda ivs: ins[0].load(k, [k.addi(k.muli(i, st), b) for i, (b, st, _) in zip(ivs, bounds)])


def _load_flat(k: KernelBuilder, arg: Arg, flat: Value) -> Value:
    """Element `flat` of the row-major order of `arg` (one load when the layout is 1-D)."""
    shape = arg.layout.shape
    return arg.load(k, [flat] if len(shape) == 1 else unravel(k, flat, shape))


def flat_layout(layout: Layout) -> Layout:
    """A 1-D view of a tensor when strides allow it, else the layout itself (read by unravelling)."""
    return layout.reshape((layout.size,)) or layout


def _clipped_index(k: KernelBuilder, v: Value, n: int) -> Value:
    return k.to_index(k.clip(v, 0, n - 1))


@_computes("take")
def _take(k: KernelBuilder, a: Attrs, ins: list[Arg], out_shape: tuple[int, ...]) -> Compute:
    data, idx = ins
    if a["axis"] is None:
        size = data.layout.size
        return lambda ivs: _load_flat(k, data, _clipped_index(k, idx.load(k, ivs), size))
    ax: int = a["axis"] % len(data.layout.shape)
    m = len(idx.layout.shape)
    n = data.layout.shape[ax]

    def compute(ivs: list[Value]) -> Value:
        j = _clipped_index(k, idx.load(k, ivs[ax:ax + m]), n)
        return data.load(k, [*ivs[:ax], j, *ivs[ax + m:]])

    return compute


@_computes("cvm_lut")
def _cvm_lut(k: KernelBuilder, a: Attrs, ins: list[Arg], out_shape: tuple[int, ...]) -> Compute:
    x, table = ins
    size = table.layout.size
    return lambda ivs: _load_flat(k, table, _clipped_index(k, x.load(k, ivs), size))


def _reduce(start_zero: bool, combine: str) -> ComputeFactory:
    def factory(k: KernelBuilder, a: Attrs, ins: list[Arg], out_shape: tuple[int, ...]) -> Compute:
        x = ins[0]
        shape = x.layout.shape
        axes = rules.reduce_axes(shape, a["axis"], a["exclude"])
        kept = [d for d in range(len(shape)) if d not in axes]
        start = 0 if start_zero or (not a["axis"] and not a["exclude"]) else INT32_MIN

        def compute(ivs: list[Value]) -> Value:
            src: list[Value | None] = [None] * len(shape)
            for j, d in enumerate(kept):
                src[d] = ivs[d] if a["keepdims"] else ivs[j]

            def nest(r: int, acc: Value) -> Value:
                if r == len(axes):
                    at = [i for i in src if i is not None]
                    assert len(at) == len(shape)  # each dim kept or reduced
                    v = x.load(k, at)
                    return k.addi(acc, v) if combine == "add" else k.maxsi(acc, v)

                def body(i: Value, acc: Value) -> list[Value]:
                    src[axes[r]] = i
                    return [nest(r + 1, acc)]

                return k.for_(shape[axes[r]], body, inits=[acc])[0]

            return nest(0, k.const(start))

        return compute

    return factory


COMPUTE["sum"] = _reduce(True, "add")
COMPUTE["max"] = _reduce(False, "max")


def flat_inputs(op: str, a: Attrs) -> tuple[int, ...]:
    """The inputs an operator reads by flat (row-major) index: given a 1-D view when strides allow it."""
    if op == "take" and a["axis"] is None:
        return (0,)
    return (1,) if op == "cvm_lut" else ()


# ---------------------------------------------------------------------------------------------------------
# Operators that write their outputs themselves
# ---------------------------------------------------------------------------------------------------------

def concatenate(k: KernelBuilder, a: Attrs, out: Arg, ins: list[Arg], epilogue: Epilogue) -> None:
    """Each input copied into its slice of the output along axis."""
    ax: int = a["axis"] % len(out.layout.shape)
    start = 0
    for arg in ins:
        def body(ivs: list[Value], arg: Arg = arg, start: int = start) -> None:
            dst = list(ivs)
            if start:
                dst[ax] = k.addi(ivs[ax], start)
            k.store(epilogue(arg.load(k, ivs), dst), out.mem, dst)

        k.loops(arg.layout.shape, body, parallel=True)
        start += arg.layout.shape[ax]


def copy(k: KernelBuilder, out: Arg, src: Arg) -> None:
    """out = src element by element (the output given in the source's shape)."""
    k.loops(src.layout.shape, lambda ivs: k.store(src.load(k, ivs), out.mem, ivs), parallel=True)


def get_valid_counts(k: KernelBuilder, a: Attrs, outs: list[Arg], ins: list[Arg]) -> None:
    """count[b] and the rows with score > threshold compacted in order, then rows of -1."""
    count, y = outs
    x = ins[0]
    nb, n, kk = x.layout.shape
    minus_one = k.const(-1)

    def batch(b: Value) -> None:
        def row(r: Value, c: Value) -> list[Value]:
            keep = k.cmpi("sgt", x.load(k, [b, r, 1]), a["score_threshold"])

            def copy_row() -> None:
                k.for_(kk, lambda q: k.store(x.load(k, [b, r, q]), y.mem, [b, c, q]))

            k.if_(keep, copy_row)
            return [k.select(keep, k.addi(c, 1), c)]

        c = k.for_(n, row, inits=[k.idx(0)])[0]
        k.for_(n, lambda r: k.for_(kk, lambda q: k.store(minus_one, y.mem, [b, r, q])), lb=c)
        k.store(k.index_cast(c, i32), count.mem, [b])

    k.for_(nb, batch)


def _iou(k: KernelBuilder, p: list[Value], q: list[Value]) -> Value:
    """FORMAL's 100 x overlap / union of corner boxes [x1, y1, x2, y2] (spec section 5), as i64."""
    def area(r: list[Value]) -> Value:
        return k.muli(k.extsi(k.subi(r[2], r[0]), i64), k.extsi(k.subi(r[3], r[1]), i64))

    total = k.addi(area(p), area(q))
    w = k.maxsi(k.subi(k.minsi(p[2], q[2]), k.maxsi(p[0], q[0])), 0)
    h = k.maxsi(k.subi(k.minsi(p[3], q[3]), k.maxsi(p[1], q[1])), 0)
    overlap = k.muli(k.extsi(w, i64), k.extsi(h, i64))
    union = k.subi(total, overlap)
    big = k.cmpi("sgt", overlap, INT64_MAX // 100)
    ratio = k.select(big, k.divsi(overlap, k.maxsi(k.divsi(union, 100), 1)), k.divsi(k.muli(overlap, 100), union))
    empty = k.ori(k.cmpi("sle", total, 0), k.cmpi("sle", union, 0))
    return k.select(empty, k.const(0, i64), ratio)


def non_max_suppression(k: KernelBuilder, a: Attrs, outs: list[Arg], ins: list[Arg], order: Arg) -> None:
    """Per batch: stable sort of the first T rows by score (descending) into `order`, then the greedy walk of
    spec section 5; kept rows first, then rows of -1."""
    (y,) = outs
    x, valid = ins
    nb, n, kk = x.layout.shape
    minus_one = k.const(-1)
    thr = a["iou_threshold"]

    def batch(b: Value) -> None:
        t = k.to_index(k.clip(valid.load(k, [b]), 0, n))

        def rank_of(i: Value) -> None:
            si = x.load(k, [b, i, 1])

            def count(j: Value, r: Value) -> list[Value]:
                sj = x.load(k, [b, j, 1])
                before = k.ori(k.cmpi("sgt", sj, si), k.andi(k.cmpi("eq", sj, si), k.cmpi("slt", j, i)))
                return [k.addi(r, k.extui(before, i32))]

            r = k.for_(t, count, inits=[k.const(0)])[0]
            k.store(k.index_cast(i, i32), order.mem, [k.to_index(r)])

        k.for_(t, rank_of)
        walk = t if a["top_k"] < 0 else k.minsi(t, a["top_k"])
        limit = t if a["max_output_size"] < 0 else k.minsi(t, a["max_output_size"])

        def visit(p: Value, kept: Value) -> list[Value]:
            i = k.to_index(order.load(k, [p]))
            cls = x.load(k, [b, i, 0])
            active = k.andi(k.cmpi("slt", kept, limit), k.cmpi("sge", cls, 0))

            def try_keep() -> list[Value]:
                box = [x.load(k, [b, i, 2 + c]) for c in range(4)]

                def against(q: Value, sup: Value) -> list[Value]:
                    other = [y.load(k, [b, q, 2 + c]) for c in range(4)]
                    hit = k.cmpi("sge", _iou(k, other, box), thr)
                    if not a["force_suppress"]:
                        hit = k.andi(hit, k.cmpi("eq", y.load(k, [b, q, 0]), cls))
                    return [k.ori(sup, hit)]

                suppressed = k.for_(kept, against, inits=[k.const(0, i1)])[0]
                keep = k.cmpi("eq", suppressed, k.const(0, i1))

                def store_row() -> None:
                    k.for_(kk, lambda c: k.store(x.load(k, [b, i, c]), y.mem, [b, kept, c]))

                k.if_(keep, store_row)
                return [k.select(keep, k.addi(kept, 1), kept)]

            return k.if_(active, try_keep, lambda: [kept], [INDEX])

        kept = k.for_(walk, visit, inits=[k.idx(0)])[0]
        k.for_(n, lambda r: k.for_(kk, lambda c: k.store(minus_one, y.mem, [b, r, c])), lb=kept)

    k.for_(nb, batch)



# ---------------------------------------------------------------------------------------------------------
# conv2d and dense on packed operands
# ---------------------------------------------------------------------------------------------------------
#
# The reduction of both runs over a contiguous row of packed values: the input as zero-padded NHWC (conv2d, read
# into an im2col row of (kh, kw, c) per output pixel) or as rows (dense), the weight as one row per output
# channel in the same (kh, kw, c) order, padded with zeros to a multiple of 16. Every product of two int16
# values fits int32 exactly and the int32 accumulation wraps like the reference's, in any order.
#
# Three element types, chosen by `cvm-pack-operands` from the operands' value bounds (`cvm_value_bits`):
# - "u8" x "i8" when both fit int8 (|x| <= 127) and the target has AVX512-VNNI (`Target.has`): the input is
#   packed as x + 128 in an unsigned byte (padding too: the padding 0 becomes 128), the weight as a signed byte;
#   the dot product is the loop-level op `cvmc.dot_u8s8` (printed as `vpdpbusd`, 64 byte pairs per step), and
#   128 * sum(w) over the whole weight row is subtracted: sum((x + 128) * w) - 128 * sum(w) = sum(x * w). No
#   step saturates and int32 wraps, so the result is the reference's whenever the true sum fits int32 (and
#   wraps like it otherwise: every step is the same sum modulo 2^32). Rows are padded to a multiple of 64.
# - "i16" when both fit int16: a conv2d (one group) whose weight is a param takes the register-blocked micro-kernel
#   `cvmc.mmk_i16` (below); otherwise `vpmaddwd` / `vpdpwssd` from LLVM's vectorizer;
# - "i32" otherwise.
#
def is_byte(element: str) -> bool:
    return element in ("u8", "i8")


def padded(k: int, element: str = "i16", target: Target = DEFAULT) -> int:
    """The packed length of a reduction of length k: a multiple of 16 from 16 up (zeros past k); for bytes a
    multiple of 64 (one `vpdpbusd` step) from 64 up; for bytes on the GPU a multiple of 4 (one `__dp4a` word)."""
    if is_byte(element):
        if target.gpu is not None:
            return max(1, -(-k // 4)) * 4
        return max(1, -(-k // 64)) * 64
    return k if k < 16 else -(-k // 16) * 16


def pack_values(pack: Attrs, array: np.ndarray, element: str) -> np.ndarray:
    """A param packed at compile time, as the `pack` kernel would pack it."""
    a = np.asarray(array, dtype=np.int64)
    if pack["to"] == "conv_weight_blocked":  # (OC / lanes, width / g, lanes, g), zero-padded (see MMK_I16)
        rows, lanes, width, g = a.shape[0], pack["lanes"], pack["width"], pack["group"]
        a = a.transpose(0, 2, 3, 1).reshape(rows, -1)
        blocks = -(-rows // lanes)
        out = np.zeros((blocks * lanes, width), dtype=np.int8 if element == "i8" else np.int16)
        out[:rows, :a.shape[1]] = a
        return out.reshape(blocks, lanes, width // g, g).transpose(0, 2, 1, 3).reshape(blocks, width // g, g * lanes)
    if pack["to"] == "conv_weight":
        a = a.transpose(0, 2, 3, 1).reshape(a.shape[0], -1)  # (OC, KH, KW, C/g) rows
    dtype = {"i16": np.int16, "i8": np.int8, "u8": np.uint8}.get(element, np.int32)
    zero_point = pack.get("zero_point", 0)
    out = np.full((a.shape[0], pack["width"]), zero_point, dtype=dtype)
    out[:, :a.shape[1]] = a + zero_point
    return out


def is_byte_type(element: Attribute) -> bool:
    return element == i8


def pack(k: KernelBuilder, a: Attrs, out: Arg, src: Arg) -> None:
    """`out` = `src` packed (`a["to"]`): zero-padded NHWC, conv weight rows (kh, kw, c), or rows, zero-extended
    to the packed width; narrowed to the packed element type (the values fit it). With `a["zero_point"]` (the u8
    packing) every value, padding included, is stored plus the zero point."""
    element = out.element_type
    zero_point = a.get("zero_point", 0)
    zero = k.const(zero_point, element)  # wrapped: 128 is the byte 0x80

    def narrow(v: Value) -> Value:
        return narrowed(k, k.addi(v, zero_point) if zero_point else v, element)

    if a["to"] == "nhwc":
        _, c, h, w = src.layout.shape
        ph, pw = a["padding"]

        # the bytes of the u8 x s8 micro-kernel: tiles of 8 channels x 8 columns transposed in registers
        # (`cvmc.pack_tile`, VNNI's x + 128 included), else the loop below
        tiled = (is_byte_type(element) and c % x86.PACK_TILE == 0 and w % x86.PACK_TILE == 0
                 and src.layout.strides[3] == 1 and k.target.blocked)

        def row(ivs: list[Value]) -> None:
            n, hp = ivs
            ih = k.subi(hp, ph)
            inside = in_range(k, ih, h)
            ih_c = clamp_index(k, ih, h)

            if tiled:
                def border(wp: Value) -> None:
                    k.for_(c, lambda ci: k.store(zero, out.mem, [n, hp, wp, ci]))

                def tile(ivs: list[Value]) -> None:
                    c0, w0 = (k.muli(v, x86.PACK_TILE) for v in ivs)
                    x86.pack_tile(k, src.mem, [n, c0, ih_c, w0], out.mem, [n, hp, k.addi(w0, pw), c0], inside,
                                  zero_point)

                k.for_(pw, border)
                k.loops([c // x86.PACK_TILE, w // x86.PACK_TILE], tile)
                k.for_(w + 2 * pw, border, lb=w + pw)
                return

            def channel(ci: Value) -> None:
                def col(wp: Value) -> None:
                    iw = k.subi(wp, pw)
                    ok = k.andi(inside, in_range(k, iw, w))
                    v = src.load(k, [n, ci, ih_c, clamp_index(k, iw, w)])
                    k.store(k.select(ok, narrow(v), zero), out.mem, [n, hp, wp, ci])

                k.for_(w + 2 * pw, col)

            k.for_(c, channel)

        k.loops(out.layout.shape[:2], row, parallel=True)
        return
    rows, width = out.layout.shape
    if a["to"] == "conv_weight":
        _, cg, kh, kw = src.layout.shape

        def weight_row(ivs: list[Value]) -> None:
            (o,) = ivs
            k.loops([kh, kw, cg], lambda t: k.store(narrow(src.load(k, [o, t[2], t[0], t[1]])), out.mem,
                                                   [o, k.addi(k.muli(k.addi(k.muli(t[0], kw), t[1]), cg), t[2])]))
            k.for_(width, lambda i: k.store(zero, out.mem, [o, i]), lb=kh * kw * cg)

        k.loops([rows], weight_row, parallel=True)
        return
    depth = src.layout.shape[1]

    def plain_row(ivs: list[Value]) -> None:
        (r,) = ivs
        k.for_(depth, lambda i: k.store(narrow(src.load(k, [r, i])), out.mem, [r, i]))
        k.for_(width, lambda i: k.store(zero, out.mem, [r, i]), lb=depth)

    k.loops([rows], plain_row, parallel=True)


def _dot(k: KernelBuilder, a: Value, a_idx: list[Value], b: Value, b_idx: list[Value], depth: int) -> Value:
    """sum over i < depth of a[a_idx..., i] * b[b_idx..., i], widened to int32 (wrapping)."""
    def step(i: Value, acc: Value) -> list[Value]:
        x = widened(k, k.load(a, [*a_idx, i]))
        y = widened(k, k.load(b, [*b_idx, i]))
        return [k.addi(acc, k.muli(x, y))]

    return k.for_(depth, step, inits=[k.const(0)])[0]


def dense(k: KernelBuilder, out: Arg, ins: list[Arg], epilogue: Epilogue) -> None:
    """Y[m, u] = dot(X[m], W[u]) (+ B[u]) over packed rows."""
    x, w = ins[0], ins[1]
    depth = x.layout.shape[1]
    if x86.is_byte_memref(x.mem):
        def unit(ivs: list[Value]) -> None:
            (u,) = ivs
            comp = x86.compensation(k, w.mem, [u], depth)
            bias = ins[2].load(k, [u]) if len(ins) > 2 else None

            def row(m: Value) -> None:
                v = k.subi(x86.dot_u8s8(k, x.mem, [m], w.mem, [u], depth)[0], comp)
                if bias is not None:
                    v = k.addi(v, bias)
                k.store(epilogue(v, [m, u]), out.mem, [m, u])

            k.for_(out.layout.shape[0], row)

        k.loops([out.layout.shape[1]], unit, parallel=True)
        return

    def element(ivs: list[Value]) -> None:
        u, m = ivs  # a weight row stays in the L1 cache while every data row meets it
        v = _dot(k, x.mem, [m], w.mem, [u], depth)
        if len(ins) > 2:
            v = k.addi(v, ins[2].load(k, [u]))
        k.store(epilogue(v, [m, u]), out.mem, [m, u])

    k.loops(out.layout.shape[::-1], element, parallel=True)


# An im2col tile is at most this many bytes (it and a weight row stay in the L1 cache), unless one pixel alone
# needs more; a pixel that needs more than IM2COL_LIMIT bytes (on the stack of the calling thread) makes the
# convolution take the direct loop nest instead (`COMPUTE["conv2d"]`).
IM2COL_BYTES = 32 * 1024
IM2COL_LIMIT = 1 << 20


def conv2d_fits(a: Attrs, weight_shape: tuple[int, ...], element: str, target: Target = DEFAULT) -> bool:
    """Whether the im2col buffer of one output pixel of this convolution fits IM2COL_LIMIT."""
    item = 1 if is_byte(element) else 2 if element == "i16" else 4
    return a["groups"] * padded(prod(weight_shape[1:]), element, target) * item <= IM2COL_LIMIT


def conv2d(k: KernelBuilder, a: Attrs, out: Arg, ins: list[Arg], epilogue: Epilogue) -> None:
    """Y[n, oc, oh, ow] = dot(im2col row of (oh, ow) in group g(oc), W[oc]) (+ B[oc]).

    Per output row (the parallel loop, split over threads), a tile of output pixels is gathered into an im2col
    buffer (contiguous copies of C/g channels from the padded NHWC input), then each output channel takes one
    dot product per pixel of the tile."""
    x, w = ins[0], ins[1]
    if len(w.layout.shape) == 3:
        x86.conv2d_blocked(k, a, out, ins, epilogue)
        return
    n_, oc_total, oh_, ow_ = out.layout.shape
    _, _, _, c = x.layout.shape
    width = w.layout.shape[1]
    groups = a["groups"]
    cg, ocg = c // groups, oc_total // groups
    kh, kw = a["kernel_size"]
    (sh, sw), (dh, dw) = a["strides"], a["dilation"]
    depth = kh * kw * cg
    element = x.element_type
    byte = element == i8
    item = 1 if byte else 2 if element != i32 else 4
    tiles = -(-ow_ * groups * width * item // IM2COL_BYTES)
    tile = -(-ow_ // tiles)
    zero = k.const(0, element)
    cols_type = MemRefType(element, [groups, tile, width])

    def row(ivs: list[Value]) -> None:
        n, oh = ivs
        cols = k.alloca(cols_type)

        def over_tile(t: Value) -> None:
            ow0 = k.muli(t, tile)
            count = k.minsi(k.idx(tile), k.subi(k.idx(ow_), ow0))

            def gather(g: Value, j: Value) -> None:
                iw0 = k.muli(k.addi(ow0, j), sw)
                c0 = k.muli(g, cg)

                def tap(ivs: list[Value]) -> None:
                    i, jj = ivs
                    ih = k.addi(k.muli(oh, sh), k.muli(i, dh))
                    iw = k.addi(iw0, k.muli(jj, dw))
                    base = k.muli(k.addi(k.muli(i, kw), jj), cg)
                    k.for_(cg, lambda ci: k.store(x.load(k, [n, ih, iw, k.addi(c0, ci)]), cols,
                                                  [g, j, k.addi(base, ci)]))

                k.loops([kh, kw], tap)
                k.for_(width, lambda i: k.store(zero, cols, [g, j, i]), lb=depth)

            k.for_(groups, lambda g: k.for_(count, lambda j: gather(g, j)))

            def channel(oc: Value) -> None:
                g = k.divsi(oc, ocg) if groups > 1 else k.idx(0)
                bias = ins[2].load(k, [oc]) if len(ins) > 2 else None
                comp = x86.compensation(k, w.mem, [oc], width) if byte else None

                def finish(j: Value, v: Value) -> None:
                    if comp is not None:
                        v = k.subi(v, comp)
                    if bias is not None:
                        v = k.addi(v, bias)
                    dst = [n, oc, oh, k.addi(ow0, j)]
                    k.store(epilogue(v, dst), out.mem, dst)

                if comp is None:
                    k.for_(count, lambda j: finish(j, _dot(k, cols, [g, j], w.mem, [oc], width)))
                    return

                def block(j: Value) -> None:  # x86.DOT_ROWS pixels share each load of the weight row
                    for r, v in enumerate(x86.dot_u8s8(k, cols, [g, j], w.mem, [oc], width, x86.DOT_ROWS)):
                        finish(k.addi(j, r) if r else j, v)

                blocked = k.subi(count, k.remsi(count, x86.DOT_ROWS))
                k.for_(blocked, block, step=x86.DOT_ROWS)
                k.for_(count, lambda j: finish(j, x86.dot_u8s8(k, cols, [g, j], w.mem, [oc], width)[0]), lb=blocked)

            k.for_(oc_total, channel)

        k.for_(tiles, over_tile)

    k.loops([n_, oh_], row, parallel=True)
