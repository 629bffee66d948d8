"""The project's dialects: `cvm` (CVM operators), `cvm_sched` (the scheduled cvm level: views, packs, kernels),
`cinn` (CinnBuilder primitives), `taskgraph` (Task IR), `cvmc` (the loop level's micro-kernel ops, and
`cvmc_upstream`: upstream-named ops xDSL lacks)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.ir import Dialect


def _cvm() -> Dialect:
    from cvmc.dialects.cvm import Cvm

    return Cvm


def _cvm_sched() -> Dialect:
    from cvmc.dialects.cvm_sched import CvmSched

    return CvmSched


def _cinn() -> Dialect:
    from cvmc.dialects.cinn import Cinn

    return Cinn


def _taskgraph() -> Dialect:
    from cvmc.dialects.taskgraph import TaskGraph

    return TaskGraph


def _cvmc() -> Dialect:
    from cvmc.dialects.cvmc import Cvmc

    return Cvmc


def _cvmc_upstream() -> Dialect:
    from cvmc.dialects.cvmc import CvmcUpstream

    return CvmcUpstream


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Lazy factories of the project's own dialects, by namespace."""
    return {"cvm": _cvm, "cvm_sched": _cvm_sched, "cinn": _cinn, "taskgraph": _taskgraph, "cvmc": _cvmc,
            "cvmc_upstream": _cvmc_upstream}


def register_all_dialects(ctx: Context) -> None:
    """Make every dialect of the project known to `ctx`: registered lazily by namespace, but `cvmc_upstream` loaded
    at once (its ops, such as `math.isnan`, live in other dialects' namespaces, so no lookup would load it)."""
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    ctx.load_registered_dialect("cvmc_upstream")
