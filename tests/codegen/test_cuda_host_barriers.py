"""The emulated grid honours `__syncthreads()` (tests/cuda_host.py): a kernel that stages data in shared memory
computes what the GPU does with its barriers, and the same kernel without one computes a wrong result, every
run, not by luck. Kernels of this file are written by hand (the generated block kernels are tested so in
tests/runtime/test_cuda_schedule.py)."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_host import compile_for_device, compile_host, device_compiler, host_compiler, run_grid

COMPILER, WHY = device_compiler()
needs_host_compiler = pytest.mark.skipif(host_compiler() is None, reason="no host C++ compiler to emulate CUDA")

# Each block reverses its slice of `in` through a shared tile, then (second pass) adds the tile's neighbour to
# the right: a read-after-write hazard (barrier A) and a write-after-read one (barrier B).
KERNEL = r"""
extern "C" __global__ void __launch_bounds__(256) k_stage(void *const *__restrict__ args) {
  int *out = (int *)args[0];
  const int *in = (const int *)args[1];
  __shared__ int tile[256];
  unsigned t = threadIdx.x, n = blockDim.x, base = blockIdx.x * blockDim.x;
  tile[t] = in[base + t];
  BARRIER_A
  int reversed = tile[n - 1 - t];
  BARRIER_B
  tile[t] = reversed * 2;
  __syncthreads();
  out[base + t] = reversed + tile[(t + 1) % n];
}
"""


def source(a: bool = True, b: bool = True) -> str:
    return (KERNEL.replace("BARRIER_A", "__syncthreads();" if a else "")
            .replace("BARRIER_B", "__syncthreads();" if b else ""))  # fmt: skip


def expected(x: np.ndarray, block: int) -> np.ndarray:
    out = np.empty_like(x)
    for start in range(0, len(x), block):
        tile = x[start:start + block][::-1]
        out[start:start + block] = tile + 2 * np.roll(tile, -1)
    return out


def launch(src: str, grid: int, block: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.arange(1, grid * block + 1, dtype=np.int32) * 7
    out = np.full_like(x, -1)
    run_grid(compile_host(src), "k_stage", [out.ctypes.data, x.ctypes.data], grid, block)
    return out, x


@needs_host_compiler
@pytest.mark.parametrize(("grid", "block"), [(1, 2), (2, 3), (3, 5), (2, 256)])
def test_barriers_give_the_gpu_result(grid, block, capfd):
    out, x = launch(source(), grid, block)
    assert (out == expected(x, block)).all()
    assert "runtime error" not in capfd.readouterr().err


@needs_host_compiler
@pytest.mark.parametrize(("a", "b"), [(False, True), (True, False)])
@pytest.mark.parametrize(("grid", "block"), [(1, 2), (2, 3)])
def test_a_missing_barrier_gives_a_wrong_result(a, b, grid, block):
    """Either hazard shows in every block of at least two threads, whichever order the block runs its threads."""
    out, x = launch(source(a, b), grid, block)
    want = expected(x, block)
    for start in range(0, grid * block, block):
        assert (out[start:start + block] != want[start:start + block]).any()


@needs_host_compiler
def test_one_thread_needs_no_barrier():
    """At the bound: a block of one thread has no other thread to race with."""
    out, x = launch(source(False, False), 3, 1)
    assert (out == expected(x, 1)).all()


@needs_host_compiler
def test_a_divergent_barrier_fails_the_launch():
    src = source().replace("tile[t] = reversed * 2;\n  __syncthreads();",
                           "tile[t] = reversed * 2;\n  if (t == 0) return;\n  __syncthreads();")
    with pytest.raises(AssertionError, match="divergent __syncthreads"):
        launch(src, 1, 3)


@pytest.mark.skipif(COMPILER is None, reason=WHY)
def test_the_staged_kernel_compiles_for_the_gpu(tmp_path):
    assert len(compile_for_device(source(), tmp_path)) > 0
