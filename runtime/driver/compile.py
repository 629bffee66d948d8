"""The one compile driver: every device and tool lowers a model here, the same way.

    lowered = lower(graph, target)               # graph -> cvm IR -> `cvm-to-loops` for target -> host + kernels
    ir_text, specs = llvm_kernels(lowered)       # the cpu JIT and `cvm-aot` (LLVM IR headed by the target)
    source, specs = cuda_kernels(lowered)        # the cuda device (CUDA C for NVRTC)
    dump_stages(graph, "out/", "cpu")            # every stage as a file: 00-import.mlir ... 09-kernels.s
    kernels = lower_cinn(function, target)       # a cinn program through `cinn-to-loops` (CinnBuilder's devices)
    kernels = lower_taskgraph(module)            # a Task IR graph through `taskgraph-to-loops` (its JIT)
    ir_text, specs = llvm_module(kernels)        # any loop-level module as LLVM IR (`jit.compile_module`)

A `StageDump` given to `lower` and the printers (or to `cpu.compile_graph`, `cuda.compile_graph`, through
`load_model(..., dump=DIR)`) writes each stage as the compile passes through it: the module after import, after
each pass of the pipeline, then the device's source (and on cpu the LLVM IR after O3 and the assembly), so a dump
shows what the device compiled, in one lowering.

The target is chosen by the caller (`runtime.driver.target`: `jit_target()` for code this process runs,
`detect_target("cuda")` for the GPU); nothing here looks at the machine.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cvmc.errors import CVMRuntimeError
from cvmc.runtime.driver.host import HostProgram, read_host
from cvmc.runtime.frontend.files import write_file
from cvmc.runtime.frontend.graph import Graph

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.func import FuncOp
    from xdsl.passes import ModulePass

    from cvmc.codegen.abi import KernelSpec
    from cvmc.codegen.cuda_launch import CudaKernelSpec
    from cvmc.passes.loops.target import Target

log = logging.getLogger(__name__)
PIPELINE = "cvm-to-loops"


class StageDump:
    """Writes each stage of a compile into `directory`, numbered in the order they come: `00-import.mlir`,
    `01-cvm-mark-views.mlir`, ...; `written` lists the paths. A folder or file that cannot be written is a
    CVMRuntimeError naming it."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.directory = Path(directory)
        self.written: list[str] = []
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CVMRuntimeError(f"cannot create the dump folder {str(self.directory)!r}: {e.strerror or e}") from None

    def __call__(self, name: str, text: str) -> None:
        path = self.directory / f"{len(self.written):02d}-{name}"
        write_file(path, text if text.endswith("\n") else text + "\n", "the dump file")
        log.info("dump: %s", path)
        self.written.append(str(path))


@dataclass
class Lowered:
    """A graph lowered for a target: its host program, the module of its loop-level kernels (moved out of the
    lowered module), the host function `@main`, and the milliseconds the lowering took."""

    target: Target
    program: HostProgram
    kernels: ModuleOp
    main: FuncOp
    lower_ms: float


def lower(graph: Graph, target: Target, dump: StageDump | None = None) -> Lowered:
    """`graph` (verified) to cvm IR, through the `cvm-to-loops` pipeline built for `target` (recorded on the module
    as `cvmc.target`), read into its host program and kernels. `dump` sees the module after import and after each
    pass."""
    from xdsl.dialects import func

    from cvmc.passes.loops.target import module_target
    from cvmc.passes.pipelines import gc_paused, pipeline_passes
    from cvmc.runtime.frontend.cvm_ir import graph_to_module

    start = time.perf_counter()
    with gc_paused():  # the whole compile allocates IR and frees little (see gc_paused)
        module = graph_to_module(graph)
        if dump is not None:
            dump("import.mlir", str(module))
        module_target(module, str(target))
        run_passes(module, pipeline_passes(PIPELINE), dump)
        program, kernels = read_host(module)
        main = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
    return Lowered(target, program, kernels, main, 1000 * (time.perf_counter() - start))


def run_passes(module: ModuleOp, passes: Sequence[ModulePass], dump: StageDump | None = None,
               before: Callable[[ModulePass, ModuleOp], None] | None = None) -> None:
    """The driver's pass loop, for every front end: each pass applied to `module` in order, `before` (when given)
    shown the module before each pass, `dump` after each."""
    from xdsl.context import Context

    ctx = Context()
    for p in passes:
        if before is not None:
            before(p, module)
        p.apply(ctx, module)
        if dump is not None:
            dump(f"{p.name}.mlir", str(module))


def lower_cinn(function: FuncOp, target: Target, *, fuse: bool = True, exact_float: bool = False,
               micro_kernels: bool = True, dot_block: tuple[int, int, int] | None = None,
               dump: StageDump | None = None, before: Callable[[ModulePass, ModuleOp], None] | None = None
               ) -> ModuleOp:
    """A function of cinn primitives (not changed) as a module of loop-level kernels, one per kernel of the
    program: the `cinn-to-loops` pipeline (`cinn-to-loops-unfused` without `fuse`), built for `target` (recorded as
    `cvmc.target`: the float kernels block for its `vector_bytes`), `convert-cinn-to-loops` with the options
    given (see `ConvertCinnToLoopsPass`). `dump` sees the module before and after each pass."""
    from xdsl.dialects.builtin import ModuleOp

    from cvmc.passes.convert_cinn_to_loops import ConvertCinnToLoopsPass
    from cvmc.passes.loops.target import set_module_target
    from cvmc.passes.pipelines import gc_paused, pipeline_passes

    module = ModuleOp([function.clone()])
    set_module_target(module, target)
    if dump is not None:
        dump("import.mlir", str(module))
    convert = ConvertCinnToLoopsPass(exact_float=exact_float, micro_kernels=micro_kernels, dot_block=dot_block)
    passes = pipeline_passes("cinn-to-loops" if fuse else "cinn-to-loops-unfused", {convert.name: convert})
    with gc_paused():
        run_passes(module, passes, dump, before)
    return module


def lower_taskgraph(module: ModuleOp, dump: StageDump | None = None) -> ModuleOp:
    """A module holding a verified `taskgraph.graph` (not changed) as a module of its loop-level kernel (one step
    of the graph): the `taskgraph-to-loops` pipeline. `dump` sees the module before and after."""
    from cvmc.passes.pipelines import pipeline_passes

    kernels = module.clone()
    if dump is not None:
        dump("import.mlir", str(kernels))
    run_passes(kernels, pipeline_passes("taskgraph-to-loops"), dump)
    return kernels


def llvm_module(kernels: ModuleOp, dump: StageDump | None = None) -> tuple[str, list[KernelSpec]]:
    """A module of loop-level kernels (any front end's) as LLVM IR, and their specs; `dump` sees the IR."""
    from cvmc.codegen.llvm import emit_llvm, kernel_specs
    from cvmc.passes.pipelines import gc_paused

    with gc_paused():
        ir_text = str(emit_llvm(kernels))
        specs = list(kernel_specs(kernels).values())
    if dump is not None:
        dump("kernels.ll", ir_text)
    return ir_text, specs


def llvm_kernels(lowered: Lowered, dump: StageDump | None = None) -> tuple[str, list[KernelSpec]]:
    """The kernels as LLVM IR, headed by the target (so that the JIT's cache key holds it), and their specs.
    `dump` sees the IR, the IR after O3 and the assembly (the two last are compiled for the dump alone)."""
    ir_text, specs = llvm_module(lowered.kernels)
    ir_text = f"; cvmc.target = {lowered.target}\n" + ir_text
    if dump is not None:
        from cvmc.runtime.engine.jit import assembly, optimized_ir

        dump("kernels.ll", ir_text)
        dump("kernels.O3.ll", optimized_ir(ir_text))
        dump("kernels.s", assembly(ir_text))
    return ir_text, specs


def cuda_kernels(lowered: Lowered, dump: StageDump | None = None) -> tuple[str, dict[str, CudaKernelSpec]]:
    """The kernels as CUDA C (what NVRTC compiles) and their launch specs; `dump` sees the source."""
    from cvmc.codegen.cuda import emit_cuda
    from cvmc.codegen.cuda_launch import kernel_specs

    source = emit_cuda(lowered.kernels)
    if dump is not None:
        dump("kernels.cu", source)
    return source, kernel_specs(lowered.kernels)


def lower_to_llvm(graph: Graph, target: Target | None = None, dump: StageDump | None = None
                  ) -> tuple[HostProgram, str, list[KernelSpec], float]:
    """What every CPU target compiles (the JIT, and `cvm-aot` ahead of time): the host program, the kernels as
    LLVM IR and their specs, and the milliseconds the lowering took. `target` None: this host's
    (`runtime.driver.target.jit_target`, a CVMLogicError where an override names a tier this CPU lacks)."""
    from cvmc.runtime.driver.target import jit_target

    lowered = lower(graph, jit_target() if target is None else target, dump)
    ir_text, specs = llvm_kernels(lowered, dump)
    return lowered.program, ir_text, specs, lowered.lower_ms


def device_target(device: str) -> Target:
    """What `device` ("cpu": this host's JIT, "cuda": the GPU) builds for."""
    from cvmc.runtime.driver.target import detect_target, jit_target

    return detect_target("cuda") if device == "cuda" else jit_target()


def dump_stages(graph: Graph, directory: str | os.PathLike[str], device: str) -> list[str]:
    """Write every stage of the compilation of `graph` for `device` into `directory` (see `StageDump`; on the
    reference device, the imported module alone). Returns the paths written."""
    dump = StageDump(directory)
    if device == "reference":
        from cvmc.runtime.frontend.cvm_ir import graph_to_module

        dump("import.mlir", str(graph_to_module(graph)))
        return dump.written
    lowered = lower(graph, device_target(device), dump)
    if device == "cuda":
        cuda_kernels(lowered, dump)
    else:
        llvm_kernels(lowered, dump)
    return dump.written


def emit_sources(graph: Graph, directory: str | os.PathLike[str], device: str) -> list[Path]:
    """What `device` compiles, written into `directory` (needs no GPU): on cpu `kernels.ll` and `host.mlir`, the
    host function in the module of the kernels and globals it names (it parses back in cvm-opt); on cuda
    `kernels.cu`, `host.mlir` and `launches.json` (`cuda.emit_sources`). Returns the paths."""
    if device == "cuda":
        from cvmc.runtime.devices.cuda import emit_sources as cuda_sources

        return cuda_sources(graph, directory)
    lowered = lower(graph, device_target(device))
    ir_text, _ = llvm_kernels(lowered)
    out = Path(directory)
    make_folder(out)
    paths = [out / "kernels.ll", out / "host.mlir"]
    write_file(paths[0], ir_text, "the kernels' source")
    whole = lowered.kernels.clone()  # the host function with the kernels and globals it names: it parses back
    whole.body.block.add_op(lowered.main.clone())
    write_file(paths[1], str(whole) + "\n", "the host function")
    return paths


def make_folder(folder: Path) -> None:
    """Create the folder `folder` (and those above it) where it does not exist; a CVMRuntimeError naming it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CVMRuntimeError(f"cannot create the folder {str(folder)!r}: {e.strerror or e}") from None
