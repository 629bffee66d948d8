"""`cvm-plan-buffers`: place every buffer the kernels write in one arena, reusing bytes whose value is dead.

Each kernel (`cvm_sched.kernel`) writes fresh buffers: its results, a non_max_suppression's scratch; each
`cvm_sched.pack` that is no param packed when compiling writes one (a pack kernel just before its conv2d or dense,
or the producing conv2d's epilogue). A buffer is live from the call that writes it to the last call that reads it
or a view of it (heads: to the end), and buffers are placed by first fit, largest first, 64-byte aligned, so two
buffers share bytes only when their lifetimes do not overlap. The model's own storage_id is never used. The
offsets (bytes into the arena) are recorded on the op that allocates the buffer:

    cvm.offset = o : i64             a result's buffer: on the pack op, or on the kernel's last operator (whose
                                     value the kernel yields); `array<i64: o0, o1>` for several results
    cvm.scratch_offset = o : i64     the scratch of a non_max_suppression

and `@main` gets `cvm.arena_bytes = n : i64`:

    func.func @main(...) -> ... attributes {cvm.arena_bytes = 2560 : i64} {
      %0 = cvm_sched.pack %data {cvm.offset = 1024 : i64, to = "nhwc", padding = array<i64: 1, 1>} : ...
      %1 = cvm_sched.pack %w {to = "conv_weight_blocked", ...} : ...     (a param: packed when compiling)
      %r = cvm_sched.kernel(%0, %1) : ... {
        %c = cvm.conv2d ...
        %r_1 = cvm.relu %c {cvm.offset = 0 : i64} : ...
        ...

The offsets are a choice the lowering follows (checked: 64-byte aligned, no overlap between buffers live at the
same time, the arena large enough); a buffer without one is placed by first fit around the recorded ones. (A
module whose operands were not packed by `cvm-pack-operands` gets `cvm.pack_offset = {data = o, weight = o}` on
the conv2d or dense for the packs the planner makes.)
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, DictionaryAttr, IntegerAttr, ModuleOp, i64
from xdsl.ir import Attribute
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from cvmc.passes.loops.ir import CvmFunction
from cvmc.passes.loops.plan import Hints, Owner
from cvmc.passes.loops.target import module_target

OFFSET = "cvm.offset"
PACK_OFFSET = "cvm.pack_offset"
SCRATCH_OFFSET = "cvm.scratch_offset"
ARENA_BYTES = "cvm.arena_bytes"
OPERANDS = ("data", "weight")  # the operands of conv2d and dense that may be packed


def _int(attr: Attribute) -> int | None:
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def read_offsets(fn: CvmFunction) -> tuple[dict[Owner, int], int | None]:
    """The recorded arena offsets by buffer owner, and `cvm.arena_bytes` (None when not recorded)."""
    offsets: dict[Owner, int] = {}
    for i, op in enumerate(fn.ops):
        for name, attr in op.attributes.items():
            found: dict[Owner, int | None] = {}
            if name == OFFSET and isinstance(attr, DenseArrayBase):
                found = {(i, "result", k): v for k, v in enumerate(attr.get_values())}
            elif name == OFFSET:
                found = {(i, "result", 0): _int(attr)}
            elif name == SCRATCH_OFFSET:
                found = {(i, "scratch", 0): _int(attr)}
            elif name == PACK_OFFSET and isinstance(attr, DictionaryAttr) and set(attr.data) <= set(OPERANDS):
                found = {(i, "pack", OPERANDS.index(k)): _int(v) for k, v in attr.data.items()}
            elif name == PACK_OFFSET:
                found = {(i, "pack", -1): None}
            for owner, value in found.items():
                if not isinstance(value, int):
                    raise PassFailedException(f"{fn.label(i)}: expected '{name}' to be an integer offset, an "
                                              f"array<i64> or (packs) {{data = o, weight = o}}, got {attr}")
                offsets[owner] = value
    arena = fn.main.attributes.get(ARENA_BYTES)
    if arena is not None and _int(arena) is None:
        raise PassFailedException(f"@main: expected '{ARENA_BYTES}' to be an integer, got {arena}")
    return offsets, None if arena is None else _int(arena)


def read_hints(fn: CvmFunction) -> Hints:
    """Every decision recorded in `@main`: the kernels (`cvm_sched.kernel`), the offsets."""
    offsets, arena = read_offsets(fn)
    return Hints(fn.groups, offsets, arena)


@dataclass(frozen=True)
class CvmPlanBuffersPass(ModulePass):
    """Record the arena offset of every buffer the kernels of `@main` write, and the arena's size."""

    name = "cvm-plan-buffers"

    target: str | None = None  # `loops.target.Target` printed; None: the module's `cvmc.target`, else DEFAULT

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fn = CvmFunction.of_module(op)
        p = fn.plan(read_hints(fn), target=module_target(op, self.target))
        fn.clear(OFFSET, PACK_OFFSET, SCRATCH_OFFSET)
        by_role: dict[str, dict[int, dict[int, int]]] = {"result": {}, "pack": {}, "scratch": {}}
        for b in p.buffers:
            if b.owner is not None:
                i, role, k = b.owner
                by_role[role].setdefault(i, {})[k] = b.offset
        for i, offsets in by_role["result"].items():
            values = [offsets[k] for k in sorted(offsets)]
            fn.ops[i].attributes[OFFSET] = IntegerAttr(values[0], 64) if len(values) == 1 else \
                DenseArrayBase.from_list(i64, values)
        for i, offsets in by_role["pack"].items():
            fn.ops[i].attributes[PACK_OFFSET] = DictionaryAttr({OPERANDS[k]: IntegerAttr(v, 64)
                                                                for k, v in sorted(offsets.items())})
        for i, offsets in by_role["scratch"].items():
            fn.ops[i].attributes[SCRATCH_OFFSET] = IntegerAttr(offsets[0], 64)
        fn.main.attributes[ARENA_BYTES] = IntegerAttr(p.arena_bytes, 64)
