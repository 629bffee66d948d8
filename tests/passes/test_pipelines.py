"""cvm-to-loops as separate passes: the ops that cvm-mark-views, cvm-pack-operands and cvm-fuse write are what
cvm-bufferize follows, its outlined kernels and host what convert-cvm-to-loops lowers; bufferization alone
refuses a module that skipped them; after a print/parse round trip of each stage the lowering is the
same; an illegal kernel fails naming the op."""

import numpy as np
import pytest
from conftest import case_params, corpus_cases
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.dialects.memref import MemRef
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker
from xdsl.utils.exceptions import PassFailedException

import cvmc
from cvmc import CvmBuilder
from cvmc.codegen.llvm import emit_llvm, kernel_specs
from cvmc.dialects.cvm import Cvm
from cvmc.dialects.cvm_sched import CallOp, CvmSched, KernelOp
from cvmc.dialects.cvmc import Cvmc
from cvmc.passes.convert_cvm_to_loops import ConvertCvmToLoopsPass, LowerConv2d
from cvmc.passes.cvm_bufferize import CvmBufferizePass
from cvmc.passes.cvm_fuse import CvmFusePass
from cvmc.passes.cvm_fuse_packs import CvmFusePacksPass
from cvmc.passes.cvm_mark_views import CvmMarkViewsPass
from cvmc.passes.cvm_pack_operands import CvmPackOperandsPass
from cvmc.passes.loops.target import Target
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
    main = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
    return [op for op in main.body.block.ops if op.name == name]


def _run(module: ModuleOp, x: np.ndarray) -> list[np.ndarray]:
    """Run a lowered module on the cpu."""
    program, kernels = read_host(module)
    engine = JitEngine(str(emit_llvm(kernels)), list(kernel_specs(kernels).values()), cache=False)
    return CpuRunner(program, engine, 1)(x)


def _calls(module: ModuleOp) -> list[str]:
    main = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
    return [op.callee.root_reference.data for op in main.body.block.ops if isinstance(op, CallOp)]


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
        "cvm-mark-views,cvm-pack-operands,cvm-fuse,cvm-fuse-packs,cvm-bufferize,convert-cvm-to-loops"


def _kernel_texts(module: ModuleOp) -> list[str]:
    """The printed kernels (every function but the host @main)."""
    return [str(op) for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data != "main"]


def test_bufferize_alone_refuses_a_module_not_scheduled():
    """The pipeline is the contract: cvm-bufferize decides no kernel, view or packing itself."""
    graph, _ = _conv_chain()
    with pytest.raises(PassFailedException, match=r"cvm.conv2d .*: expected it inside a cvm_sched.kernel, got it "
                       r"in @main; run cvm-mark-views, cvm-pack-operands and cvm-fuse first"):
        _apply(graph_to_module(graph), CvmBufferizePass())


def test_bufferize_refuses_a_dense_whose_operands_are_not_packed():
    graph, _ = _conv_chain()
    with pytest.raises(PassFailedException, match=r"cvm.dense .*: expected its operands packed by cvm_sched.pack, "
                       r"got them unpacked; run cvm-pack-operands first"):
        _apply(graph_to_module(graph), CvmMarkViewsPass(), CvmFusePass(), CvmBufferizePass())


def test_the_conversion_alone_refuses_a_module_not_bufferized():
    graph, _ = _conv_chain()
    with pytest.raises(PassFailedException, match="expected a bufferized module .* run cvm-bufferize first"):
        _apply(graph_to_module(graph), ConvertCvmToLoopsPass())


def _context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, Cvm, CvmSched, Cvmc, Arith, MemRef):  # cvmc: the module's target attribute
        ctx.load_dialect(dialect)
    return ctx


@pytest.mark.parametrize("case", corpus_cases("model"), ids=lambda d: d.name)
def test_each_stage_survives_a_printed_round_trip_and_lowers_the_same(case):
    """The scheduled IR and the bufferized IR survive printing and parsing, and lower as the pipeline does."""
    graph = _graph(case)
    passes = [CvmMarkViewsPass(), CvmPackOperandsPass(), CvmFusePass(), CvmFusePacksPass(), CvmBufferizePass()]
    whole = str(run_pipeline(graph_to_module(graph), "cvm-to-loops"))
    scheduled = str(_apply(graph_to_module(graph), *passes[:4]))
    assert "cvm_sched.kernel" in scheduled
    parsed = Parser(_context(), scheduled).parse_module()
    assert str(parsed) == scheduled
    assert str(_apply(parsed, CvmBufferizePass(), ConvertCvmToLoopsPass())) == whole
    bufferized = str(_apply(graph_to_module(graph), *passes))
    assert "cvm_sched.load" in bufferized and "cvm_sched.store" in bufferized and "memref.view" in bufferized
    parsed = Parser(_context(), bufferized).parse_module()
    assert str(parsed) == bufferized
    assert str(_apply(parsed, ConvertCvmToLoopsPass())) == whole


def _kernels(module: ModuleOp) -> list[list[str]]:
    """The op names of each `cvm_sched.kernel` of @main, in order."""
    main = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return [[o.name for o in k.body.block.ops][:-1] for k in main.body.block.ops if isinstance(k, KernelOp)]


def test_the_scheduling_passes_record_their_decisions_as_ops():
    graph, _ = _conv_chain()
    module = _apply(graph_to_module(graph), CvmMarkViewsPass(), CvmPackOperandsPass(), CvmFusePass())
    assert _kernels(module) == [["cvm.conv2d", "cvm.cvm_right_shift", "cvm.relu"],
                                ["cvm.dense", "cvm.cvm_right_shift"]]
    assert not _ops(module, "cvm.flatten") and len(_ops(module, "cvm_sched.view")) == 1
    packs = _ops(module, "cvm_sched.pack")
    assert [p.to.data for p in packs] == ["nhwc", "conv_weight_blocked", "rows", "rows"]


def _bodies(module: ModuleOp) -> dict[str, list[str]]:
    """The op names of each outlined kernel, by name."""
    return {op.sym_name.data: [o.name for o in op.body.block.ops] for op in module.ops
            if isinstance(op, func.FuncOp) and op.sym_name.data != "main"}


def test_bufferize_outlines_each_kernel_and_makes_main_the_host():
    graph, x = _conv_chain()
    module = _apply(graph_to_module(graph), CvmMarkViewsPass(), CvmPackOperandsPass(), CvmFusePass(),
                    CvmBufferizePass())
    bodies = _bodies(module)
    load, store, ret = "cvm_sched.load", "cvm_sched.store", "func.return"
    # the conv2d's data and the dense's (a view of the relu's output) each packed by a kernel; the param weights
    # packed when compiling (globals)
    assert bodies["pack"] == [load, "cvm_sched.pack", store, ret]
    assert bodies["conv2d_cvm_right_shift_relu"] == [load, load, "cvm.conv2d", "cvm.cvm_right_shift", "cvm.relu",
                                                     store, ret]
    assert bodies["dense_cvm_right_shift"] == [load, load, "cvm.dense", "cvm.cvm_right_shift", store, ret]
    assert _calls(module) == ["pack", "conv2d_cvm_right_shift_relu", "pack_1", "dense_cvm_right_shift"]
    host = _ops(module, "memref.view")
    assert host and all(v.source.type.element_type.width.data == 8 for v in host)  # views of the byte arena
    assert len([op for op in module.ops if op.name == "memref.global"]) == 2  # the packed weights
    _apply(module, ConvertCvmToLoopsPass())
    assert all(load not in names for names in _bodies(module).values())
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
    module = Parser(_context(), ILLEGAL_KERNEL).parse_module()
    with pytest.raises(PassFailedException, match=r"cvm.sum %s: cannot join group 0: 'sum' is no elementwise op"):
        _apply(module, CvmBufferizePass())


def test_each_family_pattern_lowers_its_own_kernels_alone():
    graph, x = _conv_chain()
    module = _apply(graph_to_module(graph), CvmMarkViewsPass(), CvmPackOperandsPass(), CvmFusePass(),
                    CvmBufferizePass())
    walker = PatternRewriteWalker(GreedyRewritePatternApplier([LowerConv2d(Target.parse("x86:avx2"))]),
                                  apply_recursively=False)
    walker.rewrite_module(module)
    still = {name for name, ops in _bodies(module).items() if "cvm_sched.load" in ops}
    assert still == {"pack", "pack_1", "dense_cvm_right_shift"}  # the conv2d's kernel alone has its loops
    _apply(module, ConvertCvmToLoopsPass())
    assert not any("cvm_sched.load" in ops for ops in _bodies(module).values())
    want = run_graph(graph, x)
    assert all(np.array_equal(g, w) for g, w in zip(_run(module, x), want, strict=True))
