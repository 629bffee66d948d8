"""`taskgraph-stats`: print per-block and total statistics of each `taskgraph.graph`; the IR is unchanged.

Per block:
- params: values held by the weight and bias blocks (SW, SW2D, SWFC, SB), the block's volume;
- MACs: multiply-accumulates of one step: y*x*f*r*ky*kx for CC/CC2D, f*r for CVM, y*x*f for CVVH,
  CAX and CVS, y*x*f per data input for CADD and y*x*f*ky*kx for CAVG (additions), 0 for the rest;
- storage: bytes a storage block (INPUT and OUTPUT included) holds: volume * bits of its precision / 8,
  rounded up (TERNARY takes 2 bits, UINT_4 4, INT_9 16, INT_28 32);
- traffic: bytes its output edges move in one step: each edge's destination box volume * bits of the
  source block's precision / 8, rounded up.
The table goes to stderr, so that `cvm-opt` still prints the IR on stdout:

    cvm-opt lenet.mlir -p taskgraph-stats -o /dev/null
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import TextIO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from cvmc.dialects.taskgraph import (
    PRECISION_BITS,
    BlockOp,
    CaddOp,
    CavgOp,
    CaxOp,
    ConvBlockOp,
    CvmOp,
    CvsOp,
    CvvhOp,
    GraphOp,
    SbOp,
    StorageBlockOp,
    Sw2dOp,
    SwfcOp,
    SwOp,
)


@dataclass(frozen=True)
class BlockStats:
    block_id: int
    kind: str
    precision: str
    shape: str
    params: int
    macs: int
    storage_bytes: int
    traffic_bytes: int


def _volume(dims: dict[str, int]) -> int:
    return math.prod(dims.values())


def block_macs(block: BlockOp) -> int:
    """Multiply-accumulates of one step of a block (see the module docstring)."""
    s = block.shape
    yxf = math.prod(v for d, v in s.extents().items() if d in ("y", "x", "f"))
    if isinstance(block, ConvBlockOp):
        return yxf * s.dim("r") * s.dim("ky") * s.dim("kx")
    if isinstance(block, CvmOp):
        return s.dim("f") * s.dim("r")
    if isinstance(block, CvvhOp | CaxOp | CvsOp):
        return yxf
    if isinstance(block, CaddOp):
        return yxf * block.input_roles().count("input")
    if isinstance(block, CavgOp):
        return yxf * s.dim("ky") * s.dim("kx")
    return 0


def _bytes(count: int, block: BlockOp) -> int:
    return (count * PRECISION_BITS[block.get_precision()] + 7) // 8


def graph_stats(graph: GraphOp) -> list[BlockStats]:
    """The statistics of every block of a verified graph, in file order."""
    blocks = {b.id: b for b in graph.blocks}
    traffic = dict.fromkeys(blocks, 0)
    for e in graph.edges:
        src, dst = blocks[e.src], blocks[e.dst]
        traffic[src.id] += _bytes(math.prod(dst.edge_box(e.id, "in")[1]), src)
    stats: list[BlockStats] = []
    for b in graph.blocks:
        volume = _volume(b.shape.extents())
        stats.append(
            BlockStats(
                b.id,
                b.kind,
                b.get_precision().value,
                " ".join(f"{d}={v}" for d, v in b.shape.extents().items()),
                volume if isinstance(b, SwOp | Sw2dOp | SwfcOp | SbOp) else 0,
                block_macs(b),
                _bytes(volume, b) if isinstance(b, StorageBlockOp) else 0,
                traffic[b.id],
            )
        )
    return stats


def print_stats(stats: list[BlockStats], edges: int, out: TextIO) -> None:
    header = ("block", "kind", "precision", "shape", "params", "MACs", "storage B", "traffic B")
    rows: list[tuple[str, ...]] = [
        (str(s.block_id), s.kind, s.precision, s.shape, str(s.params), str(s.macs), str(s.storage_bytes),
         str(s.traffic_bytes))
        for s in stats
    ]  # fmt: skip
    totals = [str(sum(getattr(s, f) for s in stats)) for f in ("params", "macs", "storage_bytes", "traffic_bytes")]
    rows.append(("total", "", "", "", *totals))
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    out.write(f"taskgraph-stats: {len(stats)} blocks, {edges} edges\n")
    for r in (header, *rows):
        cells = [c.rjust(w) if i in (0, 4, 5, 6, 7) else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        out.write("  ".join(cells).rstrip() + "\n")


@dataclass(frozen=True)
class TaskGraphStatsPass(ModulePass):
    """Print parameter count, MACs, storage bytes and edge traffic of each task graph to stderr."""

    name = "taskgraph-stats"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for graph in (g for g in op.walk() if isinstance(g, GraphOp)):
            print_stats(graph_stats(graph), len(graph.edges), sys.stderr)
