# pyright: basic
"""The GPU schedule of conv2d, dense and their packing: loop-level kernels for the CUDA printer (issue 15).

Built instead of the CPU's kernels of these groups when lowering for a GPU target (`loops.target.Target.gpu`) (what
`cvmc.runtime.devices.cuda` does); every other group is built as for the CPU (elementwise ops, pooling, reductions and
the like are already one `scf.parallel` over their output, one GPU thread per output element; get_valid_counts
and non_max_suppression stay one thread, exact).

- concatenate: one thread per output element, reading the input whose slice of the axis holds it.
- Packing (`pack`): one thread per element of the packed operand (zero-padded NHWC input, weight rows, rows).
- conv2d and dense reduce over the packed operands of the plan: signed bytes when both operands fit int8, read
  four at a time as one 32-bit word (`cvmc.load_word`) and multiplied by `cvmc.dp4a` (CUDA's `__dp4a`: four int8
  products summed into an int32, exact), else int16 or int32 products summed in int32. A conv2d whose channels
  per group are not a multiple of 4 gathers its input word byte by byte. A conv2d's reduction runs tap by tap
  (kh, kw, then the tap's channel steps: no index division in the loop) where a tap's steps split evenly over
  the threads sharing a unit, else over the flattened (tap, channel) step.
- A thread computes a unit of up to `TILE` outputs along the channel axis (conv2d's output channels of one group,
  dense's units: the largest of 4, 2, 1 dividing them), which share each input word: a step loads 1 + T words
  for T `__dp4a`.
- Each unit's reduction is shared by `S` threads (`split`): the fewest, a power of two, such that a thread
  performs at most `MACS_PER_THREAD` multiply-adds or the launch has `THREADS_WANTED` threads. `S = 1` is an
  `scf.parallel` over the units (the printer's grid-stride loop: one thread per unit). `S > 1` is a block
  schedule: blocks of at most `BLOCK` threads, each block `P` units (at most `BLOCK / S`, balanced over the
  blocks); thread `v < P * S` of a block sums steps `s, s + S, s + 2S, ...` (s = v mod S: neighbouring threads
  read neighbouring words) of its unit `v / S` into `shared[r * P * S + v]` for each output r of the unit
  (shared memory), a barrier, then thread `v < P` adds the S partial sums of each output of unit `v`, runs the
  epilogue (bias, requantization: what the CPU path fuses) and stores them; a second barrier before the block's
  shared memory is used again. Blocks and threads stride (`for b = blockIdx.x; b < blocks; b += gridDim.x`, the
  same for threads), so any launch computes the same bits; the spare threads of the last block (fewer than the
  blocks) repeat the last unit and their sums are never stored. A step past the end of a reduction (when S does
  not divide it) reads the last step's operands and adds nothing (`select`).
- A conv2d block kernel whose blocks each lie within two rows of units (a row: the units of one image and output
  channel unit; one row when the blocks divide it) first stages those rows' int8 weight rows in shared memory
  (`_weight_staging`, at most `STAGE_BYTES`), all the block's threads copying, then a barrier; its threads read
  weights from there. Input tiles are not staged.

Integer sums wrap in int32 in any order, so the split gives the reference's bits.

    %shared = memref.alloca() : memref<256xi32, 3 : i64>     // memory space 3: the block's shared memory
    %b = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
    scf.for %blk = %b to %blocks step %grid {
      scf.for %v = %t to %threads_of_block step %block_dim {
        ... "cvmc.dp4a"(%xw, %ww, %acc) ... memref.store %acc, %shared[%v]
      }
      "gpu.barrier"() : () -> ()
      scf.for %v = %t to %units_of_block step %block_dim { ... the S partial sums, epilogue, store ... }
      "gpu.barrier"() : () -> ()
    }
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import prod
from typing import Protocol

from xdsl.dialects import func, gpu, memref
from xdsl.dialects.builtin import IntegerAttr, MemRefType, i8, i32, i64

from cvmc.dialects.cvmc import Dp4aOp, LoadWordOp
from cvmc.passes.loops import ops as ops
from cvmc.passes.loops.builder import (
    Arg,
    Attrs,
    Epilogue,
    KernelBuilder,
    Value,
    clamp_index,
    in_range,
    narrowed,
    unravel,
)
from cvmc.passes.loops.kernels import Group
from cvmc.passes.loops.views import Layout


class _Arg(Protocol):
    @property
    def layout(self) -> Layout: ...


class _Call(Protocol):
    """What a kernel is built from (`loops.kernels.KernelCall`)."""

    @property
    def group(self) -> Group: ...

    @property
    def args(self) -> Sequence[_Arg]: ...

    @property
    def types(self) -> Sequence[MemRefType]: ...


BLOCK = 256  # threads of a block (the CUDA printer's BLOCK_SIZE)
MACS_PER_THREAD = 64  # a thread's share of a reduction: at most this many multiply-adds ...
THREADS_WANTED = 1 << 16  # ... unless the launch already has this many threads
SHARED = IntegerAttr(3, i64)  # the memory space of a block's shared memory (NVVM's 3)

Step = Callable[[Value, list[Value]], list[Value]]  # (reduction step, a thread's accumulators) -> accumulators
Reduction = Callable[[list[Value], Value, int], list[Value]]  # (unit ivs, lane, S) -> the lane's partial sums
TILE = 4  # outputs a thread computes at most along the channel axis (they share each input word)


def dp4a(k: KernelBuilder, a: Value, b: Value, acc: Value) -> Value:
    return k.insert(Dp4aOp.create(operands=[a, b, acc], result_types=[i32])).results[0]


def load_word(k: KernelBuilder, mem: Value, ivs: Sequence[Value | int]) -> Value:
    return k.insert(LoadWordOp.create(operands=[mem, *(k.idx(i) for i in ivs)], result_types=[i32])).results[0]


def split(outputs: int, steps: int, macs_per_step: int) -> int:
    """The threads sharing the reduction of each of `outputs` units, `steps` steps of `macs_per_step` multiply-adds
    (see the module docstring): the fewest, a power of two up to BLOCK, with at most MACS_PER_THREAD multiply-adds
    a thread or THREADS_WANTED threads."""
    s = 1
    while s < BLOCK and outputs * s < THREADS_WANTED and -(-steps // s) * macs_per_step > MACS_PER_THREAD:
        s *= 2
    return s


def _gpu_index(k: KernelBuilder, cls: type[gpu.ThreadIdOp | gpu.BlockIdOp | gpu.BlockDimOp | gpu.GridDimOp]) -> Value:
    return k.insert(cls(gpu.DimensionAttr(gpu.DimensionEnum.X))).results[0]


def tile(n: int) -> int:
    """The outputs a thread computes along an axis of n: the largest of TILE, TILE / 2, ..., 1 dividing n."""
    t = TILE
    while n % t:
        t //= 2
    return t


def strided(k: KernelBuilder, steps: int, tiles: int, prepare: Callable[[list[Value]], Step]) -> Reduction:
    """The reduction of steps lane, lane + S, lane + 2S, ... of `steps` steps (`prepare(ivs)` gives the step
    function of one unit of `tiles` outputs): ceil(steps / S) trips each, a step past the end adding nothing."""
    def partial(ivs: list[Value], lane: Value, s: int) -> list[Value]:
        step = prepare(ivs)
        trips = -(-steps // s)

        def over(t: Value, *accs: Value) -> list[Value]:
            j = k.addi(k.muli(t, s), lane)
            if trips * s == steps:
                return step(j, list(accs))
            inside = k.cmpi("slt", j, steps)
            stepped = step(k.minsi(j, steps - 1), list(accs))
            return [k.select(inside, new, old) for new, old in zip(stepped, accs)]

        return k.for_(trips, over, inits=[k.const(0)] * tiles)

    return partial


@dataclass(frozen=True)
class Schedule:
    """How the units of `tiles` outputs (along axis 1 of the output) are dealt to threads: `s` threads a unit;
    for s > 1, `blocks` blocks of `per` units."""

    units: tuple[int, ...]
    tiles: int
    s: int
    blocks: int
    per: int

    @property
    def count(self) -> int:
        return prod(self.units)


def schedule(shape: tuple[int, ...], tiles: int, steps: int, macs_per_step: int) -> Schedule:
    """The schedule of the outputs of `shape` as sums of `steps` steps of `macs_per_step` multiply-adds."""
    units = (shape[0], shape[1] // tiles, *shape[2:])
    count = prod(units)
    s = split(count, steps, macs_per_step * tiles)
    blocks = -(-count // (BLOCK // s))
    return Schedule(units, tiles, s, blocks, -(-count // blocks))  # per: balanced, fewer than `blocks` spare


class Staging:
    """Operands a block stages in its shared memory before its threads reduce (`words` i32 words): `fill` copies
    them (all the block's threads together), then a barrier; `first` is the block's first unit meanwhile. That
    barrier also orders a block's partial sums after the reads of the block before, so the block loop needs no
    barrier at its end."""

    def __init__(self, words: int, fill: Callable[[Value, Value, Value, Value], None]):
        self.words = words
        self.fill = fill  # (shared, first unit, thread, threads)
        self.shared: Value | None = None
        self.first: Value | None = None


def reduce_outputs(k: KernelBuilder, plan: Schedule, reduction: Reduction,
                   finish: Callable[[list[Value], Value], None], staging: Staging | None = None) -> None:
    """Every output as the sum of its unit's partial sums: each thread's are `reduction(unit ivs, lane, S)`;
    `finish(ivs, sum)` stores an output. A block kernel may stage operands first (`staging`)."""
    units, tiles, s, count = plan.units, plan.tiles, plan.s, plan.count

    def finish_unit(ivs: list[Value], sums: list[Value]) -> None:
        for r, v in enumerate(sums):
            finish([ivs[0], k.addi(k.muli(ivs[1], tiles), r), *ivs[2:]], v)

    if s == 1:
        assert staging is None, "only a block kernel stages operands"
        k.loops(units, lambda ivs: finish_unit(ivs, reduction(ivs, k.idx(0), 1)), parallel=True)
        return
    blocks, per = plan.blocks, plan.per
    lanes = per * s  # threads of a block with work
    shared = k.insert(memref.AllocaOp.get(i32, shape=[tiles * lanes], memory_space=SHARED)).results[0]
    if staging is not None:
        staging.shared = k.insert(memref.AllocaOp.get(i32, shape=[staging.words], memory_space=SHARED)).results[0]
    block_id, grid = _gpu_index(k, gpu.BlockIdOp), _gpu_index(k, gpu.GridDimOp)
    thread, threads = _gpu_index(k, gpu.ThreadIdOp), _gpu_index(k, gpu.BlockDimOp)

    def block(b: Value) -> None:
        first = k.muli(b, per)
        if staging is not None:
            assert staging.shared is not None
            staging.first = first
            staging.fill(staging.shared, first, thread, threads)
            k.insert(gpu.BarrierOp())  # the staged operands are whole before any thread reads them

        def partial(v: Value) -> None:
            unit = k.minsi(k.addi(first, k.divsi(v, s)), count - 1)  # spare threads repeat the last unit
            for r, x in enumerate(reduction(unravel(k, unit, units), k.remsi(v, s), s)):
                k.store(x, shared, [k.addi(v, r * lanes)])

        k.for_(lanes, partial, lb=thread, step=threads)
        k.insert(gpu.BarrierOp())

        def total(v: Value) -> None:
            unit = k.addi(first, v)

            def write() -> None:
                sums = []
                for r in range(tiles):
                    base = k.addi(k.muli(v, s), r * lanes)
                    sums += k.for_(s, lambda q, acc: [k.addi(acc, k.load(shared, [k.addi(base, q)]))],
                                   inits=[k.const(0)])
                finish_unit(unravel(k, unit, units), sums)

            if blocks * per == count:
                write()
            else:
                k.if_(k.cmpi("slt", unit, count), write)

        k.for_(per, total, lb=thread, step=threads)
        if staging is None:  # else the next block's staging barrier keeps its partial sums after these reads
            k.insert(gpu.BarrierOp())

    k.for_(blocks, block, lb=block_id, step=grid)


def _widen(k: KernelBuilder, v: Value) -> Value:
    return k.extsi(v, i32) if v.type != i32 else v


def _byte_word(k: KernelBuilder, byte_of: Callable[[int], Value]) -> Value:
    """A word of four bytes, byte b at bits 8b (the order `load_word` reads memory in)."""
    word = k.extui(byte_of(0), i32)
    for b in range(1, 4):
        word = k.ori(word, k.shli(k.extui(byte_of(b), i32), 8 * b))
    return word


def conv2d(k: KernelBuilder, a: Attrs, out: Arg, ins: list[Arg], epilogue: Epilogue) -> None:
    """Y[n, oc, oh, ow] = sum over (i, j, c) of X[n, oh*sh + i*dh, ow*sw + j*dw, g*cg + c] * W[oc, (i*kw + j)*cg + c]
    (+ B[oc]) on the padded NHWC input and the weight rows of the plan."""
    x, w = ins[0], ins[1]
    shape = out.layout.shape
    c_all = x.layout.shape[3]
    groups = a["groups"]
    cg, ocg = c_all // groups, shape[1] // groups
    kh, kw = a["kernel_size"]
    (sh, sw), (dh, dw) = a["strides"], a["dilation"]
    depth = kh * kw * cg
    byte = x.mem.type.element_type == i8  # type: ignore[attr-defined]
    steps = -(-depth // 4) if byte else depth
    tiles = tile(ocg)  # output channels of one group a thread computes
    plan = schedule(shape, tiles, steps, 4 if byte else 1)
    staging = _weight_staging(k, plan, w, shape) if byte else None

    def weight_word(ivs: list[Value], r: int, oc: Value, at: Value) -> Value:
        """The weight word of output channel `oc` (the unit's r-th) at byte `at` of its row: from the block's
        staged rows where they are staged, else from global memory."""
        if staging is None:
            return load_word(k, w.mem, [oc, at])
        assert staging.shared is not None and staging.first is not None
        slot = k.idx(r)
        if staging.words > tiles * (w.layout.shape[1] // 4):  # two rows of units: which one
            q = k.addi(k.muli(ivs[0], plan.units[1]), ivs[1])  # the unit's (n, channel unit) row of units
            q0 = k.divsi(staging.first, plan.units[2] * plan.units[3])
            slot = k.addi(k.muli(k.minsi(k.maxsi(k.subi(q, q0), 0), 1), tiles), r)
        return k.load(staging.shared, [k.addi(k.muli(slot, w.layout.shape[1] // 4), k.divsi(at, 4))])

    def origin(ivs: list[Value]) -> tuple[list[Value], Value, Value, Value]:  # channels, first c, row, column
        n, unit, oh, ow = ivs
        ocs = [k.addi(k.muli(unit, tiles), r) for r in range(tiles)]
        c0 = k.muli(k.divsi(ocs[0], ocg), cg) if groups > 1 else k.idx(0)
        return ocs, c0, k.muli(oh, sh), k.muli(ow, sw)

    def steps_of(ivs: list[Value], ocs: list[Value], x_of: Callable[[], Value], w_at: Callable[[Value], Value]) -> Step:
        """A step: one input value (a word of 4 bytes, or one element), times each channel's weight (at index
        `w_at(oc)` of its row)."""
        def step(_: Value, accs: list[Value]) -> list[Value]:
            xv = x_of()
            if byte:
                return [dp4a(k, xv, weight_word(ivs, r, oc, w_at(oc)), acc)
                        for r, (oc, acc) in enumerate(zip(ocs, accs))]
            return [k.addi(acc, k.muli(xv, _widen(k, w.load(k, [oc, w_at(oc)])))) for oc, acc in zip(ocs, accs)]

        return step

    def prepare(ivs: list[Value]) -> Step:
        n = ivs[0]
        ocs, c0, ih0, iw0 = origin(ivs)

        def at(r: Value) -> list[Value]:  # the input element of reduction index r
            t = k.divsi(r, cg)
            ih = k.addi(ih0, k.muli(k.divsi(t, kw), dh))
            iw = k.addi(iw0, k.muli(k.remsi(t, kw), dw))
            return [n, ih, iw, k.addi(c0, k.remsi(r, cg))]

        def step(j: Value, accs: list[Value]) -> list[Value]:
            if byte and cg % 4 == 0:  # a word never crosses a tap: one aligned load
                def x_of() -> Value:
                    return load_word(k, x.mem, at(k.muli(j, 4)))
            elif byte:  # gathered byte by byte; past the reduction the weight rows' padding is 0
                def x_of() -> Value:
                    return _byte_word(k, lambda b: x.load(k, at(k.minsi(k.addi(k.muli(j, 4), b), depth - 1))))
            else:
                def x_of() -> Value:
                    return _widen(k, x.load(k, at(j)))
            return steps_of(ivs, ocs, x_of, lambda oc: k.muli(j, unit))(j, accs)

        return step

    unit = 4 if byte else 1  # channels a step takes
    flat = strided(k, steps, tiles, prepare)
    per_tap = cg // unit if cg % unit == 0 else 0  # steps of one tap (0: steps cross taps)

    def by_taps(ivs: list[Value], lane: Value, s: int) -> list[Value]:
        """Tap by tap, when the S lanes share each tap's steps evenly: no index division in the loop."""
        if not per_tap or per_tap % s:
            return flat(ivs, lane, s)
        n = ivs[0]
        ocs, c0, ih0, iw0 = origin(ivs)

        def over_i(i: Value, *accs: Value) -> list[Value]:
            ih = k.addi(ih0, k.muli(i, dh))

            def over_j(jj: Value, *accs: Value) -> list[Value]:
                iw = k.addi(iw0, k.muli(jj, dw))
                tap = k.muli(k.addi(k.muli(i, kw), jj), cg)

                def over_q(q: Value, *accs: Value) -> list[Value]:
                    c = k.muli(k.addi(k.muli(q, s), lane), unit)
                    at = [n, ih, iw, k.addi(c0, c)]
                    x_of = (lambda: load_word(k, x.mem, at)) if byte else (lambda: _widen(k, x.load(k, at)))
                    return steps_of(ivs, ocs, x_of, lambda oc: k.addi(tap, c))(q, list(accs))

                return k.for_(per_tap // s, over_q, inits=list(accs))

            return k.for_(kw, over_j, inits=list(accs))

        return k.for_(kh, over_i, inits=[k.const(0)] * tiles)

    def finish(ivs: list[Value], v: Value) -> None:
        if len(ins) > 2:
            v = k.addi(v, ins[2].load(k, [ivs[1]]))
        k.store(epilogue(v, ivs), out.mem, ivs)

    reduce_outputs(k, plan, by_taps, finish, staging)


STAGE_BYTES = 16 * 1024  # the most shared memory a block stages weight rows in


def _weight_staging(k: KernelBuilder, plan: Schedule, w: Arg, shape: tuple[int, ...]) -> Staging | None:
    """The weight rows of a conv2d block kernel's block, staged as words in shared memory: the units of a block
    lie in at most two consecutive (n, channel unit) rows of units when a row holds at least a block's units, so
    2 * tiles weight rows hold every weight the block reads (tiles rows when the blocks divide a row). None where
    that does not hold, the rows would take more than STAGE_BYTES, or the kernel is no block kernel."""
    pixels = shape[2] * shape[3]
    words = w.layout.shape[1] // 4
    rows = plan.tiles if pixels % plan.per == 0 else 2 * plan.tiles  # blocks that never cross a row: one
    if plan.s == 1 or pixels < plan.per or rows * words * 4 > STAGE_BYTES:
        return None
    channel_units = plan.units[1]

    def fill(shared: Value, first: Value, thread: Value, threads: Value) -> None:
        q0 = k.divsi(first, pixels)

        def copy(e: Value) -> None:
            slot = k.divsi(e, words)
            unit = k.remsi(k.addi(q0, k.divsi(slot, plan.tiles)), channel_units)  # the next row may wrap
            oc = k.addi(k.muli(unit, plan.tiles), k.remsi(slot, plan.tiles))
            k.store(load_word(k, w.mem, [oc, k.muli(k.remsi(e, words), 4)]), shared, [e])

        k.for_(rows * words, copy, lb=thread, step=threads)

    return Staging(rows * words, fill)


def dense(k: KernelBuilder, out: Arg, ins: list[Arg], epilogue: Epilogue) -> None:
    """Y[m, u] = sum over i of X[m, i] * W[u, i] (+ B[u]) on the packed rows of the plan."""
    x, w = ins[0], ins[1]
    width = x.layout.shape[1]
    byte = x.mem.type.element_type == i8  # type: ignore[attr-defined]
    tiles = tile(out.layout.shape[1])  # units a thread computes

    def prepare(ivs: list[Value]) -> Step:
        m, unit = ivs
        us = [k.addi(k.muli(unit, tiles), r) for r in range(tiles)]

        def step(j: Value, accs: list[Value]) -> list[Value]:
            if byte:
                xw = load_word(k, x.mem, [m, k.muli(j, 4)])
                return [dp4a(k, xw, load_word(k, w.mem, [u, k.muli(j, 4)]), acc) for u, acc in zip(us, accs)]
            xv = _widen(k, x.load(k, [m, j]))
            return [k.addi(acc, k.muli(xv, _widen(k, w.load(k, [u, j])))) for u, acc in zip(us, accs)]

        return step

    def finish(ivs: list[Value], v: Value) -> None:
        if len(ins) > 2:
            v = k.addi(v, ins[2].load(k, [ivs[1]]))
        k.store(epilogue(v, ivs), out.mem, ivs)

    steps = width // 4 if byte else width
    reduce_outputs(k, schedule(out.layout.shape, tiles, steps, 4 if byte else 1), strided(k, steps, tiles, prepare),
                   finish)


def pack(k: KernelBuilder, a: Attrs, out: Arg, src: Arg) -> None:
    """`out` = `src` packed as `ops.pack` packs it, one thread per element of `out`."""
    element = out.mem.type.element_type  # type: ignore[attr-defined]
    zero_point = a.get("zero_point", 0)
    zero = k.const(zero_point, element)

    def narrow(v: Value) -> Value:
        return narrowed(k, k.addi(v, zero_point) if zero_point else v, element)

    def put(ok: Value, v: Value, ivs: list[Value]) -> None:
        k.store(k.select(ok, narrow(v), zero), out.mem, ivs)

    if a["to"] == "nhwc":
        _, _, h, wd = src.layout.shape
        ph, pw = a["padding"]

        def element_nhwc(ivs: list[Value]) -> None:
            n, hp, wp, c = ivs
            ih, iw = k.subi(hp, ph), k.subi(wp, pw)
            ok = k.andi(in_range(k, ih, h), in_range(k, iw, wd))
            put(ok, src.load(k, [n, c, clamp_index(k, ih, h), clamp_index(k, iw, wd)]), ivs)

        k.loops(out.layout.shape, element_nhwc, parallel=True)
        return
    if a["to"] == "conv_weight":
        _, cg, kh, kw = src.layout.shape
        depth = cg * kh * kw

        def element_weight(ivs: list[Value]) -> None:
            o, r = ivs
            rc = k.minsi(r, depth - 1)
            t = k.divsi(rc, cg)
            put(k.cmpi("slt", r, depth), src.load(k, [o, k.remsi(rc, cg), k.divsi(t, kw), k.remsi(t, kw)]), ivs)

        k.loops(out.layout.shape, element_weight, parallel=True)
        return
    depth = src.layout.shape[1]

    def element_row(ivs: list[Value]) -> None:
        r, i = ivs
        put(k.cmpi("slt", i, depth), src.load(k, [r, k.minsi(i, depth - 1)]), ivs)

    k.loops(out.layout.shape, element_row, parallel=True)


def concatenate(k: KernelBuilder, a: Attrs, out: Arg, ins: list[Arg], epilogue: Epilogue) -> None:
    """One thread per output element, reading the input whose slice of the axis holds it (the CPU's kernel copies
    the inputs one after another: loops a grid cannot share)."""
    ax = a["axis"] % len(out.layout.shape)
    starts = [0]
    for arg in ins:
        starts.append(starts[-1] + arg.layout.shape[ax])

    def element(ivs: list[Value]) -> None:
        def read(i: int) -> Value:
            src = list(ivs)
            src[ax] = k.subi(ivs[ax], starts[i])
            return ins[i].load(k, src)

        def pick(i: int) -> Value:  # input i or a later one
            if i == len(ins) - 1:
                return read(i)
            inside = k.cmpi("slt", ivs[ax], starts[i + 1])
            return k.if_(inside, lambda: [read(i)], lambda: [pick(i + 1)], [i32])[0]

        k.store(epilogue(pick(0), ivs), out.mem, ivs)

    k.loops(out.layout.shape, element, parallel=True)


def build_gpu_kernel(name: str, call: _Call) -> func.FuncOp | None:
    """The GPU kernel of a conv2d, dense, pack or concatenate group, or None for a group built as for the CPU."""
    group = call.group
    if group.kind not in ("conv2d", "dense", "pack", "concatenate"):
        return None
    k = KernelBuilder(name, call.types)
    args = [Arg(m, arg.layout) for m, arg in zip(k.args, call.args)]
    out, rest = args[0], args[1:]
    n_in = len(group.inputs)
    ins, extras = rest[:n_in], rest[n_in:n_in + len(group.extras)]

    epilogue = ops.fused_epilogue(k, group.epilogue, extras)

    if group.kind == "pack":
        pack(k, group.anchor.attrs, out, ins[0])
    elif group.kind == "conv2d":
        conv2d(k, group.anchor.attrs, out, ins, epilogue)
    elif group.kind == "concatenate":
        concatenate(k, group.anchor.attrs, out, ins, epilogue)
    else:
        dense(k, out, ins, epilogue)
    return k.finish()


__all__ = ["BLOCK", "SHARED", "build_gpu_kernel", "dp4a", "load_word", "split"]
