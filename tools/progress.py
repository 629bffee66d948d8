"""A progress bar on stderr for the tools' long work, shown only when stderr is a terminal.

    with progress.bar("calibrating", total=n, unit="node") as step:
        for ...:
            step(1)                           # thread-safe; redrawn only when the whole percent changes

On a terminal the bar is one line rewritten with a carriage return (`calibrating [########............]  42%
21/50 node`), ended with a newline when it reaches its total or closes; on a pipe or a file (logs, CI) nothing is
written at all. The redraws are limited by the count, not by time: at most one per whole percent, so a million
steps cost a hundred writes and a test sees the same lines on every run. `stages()` gives the `progress=`
callback of `cvmc.quantize`: one bar per stage.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TextIO

__all__ = ["Bar", "bar", "stages"]


def is_terminal(stream: TextIO) -> bool:
    """Whether `stream` is a terminal (a closed or replaced stream without isatty is not)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class Bar:
    """A count towards `total`, drawn on `stream` when `enabled` (the caller decides: `bar` asks isatty)."""

    def __init__(self, label: str, total: int, unit: str, stream: TextIO, enabled: bool):
        self.label, self.total, self.unit, self.stream = label, max(total, 0), unit, stream
        self.enabled = enabled and self.total > 0  # nothing to count, nothing drawn
        self.done = 0
        self._shown = -1  # the percent last drawn
        self._lock = threading.Lock()
        self._draw()

    def __call__(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            self._draw()

    def _percent(self) -> int:
        return 100 if self.total == 0 else min(100, self.done * 100 // self.total)

    def _draw(self) -> None:
        if not self.enabled or self._percent() == self._shown:
            return
        self._shown = self._percent()
        filled = self._shown // 5
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (20 - filled)}] {self._shown:3d}% "
                          f"{self.done}/{self.total} {self.unit}")
        if self.done >= self.total:  # ended at once: a log line after it starts on a line of its own
            self.stream.write("\n")
            self.enabled = False
        self.stream.flush()

    def clear(self) -> None:
        """Erase the bar's line (before other output to the same terminal); the next step draws it again."""
        with self._lock:
            if self.enabled and self._shown >= 0:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self._shown = -1

    def close(self) -> None:
        """End the bar's line (where it has not ended at its total); nothing more is drawn."""
        with self._lock:
            if self.enabled:
                self.stream.write("\n")
                self.stream.flush()
                self.enabled = False


@contextlib.contextmanager
def bar(label: str, total: int, unit: str = "", stream: TextIO | None = None) -> Iterator[Bar]:
    """A `Bar` on `stream` (default stderr), drawn only when it is a terminal; closed (its line ended) on exit."""
    out = sys.stderr if stream is None else stream
    b = Bar(label, total, unit, out, is_terminal(out))
    try:
        yield b
    finally:
        b.close()


@contextlib.contextmanager
def stages(stream: TextIO | None = None) -> Iterator[Callable[[str, int, str], Callable[[int], None]]]:
    """A factory of bars, one per stage of a longer job: `start(label, total, unit)` ends the previous stage's bar
    and returns the new one's step; the last is ended on exit. Nothing is drawn when the stream is no terminal."""
    out = sys.stderr if stream is None else stream
    current: list[Bar] = []

    def start(label: str, total: int, unit: str = "") -> Callable[[int], None]:
        if current:
            current.pop().close()
        current.append(Bar(label, total, unit, out, is_terminal(out)))
        return current[-1]

    try:
        yield start
    finally:
        if current:
            current.pop().close()
