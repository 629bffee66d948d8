"""Kernels of any width: a kernel takes one array of its argument pointers, so operators and fused groups with more
than ctypes' 1,024 arguments (or CUDA's 4 KB of parameters) run, exactly, on every backend."""

import numpy as np
import pytest
from cuda_host import HostDevice, compile_for_device, device_compiler, host_compiler

import cvmc
from cvmc import CinnBuilder
from cvmc.codegen.cuda import emit_cuda
from cvmc.codegen.llvm import kernel_specs, parse_loop_level
from cvmc.runtime.devices import cuda as rc
from cvmc.runtime.devices.cpu import compile_graph
from cvmc.runtime.engine.jit import compile_module


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CVMC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def wide_concat(n: int):
    """A model with a concatenate of n inputs (the input, its relu and its negative in turn): its kernel takes
    n + 1 arguments."""
    b = cvmc.CvmBuilder("wide")
    x = b.create_input([1, 2], precision=8)
    sources = [x, b.relu(x), b.negative(x)]
    return b, b.concatenate(*(sources[i % 3] for i in range(n)), axis=1)


def test_an_1100_input_concatenate_is_exact():
    b, y = wide_concat(1100)
    data = np.array([[3, -4]], np.int32)
    runner = compile_graph(b.graph([y]))
    want = b.compile([y], device="reference").run(data)[0]
    assert want.shape == (1, 2200)
    np.testing.assert_array_equal(runner(data)[0], want)
    # cvm-fuse and the planner cap a concatenate's kernel at MAX_CONCAT_INPUTS inputs (O3 is superlinear in a
    # kernel's length): the 1,100 inputs run as several calls; test_a_2000_input_cinn_concat_is_exact and the
    # 600-argument kernels below are the wide kernels
    assert runner.stats["calls"] > 1


def test_an_1100_op_fused_chain_is_exact():
    b = cvmc.CvmBuilder("chain")
    x = b.create_input([1, 2], precision=8)
    y = x
    for i in range(1100):
        p = b.create_param(np.array([[i % 5 - 2, 1 - i % 3]], np.int32), precision=8, name=f"p{i}")
        y = b.cvm_clip(b.elemwise_add(y, p), precision=8)
    data = np.array([[100, -100]], np.int32)
    model = b.compile([y], device="cpu")
    np.testing.assert_array_equal(model.run(data)[0], b.compile([y], device="reference").run(data)[0])
    assert model.stats["calls"] == -(-2200 // 64)  # fused groups are capped at MAX_GROUP_OPS = 64 ops


def test_a_2000_input_cinn_concat_is_exact():
    b = CinnBuilder("wide")
    xs = [b.create_input("int32", [1], f"x{i}") for i in range(2000)]
    fn = b.compile(outputs=[b.concat(xs, 0)], device="cpu")
    (out,) = fn(**{f"x{i}": np.array([i * 7 - 3], np.int32) for i in range(2000)})
    np.testing.assert_array_equal(out, np.arange(2000, dtype=np.int32) * 7 - 3)


def copy_kernel(n: int) -> str:
    """`@gather`: out[i] = in_i[0] for n inputs: n + 1 arguments, 8 * (n + 1) bytes of pointers."""
    args = ", ".join(f"%a{i}: memref<1xi32>" for i in range(n))
    body = "\n".join(f"  %v{i} = memref.load %a{i}[%c0] : memref<1xi32>\n"
                     f"  %c{i}x = arith.constant {i} : index\n"
                     f"  memref.store %v{i}, %out[%c{i}x] : memref<{n}xi32>" for i in range(n))  # fmt: skip
    return f"func.func @gather({args}, %out: memref<{n}xi32>) {{\n  %c0 = arith.constant 0 : index\n{body}\n" \
           "  func.return\n}\n"


def test_a_kernel_of_600_arguments_runs_on_the_jit_and_the_emulated_cuda_device():
    n = 600  # past CUDA's 4 KB of kernel parameters (512 pointers)
    module = parse_loop_level(copy_kernel(n))
    inputs = [np.array([i * 3 - 7], np.int32) for i in range(n)]
    out = np.zeros(n, np.int32)
    compile_module(module)["gather"](*inputs, out)
    np.testing.assert_array_equal(out, np.arange(n) * 3 - 7)
    if host_compiler() is None:
        pytest.skip("no host C++ compiler to emulate CUDA")
    device = HostDevice()
    lib = device.compile(emit_cuda(module))
    buffers = [device.alloc(4) for _ in range(n)] + [device.alloc(4 * n)]
    for p, a in zip(buffers, inputs):
        device.upload(p, a)
    symbol = next(iter(rc.kernel_specs(module).values())).symbol
    device.launch(device.function(lib, symbol), 1, 1, device.prepare(buffers))
    got = np.zeros(n, np.int32)
    device.download(got, buffers[-1])
    np.testing.assert_array_equal(got, np.arange(n) * 3 - 7)
    assert len(kernel_specs(module)["gather"].args) == n + 1


@pytest.mark.skipif(device_compiler()[0] is None, reason=device_compiler()[1])
def test_a_kernel_of_600_arguments_compiles_for_the_device():
    image = compile_for_device(emit_cuda(parse_loop_level(copy_kernel(600))))
    assert image
