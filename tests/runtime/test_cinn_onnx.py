"""ONNX's backend node tests, mapped onto cinn primitives and run on the reference and cpu devices.

Each single-node test whose operator and attributes map onto CinnBuilder primitives (and whose dtypes cinn has)
is built with CinnBuilder and compared with ONNX's expected outputs; the others are unmapped, each for the reason
`onnx_unmapped.tsv` beside this file lists (a test unmapped for another reason, a primitive's rules rejecting a
use they did not reject before included, fails). Known differences of definition (cinn.md: Round is half away
from zero, ONNX's half to even) are listed, not failed.
Needs the `onnx` package with its node test files (wheels up to 1.22.0 ship them); skips otherwise.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from cvmc import CinnBuilder, CVMLogicError

onnx = pytest.importorskip("onnx", reason="the onnx package is not installed")
from onnx import numpy_helper  # noqa: E402

NODE_DIR = pathlib.Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
if not NODE_DIR.is_dir():
    pytest.skip(f"onnx {onnx.__version__} ships no node test files", allow_module_level=True)

ONNX_VERSION = "1.22.0"  # the version the dev extra pins and onnx_unmapped.tsv lists
DTYPES = {"float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"}
# Tests whose expected outputs follow a definition cinn.md deliberately differs from.
KNOWN_DIFFERENCES = {"test_round": "ONNX rounds half to even, cinn half away from zero"}

UNARY = {
    "Abs": "abs", "Acos": "acos", "Acosh": "acosh", "Asin": "asin", "Asinh": "asinh", "Atan": "atan",
    "Atanh": "atanh", "BitwiseNot": "bitwise_not", "Ceil": "ceil", "Cos": "cos", "Cosh": "cosh", "Erf": "erf",
    "Exp": "exp", "Floor": "floor", "Identity": "identity", "IsNaN": "is_nan", "Log": "log", "Neg": "negative",
    "Not": "logical_not", "Round": "round", "Sign": "sign", "Sin": "sin", "Sinh": "sinh", "Sqrt": "sqrt",
    "Tan": "tan", "Tanh": "tanh",
}  # fmt: skip
BINARY = {
    "Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "power", "BitwiseAnd": "bitwise_and",
    "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor", "And": "logical_and", "Or": "logical_or",
    "Xor": "logical_xor", "MatMul": "dot",
}  # fmt: skip
COMPARE = {"Equal": "eq", "Greater": "gt", "GreaterOrEqual": "ge", "Less": "lt", "LessOrEqual": "le"}
REDUCE = {"ReduceSum": "sum", "ReduceProd": "prod", "ReduceMax": "max", "ReduceMin": "min"}


class Unmapped(Exception):
    """The node has no cinn counterpart (operator, attribute value or dtype)."""


def _attrs(node) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _map_node(b: CinnBuilder, node, values: list, consts: list, out_shape: tuple) -> list:
    """The cinn variables computing `node`'s outputs; `values` are the builder variables of its inputs,
    `consts` the same inputs as numpy arrays (for shape-like inputs)."""
    op, at = node.op_type, _attrs(node)
    if op in UNARY:
        return [getattr(b, UNARY[op])(values[0])]
    if op == "IsInf":
        if at.get("detect_negative", 1) != 1 or at.get("detect_positive", 1) != 1:
            raise Unmapped("IsInf of one sign")
        return [b.is_inf(values[0])]
    if op in BINARY:
        return [getattr(b, BINARY[op])(values[0], values[1])]
    if op in COMPARE:
        return [b.compare(values[0], values[1], COMPARE[op])]
    if op in ("Max", "Min"):
        result = values[0]
        for v in values[1:]:
            result = getattr(b, op.lower())(result, v)
        return [result]
    if op == "Mod":
        return [b.mod(*values) if at.get("fmod", 0) else b.floor_mod(*values)]
    if op == "BitShift":
        return [b.left_shift(*values) if at["direction"] == b"LEFT" else b.right_shift(*values)]
    if op == "Where":
        return [b.select(*values)]
    if op == "Concat":
        rank = len(consts[0].shape)
        return [b.concat(values, at["axis"] % rank)]
    if op == "Transpose":
        rank = len(consts[0].shape)
        return [b.transpose(values[0], at.get("perm", list(range(rank))[::-1]))]
    if op == "Reshape":
        if at.get("allowzero", 0):
            raise Unmapped("Reshape allowzero")
        shape = [consts[0].shape[i] if d == 0 else int(d) for i, d in enumerate(consts[1].tolist())]
        return [b.reshape(values[0], shape)]
    if op == "Expand":
        rank = len(out_shape)
        axes = list(range(rank - consts[0].ndim, rank))
        return [b.broadcast_to(values[0], out_shape, axes)]
    if op == "Slice":
        rank = consts[0].ndim
        starts, ends = consts[1].tolist(), consts[2].tolist()
        axes = consts[3].tolist() if len(consts) > 3 else list(range(len(starts)))
        if len(consts) > 4 and any(s != 1 for s in consts[4].tolist()):
            raise Unmapped("Slice with steps")
        return [b.slice(values[0], [a % rank for a in axes], starts, ends)]
    if op in REDUCE:
        rank = consts[0].ndim
        axes = at.get("axes", consts[1].tolist() if len(consts) > 1 else [])
        if not axes and at.get("noop_with_empty_axes", 0):
            raise Unmapped("Reduce noop_with_empty_axes")
        if 0 in consts[0].shape:
            raise Unmapped("Reduce of an empty tensor")
        return [b.reduce(values[0], REDUCE[op], [a % rank for a in axes], bool(at.get("keepdims", 1)))]
    if op in ("Conv", "ConvTranspose"):
        return [_conv(b, op, at, values, consts, out_shape)]
    raise Unmapped(op)


def _conv(b: CinnBuilder, op: str, at: dict, values: list, consts: list, out_shape: tuple):
    if consts[0].ndim != 4 or at.get("output_padding") or "output_shape" in at and op == "Conv":
        raise Unmapped(f"{op} form")
    pads = at.get("pads", [0, 0, 0, 0])
    auto_pad = at.get("auto_pad", b"NOTSET")
    algorithm = {b"NOTSET": "EXPLICIT", b"VALID": "VALID", b"SAME_UPPER": "SAME"}.get(auto_pad)
    if algorithm is None or pads[0] != pads[2] or pads[1] != pads[3]:
        raise Unmapped(f"{op} padding")
    strides, dilations = at.get("strides", [1, 1]), at.get("dilations", [1, 1])
    groups = at.get("group", 1)
    if op == "Conv":
        y = b.conv(values[0], values[1], strides, pads[:2], dilations, groups, "forward", "NCHW", algorithm)
    else:  # ConvTranspose(dy, w) is the data gradient of the forward conv with filter w
        y = b.conv(
            values[1], values[0], strides, pads[:2], dilations, groups, "backward_data", "NCHW", algorithm,
            out_shape,
        )  # fmt: skip
    if len(values) > 2:  # bias per output channel
        y = b.add(y, b.reshape(values[2], [1, -1, 1, 1]))
    return y


def _load(d: pathlib.Path):
    model = onnx.load(str(d / "model.onnx"))
    data = d / "test_data_set_0"
    read = lambda f: numpy_helper.to_array(onnx.load_tensor(str(f)))  # noqa: E731
    inputs = [read(data / f"input_{i}.pb") for i in range(len(model.graph.input))]
    outputs = [read(data / f"output_{i}.pb") for i in range(len(model.graph.output))]
    return model, inputs, outputs


def _run_case(d: pathlib.Path, device: str = "reference") -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(got, expected), or Unmapped."""
    try:
        model, inputs, expected = _load(d)
    except Exception:  # sequences, optionals, strings: not tensors numpy_helper reads
        raise Unmapped("unreadable test data") from None
    if len(model.graph.node) != 1 or len(inputs) != len(model.graph.node[0].input):
        raise Unmapped("not a single node with all inputs given")
    if any(a.dtype.name not in DTYPES or a.size == 0 for a in [*inputs, *expected]):
        raise Unmapped("dtype or empty tensor")
    b = CinnBuilder("onnx")
    values = [b.create_input(a.dtype.name, a.shape, f"in{i}") for i, a in enumerate(inputs)]
    try:
        outputs = _map_node(b, model.graph.node[0], values, inputs, tuple(expected[0].shape))
        fn = b.compile(outputs, device=device)
    except CVMLogicError as e:  # the primitive's rules reject this use (mixed dtypes, ranks, ...)
        raise Unmapped(f"rejected: {e}") from None
    return fn(**{f"in{i}": a for i, a in enumerate(inputs)}), expected


def _matches(got: np.ndarray, want: np.ndarray) -> bool:
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if np.issubdtype(want.dtype, np.floating):
        tol = 1e-5 if want.dtype == np.float32 else 1e-10
        return bool(np.allclose(got, want, rtol=tol, atol=tol, equal_nan=True))
    return bool(np.array_equal(got, want))


def _expected_unmapped() -> dict[str, str]:
    """test name -> why it is not mapped (the operator, or a reason), from the reviewed list beside this file."""
    lines = (pathlib.Path(__file__).parent / "onnx_unmapped.tsv").read_text().splitlines()
    return dict(line.split("\t", 1) for line in lines if line and not line.startswith("#"))


@pytest.mark.parametrize("device", ["reference", "cpu"])
def test_onnx_node_tests(capsys, device):
    mapped, passed, unmapped = [], [], {}
    failed, known = [], []
    for d in sorted(NODE_DIR.iterdir()):
        try:
            got, want = _run_case(d, device)
        except Unmapped as e:
            unmapped[d.name] = str(e)
            continue
        mapped.append(d.name)
        if all(_matches(g, w) for g, w in zip(got, want, strict=True)):
            passed.append(d.name)
        elif d.name in KNOWN_DIFFERENCES:
            known.append(d.name)
        else:
            failed.append(d.name)
    with capsys.disabled():
        print(
            f"\nonnx {onnx.__version__} node tests on {device}: {len(mapped)} mapped onto cinn, {len(passed)} pass, "
            f"{len(known)} differ by definition ({', '.join(known)}), {len(failed)} fail, {len(unmapped)} unmapped"
        )
    assert not failed, failed
    assert set(known) <= set(KNOWN_DIFFERENCES)
    if onnx.__version__ != ONNX_VERSION:
        pytest.skip(f"onnx_unmapped.tsv lists onnx {ONNX_VERSION}'s node tests, this is {onnx.__version__}")
    expected = _expected_unmapped()
    wrong = {n: (unmapped.get(n, "mapped"), expected.get(n, "mapped")) for n in set(unmapped) | set(expected)
             if unmapped.get(n) != expected.get(n)}
    assert not wrong, f"(found, listed) for tests unmapped otherwise than onnx_unmapped.tsv says: {wrong}"
    assert len(mapped) == 251


def test_known_differences_are_real():
    """Round's ONNX test has halfway cases, where the two definitions part."""
    got, want = _run_case(NODE_DIR / "test_round")
    assert not _matches(got[0], want[0])
    halves = np.abs(np.abs(want[0]) - np.abs(got[0])) == 1
    assert halves.any()


