"""Run generated CUDA C on the CPU, for tests on machines without a GPU.

The source of `cvmc.codegen.cuda` is compiled by the host C++ compiler after a small header (`SHIM`) that
defines what CUDA provides (`__global__`, `blockIdx`, the `__fadd_rn` / `__float2int_rz` / `__clz` intrinsics,
with the device's semantics), under UndefinedBehaviorSanitizer: a kernel that reached C++ undefined behaviour
prints `runtime error:` on stderr (tests read it with `capfd`). `HostDevice` is a stand-in for
`cvmc.runtime.devices.cuda.CudaDevice`: memory is host memory, a launch runs every thread of a small grid in turn.
Kernels that share nothing between threads run one thread after another, which computes what the GPU does.

A source that calls `__syncthreads()` runs each block cooperatively: every thread of the block is a coroutine
(`ucontext`) on a stack of its own, run until it reaches a barrier or returns; when all have, the next phase
begins. `__shared__` variables are one per block (blocks run one after another). Within a phase the threads
run one after another, whole: even blocks in thread order, odd blocks in reverse order, so a missing barrier
makes a thread read what another has not yet written (or has already overwritten) and the result is wrong,
deterministically. A phase where some threads reach a barrier and others return (a divergent barrier, which
hangs or is undefined on the GPU) fails the launch with an AssertionError.
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
#define __shared__ static
#include <ucontext.h>
#include <vector>
struct cvmc_dim3 { unsigned x, y, z; };
static cvmc_dim3 threadIdx, blockIdx, blockDim, gridDim;
extern "C" void cvmc_host_set_thread(unsigned block, unsigned thread, unsigned grid, unsigned block_dim) {
  blockIdx = {block, 0, 0}; threadIdx = {thread, 0, 0}; gridDim = {grid, 1, 1}; blockDim = {block_dim, 1, 1};
}
// Cooperative blocks (see the module docstring): each thread a coroutine, switched out at every barrier.
typedef void (*cvmc_kernel)(void *const *);
static ucontext_t cvmc_scheduler;
static std::vector<ucontext_t> cvmc_threads;
static std::vector<int> cvmc_finished;
static unsigned cvmc_current;
static bool cvmc_cooperative = false;
static cvmc_kernel cvmc_fn;
static void *const *cvmc_args;
static void __syncthreads() {
  if (cvmc_cooperative) swapcontext(&cvmc_threads[cvmc_current], &cvmc_scheduler);
}
static void cvmc_host_thread_main() {
  cvmc_fn(cvmc_args);
  cvmc_finished[cvmc_current] = 1;  // returns to cvmc_scheduler (uc_link)
}
// Runs block `block` of a launch; 0 when done, -1 on a divergent barrier.
extern "C" int cvmc_host_run_block(cvmc_kernel fn, void *const *args, unsigned block, unsigned grid,
                                   unsigned block_dim) {
  const size_t stack_bytes = 1u << 18;
  std::vector<std::vector<char>> stacks(block_dim, std::vector<char>(stack_bytes));
  cvmc_threads.assign(block_dim, ucontext_t());
  cvmc_finished.assign(block_dim, 0);
  cvmc_fn = fn; cvmc_args = args;
  for (unsigned t = 0; t < block_dim; t++) {
    getcontext(&cvmc_threads[t]);
    cvmc_threads[t].uc_stack.ss_sp = stacks[t].data();
    cvmc_threads[t].uc_stack.ss_size = stack_bytes;
    cvmc_threads[t].uc_link = &cvmc_scheduler;
    makecontext(&cvmc_threads[t], cvmc_host_thread_main, 0);
  }
  cvmc_cooperative = true;
  int status = 0;
  for (;;) {
    unsigned live = 0;
    for (unsigned i = 0; i < block_dim; i++) {
      unsigned t = block % 2 == 0 ? i : block_dim - 1 - i;
      if (cvmc_finished[t]) continue;
      live++;
      cvmc_current = t;
      blockIdx = {block, 0, 0}; threadIdx = {t, 0, 0}; gridDim = {grid, 1, 1}; blockDim = {block_dim, 1, 1};
      swapcontext(&cvmc_scheduler, &cvmc_threads[t]);
    }
    unsigned done = 0;
    for (unsigned t = 0; t < block_dim; t++) done += cvmc_finished[t];
    if (done == block_dim) break;
    if (done > 0 || live == 0) { status = -1; break; }  // some returned while others wait at a barrier
  }
  cvmc_cooperative = false;
  return status;
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
// Four products of signed bytes (byte k: bits 8k to 8k + 7) added to c, wrapping in 32 bits.
static inline int __dp4a(int a, int b, int c) {
  unsigned s = (unsigned)c;
  for (int k = 0; k < 4; k++) {
    int x = (signed char)(unsigned char)((unsigned)a >> (8 * k));
    int y = (signed char)(unsigned char)((unsigned)b >> (8 * k));
    s += (unsigned)(x * y);
  }
  return (int)s;
}
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
    if "__syncthreads" in source:
        _COOPERATIVE.add(key)
    return _LIBRARIES[key]


_COOPERATIVE: set[str] = set()  # the libraries whose blocks run cooperatively (their source has barriers)


def _is_cooperative(lib: ctypes.CDLL) -> bool:
    return any(_LIBRARIES.get(key) is lib for key in _COOPERATIVE)


def run_grid(lib: ctypes.CDLL, symbol: str, pointers: Sequence[int], grid: int, block: int) -> None:
    """Run every thread of a `grid` x `block` launch of kernel `symbol`, one after another. The kernel takes one
    array of the argument pointers (the ABI of `cvmc.codegen.cuda`)."""
    fn = getattr(lib, symbol)
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p]
    table = (ctypes.c_void_p * max(1, len(pointers)))(*pointers)
    if _is_cooperative(lib):
        run_block = lib.cvmc_host_run_block
        run_block.restype = ctypes.c_int
        run_block.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint]
        address = ctypes.cast(fn, ctypes.c_void_p).value
        for b in range(grid):
            if run_block(address, ctypes.addressof(table), b, grid, block) != 0:
                raise AssertionError(f"{symbol}: a divergent __syncthreads() in block {b} (some threads of the "
                                     f"block returned while others wait at the barrier)")
        return
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
    """A stand-in for `cvmc.runtime.devices.cuda.CudaDevice` that runs kernels on the CPU (see the module docstring)."""

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
        from cvmc.runtime.devices.cuda import nvrtc_version

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
        from cvmc.runtime.devices.cuda import NVRTC_OPTIONS, nvrtc_compile

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
