"""The cinn path's register-blocked float 2-D Dot (`out = lhs . rhs`, lhs [m, depth], rhs [depth, n]): each
iteration of the parallel loop owns MR rows of the output and walks their columns by panels of NR; a panel's
MR x NR elements are accumulated as loop-carried scalars of one loop over the whole depth (k ascending), the NR
lanes of a row unrolled so that LLVM's SLP vectorizer packs them into vector registers (NR / 16 zmm per row),
and the panel is stored once at the end. lhs[i, k] is loaded once per (row, k) and broadcast; rhs[k, j0:j0+NR]
is loaded once per k and shared by the MR rows. The last (m mod MR) rows and (n mod NR) columns take the same
loops with a smaller block, so any shape works.

Each element still sums its products in k order from 0: out[i, j] = (...((0 + a0 b0) + a1 b1) ...) + a_{d-1} b_{d-1}.
- `exact_float`: the step is acc + a * b (mul, then add: two roundings), bit for bit the element-wise form's and
  the old row form's result.
- the default float order: the step is fma(a, b, acc) (one rounding), so the sequential sum's error bound holds,
  |out - exact| <= depth * eps * sum_k |a_k b_k| (eps = 2^-24 for f32), each step at least as accurate as the
  mul-then-add step. The order is fixed: the same bits on any thread count and host (the blocking only decides
  which elements are computed together, not the order of any element's sum).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import math
from xdsl.dialects.builtin import MemRefType

from cvmc.dialects import cinn
from cvmc.passes.loops.builder import Value
from cvmc.passes.loops.cinn_scalar import Scalar

if TYPE_CHECKING:
    from cvmc.passes.convert_cinn_to_loops import KernelEmitter

# The block of the output one loop over k accumulates in registers: MR rows x NR columns (f32: NR / 16 zmm per
# row, MR * NR / 16 accumulators of the 32 zmm registers).
MR = 8
NR = 32
# The rows of rhs one packed panel holds (KC x NR floats, a stack slot): the k range runs by chunks of KC.
KC = 256


def _shape(v: Value) -> tuple[int, ...]:
    return tuple(v.type.get_shape())  # pyright: ignore[reportAttributeAccessIssue]


def dot_blocked(e: KernelEmitter, op: cinn.DotOp) -> bool:
    """Emit the 2-D float `op` as the register-blocked kernel (module docstring); False (nothing emitted) for
    other types and ranks."""
    lhs, rhs = op.operands
    if len(_shape(lhs)) != 2 or len(_shape(rhs)) != 2:
        return False
    k, out = e.k, e.outputs[0]
    s = Scalar(k, e.scalar_type(op), e.exact_float)
    if not s.is_float:
        return False
    rows, depth = _shape(lhs)
    cols = _shape(rhs)[1]

    def step(a: Value, b: Value, acc: Value) -> Value:
        return s.add(acc, s.mul(a, b)) if e.exact_float else s.emit(math.FmaOp(a, b, acc))

    def column_panel(ivs: list[Value]) -> None:
        j0 = k.muli(ivs[0], k.idx(NR))

        def columns(width: int) -> None:
            js = [k.addi(j0, j) for j in range(width)]
            buf = k.alloca(MemRefType(s.type, [KC * width]))

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
                        result = []
                        for r, i in enumerate(block):
                            a = e.value(lhs, [i, k.addi(k0, t)])
                            result.extend(step(a, bv, acc) for bv, acc in zip(b, accs[r * width : (r + 1) * width]))
                        return result

                    inits = [s.const(0) if first else k.load(out, [i, j]) for i in block for j in js]
                    totals = k.for_(depth_c, kstep, inits=inits)
                    for r, i in enumerate(block):
                        for j, total in zip(js, totals[r * width : (r + 1) * width]):
                            k.store(total, out, [i, j])

                if rows >= MR:
                    k.for_(rows - rows % MR, lambda i: row_block(i, MR), step=MR)
                if rows % MR:
                    row_block(k.idx(rows - rows % MR), rows % MR)

            chunk(k.idx(0), min(depth, KC), True)
            full = depth - depth % KC
            if full > KC:
                k.for_(full, lambda k0: chunk(k0, KC, False), lb=KC, step=KC)
            if depth > max(full, KC):
                chunk(k.idx(full), depth - full, False)

        if cols % NR == 0:
            columns(NR)
        elif cols < NR:
            columns(cols)
        else:  # the last iteration owns the last (cols mod NR) columns
            k.if_(k.cmpi("eq", ivs[0], k.idx(cols // NR)), lambda: columns(cols % NR), lambda: columns(NR))

    k.parallel([-(-cols // NR)], column_panel)
    return True
