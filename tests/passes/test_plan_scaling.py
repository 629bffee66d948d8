"""Planning in O(n log n): the segment-tree first fit places every buffer where the scan over all placed buffers
did, recorded offsets are checked alike, the work of planning grows linearly with the model (counted in calls, not
timed), and the caps that keep LLVM's time linear (fused groups of at most MAX_GROUP_OPS ops, concatenates in
parts of MAX_CONCAT_INPUTS inputs) hold at their bound and one past it, bit-exact."""

import copy
import sys

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from cvmc import CvmBuilder
from cvmc.dialects.cvm import Cvm
from cvmc.dialects.cvm_sched import CvmSched, KernelOp
from cvmc.passes.cvm_bufferize import CvmBufferizePass
from cvmc.passes.cvm_fuse import CvmFusePass
from cvmc.passes.loops.arena import Occupancy, disjoint
from cvmc.passes.loops.ir import CvmFunction
from cvmc.passes.loops.kernels import KernelNames
from cvmc.passes.loops.plan import (
    MAX_CONCAT_INPUTS,
    MAX_GROUP_OPS,
    Buffer,
    Hints,
    _fit,
    _fit_by_scan,
    plan,
)
from cvmc.passes.pipelines import run_pipeline
from cvmc.runtime.frontend.cvm_ir import graph_to_module
from cvmc.runtime.references.cvm import run_graph

RNG = np.random.default_rng(5)


def _buffers(n: int, steps: int) -> list[Buffer]:
    out = []
    for k in range(n):
        first = int(RNG.integers(0, steps))
        last = min(steps - 1, first + int(RNG.integers(0, 6)) if k % 4 else steps - 1)
        elements = int(RNG.choice([1, 16, 17, 40, 100, 256]))
        out.append(Buffer("arena", elements, first=first, last=last))
    return out


def _order(bs: list[Buffer]) -> list[Buffer]:
    return sorted(bs, key=lambda b: (-b.nbytes, b.first))


@pytest.mark.parametrize("trial", range(20))
def test_first_fit_places_every_buffer_where_the_scan_does(trial):
    steps = 2 + trial * 3
    rest = _buffers(10 + trial * 4, steps)
    a_rest, b_rest = copy.deepcopy(rest), copy.deepcopy(rest)
    arena = _fit(_order(a_rest), steps)
    assert arena == _fit_by_scan(_order(b_rest))
    assert [b.offset for b in a_rest] == [b.offset for b in b_rest]


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


# ---- the work of planning, counted ---------------------------------------------------------------------


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
    """Eight times the nodes, at most twelve times the calls (n log n: 8.6 to 10; the scan over every placed
    buffer this replaced: 14.5 for the chain, 57 for the wide and concat models)."""
    work = []
    for n in (200, 1600):
        net = CvmFunction.of_module(graph_to_module(model(n))).net
        first = plan(net)
        hints = Hints(groups={i: k for k, g in enumerate(first.groups) for i in g.members})
        work.append(_calls(lambda: (plan(net), plan(net, hints))))
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
    net = CvmFunction.of_module(graph_to_module(graph)).net
    assert [len(g.members) for g in plan(net).groups] == [MAX_GROUP_OPS] * (n // MAX_GROUP_OPS) + \
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
