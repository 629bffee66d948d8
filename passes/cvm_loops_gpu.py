"""The GPU schedule of conv2d, dense and their packing: loop-level kernels for the CUDA printer (issue 15).

Built instead of the CPU's kernels of these groups when lowering inside `cvm_loops_target.gpu_target()` (what
`cvmc.runtime.cuda` does); every other group is built as for the CPU (elementwise ops, pooling, reductions and
the like are already one `scf.parallel` over their output, one GPU thread per output element).

- Packing (`pack`): one thread per element of the packed operand (zero-padded NHWC input, weight rows, rows).
- conv2d and dense reduce over the packed operands of the plan: signed bytes when both operands fit int8, read
  four at a time as one 32-bit word (`cvmc.load_word`) and multiplied by `cvmc.dp4a` (CUDA's `__dp4a`: four int8
  products summed into an int32, exact), else int16 or int32 products summed in int32. A conv2d whose channels
  per group are not a multiple of 4 gathers its input word byte by byte. A conv2d's reduction runs tap by tap
  (kh, kw, then the tap's channel steps: no index division in the loop) where a tap's steps split evenly over
  the threads sharing the output, else over the flattened (tap, channel) step.
- Each output element's reduction is shared by `S` threads (`split`): the fewest, a power of two, such that a
  thread performs at most `MACS_PER_THREAD` multiply-adds or the launch has `THREADS_WANTED` threads. `S = 1`
  is an `scf.parallel` over the output (the printer's grid-stride loop: one thread per output). `S > 1` is a
  block schedule: blocks of at most `BLOCK` threads, each block `P` outputs (at most `BLOCK / S`, balanced over
  the blocks); thread `v < P * S` of a block sums steps `s, s + S, s + 2S, ...` (s = v mod S: neighbouring
  threads read neighbouring words) of its output `v / S` into `shared[v]` (shared memory), a barrier, then
  thread `v < P` adds the S partial sums of output `v`, runs the epilogue (bias, requantization: what the CPU
  path fuses) and stores it; a second barrier before the block's shared memory is used again. Blocks and threads
  stride (`for b = blockIdx.x; b < blocks; b += gridDim.x`, the same for threads), so any launch computes the
  same bits; the spare threads of the last block (fewer than the blocks) repeat the last output and their sum
  is never stored. A step past the end of a reduction (when S does not divide it) reads the last step's operands
  and adds nothing (`select`).

Integer sums wrap in int32 in any order, so the split gives the reference's bits.

    %shared = memref.alloca() : memref<256xi32, 3 : i64>     // memory space 3: the block's shared memory
    %b = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
    scf.for %blk = %b to %blocks step %grid {
      scf.for %v = %t to %threads_of_block step %block_dim {
        ... "cvmc.dp4a"(%xw, %ww, %acc) ... memref.store %acc, %shared[%v]
      }
      "gpu.barrier"() : () -> ()
      scf.for %v = %t to %outputs_of_block step %block_dim { ... the S partial sums, epilogue, store ... }
      "gpu.barrier"() : () -> ()
    }
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod
from typing import Protocol

from xdsl.dialects import func, gpu, memref
from xdsl.dialects.builtin import IntegerAttr, MemRefType, UnregisteredOp, i8, i32, i64

from cvmc.passes import cvm_loops_ops as ops
from cvmc.passes.cvm_loops_builder import KernelBuilder, Value
from cvmc.passes.cvm_loops_plan import Group
from cvmc.passes.cvm_loops_views import Layout


class _Arg(Protocol):
    @property
    def layout(self) -> Layout: ...


class _Call(Protocol):
    """What a kernel is built from (`cvm_loops_kernels.KernelCall`)."""

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
DP4A = "cvmc.dp4a"  # (a: i32, b: i32, acc: i32) -> i32: acc + the sum of the products of their four signed bytes
LOAD_WORD = "cvmc.load_word"  # (memref<...xi8>, indices...) -> i32: the four bytes from there (4-byte aligned)
_Dp4a = UnregisteredOp.with_name(DP4A)
_LoadWord = UnregisteredOp.with_name(LOAD_WORD)

Epilogue = Callable[[Value, list[Value]], Value]
Step = Callable[[Value, Value], Value]  # (reduction step, accumulator) -> accumulator
Reduction = Callable[[list[Value], Value, int], Value]  # (output ivs, lane, S) -> the lane's partial sum


def dp4a(k: KernelBuilder, a: Value, b: Value, acc: Value) -> Value:
    return k.insert(_Dp4a.create(operands=[a, b, acc], result_types=[i32])).results[0]


def load_word(k: KernelBuilder, mem: Value, ivs: Sequence[Value | int]) -> Value:
    return k.insert(_LoadWord.create(operands=[mem, *(k.idx(i) for i in ivs)], result_types=[i32])).results[0]


def split(outputs: int, steps: int, macs_per_step: int) -> int:
    """The threads sharing each output's reduction of `steps` steps (see the module docstring): the fewest, a power
    of two up to BLOCK, with at most MACS_PER_THREAD multiply-adds a thread or THREADS_WANTED threads."""
    s = 1
    while s < BLOCK and outputs * s < THREADS_WANTED and -(-steps // s) * macs_per_step > MACS_PER_THREAD:
        s *= 2
    return s


def _unravel(k: KernelBuilder, flat: Value, shape: tuple[int, ...]) -> list[Value]:
    ivs: list[Value] = []
    rest = flat
    for d in range(len(shape) - 1, -1, -1):
        n = shape[d]
        if n == 1:
            ivs.append(k.idx(0))
        elif d == 0:
            ivs.append(rest)
        else:
            ivs.append(k.remsi(rest, n))
            rest = k.divsi(rest, n)
    return ivs[::-1]


def _gpu_index(k: KernelBuilder, cls: type[gpu.ThreadIdOp | gpu.BlockIdOp | gpu.BlockDimOp | gpu.GridDimOp]) -> Value:
    return k.insert(cls(gpu.DimensionAttr(gpu.DimensionEnum.X))).results[0]


def strided(k: KernelBuilder, steps: int, prepare: Callable[[list[Value]], Step]) -> Reduction:
    """The reduction of steps lane, lane + S, lane + 2S, ... of `steps` steps (`prepare(ivs)` gives the step
    function of one output): ceil(steps / S) trips each, a step past the end adding nothing."""
    def partial(ivs: list[Value], lane: Value, s: int) -> Value:
        step = prepare(ivs)
        trips = -(-steps // s)

        def over(t: Value, acc: Value) -> list[Value]:
            j = k.addi(k.muli(t, s), lane)
            if trips * s == steps:
                return [step(j, acc)]
            inside = k.cmpi("slt", j, steps)
            return [k.select(inside, step(k.minsi(j, steps - 1), acc), acc)]

        return k.for_(trips, over, inits=[k.const(0)])[0]

    return partial


def reduce_outputs(k: KernelBuilder, shape: tuple[int, ...], steps: int, macs_per_step: int, reduction: Reduction,
                   finish: Callable[[list[Value], Value], None]) -> None:
    """Every output of `shape` as a sum of `steps` steps, shared by `split(...)` threads an output: each thread's
    partial sum is `reduction(ivs, lane, S)`, `finish(ivs, sum)` stores the output."""
    outputs = prod(shape)
    s = split(outputs, steps, macs_per_step)
    if s == 1:
        k.loops(shape, lambda ivs: finish(ivs, reduction(ivs, k.idx(0), 1)), parallel=True)
        return
    blocks = -(-outputs // (BLOCK // s))
    per = -(-outputs // blocks)  # outputs of a block, balanced: fewer than `blocks` spare threads in all
    shared = k.insert(memref.AllocaOp.get(i32, shape=[per * s], memory_space=SHARED)).results[0]
    block_id, grid = _gpu_index(k, gpu.BlockIdOp), _gpu_index(k, gpu.GridDimOp)
    thread, threads = _gpu_index(k, gpu.ThreadIdOp), _gpu_index(k, gpu.BlockDimOp)

    def block(b: Value) -> None:
        first = k.muli(b, per)

        def partial(v: Value) -> None:
            out = k.minsi(k.addi(first, k.divsi(v, s)), outputs - 1)  # spare threads repeat the last output
            k.store(reduction(_unravel(k, out, shape), k.remsi(v, s), s), shared, [v])

        k.for_(per * s, partial, lb=thread, step=threads)
        k.insert(gpu.BarrierOp())

        def total(v: Value) -> None:
            out = k.addi(first, v)

            def write() -> None:
                base = k.muli(v, s)
                acc = k.for_(s, lambda r, acc: [k.addi(acc, k.load(shared, [k.addi(base, r)]))], inits=[k.const(0)])
                finish(_unravel(k, out, shape), acc[0])

            if blocks * per == outputs:
                write()
            else:
                k.if_(k.cmpi("slt", out, outputs), write)

        k.for_(per, total, lb=thread, step=threads)
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


def conv2d(k: KernelBuilder, a: ops.Attrs, out: ops.Arg, ins: list[ops.Arg], epilogue: Epilogue) -> None:
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

    def origin(ivs: list[Value]) -> tuple[Value, Value, Value]:  # (first channel, first row, first column)
        n, oc, oh, ow = ivs
        c0 = k.muli(k.divsi(oc, ocg), cg) if groups > 1 else k.idx(0)
        return c0, k.muli(oh, sh), k.muli(ow, sw)

    def prepare(ivs: list[Value]) -> Step:
        n, oc, _, _ = ivs
        c0, ih0, iw0 = origin(ivs)

        def at(r: Value) -> list[Value]:  # the input element of reduction index r
            t = k.divsi(r, cg)
            ih = k.addi(ih0, k.muli(k.divsi(t, kw), dh))
            iw = k.addi(iw0, k.muli(k.remsi(t, kw), dw))
            return [n, ih, iw, k.addi(c0, k.remsi(r, cg))]

        if byte and cg % 4 == 0:  # a word never crosses a tap: one aligned load
            return lambda j, acc: dp4a(k, load_word(k, x.mem, at(k.muli(j, 4))),
                                       load_word(k, w.mem, [oc, k.muli(j, 4)]), acc)
        if byte:  # gathered byte by byte; past the reduction the weight row's padding is 0
            def gathered(j: Value, acc: Value) -> Value:
                word = _byte_word(k, lambda b: x.load(k, at(k.minsi(k.addi(k.muli(j, 4), b), depth - 1))))
                return dp4a(k, word, load_word(k, w.mem, [oc, k.muli(j, 4)]), acc)

            return gathered
        return lambda j, acc: k.addi(acc, k.muli(_widen(k, x.load(k, at(j))), _widen(k, w.load(k, [oc, j]))))

    flat = strided(k, steps, prepare)
    unit = 4 if byte else 1  # channels a step takes
    per_tap = cg // unit if cg % unit == 0 else 0  # steps of one tap (0: steps cross taps)

    def by_taps(ivs: list[Value], lane: Value, s: int) -> Value:
        """Tap by tap, when the S lanes share each tap's steps evenly: no index division in the loop."""
        if not per_tap or per_tap % s:
            return flat(ivs, lane, s)
        n, oc, _, _ = ivs
        c0, ih0, iw0 = origin(ivs)

        def over_i(i: Value, acc: Value) -> list[Value]:
            ih = k.addi(ih0, k.muli(i, dh))

            def over_j(jj: Value, acc: Value) -> list[Value]:
                iw = k.addi(iw0, k.muli(jj, dw))
                tap = k.muli(k.addi(k.muli(i, kw), jj), cg)

                def over_q(q: Value, acc: Value) -> list[Value]:
                    c = k.muli(k.addi(k.muli(q, s), lane), unit)
                    if byte:
                        return [dp4a(k, load_word(k, x.mem, [n, ih, iw, k.addi(c0, c)]),
                                     load_word(k, w.mem, [oc, k.addi(tap, c)]), acc)]
                    v = k.muli(_widen(k, x.load(k, [n, ih, iw, k.addi(c0, c)])),
                               _widen(k, w.load(k, [oc, k.addi(tap, c)])))
                    return [k.addi(acc, v)]

                return k.for_(per_tap // s, over_q, inits=[acc])

            return k.for_(kw, over_j, inits=[acc])

        return k.for_(kh, over_i, inits=[k.const(0)])[0]

    def finish(ivs: list[Value], v: Value) -> None:
        if len(ins) > 2:
            v = k.addi(v, ins[2].load(k, [ivs[1]]))
        k.store(epilogue(v, ivs), out.mem, ivs)

    reduce_outputs(k, shape, steps, 4 if byte else 1, by_taps, finish)


def dense(k: KernelBuilder, out: ops.Arg, ins: list[ops.Arg], epilogue: Epilogue) -> None:
    """Y[m, u] = sum over i of X[m, i] * W[u, i] (+ B[u]) on the packed rows of the plan."""
    x, w = ins[0], ins[1]
    width = x.layout.shape[1]
    byte = x.mem.type.element_type == i8  # type: ignore[attr-defined]

    def prepare(ivs: list[Value]) -> Step:
        m, u = ivs
        if byte:
            return lambda j, acc: dp4a(k, load_word(k, x.mem, [m, k.muli(j, 4)]),
                                       load_word(k, w.mem, [u, k.muli(j, 4)]), acc)
        return lambda j, acc: k.addi(acc, k.muli(_widen(k, x.load(k, [m, j])), _widen(k, w.load(k, [u, j]))))

    def finish(ivs: list[Value], v: Value) -> None:
        if len(ins) > 2:
            v = k.addi(v, ins[2].load(k, [ivs[1]]))
        k.store(epilogue(v, ivs), out.mem, ivs)

    steps = width // 4 if byte else width
    reduce_outputs(k, out.layout.shape, steps, 4 if byte else 1, strided(k, steps, prepare), finish)


def pack(k: KernelBuilder, a: ops.Attrs, out: ops.Arg, src: ops.Arg) -> None:
    """`out` = `src` packed as `ops.pack` packs it, one thread per element of `out`."""
    element = out.mem.type.element_type  # type: ignore[attr-defined]
    zero_point = a.get("zero_point", 0)
    zero = k.const(zero_point, element)

    def narrow(v: Value) -> Value:
        return ops._narrow(k, k.addi(v, zero_point) if zero_point else v, element)

    def put(ok: Value, v: Value, ivs: list[Value]) -> None:
        k.store(k.select(ok, narrow(v), zero), out.mem, ivs)

    if a["to"] == "nhwc":
        _, _, h, wd = src.layout.shape
        ph, pw = a["padding"]

        def element_nhwc(ivs: list[Value]) -> None:
            n, hp, wp, c = ivs
            ih, iw = k.subi(hp, ph), k.subi(wp, pw)
            ok = k.andi(ops._in_range(k, ih, h), ops._in_range(k, iw, wd))
            put(ok, src.load(k, [n, c, ops._clamp_index(k, ih, h), ops._clamp_index(k, iw, wd)]), ivs)

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


def build_gpu_kernel(name: str, call: _Call) -> func.FuncOp | None:
    """The GPU kernel of a conv2d, dense or pack group, or None for a group built as for the CPU."""
    group = call.group
    if group.kind not in ("conv2d", "dense", "pack"):
        return None
    k = KernelBuilder(name, call.types)
    args = [ops.Arg(m, arg.layout) for m, arg in zip(k.args, call.args)]
    out, rest = args[0], args[1:]
    n_in = len(group.inputs)
    ins, extras = rest[:n_in], rest[n_in:n_in + len(group.extras)]

    def epilogue(v: Value, ivs: list[Value]) -> Value:
        for step in group.epilogue:
            xs = [v if s is None else extras[s].load(k, ivs) for s in step.sources]
            v = ops.scalar(k, step.node.op, step.node.attrs, xs)
        return v

    if group.kind == "pack":
        pack(k, group.anchor.attrs, out, ins[0])
    elif group.kind == "conv2d":
        conv2d(k, group.anchor.attrs, out, ins, epilogue)
    else:
        dense(k, out, ins, epilogue)
    return k.finish()


__all__ = ["BLOCK", "DP4A", "LOAD_WORD", "SHARED", "build_gpu_kernel", "dp4a", "load_word", "split"]
