"""Threads run a compiled model as one native program (`jit.Program`): the calling thread runs every call, the split
ones shared by chunks with helper threads. Bit-exact with one thread whatever the helpers do: none, late, or
more than the work has chunks for; a helper that lags one run never touches the next."""

import threading
import time

import numpy as np
import pytest

from cvmc import CvmBuilder
from cvmc.runtime.devices.cpu import compile_graph
from cvmc.runtime.engine import jit
from cvmc.runtime.engine import program as native

pytestmark = pytest.mark.skipif(not jit.program_runner_available(), reason="Linux on x86-64 only")
RNG = np.random.default_rng(5)


def _model():
    """Two convolutions and a residual add: split calls (the convolutions' rows) and unsplit ones (small packs)."""
    b = CvmBuilder()
    x = b.create_input([1, 16, 24, 24], 8)
    y = x
    for i in range(2):
        w = b.create_param(RNG.integers(-127, 128, size=(16, 16, 3, 3)).astype(np.int32), 8, name=f"w{i}")
        y = b.relu(b.cvm_right_shift(b.conv2d(y, w, channels=16, kernel_size=(3, 3), padding=(1, 1),
                                              use_bias=False), precision=8, shift_bit=10))
    y = b.elemwise_add(y, x)
    return b.graph([y]), RNG.integers(-127, 128, size=(1, 16, 24, 24)).astype(np.int32)


@pytest.mark.parametrize("threads", [2, 3, 5])
def test_threads_give_one_threads_bits(monkeypatch, threads):
    graph, x = _model()
    one, many = compile_graph(graph, threads=1, cache=False), compile_graph(graph, threads=threads, cache=False)
    assert many.native is not None and sum(split for _, split in many.calls) >= 2
    shared = [(c.kernel.name, split) for c, split in many.native.calls]
    # the packs (16 x 24 x 24 = 9216 units of work) are split in the native program alone
    assert ("pack", True) in shared and ("pack", False) in [(c.kernel.name, s) for c, s in many.calls]
    monkeypatch.setattr(jit, "program_runner_available", lambda: False)  # elsewhere: a launch per split kernel
    launched = compile_graph(graph, threads=threads, cache=False)
    assert launched.native is None
    want = one(x)[0]
    for _ in range(5):
        np.testing.assert_array_equal(many(x)[0], want)
        np.testing.assert_array_equal(launched(x)[0], want)


def _wait_until(condition, what: str) -> None:
    """Wait for another thread's step (a hand-off, not a timing guess: the deadline is only there so that a broken
    hand-off fails instead of hanging the suite)."""
    deadline = time.monotonic() + 120
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.001)


@pytest.mark.parametrize("when", ["inside before the run", "after the run", "never"])
def test_early_late_or_missing_helpers_change_nothing(monkeypatch, when):
    """A helper that is inside the program before its runner starts (it claims what it can of each split call and
    waits for the calls before it), one that starts only after the run has ended (it sees `stop` and
    leaves), or none (the caller does it all): the same bits. Each order is forced, not hoped for."""
    graph, x = _model()
    one, two = compile_graph(graph, threads=1, cache=False), compile_graph(graph, threads=2, cache=False)
    want = one(x)[0]
    started: list[threading.Thread] = []
    pending: list = []

    def publish(program, helpers):
        if when == "inside before the run":  # the runner starts once the helper is counted in `active`
            started.append(threading.Thread(target=program._help))
            started[-1].start()
            helper = started[-1]  # inside (counted in `active`), or already gone having run every call it could
            _wait_until(lambda: program.words[2] == 1 or not helper.is_alive(), "the helper entered the program")
        elif when == "after the run":
            pending.extend([program._help] * helpers)

    monkeypatch.setattr(native._POOL, "publish", publish)
    for _ in range(4):
        np.testing.assert_array_equal(two(x)[0], want)
        for helper in pending:  # the run is over: the helper finds `stop` set and leaves at once
            helper()
        pending.clear()
    for t in started:
        t.join()
    assert len(started) == (4 if when == "inside before the run" else 0)
    assert two.native.words[2] == 0  # every helper has left


def test_a_helper_that_starts_after_its_runner_is_gone_finds_its_program_alive(monkeypatch):
    import gc

    graph, x = _model()
    pending: list = []
    # the helpers start only below
    monkeypatch.setattr(native._POOL, "publish", lambda program, helpers: pending.extend([program._help] * helpers))
    two = compile_graph(graph, threads=2, cache=False)
    want = two(x)[0].copy()
    np.testing.assert_array_equal(compile_graph(graph, threads=1, cache=False)(x)[0], want)
    del two
    gc.collect()
    for helper in pending:  # the program, its tables and its code are still there: the helper sees `stop`
        helper()
    assert pending and pending[0].__self__.words[2] == 0


def test_helpers_are_woken_only_for_enough_split_work(monkeypatch):
    """A program shares with helpers when its split calls hold `cpu.SPLIT_WORK` of work in all, at the bound, and
    runs alone one past it: waking a helper costs more than a small model's whole run."""
    from cvmc.runtime.devices import cpu

    graph, x = _model()
    want = compile_graph(graph, threads=1, cache=False)(x)[0]
    probe = compile_graph(graph, threads=2, cache=False)
    shared = sum(call.work for (_, split), call in zip(probe.native.calls, probe.program.calls) if split)
    assert shared >= cpu.SPLIT_WORK and probe.native.threads == 2
    for bound, threads in ((shared, 2), (shared + 1, 1)):
        monkeypatch.setattr(cpu, "SPLIT_WORK", bound)
        run = compile_graph(graph, threads=2, cache=False)
        assert run.native.threads == threads
        assert any(split for _, split in run.native.calls)  # the same calls are split either way
        np.testing.assert_array_equal(run(x)[0], want)


def test_the_pools_helpers_join_runs_and_a_run_that_finds_the_pool_taken_runs_alone(monkeypatch):
    """The pool's threads, started once, take the runs' tickets (`program._Pool`); once a run is over no helper is
    inside its program; while another run holds the pool, a run goes on without helpers, with the same bits.
    Each run starts only once a pool thread has joined it (a hand-off: with a free core a helper joins by itself,
    but on a loaded machine the run may end first, so the test forces the order instead of hoping for it)."""
    graph, x = _model()
    want = compile_graph(graph, threads=1, cache=False)(x)[0]
    two = compile_graph(graph, threads=2, cache=False)
    publish = native._POOL.publish

    def publish_then_wait_for_a_helper(program, helpers):
        joined = native._POOL.joined
        publish(program, helpers)
        _wait_until(lambda: native._POOL.joined > joined, "a pool thread joined the run")

    monkeypatch.setattr(native._POOL, "publish", publish_then_wait_for_a_helper)
    joined = native._POOL.joined
    for _ in range(5):
        np.testing.assert_array_equal(two(x)[0], want)
        assert native._POOL.words[4] == 0 and native._POOL.words[2] == 0  # nobody inside, nothing published
    assert native._POOL.joined == joined + 5 and len(native._POOL.tids) >= 1  # one ticket a run: one helper joined each
    monkeypatch.setattr(native._POOL, "publish", publish)
    generation = int(native._POOL.words[0])
    with native._POOL.busy:  # another thread's run holds the pool: these publish nothing
        for _ in range(3):
            np.testing.assert_array_equal(two(x)[0], want)
    assert int(native._POOL.words[0]) == generation and native._POOL.joined == joined + 5


_COUNT_IR = """
define void @count(ptr %tab, i64 %b, i64 %e) {
  %n = sub i64 %e, %b
  %a = atomicrmw add ptr %tab, i64 %n seq_cst, align 8
  %e2 = mul i64 %e, %e
  %b2 = mul i64 %b, %b
  %d = sub i64 %e2, %b2
  %p1 = getelementptr i64, ptr %tab, i64 1
  %s = atomicrmw add ptr %p1, i64 %d seq_cst, align 8
  ret void
}
"""


@pytest.mark.parametrize("trip", [(1 << 32) - 1, 1 << 32])
def test_the_claims_cover_every_unit_once_at_the_two_ended_bound_and_one_past(trip):
    """Main claims units from the front and helpers from the back, both counts in one word (32 bits each), below
    2^32 units; from 2^32 every thread claims from the front. Either way the claimed ranges partition [0, trip):
    their lengths sum to trip, and the sum of e^2 - b^2 over them is trip^2 (modulo 2^64: no gap, no overlap)."""
    import ctypes
    from types import SimpleNamespace

    import llvmlite.binding as llvm

    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(_COUNT_IR), jit._target_machine())
    engine.finalize_object()
    table = (ctypes.c_int64 * 2)()
    call = SimpleNamespace(kernel=SimpleNamespace(address=engine.get_function_address("count"), trip=trip),
                           _table=table)
    program = jit.Program([(call, True)], 2)
    for _ in range(3):
        table[0] = table[1] = 0
        program()
        assert (table[0], table[1]) == (trip, ctypes.c_int64(trip * trip % (1 << 64)).value)


def test_a_forked_child_runs_with_a_pool_of_its_own():
    """The parent's helper threads do not exist in a child: the child starts its own and gets the same bits."""
    import os

    graph, x = _model()
    two = compile_graph(graph, threads=2, cache=False)
    want = two(x)[0].copy()
    assert native._POOL.tids
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 when its runs equal the parent's, through a pool of its own
        ok = False
        try:
            ok = native._POOL.tids == [] and all(np.array_equal(two(x)[0], want) for _ in range(3))
            ok = ok and len(native._POOL.tids) >= 1
        finally:
            os.write(write, b"1" if ok else b"0")
            os._exit(0)
    os.close(write)
    assert os.read(read, 1) == b"1"
    os.waitpid(pid, 0)
