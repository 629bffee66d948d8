"""The public corpus through the public API on the reference device: run, infer, gas and error classes."""

import re

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


# The rule each invalid case breaks, as a stable phrase of cvmc's message (the runtime's check is in case.json):
# a case rejected for another reason fails, even with the right class.
REASONS = {
    "invalid_000": r"clip.*'a_min' < 'a_max', got 5 and -3",
    "invalid_001": r"'shift_bit' in \[1, 32\], got 0",
    "invalid_002": r"'shift_bit' in \[1, 32\], got 33",
    "invalid_003": r"cvm_right_shift.*'precision' in \[1, 32\], got 0",
    "invalid_004": r"cvm_left_shift.*'precision' in \[1, 32\], got 33",
    "invalid_005": r"'repeats' > 0, got 0",
    "invalid_006": r"repeat.*'axis' in \[-2, 1\], got 7",
    "invalid_007": r"'axes' to be a permutation",
    "invalid_008": r"'axes' of length 3, got 2",
    "invalid_009": r"'stride' values != 0",
    "invalid_010": r"non-empty range on axis 0, got begin 2, end 1",
    "invalid_011": r"max_pool2d.*'strides' in \[1, 4096\], got 0",
    "invalid_012": r"'method' NEAREST_NEIGHBOR, got BILINEAR",
    "invalid_013": r"distinct 'axis' values",
    "invalid_014": r"take.*'axis' in \[-2, 1\], got 2",
    "invalid_015": r"'in_dim' equal to the table size 16, got 10",
    "invalid_016": r"cannot be broadcast together",
    "invalid_017": r"x and y of the same shape",
    "invalid_018": r"'return_indices' false",
    "invalid_019": r"conv2d.*data precision <= 8, got 9",
    "invalid_020": r"dilated kernel height 7 exceeds padded input height 5",
    "invalid_021": r"'layout' NCHW, got NHWC",
    "invalid_022": r"dense.*weight precision <= 8, got 16",
    "invalid_023": r"conv2d.*output precision would be 33",
    "invalid_024": r"output 0 shape \[1, 3, 8, 9\] in the file, inferred \[1, 3, 8, 8\]",
    "invalid_025": r"'softmax' is not registered",
    "invalid_026": r"function undefined: cvm.runtime.formal.nn.relu",
    "invalid_027": r"supports only 'cvm_op' or 'null'",
    "invalid_028": r"node attributes do not support key 'axis'",
    "invalid_029": r"'device_index' must be absent or empty",
    "invalid_030": r"uses the same storage_id 0 as its input",
    "invalid_031": r"does not follow the topological order",
    "invalid_032": r"does not follow the topological order",
    "invalid_033": r"has 7 dims, expected 1 to 6",
    "invalid_034": r"dim 0, expected in \[1, 16777216\]",
    "invalid_035": r"wrong list magic",
    "invalid_036": r"wrong array magic",
    "invalid_037": r"name 0 has no length",
    "invalid_038": r"params file is empty",
    "invalid_039": r"name='b' has not been loaded",
    "invalid_040": r"3 arrays for 2 names",
    "invalid_041": r"'w'.*precision 8 .*got -128",
    "invalid_042": r"param 'b': shape \[5\], expected \[4\]",
    "invalid_043": r"device type 2 is not enabled",
    "invalid_044": r"detection model output cannot concat",
    "invalid_045": r"elemwise_add.*output precision would be 33",
}


def test_every_invalid_case_has_a_reason():
    assert sorted(REASONS) == [d.name for d in INVALID]


@pytest.mark.parametrize("case", INVALID, ids=lambda d: d.name)
def test_invalid_case_is_rejected_with_the_runtimes_class(case):
    meta = case_meta(case)
    want = cvmc.CVMLogicError if meta["api_status"] == 1 else cvmc.CVMRuntimeError
    with pytest.raises(want) as info:
        m = cvmc.load_model((case / "model.json").read_bytes(), case_params(case), device="reference")
        assert meta["stage"] == "inference", "rejected at inference, but the runtime rejects it at load"
        m.infer((case / "input.bin").read_bytes())
    assert info.value.status == meta["api_status"]
    assert re.search(REASONS[case.name], str(info.value)), f"rejected for another reason: {info.value}"
