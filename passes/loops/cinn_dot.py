"""The cinn path's fast float 2-D Dot (the default float order; `exact_float` keeps the row form of
`cvmc.passes.convert_cinn_to_loops`, `KernelEmitter._matmul`): a register-blocked micro-kernel. Each unit of the
outer parallel loop is a block of MR rows of the output; within it, for each block of NR columns, the MR x NR
accumulators are carried through the whole k loop as loop values (LLVM's SLP vectorizer packs them into vector
registers), and each step adds a[i, k] * b[k, j] to them with one fused multiply-add.
The columns past the last full block run the same way one column at a time.

Order: every output element sums its products over k ascending from +0.0, one fma a step (one rounding each
instead of the product's and the sum's), so it is within k * eps * sum |products| of the exact sum, as the
sequential order is (each step is at least as accurate). The same on any thread count and host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import builtin

from cvmc.dialects import cinn
from cvmc.passes.loops.builder import Value
from cvmc.passes.loops.cinn_scalar import Scalar

if TYPE_CHECKING:
    from cvmc.passes.convert_cinn_to_loops import KernelEmitter

# MR, the rows of a block: the largest of these dividing the row count, by register width (bytes). NR is two
# registers of columns, so a block holds 2 MR accumulator registers: 16 of AVX-512's 32 zmm, 12 of AVX2's 16 ymm
# (8 rows of AVX2 spilled), each step loading 2 registers of b and broadcasting MR values of a.
ROWS = {64: (8, 4, 2, 1), 32: (6, 4, 2, 1)}


def _shape(v: Value) -> tuple[int, ...]:
    t = v.type
    assert isinstance(t, builtin.TensorType)
    return tuple(t.get_shape())


def matmul_blocked(e: KernelEmitter, op: cinn.DotOp) -> bool:
    """Emit the 2-D `op` as the micro-kernel (see the module docstring); False (nothing emitted) for the forms it
    does not cover: integer types, fewer columns than one block."""
    k, out = e.k, e.outputs[0]
    lhs, rhs = op.operands
    s = Scalar(k, e.scalar_type(op), exact_float=False)
    if not s.is_float:
        return False
    depth, cols = _shape(rhs)
    count = _shape(op.results[0])[0]
    nr = 2 * e.vector_bytes // (cinn.bit_width(s.element) // 8)
    if cols < nr:
        return False
    mr = next(r for r in ROWS.get(e.vector_bytes, (4, 2, 1)) if count % r == 0)
    full = cols - cols % nr

    def block_of_rows(ivs: list[Value]) -> None:
        first = k.muli(ivs[0], k.idx(mr))
        rows = [k.addi(first, r) if r else first for r in range(mr)]

        def columns(j0: Value, width: int) -> None:
            js = [k.addi(j0, t) if t else j0 for t in range(width)]

            def step(kk: Value, *accs: Value) -> list[Value]:
                a = [e.value(lhs, [i, kk]) for i in rows]
                b = [e.value(rhs, [kk, j]) for j in js]
                return [s.madd(accs[r * width + t], a[r], b[t]) for r in range(mr) for t in range(width)]

            accs = k.for_(depth, step, inits=[s.const(0)] * (mr * width))
            for r, i in enumerate(rows):
                for t, j in enumerate(js):
                    k.store(accs[r * width + t], out, [i, j])

        k.for_(full, lambda j0: columns(j0, nr), step=nr)
        if cols > full:
            k.for_(cols, lambda j: columns(j, 1), lb=full)

    k.parallel([count // mr], block_of_rows)
    return True
