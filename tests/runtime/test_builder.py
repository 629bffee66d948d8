"""CvmBuilder: the graphs it builds equal hand-built ones and the ones its exported files load to."""

import re

import numpy as np
import pytest

import cvmc
from cvmc.errors import CVMLogicError, CVMRuntimeError
from cvmc.runtime.builder import CvmBuilder, Tensor
from cvmc.runtime.frontend.graph import Graph, Node, load_graph

RNG = np.random.default_rng(7)
W1 = RNG.integers(-127, 128, (10, 64))
B1 = RNG.integers(-127, 128, (10,))
CW = RNG.integers(-127, 128, (4, 3, 3, 3))
CB = RNG.integers(-127, 128, (4,))
W2 = RNG.integers(-127, 128, (10, 64))


def _mlp() -> tuple[CvmBuilder, Tensor]:
    b = cvmc.CvmBuilder("mlp")
    x = b.create_input([1, 64], precision=8)
    w = b.create_param(W1, precision=8, name="w")
    bias = b.create_param(B1, precision=8, name="b")
    y = b.dense(x, w, bias, units=10)
    return b, b.cvm_right_shift(y, precision=8, shift_bit=7)


def _convnet() -> tuple[CvmBuilder, Tensor]:
    b = CvmBuilder("cnn")
    x = b.create_input((1, 3, 8, 8), precision=8)
    w = b.create_param(CW, precision=8, name="conv_w")
    bias = b.create_param(CB, precision=8, name="conv_b")
    y = b.conv2d(x, w, bias, channels=4, kernel_size=(3, 3), padding=[1, 1])
    y = b.relu(b.cvm_right_shift(y, precision=8, shift_bit=8))
    y = b.flatten(b.max_pool2d(y, pool_size=(2, 2), strides=(2, 2)))
    w2 = b.create_param(W2, precision=8, name="fc_w")
    y = b.dense(y, w2, units=10, name="fc")
    return b, b.cvm_right_shift(y, precision=8, shift_bit=9)


def assert_same_graph(a: Graph, b: Graph) -> None:
    assert a.nodes == b.nodes
    assert (a.heads, a.version, a.postprocess, a.gas) == (b.heads, b.version, b.postprocess, b.gas)
    assert a.params.keys() == b.params.keys()
    for k in a.params:
        assert a.params[k].dtype == np.int32 and np.array_equal(a.params[k], b.params[k]), k


SHIFT = {"precision": 8, "is_sign": True}


def test_mlp_equals_hand_built_graph():
    b, y = _mlp()
    want = Graph(
        nodes=[
            Node("data", "null", shapes=((1, 64),), precisions=(8,)),
            Node("w", "null", shapes=((10, 64),), precisions=(8,)),
            Node("b", "null", shapes=((10,),), precisions=(8,)),
            # 8 + 8 + bitlen(64) = 23, with the bias max(23, 8) + 1
            Node("dense_3", "dense", [(0, 0), (1, 0), (2, 0)], {"units": 10, "use_bias": True}, ((1, 10),), (24,)),
            Node("cvm_right_shift_4", "cvm_right_shift", [(3, 0)], {**SHIFT, "shift_bit": 7}, ((1, 10),), (8,)),
        ],
        heads=[(4, 0)],
        params={"w": W1.astype(np.int32), "b": B1.astype(np.int32)},
        # variables 5 * (64 + 640 + 10); dense (3 * 64 + 1 + 5) * 10; shift (1 + 5) * 10
        gas=5 * 714 + 198 * 10 + 60,
    )
    assert (y.shape, y.precision) == ((1, 10), 8)
    assert_same_graph(b.graph([y]), want)


def test_convnet_equals_hand_built_graph():
    b, y = _convnet()
    conv = {"channels": 4, "kernel_size": (3, 3), "strides": (1, 1), "padding": (1, 1), "dilation": (1, 1),
            "groups": 1, "layout": "NCHW", "kernel_layout": "OIHW", "out_layout": "__undef__", "out_dtype": "same",
            "use_bias": True}
    pool = {"pool_size": (2, 2), "strides": (2, 2), "padding": (0, 0), "layout": "NCHW", "ceil_mode": False}
    want = Graph(
        nodes=[
            Node("data", "null", shapes=((1, 3, 8, 8),), precisions=(8,)),
            Node("conv_w", "null", shapes=((4, 3, 3, 3),), precisions=(8,)),
            Node("conv_b", "null", shapes=((4,),), precisions=(8,)),
            Node("conv2d_3", "conv2d", [(0, 0), (1, 0), (2, 0)], conv, ((1, 4, 8, 8),), (22,)),
            Node("cvm_right_shift_4", "cvm_right_shift", [(3, 0)], {**SHIFT, "shift_bit": 8}, ((1, 4, 8, 8),), (8,)),
            Node("relu_5", "relu", [(4, 0)], {}, ((1, 4, 8, 8),), (8,)),
            Node("max_pool2d_6", "max_pool2d", [(5, 0)], pool, ((1, 4, 4, 4),), (8,)),
            Node("flatten_7", "flatten", [(6, 0)], {}, ((1, 64),), (8,)),
            Node("fc_w", "null", shapes=((10, 64),), precisions=(8,)),
            Node("fc", "dense", [(7, 0), (8, 0)], {"units": 10, "use_bias": False}, ((1, 10),), (23,)),
            Node("cvm_right_shift_10", "cvm_right_shift", [(9, 0)], {**SHIFT, "shift_bit": 9}, ((1, 10),), (8,)),
        ],
        heads=[(10, 0)],
        params={"conv_w": CW.astype(np.int32), "conv_b": CB.astype(np.int32), "fc_w": W2.astype(np.int32)},
        gas=(5 * (192 + 108 + 4 + 640)      # variables
             + (3 * 27 + 1 + 5) * 256       # conv2d
             + 2 * 6 * 256                  # right shift, relu
             + (4 + 5) * 64 + 6 * 64        # max_pool2d, flatten
             + (3 * 64 + 5) * 10 + 6 * 10),  # dense, right shift
    )
    assert_same_graph(b.graph(y), want)


@pytest.mark.parametrize("build", [_mlp, _convnet])
def test_export_loads_to_the_same_graph(build, tmp_path):
    b, y = build()
    g = b.export(tmp_path / "out", [y], postprocess="argmax")
    assert g.postprocess == "argmax"
    assert_same_graph(load_graph(tmp_path / "out" / "model.json", tmp_path / "out" / "params.bin"), g)


def test_compile_runs_the_graph():
    b, y = _mlp()
    x = RNG.integers(-127, 128, (1, 64))
    (out,) = b.compile([y], device="reference").run(x)
    acc = x @ W1.T + B1
    want = np.clip(((acc >> 6) + 1) >> 1, -127, 127)
    np.testing.assert_array_equal(out, want)


def test_several_outputs_and_two_results():
    b = CvmBuilder()
    x = b.create_input([2, 4, 6], precision=8)
    count, boxes = b.get_valid_counts(x, score_threshold=10)
    assert (count.shape, count.precision, boxes.shape, boxes.precision) == ((2,), 6, (2, 4, 6), 8)
    kept = b.non_max_suppression(boxes, count, iou_threshold=30)
    g = b.graph([count, kept, x])
    assert g.heads == [(1, 0), (2, 0), (0, 0)]
    assert g.nodes[2].inputs == [(1, 1), (1, 0)]
    cat = b.concatenate(x, x, x, axis=1)
    assert cat.shape == (2, 12, 6)


def test_attribute_values_are_typed():
    """Tuples as lists or ints, numpy integers: stored as cvm_rules' Python types."""
    b = CvmBuilder()
    x = b.create_input([1, 1, 4, 4], precision=8)
    y = b.max_pool2d(x, pool_size=[np.int64(2), 2], strides=np.array([2, 2]), ceil_mode=np.bool_(False))
    t = b.tile(y, reps=3)
    g = b.graph(t)
    assert g.nodes[1].attrs["pool_size"] == (2, 2) and g.nodes[1].attrs["strides"] == (2, 2)
    assert type(g.nodes[1].attrs["pool_size"][0]) is int and g.nodes[1].attrs["ceil_mode"] is False
    assert g.nodes[2].attrs == {"reps": (3,)} and t.shape == (1, 1, 2, 6)


def test_precision_overflow():
    b = CvmBuilder()
    x = b.create_input([4], precision=8)
    x32 = b.broadcast_mul(b.broadcast_mul(x, x), b.broadcast_mul(x, x))
    assert x32.precision == 32
    with pytest.raises(CVMLogicError, match="output precision would be 40, expected at most 32"):
        b.broadcast_mul(x32, x)


@pytest.mark.parametrize(("misuse", "error", "message"), [
    # the caller's fault, a logic error naming the node (a model file with this node: cvm-runtime's LOG(FATAL) in
    # nn.cc:71, a runtime error, test_a_file_keeps_the_runtime_class)
    (lambda b, x, w: b.dense(x, w, units=11), CVMLogicError,
     "node 'dense_2' (dense): expected weight shape [11, 64], got [10, 64]"),
    (lambda b, x, w: b.dense(x, w, units=11, name="fc"), CVMLogicError, "node 'fc' (dense): expected weight shape"),
    (lambda b, x, w: b.dense(x, w), CVMLogicError, "dense needs the attribute 'units'"),
    (lambda b, x, w: b.dense(x, w, units=10, stride=1), CVMLogicError, "unknown attribute 'stride' of dense"),
    (lambda b, x, w: b.dense(x, w, units="10"), CVMLogicError,
     "attribute 'units' of dense: expected an integer, got '10'"),
    (lambda b, x, w: b.relu(x, name="r", shift=1), CVMLogicError, "unknown attribute 'shift' of relu"),
    (lambda b, x, w: b.conv2d(x, w, channels=10, kernel_size=(1, 1)), CVMLogicError,
     "expected data of rank 4, got shape [1, 64]"),
    (lambda b, x, w: b.cvm_right_shift(x, precision=8, shift_bit=0), CVMLogicError,
     "expected 'shift_bit' in [1, 32], got 0"),
    (lambda b, x, w: b.cvm_left_shift(x, precision=8, shift_bit=30), CVMLogicError,
     "input precision 8 plus 'shift_bit' 30 exceeds 32"),
    (lambda b, x, w: b.relu(CvmBuilder().create_input([1], 8)), CVMLogicError, "expected tensors of this builder"),
    (lambda b, x, w: b.create_input([1, 64], precision=8), CVMLogicError, "the model already has an input"),
    (lambda b, x, w: b.create_param(np.array([128]), precision=8), CVMLogicError,
     "param 'param_2': expected values of precision 8 (|x| <= 127), got 128 at index 0"),
    (lambda b, x, w: b.create_param(np.array([1.5]), precision=8), CVMLogicError, "expected integer values"),
    (lambda b, x, w: b.create_param(np.array([1]), precision=33), CVMLogicError,
     "expected 'precision' in [1, 32], got 33"),
    (lambda b, x, w: b.create_param(np.array([1]), precision=8, name="w"), CVMLogicError,
     "a node named 'w' already exists"),
    (lambda b, x, w: b.create_param(np.zeros((0, 2), np.int32), precision=8), CVMLogicError,
     "expected every dim of the shape of 'param_2' in [1, 16777216], got [0, 2]"),
    (lambda b, x, w: b.graph([]), CVMLogicError, "expected at least one output"),
    (lambda b, x, w: b.graph(x, postprocess="softmax"), CVMLogicError, "expected postprocess None"),
])
def test_misuse(misuse, error, message):
    b = CvmBuilder()
    x = b.create_input([1, 64], precision=8)
    w = b.create_param(W1, precision=8, name="w")
    with pytest.raises(error, match=re.escape(message)):
        misuse(b, x, w)
    assert len(b.graph(x).nodes) == 2  # a failed call adds no node


def test_outputs_default_to_the_tensors_nothing_reads(tmp_path):
    b = CvmBuilder("net")
    x = b.create_input([1, 4], precision=8)
    y = b.relu(x)
    z = b.negative(y)
    assert [(t.node, t.index) for t in b.sinks()] == [(z.node, z.index)]
    graph = b.export(tmp_path)
    assert graph.heads == [(z.node, z.index)]
    model = cvmc.load_model(tmp_path / "model.json", tmp_path / "params.bin", device="reference")
    np.testing.assert_array_equal(model.run(np.array([[-3, 0, 5, 127]]))[0], [[0, 0, -5, -127]])
    np.testing.assert_array_equal(b.compile(device="reference").run(np.array([[1, -1, 2, -2]]))[0], [[-1, 0, -2, 0]])


def test_a_file_keeps_the_runtime_class(tmp_path):
    """The builder's misuse is the caller's fault (a logic error); a model file with the same node keeps
    cvm-runtime's class: a dense weight of the wrong shape is its LOG(FATAL) (nn.cc:71), a runtime error."""
    b, y = _mlp()
    b.export(tmp_path, [y])
    text = (tmp_path / "model.json").read_text()
    bad = text.replace('\\"units\\": \\"10\\"', '\\"units\\": \\"11\\"')
    assert bad != text
    (tmp_path / "model.json").write_text(bad)
    with pytest.raises(CVMRuntimeError, match=re.escape("node 3 ('dense_3') (dense): expected weight shape [11, 64]")):
        load_graph(tmp_path / "model.json", tmp_path / "params.bin")
