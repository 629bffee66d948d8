"""Shared test helpers: the vendored conformance corpus in tests/data, and the simulated host (tests/hosts.py)."""

import io
import json
import pathlib
import sys
from collections.abc import Callable
from typing import Any

import hosts
import numpy as np
import pytest


def pytest_addoption(parser):
    parser.addoption("--host", choices=hosts.CHOICES, default="real",
                     help="the host the `host` fixture simulates: the real CPU (default) or one of generic, avx2, "
                     "avx512-vnni, amx (`make test-hosts` runs the tests marked `hosts` once per simulated host)")


def pytest_configure(config):
    config.addinivalue_line("markers", "compiled: compiles for the cpu and the emulated CUDA (slower; `make mutate` "
                            "deselects it where a module's rules alone are under test)")
    config.addinivalue_line("markers", "hosts: depends on the CPU's answers and takes them from the `host` fixture; "
                            "`make test-hosts` runs it once per simulated host (--host)")


@pytest.fixture
def host(request):
    """The host this test sees (tests/hosts.py): the one `--host` names (the real CPU by default), its cached
    answers cleared before and after; `host.set(...)` simulates another."""
    yield from hosts.simulated(request.config.getoption("--host"))


def pytest_terminal_summary(terminalreporter):
    """Which CPU kernel tiers this run covered: those the host runs natively (their tests run with the
    instructions), the emulated ones (portable lowering, every host), and those it cannot run (skipped)."""
    from cvmc.passes.loops.target import ISAS
    from cvmc.runtime.driver.target import detect_target, host_has
    from cvmc.runtime.engine.jit import host_target

    native = [isa for isa in ISAS if host_has(isa)]
    lacking = [isa for isa in ISAS if not host_has(isa)]
    terminalreporter.write_line(
        f"cvmc kernel tiers: this CPU {host_target()[1]}, default target {detect_target()}; native: "
        f"{', '.join(native)}; emulated: avx512-vnni, amx; instruction tests skipped: {', '.join(lacking) or 'none'}")


DATA = pathlib.Path(__file__).parent / "data"
CVM_CORPUS = DATA / "cvm"


def python_calls(fn: Callable[[], Any]) -> tuple[int, Any]:
    """How many Python functions `fn()` calls (and its result): a measure of work that, unlike a time, does not
    depend on the machine's load. A speed test bounds it with room to spare: a quadratic slip shows at once."""
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        calls += event == "call"

    sys.setprofile(count)
    try:
        result = fn()
    finally:
        sys.setprofile(None)
    return calls, result


def corpus_cases(*kinds: str) -> list[pathlib.Path]:
    """Case folders of the CVM corpus whose kind is one of `kinds`, in name order."""
    out = []
    for d in sorted(CVM_CORPUS.iterdir()):
        meta = d / "case.json"
        if meta.exists() and json.loads(meta.read_text())["kind"] in kinds:
            out.append(d)
    return out


def case_meta(d: pathlib.Path) -> dict:
    return json.loads((d / "case.json").read_text())


def case_params(d: pathlib.Path) -> bytes:
    p = d / "params.bin"
    return p.read_bytes() if p.exists() else b""


def case_input(d: pathlib.Path) -> np.ndarray:
    meta = case_meta(d)
    return np.frombuffer((d / "input_i32.bin").read_bytes(), dtype="<i4").reshape(meta["input_shape"])


def heads_bytes(outs) -> bytes:
    """Every head as little-endian int32, concatenated (the layout of expected.bin)."""
    return b"".join(np.ascontiguousarray(o, dtype="<i4").tobytes() for o in outs)


def check_case(case: pathlib.Path, model) -> None:
    """A valid corpus case on a loaded model: every head bit-exact, and the API packing exact where recorded."""
    assert heads_bytes(model.run(case_input(case))) == (case / "expected.bin").read_bytes()
    api = case / "expected_api.bin"
    if api.exists():
        buf = model.infer((case / "input.bin").read_bytes())
        want = api.read_bytes()
        width = 1 if len(buf) * 4 == len(want) else 4
        assert np.frombuffer(buf, "i1" if width == 1 else "<i4").astype("<i4").tobytes() == want


class Terminal(io.StringIO):
    """A stream that says whether it is a terminal (as a pty would) and keeps what is written: the progress bars
    draw on a terminal only."""

    def __init__(self, tty: bool = True):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty
