"""Malformed model files: each a clear CVMError of the runtime's class, never a crash."""

import json
import struct
from math import prod

import numpy as np
import pytest
from conftest import CVM_CORPUS

import cvmc
from cvmc.runtime.frontend.graph import load_graph, read_params, write_params

CONV = CVM_CORPUS / "conv2d_000"


def _load(js, pb):
    return cvmc.load_model(js, pb, device="reference")


def test_paths_bytes_and_text_load_the_same_model():
    js, pb = CONV / "model.json", CONV / "params.bin"
    a = _load(js, pb)
    b = _load(js.read_bytes(), pb.read_bytes())
    c = _load(js.read_text(), str(pb))
    assert a.gas == b.gas == c.gas == 8196


@pytest.mark.parametrize(
    ("graph", "error", "words"),
    [
        # the runtime's JSON reader fails where it reads (a CHECK), or its loader misses a key (a VERIFY)
        (b"", cvmc.CVMRuntimeError, "expected '{' at byte 0 .* got end of file"),
        (b"{not json", cvmc.CVMRuntimeError, "expected '\"' at byte 2"),
        (b"[1, 2]", cvmc.CVMRuntimeError, "expected '{' at byte 1"),
        (b'{"nodes": []}', cvmc.CVMLogicError, "needs 'nodes', 'heads' and 'attrs'"),
        (b"\xff\xfe garbage", cvmc.CVMRuntimeError, "expected '{'"),
    ],
)
def test_garbage_json(graph, error, words):
    with pytest.raises(error, match=words):
        _load(graph, (CONV / "params.bin").read_bytes())


def test_params_errors_name_the_problem():
    pb = (CONV / "params.bin").read_bytes()
    js = (CONV / "model.json").read_bytes()
    with pytest.raises(cvmc.CVMLogicError, match="empty"):
        _load(js, b"")
    with pytest.raises(cvmc.CVMLogicError, match="list magic"):
        _load(js, b"\0" * 8 + pb[8:])
    with pytest.raises(cvmc.CVMLogicError, match="name 0 has no length"):
        _load(js, pb[:30])
    # the runtime accepts an array cut inside its data and computes on uninitialised memory: a deviation
    with pytest.raises(cvmc.CVMLogicError, match="undefined in cvm-runtime: param 'b' is cut short inside its data"):
        _load(js, pb[:-3])


@pytest.mark.parametrize(("shape", "words"), [
    ((2, 4, 1, (1 << 61) + 1), "ndim 4, expected 2"),  # 8 values as the runtime's 64-bit sizes wrap
    (((1 << 62) + 1, 4, 1), "ndim 3, expected 2"),  # 4 values
    ((-1, -8), r"shape \[-1, -8\], expected \[3, 3\] \(index 0\)"),  # 8 values
    ((3, 6148914691236517206), r"expected \[3, 3\] \(index 1\)"),  # 2 values
])  # fmt: skip
def test_a_param_shape_whose_size_wraps_is_the_runtimes_shape_error(shape, words):
    # the runtime reads such an array (its data size matches the wrapped product) and refuses it against the
    # graph's shape (graph_runtime.cc:339, :344): a logic error, as from cvm-runtime
    case = CVM_CORPUS / "dense_001"
    elems = prod(shape) % (1 << 64)
    pb = b"".join([struct.pack("<QQQ", 0xF7E58D4F05049CB7, 0, 1), struct.pack("<Q", 1), b"w", struct.pack("<Q", 1),
                   struct.pack("<QQiiiBBH", 0xDD5E40F096B4A13F, 0, 1, 0, len(shape), 0, 8, 1),
                   struct.pack(f"<{len(shape)}q", *shape), struct.pack("<q", elems), bytes(elems)])
    with pytest.raises(cvmc.CVMLogicError, match=words):
        _load(case / "model.json", pb)


def test_params_round_trip_through_the_writer():
    params = read_params((CONV / "params.bin").read_bytes())
    again = read_params(write_params(params))
    assert params.keys() == again.keys()
    for k in params:
        np.testing.assert_array_equal(params[k], again[k])


def test_wrong_input_length_is_a_logic_error():
    m = _load(CONV / "model.json", CONV / "params.bin")
    with pytest.raises(cvmc.CVMLogicError, match="input bytes"):
        m.infer(b"\0" * 3)
    with pytest.raises(cvmc.CVMLogicError, match="shape"):
        m.run(np.zeros((2, 2), np.int32))


def test_messages_name_the_node_and_the_values():
    doc = json.loads((CONV / "model.json").read_text())
    doc["attrs"]["shape"][1][3] = [1, 4, 8, 12]
    with pytest.raises(cvmc.CVMLogicError) as e:
        load_graph(json.dumps(doc), CONV / "params.bin")
    msg = str(e.value)
    assert "conv2d_3" in msg and "[1, 4, 8, 12]" in msg and "[1, 4, 8, 11]" in msg


def test_int8_params_are_sign_extended():
    small = write_params({"w": np.array([[-127, 5]], np.int32)})
    wide = write_params({"w": np.array([[-128, 5]], np.int32)})
    assert len(wide) - len(small) == 6  # int8 storage for the first, int32 for the second
    np.testing.assert_array_equal(read_params(small)["w"], [[-127, 5]])
    np.testing.assert_array_equal(read_params(wide)["w"], [[-128, 5]])


def test_gpu_params_are_a_runtime_error():
    pb = bytearray((CONV / "params.bin").read_bytes())
    at = pb.index(struct.pack("<Q", 0xDD5E40F096B4A13F)) + 16
    pb[at:at + 4] = struct.pack("<i", 2)
    with pytest.raises(cvmc.CVMRuntimeError, match="device type 2 is not enabled"):
        _load(CONV / "model.json", bytes(pb))
