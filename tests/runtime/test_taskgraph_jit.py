"""convert-taskgraph-to-loops + the CPU JIT give the reference executor's results bit for bit."""

import pathlib

import numpy as np
import pytest
from conftest import DATA
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.parser import Parser

from cvmc.dialects.taskgraph import (
    CaddOp,
    ClusterAttr,
    EdgeOp,
    GraphOp,
    InterfaceAttr,
    OutputOp,
    Precision,
    RearrangeAttr,
    RearrangeKind,
    ShapeAttr,
    SiOp,
    TaskGraph,
    TensorAttr,
)
from cvmc.passes.convert_taskgraph_to_loops import lower_graph
from cvmc.runtime.devices.taskgraph_jit import TaskGraphJit
from cvmc.runtime.frontend.taskir_files import find_graph, import_task
from cvmc.runtime.references.taskgraph import TaskGraphExecutor, input_frames

TASKIR = DATA / "taskir"
PRIMS = sorted((TASKIR / "prims").glob("*.task.txt"))
ALL_KINDS = pathlib.Path(__file__).parent / "taskgraph_all_kinds.mlir"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CVMC_CACHE_DIR", str(tmp_path / "cache"))


def assert_same(ref: dict, jit: dict) -> None:
    assert ref.keys() == jit.keys()
    for k in ref:
        assert jit[k].dtype == np.int32
        assert jit[k].tolist() == ref[k].reshape(-1).tolist(), f"block {k}"


def test_lenet_on_the_jit_gives_its_logits():
    module = import_task(TASKIR / "lenet" / "lenet.task.txt")
    frames = input_frames(find_graph(module), np.fromfile(TASKIR / "lenet" / "i_0_0_0.dat", dtype="<i4"))
    expected = np.loadtxt(TASKIR / "lenet" / "o_0_0_0.dat.txt", dtype=np.int64)
    (outs,) = TaskGraphJit(module).run(1, frames)
    assert outs[36].tolist() == expected.tolist()


@pytest.mark.parametrize("path", PRIMS, ids=lambda p: p.name.removesuffix(".task.txt"))
def test_prims_graph_jit_equals_executor(path):
    module = import_task(path)
    assert_same(TaskGraphExecutor(find_graph(module)).step(), TaskGraphJit(module).step())


def test_every_block_kind_and_rearrange_over_several_steps():
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(TaskGraph)
    module = Parser(ctx, ALL_KINDS.read_text()).parse_module()
    module.verify()
    graph = find_graph(module)
    ex, jit = TaskGraphExecutor(graph), TaskGraphJit(module)
    rng = np.random.default_rng(7)
    for _ in range(3):
        frame = {0: rng.integers(-128, 128, 32)}
        assert_same(ex.step(frame), jit.step(frame))
        assert_same(ex.values, jit.values)  # every storage block, the CLIF's membrane included
    # Non-affine edges (zero-filling shifts, projections, shuffles) go through gather tables.
    kernel = lower_graph(graph)
    assert kernel.arg_attrs is not None
    tables = [a for a in kernel.arg_attrs.data if "taskgraph.table" in a.data]
    assert 0 < len(tables) < len(graph.edges)


def test_a_partly_written_input_cluster_reads_zeros_elsewhere():
    data = TensorAttr.from_numpy(np.array([5, -6, 7]), Precision.INT_32)
    half = InterfaceAttr.get(0, ShapeAttr.get(f=1), ShapeAttr.get(f=3))
    graph = GraphOp([
        SiOp(0, Precision.INT_32, ShapeAttr.get(f=3), outputs=[ClusterAttr.get([0])], data=data),
        CaddOp(1, Precision.INT_32, ShapeAttr.get(f=4), [ClusterAttr.get([half])], [ClusterAttr.get([1])]),
        OutputOp(2, Precision.INT_32, ShapeAttr.get(f=4), [ClusterAttr.get([1])]),
        EdgeOp(0, 0, 1, [RearrangeAttr.get(RearrangeKind.SHUFFLE, [2, 0, 1])]),
        EdgeOp(1, 1, 2),
    ])  # fmt: skip
    module = ModuleOp([graph])
    module.verify()
    expected = [0, 7, 5, -6]
    assert TaskGraphExecutor(graph).step()[2].tolist() == expected
    assert TaskGraphJit(module).step()[2].tolist() == expected


def test_lenet_lowers_to_one_kernel_without_tables():
    graph = find_graph(import_task(TASKIR / "lenet" / "lenet.task.txt"))
    kernel = lower_graph(graph)
    assert isinstance(kernel, func.FuncOp) and kernel.sym_name.data == "taskgraph"
    assert kernel.arg_attrs is not None
    roles = [a.data for a in kernel.arg_attrs.data]
    assert len(roles) == 22  # the storage blocks; the RESHAPE edge is affine
    assert [r["taskgraph.port"].data for r in roles if "taskgraph.port" in r] == ["input", "output"]
    assert sum("taskgraph.init" in r for r in roles) == 10  # weights and biases
