"""The `cuda` device: the cpu device's pipeline to the loop level, printed as CUDA C, compiled with NVRTC and
launched with the CUDA driver API (through `cuda-python`).

    run = compile_graph(graph)      # CVMRuntimeError("no CUDA device: ...") without a driver, a GPU or cuda-python
    heads = run(data)               # every head as an int32 array; `data` already saturated to its precision
    run.stats                       # compile times, kernels, launches, device, buffer bytes
    emit_sources(graph, "out/")     # out/kernels.cu (what NVRTC compiles), out/host.mlir (buffers, launches) and
                                    # out/launches.json (grid, block and multiply-adds of every launch)

One driver, two printers: `runtime.driver.compile.lower` (the `cvm-to-loops` pipeline built for the GPU: target
`cuda:any`) gives the loop-level kernels and the host program (the arena's size, the views of it each kernel
reads and writes, the calls in order), as for the cpu device; `cvmc.codegen.cuda` prints the kernels. The runner
plans the device memory once: one arena, one buffer for the input, one per parameter (uploaded once), and the
arguments of every launch (device pointers, prepared once). A run copies the input in, launches the kernels in
order (recorded once as one CUDA graph where the device allows, replayed by each run), and copies the heads
out. Kernels use no atomics and share memory only within a block, behind barriers (the GPU schedule of conv2d
and dense, `cvmc.passes.loops.gpu`), so every run and every launch configuration gives the same bits.

NVRTC compiles the whole module once for the device's architecture (a cubin; PTX for the newest architecture
NVRTC knows when it does not know the device's), with `--fmad=false`. The cubin is kept in the on-disk cache next
to the cpu device's objects (`cvmc.runtime.engine.cache`: authenticated entries in a folder of this user's alone), named
by the source, NVRTC's version and the architecture; the host program is rebuilt from the graph on every load.

The device is reached through the small `CudaDevice` interface (memory, copies, modules, launches), so the
runner's planning can be tested with a stand-in device where there is no GPU.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from math import prod
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from cvmc.codegen.cuda import emit_cuda
from cvmc.codegen.cuda_launch import BLOCK_SIZE, CudaKernelSpec, kernel_specs
from cvmc.errors import CVMRuntimeError
from cvmc.runtime.driver.compile import StageDump, cuda_kernels, lower, make_folder
from cvmc.runtime.driver.host import HostProgram, View
from cvmc.runtime.driver.target import detect_target
from cvmc.runtime.engine.cache import open_cache
from cvmc.runtime.frontend.files import write_file
from cvmc.runtime.frontend.graph import Graph

# Options NVRTC compiles every module with (the architecture is added per device).
NVRTC_OPTIONS = ("--std=c++17", "--fmad=false")

# --------------------------------------------------------------------------------------------------------------
# The device
# --------------------------------------------------------------------------------------------------------------


class Device(Protocol):
    """What the runner needs of a CUDA device. Pointers are device addresses as ints."""

    name: str

    def compile(self, source: str) -> Any:
        """Load a module of kernels from CUDA source; returns a module handle."""
        ...

    def function(self, module: Any, symbol: str) -> Any: ...

    def alloc(self, nbytes: int) -> int:
        """`nbytes` of device memory, freed when the device object is collected or `free` is called."""
        ...

    def free(self, pointer: int) -> None: ...

    def upload(self, pointer: int, array: np.ndarray) -> None: ...

    def download(self, array: np.ndarray, pointer: int) -> None:
        """Fill the contiguous `array` from device memory (waits for the launches before it)."""
        ...

    def prepare(self, pointers: Sequence[int]) -> Any:
        """The launch arguments of a kernel taking these pointers, built once for many launches."""
        ...

    def launch(self, function: Any, grid: int, block: int, arguments: Any) -> None: ...

    def synchronize(self) -> None: ...

    # Optional (a real GPU has them; the runner launches one by one without): record the launches of a run once,
    # replay them as one (`CudaDevice.record`: a CUDA graph).
    #   def record(self, launches: Sequence[tuple[Any, int, int, Any]]) -> Any: ...
    #   def replay(self, recorded: Any) -> None: ...


def _bindings() -> tuple[Any, Any]:
    """The driver and NVRTC modules of cuda-python (12.x or 13.x)."""
    try:
        from cuda.bindings import driver, nvrtc  # pyright: ignore  (optional: the `cuda` extra)
    except ImportError:
        try:
            from cuda import cuda as driver  # pyright: ignore  (cuda-python before 12.6)
            from cuda import nvrtc  # pyright: ignore
        except ImportError as e:
            raise CVMRuntimeError(
                "no CUDA device: cuda-python is not installed (pip install '.[cuda]' in the cvmc checkout)"
            ) from e
    return driver, nvrtc


def _check(driver: Any, result: tuple[Any, ...] | Any, what: str) -> Any:
    """The values a driver call returned after its status; raise CVMRuntimeError on a failure."""
    status, *values = result if isinstance(result, tuple) else (result,)
    if int(status) != 0:
        _, text = driver.cuGetErrorString(status)
        detail = text.decode() if isinstance(text, bytes) else str(status)
        raise CVMRuntimeError(f"cuda: {what} failed: {detail}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


class CudaDevice:
    """A GPU reached through the driver API: its primary context, NVRTC, memory and launches."""

    def __init__(self, ordinal: int = 0):
        driver, nvrtc = _bindings()
        self.driver, self.nvrtc = driver, nvrtc
        try:
            status = driver.cuInit(0)
        except Exception as e:  # the driver library itself is missing (cuda.pathfinder raises its own error)
            raise CVMRuntimeError(f"no CUDA device: no NVIDIA driver could be loaded ({e})") from e
        if int(status[0]) != 0:
            _, text = driver.cuGetErrorString(status[0])
            raise CVMRuntimeError(f"no CUDA device: cuInit failed: {text.decode() if text else status[0]}")
        count = _check(driver, driver.cuDeviceGetCount(), "cuDeviceGetCount")
        if count <= ordinal:
            raise CVMRuntimeError(f"no CUDA device: the driver sees {count} GPU(s), device {ordinal} asked for")
        self.device = _check(driver, driver.cuDeviceGet(ordinal), "cuDeviceGet")
        self.context = _check(driver, driver.cuDevicePrimaryCtxRetain(self.device), "cuDevicePrimaryCtxRetain")
        self._thread = threading.local()
        self._set_current()
        raw_name = _check(driver, driver.cuDeviceGetName(64, self.device), "cuDeviceGetName")
        self.name = raw_name.split(b"\0", 1)[0].decode()
        attr = driver.CUdevice_attribute
        self.capability = (
            _check(driver, driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                                       self.device), "cuDeviceGetAttribute"),
            _check(driver, driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                                       self.device), "cuDeviceGetAttribute"),
        )  # fmt: skip
        self.multiprocessors = _check(
            driver, driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, self.device),
            "cuDeviceGetAttribute")  # fmt: skip
        self.timings: dict[str, float] = {}
        self.cache_hit = False

    def _set_current(self) -> None:
        """Make the device's context current in the calling thread (once per thread)."""
        if getattr(self._thread, "current", False):
            return
        _check(self.driver, self.driver.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
        self._thread.current = True

    def compile(self, source: str) -> Any:
        start = time.perf_counter()
        image, self.cache_hit = compile_source(source, self.capability, self.nvrtc)
        self.timings["nvrtc"] = time.perf_counter() - start
        self._set_current()
        loaded = time.perf_counter()
        module = _check(self.driver, self.driver.cuModuleLoadData(image), "cuModuleLoadData")
        self.timings["load"] = time.perf_counter() - loaded
        return module

    def function(self, module: Any, symbol: str) -> Any:
        return _check(self.driver, self.driver.cuModuleGetFunction(module, symbol.encode()),
                      f"cuModuleGetFunction({symbol})")  # fmt: skip

    def alloc(self, nbytes: int) -> int:
        self._set_current()
        return int(_check(self.driver, self.driver.cuMemAlloc(max(1, nbytes)), f"cuMemAlloc({nbytes})"))

    def free(self, pointer: int) -> None:
        self.driver.cuMemFree(pointer)

    def upload(self, pointer: int, array: np.ndarray) -> None:
        self._set_current()
        a = np.ascontiguousarray(array)
        _check(self.driver, self.driver.cuMemcpyHtoD(pointer, a.ctypes.data, a.nbytes), "cuMemcpyHtoD")

    def download(self, array: np.ndarray, pointer: int) -> None:
        assert array.flags.c_contiguous
        self._set_current()
        _check(self.driver, self.driver.cuMemcpyDtoH(array.ctypes.data, pointer, array.nbytes), "cuMemcpyDtoH")

    def prepare(self, pointers: Sequence[int]) -> Any:
        """The launch arguments of a kernel taking these pointers: the kernel's one parameter is a device array of
        them (`cvmc.codegen.cuda`'s ABI), uploaded here once and freed with the returned object."""
        return _PointerTable(self, pointers)

    def launch(self, function: Any, grid: int, block: int, arguments: Any) -> None:
        self._set_current()
        _check(self.driver, self.driver.cuLaunchKernel(function, grid, 1, 1, block, 1, 1, 0, 0,
                                                       arguments.params.ctypes.data, 0), "cuLaunchKernel")  # fmt: skip

    def synchronize(self) -> None:
        self._set_current()
        _check(self.driver, self.driver.cuCtxSynchronize(), "kernel execution (cuCtxSynchronize)")

    def record(self, launches: Sequence[tuple[Any, int, int, Any]]) -> Any:
        """The launches (function, grid, block, arguments), in order, as one CUDA graph captured from a stream of
        its own: a run is then one `cuGraphLaunch` instead of one `cuLaunchKernel` per kernel. The stream is a
        blocking one, so a replay waits for the input's copy (on the legacy default stream) before it starts."""
        self._set_current()
        d = self.driver
        stream = _check(d, d.cuStreamCreate(0), "cuStreamCreate")
        recorded = _Recorded(self, stream)
        mode = d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        _check(d, d.cuStreamBeginCapture(stream, mode), "cuStreamBeginCapture")
        try:
            for function, grid, block, arguments in launches:
                _check(d, d.cuLaunchKernel(function, grid, 1, 1, block, 1, 1, 0, stream,
                                           arguments.params.ctypes.data, 0), "cuLaunchKernel (captured)")  # fmt: skip
        finally:
            recorded.graph = _check(d, d.cuStreamEndCapture(stream), "cuStreamEndCapture")
        recorded.executable = _check(d, d.cuGraphInstantiate(recorded.graph, 0), "cuGraphInstantiate")
        return recorded

    def replay(self, recorded: Any) -> None:
        self._set_current()
        _check(self.driver, self.driver.cuGraphLaunch(recorded.executable, recorded.stream), "cuGraphLaunch")


class _Recorded:
    """A captured CUDA graph, its executable and its stream; destroyed with this object."""

    def __init__(self, device: CudaDevice, stream: Any):
        self.stream, self.graph, self.executable = stream, None, None
        weakref.finalize(self, _destroy_recorded, device.driver, self.__dict__)


def _destroy_recorded(driver: Any, parts: dict[str, Any]) -> None:
    if parts["executable"] is not None:
        driver.cuGraphExecDestroy(parts["executable"])
    if parts["graph"] is not None:
        driver.cuGraphDestroy(parts["graph"])
    driver.cuStreamDestroy(parts["stream"])


class _PointerTable:
    """A kernel's argument pointers in device memory, and `kernelParams` for cuLaunchKernel (a host array holding
    the address of the one value, the table's device address)."""

    def __init__(self, device: CudaDevice, pointers: Sequence[int]):
        table = np.array(list(pointers) or [0], dtype=np.uint64)
        self.table = device.alloc(table.nbytes)
        weakref.finalize(self, _free_all, device, [self.table])
        device.upload(self.table, table)
        self.value = np.array([self.table], dtype=np.uint64)
        self.params = np.array([self.value.ctypes.data], dtype=np.uint64)


@functools.cache
def default_device() -> CudaDevice:
    """The process's CUDA device 0 (its primary context), made on first use."""
    return CudaDevice(0)


# --------------------------------------------------------------------------------------------------------------
# NVRTC
# --------------------------------------------------------------------------------------------------------------


def nvrtc_version(nvrtc: Any = None) -> tuple[int, int]:
    """(major, minor) of the NVRTC library that cuda-python loads; CVMRuntimeError without one."""
    nvrtc = nvrtc or _bindings()[1]
    try:
        status, major, minor = nvrtc.nvrtcVersion()
    except Exception as e:  # the NVRTC library is missing (cuda.pathfinder raises its own error)
        raise CVMRuntimeError(f"NVRTC could not be loaded ({e}); pip install nvidia-cuda-nvrtc") from e
    if int(status) != 0:
        raise CVMRuntimeError(f"nvrtcVersion failed: {status}")
    return major, minor


def _nvrtc_check(nvrtc: Any, result: tuple[Any, ...] | Any, what: str) -> Any:
    status, *values = result if isinstance(result, tuple) else (result,)
    if int(status) != 0:
        _, text = nvrtc.nvrtcGetErrorString(status)
        raise CVMRuntimeError(f"nvrtc: {what} failed: {text.decode() if isinstance(text, bytes) else status}")
    return values[0] if len(values) == 1 else tuple(values) if values else None


def _target(capability: tuple[int, int], nvrtc: Any) -> tuple[str, bool]:
    """(architecture option, cubin?): the device's own `sm_XY` when NVRTC knows it, else PTX for the newest
    `compute_XY` below it, which the driver compiles when it loads the module."""
    arch = 10 * capability[0] + capability[1]
    supported = [int(a) for a in _nvrtc_check(nvrtc, nvrtc.nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs")]
    if arch in supported:
        return f"--gpu-architecture=sm_{arch}", True
    older = [a for a in supported if a <= arch]
    if not older:
        raise CVMRuntimeError(f"nvrtc: no architecture at or below sm_{arch} among {supported}")
    return f"--gpu-architecture=compute_{max(older)}", False


def compile_source(source: str, capability: tuple[int, int], nvrtc: Any = None,
                   cache: bool = True) -> tuple[bytes, bool]:
    """(image, cache hit): `source` compiled by NVRTC for a device of compute `capability` (a cubin, or PTX
    where NVRTC does not know the device), read from the disk cache when it was compiled before."""
    nvrtc = nvrtc or _bindings()[1]
    version = nvrtc_version(nvrtc)  # a missing NVRTC library fails here, with a clear message
    option, cubin = _target(capability, nvrtc)
    options = [option, *NVRTC_OPTIONS]
    key = hashlib.sha256("\0".join([*map(str, version), *options, source]).encode()).hexdigest()
    kind = "cubin" if cubin else "ptx"
    store = open_cache() if cache else None
    data = store.get(key, kind) if store is not None else None
    if data is not None:
        return data, True
    image = nvrtc_compile(source, options, cubin, nvrtc)
    if store is not None:
        store.put(key, kind, image)
    return image, False


def nvrtc_compile(source: str, options: Sequence[str], cubin: bool = True, nvrtc: Any = None) -> bytes:
    """Compile CUDA source with NVRTC (no GPU needed): the cubin, or the PTX (NUL-terminated) when not `cubin`.
    A compile error raises CVMRuntimeError with NVRTC's log."""
    nvrtc = nvrtc or _bindings()[1]
    prog = _nvrtc_check(nvrtc, nvrtc.nvrtcCreateProgram(source.encode(), b"kernels.cu", 0, [], []),
                        "nvrtcCreateProgram")  # fmt: skip
    try:
        opts = [o.encode() for o in options]
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if int(status) != 0:
            size = _nvrtc_check(nvrtc, nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
            log = b" " * size
            _nvrtc_check(nvrtc, nvrtc.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
            raise CVMRuntimeError(f"nvrtc: the generated CUDA does not compile:\n{log.decode(errors='replace')}")
        if cubin:
            size = _nvrtc_check(nvrtc, nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
            image = b" " * size
            _nvrtc_check(nvrtc, nvrtc.nvrtcGetCUBIN(prog, image), "nvrtcGetCUBIN")
        else:
            size = _nvrtc_check(nvrtc, nvrtc.nvrtcGetPTXSize(prog), "nvrtcGetPTXSize")
            image = b" " * size
            _nvrtc_check(nvrtc, nvrtc.nvrtcGetPTX(prog, image), "nvrtcGetPTX")
        return image
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


# --------------------------------------------------------------------------------------------------------------
# The runner
# --------------------------------------------------------------------------------------------------------------


def launch_config(spec: CudaKernelSpec, multiprocessors: int) -> tuple[int, int]:
    """(grid, block) for a kernel: `BLOCK_SIZE` threads a block and enough blocks to cover its work (a block
    kernel: its blocks), at most 32 per multiprocessor (the grid-stride or block-stride loop covers the rest); one
    thread for a one-thread kernel."""
    if not spec.parallel:
        return 1, 1
    if spec.blocks:
        return max(1, min(spec.blocks, 32 * max(1, multiprocessors))), BLOCK_SIZE
    blocks = -(-spec.work // BLOCK_SIZE)
    return max(1, min(blocks, 32 * max(1, multiprocessors))), BLOCK_SIZE


def lower_graph(graph: Graph) -> tuple[HostProgram, ModuleOp, func.FuncOp]:
    """The cpu device's pipeline built for the GPU (`detect_target("cuda")`): (host program, module of loop-level
    kernels, the host function `@main`)."""
    lowered = lower(graph, detect_target("cuda"))  # the GPU's conv2d, dense, pack kernels
    return lowered.program, lowered.kernels, lowered.main


def _free_all(device: Device, pointers: list[int]) -> None:
    for p in pointers:
        try:
            device.free(p)
        except Exception:  # the context may be gone at interpreter exit
            pass


def _record(device: Device, launches: list[tuple[Any, int, int, Any]]) -> Any:
    """The launches of a run recorded once as one CUDA graph where the device can record one (less launch overhead
    than one launch at a time: bench/results/2026-11-26-h100.md), else None."""
    if not hasattr(device, "record"):
        return None
    try:
        return device.record(launches)  # pyright: ignore[reportAttributeAccessIssue]
    except CVMRuntimeError:
        return None


def _launch_all(device: Device, launches: list[tuple[Any, int, int, Any]], recorded: Any) -> None:
    """Run the launches, in order (their recording where there is one), and wait for them."""
    if recorded is not None:
        device.replay(recorded)  # pyright: ignore[reportAttributeAccessIssue]
    else:
        for function, grid, block, arguments in launches:
            device.launch(function, grid, block, arguments)
    device.synchronize()


class CudaRunner:
    """Runs a compiled model on a device: `runner(data) -> heads`. Holds the device buffers and the prepared
    launches: the arena, the input and every parameter (uploaded once) are device buffers (`roots`); a kernel
    argument is its root's address plus its byte shift (the kernel adds the static offset of its layout)."""

    def __init__(self, program: HostProgram, specs: dict[str, CudaKernelSpec], device: Device, module: Any):
        self.program = program
        self.device = device
        self.module = module  # keeps the kernels loaded
        sizes = {"arena": program.arena_bytes}
        if program.input_shape is not None:
            sizes["input"] = 4 * prod(program.input_shape)
        sizes.update({name: array.nbytes for name, array in program.globals.items()})
        self.roots = {name: device.alloc(n) for name, n in sizes.items()}
        weakref.finalize(self, _free_all, device, list(self.roots.values()))
        for name, array in program.globals.items():
            device.upload(self.roots[name], array)
        multiprocessors = getattr(device, "multiprocessors", 1)
        functions = {c.kernel: device.function(module, specs[c.kernel].symbol) for c in program.calls}
        self.launch_plan: list[tuple[str, int, int]] = []  # (kernel, grid, block) of every launch, in order
        self.launches = []
        for call in program.calls:
            grid, block = launch_config(specs[call.kernel], multiprocessors)
            self.launch_plan.append((call.kernel, grid, block))
            arguments = device.prepare([self.roots[v.root] + v.shift for v in call.args])
            self.launches.append((functions[call.kernel], grid, block, arguments))
        self.recorded = _record(device, self.launches)
        self.stats: dict[str, object] = {}
        self._lock = threading.Lock()  # one run at a time: runs share the device buffers

    def __call__(self, data: np.ndarray | None) -> list[np.ndarray]:
        program = self.program
        if program.input_shape is not None and data is None:
            raise CVMRuntimeError("the model takes an input 'data', none was given")
        with self._lock:
            if program.input_shape is not None:
                x = np.ascontiguousarray(np.asarray(data, dtype=np.int32).reshape(program.input_shape))
                self.device.upload(self.roots["input"], x)
            _launch_all(self.device, self.launches, self.recorded)
            return [self._read(v) for v in program.heads]

    def _read(self, v: View) -> np.ndarray:
        """A head: the elements its layout reaches, copied back, then viewed through the layout as int32."""
        dtype = np.dtype(f"<i{int(v.element[1:]) // 8}")
        if prod(v.shape) == 0:
            return np.zeros(v.shape, dtype=np.int32)
        span = sum((n - 1) * s for n, s in zip(v.shape, v.strides)) + 1
        flat = np.empty(span, dtype=dtype)
        self.device.download(flat, self.roots[v.root] + v.shift + dtype.itemsize * v.offset)
        view = np.lib.stride_tricks.as_strided(flat, v.shape, [dtype.itemsize * s for s in v.strides])
        return np.array(view, dtype=np.int32)


def compile_graph(graph: Graph, device: Device | None = None,
                  check_plan: Callable[[HostProgram], None] | None = None, dump: StageDump | None = None
                  ) -> CudaRunner:
    """Compile a verified graph for a CUDA device (the default GPU unless `device` is given):
    `runner(data) -> heads`, with `runner.stats`. Raises CVMRuntimeError("no CUDA device: ...") without one
    (after the lowering, so that `dump` has seen every stage up to the source)."""
    start = time.perf_counter()
    low = lower(graph, detect_target("cuda"), dump)
    program = low.program
    if check_plan is not None:  # sees the arena's size before anything is allocated; may raise to refuse it
        check_plan(program)
    lowered = time.perf_counter()
    source, specs = cuda_kernels(low, dump)
    printed = time.perf_counter()
    device = device if device is not None else default_device()
    ready = time.perf_counter()
    module = device.compile(source)
    compiled = time.perf_counter()
    runner = CudaRunner(program, specs, device, module)
    runner.stats = {
        "compile_ms": round(1000 * (time.perf_counter() - start), 1),
        "lower_ms": round(1000 * (lowered - start), 1),
        "print_ms": round(1000 * (printed - lowered), 1),
        "nvrtc_ms": round(1000 * (compiled - ready), 1),
        "device_name": device.name,
        "kernels": len(specs),
        "launches": len(program.calls),
        "one_thread_kernels": sum(1 for s in specs.values() if not s.parallel),
        "peak_buffer_bytes": program.arena_bytes,
        "intermediate_bytes": program.intermediate_bytes,
        "nvrtc_cache_hit": getattr(device, "cache_hit", None),
        "cuda_graph": runner.recorded is not None,
    }
    return runner


class CinnCudaRunner:
    """A function of cinn primitives on a CUDA device, `runner(arrays) -> outputs` (what CinnBuilder's "cuda"
    device runs): convert-cinn-to-loops gives one kernel per primitive, launched in op order over device buffers,
    one per SSA value, allocated once."""

    def __init__(self, function: func.FuncOp, device: Device | None = None):
        from cvmc.passes.convert_cinn_to_loops import cinn_ops, kernel_name
        from cvmc.runtime.driver.compile import lower_cinn
        from cvmc.runtime.driver.target import detect_target
        from cvmc.runtime.references.cinn import numpy_dtype

        self.device = device if device is not None else default_device()
        # one kernel per primitive, no micro-kernels (a CPU form, the pass says), through the one driver
        module = lower_cinn(function, detect_target("cuda"), fuse=False, micro_kernels=False)
        specs = kernel_specs(module)
        self.source = emit_cuda(module)
        self.module = self.device.compile(self.source)
        ops = cinn_ops(function)
        values = [*function.args, *(r for op in ops for r in op.results)]
        self.types = {v: (tuple(v.type.get_shape()), numpy_dtype(v.type)) for v in values}  # pyright: ignore
        self.pointers = {v: self.device.alloc(prod(shape) * dtype.itemsize) for v, (shape, dtype) in self.types.items()}
        weakref.finalize(self, _free_all, self.device, list(self.pointers.values()))
        self.inputs = list(function.args)
        ret = function.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        self.outputs = list(ret.arguments)
        self.launches = []
        for i, op in enumerate(ops):
            spec = specs[kernel_name(function.sym_name.data, i, op)]
            grid, block = launch_config(spec, getattr(self.device, "multiprocessors", 1))
            arguments = self.device.prepare([self.pointers[v] for v in (*op.operands, *op.results)])
            self.launches.append((self.device.function(self.module, spec.symbol), grid, block, arguments))
        self.recorded = _record(self.device, self.launches)
        self._lock = threading.Lock()

    def __call__(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        with self._lock:
            for value, array in zip(self.inputs, arrays, strict=True):
                shape, dtype = self.types[value]
                self.device.upload(self.pointers[value], np.ascontiguousarray(array, dtype=dtype).reshape(shape))
            _launch_all(self.device, self.launches, self.recorded)
            outputs = []
            for value in self.outputs:
                shape, dtype = self.types[value]
                out = np.empty(shape, dtype=dtype)
                if out.size:
                    self.device.download(out, self.pointers[value])
                outputs.append(out)
            return outputs


# The multiprocessors `emit_sources` plans its launches for when no device is at hand: an H100 SXM's 132.
EMIT_MULTIPROCESSORS = 132


def launch_descriptions(program: HostProgram, specs: dict[str, CudaKernelSpec],
                        multiprocessors: int = EMIT_MULTIPROCESSORS) -> list[dict[str, Any]]:
    """Every launch of `program`, in order, as `launches.json` records it: the kernel's C symbol, `grid` and
    `block` (three-element lists, as `launch_config` chooses them), `shared_bytes` (static shared memory of a
    block), `macs` (integer multiply-adds the launch performs, `macs_exact` False where that depends on the data),
    `loads` (load instructions it issues, global and shared, counted the same way), `work` (units of its
    grid-stride loop; of a block kernel, its blocks times the threads of each) and the bytes of its arguments'
    spans, read and written (`read_bytes`, `written_bytes`: what a roofline bound needs)."""
    out: list[dict[str, Any]] = []
    for call in program.calls:
        spec = specs[call.kernel]
        grid, block = launch_config(spec, multiprocessors)
        read = written = 0
        for arg in spec.args:
            lo, hi = arg.element_span()
            nbytes = max(0, hi - lo) * max(1, int(arg.element[1:]) // 8)
            if arg.written:
                written += nbytes
            else:
                read += nbytes
        out.append({"kernel": spec.symbol, "grid": [grid, 1, 1], "block": [block, 1, 1],
                    "shared_bytes": spec.shared_bytes,
                    "macs": spec.macs, "macs_exact": spec.macs_exact, "loads": spec.loads,
                    "work": spec.work if spec.parallel else 1,
                    "read_bytes": read, "written_bytes": written})
    return out


def emit_sources(graph: Graph, directory: str | os.PathLike[str]) -> list[Path]:
    """Write the CUDA source NVRTC compiles for `graph` (`kernels.cu`), the host function that plans its
    buffers and launches (`host.mlir`) and the launches in order (`launches.json`, see `launch_descriptions`;
    planned for `EMIT_MULTIPROCESSORS`) into `directory`; returns the paths. Needs no GPU."""
    program, kernels, main = lower_graph(graph)
    out = Path(directory)
    make_folder(out)
    cu, host, launches = out / "kernels.cu", out / "host.mlir", out / "launches.json"
    write_file(cu, emit_cuda(kernels), "the kernels' source")
    write_file(host, str(main) + "\n", "the host function")
    write_file(launches, json.dumps(launch_descriptions(program, kernel_specs(kernels)), indent=1) + "\n",
               "the launches")
    return [cu, host, launches]
