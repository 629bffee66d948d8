"""cvm_rules takes cvm-runtime's decision (FORMAL build, commit b5a2518) on each operator: the class of the
first failing check and the rule that fired. Each row is a case where cvmc used to decide otherwise; the
runtime's file and line are in cvm_rules' comments. Checked against the oracle (run_model) when written."""

from typing import Any

import pytest

from cvmc.dialects import cvm_rules as rules
from cvmc.errors import CVMLogicError, CVMRuntimeError

OK = ("ok", "")
LOGIC, RUNTIME = "logic", "runtime"


def decide(op: str, raw: dict[str, Any], shapes: list[tuple[int, ...]], precs: list[int]) -> tuple[str, str]:
    """The runtime's phases for one node: attributes, input count, shape, type, precision, deviations, gas."""
    try:
        attrs = rules.parse_attrs(op, raw)
        out = rules.infer_shape(op, attrs, shapes)
        rules.check_type(op, attrs)
        rules.infer_precision(op, attrs, shapes, precs, out)
        rules.check_deviations(op, attrs, shapes)
        rules.base_ops(op, attrs, shapes, out)
    except CVMLogicError as e:
        return LOGIC, str(e)
    except CVMRuntimeError as e:
        return RUNTIME, str(e)
    return OK


CONV = {"channels": "4", "kernel_size": "(1, 1)"}
X4, W4, B4 = (1, 4, 8, 8), (4, 4, 1, 1), (4,)

CASES: list[tuple[str, str, dict[str, Any], list[tuple[int, ...]], list[int], tuple[str, str]]] = [
    # --- dmlc parameter grammar (include/utils/parameter.h, include/cvm/tuple.h) ---
    ("int leading space", "repeat", {"repeats": " 2"}, [(3,)], [8], OK),
    ("int plus sign", "repeat", {"repeats": "+2"}, [(3,)], [8], OK),
    ("int fraction", "repeat", {"repeats": "1.5"}, [(3,)], [8], (RUNTIME, "Invalid Parameter format")),
    ("int hex", "repeat", {"repeats": "0x2"}, [(3,)], [8], (RUNTIME, "Invalid Parameter format")),
    ("int past int32", "repeat", {"repeats": "2147483648"}, [(3,)], [8], (RUNTIME, "Invalid Parameter format")),
    ("bool with a space", "dense", {"units": "2", "use_bias": " 1"}, [(1, 3), (2, 3), (2,)], [8, 8, 8],
     (RUNTIME, "Invalid Parameter format")),
    ("bool TRUE", "dense", {"units": "2", "use_bias": "TRUE"}, [(1, 3), (2, 3), (2,)], [8, 8, 8], OK),
    ("optional L suffix", "take", {"axis": "0L"}, [(3,), (2,)], [8, 8], OK),
    ("optional None", "take", {"axis": "None"}, [(3,), (2,)], [8, 8], OK),
    ("optional None and text", "take", {"axis": "Nonex"}, [(3,), (2,)], [8, 8],
     (RUNTIME, "Invalid Parameter format")),
    ("tuple ( closed by ]", "squeeze", {"axis": "(]"}, [(1, 3)], [8], OK),
    ("tuple bare int", "squeeze", {"axis": "0"}, [(1, 3)], [8], OK),
    ("tuple bare +int", "squeeze", {"axis": "+0"}, [(1, 3)], [8], (RUNTIME, "Invalid Parameter format")),
    ("tuple (+0)", "squeeze", {"axis": "(+0)"}, [(1, 3)], [8], OK),
    ("tuple L suffixes", "squeeze", {"axis": "(0L,)"}, [(1, 3)], [8], OK),
    ("tuple no comma", "squeeze", {"axis": "(0 1)"}, [(1, 1)], [8], (RUNTIME, "Invalid Parameter format")),
    ("tuple trailing text", "squeeze", {"axis": "(0)x"}, [(1, 3)], [8], (RUNTIME, "Invalid Parameter format")),
    ("tuple unclosed", "squeeze", {"axis": "(0"}, [(1, 3)], [8], (RUNTIME, "Invalid Parameter format")),
    ("hidden key ignored", "repeat", {"repeats": "2", "__extra__": "1"}, [(3,)], [8], OK),
    ("unknown key", "repeat", {"repeats": "2", "extra": "1"}, [(3,)], [8], (RUNTIME, "Cannot find argument")),
    ("missing required", "repeat", {}, [(3,)], [8], (RUNTIME, "Required parameter")),
    ("lower bound", "dense", {"units": "0"}, [(1, 3), (0, 3), (0,)], [8, 8, 8], (RUNTIME, "greater equal")),
    # --- operators without a parser: any attribute is a logic error (graph_runtime.h:306) ---
    ("relu attr", "relu", {"axis": "1"}, [(3,)], [8], (LOGIC, "should not have attributes")),
    ("relu hidden attr", "relu", {"__x__": "1"}, [(3,)], [8], (LOGIC, "should not have attributes")),
    ("flatten attr", "flatten", {"axis": "1"}, [(3, 2)], [8], (LOGIC, "should not have attributes")),
    ("broadcast_add attr", "broadcast_add", {"axis": "1"}, [(3,), (3,)], [8, 8],
     (LOGIC, "should not have attributes")),
    # --- conv2d (src/top/nn/convolution.cc) ---
    ("conv out_layout invalid", "conv2d", {**CONV, "out_layout": "xyz"}, [X4, W4, B4], [8, 8, 8],
     (RUNTIME, "Invalid layout")),
    ("conv out_layout NHWC", "conv2d", {**CONV, "out_layout": "NHWC"}, [X4, W4, B4], [8, 8, 8],
     (LOGIC, "out_layout")),
    ("conv out_dtype unknown", "conv2d", {**CONV, "out_dtype": "xyz"}, [X4, W4, B4], [8, 8, 8],
     (RUNTIME, "Invalid Parameter format")),
    ("conv out_dtype float32", "conv2d", {**CONV, "out_dtype": "float32"}, [X4, W4, B4], [8, 8, 8],
     (LOGIC, "Check type failed")),
    ("conv out_dtype int32", "conv2d", {**CONV, "out_dtype": "int32"}, [X4, W4, B4], [8, 8, 8], OK),
    ("conv bias disagrees", "conv2d", {**CONV, "channels": "5"}, [X4, (5, 4, 1, 1), B4], [8, 8, 8],
     (RUNTIME, "bias shape")),
    ("conv negative channels", "conv2d", {**CONV, "channels": "-4"}, [X4, W4, B4], [8, 8, 8],
     (RUNTIME, "bias shape")),
    ("conv weight disagrees", "conv2d", {**CONV, "kernel_size": "(0, 1)"}, [X4, W4, B4], [8, 8, 8],
     (LOGIC, "undefined in cvm-runtime")),
    # --- dense (src/top/nn/nn.cc) ---
    ("dense weight disagrees", "dense", {"units": "2"}, [(1, 3), (3, 3), (2,)], [8, 8, 8],
     (RUNTIME, "weight shape")),
    ("dense bias disagrees", "dense", {"units": "2"}, [(1, 3), (2, 3), (3,)], [8, 8, 8],
     (RUNTIME, "bias shape")),
    # --- non_max_suppression: no precision <= 30 check is registered (nms.cc:106 SamePrecision) ---
    ("nms precision 31", "non_max_suppression", {}, [(1, 4, 6), (1,)], [31, 8], OK),
    # --- clip: a_min, a_max within +-(2^31 - 1) (src/top/tensor/elemwise.cc:105) ---
    ("clip a_min int32 min", "clip", {"a_min": "-2147483648", "a_max": "1"}, [(3,)], [8], (LOGIC, "'a_min'")),
    ("clip a_max int32 max", "clip", {"a_min": "-2147483647", "a_max": "2147483647"}, [(3,)], [8],
     (LOGIC, "output precision")),
    # --- cvm_left_shift: a false return of the inference is LOG(FATAL) ---
    ("left shift overflow", "cvm_left_shift", {"precision": "8", "shift_bit": "25"}, [(3,)], [8],
     (RUNTIME, "exceeds 32")),
    # --- tile / strided_slice defaults (include/cvm/top/tensor.h) ---
    ("tile without reps", "tile", {}, [(3,)], [8], (LOGIC, "'reps'")),
    ("tile empty reps", "tile", {"reps": "()"}, [(3,)], [8], (LOGIC, "repetition array")),
    ("strided_slice defaults", "strided_slice", {}, [(3, 2)], [8], OK),
    ("strided_slice end past ndim", "strided_slice", {"begin": "(0,)", "end": "(1, 2, 3)"}, [(3,)], [8], OK),
    ("strided_slice stride past ndim", "strided_slice", {"stride": "(1, 0)"}, [(3,)], [8], OK),
    ("strided_slice begin past ndim", "strided_slice", {"begin": "(0, 0)"}, [(3,)], [8],
     (LOGIC, "undefined in cvm-runtime")),
    ("strided_slice negative stride no end", "strided_slice", {"begin": "(2, 2)", "stride": "(-1, -1)"},
     [(3, 3)], [8],
     (LOGIC, "non-empty range")),
    # --- reshape (src/top/tensor/transform.cc:402) ---
    ("reshape code below -4 ignored", "reshape", {"shape": "(-5, 6)"}, [(2, 3)], [8], OK),
    ("reshape -4 split by 0", "reshape", {"shape": "(-4, -1, 0)"}, [(6,)], [8], (LOGIC, "undefined in cvm-runtime")),
    ("reshape -1 over a zero product", "reshape", {"shape": "(-1, 4294967296)"}, [(6,)], [8],
     (LOGIC, "undefined in cvm-runtime")),
    # --- expand_dims: num_newaxis in [1, 4096] (parser lower bound, then VerifyAttrRange) ---
    ("expand_dims num_newaxis 0", "expand_dims", {"axis": "0", "num_newaxis": "0"}, [(3,)], [8],
     (RUNTIME, "greater equal")),
    ("expand_dims num_newaxis 4097", "expand_dims", {"axis": "0", "num_newaxis": "4097"}, [(3,)], [8],
     (LOGIC, "'num_newaxis'")),
    # --- reductions: a dtype must be one of the enum; axes normalised then in [0, ndim - 1] ---
    ("sum dtype unknown", "sum", {"dtype": "int"}, [(3,)], [8], (RUNTIME, "Invalid Parameter format")),
    ("sum dtype float32", "sum", {"dtype": "float32"}, [(3,)], [8], OK),
    ("max axis past rank", "max", {"axis": "(2,)"}, [(3, 2)], [8], (LOGIC, "in [0, 1]")),
]


@pytest.mark.parametrize(("op", "raw", "shapes", "precs", "want"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_runtime_decision(op: str, raw: dict[str, Any], shapes: list[tuple[int, ...]], precs: list[int],
                          want: tuple[str, str]) -> None:
    got = decide(op, raw, shapes, precs)
    assert got[0] == want[0], got
    assert want[1] in got[1], got


def test_deviations_table() -> None:
    """Every documented deviation names an operator, the case and what the runtime does."""
    assert len(rules.DEVIATIONS) >= 4
    for op, case, runtime in rules.DEVIATIONS:
        assert op in rules.OPS and case and "src/" in runtime


def test_phases_shape_before_precision() -> None:
    """clip's a_min < a_max is a precision-phase check: shape inference alone accepts it."""
    attrs = rules.parse_attrs("clip", {"a_min": "5", "a_max": "5"})
    assert rules.infer_shape("clip", attrs, [(3,)]) == ((3,),)
    with pytest.raises(CVMLogicError, match="'a_min' < 'a_max'"):
        rules.infer_precision("clip", attrs, [(3,)], [8])


def test_num_inputs_checked_after_attributes() -> None:
    """use_bias decides conv2d's input count (graph_runtime.h:314, a logic error)."""
    attrs = rules.parse_attrs("conv2d", {**CONV, "use_bias": "False"})
    with pytest.raises(CVMLogicError, match="expected 2 inputs, got 3"):
        rules.check_num_inputs("conv2d", attrs, 3)


@pytest.mark.parametrize(("src", "codes", "want"), [
    ((2, 3, 4), (-3, -1), (6, 4)),  # the -1 is code 1 and output dim 1: no difference
    ((2, 3), (0, -2, -1), (2, 3, 1)),  # code 2, output dim 2 (the -2 copied one dim)
    ((3,), (-6, -1, 1), (1, 3)),  # code 1, output dim 0: the runtime writes 3 into dim 1, the 1's place
    ((2, 3), (-2, -1), "elements"),  # [2, 3, 1] with 6 / 6 written into dim 1: [2, 1, 1], 2 elements, not 6
    ((6,), (-2, -1), (6, 1)),  # 6 / 6 written over the placeholder's own place
    ((3,), (-6, -1), "undefined in cvm-runtime"),  # code 1 past the one output dim: a write past the vector
    ((6,), (-4, 2, 3, -1), "undefined in cvm-runtime"),  # code 3, 3 output dims
    ((), (-2, -1), "undefined in cvm-runtime"),  # the -2 copies nothing: code 1 past the one output dim
])
def test_reshape_infers_at_the_codes_index(src: tuple[int, ...], codes: tuple[int, ...], want: Any) -> None:
    """ReshapeInferShape (src/top/tensor/transform.cc:431, 469) writes the inferred dim at oshape[infer_idx],
    where infer_idx is the -1's index among the codes; its placeholder 1 stays where the -1 pushed it. Checked
    against the oracle (run_model, FORMAL) when written."""
    if isinstance(want, tuple):
        assert rules.reshape_shape(src, codes) == want
    else:
        with pytest.raises(CVMLogicError, match=want):
            rules.reshape_shape(src, codes)
