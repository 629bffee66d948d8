"""A large module compiles in parts, on several threads at once: the groups, the bound, the bits, the cache."""

import threading

import llvmlite.binding as llvm
import numpy as np
import pytest
from conftest import CVM_CORPUS

import cvmc
from cvmc.codegen.llvm import emit_llvm, kernel_specs, parse_loop_level
from cvmc.errors import CVMLogicError, CVMRuntimeError
from cvmc.runtime.engine import jit, llvm_compile
from cvmc.runtime.engine.cache import open_cache
from cvmc.runtime.engine.jit import (
    PART_CHARS,
    JitEngine,
    cache_key,
    compile_threads,
    object_code,
    partition,
    split_module,
)

# out[i, j] = a[i, j] * K + b[j], one kernel per K: a module of many exported kernels.
AFFINE = """
func.func @affine_{k}(%a: memref<24x24xi32>, %b: memref<24xi32>, %out: memref<24x24xi32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 24 : index
  %m = arith.constant {k} : i32
  "scf.parallel"(%c0, %c0, %n, %n, %c1, %c1) <{{operandSegmentSizes = array<i32: 2, 2, 2, 0>}}> ({{
  ^bb0(%i: index, %j: index):
    %x = memref.load %a[%i, %j] : memref<24x24xi32>
    %y = memref.load %b[%j] : memref<24xi32>
    %xm = arith.muli %x, %m : i32
    %s = arith.addi %xm, %y : i32
    memref.store %s, %out[%i, %j] : memref<24x24xi32>
    scf.reduce
  }}) : (index, index, index, index, index, index) -> ()
  func.return
}}"""


def kernels(count: int):
    module = parse_loop_level("".join(AFFINE.format(k=k) for k in range(2, 2 + count)))
    return str(emit_llvm(module)), kernel_specs(module)


@pytest.fixture(scope="module")
def large():
    """IR of 28 kernels: over 3 x PART_CHARS characters."""
    text, specs = kernels(28)
    assert 3 * PART_CHARS <= len(text) < 4 * PART_CHARS
    return text, specs


def check(engine: JitEngine, count: int) -> None:
    a = np.arange(24 * 24, dtype=np.int32).reshape(24, 24) - 300
    b = np.arange(24, dtype=np.int32) * 7
    for k in range(2, 2 + count):
        out = np.zeros_like(a)
        engine[f"affine_{k}"](a, b, out)
        np.testing.assert_array_equal(out, a * k + b)


def exported_function(name: str) -> str:
    return f'define void @"{name}"(ptr %p) {{\n  store i32 1, ptr %p\n  ret void\n}}\n'


def padded(body: str, length: int) -> str:
    """`body` and a comment line that brings the text to `length` characters."""
    pad = length - len(body) - 2
    assert pad >= 0
    return body + ";" + "x" * pad + "\n"


@pytest.mark.parametrize(("length", "groups"), [(2 * PART_CHARS - 1, 1), (2 * PART_CHARS, 2),
                                              (3 * PART_CHARS - 1, 2), (3 * PART_CHARS, 3)])  # fmt: skip
def test_one_group_per_part_chars_at_the_bound_and_one_past_it(length, groups):
    text = padded("".join(exported_function(f"k{i}") for i in range(4)), length)
    assert len(text) == length
    assert len(partition(text, 8)) == groups


def test_groups_never_exceed_the_threads_nor_the_exported_functions():
    text = padded("".join(exported_function(f"k{i}") for i in range(3)), 10 * PART_CHARS)
    assert len(partition(text, 1)) == 1
    assert len(partition(text, 2)) == 2
    assert len(partition(text, 8)) == 3  # three functions to share out


def test_every_exported_function_in_exactly_one_group_and_the_same_groups_again(large):
    text, specs = large
    assert len(partition(text, 4)) == 3  # one group per PART_CHARS at most
    groups = partition(text, 3)
    assert len(groups) == 3
    names = sorted(n for g in groups for n in g)
    assert names == sorted(s.symbol for s in specs.values())  # internal bodies are in none
    assert partition(text, 4) == groups
    sizes = [len(g) for g in groups]
    assert max(sizes) - min(sizes) <= 1  # kernels of one size: shared out evenly


def test_a_group_counts_the_functions_it_calls_once():
    def body(n: int) -> str:
        return "  store i32 1, ptr %p\n" * n

    helper = f'define internal void @"helper"(ptr %p) {{\n{body(400)}  ret void\n}}\n'
    calls = 'define void @"{n}"(ptr %p) {{\n  call void @"helper"(ptr %p)\n  ret void\n}}\n'
    big = f'define void @"big"(ptr %p) {{\n{body(560)}  ret void\n}}\n'
    text = padded(big + "".join(calls.format(n=n) for n in "abc") + helper, 4 * PART_CHARS)
    # big (1.4 helpers) first, then a, b and c, which share the helper: counted once, c still joins a and b;
    # counted for each caller, it would join big
    assert partition(text, 2) == [["big"], ["a", "b", "c"]]


def test_the_parts_give_the_bits_of_one_part(large, monkeypatch):
    text, specs = large
    monkeypatch.setenv("CVMC_COMPILE_THREADS", "1")
    one = JitEngine(text, specs, cache=False)
    monkeypatch.setenv("CVMC_COMPILE_THREADS", "3")
    three = JitEngine(text, specs, cache=False)
    assert (one.parts, three.parts) == (1, 3)
    check(one, 28)
    check(three, 28)


def test_each_part_holds_its_own_kernels_and_no_other(large):
    text, _ = large
    groups = partition(text, 3)
    exported = {name for g in groups for name in g}
    modules = split_module(text, 3)
    assert len(modules) == 3 and sum(map(len, modules)) < len(text) + 3 * 200  # the header thrice, no more
    for group, module in zip(groups, modules, strict=True):
        defined = {fn.name for fn in llvm.parse_assembly(module).functions if not fn.is_declaration}
        assert defined & exported == set(group)
        assert {f"__cvmc_body.{name}" for name in group} <= defined  # with the bodies they call...
        assert len(defined) == 2 * len(group)  # ...and none of the others'


def test_an_exported_function_another_group_calls_is_internal_there():
    callee = exported_function("callee").replace("  ret", "  store i32 2, ptr %p\n" * 300 + "  ret")
    caller = 'define void @"caller"(ptr %p) {\n  call void @"callee"(ptr %p)\n  ret void\n}\n'
    text = padded(callee + caller, 2 * PART_CHARS)
    assert partition(text, 2) == [["caller"], ["callee"]]  # the caller weighs both
    with_caller, with_callee = split_module(text, 2)
    assert 'define void @"caller"' in with_caller and 'define internal void @"callee"' in with_caller
    assert 'define void @"callee"' in with_callee and '@"caller"' not in with_callee
    objects = object_code(text, 2)
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), jit._target_machine())
    for obj in objects:
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    assert engine.get_function_address("callee") and engine.get_function_address("caller")


def test_a_small_module_is_one_part_as_it_is(large):
    text, _ = large
    small = text[: 2 * PART_CHARS - 1]
    assert split_module(small, 8) == [small]
    assert split_module(text, 1) == [text]


def test_without_the_unlocked_calls_the_parts_compile_under_llvmlites_lock(large, monkeypatch):
    text, specs = large
    monkeypatch.setattr(llvm_compile, "_unlocked_llvm", lambda: None)
    monkeypatch.setenv("CVMC_COMPILE_THREADS", "2")
    engine = JitEngine(text, specs, cache=False)
    assert engine.parts == 2
    check(engine, 28)


def test_a_part_without_a_thread_compiles_on_the_calling_one(large, monkeypatch):
    text, specs = large

    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    monkeypatch.setenv("CVMC_COMPILE_THREADS", "3")
    engine = JitEngine(text, specs, cache=False)
    assert engine.parts == 3
    check(engine, 28)


def test_compiles_on_several_python_threads_at_once(large):
    text, specs = large
    objects: list[list[bytes]] = []
    errors: list[BaseException] = []

    def compile_it():
        try:
            objects.append(object_code(text, 3))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=compile_it) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(objects) == 3 and all(len(o) == 3 for o in objects)
    assert objects[0] == objects[1] == objects[2]  # the same object files, whatever ran beside them


def test_invalid_ir_in_parts_is_a_runtime_error():
    text = padded("".join(exported_function(f"k{i}") for i in range(4)) + "define void @bad() {\n  ret i32 0\n}\n",
                  3 * PART_CHARS)  # fmt: skip
    with pytest.raises(CVMRuntimeError, match="invalid LLVM IR"):
        object_code(text, 3)


def test_the_cache_keeps_every_part(large, tmp_path, monkeypatch):
    text, specs = large
    monkeypatch.setenv("CVMC_COMPILE_THREADS", "2")
    cold = JitEngine(text, specs, cache_dir=tmp_path)
    monkeypatch.setenv("CVMC_COMPILE_THREADS", "1")  # a hit does not depend on the thread count
    warm = JitEngine(text, specs, cache_dir=tmp_path)
    assert (cold.cache_hit, warm.cache_hit, warm.parts) == (False, True, 2)
    check(warm, 28)


@pytest.mark.parametrize("entry", [b"", b"\x7fELF" + bytes(100), jit._OBJECTS_MAGIC, jit._OBJECTS_MAGIC + bytes(4),
                                   jit._pack_objects([b"abc", b"de"])[:-1], jit._pack_objects([b"abc", b"de"]) + b"!",
                                   jit._pack_objects([b"abc", b""])])
def test_an_authentic_entry_of_another_form_is_compiled_again(tmp_path, entry):
    text, specs = kernels(2)
    store = open_cache(tmp_path)
    assert store is not None
    store.put(cache_key(text), "o", entry)
    engine = JitEngine(text, specs, cache_dir=tmp_path)
    assert not engine.cache_hit
    check(engine, 2)


def test_object_entries_round_trip():
    for objects in ([b"x"], [b"abc", b"defg"], [bytes(range(256))] * 5):
        assert jit._unpack_objects(jit._pack_objects(objects)) == objects


@pytest.mark.parametrize(("value", "ok"), [("0", False), ("1", True), ("64", True), ("65", False), ("two", False)])
def test_compile_threads_from_the_environment(monkeypatch, value, ok):
    monkeypatch.setenv("CVMC_COMPILE_THREADS", value)
    if ok:
        assert compile_threads() == int(value)
    else:
        with pytest.raises(CVMLogicError, match=r"CVMC_COMPILE_THREADS.*\[1, 64\]"):
            compile_threads()


def test_the_bench_model_in_one_part_and_in_two_gives_the_runtimes_bits(monkeypatch, tmp_path):
    case = CVM_CORPUS / "model_bench_resnet_000"
    x = np.frombuffer((case / "input_i32.bin").read_bytes(), "<i4").reshape(1, 3, 64, 64)
    expected = np.frombuffer((case / "expected.bin").read_bytes(), "<i4").reshape(1, 10)
    outputs = {}
    for threads in ("1", "2"):
        monkeypatch.setenv("CVMC_COMPILE_THREADS", threads)
        monkeypatch.setenv("CVMC_CACHE_DIR", str(tmp_path / threads))
        model = cvmc.load_model(case / "model.json", case / "params.bin", device="cpu")
        assert (model.stats["cache_hit"], model.stats["llvm_parts"]) == (False, int(threads))
        outputs[threads] = model.run(x)[0]
    np.testing.assert_array_equal(outputs["1"], expected)
    np.testing.assert_array_equal(outputs["2"], expected)


@pytest.mark.parametrize(("cpus", "threads"), [(1, 1), (2, 2), (8, 8), (9, 8)])
def test_compile_threads_default_to_the_cpus_at_most_8(monkeypatch, cpus, threads):
    monkeypatch.delenv("CVMC_COMPILE_THREADS", raising=False)
    monkeypatch.setattr(jit.os, "sched_getaffinity", lambda pid: set(range(cpus)))
    assert compile_threads() == threads


FLOAT_LOOP = """
define void @axpy(ptr noalias %a, ptr noalias %c, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %pa = getelementptr float, ptr %a, i64 %i
  %pc = getelementptr float, ptr %c, i64 %i
  %x = load float, ptr %pa
  %z = load float, ptr %pc
  %m = fmul float %x, 3.0
  %s = fadd float %m, %z
  store float %s, ptr %pc
  %i1 = add i64 %i, 1
  %d = icmp eq i64 %i1, %n
  br i1 %d, label %exit, label %loop
exit:
  ret void
}
"""


@pytest.mark.parametrize("cpu", ["emeraldrapids", "znver5"])
def test_avx512_cpus_vectorize_with_512_bit_registers(cpu):
    """LLVM tunes Intel's AVX-512 CPUs to prefer 256-bit vectors; cvmc's target machines switch that off (a
    tuning flag: no result and no instruction set changes), so a float loop runs in zmm on Intel as on AMD."""
    features = "+avx2,+fma,+avx512f,+avx512bw,+avx512vl,+avx512dq"
    llvm_compile.host_target()  # initializes LLVM's native target
    target = llvm.Target.from_triple(llvm.get_process_triple())

    def asm(features: str) -> str:
        tm = target.create_target_machine(cpu=cpu, features=features, opt=3)
        return tm.emit_assembly(llvm_compile._optimized(FLOAT_LOOP, tm))

    assert llvm_compile.full_width(features) == features + ",-prefer-256-bit"
    assert "zmm" in asm(llvm_compile.full_width(features))
    assert llvm_compile.full_width("+avx2,-avx512f") == "+avx2,-avx512f"  # no AVX-512: nothing to switch
    if cpu == "emeraldrapids":
        assert "zmm" not in asm(features)  # LLVM's own tuning, the reason for the switch
