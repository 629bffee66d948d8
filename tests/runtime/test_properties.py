"""Property-based tests (hypothesis, issue 30): graphs grown operator by operator by the differential fuzzer's
generator (`fuzz_cvm.grow_graph`, 37 operators, draws leaning to the rules' bounds), every choice a hypothesis
draw, so that a failing graph shrinks to its smallest: fewer operators, earlier tensors, smaller shapes, the
first choices.

    every graph: the cpu device equals the reference, bit for bit, and gives the same gas
    every graph: written as model files and loaded again, the loader accepts it and finds the same gas and heads
    every graph: a Model pickles as its files and unpickles to the same gas and outputs

`make test` runs a fixed set of examples (derandomized, so every run checks the same graphs); the `long` profile
(`HYPOTHESIS_PROFILE=long`, in `make fuzz-long`) draws fresh ones, more of them.
"""

import json
import os
import pickle

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cvmc.runtime.frontend.graph import graph_to_json, load_graph, write_params  # noqa: E402
from cvmc.runtime.model import Model  # noqa: E402
from cvmc.runtime.references.cvm import run_graph  # noqa: E402
from cvmc.tools.fuzz_cvm import check, grow_graph  # noqa: E402

settings.register_profile("ci", max_examples=12, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


class Draws:
    """numpy Generator's methods the generator calls, each scalar choice a hypothesis draw (so it shrinks); bulk
    values (a param's, an input's) come from a numpy Generator whose seed is itself a draw."""

    def __init__(self, data: st.DataObject):
        self.data = data
        self.bulk = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="values seed"))

    def integers(self, low, high=None, size=None, dtype=np.int64):
        if size is not None:
            return self.bulk.integers(low, high, size=size, dtype=dtype)
        if high is None:
            low, high = 0, low
        return np.int64(self.data.draw(st.integers(int(low), int(high) - 1)))

    def random(self) -> float:
        return self.data.draw(st.floats(0, 1, exclude_max=True))

    def choice(self, a, size=None, p=None):
        if size is not None:
            return self.bulk.choice(a, size=size, p=p)
        items = np.arange(a) if isinstance(a, int | np.integer) else np.asarray(a)
        if p is None:
            return items[self.data.draw(st.integers(0, len(items) - 1))]
        at = int(np.searchsorted(np.cumsum(p), self.random(), side="right"))
        return items[min(at, len(items) - 1)]

    def permutation(self, n: int) -> np.ndarray:
        return np.array(self.data.draw(st.permutations(range(n))))


def graphs(max_ops: int = 6):
    @st.composite
    def build(draw):
        data = draw(st.data())
        n_ops = data.draw(st.integers(1, max_ops), label="operators")
        return grow_graph(Draws(data), "prop", n_ops)  # type: ignore[arg-type]

    return build()


@pytest.mark.compiled
@given(graphs())
def test_the_cpu_device_equals_the_reference(case):
    graph, data = case
    assert check(graph, data, "cpu") is None
    assert Model.from_graph(graph, "cpu").gas == graph.gas


@given(graphs(8))
def test_model_files_of_a_built_graph_load_to_the_same_graph(case):
    graph, data = case
    again = load_graph(json.dumps(graph_to_json(graph)).encode(), write_params(graph.params))
    assert again.gas == graph.gas and again.heads == graph.heads
    assert [n.shapes for n in again.nodes] == [n.shapes for n in graph.nodes]
    for got, want in zip(run_graph(again, data), run_graph(graph, data), strict=True):
        assert np.array_equal(got, want)


@given(graphs(8))
def test_a_model_unpickles_to_the_same_model(case):
    graph, data = case
    model = Model.from_graph(graph, "reference")
    again = pickle.loads(pickle.dumps(model))
    assert again.gas == model.gas
    for got, want in zip(again.run(data), model.run(data), strict=True):
        assert np.array_equal(got, want)
