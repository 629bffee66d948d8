"""Scheduling and bufferizing in O(n log n): the segment-tree first fit (`loops.arena.Occupancy`) places every
buffer where the scan over all placed buffers does, the work of the passes through cvm-bufferize grows linearly
with the model (counted in calls, not timed), and the caps that keep LLVM's time linear (fused kernels of at most
MAX_GROUP_OPS ops, concatenates in parts of MAX_CONCAT_INPUTS inputs) hold at their bound and one past it,
bit-exact."""

import sys
from dataclasses import dataclass

import numpy as np
import pytest
from scheduled import bufferized, kernels, run_passes, scheduled
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from cvmc import CvmBuilder
from cvmc.dialects.cvm import Cvm
from cvmc.dialects.cvm_sched import CvmSched, KernelOp
from cvmc.passes.cvm_bufferize import CvmBufferizePass
from cvmc.passes.cvm_fuse import MAX_CONCAT_INPUTS, MAX_GROUP_OPS, CvmFusePass
from cvmc.passes.loops.arena import Occupancy, disjoint
from cvmc.passes.loops.kernels import KernelNames
from cvmc.passes.pipelines import run_pipeline
from cvmc.runtime.frontend.cvm_ir import graph_to_module
from cvmc.runtime.references.cvm import run_graph

RNG = np.random.default_rng(5)


@dataclass
class _Buffer:
    first: int  # the step that writes it
    last: int  # the last step that reads it
    nbytes: int  # a multiple of the arena's 64-byte alignment


def _buffers(n: int, steps: int) -> list[_Buffer]:
    """Largest first, then by first step: the order buffers are placed in."""
    out = []
    for k in range(n):
        first = int(RNG.integers(0, steps))
        last = min(steps - 1, first + int(RNG.integers(0, 6)) if k % 4 else steps - 1)
        elements = int(RNG.choice([1, 16, 17, 40, 100, 256]))
        out.append(_Buffer(first, last, -(-elements * 4 // 64) * 64))
    return sorted(out, key=lambda b: (-b.nbytes, b.first))


def _scan(buffers: list[_Buffer]) -> list[int]:
    """The reference: each buffer at the lowest offset clear of every placed buffer live at a step it is live
    (a scan over all of them: quadratic)."""
    placed: list[tuple[_Buffer, int]] = []
    for b in buffers:
        offset = 0
        for lo, hi in sorted((o, o + p.nbytes) for p, o in placed if p.first <= b.last and b.first <= p.last):
            if offset + b.nbytes <= lo:
                break
            offset = max(offset, hi)
        placed.append((b, offset))
    return [o for _, o in placed]


@pytest.mark.parametrize("trial", range(20))
def test_first_fit_places_every_buffer_where_the_scan_does(trial):
    steps = 2 + trial * 3
    buffers = _buffers(10 + trial * 4, steps)
    occupancy = Occupancy(steps)
    offsets = []
    for b in buffers:
        offsets.append(occupancy.first_fit(b.first, b.last, b.nbytes))
        occupancy.add(b.first, b.last, offsets[-1], offsets[-1] + b.nbytes)
    assert offsets == _scan(buffers)


def test_occupancy_ranges_touching_are_free_overlapping_are_not():
    occ = Occupancy(8)
    occ.add(2, 4, 64, 128)
    assert occ.is_free(0, 7, 0, 64) and occ.is_free(0, 7, 128, 64)  # touching bytes
    assert not occ.is_free(4, 4, 64, 64) and not occ.is_free(0, 2, 127, 64)  # touching steps share the step
    assert occ.is_free(5, 7, 64, 64) and occ.is_free(0, 1, 64, 64)
    assert occ.first_fit(0, 7, 64) == 0 and occ.first_fit(0, 7, 65) == 128 and occ.first_fit(5, 5, 1000) == 0
    assert disjoint([(0, 3, 0, 64), (3, 5, 64, 128), (4, 9, 0, 64)])
    assert not disjoint([(0, 3, 0, 64), (3, 5, 63, 128)])
    assert not disjoint([(0, 3, 0, 64), (5, 6, 0, 64), (3, 3, 0, 1)])


def test_kernel_names_take_the_lowest_free_counter():
    names = KernelNames()
    assert [names.new(["relu"]) for _ in range(3)] == ["relu", "relu_1", "relu_2"]
    names.taken.add("abs_1")
    assert [names.new(["abs"]) for _ in range(3)] == ["abs", "abs_2", "abs_3"]


def test_kernels_that_differ_are_named_with_counters():
    """Kernels of one base name that differ (here in the views they read) are named with counters from 1."""
    b = CvmBuilder()
    x = b.create_input([1, 16], 8)
    views = [x, *(b.strided_slice(x, begin=(0, 0), end=(1, 16), stride=(1, s)) for s in (2, 4))]
    names = [k.name for k in bufferized(b.graph([op(v) for op in (b.relu, b.abs) for v in views])).kernels]
    assert names == ["relu", "relu_1", "relu_2", "abs", "abs_1", "abs_2"]


# ---- the work of the passes, counted --------------------------------------------------------------------


def _wide(n: int):
    b = CvmBuilder()
    x = b.create_input([1, 16], 8)
    return b.graph([b.relu(x) for _ in range(n)])


def _chain(n: int, head_every: int = 0):
    b = CvmBuilder()
    y = x = b.create_input([1, 16], 8)
    heads = []
    for k in range(n):
        y = (b.relu(y), b.cvm_right_shift(y, precision=8, shift_bit=1), b.clip(y, a_min=-100, a_max=100))[k % 3] \
            if k % 4 != 3 else b.cvm_clip(b.elemwise_add(y, x), precision=8)
        if head_every and k % head_every == 0:
            heads.append(y)
    return b.graph([*heads, y])


def _concat(n: int):
    b = CvmBuilder()
    x = b.create_input([1, 4], 8)
    return b.graph([b.relu(b.concatenate(*(b.relu(x) for _ in range(n)), axis=1))])


def _calls(fn) -> int:
    count = 0

    def hook(frame, event, arg):
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("model", [_wide, lambda n: _chain(n, head_every=7), _concat], ids=["wide", "chain", "concat"])
def test_planning_work_grows_linearly_with_the_model(model):
    """Eight times the nodes, at most twelve times the calls of the passes through cvm-bufferize (views, packs,
    kernels, liveness and placement, outlining: 7.7 to 8.2 on 2026-11-28; the planner alone, when it placed
    by a scan over every placed buffer: 14.5 for the chain, 57 for the wide and concat models)."""
    work = []
    for n in (200, 1600):
        module = graph_to_module(model(n))
        work.append(_calls(lambda: run_passes(module, "x86:avx2")))
    assert work[1] <= 12 * work[0]


# ---- the caps ------------------------------------------------------------------------------------------


def _run(graph):
    from cvmc.runtime.devices.cpu import compile_graph

    x = RNG.integers(-127, 128, size=graph.nodes[graph.input_id].shapes[0]).astype(np.int32)
    got, want = compile_graph(graph, cache=False)(x), run_graph(graph, x)
    assert len(got) == len(want) and all(np.array_equal(g, w) for g, w in zip(got, want))


def _kernel_calls(graph) -> list[str]:
    module = run_pipeline(graph_to_module(graph), "cvm-to-loops")
    main = next(op for op in module.ops if getattr(op, "sym_name", None) and op.sym_name.data == "main")
    return [op.callee.string_value() for op in main.body.block.ops if op.name == "cvm_sched.call"]


@pytest.mark.parametrize("n", [MAX_GROUP_OPS - 1, MAX_GROUP_OPS, MAX_GROUP_OPS + 1, 2 * MAX_GROUP_OPS + 1])
def test_a_chain_is_cut_into_groups_of_at_most_max_group_ops(n):
    b = CvmBuilder()
    y = b.create_input([1, 16], 8)
    for _ in range(n):
        y = b.relu(y)
    graph = b.graph([y])
    assert [len(k) for k in kernels(scheduled(graph))] == [MAX_GROUP_OPS] * (n // MAX_GROUP_OPS) + \
        ([n % MAX_GROUP_OPS] if n % MAX_GROUP_OPS else [])
    _run(graph)


def test_a_kernel_past_the_cap_fails_naming_the_op():
    t = "tensor<1x16xi32, #cvm.prec<8>>"
    relus = "\n".join(f"    %r{k + 1} = cvm.relu %r{k} : ({t}) -> {t}" for k in range(MAX_GROUP_OPS + 1))
    text = (f"func.func @main(%data: {t}) -> {t} {{\n  %y = cvm_sched.kernel(%data) : ({t}) -> {t} {{\n"
            f"  ^bb0(%r0: {t}):\n{relus}\n    cvm_sched.yield %r{MAX_GROUP_OPS + 1} : {t}\n  }}\n"
            f"  func.return %y : {t}\n}}")
    ctx = Context()
    for dialect in (Builtin, Func, Cvm, CvmSched):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text).parse_module()
    with pytest.raises(PassFailedException, match=rf"cannot join group 0: the group has {MAX_GROUP_OPS} ops"):
        CvmBufferizePass().apply(Context(), module)


def test_the_cap_cuts_a_chain_into_kernels():
    b = CvmBuilder()
    y = b.create_input([1, 16], 8)
    for _ in range(MAX_GROUP_OPS + 1):
        y = b.relu(y)
    module = graph_to_module(b.graph([y]))
    CvmFusePass().apply(Context(), module)
    main = next(iter(module.ops))
    sizes = [len(list(k.body.block.ops)) - 1 for k in main.body.block.ops if isinstance(k, KernelOp)]
    assert sizes == [MAX_GROUP_OPS, 1]


@pytest.mark.parametrize("n", [MAX_CONCAT_INPUTS, MAX_CONCAT_INPUTS + 1, 3 * MAX_CONCAT_INPUTS + 2])
def test_a_wide_concatenate_runs_in_parts_and_stays_bit_exact(n):
    graph = _concat(n)
    calls = _kernel_calls(graph)
    parts = [c for c in calls if c.startswith("concatenate")]
    assert len(parts) == -(-n // MAX_CONCAT_INPUTS)
    if n <= MAX_CONCAT_INPUTS:
        assert parts == ["concatenate_relu"]  # the relu after it is its epilogue
    else:
        assert calls[-1].startswith("relu")  # no epilogue: the output is whole only after the last part
        widths = {min(MAX_CONCAT_INPUTS, n - k) for k in range(0, n, MAX_CONCAT_INPUTS)}
        assert len(set(parts)) == len(widths)  # parts of equal shapes share a kernel, each given its slice
    _run(graph)


def test_a_long_mixed_chain_with_heads_stays_bit_exact():
    _run(_chain(3 * MAX_GROUP_OPS + 5, head_every=50))


def test_the_pipeline_pauses_the_garbage_collector_and_restores_it():
    import gc

    from cvmc.passes.pipelines import gc_paused

    seen = []
    with gc_paused():
        seen.append(gc.isenabled())
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # left off, as it was
    finally:
        gc.enable()
