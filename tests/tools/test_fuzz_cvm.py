"""The differential fuzzer: a short run finds no difference between the cpu device and the reference."""

import numpy as np

from cvmc.runtime.frontend.graph import graph_to_json
from cvmc.tools import fuzz_cvm


def test_short_run_finds_no_mismatch(capsys):
    assert fuzz_cvm.main(["--count", "50", "--seed", "2024"]) == 0
    assert "0 failures" in capsys.readouterr().out


def test_graphs_are_reproducible_from_seed_and_index():
    g1, x1 = fuzz_cvm.random_graph(3, 17)
    g2, x2 = fuzz_cvm.random_graph(3, 17)
    g3, _ = fuzz_cvm.random_graph(3, 18)
    assert graph_to_json(g1) == graph_to_json(g2) and np.array_equal(x1, x2)
    assert graph_to_json(g1) != graph_to_json(g3)


def test_check_reports_a_device_that_differs(monkeypatch):
    from cvmc.runtime import model
    from cvmc.runtime.references.cvm import run_graph

    def off_by_one(graph):
        return lambda data: [o + (i == 0) for i, o in enumerate(run_graph(graph, data))]

    monkeypatch.setitem(model.DEVICES, "off_by_one", off_by_one)
    graph, data = fuzz_cvm.random_graph(0, 1)
    assert fuzz_cvm.check(graph, data, "reference") is None
    assert fuzz_cvm.check(graph, data, "off_by_one").startswith("head 0 differs")
