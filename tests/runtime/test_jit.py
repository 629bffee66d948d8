"""The JIT engine: object cache across processes, threaded launch, argument checks, call cost, lifetime."""

import gc
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from cvmc.codegen.llvm import emit_llvm, kernel_specs, parse_loop_level
from cvmc.errors import CVMLogicError
from cvmc.runtime.engine.jit import JitEngine, cache_key, compile_module, split_range

# out[i, j] = a[i, j] * 3 + b[j] over a 2-d scf.parallel: splittable into `rows` units.
AFFINE = """
func.func @affine(%a: memref<{rows}x{cols}xi32>, %b: memref<{cols}xi32>, %out: memref<{rows}x{cols}xi32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = arith.constant {rows} : index
  %c = arith.constant {cols} : index
  %three = arith.constant 3 : i32
  "scf.parallel"(%c0, %c0, %r, %c, %c1, %c1) <{{operandSegmentSizes = array<i32: 2, 2, 2, 0>}}> ({{
  ^bb0(%i: index, %j: index):
    %x = memref.load %a[%i, %j] : memref<{rows}x{cols}xi32>
    %y = memref.load %b[%j] : memref<{cols}xi32>
    %x3 = arith.muli %x, %three : i32
    %s = arith.addi %x3, %y : i32
    memref.store %s, %out[%i, %j] : memref<{rows}x{cols}xi32>
    scf.reduce
  }}) : (index, index, index, index, index, index) -> ()
  func.return
}}"""

# Not splittable (a sequential loop at the top level): one unit.
PREFIX_SUM = """
func.func @prefix_sum(%a: memref<64xi64>, %out: memref<64xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 64 : index
  %z = arith.constant 0 : i64
  %total = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (i64) {
    %x = memref.load %a[%i] : memref<64xi64>
    %s = arith.addi %acc, %x : i64
    memref.store %s, %out[%i] : memref<64xi64>
    scf.yield %s : i64
  }
  func.return
}"""


def affine(rows: int, cols: int) -> str:
    return AFFINE.format(rows=rows, cols=cols)


@pytest.fixture(scope="module")
def engine():
    return compile_module(parse_loop_level(affine(37, 50) + PREFIX_SUM), cache=False)


def affine_inputs(rows: int = 37, cols: int = 50):
    rng = np.random.default_rng(0)
    return (rng.integers(-1000, 1000, (rows, cols)).astype(np.int32),
            rng.integers(-1000, 1000, cols).astype(np.int32))  # fmt: skip


def test_split_range():
    assert split_range(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert split_range(2, 8) == [(0, 1), (1, 2)]
    assert split_range(0, 4) == [(0, 0)]
    for trip in range(0, 40):
        for parts in range(1, 6):
            ranges = split_range(trip, parts)
            assert ranges[0][0] == 0 and ranges[-1][1] == trip
            assert all(e == b for (_, e), (b, _) in zip(ranges, ranges[1:]))


def test_threaded_launch_gives_identical_results(engine):
    a, b = affine_inputs()
    expected = a * 3 + b
    kernel = engine["affine"]
    assert (kernel.trip, kernel.spec.splittable) == (37, True)
    for threads in (1, 2, 3, 8, 64):
        out = np.zeros_like(a)
        kernel(a, b, out, threads=threads)
        np.testing.assert_array_equal(out, expected, err_msg=f"{threads} threads")


def test_units_are_rows_and_ranges_are_clamped(engine):
    a, b = affine_inputs()
    out = np.zeros_like(a)
    run = engine["affine"].prepare(a, b, out)
    run.run_range(5, 9)
    np.testing.assert_array_equal(out[5:9], (a * 3 + b)[5:9])
    assert not out[:5].any() and not out[9:].any()
    run.run_range(-100, 1000)  # clamped to [0, trip)
    np.testing.assert_array_equal(out, a * 3 + b)


def test_unsplittable_kernel_runs_once(engine):
    a = np.arange(64, dtype=np.int64)
    out = np.zeros_like(a)
    kernel = engine["prefix_sum"]
    assert (kernel.trip, kernel.spec.splittable) == (1, False)
    run = kernel.prepare(a, out)
    run.run_range(1, 5)  # unit 0 not in range: nothing happens
    assert not out.any()
    run.launch(2)
    np.testing.assert_array_equal(out, np.cumsum(a))


def test_argument_checks(engine):
    a, b = affine_inputs()
    out = np.zeros_like(a)
    kernel = engine["affine"]
    with pytest.raises(CVMLogicError, match="expected 3 arrays, got 2"):
        kernel(a, b)
    with pytest.raises(CVMLogicError, match="argument 0: expected a int32 array of shape \\(37, 50\\), got dtype"):
        kernel(a.astype(np.int64), b, out)
    with pytest.raises(CVMLogicError, match="argument 1: .* got shape \\(49,\\)"):
        kernel(a, b[:49], out)
    with pytest.raises(CVMLogicError, match="argument 0: .* got shape \\(37, 50\\) and strides"):
        kernel(np.asfortranarray(a), b, out)
    frozen = out.copy()
    frozen.flags.writeable = False
    with pytest.raises(CVMLogicError, match="argument 2: .* read-only"):
        kernel(a, b, frozen)
    with pytest.raises(CVMLogicError, match="arguments 0 and 2 overlap"):
        kernel(out, b, out)  # arguments are noalias: an in-place call is refused
    kernel(a, b, out)
    np.testing.assert_array_equal(out, a * 3 + b)
    out[:] = 0
    kernel(a.view(np.uint32), b, out)  # unsigned 32-bit arrays are as good as signed ones, bit for bit
    np.testing.assert_array_equal(out, a * 3 + b)
    wide = np.full_like(a, 1 << 30)  # 3 * 2^30 wraps: the unsigned view reads the same bits
    kernel(wide.view(np.uint32), b, out)
    np.testing.assert_array_equal(out, (wide.astype(np.int64) * 3 + b).astype(np.uint32).view(np.int32))


def test_read_only_arguments_may_alias_and_interleaved_views_do_not_overlap():
    text = """
func.func @add(%x: memref<8xi32, strided<[2], offset: 0>>, %y: memref<8xi32, strided<[2], offset: 0>>,
               %out: memref<8xi32, strided<[2], offset: 1>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 8 : index
  "scf.parallel"(%c0, %n, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %a = memref.load %x[%i] : memref<8xi32, strided<[2], offset: 0>>
    %b = memref.load %y[%i] : memref<8xi32, strided<[2], offset: 0>>
    %s = arith.addi %a, %b : i32
    memref.store %s, %out[%i] : memref<8xi32, strided<[2], offset: 1>>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}"""
    buf = np.arange(16, dtype=np.int32)
    evens, odds = buf[0::2], buf[1::2]
    compile_module(parse_loop_level(text), cache=False)["add"](evens, evens, odds)
    np.testing.assert_array_equal(buf[1::2], 2 * buf[0::2])


def test_a_prepared_call_runs_one_python_frame_and_the_kernel(engine):
    """A prepared call costs about a microsecond because it runs no Python but its own frame: the kernel's ctypes
    arguments are made once, by `prepare` (no checks, no conversion per call). Counted with a profiler, not timed:
    a timing would fail on a loaded machine."""
    a, b = affine_inputs(4, 4)
    small = compile_module(parse_loop_level(affine(4, 4)), cache=False)
    out = np.zeros_like(a)
    run = small["affine"].prepare(a, b, out)
    events: list[tuple[str, str]] = []
    sys.setprofile(lambda frame, event, arg: events.append((event, frame.f_code.co_qualname)))
    try:
        run()
    finally:
        sys.setprofile(None)
    assert events[:2] == [("call", "PreparedCall.__call__"), ("return", "PreparedCall.__call__")]
    assert [e for e, _ in events[2:]] == ["c_call"]  # sys.setprofile(None)
    np.testing.assert_array_equal(out, a * 3 + b)


def test_kernels_keep_their_engine_alive():
    a, b = affine_inputs(4, 4)
    kernel = compile_module(parse_loop_level(affine(4, 4)), cache=False)["affine"]
    gc.collect()
    out = np.zeros_like(a)
    kernel(a, b, out)
    np.testing.assert_array_equal(out, a * 3 + b)


def test_cache_key_depends_on_the_ir():
    one, two = emit_llvm(parse_loop_level(affine(4, 4))), emit_llvm(parse_loop_level(affine(4, 5)))
    assert cache_key(str(one)) == cache_key(str(one)) != cache_key(str(two))


def test_cache_files_and_damaged_entries(tmp_path):
    module = parse_loop_level(affine(4, 4))
    llvm_module, specs = emit_llvm(module), kernel_specs(module)
    JitEngine(llvm_module, specs, cache=False, cache_dir=tmp_path)
    assert not list(tmp_path.iterdir())
    first = JitEngine(llvm_module, specs, cache_dir=tmp_path)
    (entry,) = tmp_path.iterdir()
    assert not first.cache_hit and entry.name == f"{first.key}.{first.kind}"  # a shared object or object files
    assert JitEngine(llvm_module, specs, cache_dir=tmp_path).cache_hit
    data = bytearray(entry.read_bytes())
    data[-100] ^= 0xFF  # a damaged object would crash LLVM: it is recompiled instead
    entry.write_bytes(bytes(data))
    again = JitEngine(llvm_module, specs, cache_dir=tmp_path)
    assert not again.cache_hit
    a, b = affine_inputs(4, 4)
    out = np.zeros_like(a)
    again["affine"](a, b, out)
    np.testing.assert_array_equal(out, a * 3 + b)
    assert JitEngine(llvm_module, specs, cache_dir=tmp_path).cache_hit


CACHE_SCRIPT = """
import json, sys
import numpy as np
from cvmc.codegen.llvm import emit_llvm, kernel_specs, parse_loop_level
from cvmc.runtime.engine import jit
from cvmc.runtime.engine.jit import JitEngine
module = parse_loop_level(sys.stdin.read())
if sys.argv[1:] == ["--warm"]:  # a hit compiles nothing: LLVM's code generation may not run
    jit.object_code = None
llvm_module, specs = emit_llvm(module), kernel_specs(module)
engine = JitEngine(llvm_module, specs)
a = np.arange(24 * 24, dtype=np.int32).reshape(24, 24)
b = np.arange(24, dtype=np.int32)
ok = True
for name in engine.kernels:
    out = np.zeros_like(a)
    engine[name](a, b, out)
    ok = ok and bool((out == a * 3 + b).all())
print(json.dumps({"hit": engine.cache_hit, "ok": ok}))
"""


def test_second_process_hits_the_cache(tmp_path):
    text = "\n".join(affine(24, 24).replace("@affine", f"@affine{i}") for i in range(20))
    env = dict(os.environ, CVMC_CACHE_DIR=str(tmp_path))

    def run(*args: str) -> dict:
        proc = subprocess.run([sys.executable, "-c", CACHE_SCRIPT, *args], input=text, env=env, capture_output=True,
                              text=True, check=True)  # fmt: skip
        return json.loads(proc.stdout)

    cold, warm = run(), run("--warm")  # the warm one has no code generator: it must load the cold one's objects
    assert cold["ok"] and warm["ok"]
    assert not cold["hit"] and warm["hit"]
