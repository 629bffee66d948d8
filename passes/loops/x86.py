# pyright: basic
"""The x86 micro-kernel schedules of conv2d and dense: the loop-level ops `cvmc.dot_u8s8`, `cvmc.mmk_i16`,
`cvmc.mmk_u8s8` and `cvmc.pack_tile` (printed by `codegen.llvm_x86`), the tier each takes on a target (AVX2,
AVX512-VNNI, AMX, or their portable lowering) and the register-blocked conv2d built on them.

The operators' semantics (what each computes, bit for bit the reference) stay in `loops.ops`, which calls these
schedules where `cvm-pack-operands` chose a packed byte or blocked operand (`cvm_sched.pack`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerAttr, MemRefType, StringAttr, i8, i32, i64
from xdsl.ir import Attribute

from cvmc.dialects.cvmc import DotU8S8Op, MmkI16Op, MmkU8S8Op, PackTileOp
from cvmc.passes.loops.builder import Arg, Attrs, Epilogue, KernelBuilder, Value, narrowed
from cvmc.passes.loops.target import Target

# The i16 micro-kernel (`Target.blocked`): the weight is packed once, at compile time, in blocks of MMK_LANES
# output channels, (OC / lanes, width / 2, lanes, 2): for each pair of reduction elements, the lanes' two weights
# side by side. `cvmc.mmk_i16` keeps MMK_ROWS output pixels x MMK_LANES output channels of int32 accumulators
# in registers (output channels across the lanes of a vector); each step broadcasts a pixel's pair of int16
# inputs (one 32-bit load) against a vector of the block's weights: `vpmaddwd` (two products summed in each
# int32 lane, wrapping only when all four values are -32768: the same sum modulo 2^32) and an add, or
# `vpdpwssd` where the CPU has it; LLVM selects either from plain IR. The accumulators go to a small buffer,
# from which the bias and the epilogue run per (channel, pixel).

ZERO_POINT = 128  # what the "u8" packing adds to an int8 value
DOT_ROWS = 8  # im2col rows (output pixels) one u8 x s8 dot product op computes, sharing each weight load
DOT_U8S8 = DotU8S8Op.name
MMK_I16 = MmkI16Op.name
MMK_U8S8 = MmkU8S8Op.name
_MMK_OPS = {2: MmkI16Op, 4: MmkU8S8Op}
MMK_ROWS = 4  # output pixels per micro-kernel call (a vector of accumulators each per MMK_LANES / 8)
MMK_LANES = 16  # output channels per micro-kernel call: two vectors of 8 int32 lanes
VNNI_LANES = 64  # at most this many with AVX512-VNNI's u8 x s8 kernel: four vectors of 16 int32 lanes
AMX_ROWS, AMX_LANES = 16, 16  # AMX-INT8: one tile of 16 pixels x 16 channels (64 bytes of int32 a row)


def mmk_lanes(element: str, channels: int, target: Target) -> int:
    """The output channels of one block of the micro-kernel: MMK_LANES, or for u8 x s8 on AVX512-VNNI the
    channels rounded up to 16 (one 512-bit vector), at most VNNI_LANES; with AMX one tile's AMX_LANES."""
    if element == "u8" and target.has("amx"):
        return AMX_LANES
    if element == "u8" and target.has("avx512-vnni"):
        return min(VNNI_LANES, -(-channels // 16) * 16)
    return MMK_LANES


def mmk_isa(target: Target) -> str | None:
    """The tier of the u8 x s8 micro-kernel's lowering (`isa` of `cvmc.mmk_u8s8`): "amx", "avx512-vnni", or None
    for AVX2's."""
    return "amx" if target.has("amx") else "avx512-vnni" if target.has("avx512-vnni") else None


PACK_TILE = 8  # `cvmc.pack_tile`: 8 channels x 8 columns of int32 -> their bytes, transposed
PACK_TILE_OP = PackTileOp.name


def pack_tile(k: KernelBuilder, src: Value, src_idx: Sequence[Value], out: Value, out_idx: Sequence[Value],
              inside: Value, zero_point: int) -> None:
    """out[out_idx + (j, i)] = inside ? byte(src[src_idx + (i, j)] + zero_point) : byte(zero_point) for i, j <
    PACK_TILE, src's rows its second dimension (channels) and columns its last: the loop-level op
    `cvmc.pack_tile` (operands: src, its indices, out, its indices, inside; `split`: where out starts)."""
    operands = [src, *(k.idx(i) for i in src_idx), out, *(k.idx(i) for i in out_idx), inside]
    properties = {"split": IntegerAttr(1 + len(src_idx), i64), "zero_point": IntegerAttr(zero_point, i64)}
    k.insert(PackTileOp.create(operands=operands, result_types=[], properties=properties))


def dot_u8s8(k: KernelBuilder, a: Value, a_idx: list[Value], b: Value, b_idx: list[Value], depth: int,
              rows: int = 1) -> list[Value]:
    """For r < rows: sum over i < depth (a multiple of 64) of u8 a[a_idx..., i] * s8 b[b_idx..., i] in int32
    (wrapping), where row r of `a` is a_idx with its last index + r: the loop-level op `cvmc.dot_u8s8`
    (operands: a, its indices, b, its indices; `split`: where b starts; `rows`: how many rows share each load
    of b, one result each)."""
    operands = [a, *(k.idx(i) for i in a_idx), b, *(k.idx(i) for i in b_idx)]
    properties = {"depth": IntegerAttr(depth, i64), "split": IntegerAttr(1 + len(a_idx), i64)}
    if rows > 1:
        properties["rows"] = IntegerAttr(rows, i64)
    if k.target.emulated:  # the portable lowering of `vpdpbusd` (`loops.target.Target.emulated`)
        properties["emulated"] = IntegerAttr(1, i64)
    op = DotU8S8Op.create(operands=operands, result_types=[i32] * rows, properties=properties)
    return list(k.insert(op).results)


def mmk(k: KernelBuilder, a: Value, a_idx: list[Value], b: Value, b_idx: list[Value], acc: Value,
         acc_idx: list[Value], depth: int, rows: int, row_stride: int,
         taps: tuple[int, int, int, int] = (1, 0, 1, 0), pixel_major: bool = False) -> None:
    """acc[acc_idx + (l, r)] = the int32 (wrapping) sum, over taps (th, tw) < taps (kh, stride_h, kw, stride_w)
    and i < depth (a multiple of g), of a[a_idx + r * row_stride + th * stride_h + tw * stride_w + i] (flat, in
    elements) * b[block at b_idx][(th * kw + tw) * depth / g + i / g, l, i % g], for r < rows and l < lanes (b's
    last dimension / g): the loop-level op `cvmc.mmk_i16` (int16 operands, g = 2) or `cvmc.mmk_u8s8` (u8 x s8,
    g = 4) (operands: a, its indices, b, its indices, acc, its indices; `split`, `acc_split`: where b and acc
    start). An im2col row is one tap; a padded NHWC input is read in place, kh x kw taps of `depth` channels.
    `pixel_major`: the sums go to acc[acc_idx + (r, l)] instead (property `pixel_major` = 1: each pixel's lanes
    stored as they are in the vector registers, no transposition)."""
    group = 4 if is_byte_memref(a) else 2
    lanes = b.type.get_shape()[-1] // group  # type: ignore[attr-defined]
    operands = [a, *(k.idx(i) for i in a_idx), b, *(k.idx(i) for i in b_idx), acc, *(k.idx(i) for i in acc_idx)]
    kh, stride_h, kw, stride_w = taps
    properties: dict[str, Attribute] = {name: IntegerAttr(value, i64) for name, value in (
        ("depth", depth), ("split", 1 + len(a_idx)), ("acc_split", 2 + len(a_idx) + len(b_idx)), ("rows", rows),
        ("lanes", lanes), ("row_stride", row_stride), ("kh", kh), ("stride_h", stride_h), ("kw", kw),
        ("stride_w", stride_w))}
    if pixel_major:
        properties["pixel_major"] = IntegerAttr(1, i64)
    isa = mmk_isa(k.target) if group == 4 else None
    if isa is not None:  # the tier's kernel (`vpdpbusd`, AMX tiles), or its portable lowering
        properties["isa"] = StringAttr(isa)
        if k.target.emulated:
            properties["emulated"] = IntegerAttr(1, i64)
    k.insert(_MMK_OPS[group].create(operands=operands, result_types=[], properties=properties))


def compensation(k: KernelBuilder, w: Value, w_idx: list[Value], width: int) -> Value:
    """ZERO_POINT * sum of the s8 weight row w[w_idx...] (padding is 0): what the u8 input's zero point adds."""
    def step(i: Value, acc: Value) -> list[Value]:
        return [k.addi(acc, k.extsi(k.load(w, [*w_idx, i]), i32))]

    return k.muli(k.for_(width, step, inits=[k.const(0)])[0], ZERO_POINT)


def is_byte_memref(v: Value) -> bool:
    return v.type.element_type == i8  # type: ignore[attr-defined]


def _pack_borders(k: KernelBuilder, pk: Arg, how: Attrs, n: Value, oh: Value, oh_: int, ow_: int) -> None:
    """The padding of the packed row of output row `oh` (its left and right columns), and for the first and the
    last output rows the padded rows above and below: the zero point, as `pack` stores it."""
    (ph, pw), zero_point = how["padding"], how.get("zero_point", 0)
    element = pk.mem.type.element_type  # type: ignore[attr-defined]
    c = pk.layout.shape[3]
    zero = k.const(zero_point, element)

    def fill(hp: Value, lb: int, ub: int) -> None:
        k.for_(ub, lambda wp: k.for_(c, lambda ci: k.store(zero, pk.mem, [n, hp, wp, ci])), lb=lb)

    hp = k.addi(oh, ph)
    fill(hp, 0, pw)
    fill(hp, ow_ + pw, ow_ + 2 * pw)
    if ph:
        top = k.select(k.cmpi("eq", oh, 0), k.idx(ph), k.idx(0))
        k.for_(top, lambda r: fill(r, 0, ow_ + 2 * pw))
        bottom = k.select(k.cmpi("eq", oh, oh_ - 1), k.idx(oh_ + 2 * ph), k.idx(oh_ + ph))
        k.for_(bottom, lambda r: fill(r, 0, ow_ + 2 * pw), lb=oh_ + ph)


# The blocked conv2d's im2col tile (bytes): with one weight block (lanes x width int16) it stays in the L1 cache.
MMK_TILE_BYTES = 12 * 1024
MMK_TILE_PIXELS = 64  # at most this many output pixels per tile (an accumulator buffer of lanes x pixels int32)


def conv2d_packing(k: KernelBuilder, a: Attrs, out_shape: tuple[int, ...], out: Arg | None,
                   packs: list[tuple[Arg, Attrs]], ins: list[Arg], epilogue: Epilogue) -> None:
    """A blocked conv2d (`conv2d_blocked`) whose epilogue also writes its output packed for the next conv2d, as
    the `pack` kernel would (`pack`, "nhwc": zero-padded NHWC, narrowed, plus the zero point), borders included:
    `packs` are (buffer, how it is packed); `out` is None when nothing else reads the int32 output."""
    conv2d_blocked(k, a, out, ins, epilogue, out_shape, packs)


def conv2d_blocked(k: KernelBuilder, a: Attrs, out: Arg | None, ins: list[Arg], epilogue: Epilogue,
                    out_shape: tuple[int, ...] | None = None, packs: Sequence[tuple[Arg, Attrs]] = ()) -> None:
    """conv2d (one group) on a weight packed in blocks of lanes (see MMK_I16): int16, or u8 data x s8 weight
    (with `a["zero_point"]` the data packed as x + 128, AVX512-VNNI only: 128 * the channel's weight sum, by the
    micro-kernel on a row of ones once a block and row, is subtracted with the bias). Per output row (the
    parallel loop) and tile of its pixels, for each block of output channels, the micro-kernel
    (`cvmc.mmk_i16`, `cvmc.mmk_u8s8`) computes MMK_ROWS pixels at a time (then single pixels) into an
    accumulator buffer (lanes x tile, channel-major), then the bias and the epilogue run over each channel's
    contiguous pixels. The reduction reads the padded NHWC input in place (kh x kw taps of C channels) when C is
    a multiple of the group, else an im2col tile gathered first.

    With `packs` (`conv2d_packing`), the accumulator buffer is pixel-major (lanes x pixels transposed: the
    micro-kernel stores its registers as they are) and the epilogue runs pixel by pixel over the block's
    channels, storing each value to `out` (if any) and, narrowed, to each pack at [n, oh + ph, ow + pw, oc]; each
    output row also writes its packed row's left and right borders, the first and last rows the top and bottom
    ones (a row is one parallel iteration: every byte has one writer)."""
    x, w = ins[0], ins[1]
    n_, oc_total, oh_, ow_ = out_shape if out_shape is not None else out.layout.shape  # type: ignore[union-attr]
    pixel_major = bool(packs)
    group = 4 if is_byte_memref(x.mem) else 2  # reduction elements per 32-bit step of a lane
    blocks, steps, group_lanes = w.layout.shape
    width, lanes = group * steps, group_lanes // group
    rows = AMX_ROWS if group == 4 and mmk_isa(k.target) == "amx" else MMK_ROWS
    _, _, _, c = x.layout.shape
    stride_h, stride_w = x.layout.strides[1:3]
    kh, kw = a["kernel_size"]
    (sh, sw), (dh, dw) = a["strides"], a["dilation"]
    depth = kh * kw * c
    direct = c % group == 0
    tile = min(ow_, MMK_TILE_PIXELS if direct else max(1, MMK_TILE_BYTES * group // (4 * width)))
    tiles = -(-ow_ // tile)
    element = x.mem.type.element_type  # type: ignore[attr-defined]
    zero = k.const(0, element)
    input_zero = a.get("zero_point", 0)  # the packed input's zero point (signed data on AVX512-VNNI)

    def row(ivs: list[Value]) -> None:
        n, oh = ivs
        acc = k.alloca(MemRefType(i32, [tile, lanes] if pixel_major else [lanes, tile]))
        comp = k.alloca(MemRefType(i32, [1, lanes])) if input_zero else None
        ones = k.alloca(MemRefType(element, [width])) if input_zero else None
        if ones is not None:
            k.for_(width, lambda i: k.store(k.const(1, element), ones, [i]))
        cols = None if direct else k.alloca(MemRefType(element, [tile, width]))
        for pk, how in packs:
            _pack_borders(k, pk, how, n, oh, oh_, ow_)

        def over_tile(t: Value) -> None:
            ow0 = k.muli(t, tile)
            count = k.minsi(k.idx(tile), k.subi(k.idx(ow_), ow0))
            blocked = k.subi(count, k.remsi(count, rows))

            if cols is not None:
                def gather(j: Value, buf: Value = cols) -> None:
                    iw0 = k.muli(k.addi(ow0, j), sw)

                    def tap(ivs: list[Value]) -> None:
                        i, jj = ivs
                        ih = k.addi(k.muli(oh, sh), k.muli(i, dh))
                        iw = k.addi(iw0, k.muli(jj, dw))
                        base = k.muli(k.addi(k.muli(i, kw), jj), c)
                        k.for_(c, lambda ci: k.store(x.load(k, [n, ih, iw, ci]), buf, [j, k.addi(base, ci)]))

                    k.loops([kh, kw], tap)
                    k.for_(width, lambda i: k.store(zero, buf, [j, i]), lb=depth)

                k.for_(count, gather)

            def block(ob: Value) -> None:
                oc0 = k.muli(ob, lanes)
                live = lanes if oc_total % lanes == 0 else k.minsi(k.idx(lanes), k.subi(k.idx(oc_total), oc0))

                def pixels(j: Value, n_rows: int) -> None:
                    at = [j, k.idx(0)] if pixel_major else [k.idx(0), j]
                    if cols is not None:
                        mmk(k, cols, [j, k.idx(0)], w.mem, [ob, k.idx(0), k.idx(0)], acc, at, width,
                             n_rows, width, pixel_major=pixel_major)
                    else:
                        src = [n, k.muli(oh, sh), k.muli(k.addi(ow0, j), sw), k.idx(0)]
                        mmk(k, x.mem, src, w.mem, [ob, k.idx(0), k.idx(0)], acc, at, c, n_rows,
                             sw * stride_w, (kh, dh * stride_h, kw, dw * stride_w), pixel_major)

                k.for_(blocked, lambda j: pixels(j, rows), step=rows)
                k.for_(count, lambda j: pixels(j, 1), lb=blocked)

                if comp is not None and ones is not None:  # the u8 input is x + 128: each channel's weight sum
                    mmk(k, ones, [k.idx(0)], w.mem, [ob, k.idx(0), k.idx(0)], comp, [k.idx(0), k.idx(0)], width,
                         1, 0, pixel_major=True)

                def bias(o: Value) -> Value | None:
                    b = ins[2].load(k, [k.addi(oc0, o)]) if len(ins) > 2 else None
                    if comp is None:
                        return b
                    correction = k.muli(k.load(comp, [k.idx(0), o]), input_zero)  # input_zero * sum(w)
                    return k.subi(b if b is not None else k.const(0), correction)

                def finish(o: Value, p: Value, b: Value | None) -> None:
                    oc = k.addi(oc0, o)
                    v = k.load(acc, [p, o] if pixel_major else [o, p])
                    if b is not None:
                        v = k.addi(v, b)
                    ow = k.addi(ow0, p)
                    v = epilogue(v, [n, oc, oh, ow])
                    if out is not None:
                        k.store(v, out.mem, [n, oc, oh, ow])
                    for pk, how in packs:
                        (ph, pw), zero_point = how["padding"], how.get("zero_point", 0)
                        element = pk.mem.type.element_type  # type: ignore[attr-defined]
                        packed = narrowed(k, k.addi(v, zero_point) if zero_point else v, element)
                        k.store(packed, pk.mem, [n, k.addi(oh, ph), k.addi(ow, pw), oc])

                if pixel_major:  # a pixel's channels are contiguous in the accumulators and in NHWC
                    k.for_(count, lambda p: k.for_(live, lambda o: finish(o, p, bias(o))))
                else:  # a channel's pixels are contiguous in the accumulators and in NCHW

                    def channel(o: Value) -> None:
                        b = bias(o)
                        k.for_(count, lambda p: finish(o, p, b))

                    k.for_(live, channel)

            k.for_(blocks, block)

        k.for_(tiles, over_tile)

    k.loops([n_, oh_], row, parallel=True)
