"""The cinn path's register-blocked float 2-D Dot (`out = lhs . rhs`, lhs [m, depth], rhs [depth, n]), a CPU
form (`ConvertCinnToLoopsPass.micro_kernels`; the CUDA runner keeps `KernelEmitter._matmul`'s row form).

Schedule: the outer parallel loop runs over panels of NR columns (the last one narrower when NR does not divide
n). A panel walks k by chunks of KC: it copies rhs[k0 : k0 + KC, j0 : j0 + NR] into a stack slot (k-major, NR
floats a row: contiguous vector loads whatever rhs's layout), then for each block of MR rows (the last block
narrower) carries the MR x NR accumulators through the chunk's k loop as loop values; the NR lanes of a row are
unrolled scalars, which LLVM's SLP vectorizer packs into two registers a row, each step loading two vectors of
the panel, broadcasting MR values of lhs and issuing 2 MR vector fmas, no load or store of the accumulators
(checked on the asm: `vfmadd231ps` on zmm, the 16 accumulators in registers; on AVX2 12 of the 16 ymm). The first chunk
starts from 0, each later one from the value the previous chunk stored in `out` (a store and a load of a float
are exact, so chunking does not change a bit). Any shape: 1 x K, K x 1, primes, depth 0 (zeros).

Order: every element sums its products over k ascending from +0.0:
out[i, j] = (...((0 + a_0 b_0) + a_1 b_1) ...) + a_{d-1} b_{d-1}.
- default float mode: each step is fma(a, b, acc), one rounding instead of two, so the sequential order's bound
  holds, |out - exact| <= depth * eps * sum_k |a_k b_k| (eps = 2^-24 for f32, 2^-53 for f64), each step at
  least as accurate as mul-then-add;
- `exact_float`: each step is acc + a * b (mul, then add), bit for bit the element-wise form's (and the row
  form's) result.
The blocking only decides which elements are computed together, never the order of one element's sum: the bits
are the same on any thread count and host (and for any MR, NR, KC).
"""

from __future__ import annotations

from xdsl.dialects.builtin import MemRefType

from cvmc.dialects import cinn
from cvmc.passes.loops.builder import Value
from cvmc.passes.loops.cinn_scalar import Emitter, Scalar

# The block of the output one loop over k accumulates in registers, MR rows x NR columns, and the rows of rhs one
# packed panel holds (KC x NR floats, a stack slot: the k range runs by chunks of KC), by the pass's
# `vector_bytes`: (MR, NR in vector registers, KC). NR two registers of elements (32 f32 on AVX-512, 16 on AVX2),
# so 2 MR accumulators: 16 of AVX-512's 32 zmm, 12 of AVX2's 16 ymm (8 rows of AVX2 spilled). The pass option
# `dot_block` replaces it (`bench/cinn_dot_blocks.py` times the choices on a host).
BLOCK = {64: (8, 2, 256), 32: (6, 2, 256), 16: (4, 2, 256)}


def blocks(op: cinn.DotOp) -> bool:
    """Whether `op` is a Dot this kernel computes: float, both operands 2-D (`cinn-mark-views` also asks: such a
    Dot reads a transpose as a view)."""
    lhs, rhs = op.operands
    return cinn.is_float(op.result.type.element_type) and len(cinn.shape_of(lhs)) == 2 == len(cinn.shape_of(rhs))


def dot_blocked(e: Emitter, op: cinn.DotOp) -> bool:
    """Emit the 2-D float `op` as the register-blocked kernel (module docstring); False (nothing emitted) for
    other types and ranks (`blocks`)."""
    if not blocks(op):
        return False
    lhs, rhs = op.operands
    k, out = e.k, e.outputs[0]
    s = Scalar(k, e.scalar_type(op), e.exact_float)
    rows, depth = cinn.shape_of(lhs)
    mr, registers, kc = e.dot_block or BLOCK[e.vector_bytes]
    nr = registers * e.vector_bytes * 8 // cinn.bit_width(s.element)
    cols = cinn.shape_of(rhs)[1]

    def column_panel(ivs: list[Value]) -> None:
        j0 = k.muli(ivs[0], k.idx(nr))

        def columns(width: int) -> None:
            js = [k.addi(j0, j) for j in range(width)]
            buf = k.alloca(MemRefType(s.type, [kc * width]))

            def chunk(k0: Value, depth_c: int, first: bool) -> None:
                """rhs[k0 : k0 + depth_c] added to out (`first`: to 0, out not read)."""

                def copy(t: Value) -> None:
                    for j, jj in enumerate(js):
                        k.store(e.value(rhs, [k.addi(k0, t), jj]), buf, [k.addi(k.muli(t, k.idx(width)), j)])

                k.for_(depth_c, copy)

                def row_block(top: Value, height: int) -> None:
                    block = [k.addi(top, r) if r else top for r in range(height)]

                    def kstep(t: Value, *accs: Value) -> list[Value]:
                        at = k.muli(t, k.idx(width))
                        b = [k.load(buf, [k.addi(at, j)]) for j in range(width)]
                        result: list[Value] = []
                        for r, i in enumerate(block):
                            a = e.value(lhs, [i, k.addi(k0, t)])
                            result.extend(s.madd(acc, a, bv) for bv, acc in zip(b, accs[r * width : (r + 1) * width]))
                        return result

                    inits = [s.const(0) if first else k.load(out, [i, j]) for i in block for j in js]
                    totals = k.for_(depth_c, kstep, inits=inits)
                    for r, i in enumerate(block):
                        for j, total in zip(js, totals[r * width : (r + 1) * width]):
                            k.store(total, out, [i, j])

                if rows >= mr:
                    k.for_(rows - rows % mr, lambda i: row_block(i, mr), step=mr)
                if rows % mr:
                    row_block(k.idx(rows - rows % mr), rows % mr)

            chunk(k.idx(0), min(depth, kc), True)
            full = depth - depth % kc
            if full > kc:
                k.for_(full, lambda k0: chunk(k0, kc, False), lb=kc, step=kc)
            if depth > max(full, kc):
                chunk(k.idx(full), depth - full, False)

        if cols % nr == 0:
            columns(nr)
        elif cols < nr:
            columns(cols)
        else:  # the last iteration owns the last (cols mod nr) columns
            k.if_(k.cmpi("eq", ivs[0], k.idx(cols // nr)), lambda: columns(cols % nr), lambda: columns(nr))

    k.parallel([-(-cols // nr)], column_panel)
    return True
