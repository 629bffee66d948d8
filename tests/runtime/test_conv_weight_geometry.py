"""A conv2d whose weight disagrees with its attributes (issue 9).

cvm-runtime never checks the weight's shape: its kernel (src/runtime/formal/ops/nn.cc:100, groupwise_conv2d) takes
the output channels, the weight's channels and the kernel size from the weight, the channels per group from the
data. cvmc follows that where the run is defined (the weight has `channels` rows of at least in_channels / groups
channels, and its kernel size gives the output's height and width) and refuses the rest as undefined. Each bound
is tested at the bound and one past it, on reference and cpu, against a direct port of the runtime's loop.
"""

import json

import numpy as np
import pytest
from cuda_host import HostDevice, host_compiler

import cvmc
import cvmc.runtime.devices.cuda as rc
from cvmc.runtime.frontend.graph import load_graph, write_params

DEVICES = ["reference", "cpu", "cuda"]  # cuda: the generated kernels on the emulated grid (tests/cuda_host.py)


def runtime_conv(x: np.ndarray, w: np.ndarray, groups: int, stride: int, pad: int) -> np.ndarray:
    """The loop of groupwise_conv2d, with the geometry taken where the runtime takes it."""
    n, ic, h, wd = x.shape
    oc, fc, fh, fw = w.shape
    oh, ow = (h + 2 * pad - fh) // stride + 1, (wd + 2 * pad - fw) // stride + 1
    ocg, icg = oc // groups, ic // groups
    y = np.zeros((n, oc, oh, ow), np.int64)
    for o in range(oc):
        first = o // ocg * icg
        for p in range(oh):
            for q in range(ow):
                for c in range(icg):
                    for i in range(fh):
                        for j in range(fw):
                            th, tw = p * stride + i - pad, q * stride + j - pad
                            if 0 <= th < h and 0 <= tw < wd:
                                y[0, o, p, q] += int(x[0, first + c, th, tw]) * int(w[o, c, i, j])
    return y.astype(np.int32)


def model(weight_shape, groups=2, stride=1, pad=1, kernel=(3, 3), channels=4, convs=1, seed=0):
    """A 1.1.0 model: data (1, 4, 5, 5) into `convs` conv2d nodes that all read the weight param `w`."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-127, 128, (1, 4, 5, 5)).astype(np.int8)
    w = rng.integers(-127, 128, weight_shape).astype(np.int32)
    out = (1, channels, (5 + 2 * pad - kernel[0]) // stride + 1, (5 + 2 * pad - kernel[1]) // stride + 1)
    attrs = json.dumps({"channels": str(channels), "kernel_size": str(tuple(kernel)),
                        "strides": f"({stride}, {stride})", "padding": f"({pad}, {pad})", "groups": str(groups),
                        "use_bias": "False"})
    nodes = [{"op": "null", "name": "data", "inputs": []}, {"op": "null", "name": "w", "inputs": []}]
    nodes += [{"op": "cvm_op", "name": f"conv{i}", "inputs": [[0, 0, 0], [1, 0, 0]],
               "attrs": {"func_name": "conv2d", "num_inputs": "2", "num_outputs": "1", "flatten_data": "0"}}
              for i in range(convs)]
    entries = 2 + convs
    doc = {"nodes": nodes, "arg_nodes": [0, 1], "node_row_ptr": list(range(entries + 1)),
           "heads": [[2 + i, 0, 0] for i in range(convs)], "version": "cvm_1.1.0",
           "attrs": {"dltype": ["list_str", ["int32"] * entries], "storage_id": ["list_int", list(range(entries))],
                     "shape": ["list_shape", [[1, 4, 5, 5], list(weight_shape)] + [list(out)] * convs],
                     "precision": ["list_int", [8, 8] + [-1] * convs],
                     "op_attrs": ["list_str", ["{}", "{}"] + [attrs] * convs]}}
    return json.dumps(doc), write_params({"w": w}), x, w


def load(js, pb, device):
    """Load as `load_model` does; on cuda, compile the loaded graph for the emulated grid."""
    if device != "cuda":
        return cvmc.load_model(js, pb, device=device)
    graph = load_graph(js, pb)
    if host_compiler() is None:
        pytest.skip("no host C++ compiler to emulate the CUDA grid")
    return rc.compile_graph(graph, device=HostDevice())


def infer(js, pb, x, device):
    m = load(js, pb, device)
    if device == "cuda":
        return m(x.astype(np.int32))[0].ravel()
    return np.frombuffer(m.infer(x.tobytes()), np.int32)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("channels", [2, 3, 4], ids=lambda c: f"weight_channels_{c}")
def test_weight_channels_at_and_past_in_channels_per_group_run_as_the_runtime(device, channels):
    """in_channels / groups is 2: a weight of 2 channels is the plain case, 3 and 4 run on their first 2."""
    js, pb, x, w = model((4, channels, 3, 3))
    assert np.array_equal(infer(js, pb, x, device), runtime_conv(x, w, 2, 1, 1).ravel())


@pytest.mark.parametrize("device", DEVICES)
def test_weight_channels_one_below_in_channels_per_group_is_undefined(device):
    js, pb, _, _ = model((4, 1, 3, 3))
    with pytest.raises(cvmc.CVMLogicError, match="undefined in cvm-runtime: expected weight shape"):
        load(js, pb, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("side", [2, 3], ids=lambda s: f"weight_kernel_{s}")
def test_a_weight_kernel_giving_the_outputs_size_runs_as_the_runtime(device, side):
    """Stride 2, no padding, kernel_size 3 on 5 pixels: 2 outputs; a 2x2 weight gives 2 too, (5 - 2) // 2 + 1."""
    js, pb, x, w = model((4, 2, side, side), stride=2, pad=0)
    assert np.array_equal(infer(js, pb, x, device), runtime_conv(x, w, 2, 2, 0).ravel())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("side", [1, 4], ids=lambda s: f"weight_kernel_{s}")
def test_a_weight_kernel_one_past_the_outputs_size_is_undefined(device, side):
    """A 1x1 weight gives 3 outputs, a 4x4 one 1: the runtime writes past the output or leaves some unwritten."""
    js, pb, _, _ = model((4, 2, side, side), stride=2, pad=0)
    with pytest.raises(cvmc.CVMLogicError, match="undefined in cvm-runtime"):
        load(js, pb, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rows", [3, 5])
def test_weight_rows_other_than_channels_are_undefined(device, rows):
    js, pb, _, _ = model((rows, 2, 3, 3))
    with pytest.raises(cvmc.CVMLogicError, match="undefined in cvm-runtime"):
        load(js, pb, device)


@pytest.mark.parametrize("device", DEVICES)
def test_a_shared_wide_weight_is_not_modelled(device):
    """Cutting the param would change it for the other reader: a documented limit of cvmc, not the runtime's."""
    js, pb, _, _ = model((4, 2, 3, 3), convs=2)
    load(js, pb, device)  # the plain weight may be shared
    js, pb, _, _ = model((4, 3, 3, 3), convs=2)
    with pytest.raises(cvmc.CVMLogicError, match="not modelled by cvmc: .* read 2 times"):
        load(js, pb, device)


def test_the_ir_keeps_the_plain_weight():
    """The conv2d op of the cvm dialect means the plain convolution: a builder refuses any other weight."""
    from cvmc.dialects import cvm_rules as rules

    attrs = rules.parse_attrs("conv2d", {"channels": "4", "kernel_size": "(3, 3)", "padding": "(1, 1)", "groups": "2",
                                         "use_bias": "False"})
    with pytest.raises(cvmc.CVMLogicError, match=r"expected weight shape \[4, 2, 3, 3\], got \[4, 3, 3, 3\]"):
        rules.infer("conv2d", attrs, [(1, 4, 5, 5), (4, 3, 3, 3)], [8, 8])
