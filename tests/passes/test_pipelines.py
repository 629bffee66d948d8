"""cvm-to-loops as separate passes: the annotations of cvm-mark-views, cvm-fuse and cvm-plan-buffers are what
convert-cvm-to-loops follows; with or without them, and after a print/parse round trip, the lowering is the same;
edited annotations change the plan and stay bit-exact; illegal ones fail naming the op."""

import numpy as np
import pytest
from conftest import case_params, corpus_cases
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import Builtin, IntegerAttr, ModuleOp
from xdsl.dialects.func import Func
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

import cvmc
from cvmc import CvmBuilder
from cvmc.codegen.llvm import emit_llvm, kernel_specs
from cvmc.dialects.cvm import Cvm
from cvmc.dialects.cvm_sched import CvmSched
from cvmc.dialects.cvmc import Cvmc
from cvmc.passes.convert_cvm_to_loops import ConvertCvmToLoopsPass
from cvmc.passes.cvm_fuse import CvmFusePass
from cvmc.passes.cvm_mark_views import CvmMarkViewsPass
from cvmc.passes.cvm_plan_buffers import CvmPlanBuffersPass
from cvmc.passes.pipelines import PIPELINES, run_pipeline
from cvmc.runtime.cpu import CpuRunner
from cvmc.runtime.cvm_ir import graph_to_module
from cvmc.runtime.host import read_host
from cvmc.runtime.jit import JitEngine
from cvmc.runtime.reference import run_graph

RNG = np.random.default_rng(11)


def _one_case_per_op():
    seen, out = set(), []
    for case in corpus_cases("op"):
        op = case.name.rsplit("_", 1)[0]
        if op not in seen:
            seen.add(op)
            out.append(case)
    return out


CASES = corpus_cases("model", "chain") + _one_case_per_op()


def _graph(case):
    return cvmc.load_model((case / "model.json").read_bytes(), case_params(case), device="reference").graph


def _apply(module: ModuleOp, *passes) -> ModuleOp:
    for p in passes:
        p.apply(Context(), module)
    return module


def _ops(module: ModuleOp, name: str) -> list[Operation]:
    """The ops `name` of @main, in order."""
    main = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return [op for op in main.body.block.ops if op.name == name]


def _run(module: ModuleOp, x: np.ndarray) -> list[np.ndarray]:
    """Run a lowered module on the cpu."""
    program, kernels = read_host(module)
    engine = JitEngine(str(emit_llvm(kernels)), list(kernel_specs(kernels).values()), cache=False)
    return CpuRunner(program, engine, 1)(x)


def _calls(module: ModuleOp) -> list[str]:
    main = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
    return [op.callee.root_reference.data for op in main.body.block.ops if isinstance(op, func.CallOp)]


def _rand(shape, precision=8):
    bound = (1 << (precision - 1)) - 1
    return RNG.integers(-bound, bound + 1, size=shape).astype(np.int32)


def _conv_chain():
    """conv2d -> cvm_right_shift -> relu -> dense -> cvm_right_shift, with its graph and an input."""
    b = CvmBuilder()
    x = b.create_input([1, 3, 6, 6], 8)
    conv = b.conv2d(x, b.create_param(_rand((4, 3, 3, 3)), 8), channels=4, kernel_size=(3, 3), padding=(1, 1),
                    use_bias=False)
    r = b.relu(b.cvm_right_shift(conv, precision=8, shift_bit=6))
    d = b.dense(b.flatten(r), b.create_param(_rand((5, 144)), 8), units=5, use_bias=False)
    y = b.cvm_right_shift(d, precision=8, shift_bit=10)
    graph = b.graph([y])
    return graph, _rand((1, 3, 6, 6))


def test_the_pipeline_is_the_three_analyses_then_the_conversion():
    assert PIPELINES["cvm-to-loops"] == "cvm-mark-views,cvm-fuse,cvm-plan-buffers,convert-cvm-to-loops"


@pytest.mark.parametrize("case", CASES, ids=lambda d: d.name)
def test_annotated_and_unannotated_lowerings_are_the_same_module(case):
    graph = _graph(case)
    alone = str(_apply(graph_to_module(graph), ConvertCvmToLoopsPass()))
    assert str(run_pipeline(graph_to_module(graph), "cvm-to-loops")) == alone


@pytest.mark.parametrize("case", corpus_cases("model"), ids=lambda d: d.name)
def test_each_analysis_alone_and_a_printed_round_trip_lower_the_same(case):
    """Any subset of the annotations gives the same plan, and they survive printing and parsing."""
    graph = _graph(case)
    alone = str(_apply(graph_to_module(graph), ConvertCvmToLoopsPass()))
    for analysis in (CvmMarkViewsPass(), CvmFusePass(), CvmPlanBuffersPass()):
        assert str(_apply(graph_to_module(graph), analysis, ConvertCvmToLoopsPass())) == alone
    annotated = str(_apply(graph_to_module(graph), CvmMarkViewsPass(), CvmFusePass(), CvmPlanBuffersPass()))
    assert "cvm.group" in annotated and "cvm.offset" in annotated and "cvm.arena_bytes" in annotated
    ctx = Context()
    for dialect in (Builtin, Func, Cvm, CvmSched, Cvmc):  # cvmc: the module's target attribute
        ctx.load_dialect(dialect)
    parsed = Parser(ctx, annotated).parse_module()
    assert str(parsed) == annotated
    assert str(_apply(parsed, ConvertCvmToLoopsPass())) == alone


def test_the_analyses_record_the_planners_decisions():
    graph, _ = _conv_chain()
    module = _apply(graph_to_module(graph), CvmMarkViewsPass(), CvmFusePass(), CvmPlanBuffersPass())
    (conv,), (shift, out), (relu,), (flat,), (dense,) = (_ops(module, n) for n in (
        "cvm.conv2d", "cvm.cvm_right_shift", "cvm.relu", "cvm_sched.view", "cvm.dense"))
    assert not _ops(module, "cvm.flatten") and "cvm.group" not in flat.attributes
    assert [op.attributes["cvm.group"] for op in (conv, shift, relu, dense, out)] == \
        [IntegerAttr(0, 64)] * 3 + [IntegerAttr(1, 64)] * 2
    assert "cvm.offset" in relu.attributes and "cvm.offset" not in conv.attributes  # the group's last member
    assert "cvm.pack_offset" in conv.attributes and "cvm.pack_offset" in dense.attributes


def test_a_recorded_split_of_a_group_is_followed_and_stays_bit_exact():
    graph, x = _conv_chain()
    module = _apply(graph_to_module(graph), CvmMarkViewsPass(), CvmFusePass())
    relu = _ops(module, "cvm.relu")[0]
    relu.attributes["cvm.group"] = IntegerAttr(7, 64)  # out of the conv's group: a kernel of its own
    split = _apply(module, CvmPlanBuffersPass(), ConvertCvmToLoopsPass())
    assert _calls(split) == ["pack", "conv2d_cvm_right_shift", "relu", "pack_1", "dense_cvm_right_shift"]
    fused = run_pipeline(graph_to_module(graph), "cvm-to-loops")
    assert _calls(fused) == ["pack", "conv2d_cvm_right_shift_relu", "pack_1", "dense_cvm_right_shift"]
    want = run_graph(graph, x)
    for module in (split, fused):
        assert all(np.array_equal(g, w) for g, w in zip(_run(module, x), want, strict=True))


def test_recorded_offsets_are_followed_and_stay_bit_exact():
    graph, x = _conv_chain()
    module = _apply(graph_to_module(graph), CvmMarkViewsPass(), CvmFusePass(), CvmPlanBuffersPass())
    main = next(op for op in module.ops if isinstance(op, func.FuncOp))
    arena = main.attributes["cvm.arena_bytes"].value.data
    relu = _ops(module, "cvm.relu")[0]
    relu.attributes["cvm.offset"] = IntegerAttr(arena, 64)  # moved past everything else
    main.attributes["cvm.arena_bytes"] = IntegerAttr(arena + 1024, 64)
    _apply(module, ConvertCvmToLoopsPass())
    host = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
    assert host.body.block.args[-1].type.get_shape() == (arena + 1024,)
    shifts = {op.value.value.data for op in host.body.block.ops if isinstance(op, arith.ConstantOp)}
    assert arena in shifts
    want = run_graph(graph, x)
    assert all(np.array_equal(g, w) for g, w in zip(_run(module, x), want, strict=True))


def test_an_illegal_recorded_fusion_fails_naming_the_op():
    graph, _ = _conv_chain()
    module = _apply(graph_to_module(graph), CvmFusePass())
    dense = _ops(module, "cvm.dense")[0]
    dense.attributes["cvm.group"] = IntegerAttr(0, 64)  # a dense is no epilogue of the conv
    with pytest.raises(PassFailedException, match=r"cvm.dense %\S+: cannot join group 0: 'dense' is no "):
        _apply(module, ConvertCvmToLoopsPass())
