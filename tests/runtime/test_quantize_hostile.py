"""Hostile inputs to `cvmc.quantize` / `cvm-quantize` (issue 36, N1 and N3 to N6): the corpus of
tests/runtime/quantize_hostile.py gives only clean outcomes (the right error class naming the node, file or input,
or a correct result) within its memory budget; and one test per finding that failed on main a8be56f."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cvmc.errors import CVMError, CVMLogicError, CVMRuntimeError

pytest.importorskip("onnx", reason="the quantizer reads ONNX (the quantize extra)")

sys.path.insert(0, str(Path(__file__).parent))
import quantize_hostile as hostile

from cvmc.runtime.quantize import quantize
from cvmc.tools import cvm_quantize

BUDGET = 64 << 20


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    work = tmp_path_factory.mktemp("hostile")
    out = work / "results.json"
    r = subprocess.run([sys.executable, str(Path(hostile.__file__)), "--work", str(work / "cases"), "--budget",
                        str(BUDGET), "--out", str(out)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(out.read_text())


def test_the_corpus_holds_at_least_100_inputs_of_every_kind(corpus):
    kinds = [r["kind"] for r in corpus["results"]]
    assert len(kinds) >= 100
    assert {k: kinds.count(k) for k in sorted(set(kinds))}.keys() == {"N1", "N3", "N4", "N5", "N6"}
    assert len({r["name"] for r in corpus["results"]}) == len(kinds)


def test_every_hostile_input_ends_cleanly(corpus):
    """The right class with a message naming the node, file or input (the case's pattern), or a correct result."""
    wrong = []
    for r in corpus["results"]:
        cls, pattern = r["expect"]
        if cls == "ok":
            good = r["class"] == "ok" and r["message"] == ""
        else:
            good = r["class"] == cls and re.search(pattern, r["message"]) is not None
        if not good:
            wrong.append(f"{r['kind']} {r['name']}: got {r['class']}: {r['message'][:300]}; expected {cls}: {pattern}")
    assert not wrong, "\n".join(wrong)


def test_no_hostile_input_takes_more_memory_than_its_budget(corpus):
    """The process's peak (getrusage) over the corpus, against the peak after a warm-up run: at most the budget and
    a margin (a /dev/zero model is read up to the budget before it is refused)."""
    grown = corpus["peak"] - corpus["baseline"]
    assert grown <= BUDGET * 3 // 2, f"{grown >> 20} MiB over the warm-up's peak, budget {BUDGET >> 20} MiB"


# --- one test per finding (each failed on main a8be56f) -------------------------------------------------------


def _calib(shape=(1, 4), n=16):
    return hostile.calib(shape, n)


def test_n1_external_data_is_read_from_the_models_folder_only(tmp_path, monkeypatch):
    (tmp_path / "m").mkdir()
    (tmp_path / "notes.bin").write_bytes(np.full(16, 7.0, np.float32).tobytes())
    model = tmp_path / "m" / "model.onnx"
    model.write_bytes(hostile._external_model("notes.bin").SerializeToString())
    monkeypatch.chdir(tmp_path)  # main read the caller's notes.bin into the model
    with pytest.raises(CVMRuntimeError, match=r"cannot read the external data of initializer 'w' '.*/m/notes.bin'"):
        quantize(str(model), _calib(), device="reference")
    (tmp_path / "m" / "notes.bin").write_bytes(hostile.W_HONEST.tobytes())
    q = quantize(str(model), _calib(), device="reference")
    x = _calib()
    got = q.decode(q.model("reference").run_batch(q.encode(x)))[0].reshape(len(x), -1)
    assert np.allclose(got, x @ hostile.W_HONEST, atol=0.05 * np.abs(x @ hostile.W_HONEST).max())
    with pytest.raises(CVMLogicError, match=r"initializer 'w': its data is stored outside the model"):
        quantize(model.read_bytes(), _calib())
    (tmp_path / "m" / "l.onnx").write_bytes(hostile._external_model("../notes.bin").SerializeToString())
    with pytest.raises(CVMLogicError, match=r"initializer 'w': the external data location '../notes.bin': expected "
                                            r"a relative path inside the model's folder"):
        quantize(str(tmp_path / "m" / "l.onnx"), _calib())


@pytest.mark.parametrize("which", ["model", "calibration", "test", "labels"])
def test_n3_a_fifo_is_refused_not_waited_on(tmp_path, monkeypatch, which):
    from cvmc.runtime.frontend import files

    monkeypatch.setattr(files, "FIFO_WAIT_SECONDS", 0.1)
    good = tmp_path / "m.onnx"
    good.write_bytes(hostile._relu().SerializeToString())
    kw = {"model": str(good), "calibration": _calib()}
    kw[which] = str(tmp_path / "f")
    os.mkfifo(tmp_path / "f")
    with pytest.raises(CVMRuntimeError, match=r"'.*/f': a FIFO no process wrote to or closed within 0.1 s"):
        quantize(**kw)


def test_n4_declared_shapes_past_the_budget_are_refused_before_allocating(tmp_path):
    """With the default budget (8 GiB): a declared input of 64 GiB, a 256 KiB model folding a 4 GiB product, a
    .npy header claiming 768 TiB; main allocated each (or died trying)."""
    m = hostile.model([hostile.node("Relu", ["x"], ["y"], "r")], in_shape=(1, 1, 131072, 131072))
    with pytest.raises(CVMLogicError, match=r"input 'x' of shape \[1, 1, 131072, 131072\] needs 68719476736 bytes, "
                                            r"more than the memory budget of 8589934592 bytes"):
        quantize(m.SerializeToString(), _calib())
    n = 65536
    m = hostile.model([hostile.node("MatMul", ["a", "b"], ["ab"], "outer"),
                       hostile.node("MatMul", ["x", "ab"], ["y"], "mm")],
                      {"a": np.ones((n, 1)), "b": np.ones((1, n))}, in_shape=(1, n))
    with pytest.raises(CVMLogicError, match=r"node 'outer' \(MatMul\): folding its constant operands needs \d+ bytes"):
        quantize(m.SerializeToString(), _calib((1, n), 1))
    (tmp_path / "c.npy").write_bytes(hostile._npy_header((1 << 44, 12)))
    with pytest.raises(CVMLogicError, match=r"the calibration data '.*c.npy' needs 844424930131968 bytes"):
        quantize(hostile._relu().SerializeToString(), str(tmp_path / "c.npy"))


@pytest.mark.parametrize("bound", [1, 2])
def test_n5_a_computed_clip_bound_is_refused(bound):
    ins = ["x", "", ""]
    ins[bound] = "r"
    m = hostile.model([hostile.node("Relu", ["x"], ["r"], "relu"), hostile.node("Clip", ins, ["y"], "clip")])
    with pytest.raises(CVMLogicError, match=rf"node 'clip' \(Clip\): the {('min', 'max')[bound - 1]} input 'r' is "
                                            rf"computed from the model's input"):
        quantize(m.SerializeToString(), _calib())


def test_n5_flatten_axis_past_the_rank_is_refused():
    m = hostile.model([hostile.node("Flatten", ["x"], ["y"], "flat", axis=-99)], in_shape=(1, 2, 2, 2))
    with pytest.raises(CVMLogicError, match=r"node 'flat' \(Flatten\): attribute 'axis' is -99: the ONNX spec allows "
                                            r"an axis in \[-r, r\] \(rank 4\)"):
        quantize(m.SerializeToString(), _calib((1, 2, 2, 2)))


@pytest.mark.parametrize(("name", "make", "cls", "pattern"), hostile._n6_models()[:12],
                         ids=[m[0] for m in hostile._n6_models()[:12]])
def test_n6_malformed_graphs_are_cvm_errors(name, make, cls, pattern):
    m = make()
    shape = tuple(d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim)
    with pytest.raises(CVMError, match=pattern) as e:
        quantize(m.SerializeToString(), _calib(shape))
    assert type(e.value).__name__ == cls


def test_n6_truncated_and_object_npy_are_cvm_errors(tmp_path):
    good = hostile._relu().SerializeToString()
    (tmp_path / "t.npy").write_bytes(hostile._npy_header((16, 4)) + b"\0" * 100)
    with pytest.raises(CVMRuntimeError, match=r"its header gives shape \[16, 4\] of dtype '<f4' \(256 bytes\), the "
                                              r"file holds 100 bytes after the header"):
        quantize(good, str(tmp_path / "t.npy"))
    np.save(tmp_path / "o.npy", np.array([None, {}], dtype=object), allow_pickle=True)
    with pytest.raises(CVMLogicError, match=r"expected an array of numbers, got dtype '\|O'"):
        quantize(good, str(tmp_path / "o.npy"))


def test_the_command_line_gives_status_1_or_2_never_an_internal_error(tmp_path, capsys):
    m = hostile.model([hostile.node("Flatten", ["x"], ["y"], "flat", axis=-99)], in_shape=(1, 2, 2, 2))
    (tmp_path / "m.onnx").write_bytes(m.SerializeToString())
    np.save(tmp_path / "c.npy", _calib((1, 2, 2, 2)))
    argv = [str(tmp_path / "m.onnx"), "--calibration", str(tmp_path / "c.npy"), "-o", str(tmp_path / "out")]
    assert cvm_quantize.main(argv) == 1
    assert "cvm-quantize: CVMLogicError: node 'flat' (Flatten): attribute 'axis' is -99" in capsys.readouterr().err
    (tmp_path / "m.onnx").write_bytes(hostile._relu((1, 2, 2, 2)).SerializeToString())
    assert cvm_quantize.main([*argv, "--max-memory", "16"]) == 1
    err = capsys.readouterr().err
    assert re.search(r"the ONNX model '.*m.onnx' holds \d+ bytes, more than 16 \(the memory budget", err), err
    (tmp_path / "z.onnx").write_bytes(b"\xff" * 64)
    assert cvm_quantize.main([str(tmp_path / "z.onnx"), *argv[1:]]) == 2
    assert "cannot read the ONNX model" in capsys.readouterr().err


# --- found by the coverage fuzzer (tests/fuzz/quantize.py) ----------------------------------------------------


def test_a_name_that_is_not_utf8_is_a_cvm_error_found_by_the_fuzzer():
    """Found by tests/fuzz/quantize.py in 150 s: protobuf hands a string field that is not UTF-8 over as bytes; a
    node named b'm\\xed' reached `n.name + "/dense_weight"` as a TypeError."""
    m = hostile.model([hostile.node("MatMul", ["x", "w"], ["y"], "mm")], {"w": np.ones((4, 4))})
    blob = m.SerializeToString().replace(b"\x1a\x02mm", b"\x1a\x02m\xed")  # NodeProto.name, field 3
    with pytest.raises(CVMRuntimeError, match=r"cannot read the ONNX model: node 0: its name is not UTF-8 text"):
        quantize(blob, _calib())


@pytest.mark.parametrize("where", ["initializer", "axes", "npy", "folded"])
def test_an_empty_array_with_a_huge_axis_is_a_cvm_error_found_by_the_fuzzer(tmp_path, where):
    """Found by tests/fuzz/quantize.py in 300 s: an initializer of dims [3, 0, 2^56 - 1] holds no values (its
    byte count passes the budget) but numpy refuses the shape: a ValueError. Every axis is now held to the budget
    (an initializer, a .npy header, a folded constant's shape)."""
    big = (1 << 56) - 1
    if where == "axes":  # found in 300 s more: no axis past the budget, their product past what numpy holds
        t = hostile.raw_tensor("w", 1, [4, 0, 8064, 2089984, 8064, 8064], b"")
        m = hostile.model([hostile.node("Add", ["x", "w"], ["y"], "add")], raw_inits=[t])
        args = (m.SerializeToString(), _calib())
        pattern = r"initializer 'w': shape \[4, 0, 8064, 2089984, 8064, 8064\]: its axes hold more than the memory"
    elif where == "initializer":
        t = hostile.raw_tensor("w", 1, [3, 0, big], b"")
        m = hostile.model([hostile.node("Add", ["x", "w"], ["y"], "add")], raw_inits=[t])
        args = (m.SerializeToString(), _calib())
        pattern = rf"initializer 'w': shape \[3, 0, {big}\]: its axes hold more than the memory budget"
    elif where == "npy":
        (tmp_path / "c.npy").write_bytes(hostile._npy_header((0, big)))
        args = (hostile._relu().SerializeToString(), str(tmp_path / "c.npy"))
        pattern = rf"the calibration data '.*c.npy': shape \[0, {big}\]: its axes hold more than the memory budget"
    else:
        m = hostile.model([hostile.node("Reshape", ["e", "s"], ["r"], "rs"), hostile.node("Add", ["x", "r"], ["y"])],
                          {"e": np.zeros((0,)), "s": np.array([0, big])})
        args = (m.SerializeToString(), _calib())
        pattern = r"node 'rs' \(Reshape\): its output: shape \[0, \d+\]: its axes hold more than the memory budget"
    with pytest.raises(CVMLogicError, match=pattern):
        quantize(*args)


def test_a_float_model_that_overflows_is_refused_by_the_node_found_by_the_fuzzer():
    """Found by tests/fuzz/quantize.py in 300 s: finite weights near float32's limit (a mutated BatchNormalization)
    made the float model's values inf, and choose_shift took log2(inf) (an OverflowError). The first node whose
    values are not finite on the calibration data is now named; a scale a float cannot hold is refused too."""
    m = hostile.model([hostile.node("MatMul", ["x", "w"], ["h"], "big"), hostile.node("Relu", ["h"], ["y"], "r")],
                      {"w": np.full((4, 4), 3e38)})
    with pytest.raises(CVMLogicError, match=r"node 'big' \(Dense\): the float model's values are not finite \(inf or "
                                            r"NaN\) on the calibration data"):
        quantize(m.SerializeToString(), np.full((4, 4), 2.0, np.float32))
    from cvmc.runtime.quantize.emit import choose_shift

    with pytest.raises(CVMLogicError, match=r"values up to \|1e\+30\| at the scale 1e-300: a float cannot hold"):
        choose_shift(np.array([1e30]), 1e-300, 8, "mse")


def test_argmax_indices_read_by_another_node_are_refused_found_by_the_fuzzer():
    """Found by tests/fuzz/quantize.py's graph target in 400 s: a MaxPool over an ArgMax's int64 indices padded
    them with -inf in the float interpreter (an OverflowError). ArgMax is a head only: a node that reads its
    indices is refused at load, by name."""
    node = hostile.node
    m = hostile.model([node("ArgMax", ["x"], ["a"], "am", axis=-3),
                       node("MaxPool", ["a"], ["y"], "mp", kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
                      in_shape=(2, 1, 2, 5))
    with pytest.raises(CVMLogicError, match=r"node 'mp' \(MaxPool\): reads 'a', the indices node 'am' \(ArgMax\) "
                                            r"makes"):
        quantize(m.SerializeToString(), _calib((2, 1, 2, 5), 4))


def test_the_fuzzer_smoke_run_finds_no_crash(tmp_path):
    """A short atheris run of tests/fuzz/quantize.py on the importer, the calibration reader and built graphs
    (`make fuzz-long` runs them longer): no input ends in anything but a CVMError. Bounded by a count of runs with
    a fixed seed, not by time, so every run tries the same inputs whatever the machine's load. Skipped where
    atheris is not installed (the dev extra has it on Linux x86-64)."""
    pytest.importorskip("atheris")
    fuzzer = Path(__file__).parents[1] / "fuzz" / "quantize.py"
    r = subprocess.run([sys.executable, str(fuzzer), "--seconds", "600", "--work", str(tmp_path), "--libfuzzer",
                        "-runs=400", "-seed=7"], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode == 0, r.stdout[-4000:]
    runs = [int(n) for n in re.findall(r"(\d+) executions", r.stdout)]  # libFuzzer may count one past -runs
    assert r.stdout.count("; 0 crashes") == 3 and len(runs) == 3 and all(n >= 400 for n in runs), r.stdout


def test_the_budget_bounds_what_a_quantization_allocates():
    """A conv net on 64 inputs: quantized within a budget of exactly what the check foresees (at the bound), refused
    one byte below it, and numpy's allocations (tracemalloc) stay under it (0.43 of it when measured)."""
    import tracemalloc

    from cvmc.runtime.quantize import onnx_graph

    rng = np.random.default_rng(0)
    node = hostile.node
    m = hostile.model([node("Conv", ["x", "w"], ["c"], "conv", pads=[1, 1, 1, 1]), node("Relu", ["c"], ["r"], "relu"),
                       node("MaxPool", ["r"], ["p"], "pool", kernel_shape=[2, 2], strides=[2, 2]),
                       node("GlobalAveragePool", ["p"], ["g"], "gap"), node("Flatten", ["g"], ["f"], "flat"),
                       node("Gemm", ["f", "wd"], ["y"], "fc", transB=1)],
                      {"w": rng.normal(size=(32, 3, 3, 3)) * 0.2, "wd": rng.normal(size=(10, 32)) * 0.2},
                      in_shape=(1, 3, 32, 32))
    x = rng.normal(size=(64, 3, 32, 32)).astype(np.float32)
    fg = onnx_graph.load(m)
    need = 4 * fg.const_bytes + x.nbytes + 2 * fg.run_bytes(len(x))
    with pytest.raises(CVMLogicError, match=rf"the float model on 64 calibration and 64 test inputs needs {need} "
                                            rf"bytes, more than the memory budget of {need - 1} bytes"):
        quantize(m, x, device="reference", max_memory=need - 1)
    tracemalloc.start()
    try:
        quantize(m, x, device="reference", max_memory=need)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= need, f"{peak} bytes allocated, {need} foreseen"
