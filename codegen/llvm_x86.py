"""The x86 micro-kernels of the loop level as LLVM IR: `cvmc.dot_u8s8` (`vpdpbusd`), `cvmc.mmk_i16` and
`cvmc.mmk_u8s8` (register-blocked: `vpmaddwd`, `vpmaddubsw`, `vpdpbusd` or AMX-INT8 tiles), `cvmc.pack_tile`
(an 8 x 8 transposition to bytes), each also in portable IR where the op says `emulated` (see
`passes.loops.x86`, which builds them). `codegen.llvm` dispatches the ops here; the micro-kernels are internal
functions of the module, one per shape, shared by every call."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from llvmlite import ir
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from cvmc.codegen.llvm_module import (
    I8,
    I16,
    I32,
    I64,
    PTR,
    VOID,
    LLValue,
    ModuleEmitter,
    const,
    emit_loop,
)
from cvmc.codegen.loop_ir import op_name, static_layout
from cvmc.dialects.cvmc import DotU8S8Op, MmkI16Op, MmkU8S8Op, PackTileOp
from cvmc.errors import CVMRuntimeError


class KernelEmitter(Protocol):
    """What an op's printer here uses of `codegen.llvm.KernelEmitter`."""

    mod: ModuleEmitter
    b: Any  # the llvmlite IRBuilder at the op
    values: dict[SSAValue, LLValue]

    def access(self, memref_value: SSAValue, indices: Sequence[SSAValue]) -> tuple[LLValue, ir.Type]: ...

    def loop(self, lb: LLValue, ub: LLValue, step: LLValue, inits: Sequence[LLValue],
             body: Callable[[LLValue, list[LLValue]], list[LLValue]], kind: str = "for") -> list[LLValue]: ...


class _AmxTile(ir.Type):
    """LLVM's `x86_amx`: an AMX tile register's value (only the `.internal` tile intrinsics take it)."""

    def _to_string(self) -> str:
        return "x86_amx"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _AmxTile)

    def __hash__(self) -> int:
        return hash("x86_amx")


_AMX_TILE = _AmxTile()


def _kernel_function(mod: ModuleEmitter, name: str) -> ir.Function:
    """The module's internal function `name(a, b, acc, steps, row_stride, kh, stride_h, kw, stride_w,
    acc_stride)` of a micro-kernel, its pointers noalias: the one already built (it has blocks), else a new
    declaration for the caller to build."""
    existing = mod.module.globals.get(name)
    if isinstance(existing, ir.Function):
        return existing
    fn = ir.Function(mod.module, ir.FunctionType(VOID, [PTR] * 3 + [I64] * 7), name)
    fn.linkage = "internal"
    for attr in ("nounwind", "noinline"):
        fn.attributes.add(attr)
    for arg in fn.args[:3]:
        arg.add_attribute("noalias")
    return fn


def micro_kernel(mod: ModuleEmitter, rows: int, lanes: int, group: int = 2, pixel_major: bool = False,
                 isa: str = "avx2", emulated: bool = False) -> ir.Function:
    """`__cvmc_mmk_<i16|u8s8|vnni>_r<rows>_l<lanes>(a, b, acc, steps, row_stride, kh, stride_h, kw, stride_w,
    acc_stride)`, the body of every `cvmc.mmk_i16` (group 2) or `cvmc.mmk_u8s8` (group 4) of these rows and
    lanes (one function, compiled once, for all the module's convolutions): rows x lanes / width int32
    accumulators in vector registers of `width` lanes; for each tap (th, tw) and step i < steps, the block's
    lanes x group weights are loaded once (lanes / width vectors, at b + group * lanes * (t * steps + i),
    t = th * kw + tw) and each row's group inputs (one 32-bit load at a + r * row_stride + th * stride_h +
    tw * stride_w + group * i) are broadcast against them, then added to the accumulator:
    - int16 (width 8): sext, mul, the even and odd products added pairwise (wrapping only when all four are
      -32768: the same sum modulo 2^32): LLVM selects `vpmaddwd` (or `vpdpwssd`);
    - u8 x s8, `isa` "avx2" (width 8): `vpmaddubsw` (pairs of u8 x s8 products summed in int16, saturating: the
      caller guarantees u8 <= 127 and |s8| <= 127, so |sum| <= 32258 never saturates), then `vpmaddwd` by
      ones (pairs of those summed in int32);
    - u8 x s8, `isa` "avx512-vnni" (width 16, `__cvmc_mmk_vnni_...`): `vpdpbusd` (four u8 x s8 products summed
      into each int32 lane, wrapping, never saturating); `emulated` (`..._emu`): the same sums in portable
      IR (zext, sext, mul, the four products of a lane added), for a CPU without AVX512-VNNI.
    Then lane l's `rows` sums are stored at acc + l * acc_stride (channel-major), or with `pixel_major` row r's
    lanes at acc + r * acc_stride (the registers as they are: `__cvmc_mmk_..._pm`). Offsets are in elements."""
    vnni = group == 4 and isa in ("avx512-vnni", "amx")
    kind = "vnni" if vnni else "u8s8" if group == 4 else "i16"
    name = (f"__cvmc_mmk_{kind}_r{rows}_l{lanes}" + ("_pm" if pixel_major else "")
            + ("_emu" if vnni and emulated else ""))
    fn = _kernel_function(mod, name)
    if fn.blocks:
        return fn
    pa, pb, pacc, steps, row_stride, kh, stride_h, kw, stride_w, acc_stride = fn.args
    b: Any = ir.IRBuilder(fn.append_basic_block("entry"))
    width = 16 if vnni else 8
    vectors = lanes // width
    item = I8 if group == 4 else I16
    lanes_w = ir.VectorType(I32, width)
    splat = ir.Constant(lanes_w, [0] * width)
    if group == 2:
        words, wide = ir.VectorType(I16, 16), ir.VectorType(I32, 16)
        even = ir.Constant(lanes_w, list(range(0, 16, 2)))
        odd = ir.Constant(lanes_w, list(range(1, 16, 2)))
    elif vnni:
        words = ir.VectorType(I8, 64)
    else:
        words, halves = ir.VectorType(I8, 32), ir.VectorType(I16, 16)
        ubsw = mod.function("llvm.x86.avx2.pmadd.ub.sw", halves, [words, words], ("nounwind", "readnone"))
        wd = mod.function("llvm.x86.avx2.pmadd.wd", lanes_w, [halves, halves], ("nounwind", "readnone"))
        ones = ir.Constant(halves, [1] * 16)

    def i64(v: int) -> LLValue:
        return const(I64, v)

    def weights(p: LLValue) -> LLValue:
        w = b.load(p, typ=words, align=item.width // 8)
        return b.sext(w, wide) if group == 2 else w

    def madd(acc: LLValue, xs: LLValue, w: LLValue) -> LLValue:
        if group == 2:
            m = b.mul(xs, w)  # each product of two int16 fits int32
            return b.add(acc, b.add(b.shuffle_vector(m, m, even), b.shuffle_vector(m, m, odd)))
        if vnni:
            return dpbusd(mod, b, acc, xs, w, emulated)
        return b.add(acc, b.call(wd, [b.call(ubsw, [xs, w]), ones]))

    def channels(base_a: LLValue, base_b: LLValue, accs: list[LLValue]) -> list[LLValue]:
        def step(i: LLValue, accs: list[LLValue]) -> list[LLValue]:
            at = b.add(base_b, b.mul(i, i64(group * lanes), flags=["nsw"]), flags=["nsw"])
            ws = [weights(b.gep(pb, [b.add(at, i64(width * group * v), flags=["nsw"])], inbounds=True,
                                source_etype=item)) for v in range(vectors)]
            out = []
            first = b.add(base_a, b.mul(i, i64(group), flags=["nsw"]), flags=["nsw"])
            for r in range(rows):
                index = b.add(first, b.mul(row_stride, i64(r), flags=["nsw"]), flags=["nsw"]) if r else first
                x = b.load(b.gep(pa, [index], inbounds=True, source_etype=item), typ=I32, align=item.width // 8)
                one = b.insert_element(ir.Constant(lanes_w, None), x, i64(0))
                xs = b.bitcast(b.shuffle_vector(one, one, splat), words)
                if group == 2:
                    xs = b.sext(xs, wide)
                out.extend(madd(accs[r * vectors + v], xs, ws[v]) for v in range(vectors))
            return out

        return emit_loop(b, fn, i64(0), steps, i64(1), accs, step, "mmk")

    def taps(th: LLValue, accs: list[LLValue]) -> list[LLValue]:
        def tap(tw: LLValue, accs: list[LLValue]) -> list[LLValue]:
            t = b.add(b.mul(th, kw, flags=["nsw"]), tw, flags=["nsw"])
            base_a = b.add(b.mul(th, stride_h, flags=["nsw"]), b.mul(tw, stride_w, flags=["nsw"]), flags=["nsw"])
            base_b = b.mul(b.mul(t, steps, flags=["nsw"]), i64(group * lanes), flags=["nsw"])
            return channels(base_a, base_b, accs)

        return emit_loop(b, fn, i64(0), kw, i64(1), accs, tap, "tap")

    zero = ir.Constant(lanes_w, None)
    accs = emit_loop(b, fn, i64(0), kh, i64(1), [zero] * (rows * vectors), taps, "taps")
    if pixel_major:
        for r in range(rows):
            for v in range(vectors):
                p = b.gep(pacc, [b.add(b.mul(acc_stride, i64(r), flags=["nsw"]), i64(width * v), flags=["nsw"])],
                          inbounds=True, source_etype=I32)
                b.store(accs[r * vectors + v], p, align=4)
        b.ret_void()
        return fn
    column = ir.VectorType(I32, rows)
    for v in range(vectors):
        for lane in range(width):
            col: LLValue = ir.Constant(column, None)
            for r in range(rows):
                col = b.insert_element(col, b.extract_element(accs[r * vectors + v], i64(lane)), i64(r))
            p = b.gep(pacc, [b.mul(acc_stride, i64(width * v + lane), flags=["nsw"])], inbounds=True,
                      source_etype=I32)
            b.store(col, p, align=4)
    b.ret_void()
    return fn

def amx_kernel(mod: ModuleEmitter, rows: int, steps: int, kh: int, kw: int, pixel_major: bool) -> ir.Function:
    """`__cvmc_mmk_amx_r<rows>_s<steps>_k<kh>x<kw>(a, b, acc, steps, row_stride, kh, stride_h, kw, stride_w,
    acc_stride)`: the u8 x s8 micro-kernel of `cvmc.mmk_u8s8` on AMX-INT8 tiles for `rows` pixels x 16
    channels (16 lanes: one tile row of 64 bytes of int32), the steps and taps fixed (straight-line code, no
    tile value crosses a block: LLVM inserts `ldtilecfg` and `tilerelease`). Per tap (th, tw) and chunk of at
    most 16 steps (64 bytes of the reduction): the pixels' bytes as a tile of rows x 4n bytes at a +
    th * stride_h + tw * stride_w + 4 * first step, row_stride apart; the weights as n rows of 64 bytes (the
    blocked layout is AMX's VNNI-4 layout: 4 bytes of one channel side by side); `tdpbusd` (u8 x s8, four
    products summed into each int32, wrapping). The tile is stored at acc, acc_stride int32 a pixel
    (pixel-major), or through a 16 x 16 buffer transposed (channel-major). The caller checked that the CPU has
    AMX-INT8 and that the process may use it."""
    name = f"__cvmc_mmk_amx_r{rows}_s{steps}_k{kh}x{kw}" + ("_pm" if pixel_major else "")
    fn = _kernel_function(mod, name)
    if fn.blocks:
        return fn
    pa, pb, pacc, _, row_stride, _, stride_h, _, stride_w, acc_stride = fn.args
    b: Any = ir.IRBuilder(fn.append_basic_block("entry"))
    tile = _AMX_TILE
    zero = mod.function("llvm.x86.tilezero.internal", tile, [I16, I16])
    load = mod.function("llvm.x86.tileloadd64.internal", tile, [I16, I16, PTR, I64])
    dot = mod.function("llvm.x86.tdpbusd.internal", tile, [I16, I16, I16, tile, tile, tile])
    store = mod.function("llvm.x86.tilestored64.internal", VOID, [I16, I16, PTR, I64, tile])

    def i16(v: int) -> LLValue:
        return const(I16, v)

    def i64(v: int) -> LLValue:
        return const(I64, v)

    m, n_bytes = i16(rows), i16(64)
    c = b.call(zero, [m, n_bytes])
    for th in range(kh):
        for tw in range(kw):
            base_a = b.add(b.mul(stride_h, i64(th)), b.mul(stride_w, i64(tw)))
            base_b = (th * kw + tw) * steps * 64
            for first in range(0, steps, 16):
                n = min(16, steps - first)
                at = b.gep(pa, [b.add(base_a, i64(4 * first))], inbounds=True, source_etype=I8)
                x = b.call(load, [m, i16(4 * n), at, row_stride])
                w = b.call(load, [i16(n), n_bytes, b.gep(pb, [i64(base_b + 64 * first)], inbounds=True,
                                                          source_etype=I8), i64(64)])
                c = b.call(dot, [m, n_bytes, i16(4 * n), c, x, w])
    if pixel_major:
        b.call(store, [m, n_bytes, pacc, b.mul(acc_stride, i64(4)), c])
        b.ret_void()
        return fn
    buf = b.alloca(ir.ArrayType(I32, 16 * 16))
    b.call(store, [m, n_bytes, buf, i64(64), c])
    for r in range(rows):
        for lane in range(16):
            v = b.load(b.gep(buf, [i64(0), i64(16 * r + lane)], inbounds=True), align=4)
            b.store(v, b.gep(pacc, [b.add(b.mul(acc_stride, i64(lane)), i64(r))], inbounds=True,
                             source_etype=I32), align=4)
    b.ret_void()
    return fn

def dpbusd(mod: ModuleEmitter, b: Any, acc: LLValue, xs: LLValue, ws: LLValue, emulated: bool) -> LLValue:
    """acc (16 x i32) + for each lane the sum of its four u8 xs (64 x i8) x s8 ws (64 x i8) products, wrapping:
    `vpdpbusd` (AVX512-VNNI), or with `emulated` the same sums in portable IR (|u8 x s8| <= 32640: four fit
    int32, no saturation either way)."""
    lanes, pairs = ir.VectorType(I32, 16), ir.VectorType(I8, 64)
    if not emulated:
        fn = mod.function("llvm.x86.avx512.vpdpbusd.512", lanes, [lanes, pairs, pairs], ("nounwind", "readnone"))
        return b.call(fn, [acc, xs, ws])
    wide = ir.VectorType(I32, 64)
    m = b.mul(b.zext(xs, wide), b.sext(ws, wide))
    parts = [b.shuffle_vector(m, m, ir.Constant(lanes, list(range(j, 64, 4)))) for j in range(4)]
    return b.add(acc, b.add(b.add(parts[0], parts[1]), b.add(parts[2], parts[3])))


def _flag(prop: IntegerAttr | None, default: int = 0) -> int:
    """The value of an optional integer property (`default` when the op has none)."""
    return prop.value.data if prop is not None else default


def _verified(op: Operation) -> None:
    """The op's verifier (`cvmc.dialects.cvmc`: the one place its attributes' rules live), its failure as the
    CVMRuntimeError of a module that cannot be printed."""
    try:
        op.verify_()
    except VerifyException as e:
        raise CVMRuntimeError(f"{op_name(op)}: {e}") from None


def dot_u8s8(k: KernelEmitter, op: Operation) -> None:
    """For r < rows: sum over i < depth of u8 a[..., j + r, i] * s8 b[..., i] in int32 (wrapping), `depth` a
    multiple of 64, the rows of `a` consecutive along its second-to-last dimension: a loop of `vpdpbusd`
    (AVX512-VNNI: 64 byte pairs, four products summed into each of 16 lanes, no saturation), one
    accumulator per row sharing each load of `b`, then each row's 16 lanes summed (`emulated` = 1: the same
    sums in portable IR, `dpbusd`). The caller checked that the host has AVX512-VNNI."""
    assert isinstance(op, DotU8S8Op)
    _verified(op)
    depth, split, rows = op.depth.value.data, op.split.value.data, _flag(op.rows, 1)
    a, b = op.operands[0], op.operands[split]
    pa, _ = k.access(a, op.operands[1:split])
    pb, _ = k.access(b, op.operands[split + 1:])
    assert isinstance(a.type, MemRefType)
    row_stride = static_layout(a.type)[1][-2] if rows > 1 else 0
    bases = [pa] + [k.b.gep(pa, [const(I64, r * row_stride)], inbounds=True, source_etype=I8)
                    for r in range(1, rows)]
    lanes, pairs = ir.VectorType(I32, 16), ir.VectorType(I8, 64)
    emulated = _flag(op.emulated) == 1  # the portable lowering of the same sums

    def step(i: LLValue, acc: list[LLValue]) -> list[LLValue]:
        y = k.b.load(k.b.gep(pb, [i], inbounds=True, source_etype=I8), typ=pairs, align=1)
        out = []
        for base, partial in zip(bases, acc):
            x = k.b.load(k.b.gep(base, [i], inbounds=True, source_etype=I8), typ=pairs, align=1)
            out.append(dpbusd(k.mod, k.b, partial, x, y, emulated))
        return out

    zero = ir.Constant(lanes, None)
    accs = k.loop(const(I64, 0), const(I64, depth), const(I64, 64), [zero] * rows, step, "dot")
    for res, value in zip(op.results, _row_sums(k, accs)):
        k.values[res] = value


def mmk(k: KernelEmitter, op: Operation) -> None:
    """acc[(l, r)] = sum over taps (th, tw) and i < depth of a[r * row_stride + th * stride_h + tw * stride_w +
    i] * b[block][(th * kw + tw) * depth / g + i / g, l, i % g] in int32 (wrapping), for r < rows, l < lanes
    (a multiple of 8), all offsets in elements from each operand's indexed element; int16 operands (g = 2) or
    u8 x s8 (g = 4): a call of the module's micro-kernel for (rows, lanes, g) (`micro_kernel`)."""
    assert isinstance(op, MmkI16Op | MmkU8S8Op)
    _verified(op)
    group = 4 if isinstance(op, MmkU8S8Op) else 2
    depth, split, acc_split, rows, lanes, row_stride, kh, stride_h, kw, stride_w = (p.value.data for p in (
        op.depth, op.split, op.acc_split, op.rows, op.lanes, op.row_stride, op.kh, op.stride_h, op.kw, op.stride_w))
    a, b, acc = op.operands[0], op.operands[split], op.operands[acc_split]
    pa, _ = k.access(a, op.operands[1:split])
    pb, _ = k.access(b, op.operands[split + 1:acc_split])
    pacc, _ = k.access(acc, op.operands[acc_split + 1:])
    assert isinstance(acc.type, MemRefType)
    sizes = (depth // group, row_stride, kh, stride_h, kw, stride_w, static_layout(acc.type)[1][0])
    pixel_major = _flag(op.pixel_major) == 1
    isa_name = op.isa.data if op.isa is not None else "avx2"
    emulated = _flag(op.emulated) == 1
    if isa_name == "amx" and not emulated:
        fn = amx_kernel(k.mod, rows, depth // group, kh, kw, pixel_major)
    else:  # AMX emulated: the same sums as the VNNI kernel's portable lowering, in tiles of 16 x 16
        fn = micro_kernel(k.mod, rows, lanes, group, pixel_major, isa_name, emulated)
    k.b.call(fn, [pa, pb, pacc, *(const(I64, v) for v in sizes)])


def pack_tile(k: KernelEmitter, op: Operation) -> None:
    """out[j, i] (out's last two dimensions) = inside ? byte(src[i, j] + zero_point) : byte(zero_point), for
    i, j < 8, src's rows its channels (its second dimension) and columns its last: 8 vector loads of 8 int32,
    narrowed, the 8 x 8 bytes transposed by one shuffle, 8 stores of 8 bytes."""
    assert isinstance(op, PackTileOp)
    split, zero_point = op.split.value.data, op.zero_point.value.data
    src, out, inside = op.operands[0], op.operands[split], op.operands[-1]
    assert isinstance(src.type, MemRefType) and isinstance(out.type, MemRefType)
    src_strides, out_strides = static_layout(src.type)[1], static_layout(out.type)[1]
    src_stride, out_stride = src_strides[1], out_strides[-2]
    if len(op.operands) != 2 * split + 1 or src_strides[-1] != 1 or out_strides[-1] != 1:
        raise CVMRuntimeError(f"expected {op_name(op)} over unit-stride rows and columns, got {src.type} and "
                              f"{out.type}")
    ps, _ = k.access(src, op.operands[1:split])
    po, _ = k.access(out, op.operands[split + 1:-1])
    words, bytes8 = ir.VectorType(I32, 8), ir.VectorType(I8, 8)
    keep = k.values[inside]
    rows = []
    for i in range(8):
        p = k.b.gep(ps, [const(I64, i * src_stride)], inbounds=True, source_etype=I32)
        v = k.b.load(p, typ=words, align=4)
        if zero_point:
            v = k.b.add(v, ir.Constant(words, [zero_point] * 8))
        rows.append(k.b.trunc(v, bytes8))
    pairs = [k.b.shuffle_vector(rows[i], rows[i + 1], ir.Constant(ir.VectorType(I32, 16), list(range(16))))
             for i in range(0, 8, 2)]
    quads = [k.b.shuffle_vector(pairs[i], pairs[i + 1], ir.Constant(ir.VectorType(I32, 32), list(range(32))))
             for i in range(0, 4, 2)]
    whole = k.b.shuffle_vector(quads[0], quads[1], ir.Constant(ir.VectorType(I32, 64), list(range(64))))
    transposed = k.b.shuffle_vector(whole, whole, ir.Constant(ir.VectorType(I32, 64),
                                                                 [i * 8 + j for j in range(8) for i in range(8)]))
    padding = ir.Constant(ir.VectorType(I8, 64), [zero_point & 0xFF] * 64)
    transposed = k.b.select(keep, transposed, padding)
    for j in range(8):
        col = k.b.shuffle_vector(transposed, transposed, ir.Constant(ir.VectorType(I32, 8),
                                                                         list(range(8 * j, 8 * j + 8))))
        p = k.b.gep(po, [const(I64, j * out_stride)], inbounds=True, source_etype=I8)
        k.b.store(col, p, align=1)

def _row_sums(k: KernelEmitter, accs: list[LLValue]) -> list[LLValue]:
    """The sum of the 16 lanes of each accumulator. For a power-of-two count, a tree that halves every
    vector's segments pairwise (two shuffles and one add per pair and level: 16 shuffles for 8 rows instead
    of 32 in 8 separate reductions), then one lane per row; else one reduction per accumulator."""
    n = len(accs)
    if n == 1 or n & (n - 1) or n > 16:
        total = k.mod.function("llvm.vector.reduce.add.v16i32", I32, [accs[0].type],
                                  ("nounwind", "readnone"))
        return [k.b.call(total, [acc]) for acc in accs]
    vals, seg = list(accs), 16  # each vector: 16 // seg rows, row i in lanes [i * seg, (i + 1) * seg)
    while len(vals) > 1:
        half = seg // 2
        lo = [i * seg + j for i in range(16 // seg) for j in range(half)]
        lo = lo + [16 + x for x in lo]
        hi = [x + half for x in lo]
        vals = [k.b.add(k.b.shuffle_vector(a, b, ir.Constant(ir.VectorType(I32, 16), lo)),
                           k.b.shuffle_vector(a, b, ir.Constant(ir.VectorType(I32, 16), hi)))
                for a, b in zip(vals[::2], vals[1::2])]
        seg = half
    (v,) = vals  # n rows of seg lanes each
    while seg > 1:
        half = seg // 2
        lo = [i * seg + j for i in range(n) for j in range(half)]
        hi = [x + half for x in lo]
        width = ir.VectorType(I32, len(lo))
        v = k.b.add(k.b.shuffle_vector(v, v, ir.Constant(width, lo)),
                       k.b.shuffle_vector(v, v, ir.Constant(width, hi)))
        seg = half
    return [k.b.extract_element(v, const(I64, r)) for r in range(n)]
