"""The valid corpus compiled for the `cpu` device: every head bit-exact, and the API packing exact."""

import numpy as np
import pytest
from conftest import case_input, case_params, check_case, corpus_cases

import cvmc

VALID = corpus_cases("op", "chain", "model")


@pytest.mark.parametrize("case", VALID, ids=lambda d: d.name)
def test_cpu_is_bit_exact(case):
    check_case(case, cvmc.load_model((case / "model.json").read_bytes(), case_params(case), device="cpu"))


def test_runs_are_repeatable_and_independent_of_threads():
    """The runner reuses its buffers between runs, and splitting kernels over threads changes no bit."""
    case = next(c for c in VALID if c.name.startswith("model_digits_cnn"))
    graph = cvmc.load_model((case / "model.json").read_bytes(), case_params(case), device="reference").graph
    from cvmc.runtime.devices.cpu import compile_graph

    x = case_input(case)
    one, two = compile_graph(graph, threads=1), compile_graph(graph, threads=2)
    first = one(x)
    for outs in (one(x), two(x), two(x)):
        assert all(np.array_equal(a, b) for a, b in zip(first, outs, strict=True))
    assert one.stats["peak_buffer_bytes"] <= one.stats["intermediate_bytes"]


def test_a_compiled_model_is_cached_and_a_warm_compile_lowers_nothing(tmp_path, monkeypatch):
    """A second compile of the same graph reads the compiled model (host program, specs, objects) from the cache
    and lowers nothing, with the same bits; a damaged entry of either kind is deleted and compiled again."""
    from cvmc.runtime.devices.cpu import compile_graph

    monkeypatch.setenv("CVMC_CACHE_DIR", str(tmp_path))
    case = next(c for c in VALID if c.name.startswith("chain"))
    graph = cvmc.load_model((case / "model.json").read_bytes(), case_params(case), device="reference").graph
    x = case_input(case)
    cold = compile_graph(graph)
    warm = compile_graph(graph)
    assert (cold.stats["cache_hit"], warm.stats["cache_hit"]) == (False, True)
    assert (cold.stats["lowered"], warm.stats["lowered"], warm.stats["lower_ms"]) == (True, False, 0)
    want = cold(x)
    assert all(np.array_equal(a, b) for a, b in zip(want, warm(x), strict=True))
    for suffix in (f".{warm.engine.kind}", ".model"):  # the code (a shared object or objects), the model
        entry = tmp_path / f"{warm.model_key if suffix == '.model' else warm.engine.key}{suffix}"
        entry.write_bytes(entry.read_bytes()[:100])
        again = compile_graph(graph)
        assert again.stats["lowered"] and (suffix == ".model" or not again.stats["cache_hit"])
        assert all(np.array_equal(a, b) for a, b in zip(want, again(x), strict=True))
