"""One fake host for every test that depends on the CPU (issue 36): its features, whether Linux grants it AMX tiles,
and so its tier (`host_isa`, `host_has`) and vector width (`host_vector_bytes`), with every cached answer about the
real CPU cleared before and after, so that nothing leaks into a test or out of it.

    def test_x(host):           # the `host` fixture (tests/conftest.py): the host `--host` names, else the real one
        host.set("avx512-vnni")  # or a host of one's own: host.set({"avx2", "avx512vnni"}, amx=False)
        assert detect_target().isa == "avx512-vnni"

Only the answers of `cvmc.runtime.driver.target` are faked: LLVM still compiles for the real CPU
(`llvm_compile.host_target`), and a kernel runs on it. Under a simulated host, code of a tier the real CPU lacks
is never run: `missing_tier` skips the test instead (the real CPU would fault), so a test that builds and runs
the host's tier runs on the hosts this CPU can stand for and skips on the others.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import pytest

from cvmc.passes.loops.target import ISAS
from cvmc.runtime.driver import target

# The features (LLVM's names) of each simulated host, lowest first; each holds the ones below it.
_GENERIC = frozenset({"sse2", "sse4.1", "sse4.2", "popcnt"})
_AVX2 = _GENERIC | {"avx", "avx2", "fma", "bmi2", "f16c"}  # a Zen 3
_VNNI = _AVX2 | {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd", "avx512vnni"}  # a Cascade Lake
_AMX = _VNNI | {"amx-int8", "amx-tile", "amx-bf16", "avx512bf16"}  # a Sapphire Rapids
HOSTS = {"generic": (_GENERIC, False), "avx2": (_AVX2, False), "avx512-vnni": (_VNNI, False), "amx": (_AMX, True)}
CHOICES = ("real", *HOSTS)

# The real answers: the functions themselves, taken before any test replaces them.
_REAL_FEATURES = target.host_features
_REAL_GRANTED = target.amx_granted


def clear_cached_answers() -> None:
    """Forget every answer about the real CPU that `cvmc.runtime.driver.target` keeps for the process."""
    _REAL_FEATURES.cache_clear()
    _REAL_GRANTED.cache_clear()


def real_features() -> frozenset[str]:
    return _REAL_FEATURES()


def real_has(isa: str) -> bool:
    """Whether the real CPU (not the simulated host) runs tier `isa`'s instructions."""
    features = _REAL_FEATURES()
    if isa == "amx":
        return real_has("avx512-vnni") and {"amx-int8", "amx-tile"} <= features and _REAL_GRANTED()
    if isa == "avx512-vnni":
        return {"avx512vnni", "avx512bw"} <= features
    return isa == "generic" or "avx2" in features


@dataclasses.dataclass
class Host:
    """The host the tests in a function see; `set` changes it."""

    monkeypatch: pytest.MonkeyPatch
    name: str = "real"
    features: frozenset[str] = frozenset()
    amx: bool = False

    def set(self, host: str | Iterable[str], amx: bool | None = None) -> Host:
        """Simulate `host`: a name of HOSTS, "real" (the real CPU's own answers), or a set of features (AMX granted
        where `amx`, by default where the features hold AMX)."""
        clear_cached_answers()
        if isinstance(host, str):
            if host == "real":
                self.name, self.features = "real", real_features()
                self.amx = {"amx-int8", "amx-tile"} <= self.features and _REAL_GRANTED()
            else:
                self.name, (self.features, granted) = host, HOSTS[host]
                self.amx = granted if amx is None else amx
        else:
            self.name, self.features = "features", frozenset(host)
            self.amx = {"amx-int8", "amx-tile"} <= self.features if amx is None else amx
        self.monkeypatch.setattr(target, "host_features", lambda: self.features)
        self.monkeypatch.setattr(target, "amx_granted", lambda: self.amx)
        if self.name != "real":
            self.monkeypatch.setattr(target, "missing_tier", self._missing_tier)
        else:
            self.monkeypatch.setattr(target, "missing_tier", _REAL_MISSING_TIER)
        return self

    @property
    def isa(self) -> str:
        return target.host_isa()

    @property
    def vector_bytes(self) -> int:
        return target.host_vector_bytes()

    def runs(self, isa: str) -> bool:
        """Whether both the simulated host and the real CPU run tier `isa` (a test that runs its kernels)."""
        return target.host_has(isa) and real_has(isa)

    def _missing_tier(self, t):
        missing = _REAL_MISSING_TIER(t)
        if missing is None and t.gpu is None and not t.emulated and not real_has(t.isa):
            pytest.skip(f"the simulated host {self.name} runs {t.isa}, this CPU does not: its kernels would fault here")
        return missing


_REAL_MISSING_TIER = target.missing_tier


def simulated(name: str) -> Iterable[Host]:
    """The `host` fixture's body: `name`'s host for one test, every cached answer cleared before and after."""
    monkeypatch = pytest.MonkeyPatch()
    clear_cached_answers()
    try:
        yield Host(monkeypatch).set(name)
    finally:
        monkeypatch.undo()
        clear_cached_answers()


assert set(HOSTS) == set(ISAS)
