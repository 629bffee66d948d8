"""How many threads a cpu run uses: one rule for the JIT (`cpu.compile_graph`), `load_model` and the C API of
`cvm-aot` (`capi.c`'s `threads_wanted` is the same rule in C).

    default_threads()      # $CVMC_THREADS, else the physical cores; at most the CPUs this process may use

A count the caller passes (`load_model(..., threads=N)`, `compile_graph(graph, threads=N)`) is taken as it is: the
caller insists. The default and `$CVMC_THREADS` are capped at the CPUs of this process's affinity mask: threads
beyond them only wait for each other (issue 30; the figures: bench/results/2026-11-28-comment-figures.md).
"""

from __future__ import annotations

import os

MAX_THREADS = 256


def env_count(variable: str, upper: int) -> int | None:
    """`$variable` as an integer in [1, upper], None when it is unset or empty; anything else is a CVMLogicError."""
    env = os.environ.get(variable)
    if not env:
        return None
    try:
        n = int(env)
    except ValueError:
        n = 0
    if not 1 <= n <= upper:
        from cvmc.errors import CVMLogicError

        raise CVMLogicError(f"expected ${variable} to be an integer in [1, {upper}], got {env!r}")
    return n


def usable_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity mask; every CPU where the system cannot say)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def physical_cores() -> int:
    """The physical cores this process may run on (hyper-threads of one core count once): the sibling lists of
    /sys for the CPUs of the affinity mask; the CPU count where /sys does not say."""
    cores = set()
    for c in usable_cpus():
        try:
            with open(f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list") as f:
                cores.add(f.read().strip())
        except OSError:
            cores.add(str(c))
    return max(1, len(cores))


def default_threads() -> int:
    """`$CVMC_THREADS` (an integer in [1, MAX_THREADS], else a CVMLogicError), else the physical cores this process
    may use; either way at most the CPUs it may use."""
    n = env_count("CVMC_THREADS", MAX_THREADS)
    return max(1, min(n if n is not None else physical_cores(), len(usable_cpus())))
