"""The `cuda` device: without a GPU, a clear error; the corpus's and every CINN primitive's CUDA compiles for
sm_90; the runner (plan, launches, copies) computes the corpus bit-exactly on a stand-in device that runs the
generated CUDA on the CPU (`cuda_host`). On a machine with a GPU the same checks run on the device itself.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from conftest import CVM_CORPUS, case_input, case_params, check_case, corpus_cases, heads_bytes
from cuda_host import HostDevice, compile_for_device, device_compiler, host_compiler

import cvmc
import cvmc.runtime.devices.cuda as rc
from cvmc.codegen.cuda_launch import BLOCK_SIZE
from cvmc.errors import CVMRuntimeError
from cvmc.runtime.frontend.graph import load_graph

COMPILER, WHY = device_compiler()
needs_device_compiler = pytest.mark.skipif(COMPILER is None, reason=WHY)
needs_host_compiler = pytest.mark.skipif(host_compiler() is None, reason="no host C++ compiler to emulate CUDA")
RNG = np.random.default_rng(16)

VALID = corpus_cases("op", "chain", "model")
MODELS = [c for c in VALID if c.name.startswith("model_")]


def sample(per_kind: int) -> list:
    """Every model and chain, and the first `per_kind` cases of every op."""
    seen: dict[str, int] = {}
    out = []
    for case in VALID:
        kind = case.name.rsplit("_", 1)[0]
        seen[kind] = seen.get(kind, 0) + 1
        if case.name.startswith(("model_", "chain_")) or seen[kind] <= per_kind:
            out.append(case)
    return out


def real_gpu() -> rc.CudaDevice | None:
    try:
        return rc.default_device()
    except CVMRuntimeError:
        return None


GPU = real_gpu()
needs_gpu = pytest.mark.skipif(GPU is None, reason="no CUDA device (a GPU, its driver and cuda-python) here")


def graph(case):
    return load_graph((case / "model.json").read_bytes(), case_params(case))


@pytest.fixture
def emulated(monkeypatch):
    """device="cuda" runs on a `HostDevice` (the generated CUDA, compiled for and run on the CPU)."""
    device = HostDevice()
    monkeypatch.setattr(rc, "default_device", lambda: device)
    return device


# --------------------------------------------------------------------------------------------------------------
# Without a GPU
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.skipif(GPU is not None, reason="a CUDA device is present")
def test_without_a_gpu_device_cuda_fails_clearly():
    case = MODELS[0]
    with pytest.raises(CVMRuntimeError, match=r"^no CUDA device: ") as info:
        cvmc.load_model((case / "model.json").read_bytes(), case_params(case), device="cuda")
    assert info.value.status == 2


def test_without_cuda_python_device_cuda_fails_clearly(monkeypatch):
    for name in ("cuda", "cuda.bindings", "cuda.bindings.driver", "cuda.bindings.nvrtc"):
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
    monkeypatch.setattr(rc, "default_device", rc.default_device.__wrapped__)  # no cached device
    case = MODELS[0]
    with pytest.raises(CVMRuntimeError, match=r"no CUDA device: cuda-python is not installed"):
        cvmc.load_model((case / "model.json").read_bytes(), case_params(case), device="cuda")


# --------------------------------------------------------------------------------------------------------------
# The generated CUDA compiles (NVRTC, else nvcc; no GPU needed)
# --------------------------------------------------------------------------------------------------------------


@needs_device_compiler
@pytest.mark.parametrize("case", sample(1), ids=lambda d: d.name)
def test_corpus_cuda_compiles(case, tmp_path):
    cu, host, _ = rc.emit_sources(graph(case), tmp_path)
    assert cu.name == "kernels.cu" and host.name == "host.mlir"
    assert ("cvm_sched.call" in host.read_text()) == ("__global__" in cu.read_text())  # a pure view has no kernel
    assert len(compile_for_device(cu.read_text(), tmp_path)) > 0


# --------------------------------------------------------------------------------------------------------------
# The runner on a stand-in device: the corpus bit-exact
# --------------------------------------------------------------------------------------------------------------


@needs_host_compiler
@pytest.mark.parametrize("case", sample(2), ids=lambda d: d.name)
def test_corpus_is_bit_exact_on_the_emulated_device(case, emulated, capfd):
    model = cvmc.load_model((case / "model.json").read_bytes(), case_params(case), device="cuda")
    check_case(case, model)
    assert "runtime error" not in capfd.readouterr().err


@needs_host_compiler
def test_runner_plans_once_and_is_independent_of_the_grid(emulated):
    case = next(c for c in MODELS if c.name.startswith("model_digits_cnn"))
    g, x = graph(case), case_input(case)
    runner = rc.compile_graph(g, device=emulated)
    buffers = len(emulated.buffers)
    first = runner(x)
    assert heads_bytes(first) == (case / "expected.bin").read_bytes()
    for _ in range(2):
        assert heads_bytes(runner(x)) == heads_bytes(first)
    assert len(emulated.buffers) == buffers  # device memory planned once, at compile time
    assert buffers == len(runner.roots) == 2 + len(runner.program.globals)  # arena, input, params
    for grid in [(1, 1), (1, 5), (4, 2)]:
        other = rc.compile_graph(g, device=HostDevice(grid=grid))
        assert heads_bytes(other(x)) == heads_bytes(first)
    launched = emulated.launched[: len(runner.launch_plan)]
    assert launched == [(f"k_{kernel}", grid, block) for kernel, grid, block in runner.launch_plan]
    assert all(block in (1, BLOCK_SIZE) for _, _, block in launched)
    stats = runner.stats
    assert stats["launches"] == len(runner.launch_plan) and stats["kernels"] >= 1
    assert stats["device_name"] == "host emulation" and stats["peak_buffer_bytes"] == runner.program.arena_bytes
    with pytest.raises(CVMRuntimeError, match="takes an input 'data'"):
        runner(None)


class RecordingDevice(HostDevice):
    """The stand-in with `record` / `replay` (a real GPU's CUDA graph): a recording is the launches, in order."""

    def __init__(self, fail: bool = False):
        super().__init__()
        self.fail, self.recorded, self.replayed = fail, 0, 0

    def record(self, launches):
        self.recorded += 1
        if self.fail:
            raise CVMRuntimeError("cuda: cuGraphInstantiate failed: (planted)")
        return list(launches)

    def replay(self, recorded):
        self.replayed += 1
        for launch in recorded:
            self.launch(*launch)


@needs_host_compiler
@pytest.mark.parametrize("fail", [False, True], ids=["graph", "graph refused"])
def test_runner_records_its_launches_once_and_replays_them(fail):
    """A device that can record a run (a CUDA graph) records it once, at compile time, and every run replays it;
    where recording fails, the runner launches one by one. The bytes are the same either way."""
    case = next(c for c in MODELS if c.name.startswith("model_digits_cnn"))
    device = RecordingDevice(fail=fail)
    runner = rc.compile_graph(graph(case), device=device)
    assert device.recorded == 1 and (runner.recorded is None) == fail and runner.stats["cuda_graph"] == (not fail)
    for _ in range(3):
        assert heads_bytes(runner(case_input(case))) == (case / "expected.bin").read_bytes()
    assert device.recorded == 1 and device.replayed == (0 if fail else 3)
    assert len(device.launched) == 3 * len(runner.launch_plan)


def test_launch_config():
    from cvmc.codegen.cuda_launch import CudaKernelSpec

    def spec(work, parallel=True):
        return CudaKernelSpec("k", "k_k", (), work, parallel)

    assert rc.launch_config(spec(1, parallel=False), 132) == (1, 1)
    assert rc.launch_config(spec(10), 132) == (1, BLOCK_SIZE)
    assert rc.launch_config(spec(BLOCK_SIZE * 7 + 1), 132) == (8, BLOCK_SIZE)
    assert rc.launch_config(spec(10**9), 132) == (32 * 132, BLOCK_SIZE)  # the grid-stride loop covers the rest
    assert rc.launch_config(spec(0), 132) == (1, BLOCK_SIZE)


@pytest.mark.skipif(COMPILER != "nvrtc", reason="NVRTC (cuda-python and nvidia-cuda-nvrtc) is not installed")
def test_nvrtc_compiles_once_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("CVMC_CACHE_DIR", str(tmp_path))
    source = 'extern "C" __global__ void k_k(int *a) { a[threadIdx.x] = 1; }\n'
    cubin, hit = rc.compile_source(source, (9, 0))
    assert not hit and cubin[:4] == b"\x7fELF"  # a cubin for sm_90
    assert rc.compile_source(source, (9, 0)) == (cubin, True)
    ptx, hit = rc.compile_source(source, (9, 9))  # an architecture NVRTC does not know: PTX for the newest below
    assert not hit and b".target sm_90" in ptx
    with pytest.raises(CVMRuntimeError, match="the generated CUDA does not compile"):
        rc.compile_source("this is not CUDA", (9, 0))


def test_emit_sources_needs_no_gpu(tmp_path):
    case = MODELS[0]
    paths = rc.emit_sources(graph(case), tmp_path / "out")
    assert [p.name for p in paths] == ["kernels.cu", "host.mlir", "launches.json"]
    assert paths[0].read_text().startswith("// Generated by cvmc.codegen.cuda.")


# --------------------------------------------------------------------------------------------------------------
# CINN primitives: their CUDA compiles, and runs as the reference interpreter computes
# --------------------------------------------------------------------------------------------------------------

FLOAT_UNARY = ["abs", "ceil", "floor", "identity", "is_finite", "is_inf", "is_nan", "logical_not", "negative",
               "round", "sign", "trunc"]  # fmt: skip
TRANSCENDENTAL = ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "erf", "exp", "log", "log10",
                  "log2", "rsqrt", "sin", "sinh", "sqrt", "tan", "tanh"]  # fmt: skip
INT_UNARY = ["abs", "bitwise_not", "identity", "logical_not", "negative", "sign"]
ARITH = ["add", "sub", "mul", "div", "mod", "floor_div", "floor_mod", "max", "min", "power"]
INT_ONLY = ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]
LOGICAL = ["logical_and", "logical_or", "logical_xor"]
KINDS = ["eq", "ne", "ge", "gt", "le", "lt"]


def int_operands(dtype):
    info = np.iinfo(dtype)
    bits = np.dtype(dtype).itemsize * 8
    edge_x = [info.min, info.min, info.max, 0, 7, -7 if info.min else 7, 1, info.max, 5, 3, 2, 1]
    edge_y = [-1 if info.min else 1, 0, 0, 0, 2, 2, bits, bits + 1, -1 if info.min else 200, bits - 1, 31, 63]
    x = np.concatenate([np.array(edge_x, dtype), RNG.integers(info.min, int(info.max) + 1, 36, dtype=dtype)])
    y = np.concatenate([np.array(edge_y).astype(dtype), RNG.integers(info.min, int(info.max) + 1, 36, dtype=dtype)])
    y[20:30] = RNG.integers(-3 if info.min else 0, 4, 10).astype(dtype)
    return x.reshape(6, 8), y.reshape(6, 8)


def float_operands(dtype):
    edge_x = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 2.5, -2.5, 1.5, 7.5, -7.5, 1.0, 0.0, 1e30, -3.0]
    edge_y = [1.0, 2.0, 2.0, 0.0, 1.0, np.nan, 2.0, -2.0, 2.0, np.inf, 2.0, 2.0, 0.0, -1.0, 1e-30, 2.0]
    x = np.concatenate([np.array(edge_x), RNG.uniform(-3, 3, 32)]).astype(dtype)
    y = np.concatenate([np.array(edge_y), RNG.uniform(-3, 3, 32)]).astype(dtype)
    return x.reshape(6, 8), y.reshape(6, 8)


def program_of_elementwise(dtype):
    """(build, inputs, transcendental outputs): every element-wise primitive, compare and reduction on dtype."""
    is_float = np.dtype(dtype).kind == "f"
    x, y = float_operands(dtype) if is_float else int_operands(dtype)
    finite = np.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0) if is_float else x
    inexact: list[int] = []

    def build(b, u, v, f):
        outs = [getattr(b, m)(u) for m in (FLOAT_UNARY if is_float else INT_UNARY)]
        if is_float:
            inexact.extend(range(len(outs), len(outs) + len(TRANSCENDENTAL)))
            outs += [getattr(b, m)(u) for m in TRANSCENDENTAL]
        for m in ARITH + ([] if is_float else INT_ONLY) + LOGICAL:
            if m == "power" and is_float:
                inexact.append(len(outs))
            outs.append(getattr(b, m)(u, v))
        outs += [b.compare(u, v, k) for k in KINDS]
        outs += [b.sub(u, b.const_scalar(1, "one", np.dtype(dtype).name)), b.select(b.compare(u, v, "lt"), u, v)]
        for kind in ["sum", "prod", "max", "min"]:
            for dim, keep in [([1], False), ([0], True), ([], False)]:
                if is_float:
                    inexact.append(len(outs))
                outs.append(b.reduce(f, kind, dim, keep))
        if is_float:
            inexact.append(len(outs))
        outs.append(b.dot(f, b.transpose(f, [1, 0])))
        return outs

    return build, (x, y, finite), inexact


def shape_program():
    x = RNG.integers(-100, 100, (2, 3, 4)).astype(np.int16)
    s = np.ones((3, 1, 1), np.int16) * 7

    def build(b, v, w):
        return [b.broadcast_to(w, [5, 4, 3], [2, 0, 1]), b.concat([v, v, v], 1), b.reshape(v, [4, -1]),
                b.reverse(v, [0, 2]), b.slice(v, [2, 0], [-3, 1], [100, 2]), b.transpose(v, [2, 0, 1]),
                b.identity(b.reshape(v, [24]))]  # fmt: skip

    return build, (x, s), []


def conv_program(layout):
    x = RNG.standard_normal((1, 2, 6, 7)).astype(np.float32)
    if layout == "NHWC":
        x = x.transpose(0, 2, 3, 1).copy()
    w = RNG.standard_normal((4, 2, 3, 3)).astype(np.float32)
    y_shape = (1, 4, 6, 7) if layout == "NCHW" else (1, 6, 7, 4)
    dy = RNG.standard_normal(y_shape).astype(np.float32)
    args = ((1, 1), (1, 1), (1, 1), 1)

    def build(b, u, v, g):
        return [b.conv(u, v, *args, "forward", layout, "EXPLICIT"),
                b.conv(v, g, *args, "backward_data", layout, "EXPLICIT", x.shape),
                b.conv(u, g, *args, "backward_filter", layout, "EXPLICIT", w.shape)]  # fmt: skip

    return build, (x, w, dy), [0, 1, 2]


def bn_program():
    x, dy, mean = RNG.standard_normal((2, 3, 4, 5)), RNG.standard_normal((2, 3, 4, 5)), RNG.standard_normal(3)

    def build(b, u, v, m):
        return [*b.bn_mean_variance(u), *b.bn_grad_bias_scale(u, v, m)]

    return build, (x, dy, mean), [0, 1, 2, 3]


def bool_program():
    p, q = RNG.integers(0, 2, (4, 5)).astype(bool), RNG.integers(0, 2, (4, 5)).astype(bool)

    def build(b, u, v):
        outs = [getattr(b, m)(u, v) for m in ["bitwise_and", "bitwise_or", "bitwise_xor", *LOGICAL]]
        outs += [getattr(b, m)(u) for m in ["bitwise_not", "logical_not", "identity"]]
        return outs + [b.compare(u, v, k) for k in KINDS]

    return build, (p, q), []


CINN_PROGRAMS = {
    **{np.dtype(d).name: (lambda d=d: program_of_elementwise(d))
       for d in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.float32, np.float64)},
    "shapes": shape_program, "conv_nchw": lambda: conv_program("NCHW"), "conv_nhwc": lambda: conv_program("NHWC"),
    "bn": bn_program, "bool": bool_program,
}  # fmt: skip


def cinn_function(build, arrays):
    from cvmc.runtime.cinn_builder import CinnBuilder

    b = CinnBuilder("p")
    variables = [b.create_input(a.dtype.name, a.shape, f"a{i}") for i, a in enumerate(arrays)]
    outputs = build(b, *variables)
    compiled = b.compile(outputs, device="reference")
    reference = compiled(**{f"a{i}": a for i, a in enumerate(arrays)})
    return compiled.function, reference


def assert_cinn_matches(got, want, inexact, rtol):
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w.dtype and g.shape == w.shape, i
        if i in inexact:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, equal_nan=True, err_msg=f"output {i}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"output {i}")


@needs_device_compiler
@pytest.mark.parametrize("name", list(CINN_PROGRAMS))
def test_cinn_primitives_cuda_compiles(name):
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp

    from cvmc.codegen.cuda import emit_cuda
    from cvmc.passes.convert_cinn_to_loops import ConvertCinnToLoopsPass

    build, arrays, _ = CINN_PROGRAMS[name]()
    function, _ = cinn_function(build, arrays)
    module = ModuleOp([function.clone()])
    ConvertCinnToLoopsPass(micro_kernels=False).apply(Context(), module)  # as the CUDA runner lowers
    assert len(compile_for_device(emit_cuda(module))) > 0


@needs_host_compiler
@pytest.mark.parametrize("name", list(CINN_PROGRAMS))
def test_cinn_primitives_on_the_emulated_device(name, capfd):
    build, arrays, inexact = CINN_PROGRAMS[name]()
    function, reference = cinn_function(build, arrays)
    runner = rc.CinnCudaRunner(function, device=HostDevice())
    rtol = 1e-4 if any(a.dtype == np.float32 for a in arrays) else 1e-10
    assert_cinn_matches(runner(list(arrays)), reference, inexact, rtol)
    assert "runtime error" not in capfd.readouterr().err


# --------------------------------------------------------------------------------------------------------------
# On a GPU
# --------------------------------------------------------------------------------------------------------------


@needs_gpu
@pytest.mark.parametrize("case", VALID, ids=lambda d: d.name)
def test_corpus_is_bit_exact_on_the_gpu(case):
    model = cvmc.load_model((case / "model.json").read_bytes(), case_params(case), device="cuda")
    check_case(case, model)


@needs_gpu
@pytest.mark.parametrize("name", list(CINN_PROGRAMS))
def test_cinn_primitives_on_the_gpu(name):
    build, arrays, inexact = CINN_PROGRAMS[name]()
    function, reference = cinn_function(build, arrays)
    runner = rc.CinnCudaRunner(function)
    rtol = 1e-4 if any(a.dtype == np.float32 for a in arrays) else 1e-10
    assert_cinn_matches(runner(list(arrays)), reference, inexact, rtol)


@needs_gpu
def test_gpu_runs_repeat_and_report():
    case = next(c for c in MODELS if c.name.startswith("model_bench_resnet"))
    model = cvmc.load_model((case / "model.json").read_bytes(), case_params(case), device="cuda")
    x = case_input(case)
    first = heads_bytes(model.run(x))
    assert all(heads_bytes(model.run(x)) == first for _ in range(3))
    assert model.stats["device_name"] == GPU.name and model.stats["launches"] >= 1
    assert model.stats["cuda_graph"]  # a run is one CUDA graph on a real GPU


@needs_gpu
def test_gpu_graph_replay_equals_launches_one_by_one():
    case = next(c for c in MODELS if c.name.startswith("model_bench_resnet"))
    runner = rc.compile_graph(graph(case))
    assert runner.recorded is not None
    x = case_input(case)
    replayed = heads_bytes(runner(x))
    runner.recorded = None
    assert heads_bytes(runner(x)) == replayed == (case / "expected.bin").read_bytes()


def test_corpus_sample_covers_every_model_and_op_kind():
    kinds = {json.loads((c / "case.json").read_text())["kind"] for c in sample(1)}
    assert {"op", "chain", "model"} <= kinds
    names = {c.name.rsplit("_", 1)[0] for c in sample(1)}
    assert names == {c.name.rsplit("_", 1)[0] for c in VALID}
    assert (CVM_CORPUS / "model_digits_cnn_000") in sample(1)
