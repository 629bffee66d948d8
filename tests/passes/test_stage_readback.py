"""Every stage of a compile reads back (issue 28): each module a compile dumps (`runtime.driver.compile.StageDump`),
parsed as `cvm-opt` parses it, prints as it was dumped, and lowering on from it gives the same LLVM IR (or CUDA C) as
the compile itself. The loop level's micro-kernel ops (`cvmc.dot_u8s8`, `cvmc.mmk_*`, `cvmc.pack_tile`, `cvmc.dp4a`,
`cvmc.load_word`) and the CINN lowering's upstream-named ops (`math.isnan`, `arith.remf`, ...) are registered ops
(`dialects/cvmc.py`), so a stage holding them parses without `--allow-unregistered-dialect`. Also the Task IR
path (`convert-cvm-to-taskgraph`, `convert-taskgraph-to-loops`) and the CINN path (`cinn-mark-views`,
`cinn-fuse`, `convert-cinn-to-loops`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import get_all_dialects as xdsl_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.passes import ModulePass

from cvmc.codegen.cuda import emit_cuda
from cvmc.codegen.llvm import emit_llvm
from cvmc.dialects import register_all_dialects
from cvmc.dialects.cvm_sched import CallOp
from cvmc.dialects.cvmc import DotU8S8Op, Dp4aOp, LoadWordOp, MmkI16Op, MmkU8S8Op, PackTileOp
from cvmc.passes import get_all_passes
from cvmc.passes.loops.target import Target, module_target
from cvmc.passes.pipelines import pipeline_passes
from cvmc.runtime.builder import CvmBuilder
from cvmc.runtime.driver.compile import PIPELINE, StageDump, lower
from cvmc.runtime.driver.host import read_host
from cvmc.runtime.frontend.cvm_ir import graph_to_module
from cvmc.runtime.frontend.graph import Graph, load_graph

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "cvmc" / "examples"


def _example(name: str) -> Callable[[], Graph]:
    return lambda: load_graph(EXAMPLES / name / "model.json", EXAMPLES / name / "params.bin")


def _tiled_conv() -> Graph:
    """A conv2d of 16 channels over a relu, 16 columns: its u8 input is packed by `cvmc.pack_tile`."""
    rng = np.random.default_rng(7)
    b = CvmBuilder()
    x = b.relu(b.create_input([1, 16, 5, 16], 8))
    w = b.create_param(rng.integers(-127, 128, size=(16, 16, 3, 3)).astype(np.int32), 8)
    return b.graph([b.conv2d(x, w, channels=16, kernel_size=(3, 3), padding=(2, 1), use_bias=False)])


MODELS = {"digits": _example("digits"), "digits_cnn": _example("digits_cnn"), "tiled_conv": _tiled_conv}
TARGETS = ("x86:generic", "x86:avx2", "x86:avx512-vnni", "x86:avx512-vnni,emulated", "x86:amx,emulated", "cuda:any")
CINN_SOURCE = ROOT / "tests" / "filecheck" / "passes" / "convert-cinn-to-loops.mlir"


def _context() -> Context:
    """What `cvm-opt` parses with: xDSL's dialects and the project's, no unregistered ops."""
    ctx = Context()
    for name, factory in xdsl_dialects().items():
        ctx.register_dialect(name, factory)
    register_all_dialects(ctx)
    return ctx


def _parse(text: str) -> ModuleOp:
    module = Parser(_context(), text).parse_module()
    module.verify()
    return module


def _kernels(module: ModuleOp) -> ModuleOp:
    """The kernels, as `cvm-opt -t` prints them (a host function calling them set aside)."""
    if any(isinstance(op, CallOp) for op in module.walk()):
        return read_host(module)[1]
    return module


def _emit(module: ModuleOp, cuda: bool) -> str:
    kernels = _kernels(module)
    return emit_cuda(kernels) if cuda else str(emit_llvm(kernels))


def _passes(names: str) -> list[ModulePass]:
    factories = get_all_passes()
    return [factories[name]()() for name in names.split(",")]


def _lower_on(text: str, passes: list[ModulePass], cuda: bool, target: str | None = None) -> str:
    """Parse a dumped stage (it prints back as dumped), run the passes that come after it, print the kernels."""
    module = _parse(text)
    assert str(module) == text.rstrip("\n")
    if target is not None:
        module_target(module, target)
    for p in passes:
        p.apply(Context(), module)
    return _emit(module, cuda)


def _check_stages(stages: list[str], passes: list[ModulePass], expected: str, cuda: bool,
                  target: str | None = None) -> None:
    """Stage i (0: the input; i: after pass i) lowered on by passes[i:] gives `expected`."""
    assert len(stages) == len(passes) + 1
    for i, path in enumerate(stages):
        text = Path(path).read_text()
        got = _lower_on(text, passes[i:], cuda, target if i == 0 else None)
        assert got == expected, f"lowering on from {Path(path).name} gave other code"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_stage_of_cvm_to_loops_reads_back(model, target, tmp_path):
    graph = MODELS[model]()
    dump = StageDump(tmp_path)
    lowered = lower(graph, Target.parse(target), dump)
    cuda = target.startswith("cuda")
    expected = emit_cuda(lowered.kernels) if cuda else str(emit_llvm(lowered.kernels))
    _check_stages(dump.written, pipeline_passes(PIPELINE), expected, cuda, target)


def test_the_stages_hold_the_micro_kernel_ops_as_registered_ops(tmp_path):
    """The readback above covers every cvmc op: the models' stages hold each of them (as op classes)."""
    seen: set[type] = set()
    for (model, target) in (("digits_cnn", "x86:avx2"), ("digits_cnn", "x86:avx512-vnni"), ("tiled_conv", "x86:avx2"),
                            ("digits_cnn", "cuda:any")):
        graph = MODELS[model]()
        dump = StageDump(tmp_path / f"{model}-{target}".replace(":", "_"))
        lower(graph, Target.parse(target), dump)
        seen |= {type(op) for op in _parse(Path(dump.written[-1]).read_text()).walk()}
    assert {DotU8S8Op, MmkI16Op, MmkU8S8Op, PackTileOp, Dp4aOp, LoadWordOp} <= seen


@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_stage_of_the_task_ir_path_reads_back(model, tmp_path):
    graph = MODELS[model]()
    passes = _passes("convert-cvm-to-taskgraph,convert-taskgraph-to-loops")
    module = graph_to_module(graph)
    dump = StageDump(tmp_path)
    dump("import.mlir", str(module))
    for p in passes:
        p.apply(Context(), module)
        dump(f"{p.name}.mlir", str(module))
    _check_stages(dump.written, passes, _emit(module, cuda=False), cuda=False)


def test_every_stage_of_the_cinn_path_reads_back(tmp_path):
    passes = _passes("cinn-mark-views,cinn-fuse,convert-cinn-to-loops")
    module = _parse(CINN_SOURCE.read_text())
    dump = StageDump(tmp_path)
    dump("input.mlir", str(module))
    for p in passes:
        p.apply(Context(), module)
        dump(f"{p.name}.mlir", str(module))
    assert "math.isnan" in Path(dump.written[-1]).read_text() and "arith.remf" in Path(dump.written[-1]).read_text()
    _check_stages(dump.written, passes, _emit(module, cuda=False), cuda=False)
