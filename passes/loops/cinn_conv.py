"""The cinn path's fast float convolutions, NCHW and NHWC (the default float order; `exact_float` keeps the
row forms and the element-wise form of `cvmc.passes.convert_cinn_to_loops`): im2col-free, register-blocked
micro-kernels whose inner loops run along a row of the output at a constant trip count, so LLVM's vectorizer turns
them into full-width vector multiply-adds. Both layouts run the same loops (only the copies into and out of the
stack slots index differently), so they give the same bits.

The input rows a tap reads are first copied into a zero-padded row buffer (a stack slot), so every tap runs over
the whole output row: taps outside the input contribute x_padded * w = 0 * w, as in the reference
(`cvmc.runtime.references.cinn.conv`, which zero-pads), instead of being skipped. That changes only the sign of an
all-zero sum (+0 + -0) and gives NaN where an out-of-range tap meets an infinite or NaN weight (as the
reference does). Each product is added by one fused multiply-add (`Scalar.madd`: one rounding a step instead of
two, each step at least as accurate as mul-then-add, so each order's bound below holds as for mul-then-add); the
order of the products is:

- forward and backward_data (stride 1): each output element sums its taps (c, p, q) in the element-wise form's
  order (within taps * eps * sum |products| of the exact sum, as that order is), BLOCK output channels and RB
  output rows (the most of 4, 2, 1 dividing the row count) per iteration sharing each load of the weights and the
  padded source rows, the kh * kw taps of one input channel added to an accumulator row kept in a stack slot (one
  load and one store per kh * kw multiply-adds);
- backward_filter (one input channel, a block of output channels, RB rows a pass): dw[o, c, p, q] is the sum over
  the output column j ascending of lane j, where lane j sums dy[n, o, i, j] * x_padded[n, c, i * s + p * d,
  j * s + q * d] over (n, i) ascending: ow lanes that vectorize. Its error against the exact sum is at most
  (n * oh + ow) * eps * sum |products| (the element-wise order's bound is n * oh * ow * eps * sum |products|).

The order is fixed (the same on any thread count and host).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import MemRefType

from cvmc.dialects import cinn
from cvmc.passes.loops.builder import KernelBuilder, Value
from cvmc.passes.loops.cinn_scalar import Emitter, Scalar

# The most floats a stack slot of one kernel holds (the accumulators and the padded rows): beyond, the row forms.
MAX_SLOT = 1 << 14
# The most multiply-adds of one column step of backward_filter (taps x rows a pass): LLVM 22's loop vectorizer
# leaves larger steps scalar, and 1 x 8 x 8 (576) runs no faster than 1 x 8 x 4 (288) (times: bench/results/cpu.md
# and the git log).
FILTER_BODY = 288


def _source_rows(rb: int, row_stride: int, roffs: list[int]) -> list[int]:
    """The source rows that `rb` consecutive output rows read, ascending, as offsets from the first one's
    (output row i and tap p read source row i * row_stride + roffs[p], padding aside)."""
    return sorted({r * row_stride + d for r in range(rb) for d in roffs})


def conv_roles(op: cinn.ConvOp) -> tuple[bool, int, int, int, Value, Value, int, int, int]:
    """Forward and backward_data (a forward correlation of dy with the taps mirrored) as one loop nest: (forward,
    output channels, output rows, output columns, source, filter, source rows, source columns, channels summed)."""
    g = op.geometry()
    lhs, rhs = op.operands
    if op.conv_type.data == cinn.ConvType.FORWARD:  # y [n, o, oh, ow] from x (lhs) and w (rhs)
        return True, g.o, g.oh, g.ow, lhs, rhs, g.h, g.w, g.c // g.groups
    return False, g.c, g.h, g.w, rhs, lhs, g.oh, g.ow, g.o // g.groups  # dx [n, c, h, w] from dy (rhs), w (lhs)


def _at(g: cinn.ConvGeometry, n: Value, c: Value, h: Value, w: Value) -> list[Value]:
    """The index of (n, c, h, w) in an activation of the conv's layout."""
    return [n, c, h, w] if g.data_format == cinn.DataFormat.NCHW else [n, h, w, c]


def _padded_rows(k: KernelBuilder, s: Scalar, buf: Value, at: int, load: Callable[[Value, Value], Value], row: Value,
                 rows: int, lo: int, width: int, cols: int) -> None:
    """buf[at + t] = source[row, lo + t] for t < width, 0 outside the source (rows x cols); `load(row, col)`."""
    zero = s.const(0)
    first, last = max(0, -lo), min(width, cols - lo)  # the t whose column lies inside the source

    def inside() -> None:
        for t in [*range(0, min(first, width)), *range(max(last, 0), width)]:
            k.store(zero, buf, [at + t])
        if first < last:
            k.for_(last, lambda t: k.store(load(row, k.addi(t, k.idx(lo))), buf, [k.addi(t, k.idx(at))]), lb=first)

    def outside() -> None:
        k.for_(width, lambda t: k.store(zero, buf, [k.addi(t, k.idx(at))]))

    k.if_(k.andi(k.cmpi("sge", row, k.idx(0)), k.cmpi("slt", row, k.idx(rows))), inside, outside)


def conv_padded(e: Emitter, op: cinn.ConvOp) -> bool:
    """Emit `op` as a padded-row micro-kernel (see the module docstring); False (nothing emitted) for the forms
    it does not cover: backward_data at a stride other than 1, non-float types, buffers over MAX_SLOT."""
    g = op.geometry()
    kind = op.conv_type.data
    s = Scalar(e.k, e.scalar_type(op), exact_float=False)  # only the default float order comes here
    if not s.is_float:
        return False
    if kind == cinn.ConvType.BACKWARD_FILTER:
        return _filter_lanes(e, op, s)
    if kind == cinn.ConvType.BACKWARD_DATA and (g.stride_h, g.stride_w) != (1, 1):
        return False
    k, out = e.k, e.outputs[0]
    cg, og = g.c // g.groups, g.o // g.groups
    forward, channels, rows_out, cols_out, source, filt, src_rows, src_cols, inner = conv_roles(op)
    stride = g.stride_w if forward else 1
    # source column of output column j and tap q: j * stride + offsets[q]; of row i and tap p: i * rs + roffs[p]
    offsets = [q * g.dilation_w - g.pad_left if forward else g.pad_left - q * g.dilation_w for q in range(g.kw)]
    row_stride = g.stride_h if forward else 1
    roffs = [p * g.dilation_h - g.pad_top if forward else g.pad_top - p * g.dilation_h for p in range(g.kh)]
    lo = min(offsets)
    width = (cols_out - 1) * stride + max(offsets) - lo + 1
    block = next(r for r in (8, 4, 2, 1) if channels % r == 0) if g.groups == 1 else 1
    taps = [(p, q) for p in range(g.kh) for q in range(g.kw)]

    # RB output rows a pass share the weights' loads and the padded source rows they both read
    fits = [r for r in (4, 2, 1)
            if rows_out % r == 0 and r * block * cols_out + len(_source_rows(r, row_stride, roffs)) * width <= MAX_SLOT]
    if not fits:
        return False
    rb = fits[0]
    offs = _source_rows(rb, row_stride, roffs)
    slot_of = {d: t for t, d in enumerate(offs)}  # the buffer row of each source row offset

    def body(ivs: list[Value]) -> None:
        u, i_block = ivs
        acc = k.alloca(MemRefType(s.type, [rb * block * cols_out]))
        rows = k.alloca(MemRefType(s.type, [len(offs) * width]))
        blocks = channels // block
        n, first_ch = k.divsi(u, k.idx(blocks)), k.muli(k.remsi(u, k.idx(blocks)), k.idx(block))
        chs = [k.addi(first_ch, k.idx(b)) if b else first_ch for b in range(block)]
        i0 = k.muli(i_block, k.idx(rb)) if rb != 1 else i_block
        if forward:
            base = k.muli(k.divsi(chs[0], k.idx(og)), k.idx(cg))  # the group's first input channel
        else:
            base = k.muli(k.divsi(chs[0], k.idx(cg)), k.idx(og))
        ccs = chs if forward else [k.remsi(c, k.idx(cg)) for c in chs]
        zero = s.const(0)
        k.for_(rb * block * cols_out, lambda t: k.store(zero, acc, [t]))

        def channel(c: Value) -> None:
            src_channel = k.addi(base, c)
            first = k.muli(i0, k.idx(row_stride)) if row_stride != 1 else i0
            for d in offs:
                _padded_rows(k, s, rows, slot_of[d] * width, lambda r, t: e.value(source, _at(g, n, src_channel, r, t)),
                             k.addi(first, k.idx(d)), src_rows, lo, width, src_cols)
            weights = [[e.value(filt, [o, c, k.idx(p), k.idx(q)] if forward else [src_channel, cc, k.idx(p), k.idx(q)])
                        for p, q in taps] for o, cc in zip(chs, ccs)]

            def column(j: Value) -> None:
                at = k.muli(j, k.idx(stride)) if stride != 1 else j
                for r in range(rb):
                    xs = [k.load(rows, [k.addi(at, k.idx(slot_of[r * row_stride + roffs[p]] * width + offsets[q]
                                                         - lo))]) for p, q in taps]
                    for b, wvs in enumerate(weights):
                        slot = k.addi(j, k.idx((r * block + b) * cols_out)) if r or b else j
                        a = k.load(acc, [slot])
                        for xv, wv in zip(xs, wvs):
                            a = s.madd(a, xv, wv)
                        k.store(a, acc, [slot])

            k.for_(cols_out, column)

        k.for_(inner, channel)

        def store(j: Value) -> None:
            for r in range(rb):
                i = k.addi(i0, k.idx(r)) if r else i0
                for b, o in enumerate(chs):
                    slot = k.addi(j, k.idx((r * block + b) * cols_out)) if r or b else j
                    k.store(k.load(acc, [slot]), out, _at(g, n, o, i, j))

        k.for_(cols_out, store)

    k.parallel([g.n * channels // block, rows_out // rb], body)
    return True


def _filter_lanes(e: Emitter, op: cinn.ConvOp, s: Scalar) -> bool:
    """backward_filter in ow lanes (the module docstring's order): one input channel and a block of OB output
    channels per iteration, the padded x rows of RB output rows (n, i .. i + RB - 1) shared by the OB output
    channels (and by the rows that read the same input row) and each dy element by the kh * kw taps. Each lane's
    accumulator is loaded once, takes the RB products of its rows in order (i ascending, the same sum as one row at
    a time) and is stored once: RB multiply-adds a load and a store."""
    g = op.geometry()
    k, out = e.k, e.outputs[0]
    x, dy = op.operands
    cg, og = g.c // g.groups, g.o // g.groups
    cb = 1  # more input channels a pass share dy's loads but leave fewer rows a pass (FILTER_BODY)
    ob = next(r for r in (8, 4, 2, 1) if og % r == 0 and r * g.kh * g.kw <= FILTER_BODY // 4 or r == 1)
    offsets = [q * g.dilation_w - g.pad_left for q in range(g.kw)]
    lo = min(offsets)
    width = (g.ow - 1) * g.stride_w + max(offsets) - lo + 1
    taps = [(a, b, p, q) for a in range(ob) for b in range(cb) for p in range(g.kh) for q in range(g.kw)]

    roffs = [p * g.dilation_h for p in range(g.kh)]  # input row of output row i and tap p: i * stride_h + roffs[p]
    fits = [r for r in (4, 2, 1) if g.oh % r == 0 and (r * len(taps) <= FILTER_BODY or r == 1)
            and len(taps) * g.ow + cb * len(_source_rows(r, g.stride_h, roffs)) * width <= MAX_SLOT]
    if not fits:
        return False
    rb = fits[0]
    offs = _source_rows(rb, g.stride_h, roffs)
    slot_of = {d: t for t, d in enumerate(offs)}  # the buffer row of each source row offset
    c_blocks = cg // cb

    def plane(ivs: list[Value]) -> None:
        (u,) = ivs
        acc = k.alloca(MemRefType(s.type, [len(taps) * g.ow]))
        rows = k.alloca(MemRefType(s.type, [cb * len(offs) * width]))
        o0, c0 = k.muli(k.divsi(u, k.idx(c_blocks)), k.idx(ob)), k.muli(k.remsi(u, k.idx(c_blocks)), k.idx(cb))
        os = [k.addi(o0, k.idx(a)) if a else o0 for a in range(ob)]
        cs = [k.addi(c0, k.idx(b)) if b else c0 for b in range(cb)]
        group_base = k.muli(k.divsi(o0, k.idx(og)), k.idx(cg))
        channels = [k.addi(group_base, c) for c in cs]
        zero = s.const(0)
        k.for_(len(taps) * g.ow, lambda t: k.store(zero, acc, [t]))

        def position(n: Value, i0: Value) -> None:
            first = k.muli(i0, k.idx(g.stride_h))
            for b, ch in enumerate(channels):
                for d in offs:
                    row = k.addi(first, k.idx(d - g.pad_top))
                    _padded_rows(k, s, rows, (b * len(offs) + slot_of[d]) * width,
                                 lambda r, t, ch=ch: e.value(x, _at(g, n, ch, r, t)), row, g.h, lo, width, g.w)
            ii = [k.addi(i0, k.idx(r)) if r else i0 for r in range(rb)]

            def column(j: Value) -> None:
                dys = [[e.value(dy, _at(g, n, o, i, j)) for i in ii] for o in os]
                at = k.muli(j, k.idx(g.stride_w)) if g.stride_w != 1 else j
                xs: dict[tuple[int, int, int], Value] = {}
                for b in range(cb):
                    for t, d in enumerate(offs):
                        for q in range(g.kw):
                            xs[b, d, q] = k.load(rows, [k.addi(at, k.idx((b * len(offs) + t) * width + offsets[q]
                                                                         - lo))])
                for t, (a, b, p, q) in enumerate(taps):
                    slot = k.addi(j, k.idx(t * g.ow)) if t else j
                    v = k.load(acc, [slot])
                    for r in range(rb):
                        v = s.madd(v, dys[a][r], xs[b, r * g.stride_h + p * g.dilation_h, q])
                    k.store(v, acc, [slot])

            k.for_(g.ow, column)

        k.for_(g.n, lambda n: k.for_(g.oh, lambda i: position(n, i), step=rb))
        for t, (a, b, p, q) in enumerate(taps):
            def tap_sum(j: Value, total: Value, t: int = t) -> list[Value]:
                return [s.add(total, k.load(acc, [k.addi(j, k.idx(t * g.ow))]))]

            (total,) = k.for_(g.ow, tap_sum, inits=[s.const(0)])
            k.store(total, out, [os[a], cs[b], k.idx(p), k.idx(q)])

    k.parallel([g.o // ob * c_blocks], plane)
    return True
