"""convert-cvm-to-taskgraph: the digits CNN and small graphs per operator give the reference's values bit for bit
through the Task IR executor (and the CPU JIT); the graph has LeNet's form; unmappable nodes are named."""

import pathlib
import re

import numpy as np
import pytest
from conftest import CVM_CORPUS, case_input, case_meta, corpus_cases
from xdsl.context import Context
from xdsl.utils.exceptions import PassFailedException

from cvmc import CvmBuilder
from cvmc.dialects import cvm_rules as rules
from cvmc.dialects.taskgraph import (
    BlockOp,
    CaddOp,
    CcmpbOp,
    CcmpsOp,
    GraphOp,
    InputOp,
    OutputOp,
    ParamKind,
    Precision,
    RearrangeKind,
    SbOp,
    SiOp,
)
from cvmc.errors import CVMLogicError
from cvmc.passes.convert_cvm_to_taskgraph import ConvertCvmToTaskGraphPass, convert_graph
from cvmc.passes.taskgraph_build import from_task_layout, to_task_layout
from cvmc.passes.taskgraph_stats import graph_stats
from cvmc.runtime.devices.taskgraph_jit import TaskGraphJit
from cvmc.runtime.frontend.cvm_ir import graph_to_module
from cvmc.runtime.frontend.graph import Graph, load_graph
from cvmc.runtime.frontend.taskir_files import find_graph
from cvmc.runtime.references.cvm import run_graph
from cvmc.runtime.references.taskgraph import TaskGraphExecutor

P = ParamKind
DIGITS = CVM_CORPUS / "model_digits_cnn_000"
VALID = corpus_cases("op", "chain", "model")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CVMC_CACHE_DIR", str(tmp_path / "cache"))


def _inputs(graph: Graph, count: int, seed: int = 0) -> list[np.ndarray]:
    """Random inputs saturated to the input's precision, the extremes first."""
    node = graph.nodes[graph.input_id]
    bound = rules.precision_bound(node.precisions[0])
    rng = np.random.default_rng(seed)
    extremes = [np.full(node.shapes[0], v, dtype=np.int32) for v in (bound, -bound)]
    return (extremes + [rng.integers(-bound, bound + 1, node.shapes[0]).astype(np.int32) for _ in range(count)])[
        :count
    ]


def _run(step, graph: GraphOp, heads: list, x: np.ndarray) -> list[np.ndarray]:
    """The heads a step function (executor or JIT) gives for the cvm input x, in cvm layout."""
    inputs = {b.id: to_task_layout(x) for b in graph.blocks if isinstance(b, InputOp)} if x is not None else {}
    outs = step(inputs)
    ports = sorted(b.id for b in graph.blocks if isinstance(b, OutputOp))
    return [from_task_layout(outs[p], h.shape) for p, h in zip(ports, heads, strict=True)]


def check(graph: Graph, count: int = 6, jit: bool = False) -> GraphOp:
    """Convert, verify, and compare the executor (and the JIT) with the reference on `count` inputs."""
    module = convert_graph(graph_to_module(graph))
    task = find_graph(module)
    executor = TaskGraphExecutor(task)
    compiled = TaskGraphJit(module) if jit else None
    for x in _inputs(graph, count) if graph.input_id is not None else [None]:
        expected = run_graph(graph, x)
        for got, want in zip(_run(executor.step, task, expected, x), expected, strict=True):
            np.testing.assert_array_equal(got, want)
        if compiled is not None:
            for got, want in zip(_run(compiled.step, task, expected, x), expected, strict=True):
                np.testing.assert_array_equal(got, want)
    return task


def kinds(task: GraphOp) -> list[str]:
    return [b.kind for b in task.blocks]


def blocks_of(task: GraphOp, cls: type[BlockOp]) -> list:
    return [b for b in task.blocks if isinstance(b, cls)]


def params(block: BlockOp) -> dict[ParamKind, int | float | None]:
    return {p.kind.data: p.value for p in block.params.data}


def rand(shape, precision: int, seed: int = 1) -> np.ndarray:
    bound = rules.precision_bound(precision)
    return np.random.default_rng(seed).integers(-bound, bound + 1, shape)


# ---------------------------------------------------------------------------------------------------------
# The digits CNN of the corpus
# ---------------------------------------------------------------------------------------------------------


def test_digits_cnn_equals_the_reference_on_executor_and_jit():
    graph = load_graph(DIGITS / "model.json", DIGITS / "params.bin")
    module = convert_graph(graph_to_module(graph))
    task = find_graph(module)
    executor, compiled = TaskGraphExecutor(task), TaskGraphJit(module)
    inputs = [case_input(DIGITS), *_inputs(graph, 20, seed=3)]
    for x in inputs:
        (expected,) = run_graph(graph, x)
        (by_executor,) = _run(executor.step, task, [expected], x)
        (by_jit,) = _run(compiled.step, task, [expected], x)
        np.testing.assert_array_equal(by_executor, expected)
        np.testing.assert_array_equal(by_jit, expected)
    # The recorded logits of the corpus input, and its label (argmax) 2.
    (logits,) = _run(executor.step, task, [np.zeros((1, 10))], inputs[0])
    assert logits.reshape(-1).tolist() == np.frombuffer((DIGITS / "expected.bin").read_bytes(), "<i4").tolist()
    assert int(np.argmax(logits)) == 2


def test_digits_cnn_has_lenets_form():
    graph = load_graph(DIGITS / "model.json", DIGITS / "params.bin")
    task = find_graph(convert_graph(graph_to_module(graph)))
    assert kinds(task) == [
        "INPUT", "SIC2D", "SW2D", "SB", "CC2D", "SI", "CCMPB", "SIFC", "SWFC", "SB", "CVM", "SI", "CCMPB", "SI",
        "OUTPUT",
    ]  # fmt: skip
    assert len(task.edges) == 14
    conv, pool, head = task.blocks[4], task.blocks[6], task.blocks[12]
    assert conv.shape.extents() == {"y": 8, "x": 8, "f": 8, "r": 1, "ky": 3, "kx": 3, "iy": 8, "ix": 8}
    assert params(conv)[P.PAD_UP] == 1 and params(conv)[P.STRIDE_X] == 1
    # conv -> rq1 (shift 9, precision 8) -> relu -> pool 2x2: one CCMPB, CMP 0, INT_8 (clips at 127).
    assert pool.get_precision() == Precision.INT_8
    assert params(pool) == {
        P.CMP: 0, P.KERNEL_X: 2, P.KERNEL_Y: 2, P.PAD_UP: 0, P.PAD_DOWN: 0, P.PAD_LEFT: 0, P.PAD_RIGHT: 0,
        P.STRIDE_X: 2, P.STRIDE_Y: 2, P.BIT_SHIGT_NUM: 9,
    }  # fmt: skip
    assert params(head)[P.CMP] == -127 and params(head)[P.BIT_SHIGT_NUM] == 9
    # The rounding offset 2^8 of both shifts joined the biases.
    biases = [b.data.to_numpy() for b in blocks_of(task, SbOp)]
    assert biases[0].tolist() == (graph.params["conv_b"].astype(np.int64) + 256).tolist()
    assert biases[1].tolist() == (graph.params["fc_b"].astype(np.int64) + 256).tolist()
    # flatten: the c-major order of the pooled (y, x, f) box.
    (flatten,) = [e for e in task.edges if e.rearranges.data]
    (rearrange,) = flatten.rearranges.data
    assert rearrange.rearrange_kind == RearrangeKind.RESHAPE and rearrange.flat_matrix(0) == [1, 0, 2]
    assert [g.block_ids() for g in task.groups] == [[1, 2, 3, 4], [5, 6], [7, 8, 9, 10], [11, 12]]
    stats = {s.kind: s for s in graph_stats(task)}
    assert stats["CC2D"].macs == 8 * 8 * 8 * 9 and stats["CVM"].macs == 10 * 128


def _expected_refusals() -> dict[str, tuple[str, str]]:
    """case name -> (operator, key words of the reason), from the reviewed list beside this file."""
    out = {}
    for line in (pathlib.Path(__file__).parent / "taskgraph_refusals.tsv").read_text().splitlines():
        if line and not line.startswith("#"):
            name, op, reason = line.split("\t")
            out[name] = (op, reason)
    return out


EXPECTED_REFUSALS = _expected_refusals()


def test_the_refusal_list_names_corpus_operator_cases():
    names = {c.name for c in VALID}
    assert len(EXPECTED_REFUSALS) == 143
    assert set(EXPECTED_REFUSALS) <= names
    assert all(case_meta(CVM_CORPUS / n)["kind"] == "op" for n in EXPECTED_REFUSALS)


@pytest.mark.parametrize("case", VALID, ids=lambda d: d.name)
def test_corpus_graph_converts_exactly_or_names_its_node(case):
    """Every chain and model of the corpus converts (ResNet's adds and global sum included); an operator case
    converts, or is refused with its node named exactly when the reviewed list says so, for the listed reason."""
    graph = load_graph(case / "model.json", case / "params.bin")
    try:
        module, refusal = convert_graph(graph_to_module(graph)), ""
    except CVMLogicError as e:
        module, refusal = None, str(e)
    expected = EXPECTED_REFUSALS.get(case.name)
    if module is None:
        assert expected is not None, f"refused, but not in taskgraph_refusals.tsv: {refusal}"
        m = re.match(r"cannot convert node '[^']+' \((\w+)\) to Task IR: (.+)$", refusal)
        assert m is not None, refusal
        assert m.group(1) == expected[0] and expected[1] in m.group(2), (refusal, expected)
        return
    assert expected is None, f"listed as refused ({expected[1]}), but converts: update taskgraph_refusals.tsv"
    task = find_graph(module)
    x = case_input(case) if graph.input_id is not None else None
    expected = run_graph(graph, x)
    for got, want in zip(_run(TaskGraphExecutor(task).step, task, expected, x), expected, strict=True):
        np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------------------------------------
# One small graph per mapped operator
# ---------------------------------------------------------------------------------------------------------


def test_conv2d_with_few_channels_is_a_cc2d_with_stride_dilation_and_padding():
    b = CvmBuilder()
    x = b.create_input([1, 3, 11, 9], precision=8)
    w = b.create_param(rand((5, 3, 3, 2), 8), precision=8)
    y = b.conv2d(x, w, channels=5, kernel_size=(3, 2), strides=(2, 1), padding=(2, 1), dilation=(2, 3), use_bias=False)
    task = check(b.graph([y]), jit=True)
    assert kinds(task) == ["INPUT", "SIC2D", "SW2D", "CC2D", "SI", "OUTPUT"]
    conv = task.blocks[3]
    assert conv.bias_type is None
    assert params(conv)[P.DILATION_Y] == 2 and params(conv)[P.DILATION_X] == 3 and params(conv)[P.PAD_LEFT] == 1


def test_conv2d_with_eight_channels_is_a_cc_with_its_bias_and_the_shift_offset():
    b = CvmBuilder()
    x = b.create_input([1, 8, 6, 6], precision=8)
    w, bias = b.create_param(rand((4, 8, 3, 3), 8), precision=8), b.create_param(rand((4,), 12), precision=12)
    y = b.cvm_right_shift(b.conv2d(x, w, bias, channels=4, kernel_size=(3, 3)), precision=6, shift_bit=7)
    task = check(b.graph([y]))
    assert kinds(task) == ["INPUT", "SIC", "SW", "SB", "CC", "SI", "CCMPB", "SI", "CCMPS", "SI", "OUTPUT"]
    # precision 6: clip to [-31, 31]: CMP -31 in the CCMPB, 31 (no precision's top) in a CCMPS.
    assert params(task.blocks[6])[P.CMP] == -31 and task.blocks[6].get_precision() == Precision.INT_32
    assert params(task.blocks[8])[P.CMP] == 31 and params(task.blocks[8])[P.BIT_SHIGT_NUM] == 0


def test_dense_without_bias_takes_the_offset_as_constant_b():
    b = CvmBuilder()
    x = b.create_input([1, 20], precision=8)
    w = b.create_param(rand((7, 20), 8), precision=8)
    y = b.cvm_right_shift(b.dense(x, w, units=7, use_bias=False), precision=8, shift_bit=5)
    task = check(b.graph([y]), jit=True)
    assert kinds(task) == ["INPUT", "SIFC", "SWFC", "CVM", "SI", "CCMPB", "SI", "OUTPUT"]
    assert params(task.blocks[3]) == {P.CONSTANT_B: 16}


def test_dense_of_a_batch_is_a_1x1_convolution_over_the_rows():
    b = CvmBuilder()
    x = b.create_input([3, 10], precision=8)
    w, bias = b.create_param(rand((4, 10), 8), precision=8), b.create_param(rand((4,), 8), precision=8)
    task = check(b.graph([b.dense(x, w, bias, units=4)]))
    assert kinds(task) == ["INPUT", "SIC", "SW", "SB", "CC", "SI", "OUTPUT"]
    assert task.blocks[4].shape.extents() == {"y": 3, "x": 1, "f": 4, "r": 10, "ky": 1, "kx": 1, "iy": 3, "ix": 1}


def test_a_requantization_chain_is_one_ccmpb_and_its_offset_a_cadd_over_the_input():
    b = CvmBuilder()
    x = b.create_input([1, 2, 5, 5], precision=12)
    y = b.relu(b.cvm_right_shift(b.cvm_clip(x, precision=10), precision=8, shift_bit=2))
    task = check(b.graph([y]), jit=True)
    # The input has no bias: a CADD adds the offset 2; relu and the clips fold into CMP 0 and INT_8.
    assert kinds(task) == ["INPUT", "SI", "CADD", "SI", "CCMPB", "SI", "OUTPUT"]
    assert params(task.blocks[2]) == {P.CONSTANT_B: 2}
    assert params(task.blocks[4])[P.CMP] == 0 and params(task.blocks[4])[P.BIT_SHIGT_NUM] == 2
    assert task.blocks[4].get_precision() == Precision.INT_8


@pytest.mark.parametrize(
    ("a_min", "a_max", "precision"),
    [(0, 255, Precision.UINT_8), (-255, 255, Precision.INT_9), (-1, 1, Precision.TERNARY), (-3, 100, None)],
)
def test_clip_takes_the_precision_that_tops_out_at_its_upper_bound(a_min, a_max, precision):
    b = CvmBuilder()
    x = b.create_input([1, 30], precision=10)
    task = check(b.graph([b.clip(x, a_min=a_min, a_max=a_max)]))
    ccmpb = blocks_of(task, CcmpbOp)[0]
    assert params(ccmpb)[P.CMP] == a_min
    if precision is None:
        assert ccmpb.get_precision() == Precision.INT_32
        assert params(blocks_of(task, CcmpsOp)[0])[P.CMP] == a_max
    else:
        assert ccmpb.get_precision() == precision and not blocks_of(task, CcmpsOp)


def test_max_pool_with_padding_over_negative_values_reads_a_border_of_int32_min():
    b = CvmBuilder()
    x = b.create_input([1, 3, 6, 6], precision=8)
    y = b.max_pool2d(x, pool_size=(3, 2), strides=(2, 2), padding=(1, 1), ceil_mode=True)
    task = check(b.graph([y]), jit=True)
    # 6 rows padded by 1 on top and, for the last ceil-mode window, 2 below.
    border = task.blocks[1]
    assert isinstance(border, SiOp) and border.shape.extents() == {"y": 9, "x": 8, "f": 3}
    assert border.data.to_numpy().min() == -(2**31)
    (iface,) = border.inputs.data[0].interfaces.data
    assert iface.position.extents() == {"y": 1, "x": 1}
    assert params(task.blocks[2])[P.PAD_UP] == 0


def test_max_pool_after_relu_pads_with_the_ccmpbs_zeros():
    b = CvmBuilder()
    x = b.create_input([1, 3, 7, 6], precision=8)
    y = b.max_pool2d(b.relu(x), pool_size=(3, 3), strides=(2, 2), padding=(1, 1), ceil_mode=True)
    task = check(b.graph([y]))
    assert kinds(task) == ["INPUT", "SI", "CCMPB", "SI", "OUTPUT"]
    pool = params(task.blocks[2])
    # The last ceil-mode window of the 6 columns reaches 2 columns past them.
    assert (pool[P.PAD_UP], pool[P.PAD_DOWN], pool[P.PAD_LEFT], pool[P.PAD_RIGHT], pool[P.CMP]) == (1, 1, 1, 2, 0)


def test_max_and_sum_over_h_and_w_are_a_ccmpb_and_a_cavg_window():
    b = CvmBuilder()
    x = b.create_input([1, 4, 5, 3], precision=8)
    m = b.max(x, axis=(2, 3))
    s = b.cvm_right_shift(b.sum(x, axis=(-1, -2), keepdims=True), precision=8, shift_bit=3)
    task = check(b.graph([m, s]))
    assert "CAVG" in kinds(task)
    cavg = task.blocks[kinds(task).index("CAVG")]
    assert params(cavg)[P.KERNEL_Y] == 5 and params(cavg)[P.CONSTANT_B] == 4


def test_grouped_conv2d_is_one_cc_per_group_over_boxes_of_the_channels():
    b = CvmBuilder()
    x = b.create_input([1, 4, 5, 5], precision=8)
    w, bias = b.create_param(rand((6, 2, 3, 3), 8), precision=8), b.create_param(rand((6,), 10), precision=10)
    y = b.conv2d(x, w, bias, channels=6, kernel_size=(3, 3), padding=(1, 1), groups=2)
    y = b.relu(b.cvm_right_shift(y, precision=8, shift_bit=6))
    task = check(b.graph([y]), jit=True)
    assert kinds(task) == [
        "INPUT", "SIC2D", "SW2D", "SB", "CC2D", "SIC2D", "SW2D", "SB", "CC2D", "SI", "CCMPB", "SI", "OUTPUT",
    ]  # fmt: skip
    # Each CC reads its 2 channels of the input and writes its 3 into the SI; the offset 32 joined both biases.
    reads = task.blocks[0].outputs.data[0].interfaces.data
    assert [(i.position.dim("f"), i.size.dim("f")) for i in reads] == [(0, 2), (2, 2)]
    writes = task.blocks[9].inputs.data[0].interfaces.data
    assert [(i.position.dim("f"), i.size.dim("f")) for i in writes] == [(0, 3), (3, 3)]
    assert task.blocks[3].data.to_numpy().tolist() == (b.graph([y]).params["param_2"][:3] + 32).tolist()


def test_slices_are_boxes_and_strides_a_1x1_cavg():
    b = CvmBuilder()
    x = b.create_input([1, 4, 7, 6], precision=8)
    box = b.strided_slice(b.relu(x), begin=(0, 1, 2, 0), end=(1, 3, 6, 5))
    strided = b.strided_slice(x, begin=(0, 2, 1, 1), end=(1, 3, 7, 6), stride=(1, 1, 3, 2))
    like = b.slice_like(b.flatten(x), b.create_param(np.zeros((1, 30), np.int32), precision=1), axis=(1,))
    task = check(b.graph([box, strided, like]), jit=True)
    # box: read from the relu's CCMPB; strided: the box of rows 1..10 step 3, columns 1..5 step 2, then a CAVG.
    relu = blocks_of(task, CcmpbOp)[0]
    (read,) = relu.outputs.data[0].interfaces.data
    assert (read.position.given(), read.size.extents()) == ({"y": 2, "x": 0, "f": 1}, {"y": 4, "x": 5, "f": 2})
    cavg = task.blocks[kinds(task).index("CAVG")]
    assert params(cavg)[P.STRIDE_Y] == 3 and params(cavg)[P.STRIDE_X] == 2
    assert cavg.shape.extents() == {"y": 2, "x": 3, "f": 1, "ky": 1, "kx": 1, "iy": 4, "ix": 5}
    # like: the first 30 values of the flattened input, a box of an SI holding it.
    assert task.blocks[-1].shape.extents() == {"f": 30}


def test_abs_and_broadcast_max_are_a_2x1_window_max_over_two_rows():
    b = CvmBuilder()
    x = b.create_input([1, 3, 4, 4], precision=8)
    m = b.broadcast_max(b.abs(x), b.create_param(rand((3, 4, 4), 8, seed=2), precision=8))
    clamped = b.broadcast_max(b.create_param(np.array([-5]), precision=4), x)
    y = b.cvm_right_shift(m, precision=4, shift_bit=2)
    task = check(b.graph([y, clamped]), jit=True)
    pools = [c for c in blocks_of(task, CcmpbOp) if c.shape.dim("ky") == 2]
    assert len(pools) == 2 and params(pools[1])[P.BIT_SHIGT_NUM] == 2  # the shift joined the second max
    assert [params(c)[P.CMP] for c in blocks_of(task, CcmpbOp)][-1] == -5  # max with -5: a clamp


def test_elementwise_and_broadcast_arithmetic():
    b = CvmBuilder()
    x = b.create_input([1, 3, 4, 4], precision=8)
    per_channel = b.create_param(rand((3, 1, 1), 6), precision=6)
    scalar = b.create_param(np.array([-3]), precision=4)
    varying = b.create_param(rand((1, 4, 4), 5), precision=5)
    y = b.elemwise_sub(b.broadcast_add(x, per_channel), b.negative(x))
    y = b.broadcast_mul(b.broadcast_sub(scalar, y), varying)
    y = b.elemwise_add(b.broadcast_mul(y, scalar), b.cvm_left_shift(x, precision=12, shift_bit=3))
    task = check(b.graph([y]), jit=True)
    assert {"CADD", "CVS", "CVVH"} <= set(kinds(task))
    # x + per_channel: a CADD whose SB holds the param.
    assert blocks_of(task, CaddOp)[0].has_vector_bias


def test_broadcast_mul_by_a_per_channel_param_is_a_cax():
    b = CvmBuilder()
    x = b.create_input([1, 3, 2, 2], precision=8)
    alpha = b.create_param(np.array([[[2]], [[-1]], [[3]]]), precision=3)
    task = check(b.graph([b.broadcast_mul(alpha, x)]))
    assert kinds(task) == ["INPUT", "SI", "SB", "CAX", "SI", "OUTPUT"]
    assert task.blocks[2].data.to_numpy().tolist() == [2, -1, 3]


def test_views_are_edge_rearranges():
    b = CvmBuilder()
    x = b.create_input([1, 3, 4, 2], precision=8)
    flat = b.flatten(b.relu(x))
    image = b.reshape(flat, shape=(1, 2, 3, 4))
    turned = b.transpose(b.squeeze(b.expand_dims(image, axis=0), axis=(0,)), axes=(0, 2, 3, 1))
    task = check(b.graph([flat, turned]), jit=True)
    edges = {e.rearranges.data[-1].rearrange_kind for e in task.edges if e.rearranges.data}
    assert RearrangeKind.RESHAPE in edges and RearrangeKind.SHUFFLE in edges
    assert kinds(task).count("CCMPB") == 1


def test_upsampling_is_a_scale_rearrange():
    b = CvmBuilder()
    x = b.create_input([1, 2, 3, 3], precision=8)
    y = b.upsampling(b.reshape(b.flatten(b.relu(x)), shape=(1, 2, 3, 3)), scale=2)
    task = check(b.graph([y]), jit=True)
    scales = [r for e in task.edges for r in e.rearranges.data if r.rearrange_kind == RearrangeKind.SCALE]
    assert len(scales) == 1 and scales[0].flat_matrix(0) == [2, 2]


@pytest.mark.parametrize(("shape", "axis"), [((1, 2, 3, 3), 1), ((1, 2, 3, 3), 2), ((1, 2, 3, 3), 3), ((1, 5), 1)])
def test_concatenate_writes_boxes_side_by_side(shape, axis):
    b = CvmBuilder()
    x = b.create_input(shape, precision=8)
    other = b.create_param(rand(shape, 4), precision=4)
    y = b.concatenate(b.relu(x), other, x, axis=axis)
    task = check(b.graph([y]))
    (joined,) = [s for s in blocks_of(task, SiOp) if s.inputs.data and len(s.inputs.data[0].interfaces.data) == 3]
    offsets = [i.position.dim({1: "f", 2: "y", 3: "x"}[axis] if len(shape) == 4 else "f")
               for i in joined.inputs.data[0].interfaces.data]  # fmt: skip
    step = shape[axis] if len(shape) == 4 else shape[1]
    assert offsets == [0, step, 2 * step]


def test_concatenate_of_images_along_the_batch_flattens_them():
    b = CvmBuilder()
    x = b.create_input([1, 2, 2, 3], precision=8)
    check(b.graph([b.concatenate(b.relu(x), x, axis=0)]))


@pytest.mark.parametrize("precision", [6, 20])
def test_cvm_lut_is_a_clut_over_a_two_complement_table(precision):
    b = CvmBuilder()
    x = b.create_input([1, 40], precision=precision)
    table = b.create_param(rand((13,), 8), precision=8)
    task = check(b.graph([b.cvm_lut(x, table, in_dim=13)]), count=20)
    clut = task.blocks[kinds(task).index("CLUT")]
    assert params(clut)[P.LUT_DW] == (6 if precision == 6 else 5)


@pytest.mark.parametrize(("precision", "shift"), [(32, 20), (3, 32), (32, 1)])
def test_right_shift_of_a_wide_value_shifts_before_rounding(precision, shift):
    b = CvmBuilder()
    x = b.create_input([1, 16], precision=precision)
    y = b.cvm_right_shift(x, precision=8, shift_bit=shift)
    if precision == 32 and shift == 1:  # x + 1 may leave int32 and there is nothing to shift first
        with pytest.raises(CVMLogicError, match="rounding offset 1 added to a value of precision 32"):
            convert_graph(graph_to_module(b.graph([y])))
        return
    task = check(b.graph([y]), count=10)
    assert [params(c)[P.BIT_SHIGT_NUM] for c in blocks_of(task, CcmpbOp)] == [min(shift - 1, 31), 1]


def test_a_value_read_twice_keeps_its_bias_and_the_offset_goes_to_a_cadd():
    b = CvmBuilder()
    x = b.create_input([1, 6], precision=8)
    w, bias = b.create_param(rand((6, 6), 8), precision=8), b.create_param(rand((6,), 8), precision=8)
    y = b.dense(x, w, bias, units=6)
    task = check(b.graph([b.cvm_right_shift(y, precision=8, shift_bit=4), y]))
    assert blocks_of(task, SbOp)[0].data.to_numpy().tolist() == b.graph([y]).params["param_2"].tolist()
    assert params(blocks_of(task, CaddOp)[0]) == {P.CONSTANT_B: 8}


def test_a_param_head_and_a_param_input():
    b = CvmBuilder()
    x = b.create_input([1, 4], precision=8)
    p = b.create_param(np.arange(4).reshape(1, 4), precision=4)
    check(b.graph([b.elemwise_add(p, p), p, b.relu(x)]))


def test_layout_helpers_round_trip():
    a = np.arange(24).reshape(1, 2, 3, 4)
    assert to_task_layout(a)[:4].tolist() == [0, 12, 1, 13]
    np.testing.assert_array_equal(from_task_layout(to_task_layout(a), a.shape), a)
    flat = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(from_task_layout(to_task_layout(flat), flat.shape), flat)


# ---------------------------------------------------------------------------------------------------------
# What no block computes
# ---------------------------------------------------------------------------------------------------------


def _take_graph() -> Graph:
    b = CvmBuilder()
    x = b.create_input([1, 8], precision=8)
    y = b.relu(x)
    return b.graph([b.take(y, b.create_param(np.array([0, 3]), precision=3), name="pick")])


def test_an_unmappable_op_names_its_node():
    with pytest.raises(CVMLogicError, match=r"cannot convert node 'pick' \(take\) to Task IR: no task block computes"):
        convert_graph(graph_to_module(_take_graph()))


def test_the_pass_reports_an_unmappable_op_as_a_failure():
    module = graph_to_module(_take_graph())
    with pytest.raises(PassFailedException, match=r"'pick' \(take\)"):
        ConvertCvmToTaskGraphPass().apply(Context(), module)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda b, x: b.strided_slice(x, begin=(0, 0, 2), end=(1, 2, 0), stride=(1, 1, -1)),
         r"\(strided_slice\) to Task IR: strides \[1, -1, 1\] over C, H, W"),
        (lambda b, x: b.max_pool2d(b.concatenate(x, x, axis=0), pool_size=(2, 2)), r"\(max_pool2d\).*batch 2"),
        (lambda b, x: b.sum(x, axis=(1,)), r"\(sum\).*not axes \[1\]"),
        (lambda b, x: b.broadcast_add(x, b.relu(b.create_param(rand((1, 2, 1, 3), 4), precision=4))),
         r"\(broadcast_add\).*a computed operand of shape \[1, 2, 1, 3\] is broadcast"),
        (lambda b, x: b.cvm_lut(b.cvm_left_shift(x, precision=24, shift_bit=16),
                                b.create_param(rand((70000,), 8), precision=8), in_dim=70000),  # fmt: skip
         r"\(cvm_lut\).*a table of 70000 entries needs 18 bits"),
    ],
    ids=["negative-stride", "batch", "sum-channels", "broadcast-computed", "lut-precision"],
)
def test_what_no_block_computes_is_named(build, message):
    b = CvmBuilder()
    x = b.create_input([1, 2, 3, 3], precision=8)
    with pytest.raises(CVMLogicError, match=message):
        convert_graph(graph_to_module(b.graph([build(b, x)])))


def test_a_computed_weight_is_refused():
    b = CvmBuilder()
    x = b.create_input([1, 4], precision=8)
    weight = b.relu(b.create_param(rand((3, 4), 8), precision=8))
    with pytest.raises(CVMLogicError, match="its weight is computed"):
        convert_graph(graph_to_module(b.graph([b.dense(x, weight, units=3, use_bias=False)])))
