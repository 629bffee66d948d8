"""The public corpus through the public API on the reference device: run, infer, gas and error classes."""

import pytest
from conftest import case_meta, case_params, check_case, corpus_cases

import cvmc

VALID = corpus_cases("op", "chain", "model")
INVALID = corpus_cases("invalid")


@pytest.mark.parametrize("case", VALID, ids=lambda d: d.name)
def test_valid_case_is_bit_exact(case):
    meta = case_meta(case)
    m = cvmc.load_model((case / "model.json").read_bytes(), case_params(case), device="reference")
    assert m.gas == meta["gas"]
    check_case(case, m)


@pytest.mark.parametrize("case", INVALID, ids=lambda d: d.name)
def test_invalid_case_is_rejected_with_the_runtimes_class(case):
    meta = case_meta(case)
    want = cvmc.CVMLogicError if meta["api_status"] == 1 else cvmc.CVMRuntimeError
    with pytest.raises(want) as info:
        m = cvmc.load_model((case / "model.json").read_bytes(), case_params(case), device="reference")
        assert meta["stage"] == "inference", "rejected at inference, but the runtime rejects it at load"
        m.infer((case / "input.bin").read_bytes())
    assert info.value.status == meta["api_status"]
    assert str(info.value)  # a message, never empty
