"""A whole compiled model run as one native program (`Program`): the calling thread runs every kernel call in
order, the split ones shared by chunks with the helper threads of one pool (`_Pool`), kept for the process. The
runner and the pool are LLVM IR in `program.ll`, compiled on first use (its object file cached, `jit.JitEngine`).

    program = Program([(prepared_call, split), ...], threads)
    program()                     # one run: two ctypes calls, one hand-off to the helpers
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from cvmc.runtime.engine.jit import PreparedCall

# --------------------------------------------------------------------------------------------------------------
# A whole program on several threads
# --------------------------------------------------------------------------------------------------------------

# A run of a whole program on several threads, without a barrier per kernel: the calling thread ("main") runs
# every call in order; the split ones (flag 1) are cut into chunks of units that main claims from the front and
# helper threads from the back (`claim`), and main goes on once the call's done-counter reaches its trip. A helper
# (another thread, `cvmc_program_helper`) claims chunks of each split call once the call before it is done, and leaves
# when the run has stopped. So a helper that the OS schedules late (the machine may be shared) never holds main
# up beyond the chunk it is running: main does whatever no helper has claimed, and 2 threads are never much
# slower than 1.
# prog, int64 words: [calls, stop, active helpers, sleepers, then per call: kernel entry, its argument table,
# trip, flags, chunk, next unit, units done]. A waiting thread spins a while, then sleeps on the counter it waits
# for (futex); whoever adds to a counter wakes its sleepers. `cvmc_program_begin` (main, before each run) waits
# for the helpers of the previous run to leave, then zeroes the counters and clears `stop`.
# Linux on x86-64 only (the futex system call's number, `pause`); elsewhere the split calls launch one by one.
_PROGRAM_WORDS, _CALL_WORDS = 4, 7
_PROGRAM_IR_FILE = Path(__file__).with_name("program.ll")


_PROGRAM_RUNNER: list[Any] = []  # [engine, begin, main, helper]: compiled once per process, on first use
_PROGRAM_LOCK = threading.Lock()
# A waiting thread spins this many time-stamp counter cycles (about 0.3 ms) before it sleeps: a thread that sleeps
# is woken by the other one, and the scheduler often wakes it onto the waker's CPU, where the two then share one
# core while the other idles (the main thread waiting for a helper's last chunk did, between two calls).
_WAIT_SPIN_CYCLES = 1_000_000
_POOL_SPIN_CYCLES = 3_000_000  # about 1 ms: a helper between two runs (`cvmc_pool_worker`)


class _Pool:
    """The helper threads of `Program` runs, started once and kept, each in native code for good
    (`cvmc_pool_worker`: it never takes Python's lock, which the calling thread holds between runs). A run
    publishes its program and `threads - 1` tickets, and retires it when done. One run has the pool at a time; a
    run that finds it taken (another thread is running a program) runs without helpers: the same result, later."""

    def __init__(self) -> None:
        self.words = np.zeros(6, dtype=np.int64)  # [generation, sleepers, program, tickets, inside, joined]
        self.busy = threading.Lock()
        self._grow_lock = threading.Lock()
        self.tids: list[int] = []  # the helpers' thread ids
        self.cpu = -1  # the CPU the helpers are kept off: the publishing thread's at the last publish

    @property
    def joined(self) -> int:
        """How many times a helper has entered a program (for tests)."""
        return int(self.words[5])

    def _work(self) -> None:
        self.tids.append(threading.get_native_id())
        _program_runner()[4](self.words.ctypes.data)  # never returns

    def publish(self, program: Program, helpers: int) -> None:
        """Hand `program` to `helpers` helper threads (the caller holds `busy`, and calls `retire` after the run)."""
        if len(self.tids) < helpers:
            with self._grow_lock:
                while len(self.tids) < helpers:
                    started = len(self.tids)
                    threading.Thread(target=self._work, name=f"cvmc-helper-{started}", daemon=True).start()
                    while len(self.tids) == started:  # its id, before it is kept off the CPU below
                        time.sleep(0)
        self._keep_off(_sched_getcpu())
        _program_runner()[5](self.words.ctypes.data, program.words.ctypes.data, helpers)

    def retire(self) -> None:
        """No program, no ticket; returns once no helper is inside the last one."""
        _program_runner()[6](self.words.ctypes.data)

    def _keep_off(self, cpu: int) -> None:
        """Keep the helpers off `cpu`, the calling thread's: a helper woken by it is otherwise often put on its
        CPU (the scheduler's wake-affinity), where the two share one core for milliseconds while another idles
        (seen after the model sat idle; bench/results/2026-11-28-comment-figures.md). One system call per helper
        when it moves."""
        if cpu == self.cpu or cpu < 0:
            return
        self.cpu = cpu
        allowed = os.sched_getaffinity(0)
        others = allowed - {cpu}
        for tid in list(self.tids):
            try:
                os.sched_setaffinity(tid, others or allowed)
            except OSError:  # a thread of another process's pool after a fork: not ours to move
                pass


def _sched_getcpu() -> int:
    """The CPU the calling thread runs on (-1 where unknown)."""
    fn = _LIBC_GETCPU[0] if _LIBC_GETCPU else None
    return int(fn()) if fn is not None else -1


def _libc_getcpu() -> Any:
    try:
        fn = ctypes.CDLL(None).sched_getcpu
    except (OSError, AttributeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_int, []
    return fn


_LIBC_GETCPU = [_libc_getcpu()]
_POOL = _Pool()


def _new_pool_after_fork() -> None:
    """A forked child has none of the parent's helper threads (and their thread ids may name other processes'
    threads there): it starts a pool of its own."""
    global _POOL
    _POOL = _Pool()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_pool_after_fork)


def program_ir() -> str:
    """The runner's and the pool's LLVM IR (`program.ll`, its word counts and spin cycles filled in): JIT-compiled
    here once per process, and compiled into the C-API library by `cvm-aot lib` (the same scheduler)."""
    return (_PROGRAM_IR_FILE.read_text().replace("POOL_SPIN_CYCLES", str(_POOL_SPIN_CYCLES))
            .replace("WAIT_SPIN_CYCLES", str(_WAIT_SPIN_CYCLES))
            .replace("PROGRAM_WORDS_PLUS_5", str(_PROGRAM_WORDS + 5))
            .replace("PROGRAM_WORDS", str(_PROGRAM_WORDS)).replace("CALL_WORDS", str(_CALL_WORDS)))


def _program_runner() -> list[Any]:
    with _PROGRAM_LOCK:
        if not _PROGRAM_RUNNER:
            from cvmc.runtime.engine.jit import JitEngine

            # cached like a model's code: a load, not a compile; the code generator alone, as MCJIT compiled it
            # before (the O3 IR pipeline would lengthen every cold process for code that does not need it)
            engine = JitEngine(program_ir(), optimize=False)
            one = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
            publish = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
            _PROGRAM_RUNNER.extend([engine, *(one(engine.address(f"cvmc_program_{name}"))
                                              for name in ("begin", "main", "helper")),
                                    one(engine.address("cvmc_pool_worker")),
                                    publish(engine.address("cvmc_pool_publish")),
                                    one(engine.address("cvmc_pool_retire"))])
        return _PROGRAM_RUNNER


def program_runner_available() -> bool:
    """Whether `Program` may run here: Linux on x86-64 (its futex system call and `pause`)."""
    import sys

    return sys.platform.startswith("linux") and os.uname().machine == "x86_64"


class Program:
    """Prepared calls run in order by this thread, the split ones shared with `threads - 1` helper threads that
    claim chunks of their units (`cvmc_program_main`, `cvmc_program_helper`): one hand-off to the helpers per
    run, none per kernel, and this thread never waits for a helper that has not started."""

    def __init__(self, calls: Sequence[tuple[PreparedCall, bool]], threads: int):
        self.calls = calls  # keeps the argument tables alive
        # no split call, nothing to share: no hand-off (waking a helper costs more than a small model's run)
        self.threads = threads if any(split for _, split in calls) else 1
        words = [len(calls), 1, 0, 0]
        for call, split in calls:
            trip = call.kernel.trip
            chunk = max(1, -(-trip // (16 * threads)))  # small chunks: the threads finish a call together
            words += [call.kernel.address, ctypes.addressof(call._table), trip, int(split), chunk, 0, 0]
        self.words = np.array(words, dtype=np.int64)
        _, self._begin, self._main, self._helper = _program_runner()[:4]
        self._pointer = self.words.ctypes.data

    def _help(self) -> None:
        """A helper's run from Python (tests: a helper that starts late, even after the runner is gone; a bound
        method keeps this program, its words and through its calls the compiled code, alive until it has left)."""
        self._helper(self._pointer)

    def __call__(self) -> None:
        self._begin(self._pointer)
        if self.threads > 1 and _POOL.busy.acquire(blocking=False):
            try:
                _POOL.publish(self, self.threads - 1)
                self._main(self._pointer)
            finally:
                _POOL.retire()
                _POOL.busy.release()
            return
        self._main(self._pointer)
