"""Every front end through the one compile driver (`runtime.driver.compile`): a cinn program (`lower_cinn`, the
`cinn-to-loops` pipeline) and a Task IR graph (`lower_taskgraph`, `taskgraph-to-loops`) are lowered by the driver's
pass loop, which dumps each stage; every dumped stage parses back and prints as dumped, and the last one prints the
LLVM IR the driver printed. `jit.compile_module` prints through the driver too."""

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects import get_all_dialects as xdsl_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from cvmc import CinnBuilder
from cvmc.dialects import register_all_dialects
from cvmc.dialects.cvmc import TargetAttr
from cvmc.examples import lenet
from cvmc.passes.loops.target import Target
from cvmc.runtime.driver import compile as driver
from cvmc.runtime.driver.compile import StageDump, llvm_module, lower_cinn, lower_taskgraph
from cvmc.runtime.frontend.taskir_files import import_task


def _parse(text: str) -> ModuleOp:
    ctx = Context()
    for name, factory in xdsl_dialects().items():
        ctx.register_dialect(name, factory)
    register_all_dialects(ctx)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


def _read_back(written: list[str]) -> ModuleOp:
    """Every dumped stage parses and prints back as dumped; the last one parsed."""
    module = None
    for path in written:
        text = open(path).read()
        module = _parse(text)
        assert str(module) == text.rstrip("\n"), path
    assert module is not None
    return module


def _program() -> func.FuncOp:
    b = CinnBuilder("program")
    x = b.create_input("float32", [8, 16], "x")
    w = b.create_input("float32", [16, 4], "w")
    function = b.build([b.exp(b.add(b.dot(x, w), b.const_scalar(1.0, "one")))]).body.block.first_op
    assert isinstance(function, func.FuncOp)
    return function


def test_a_cinn_program_through_the_driver_dumps_stages_that_parse_back(tmp_path):
    dump = StageDump(tmp_path)
    target = Target(vector_bytes=64)
    kernels = lower_cinn(_program(), target, dump=dump)
    names = [p.rsplit("/", 1)[1] for p in dump.written]
    assert names == ["00-import.mlir", "01-cinn-mark-views.mlir", "02-cinn-fuse.mlir", "03-convert-cinn-to-loops.mlir"]
    last = _read_back(dump.written)
    assert last.attributes["cvmc.target"] == TargetAttr(vector_bytes=64)  # what the float kernels blocked for
    assert llvm_module(last)[0] == llvm_module(kernels)[0]
    unfused = StageDump(tmp_path / "unfused")
    lower_cinn(_program(), target, fuse=False, dump=unfused)
    assert [p.rsplit("/", 1)[1] for p in unfused.written] == ["00-import.mlir", "01-convert-cinn-to-loops.mlir"]
    _read_back(unfused.written)


def test_the_cinn_kernels_block_for_the_targets_vector_width():
    """The target's `vector_bytes` reaches the float Dot's blocking (no host detection in the lowering)."""
    texts = {width: str(lower_cinn(_program(), Target(vector_bytes=width))) for width in (32, 64)}
    assert texts[32] != texts[64]
    assert str(lower_cinn(_program(), Target(vector_bytes=32))) == texts[32]


def test_a_task_ir_graph_through_the_driver_dumps_stages_that_parse_back(tmp_path):
    module = import_task(lenet().graph)
    before = str(module)
    dump = StageDump(tmp_path)
    kernels = lower_taskgraph(module, dump)
    assert str(module) == before  # the graph is not changed
    assert [p.rsplit("/", 1)[1] for p in dump.written] == ["00-import.mlir", "01-convert-taskgraph-to-loops.mlir"]
    last = _read_back(dump.written)
    assert llvm_module(last)[0] == llvm_module(kernels)[0]


def test_the_jit_prints_through_the_driver(monkeypatch):
    from cvmc.runtime.engine.jit import compile_module

    printed = []

    def counted(kernels, dump=None):
        printed.append(kernels)
        return llvm_module(kernels, dump)

    monkeypatch.setattr(driver, "llvm_module", counted)
    kernels = lower_taskgraph(import_task(lenet().graph))
    engine = compile_module(kernels, cache=False)
    assert printed == [kernels] and "taskgraph" in engine.kernels
