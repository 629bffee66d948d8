"""Run generated CUDA C on the CPU, for tests on machines without a GPU.

The source of `cvmc.codegen.cuda` is compiled by the host C++ compiler after a small header (`SHIM`) that
defines what CUDA provides (`__global__`, `blockIdx`, the `__fadd_rn` / `__float2int_rz` / `__clz` intrinsics,
with the device's semantics), under UndefinedBehaviorSanitizer: a kernel that reached C++ undefined behaviour
prints `runtime error:` on stderr (tests read it with `capfd`). `HostDevice` is a stand-in for
`cvmc.runtime.cuda.CudaDevice`: memory is host memory, a launch runs every thread of a small grid in turn.
Kernels share nothing between threads, so running them one after another computes what the GPU does.
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

SHIM = r"""
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(n)
struct cvmc_dim3 { unsigned x, y, z; };
static cvmc_dim3 threadIdx, blockIdx, blockDim, gridDim;
extern "C" void cvmc_host_set_thread(unsigned block, unsigned thread, unsigned grid, unsigned block_dim) {
  blockIdx = {block, 0, 0}; threadIdx = {thread, 0, 0}; gridDim = {grid, 1, 1}; blockDim = {block_dim, 1, 1};
}
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline float __fsqrt_rn(float x) { return std::sqrt(x); }
static inline double __dsqrt_rn(double x) { return std::sqrt(x); }
static inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
static inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
static inline float __double2float_rn(double x) { return (float)x; }
// Float to integer, toward zero, saturating, NaN to 0: what cvt.rzi does on the device.
template <class T> static inline T cvmc_host_rz(double x, double lo_minus_one, double hi_plus_one) {
  if (x != x) return 0;
  if (x >= hi_plus_one) return std::numeric_limits<T>::max();
  if (x <= lo_minus_one) return std::numeric_limits<T>::min();
  return (T)x;
}
static inline int __float2int_rz(float x) { return cvmc_host_rz<int>(x, -2147483649.0, 2147483648.0); }
static inline int __double2int_rz(double x) { return cvmc_host_rz<int>(x, -2147483649.0, 2147483648.0); }
static inline unsigned __float2uint_rz(float x) { return cvmc_host_rz<unsigned>(x, -1.0, 4294967296.0); }
static inline unsigned __double2uint_rz(double x) { return cvmc_host_rz<unsigned>(x, -1.0, 4294967296.0); }
static inline long long __float2ll_rz(float x) {
  return cvmc_host_rz<long long>(x, -9223372036854775809.0, 9223372036854775808.0);
}
static inline long long __double2ll_rz(double x) {
  return cvmc_host_rz<long long>(x, -9223372036854775809.0, 9223372036854775808.0);
}
static inline unsigned long long __float2ull_rz(float x) {
  return cvmc_host_rz<unsigned long long>(x, -1.0, 18446744073709551616.0);
}
static inline unsigned long long __double2ull_rz(double x) {
  return cvmc_host_rz<unsigned long long>(x, -1.0, 18446744073709551616.0);
}
static inline float __int_as_float(int x) { float f; std::memcpy(&f, &x, 4); return f; }
static inline int __float_as_int(float x) { int i; std::memcpy(&i, &x, 4); return i; }
static inline double __longlong_as_double(long long x) { double f; std::memcpy(&f, &x, 8); return f; }
static inline long long __double_as_longlong(double x) { long long i; std::memcpy(&i, &x, 8); return i; }
static inline int __clz(unsigned x) { return x == 0 ? 32 : __builtin_clz(x); }
static inline int __clzll(unsigned long long x) { return x == 0 ? 64 : __builtin_clzll(x); }
static inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
static inline int __ffsll(unsigned long long x) { return __builtin_ffsll((long long)x); }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline void __trap() { std::abort(); }
"""

CXX_FLAGS = ("-std=c++17", "-O1", "-shared", "-fPIC", "-ffp-contract=off", "-fno-fast-math",
             "-fsanitize=undefined,float-cast-overflow", "-fno-sanitize=alignment", "-w")  # fmt: skip


def host_compiler() -> str | None:
    return shutil.which("g++") or shutil.which("c++")


_LIBRARIES: dict[str, ctypes.CDLL] = {}


def compile_host(source: str, directory: Path | None = None) -> ctypes.CDLL:
    """The generated CUDA `source` as a shared library for this CPU (compiled once per source and process)."""
    key = hashlib.sha256(source.encode()).hexdigest()[:16]
    if key in _LIBRARIES:
        return _LIBRARIES[key]
    compiler = host_compiler()
    assert compiler is not None, "no host C++ compiler"
    work = Path(directory or tempfile.mkdtemp(prefix="cvmc-cuda-host-"))
    cpp = work / f"kernels_{key}.cpp"
    cpp.write_text(SHIM + "\n" + source)
    lib = work / f"kernels_{key}.so"
    done = subprocess.run([compiler, *CXX_FLAGS, "-o", str(lib), str(cpp)], capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"the host compiler rejected the generated CUDA:\n{done.stderr[:4000]}")
    _LIBRARIES[key] = ctypes.CDLL(str(lib))
    return _LIBRARIES[key]


def run_grid(lib: ctypes.CDLL, symbol: str, pointers: Sequence[int], grid: int, block: int) -> None:
    """Run every thread of a `grid` x `block` launch of kernel `symbol`, one after another. The kernel takes one
    array of the argument pointers (the ABI of `cvmc.codegen.cuda`)."""
    fn = getattr(lib, symbol)
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p]
    table = (ctypes.c_void_p * max(1, len(pointers)))(*pointers)
    for b in range(grid):
        for t in range(block):
            lib.cvmc_host_set_thread(b, t, grid, block)
            fn(ctypes.addressof(table))


def emulated_config(threads: int) -> tuple[int, int]:
    """A small grid for a kernel with work for `threads` threads: several blocks and threads where there is
    work for them (so the grid-stride loop really strides), one thread for a one-thread kernel."""
    if threads <= 1:
        return 1, 1
    return 2, 3


class HostDevice:
    """A stand-in for `cvmc.runtime.cuda.CudaDevice` that runs kernels on the CPU (see the module docstring)."""

    name = "host emulation"
    multiprocessors = 1

    def __init__(self, grid: tuple[int, int] | None = (2, 3)):
        self.grid = grid  # (blocks, threads) run instead of the launch's own; None keeps the launch's
        self.buffers: dict[int, np.ndarray] = {}
        self.launched: list[tuple[str, int, int]] = []
        self.cache_hit = False

    def compile(self, source: str) -> Any:
        return compile_host(source)

    def function(self, module: Any, symbol: str) -> Any:
        return module, symbol

    def alloc(self, nbytes: int) -> int:
        buf = np.full(max(1, nbytes) + 256, 0xA5, dtype=np.uint8)  # poisoned: unwritten outputs show
        start = (-buf.ctypes.data) % 256
        pointer = buf.ctypes.data + start
        self.buffers[pointer] = buf
        return pointer

    def free(self, pointer: int) -> None:
        self.buffers.pop(pointer, None)

    def upload(self, pointer: int, array: np.ndarray) -> None:
        a = np.ascontiguousarray(array)
        ctypes.memmove(pointer, a.ctypes.data, a.nbytes)

    def download(self, array: np.ndarray, pointer: int) -> None:
        ctypes.memmove(array.ctypes.data, pointer, array.nbytes)

    def prepare(self, pointers: Sequence[int]) -> Any:
        return list(pointers)

    def launch(self, function: Any, grid: int, block: int, arguments: Any) -> None:
        lib, symbol = function
        self.launched.append((symbol, grid, block))
        if self.grid is not None and not (grid == 1 and block == 1):
            grid, block = self.grid
        run_grid(lib, symbol, arguments, grid, block)

    def synchronize(self) -> None:
        pass


# --------------------------------------------------------------------------------------------------------------
# Compiling for the GPU without one: NVRTC (what the runtime uses), else nvcc
# --------------------------------------------------------------------------------------------------------------

# The architecture the compile tests build for (Hopper, what the lent GPUs are).
ARCH = "sm_90"


def _nvrtc_works() -> bool:
    try:
        from cvmc.runtime.cuda import nvrtc_version

        nvrtc_version()
        return True
    except Exception:
        return False


def device_compiler() -> tuple[str | None, str]:
    """("nvrtc" or "nvcc" or None, why): how the compile tests build CUDA here."""
    if _nvrtc_works():
        return "nvrtc", "NVRTC from cuda-python"
    if shutil.which("nvcc"):
        return "nvcc", "nvcc on PATH"
    return None, "neither NVRTC (pip install 'cvmc[cuda]') nor nvcc is available"


def compile_for_device(source: str, directory: Path | None = None) -> bytes:
    """`source` compiled to a cubin for `ARCH`, as the runtime compiles it (raises AssertionError with the log)."""
    how, why = device_compiler()
    if how == "nvrtc":
        from cvmc.runtime.cuda import NVRTC_OPTIONS, nvrtc_compile

        return nvrtc_compile(source, [f"--gpu-architecture={ARCH}", *NVRTC_OPTIONS])
    assert how == "nvcc", why
    work = Path(directory or tempfile.mkdtemp(prefix="cvmc-nvcc-"))
    cu, cubin = work / "kernels.cu", work / "kernels.cubin"
    cu.write_text(source)
    done = subprocess.run(["nvcc", "--cubin", f"-arch={ARCH}", "-std=c++17", "--fmad=false", "-o", str(cubin),
                           str(cu)], capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        raise AssertionError(f"nvcc rejected the generated CUDA:\n{done.stderr[:4000]}")
    return cubin.read_bytes()
