"""The cinn path's float Dot kernels under each register block, on this host, against its measured fma limit.

A block is (MR rows, NR columns in vector registers, KC depth of a packed rhs panel): the pass option
`convert-cinn-to-loops{dot_block=MR,NR,KC}`, or `CinnBuilder.compile(..., dot_block=(MR, NR, KC))`
(passes/loops/cinn_dot.py; its `BLOCK` holds the default for each register width). The block changes no bit, only
the speed; this bench is how a default is chosen on a host. For every block of the grid (those whose MR x NR
accumulators, NR panel vectors and a broadcast fit the host's vector registers: 32 with AVX-512, 16 with AVX2) it
compiles the Dot kernels of bench/cinn_programs.py's programs (the MLP's five and the transformer block's seven:
square, skinny and transposed operands) and times each alone at 1 thread (median of `repeat` rounds of 5 calls), on
`jobs` processes at once, each pinned to a core of its own (all cores busy: the figures rank blocks; time the chosen
one alone with bench/cinn_programs.py). Prints the blocks fastest first: the Dots' time per program, their GFLOP/s,
the % of the host's fma limit (`vfmadd231ps` chains, bench/int8_peers.py, measured first, alone), the default block
marked.

    python bench/cinn_dot_blocks.py [--jobs N] [--repeat N] [--blocks MR,NR,KC;...] [--avx2]
"""

from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from math import prod

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PROGRAMS = ("mlp", "transformer")


def grid(vector_bytes: int) -> list[tuple[int, int, int]]:
    registers = 32 if vector_bytes == 64 else 16
    return [(mr, nr, kc) for nr in (1, 2, 3, 4) for mr in (4, 6, 8, 10, 12, 14, 16) for kc in (64, 128, 256, 512)
            if mr * nr + nr + 1 <= registers]


def _pin(cpus: list[int], counter, avx2: bool) -> None:
    if avx2:
        from cinn_programs import emulate_avx2

        emulate_avx2()
    with counter.get_lock():
        cpu = cpus[counter.value % len(cpus)]
        counter.value += 1
    os.sched_setaffinity(0, {cpu})


def dot_times(block: tuple[int, int, int], repeat: int) -> dict[str, tuple[int, float]]:
    """{program: (flops, seconds) of its Dot kernels} compiled with `block`."""
    import cinn_programs as bench

    from cvmc.dialects import cinn

    out = {}
    for key in PROGRAMS:
        _, _, arrays, program, _ = getattr(bench, key)()
        b, outs, feed = bench.built(arrays, program)
        flops = sum(2 * prod(cinn.shape_of(op.lhs)) * cinn.shape_of(op.result)[-1]
                    for op in b.build(outs).walk() if isinstance(op, cinn.DotOp))
        fn = b.compile(outs, device="cpu", threads=1, dot_block=block)
        kept = fn(**feed)  # fills the kernels' tables (see --kernels)
        seconds = sum(bench._interleaved({"k": call}, repeat, cooldown=0.0)["k"]
                      for call in fn._run.calls if call.kernel.name.endswith("_dot"))
        out[key] = (flops, seconds)
        del kept
    return out


def main(jobs: int, repeat: int, blocks: list[tuple[int, int, int]], avx2: bool = False) -> int:
    import multiprocessing

    from cinn_programs import emulate_avx2
    from int8_peers import fma_kind, vnni_limit

    if avx2:
        emulate_avx2()

    from cvmc.passes.loops.cinn_dot import BLOCK
    from cvmc.runtime.driver.target import host_vector_bytes

    width = host_vector_bytes()
    limit = 2 * vnni_limit(1, kinds=fma_kind())["vfmadd231ps"]  # GFLOP/s: 2 flops a lane
    default = BLOCK[width]
    blocks = blocks or grid(width)
    if default not in blocks:
        blocks.insert(0, default)
    cpus = sorted(os.sched_getaffinity(0))
    jobs = max(1, min(jobs, len(cpus), len(blocks)))
    print(f"{len(blocks)} blocks on {jobs} cores at once; {width}-byte vectors; fma limit {limit:.0f} GFLOP/s "
          "(1 thread, alone)", flush=True)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, context, initializer=_pin, initargs=(cpus, context.Value("i", 0), avx2)) as pool:
        results = dict(zip(blocks, pool.map(dot_times, blocks, [repeat] * len(blocks))))
    print(f"\n{'MR,NR,KC':>12} " + " ".join(f"{key + ' us':>15}" for key in PROGRAMS) + f" {'GFLOP/s':>8} {'limit':>6}")
    for block, r in sorted(results.items(), key=lambda br: sum(s for _, s in br[1].values())):
        flops, seconds = sum(f for f, _ in r.values()), sum(s for _, s in r.values())
        rate = flops / seconds / 1e9
        mark = "  (default)" if block == default else ""
        print(f"{','.join(map(str, block)):>12} " + " ".join(f"{r[k][1] * 1e6:15.1f}" for k in PROGRAMS)
              + f" {rate:8.1f} {100 * rate / limit:5.0f}%{mark}")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes at once, one per core")
    ap.add_argument("--repeat", type=int, default=10, help="rounds of 5 calls per kernel")
    ap.add_argument("--blocks", default="", help="MR,NR,KC;... (default: the grid that fits the registers)")
    ap.add_argument("--avx2", action="store_true", help="as an AVX2-only host (bench/cinn_programs.py's emulate_avx2)")
    args = ap.parse_args()
    chosen = [tuple(int(v) for v in b.split(",")) for b in args.blocks.split(";") if b]
    raise SystemExit(main(args.jobs, args.repeat, chosen, args.avx2))  # pyright: ignore[reportArgumentType]
