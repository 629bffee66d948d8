"""`cvmc.quantize` / `cvm-quantize`: a float ONNX model to a CVM model. The digits CNN is trained here (torch, one
thread, fixed seed, seconds) on scikit-learn's digits; small ONNX graphs built with onnx.helper cover the
operators and every refusal (each names the node)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import Terminal

from cvmc.errors import CVMLogicError, CVMRuntimeError

onnx = pytest.importorskip("onnx", reason="the quantizer reads ONNX (the quantize extra)")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from cvmc.runtime.model import load_model  # noqa: E402
from cvmc.runtime.quantize import quantize  # noqa: E402
from cvmc.runtime.quantize.report import sqnr_db  # noqa: E402
from cvmc.tools import cvm_quantize  # noqa: E402


def digits_cnn():
    """(onnx bytes, train x, test x, test labels, float test accuracy) of the digits CNN, trained here as the
    digits_cnn example's script trains it (torch, one thread, seed 0, seconds)."""
    torch = pytest.importorskip("torch", reason="the digits CNN is trained with torch (the dev extra)")
    pytest.importorskip("sklearn", reason="the digits come with scikit-learn (the dev extra)")
    import cvmc.examples

    make = cvmc.examples.digits_cnn().script_module()
    x, y = make.digits()
    net = make.train()
    with torch.no_grad():
        acc = float((net(torch.tensor(x[make.TRAIN:])).argmax(1).numpy() == y[make.TRAIN:]).mean())
    return make.to_onnx(net), x[:make.TRAIN], x[make.TRAIN:], y[make.TRAIN:], acc


@pytest.fixture(scope="module")
def digits():
    blob, xtr, xte, yte, acc = digits_cnn()
    q = quantize(blob, xtr[:256], test=xte, labels=yte)
    return blob, xtr, xte, yte, acc, q


def test_digits_cnn_within_half_a_point(digits):
    _, _, xte, yte, acc, q = digits
    r = q.report
    assert r.float_accuracy == pytest.approx(acc)
    assert abs(r.cvm_accuracy - r.float_accuracy) <= 0.005, r.text()
    assert r.agreement >= 0.98 and r.logits_sqnr_db > 25
    assert r.samples == len(xte) and r.gas == q.graph.gas > 0
    assert [lr.op for lr in r.layers] == ["Conv", "Relu", "MaxPool", "Conv", "Relu", "AveragePool", "Flatten", "Dense"]
    assert all(lr.sqnr_db > 25 for lr in r.layers), r.text()
    assert all(lr.precision <= 32 for lr in r.layers)


def test_digits_files_load_with_the_same_bytes_on_reference_and_cpu(digits, tmp_path):
    import cvmc

    assert cvmc.quantize is quantize
    _, _, xte, _, _, q = digits
    q.save(tmp_path)
    facts = json.loads((tmp_path / "quantize.json").read_text())
    assert facts["input_scale"] == q.input_scale and facts["input_precision"] == 8
    assert facts["output_scales"] == q.output_scales and len(facts["output_scales"]) == 1
    assert facts["gas"] == q.graph.gas and len(facts["report"]["layers"]) == 8
    ref = load_model(tmp_path / "model.json", tmp_path / "params.bin", device="reference")
    cpu = load_model(tmp_path / "model.json", tmp_path / "params.bin", device="cpu")
    assert ref.gas == cpu.gas == q.graph.gas
    xs = q.encode(xte[:24])
    assert xs.dtype == np.int32 and np.abs(xs).max() <= 127
    for x in xs:
        b = x.astype(np.int8).tobytes()
        assert ref.infer(b) == cpu.infer(b)


def _float_logits(blob, x):
    from cvmc.runtime.quantize import onnx_graph

    fg = onnx_graph.load(blob)
    return onnx_graph.run(fg, x)[fg.outputs[0]]


def test_digits_per_channel_weights(digits):
    blob, xtr, xte, yte, _, q = digits
    pc = quantize(blob, xtr[:256], test=xte, labels=yte, per_channel=True)
    assert pc.per_channel and pc.facts()["per_channel"]
    assert abs(pc.report.cvm_accuracy - pc.report.float_accuracy) <= 0.005, pc.report.text()
    assert pc.report.logits_sqnr_db > 35 and pc.graph.gas > q.graph.gas  # the multipliers cost gas


def test_digits_decode_matches_float(digits):
    blob, _, xte, _, _, q = digits
    outs = q.model("cpu").run_batch(q.encode(xte[:64]))
    logits = q.decode(outs)[0].reshape(64, 10)
    assert sqnr_db(_float_logits(blob, xte[:64]), logits) > 25


def _init(v):
    """An initializer's array: integers as int64 (shapes), the rest as float32."""
    v = np.asarray(v)
    return v.astype(np.int64) if v.dtype.kind in "iu" else v.astype(np.float32)


def _model(nodes, inits, in_shape=(1, 4), out="y", opset=13, in_dims=None, out_elem=TensorProto.FLOAT):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, in_dims if in_dims is not None else list(in_shape))
    y = helper.make_tensor_value_info(out, out_elem, None)
    g = helper.make_graph(nodes, "g", [x], [y], [numpy_helper.from_array(_init(v), k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def _calib(shape, n=32, seed=0):
    return np.random.default_rng(seed).normal(size=(n, *shape[1:])).astype(np.float32)


def every_operator_model():
    """An ONNX model of every operator the issue names (and its calibration inputs)."""
    rng = np.random.default_rng(3)
    w1 = rng.normal(size=(8, 3, 3, 3)) * 0.3
    dw = rng.normal(size=(8, 1, 3, 3)) * 0.3
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization", ["c1", "g", "be", "m", "v"], ["bn"], name="bn1"),
        helper.make_node("Clip", ["bn", "zero", "six"], ["r6"], name="relu6"),
        helper.make_node("Conv", ["r6", "dw"], ["c2"], name="depthwise", group=8, pads=[2, 2, 2, 2],
                         dilations=[2, 2]),
        helper.make_node("LeakyRelu", ["c2"], ["lr"], name="leaky", alpha=0.1),
        helper.make_node("Add", ["lr", "r6"], ["res"], name="residual"),
        helper.make_node("Mul", ["res", "half"], ["mul"], name="scale"),
        helper.make_node("Sub", ["mul", "shift"], ["sub"], name="shift"),
        helper.make_node("MaxPool", ["sub"], ["mp"], name="maxpool", kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("AveragePool", ["r6"], ["ap"], name="avgpool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Concat", ["mp", "ap"], ["cat"], name="concat", axis=1),
        helper.make_node("Relu", ["cat"], ["rc"], name="relu"),
        helper.make_node("GlobalAveragePool", ["rc"], ["gap"], name="gap"),
        helper.make_node("Transpose", ["wt"], ["wT"], name="transpose_const", perm=[1, 0]),
        helper.make_node("Reshape", ["gap", "shape"], ["flat"], name="reshape"),
        helper.make_node("MatMul", ["flat", "wT"], ["mm"], name="matmul"),
        helper.make_node("Gemm", ["mm", "wg", "bg"], ["logits"], name="gemm", transB=1),
        helper.make_node("Softmax", ["logits"], ["y"], name="softmax", axis=-1),
    ]
    inits = {"w1": w1, "b1": rng.normal(size=8) * 0.1, "g": rng.uniform(0.5, 1.5, 8), "be": rng.normal(size=8) * 0.1,
             "m": rng.normal(size=8) * 0.1, "v": rng.uniform(0.5, 1.5, 8), "zero": np.array(0.0),
             "six": np.array(6.0), "dw": dw, "half": rng.uniform(0.2, 1.0, (1, 8, 1, 1)),
             "shift": rng.normal(size=(8, 1, 1)), "wt": rng.normal(size=(12, 16)) * 0.3, "shape": np.array([1, 16]),
             "wg": rng.normal(size=(5, 12)) * 0.3, "bg": rng.normal(size=5)}
    return _model(nodes, inits, in_shape=(1, 3, 8, 8)), _calib((1, 3, 8, 8), 64)


@pytest.mark.parametrize("per_channel", [False, True])
def test_every_operator_of_the_issue_quantizes_and_runs_alike(tmp_path, per_channel):
    blob, x = every_operator_model()
    q = quantize(blob, x, per_channel=per_channel)
    assert any(n.op == "broadcast_mul" and n.name.startswith("conv1") for n in q.graph.nodes) == per_channel
    ops = [lr.op for lr in q.report.layers]
    assert "BatchNormalization" not in ops and ops[0] == "Conv"  # folded into the conv
    assert q.report.logits_sqnr_db > 20 and q.report.agreement >= 0.9, q.report.text()
    assert all(lr.sqnr_db is None or lr.sqnr_db > 15 for lr in q.report.layers), q.report.text()
    assert q.outputs[0]["shape"] == [1, 5] and "Softmax" in q.outputs[0]["head"]
    q.save(tmp_path)
    ref = load_model(tmp_path / "model.json", tmp_path / "params.bin", device="reference")
    cpu = load_model(tmp_path / "model.json", tmp_path / "params.bin", device="cpu")
    xs = q.encode(x[:8])
    assert [o.tobytes() for o in ref.run_batch(xs)] == [o.tobytes() for o in cpu.run_batch(xs)]


def test_argmax_head_is_the_runtime_postprocess(tmp_path):
    blob, x = argmax_model()
    q = quantize(blob, x)
    assert q.graph.postprocess == "argmax" and q.outputs[0]["precision"] == 8
    q.save(tmp_path)
    m = load_model(tmp_path / "model.json", tmp_path / "params.bin", device="cpu")
    heads = m.run_batch(q.encode(x))[0].reshape(64, 6)
    got = [int(np.frombuffer(m.infer(v.astype(np.int8).tobytes()), "<i4")[0]) for v in q.encode(x)]
    assert got == list(np.argmax(heads, axis=1))  # the index of the int8 logits, as cvm-runtime packs it
    assert q.report.agreement >= 0.9


def argmax_model():
    rng = np.random.default_rng(5)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["l"], name="fc", transB=1),
             helper.make_node("ArgMax", ["l"], ["y"], name="argmax", axis=1, keepdims=1)]
    return _model(nodes, {"w": rng.normal(size=(6, 4)), "b": rng.normal(size=6)}, out_elem=TensorProto.INT64), \
        _calib((1, 4), 64)


ORACLE = os.environ.get("CVMC_ORACLE_RUN_MODEL")


@pytest.mark.skipif(not ORACLE, reason="set CVMC_ORACLE_RUN_MODEL to cvm-runtime's run_model driver "
                                       "(tests/consensus/ORACLE.md) to compare with it")
@pytest.mark.parametrize(("model", "per_channel"), [("digits", False), ("digits", True), ("ops", False),
                                                    ("ops", True), ("argmax", False)])
@pytest.mark.parametrize("device", ["formal", "cpu"])
def test_cvm_runtime_accepts_the_models_and_gives_cvmc_bytes(digits, tmp_path, model, per_channel, device):
    if model == "digits":
        blob, x = digits[0], digits[1][:64]
    else:
        blob, x = every_operator_model() if model == "ops" else argmax_model()
    q = quantize(blob, x, per_channel=per_channel)
    q.save(tmp_path)
    mine = load_model(tmp_path / "model.json", tmp_path / "params.bin", device="reference")
    for i, v in enumerate(q.encode(x[:6])):
        (tmp_path / "in.bin").write_bytes(v.astype(np.int8).tobytes())
        r = subprocess.run([ORACLE, "--device", device, "--api-bytes", "-o", str(tmp_path / "out.bin"),
                            str(tmp_path / "model.json"), str(tmp_path / "params.bin"), str(tmp_path / "in.bin")],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert f"ops(gas)={q.graph.gas}" in r.stderr
        assert (tmp_path / "out.bin").read_bytes() == mine.infer(v.astype(np.int8).tobytes()), f"input {i}"


# --- refusals: each names the node (or the input) ---------------------------------------------------------


def test_unsupported_operator_names_the_node():
    blob = _model([helper.make_node("Sigmoid", ["x"], ["y"], name="gate")], {})
    with pytest.raises(CVMLogicError, match=r"node 'gate' \(Sigmoid\): the operator has no CVM form"):
        quantize(blob, _calib((1, 4)))


def test_every_unsupported_operator_is_named_at_once():
    """An export with several operators without a CVM form is refused once, naming each with its nodes (an LSTM
    export was refused by its first Shape, one node a try)."""
    nodes = [helper.make_node("Sigmoid", ["x"], ["a"], name="g0"), helper.make_node("Tanh", ["a"], ["b"], name="t0"),
             *[helper.make_node("Sigmoid", [f"{u}"], [f"s{k}"], name=f"g{k}") for k, u in enumerate("bbbb", 1)],
             helper.make_node("Relu", ["s4"], ["y"], name="r")]
    with pytest.raises(CVMLogicError) as e:
        quantize(_model(nodes, {}), _calib((1, 4)))
    assert str(e.value).startswith("node 'g0' (Sigmoid): the operator has no CVM form in the quantizer")
    assert "Sigmoid: 5 nodes ('g0', 'g1', 'g2', ...); Tanh: 1 node ('t0')" in str(e.value)


def test_softmax_inside_the_model_is_refused():
    nodes = [helper.make_node("Softmax", ["x"], ["s"], name="attn", axis=-1),
             helper.make_node("Relu", ["s"], ["y"], name="r")]
    with pytest.raises(CVMLogicError, match=r"node 'attn' \(Softmax\): CVM offers Softmax only as the model's output"):
        quantize(_model(nodes, {}), _calib((1, 4)))


def test_dynamic_input_shape_names_the_input():
    blob = _model([helper.make_node("Relu", ["x"], ["y"], name="r")], {}, in_dims=["batch", 4])
    with pytest.raises(CVMLogicError, match=r"input 'x': dimension 0 is dynamic \(the symbol 'batch'\)"):
        quantize(blob, _calib((1, 4)))


def test_bytes_that_are_not_onnx_and_a_missing_file(tmp_path):
    with pytest.raises(CVMRuntimeError, match="cannot read the ONNX model"):
        quantize(b"not a model", _calib((1, 4)))
    with pytest.raises(CVMRuntimeError, match=r"cannot read the ONNX model '.*missing.onnx': No such file"):
        quantize(tmp_path / "missing.onnx", _calib((1, 4)))
    assert cvm_quantize.main([str(tmp_path / "missing.onnx"), "--calibration", "c.npy", "-o", str(tmp_path)]) == 2


def test_old_opset_is_refused():
    blob = _model([helper.make_node("Relu", ["x"], ["y"], name="r")], {}, opset=12)
    with pytest.raises(CVMLogicError, match="opset 12; the quantizer reads opset 13 and later"):
        quantize(blob, _calib((1, 4)))


@pytest.mark.parametrize(("calib", "message"), [
    (np.zeros((8, 5), np.float32), r"input 'x': expected shape \(N, 4\)"),
    (np.zeros((8, 1, 4), np.float32), r"input 'x': expected shape \(N, 4\)"),
    (np.zeros((0, 4), np.float32), r"N > 0, got \[0, 4\]"),
    (np.zeros((8, 4), np.int64), "input 'x': expected float32 values, got dtype int64"),
    (np.full((8, 4), np.nan, np.float32), "input 'x': expected finite values"),
])
def test_bad_calibration_names_the_input(calib, message):
    blob = _model([helper.make_node("Relu", ["x"], ["y"], name="r")], {})
    with pytest.raises(CVMLogicError, match=message):
        quantize(blob, calib)


@pytest.mark.parametrize(("k", "ok"), [(65535, True), (65536, False)])
def test_accumulation_overflow_at_the_bound(k, ok):
    """8-bit data x 8-bit weights over K terms need 16 + bitlen(K) bits: 32 at K = 65535, 33 one past it."""
    blob = _model([helper.make_node("MatMul", ["x", "w"], ["y"], name="wide")],
                  {"w": np.random.default_rng(1).normal(size=(k, 1))}, in_shape=(1, k))
    x = _calib((1, k), 2)
    if ok:
        q = quantize(blob, x)
        assert q.outputs[0]["precision"] == 32
    else:
        with pytest.raises(CVMLogicError, match=r"node 'wide' \(Dense\): the int32 accumulation of the layer can "
                                                r"overflow: its values need 33 bits"):
            quantize(blob, x)


def test_bias_past_int32_names_the_node():
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc", transB=1)]
    blob = _model(nodes, {"w": np.full((2, 4), 1e-3), "b": np.array([1e9, 0.0])})
    with pytest.raises(CVMLogicError, match=r"node 'fc' \(Dense\): the int32 accumulation of the layer can overflow: "
                       r"its values need \d+ bits \(.* \+ the bias\), more than 32"):
        quantize(blob, _calib((1, 4)))


# --- the command line -------------------------------------------------------------------------------------


def test_the_digits_cnn_example_runs_as_its_report_says():
    import cvmc.examples

    ex = cvmc.examples.digits_cnn()
    facts = ex.facts()
    x, labels = ex.test_set()
    ref, cpu = ex.load("reference"), ex.load("cpu")
    assert ref.gas == cpu.gas == facts["gas"]
    preds = np.argmax(cpu.run_batch(x)[0].reshape(len(x), -1), axis=1)
    assert np.mean(preds == labels) == pytest.approx(facts["report"]["cvm_accuracy"])
    assert abs(facts["report"]["cvm_accuracy"] - facts["report"]["float_accuracy"]) <= 0.005
    for v in x[:16]:
        assert ref.infer(v.tobytes()) == cpu.infer(v.tobytes())


def test_make_py_rewrites_the_bundled_example_byte_for_byte(tmp_path):
    """The digits CNN's script, run as the README says (a process of its own: its pins on torch's and numpy's CPU
    kernels come before they load), writes the bundled files byte for byte with the library versions it names."""
    from importlib import metadata

    import cvmc.examples

    ex = cvmc.examples.digits_cnn()
    make = ex.script_module()
    for package, version in make.MADE_WITH.items():
        try:
            found = metadata.version(package)
        except metadata.PackageNotFoundError:
            pytest.skip(f"make.py needs {package} (the dev extra)")
        if found.split("+")[0] != version:
            pytest.skip(f"the bundled example was made with {package} {version}, this is {found}: other kernels, "
                        f"other bytes")
    env = {k: v for k, v in os.environ.items() if k not in make.PINS}
    r = subprocess.run([sys.executable, str(ex.script), str(tmp_path)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    for name in ("model.json", "params.bin", "quantize.json", "test_inputs.bin", "test_labels.bin"):
        assert (tmp_path / name).read_bytes() == (ex.folder / name).read_bytes(), name
    facts = ex.facts()["report"]
    assert f"accuracy: float {100 * facts['float_accuracy']:.2f}%, CVM {100 * facts['cvm_accuracy']:.2f}%" in r.stdout


def test_cvm_quantize_writes_the_three_files(digits, tmp_path, capsys):
    blob, xtr, xte, yte, _, _ = digits
    (tmp_path / "m.onnx").write_bytes(blob)
    np.save(tmp_path / "calib.npy", xtr[:64])
    np.save(tmp_path / "test.npy", xte[:90])
    np.save(tmp_path / "labels.npy", yte[:90])
    argv = [str(tmp_path / "m.onnx"), "--calibration", str(tmp_path / "calib.npy"), "-o", str(tmp_path / "out"),
            "--test", str(tmp_path / "test.npy"), "--labels", str(tmp_path / "labels.npy")]
    assert cvm_quantize.main(argv) == 0
    out = capsys.readouterr().out
    assert "top-1 agreement" in out and "accuracy: float" in out and "gas" in out
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"model.json", "params.bin", "quantize.json"}
    np.save(tmp_path / "bad.npy", xtr[:8].astype(np.float64)[:, :, :4])
    argv[2] = str(tmp_path / "bad.npy")
    assert cvm_quantize.main(argv) == 1
    assert f"the calibration data {str(tmp_path / 'bad.npy')!r} for input" in capsys.readouterr().err


def test_cvm_quantize_help_and_usage(capsys):
    with pytest.raises(SystemExit) as e:
        cvm_quantize.main(["--help"])
    assert e.value.code == 0 and "exit status:" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        cvm_quantize.main(["m.onnx"])
    assert e.value.code == 64 and "--calibration" in capsys.readouterr().err


# --- issue 39's quantizer findings ------------------------------------------------------------------------


def test_a_missing_onnx_names_what_to_install(monkeypatch, tmp_path, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` raises ImportError
    with pytest.raises(CVMRuntimeError, match=r"the onnx package, which is not installed: "
                                              r"pip install '\.\[quantize\]'"):
        quantize(b"", _calib((1, 4)))
    assert cvm_quantize.main([str(tmp_path / "m.onnx"), "--calibration", "c.npy", "-o", str(tmp_path)]) == 2
    assert "pip install '.[quantize]'" in capsys.readouterr().err


def test_print_of_a_quantized_model_is_one_short_line():
    blob, x = argmax_model()
    q = quantize(blob, x, device="reference")
    text = repr(q)
    assert len(text) < 300 and "\n" not in text and "array" not in text, text
    assert text.startswith("Quantized(input='x', input_shape=[1, 4], input_scale=") and f"gas={q.graph.gas}" in text


def test_cvm_quantize_v_logs_its_stages(tmp_path, caplog):
    import logging

    blob, x = argmax_model()
    (tmp_path / "m.onnx").write_bytes(blob)
    np.save(tmp_path / "c.npy", x)
    with caplog.at_level(logging.INFO, logger="cvmc"):
        assert cvm_quantize.main([str(tmp_path / "m.onnx"), "--calibration", str(tmp_path / "c.npy"), "-o",
                                  str(tmp_path / "out"), "--device", "reference", "-v"]) == 0
    stages = [r.getMessage().split(":")[0].split(" on ")[0] for r in caplog.records if r.name.startswith(
        "cvmc.runtime.quantize")]
    assert [s.split()[0] for s in stages] == ["read", "equalized", "calibrating", "choosing", "emitted", "measuring",
                                              "measuring", "top-1"]


@pytest.mark.parametrize("tty", [True, False])
def test_cvm_quantize_shows_a_bar_per_long_stage_on_a_terminal_only(tmp_path, monkeypatch, capsys, tty):
    blob, x = argmax_model()
    (tmp_path / "m.onnx").write_bytes(blob)
    np.save(tmp_path / "c.npy", x)
    np.save(tmp_path / "t.npy", x[:10])
    err = Terminal(tty)
    monkeypatch.setattr("sys.stderr", err)
    assert cvm_quantize.main([str(tmp_path / "m.onnx"), "--calibration", str(tmp_path / "c.npy"), "-o",
                              str(tmp_path / "out"), "--test", str(tmp_path / "t.npy"), "--device", "reference"]) == 0
    text = err.getvalue()
    if not tty:
        assert text == ""  # a pipe, a log file, CI: nothing
        return
    lines = text.split("\n")
    finished = [line.rsplit("\r", 1)[-1] for line in lines if line]
    assert [f.split(" [")[0] for f in finished] == ["calibrating", "measuring the layers",
                                                      "the float model on the test inputs", "agreement"]
    assert all("[####################] 100%" in f for f in finished), finished
    assert finished[-1].endswith("100% 10/10 input")
    assert all(line.count("\r") <= 101 for line in lines)  # at most one redraw per whole percent


def test_an_npz_calibration_names_its_key_and_dtype(tmp_path):
    blob, x = argmax_model()
    np.savez(tmp_path / "c.npz", x=x.astype(np.int32))
    with pytest.raises(CVMLogicError, match=r"the calibration data '.*c.npz' \(key 'x'\) for input 'x': expected "
                                            r"float32 values, got dtype int32"):
        quantize(blob, str(tmp_path / "c.npz"))
    np.savez(tmp_path / "d.npz", other=x, x=x)
    q = quantize(blob, str(tmp_path / "d.npz"), device="reference")  # the array named as the input
    assert q.report.samples == len(x)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul"])
@pytest.mark.parametrize("shape", [(1, 4), (1, 2, 3, 3)])
def test_a_scalar_constant_operand_quantizes(op, shape):
    """x * 0.5 as exporters write it: a 0-d constant (a CVM param has 1 to 6 axes: it becomes a 1-element one)."""
    blob = _model([helper.make_node(op, ["x", "k"], ["y"], name="n")], {"k": np.array(0.75)}, in_shape=shape)
    x = _calib(shape, 32)
    q = quantize(blob, x, device="reference")
    want = {"Add": x + 0.75, "Sub": x - 0.75, "Mul": x * 0.75}[op]
    got = q.decode(q.model("reference").run_batch(q.encode(x)))[0].reshape(want.shape)
    assert sqnr_db(want, got) > 35


@pytest.mark.parametrize(("op", "attrs"), [("Softmax", {}), ("ArgMax", {"axis": 1}), ("Identity", {})])
def test_a_head_on_the_input_itself_quantizes(op, attrs):
    """No layer to measure (the report's per-layer run had no tensors: the builder refused a graph of no
    outputs)."""
    blob = _model([helper.make_node(op, ["x"], ["y"], name="h", **attrs)], {}, out_elem=TensorProto.INT64
                  if op == "ArgMax" else TensorProto.FLOAT)
    q = quantize(blob, _calib((1, 4)), device="reference")
    assert q.report.agreement == 1.0 and [lr.op for lr in q.report.layers] == [op]
