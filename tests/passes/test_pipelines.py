"""cvm-to-loops as separate passes: the ops and offsets that cvm-mark-views, cvm-pack-operands, cvm-fuse and
cvm-plan-buffers write are what convert-cvm-to-loops follows; after any prefix of them, and after a print/parse
round trip, the lowering is the same; edited offsets are followed and stay bit-exact; an illegal kernel fails
naming the op."""

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
from cvmc.dialects.cvm_sched import CvmSched, KernelOp
from cvmc.dialects.cvmc import Cvmc
from cvmc.passes.convert_cvm_to_loops import ConvertCvmToLoopsPass
from cvmc.passes.cvm_fuse import CvmFusePass
from cvmc.passes.cvm_mark_views import CvmMarkViewsPass
from cvmc.passes.cvm_pack_operands import CvmPackOperandsPass
from cvmc.passes.cvm_plan_buffers import CvmPlanBuffersPass
from cvmc.passes.pipelines import PIPELINES, run_pipeline
from cvmc.runtime.devices.cpu import CpuRunner
from cvmc.runtime.driver.host import read_host
from cvmc.runtime.engine.jit import JitEngine
from cvmc.runtime.frontend.cvm_ir import graph_to_module
from cvmc.runtime.references.cvm import run_graph

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


def test_the_pipeline_is_the_scheduling_passes_then_the_conversion():
    assert PIPELINES["cvm-to-loops"] == \
        "cvm-mark-views,cvm-pack-operands,cvm-fuse,cvm-plan-buffers,convert-cvm-to-loops"


def _kernel_texts(module: ModuleOp) -> list[str]:
    """The printed kernels (every function but the host @main)."""
    return [str(op) for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data != "main"]


@pytest.mark.parametrize("case", CASES, ids=lambda d: d.name)
def test_the_conversion_alone_builds_the_pipelines_kernels(case):
    """The conversion alone decides what the scheduling passes would: the same kernels. (The host may number
    buffers otherwise: a kernel whose epilogue ends after another kernel is planned where it ends.)"""
    graph = _graph(case)
    alone = _kernel_texts(_apply(graph_to_module(graph), ConvertCvmToLoopsPass()))
    assert _kernel_texts(run_pipeline(graph_to_module(graph), "cvm-to-loops")) == alone


@pytest.mark.parametrize("case", corpus_cases("model"), ids=lambda d: d.name)
def test_each_prefix_of_the_pipeline_and_a_printed_round_trip_lower_the_same(case):
    """The conversion after the kernels are outlined, with or without their buffers planned, gives the same
    module, and the scheduled IR survives printing and parsing."""
    graph = _graph(case)
    passes = [CvmMarkViewsPass(), CvmPackOperandsPass(), CvmFusePass(), CvmPlanBuffersPass()]
    alone = str(_apply(graph_to_module(graph), *passes[:3], ConvertCvmToLoopsPass()))
    for k in range(3, len(passes) + 1):
        assert str(_apply(graph_to_module(graph), *passes[:k], ConvertCvmToLoopsPass())) == alone
    scheduled = str(_apply(graph_to_module(graph), *passes))
    assert "cvm_sched.kernel" in scheduled and "cvm.offset" in scheduled and "cvm.arena_bytes" in scheduled
    ctx = Context()
    for dialect in (Builtin, Func, Cvm, CvmSched, Cvmc):  # cvmc: the module's target attribute
        ctx.load_dialect(dialect)
    parsed = Parser(ctx, scheduled).parse_module()
    assert str(parsed) == scheduled
    assert str(_apply(parsed, ConvertCvmToLoopsPass())) == alone


def _kernels(module: ModuleOp) -> list[list[str]]:
    """The op names of each `cvm_sched.kernel` of @main, in order."""
    main = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return [[o.name for o in k.body.block.ops][:-1] for k in main.body.block.ops if isinstance(k, KernelOp)]


def test_the_scheduling_passes_record_their_decisions_as_ops():
    graph, _ = _conv_chain()
    module = _apply(graph_to_module(graph), CvmMarkViewsPass(), CvmPackOperandsPass(), CvmFusePass(),
                    CvmPlanBuffersPass())
    assert _kernels(module) == [["cvm.conv2d", "cvm.cvm_right_shift", "cvm.relu"],
                                ["cvm.dense", "cvm.cvm_right_shift"]]
    assert not _ops(module, "cvm.flatten") and len(_ops(module, "cvm_sched.view")) == 1
    packs = _ops(module, "cvm_sched.pack")
    assert [p.to.data for p in packs] == ["nhwc", "conv_weight_blocked", "rows", "rows"]
    relu = next(o for o in _all_ops(module) if o.name == "cvm.relu")
    conv = next(o for o in _all_ops(module) if o.name == "cvm.conv2d")
    assert "cvm.offset" in relu.attributes and "cvm.offset" not in conv.attributes  # the kernel's result
    assert "cvm.offset" in packs[0].attributes and "cvm.offset" not in packs[1].attributes  # a param: compiled


def _all_ops(module: ModuleOp) -> list[Operation]:
    return list(module.walk())


def test_recorded_offsets_are_followed_and_stay_bit_exact():
    graph, x = _conv_chain()
    module = _apply(graph_to_module(graph), CvmMarkViewsPass(), CvmPackOperandsPass(), CvmFusePass(),
                    CvmPlanBuffersPass())
    main = next(op for op in module.ops if isinstance(op, func.FuncOp))
    arena = main.attributes["cvm.arena_bytes"].value.data
    relu = next(o for o in _all_ops(module) if o.name == "cvm.relu")
    relu.attributes["cvm.offset"] = IntegerAttr(arena, 64)  # moved past everything else
    main.attributes["cvm.arena_bytes"] = IntegerAttr(arena + 1024, 64)
    _apply(module, ConvertCvmToLoopsPass())
    host = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
    assert host.body.block.args[-1].type.get_shape() == (arena + 1024,)
    shifts = {op.value.value.data for op in host.body.block.ops if isinstance(op, arith.ConstantOp)}
    assert arena in shifts
    want = run_graph(graph, x)
    assert all(np.array_equal(g, w) for g, w in zip(_run(module, x), want, strict=True))


ILLEGAL_KERNEL = """
func.func @main(%data: tensor<4x4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<11>> {
  %y = cvm_sched.kernel(%data) : (tensor<4x4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<11>> {
  ^bb0(%x: tensor<4x4xi32, #cvm.prec<8>>):
    %a = cvm.relu %x : (tensor<4x4xi32, #cvm.prec<8>>) -> tensor<4x4xi32, #cvm.prec<8>>
    %s = cvm.sum %a {axis = array<i64: 1>} : (tensor<4x4xi32, #cvm.prec<8>>) -> tensor<4xi32, #cvm.prec<11>>
    cvm_sched.yield %s : tensor<4xi32, #cvm.prec<11>>
  }
  func.return %y : tensor<4xi32, #cvm.prec<11>>
}
"""


def test_an_illegal_kernel_fails_naming_the_op():
    ctx = Context()
    for dialect in (Builtin, Func, Cvm, CvmSched, Cvmc):  # cvmc: the module's target attribute
        ctx.load_dialect(dialect)
    module = Parser(ctx, ILLEGAL_KERNEL).parse_module()
    with pytest.raises(PassFailedException, match=r"cvm.sum %s: cannot join group 0: 'sum' is no elementwise op"):
        _apply(module, ConvertCvmToLoopsPass())
