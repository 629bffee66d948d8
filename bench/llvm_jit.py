"""The LLVM JIT alone: compile time of a 100-kernel module, call cost, and i32 matmul speed by loop order.

    python bench/llvm_jit.py [--n 1024] [--repeat 5]

Matmul loop orders (all loop-level IR as a lowering would emit it, C = A @ B, i32, wrapping):
- ijk: `scf.parallel (i, j)` with a k reduction in iter_args reading B by column (strided);
- dot: the same with B transposed (both rows contiguous), as a dense layer reads its weight;
- ikj: `scf.parallel (i)`, then k, then j innermost accumulating into C's row (contiguous).
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from cvmc.codegen.llvm import emit_llvm, kernel_specs, parse_loop_level
from cvmc.runtime.engine.jit import JitEngine, compile_module

OPS = ["addi", "subi", "muli", "divsi", "remsi", "maxsi", "minsi", "shrsi", "shli", "andi"]


def parallel(ivs: list[str], ubs: list[str], body: str) -> str:
    n = len(ivs)
    operands = ", ".join(["%c0"] * n + ubs + ["%c1"] * n)
    return f"""    "scf.parallel"({operands}) <{{operandSegmentSizes = array<i32: {n}, {n}, {n}, 0>}}> ({{
    ^bb0({", ".join(f"{v}: index" for v in ivs)}):
{body}
      scf.reduce
    }}) : ({", ".join(["index"] * 3 * n)}) -> ()"""


def elementwise_kernel(i: int) -> str:
    rows, t = 64 + i, f"memref<{64 + i}x32xi32>"
    body = f"""      %x = memref.load %a[%i, %j] : {t}
      %y = memref.load %b[%i, %j] : {t}
      %z = arith.{OPS[i % len(OPS)]} %x, %y : i32
      %w = arith.addi %z, %k : i32
      %v = arith.maxsi %w, %x : i32
      memref.store %v, %c[%i, %j] : {t}"""
    return f"""func.func @k{i}(%a: {t}, %b: {t}, %c: {t}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant {rows} : index
    %m = arith.constant 32 : index
    %k = arith.constant {i} : i32
{parallel(["%i", "%j"], ["%n", "%m"], body)}
    func.return
}}"""


def matmul_kernels(n: int) -> str:
    t = f"memref<{n}x{n}xi32>"
    head = f"""    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant {n} : index
    %z = arith.constant 0 : i32"""

    def reduction(b_index: str) -> str:
        return f"""      %s = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %z) -> (i32) {{
        %x = memref.load %a[%i, %k] : {t}
        %y = memref.load %b[{b_index}] : {t}
        %p = arith.muli %x, %y : i32
        %q = arith.addi %acc, %p : i32
        scf.yield %q : i32
      }}
      memref.store %s, %c[%i, %j] : {t}"""

    ikj = f"""      scf.for %j = %c0 to %n step %c1 {{
        memref.store %z, %c[%i, %j] : {t}
      }}
      scf.for %k = %c0 to %n step %c1 {{
        %x = memref.load %a[%i, %k] : {t}
        scf.for %j = %c0 to %n step %c1 {{
          %y = memref.load %b[%k, %j] : {t}
          %o = memref.load %c[%i, %j] : {t}
          %p = arith.muli %x, %y : i32
          %q = arith.addi %o, %p : i32
          memref.store %q, %c[%i, %j] : {t}
        }}
      }}"""
    kernels = [("ijk", ["%i", "%j"], reduction("%k, %j")), ("dot", ["%i", "%j"], reduction("%j, %k")),
               ("ikj", ["%i"], ikj)]  # fmt: skip
    return "\n".join(
        f"func.func @mm_{name}(%a: {t}, %b: {t}, %c: {t}) {{\n{head}\n"
        f"{parallel(ivs, ['%n'] * len(ivs), body)}\n    func.return\n}}"
        for name, ivs, body in kernels
    )


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024, help="matmul size")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    text = "\n".join(elementwise_kernel(i) for i in range(100))
    start = time.perf_counter()
    module = parse_loop_level(text)
    parsed = time.perf_counter()
    llvm_module, specs = emit_llvm(module), kernel_specs(module)
    ir_text = str(llvm_module)
    emitted = time.perf_counter()
    with tempfile.TemporaryDirectory() as cache:
        cold = JitEngine(ir_text, specs, cache_dir=cache)
        warm = JitEngine(ir_text, specs, cache_dir=cache)
    print(f"100 kernels: parse+verify {parsed - start:.3f} s, emit {emitted - parsed:.3f} s, "
          f"optimize and machine code {cold.timings['compile']:.3f} s on {cold.parts} thread(s), "
          f"load {cold.timings['load'] * 1e3:.1f} ms; cached: {warm.compile_seconds * 1e3:.1f} ms")  # fmt: skip

    a = np.arange(64 * 32, dtype=np.int32).reshape(64, 32)
    out = np.zeros_like(a)
    kernel = warm["k0"]
    run = kernel.prepare(a, a.copy(), out)
    calls = 100_000
    per_call = best_of(lambda: [run() for _ in range(calls)], 3) / calls
    checked = best_of(lambda: [kernel(a, a, out) for _ in range(calls // 10)], 3) / (calls // 10)
    launch = best_of(lambda: [run.launch(2) for _ in range(calls // 10)], 3) / (calls // 10)
    print(f"call: prepared {per_call * 1e6:.2f} us, with argument checks {checked * 1e6:.2f} us, "
          f"2-thread launch {launch * 1e6:.2f} us (64x32 add)")  # fmt: skip

    n = args.n
    engine = compile_module(parse_loop_level(matmul_kernels(n)), cache=False)
    rng = np.random.default_rng(0)
    x = rng.integers(-100, 100, (n, n)).astype(np.int32)
    y = rng.integers(-100, 100, (n, n)).astype(np.int32)
    expected = (x.astype(np.int64) @ y.astype(np.int64)).astype(np.int32)
    for name in ("ijk", "dot", "ikj"):
        c = np.zeros((n, n), np.int32)
        prepared = engine[f"mm_{name}"].prepare(x, np.ascontiguousarray(y.T) if name == "dot" else y, c)
        prepared()
        assert np.array_equal(c, expected), name
        repeat = 1 if name == "ijk" else args.repeat
        for threads in (1, 2):
            seconds = best_of(lambda: prepared.launch(threads), repeat)
            rate = n**3 / seconds / 1e9
            print(f"matmul {n}^3 {name}, {threads} thread(s): {seconds * 1e3:.1f} ms, {rate:.2f} GMAC/s")


if __name__ == "__main__":
    main()
