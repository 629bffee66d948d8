"""The known-answer check of a tier (`runtime.devices.known_answer.trusted_target`): the first build for a tier's
kernels in a process runs a fixed model through them and through the reference; a planted wrong kernel makes the tier
refused, with one warning naming it, and the model is built for the next tier down with the reference's bytes.
Warm, the check model's kernels come from its sealed cache entry: nothing is lowered or compiled, and the kernels
still run in every process."""

import warnings

import hosts
import numpy as np
import pytest
from llvmlite import ir

from cvmc.codegen import llvm_x86
from cvmc.codegen.llvm_module import ModuleEmitter
from cvmc.passes.loops.target import Target
from cvmc.runtime.devices import cpu
from cvmc.runtime.devices import known_answer as ka
from cvmc.runtime.devices.cpu import compile_graph
from cvmc.runtime.driver import target as host
from cvmc.runtime.engine import llvm_compile
from cvmc.runtime.references.cvm import run_graph

needs_vnni = pytest.mark.skipif(not hosts.real_has("avx512-vnni"), reason="the host CPU has no AVX512-VNNI")
needs_avx2 = pytest.mark.skipif(not hosts.real_has("avx2"), reason="the host CPU has no AVX2")


@pytest.fixture(autouse=True)
def _fresh(monkeypatch, tmp_path):
    monkeypatch.setattr(ka, "_CHECKED", {})  # a process that has checked nothing yet
    monkeypatch.setenv("CVMC_CACHE_DIR", str(tmp_path / "cache"))  # and a cache without the check's kernels
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for k in ("CVMC_ISA", "CVMC_VNNI", "CVMC_AVX2", "CVMC_MMK"):
        monkeypatch.delenv(k, raising=False)


def _plant_vnni(monkeypatch):
    """`vpdpbusd` that adds one to every lane: a wrong instruction of the avx512-vnni tier alone."""
    right = llvm_x86.dpbusd

    def wrong(mod, b, acc, xs, ws, emulated):
        out = right(mod, b, acc, xs, ws, emulated)
        return out if emulated else b.add(out, ir.Constant(out.type, [1] * 16))

    monkeypatch.setattr(llvm_x86, "dpbusd", wrong)


def _plant_avx2(monkeypatch):
    """AVX2's `vpmaddubsw` (which only the avx2 tier's micro-kernel calls) adding one to every pair's sum."""
    right = ModuleEmitter.function

    def wrong(self, name, ret, args, attrs=()):
        if name != "llvm.x86.avx2.pmadd.ub.sw":
            return right(self, name, ret, args, attrs)
        existing = self.module.globals.get("planted")
        if existing is not None:
            return existing
        fn = ir.Function(self.module, ir.FunctionType(ret, args), "planted")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.ret(b.add(b.call(right(self, name, ret, args, attrs), list(fn.args)), ir.Constant(ret, [1] * 16)))
        return fn

    monkeypatch.setattr(ModuleEmitter, "function", wrong)


def _model_bytes_are_the_references():
    graph, x = ka.known_answer_graph(), ka.known_answer_input()
    got = compile_graph(graph, cache=False)(x)  # the host's target, as every load gets it
    for g, w in zip(got, run_graph(graph, x), strict=True):
        np.testing.assert_array_equal(g, w)


def test_the_host_tiers_pass_and_are_checked_once():
    top = host.detect_target()
    assert ka.trusted_target(top) == top
    assert set(ka._CHECKED) == ({top.isa} if top.isa != "generic" else set()) and all(ka._CHECKED.values())
    for t in (Target("avx512-vnni", emulated=True), Target("generic"), Target(gpu="sm_90")):  # nothing to check
        assert ka.trusted_target(t) == t
    assert len(ka._CHECKED) <= 1


@needs_vnni
def test_a_wrong_vnni_kernel_disables_the_tier_with_one_warning(monkeypatch):
    _plant_vnni(monkeypatch)
    monkeypatch.setenv("CVMC_ISA", "avx512-vnni")  # the host's tier at most VNNI (AMX's check reads vpdpbusd too)
    with pytest.warns(RuntimeWarning, match="the avx512-vnni kernels gave other bytes than the reference") as seen:
        assert ka.trusted_target(Target("avx512-vnni")) == Target("avx2")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning: the answer is kept for the process
        assert ka.trusted_target(Target("avx512-vnni")) == Target("avx2")
        _model_bytes_are_the_references()
    assert len(seen) == 1 and ka._CHECKED == {"avx512-vnni": False, "avx2": True}
    assert str(ka.checked_jit_target()) == "x86:avx2"


@needs_avx2
def test_a_wrong_avx2_kernel_disables_the_tier(monkeypatch):
    _plant_avx2(monkeypatch)
    monkeypatch.setenv("CVMC_VNNI", "0")  # the host's tier at most avx2
    with pytest.warns(RuntimeWarning, match="the avx2 kernels gave other bytes") as seen:
        assert ka.checked_jit_target() == Target("generic")
    _model_bytes_are_the_references()
    assert len(seen) == 1 and ka._CHECKED == {"avx2": False}


@needs_vnni
def test_a_tier_refused_falls_through_every_wrong_tier(monkeypatch):
    _plant_vnni(monkeypatch)
    _plant_avx2(monkeypatch)
    monkeypatch.setenv("CVMC_ISA", "avx512-vnni")  # on an AMX host, amx would be refused first (it uses vpdpbusd too)
    with pytest.warns(RuntimeWarning) as seen:
        assert ka.checked_jit_target() == Target("generic")
    _model_bytes_are_the_references()
    assert [str(w.message).split(" kernels")[0] for w in seen] == ["cvmc: the avx512-vnni", "cvmc: the avx2"]


def test_an_explicit_target_is_not_checked(monkeypatch):
    _plant_vnni(monkeypatch)
    assert ka.checked_jit_target(Target("avx512-vnni", emulated=True)) == Target("avx512-vnni", emulated=True)
    assert ka._CHECKED == {}


def _no_compile(monkeypatch):
    """Lowering and LLVM's optimizer and code generator made to fail: what runs after this loads, or fails."""
    def refuse(*args, **kwargs):
        raise AssertionError("compiled while warm")

    monkeypatch.setattr(cpu, "lower_to_llvm", refuse)
    monkeypatch.setattr(llvm_compile, "_optimized", refuse)


def test_a_warm_check_compiles_nothing_and_still_runs_the_kernels(monkeypatch):
    top = host.detect_target()
    if top.isa == "generic":
        pytest.skip("the host's tier (generic) has no kernels of its own to check")
    assert ka.trusted_target(top) == top  # cold: compiles the check model and writes its entry
    monkeypatch.setattr(ka, "_CHECKED", {})  # a second process
    _no_compile(monkeypatch)
    runs = []
    call = cpu.CpuRunner.__call__
    monkeypatch.setattr(cpu.CpuRunner, "__call__", lambda self, data: runs.append(1) or call(self, data))
    assert ka.trusted_target(top) == top
    assert runs == [1] and ka._CHECKED == {top.isa: True}


@needs_avx2
def test_a_warm_check_refuses_a_tier_whose_kernels_now_differ(monkeypatch):
    """The warm check compares the kernels' bytes on this CPU with the reference's kept in the entry: kernels
    that give other bytes (here, a planted output) refuse the tier as a cold check does."""
    monkeypatch.setenv("CVMC_VNNI", "0")
    assert ka.checked_jit_target() == Target("avx2")
    monkeypatch.setattr(ka, "_CHECKED", {})
    _no_compile(monkeypatch)
    call = cpu.CpuRunner.__call__

    def wrong(self, data):
        heads = call(self, data)
        heads[0].reshape(-1)[0] += 1
        return heads

    monkeypatch.setattr(cpu.CpuRunner, "__call__", wrong)
    with pytest.warns(RuntimeWarning, match="the avx2 kernels gave other bytes"):
        assert ka.checked_jit_target() == Target("generic")


def test_choosing_a_target_compiles_nothing():
    """`runtime.driver.target` picks the tier and reads the environment; it imports none of the compiler (the check
    is `known_answer`'s, called by the devices)."""
    import subprocess
    import sys

    code = ("import sys; from cvmc.runtime.driver.target import jit_target; jit_target(); "
            "print(sorted(m for m in sys.modules if m.startswith(('cvmc.runtime.devices.cpu', "
            "'cvmc.runtime.driver.compile', 'cvmc.runtime.devices.known_answer', 'xdsl'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_cold_check_runs_beside_the_models_compile(monkeypatch):
    """With two compile threads and a cold check, the device builds for the detected tier while the check's
    kernels compile on a thread of its own; the answer is recorded and the model is exact."""
    top = host.detect_target()
    if top.isa == "generic":
        pytest.skip("the host's tier (generic) has no kernels of its own to check")
    monkeypatch.setenv("CVMC_COMPILE_THREADS", "2")
    started = []
    start = ka._start_check

    def record(isa, background=False):
        runs, threaded = start(isa, background)
        started.append((isa, threaded))
        return runs, threaded

    monkeypatch.setattr(ka, "_start_check", record)
    graph, x = ka.known_answer_graph(), ka.known_answer_input()
    runner = compile_graph(graph)
    assert started == [(top.isa, True)] and ka._CHECKED == {top.isa: True}
    for g, w in zip(runner(x), run_graph(graph, x), strict=True):
        np.testing.assert_array_equal(g, w)


@needs_avx2
def test_a_tier_refused_by_a_check_beside_the_compile_builds_the_model_again(monkeypatch):
    _plant_avx2(monkeypatch)
    monkeypatch.setenv("CVMC_VNNI", "0")
    monkeypatch.setenv("CVMC_COMPILE_THREADS", "2")
    graph, x = ka.known_answer_graph(), ka.known_answer_input()
    with pytest.warns(RuntimeWarning, match="the avx2 kernels gave other bytes") as seen:
        runner = compile_graph(graph)  # built for avx2 first (the planted kernel), then for generic
    assert len(seen) == 1 and ka._CHECKED == {"avx2": False}
    for g, w in zip(runner(x), run_graph(graph, x), strict=True):
        np.testing.assert_array_equal(g, w)


def test_one_compile_thread_checks_first(monkeypatch):
    monkeypatch.setenv("CVMC_COMPILE_THREADS", "1")
    started = []
    start = ka._start_check

    def record(isa, background=False):
        runs, threaded = start(isa, background)
        started.append(threaded)
        return runs, threaded

    monkeypatch.setattr(ka, "_start_check", record)
    compile_graph(ka.known_answer_graph())
    assert started and True not in started
