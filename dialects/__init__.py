"""The project's dialects: `cvm` (CVM operators), `cinn` (CinnBuilder primitives), `taskgraph` (Task IR)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.ir import Dialect


def _cvm() -> Dialect:
    from cvmc.dialects.cvm import Cvm

    return Cvm


def _cinn() -> Dialect:
    from cvmc.dialects.cinn import Cinn

    return Cinn


def _taskgraph() -> Dialect:
    from cvmc.dialects.taskgraph import TaskGraph

    return TaskGraph


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Lazy factories of the project's own dialects, by namespace."""
    return {"cvm": _cvm, "cinn": _cinn, "taskgraph": _taskgraph}
