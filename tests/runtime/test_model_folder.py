"""A model is a folder (issue 39): `cvmc.load_model("net/")` reads model.json, params.bin and, when present,
quantize.json, whose scales make `run` take and return floats (equal to `Quantized.decode` of the integer run);
quantize.json is untrusted input, checked field by field against the model beside it."""

import json
import math
import pickle
import shutil

import numpy as np
import pytest

import cvmc
import cvmc.examples
from cvmc.runtime.frontend.folder import Quantization

CNN = cvmc.examples.digits_cnn()


@pytest.fixture(scope="module")
def quantized(tmp_path_factory):
    """(Quantized, its folder, float inputs) of a small Conv net quantized here (onnx.helper, 32 inputs)."""
    pytest.importorskip("onnx", reason="cvmc.quantize reads ONNX (the quantize extra)")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = {"w": rng.normal(size=(4, 3, 3, 3)) * 0.3, "b": rng.normal(size=4) * 0.1,
             "fw": rng.normal(size=(5, 4)) * 0.5, "fb": rng.normal(size=5) * 0.1}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]), helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
                          [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    blob = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    x = rng.normal(size=(32, 3, 8, 8)).astype(np.float32)
    q = cvmc.quantize(blob, x)
    folder = q.save(tmp_path_factory.mktemp("net") / "net")
    return q, folder, x


@pytest.mark.parametrize("device", ["reference", "cpu"])
def test_floats_in_floats_out_equal_decode_of_the_integer_run(quantized, device):
    q, folder, x = quantized
    m = cvmc.load_model(folder, device=device)
    assert isinstance(m.quantization, Quantization)
    assert m.quantization.input_scale == q.input_scale and list(m.quantization.output_scales) == q.output_scales
    (want,) = q.decode(q.model(device).run(q.encode(x[0])))
    (got,) = m.run(x[0])
    assert got.dtype == np.float64 and np.array_equal(got, want)
    assert np.array_equal(m.run_float(x[0])[0], want)
    assert np.array_equal(m.run_float(x[0].astype(np.float64).tolist())[0], want)  # any float array-like
    (ints,) = m.run(q.encode(x[0]))  # integers still give integers
    assert ints.dtype == np.int32 and np.array_equal(q.decode([ints])[0], want)
    (batch,) = m.run_batch(x[:6])
    assert np.array_equal(batch, np.stack(q.decode(q.model(device).run_batch(q.encode(x[:6])))[0]))
    assert np.array_equal(m.quantization.encode(x), q.encode(x))


def test_repr_and_pickle_carry_the_scales(quantized):
    q, folder, x = quantized
    m = cvmc.load_model(folder, device="reference")
    assert f"quantization=(input_scale={q.input_scale!r} (int8), output_scales={q.output_scales}" in repr(m)
    assert m.name == str(folder)
    again = pickle.loads(pickle.dumps(m))
    assert again.quantization == m.quantization.__class__(**{**again.quantization.__dict__})
    assert np.array_equal(again.run(x[1])[0], m.run(x[1])[0])


def test_the_bundled_cnn_folder_takes_floats():
    m = cvmc.load_model(CNN.folder, device="reference")
    facts = CNN.facts()
    assert m.quantization is not None and m.quantization.input_scale == facts["input_scale"]
    ints = CNN.test_set()[0][:4]
    (want,) = m.run_batch(ints)
    (got,) = m.run_batch(ints.astype(np.float32) * facts["input_scale"])  # the floats the ints stand for
    assert np.array_equal(got, want * facts["output_scales"][0])


def test_without_quantize_json_floats_are_refused_with_a_hint(tmp_path):
    shutil.copytree(CNN.folder, tmp_path / "net")
    (tmp_path / "net" / "quantize.json").unlink()
    m = cvmc.load_model(tmp_path / "net", device="reference")
    assert m.quantization is None and "quantization" not in repr(m)
    hint = r"got dtype float32: floats, but this model has no scales.*quantize.json.*input_scale"
    with pytest.raises(cvmc.CVMLogicError, match=hint):
        m.run(np.zeros((1, 1, 8, 8), np.float32))
    with pytest.raises(cvmc.CVMLogicError, match="quantize.json"):
        m.run_batch(np.zeros((2, 1, 1, 8, 8), np.float32))
    with pytest.raises(cvmc.CVMLogicError, match="run_float needs the model's scales"):
        m.run_float(np.zeros((1, 1, 8, 8), np.float32))


def test_float_input_shape_and_values_are_checked():
    m = cvmc.load_model(CNN.folder, device="reference")
    with pytest.raises(cvmc.CVMLogicError, match=r"float input of shape \[1, 1, 8, 8\].*got \[1, 8, 8, 1\]"):
        m.run(np.zeros((1, 8, 8, 1), np.float32))
    with pytest.raises(cvmc.CVMLogicError, match="finite"):
        m.run(np.full((1, 1, 8, 8), np.nan, np.float32))


def test_a_folder_missing_a_file_and_a_lone_file(tmp_path):
    (tmp_path / "model.json").write_text("{}")
    with pytest.raises(cvmc.CVMRuntimeError, match=r"model folder .*: expected model.json and params.bin in it, "
                                                   r"params.bin missing"):
        cvmc.load_model(tmp_path)
    with pytest.raises(cvmc.CVMLogicError, match="model.json' alone: pass the params too, or the folder"):
        cvmc.load_model(tmp_path / "model.json")


def _folder_with(tmp_path, **changes):
    shutil.copytree(CNN.folder, tmp_path / "net")
    facts = CNN.facts()
    facts.update(changes)
    (tmp_path / "net" / "quantize.json").write_text(json.dumps(facts))
    return tmp_path / "net"


@pytest.mark.parametrize(("field", "value", "message"), [
    ("input_scale", 0, "'input_scale' to be a finite positive number, got 0"),
    ("input_scale", -0.25, "got -0.25"),
    ("input_scale", True, "got True"),
    ("input_scale", "0.25", "got '0.25'"),
    ("output_scales", [], "'output_scales' to list 1 scale"),
    ("output_scales", [1.0, 1.0], "got 2"),
    ("output_scales", [float("inf")], r"'output_scales\[0\]'"),
    ("output_scales", 1.0, "got float"),
    ("input_precision", 7, "'input_precision' is 7, but the model's input precision is 8"),
    ("input_shape", [1, 8, 8, 1], r"'input_shape' is \[1, 8, 8, 1\], but the model's input shape is \[1, 1, 8, 8\]"),
])
def test_a_bad_quantize_json_names_the_field(tmp_path, field, value, message):
    folder = _folder_with(tmp_path, **{field: value})
    with pytest.raises(cvmc.CVMLogicError, match=message) as e:
        cvmc.load_model(folder, device="reference")
    assert "quantize.json" in str(e.value)


def test_the_smallest_scale_loads(tmp_path):
    m = cvmc.load_model(_folder_with(tmp_path, input_scale=math.ulp(0.0)), device="reference")
    assert m.quantization.input_scale == math.ulp(0.0)


def test_quantize_json_that_is_not_json(tmp_path):
    folder = _folder_with(tmp_path)
    (folder / "quantize.json").write_text("{not json")
    with pytest.raises(cvmc.CVMRuntimeError, match="cannot read quantize file .*quantize.json.*not JSON"):
        cvmc.load_model(folder, device="reference")
    (folder / "quantize.json").write_text("[1, 2]")
    with pytest.raises(cvmc.CVMLogicError, match="expected a JSON object, got list"):
        cvmc.load_model(folder, device="reference")
    (folder / "quantize.json").write_text(json.dumps({"input_scale": 1.0}))
    with pytest.raises(cvmc.CVMLogicError, match="expected the field 'input_precision'"):
        cvmc.load_model(folder, device="reference")


def test_swapped_files_keep_the_runtimes_class_and_say_so():
    d = cvmc.examples.digits()
    with pytest.raises(cvmc.CVMRuntimeError) as e:
        cvmc.load_model(d.params, d.graph, device="reference")
    assert str(e.value).startswith("graph JSON: expected '{' at byte 1")  # the runtime's decision, unchanged
    assert f"(the files are swapped: load_model({str(d.params)!r}, {str(d.graph)!r}) takes the graph JSON first" \
        in str(e.value)
